//! Finding and killing a guest's processes by uid: the one handle on a
//! guest that works without cgroups. Each running guest has a slot account
//! of its own (`slots.rs`), so "every process of that uid" is "every
//! process of that guest", whatever it did to leave its process group or
//! session (double fork, `setsid`, re-parenting to init).
//!
//! Killing: a short-lived child of the daemon takes the slot's uid
//! (`setresuid`, which drops every capability) and calls
//! `kill(-1, SIGKILL)` until the kernel answers ESRCH. `kill(-1)` as an
//! unprivileged uid reaches exactly the processes whose real or saved uid is
//! that uid (kill(2)), in every PID namespace below ours, and the kernel
//! walks its own task list, so there is no pid list to go stale: a process
//! forked while the walk runs either is in the list or is refused its fork
//! (a fatal signal pending on the parent aborts `fork`). The daemon then
//! verifies with a /proc scan and repeats until nothing is left.
//!
//! Zombies do not count as processes here: they hold no CPU or memory and
//! only wait for their parent (the development VMs' PID 1 does not reap, so
//! orphans may stay zombies for good). They still answer `kill(-1)`, so the
//! killer gives up after a bounded number of rounds and the scan decides.
//!
//! Tasks frozen by a v1 freezer act on SIGKILL only once thawed: with
//! cgroups, kill the guest's group ([`super::GuestCgroup::kill`]) first.

use super::IsolationError;
use std::path::Path;
use std::time::{Duration, Instant};

/// `kill(-1)` passes per killer child. One pass already reaches every
/// process that exists or is being forked; more cover what a pass might
/// miss. Kept small because zombies answer every pass (so a killer whose
/// uid has zombies always runs them all) and the /proc scan decides.
const KILL_PASSES: u32 = 50;

/// The default bound on [`kill_uid`].
pub const REAP_TIMEOUT: Duration = Duration::from_secs(10);

/// What [`kill_uid`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReapReport {
    pub uid: u32,
    /// Live processes of the uid when the kill began.
    pub found: Vec<i32>,
    /// Killer children run (0: there was nothing to kill).
    pub rounds: u32,
    pub elapsed: Duration,
}

impl ReapReport {
    fn nothing(uid: u32) -> Self {
        ReapReport {
            uid,
            found: Vec::new(),
            rounds: 0,
            elapsed: Duration::ZERO,
        }
    }
}

/// What a `/proc/<pid>/status` says: real, effective and saved uid, parent,
/// and whether the task is a zombie (or dead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Status {
    uids: [u32; 3],
    ppid: i32,
    dead: bool,
}

fn status_of(text: &str) -> Option<Status> {
    let mut uids = None;
    let mut dead = false;
    let mut ppid = 0;
    for l in text.lines() {
        if let Some(v) = l.strip_prefix("Uid:") {
            let mut it = v.split_whitespace().map(|x| x.parse::<u32>().ok());
            uids = Some([it.next()??, it.next()??, it.next()??]);
        } else if let Some(v) = l.strip_prefix("State:") {
            let s = v.trim_start();
            dead = s.starts_with('Z') || s.starts_with('X');
        } else if let Some(v) = l.strip_prefix("PPid:") {
            ppid = v.trim().parse().unwrap_or(0);
        }
    }
    Some(Status {
        uids: uids?,
        ppid,
        dead,
    })
}

/// The real, effective and saved uid from a `/proc/<pid>/status` text, and
/// whether the task is a zombie (or dead).
#[cfg(test)]
fn status_uids(text: &str) -> Option<([u32; 3], bool)> {
    status_of(text).map(|s| (s.uids, s.dead))
}

/// A thread-group leader that exited while other threads of it still run
/// shows as a zombie: look at its tasks before calling it gone.
fn has_live_task(pid: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(pid.join("task")) else {
        return false;
    };
    rd.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("status"))
            .ok()
            .and_then(|s| status_of(&s))
            .is_some_and(|s| !s.dead)
    })
}

/// One pass over `/proc` for one uid: its live processes, and the zombies
/// of it that are children of `parent` (for the subreaper to reap).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UidScan {
    /// Live processes (not zombies) whose real, effective or saved uid is
    /// the uid, sorted.
    pub live: Vec<i32>,
    /// Zombies whose real uid is the uid and whose parent is `parent`.
    pub zombie_children: Vec<i32>,
}

/// [`UidScan`] of `uid` from one scan of `/proc`.
pub fn scan_uid(uid: u32, parent: Option<i32>) -> UidScan {
    scan_uid_in(Path::new("/proc"), uid, parent)
}

/// Live processes (not zombies) whose real, effective or saved uid is
/// `uid`, from a scan of `/proc`, sorted. Processes that vanish during the
/// scan are skipped.
pub fn processes_of_uid(uid: u32) -> Vec<i32> {
    scan_uid(uid, None).live
}

#[cfg(test)]
pub(crate) fn processes_of_uid_in(proc_root: &Path, uid: u32) -> Vec<i32> {
    scan_uid_in(proc_root, uid, None).live
}

fn scan_uid_in(proc_root: &Path, uid: u32, parent: Option<i32>) -> UidScan {
    let mut out = UidScan::default();
    let Ok(rd) = std::fs::read_dir(proc_root) else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Some(st) = std::fs::read_to_string(e.path().join("status"))
            .ok()
            .and_then(|t| status_of(&t))
        else {
            continue;
        };
        if !st.uids.contains(&uid) {
            continue;
        }
        if !st.dead || has_live_task(&e.path()) {
            out.live.push(pid);
        } else if st.uids[0] == uid && parent.is_some_and(|p| p == st.ppid) {
            out.zombie_children.push(pid);
        }
    }
    out.live.sort_unstable();
    out
}

/// Why `uid` must never be killed wholesale by this process, if it must not.
fn refusal(uid: u32) -> Option<&'static str> {
    if uid == 0 {
        return Some("uid 0 is root's");
    }
    if uid == nix::unistd::getuid().as_raw() || uid == nix::unistd::geteuid().as_raw() {
        return Some("it is the daemon's own uid (personal pool: there is no slot to kill)");
    }
    if !nix::unistd::geteuid().is_root() {
        return Some("taking another uid needs root");
    }
    None
}

/// One killer child: becomes `uid` and sends SIGKILL to everything it may
/// signal, until nothing answers (exit 0) or for a bounded number of
/// rounds (exit 1: zombies answer too; the caller's scan decides).
fn run_killer(uid: u32) -> Result<(), IsolationError> {
    // SAFETY: between fork and _exit the child makes only raw,
    // async-signal-safe syscalls on stack data (the daemon is
    // multi-threaded); the parent only waits for it.
    unsafe {
        match libc::fork() {
            -1 => Err(IsolationError::io(
                Path::new("fork"),
                std::io::Error::last_os_error(),
            )),
            0 => {
                // Raw syscalls: glibc's set*id wrappers synchronise threads,
                // and this child has one. uid last: it drops the
                // capabilities setgroups and setresgid need. The gid is
                // irrelevant to kill(2); nogroup-like 65534 keeps root's
                // group out of the child.
                let g: libc::gid_t = 65534;
                if libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) < 0
                    || libc::syscall(libc::SYS_setresgid, g, g, g) < 0
                    || libc::syscall(libc::SYS_setresuid, uid, uid, uid) < 0
                {
                    libc::_exit(2);
                }
                for _ in 0..KILL_PASSES {
                    if libc::kill(-1, libc::SIGKILL) < 0 && *libc::__errno_location() == libc::ESRCH
                    {
                        libc::_exit(0);
                    }
                    libc::sched_yield();
                }
                libc::_exit(1)
            }
            child => {
                let mut status = 0;
                loop {
                    let r = libc::waitpid(child, &mut status, 0);
                    if r == child {
                        break;
                    }
                    if r < 0 && *libc::__errno_location() != libc::EINTR {
                        return Err(IsolationError::io(
                            Path::new("waitpid"),
                            std::io::Error::last_os_error(),
                        ));
                    }
                }
                if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 2 {
                    return Err(IsolationError::RefusedUid {
                        uid,
                        why: "the killer could not take that uid (setresuid failed)",
                    });
                }
                Ok(())
            }
        }
    }
}

/// Kill every process of `uid` (see the module comment) and return once a
/// /proc scan finds none, or fail after `timeout` naming the survivors.
/// Refuses root, the daemon's own uid, and any uid when not root.
pub fn kill_uid(uid: u32, timeout: Duration) -> Result<ReapReport, IsolationError> {
    if let Some(why) = refusal(uid) {
        return Err(IsolationError::RefusedUid { uid, why });
    }
    kill_uid_found(uid, timeout, processes_of_uid(uid))
}

/// [`kill_uid`] when a scan just found `found` (so an empty scan costs
/// no second one).
pub fn kill_uid_found(
    uid: u32,
    timeout: Duration,
    found: Vec<i32>,
) -> Result<ReapReport, IsolationError> {
    if let Some(why) = refusal(uid) {
        return Err(IsolationError::RefusedUid { uid, why });
    }
    let start = Instant::now();
    if found.is_empty() {
        return Ok(ReapReport::nothing(uid));
    }
    let mut rounds = 0;
    loop {
        rounds += 1;
        run_killer(uid)?;
        let left = processes_of_uid(uid);
        if left.is_empty() {
            let report = ReapReport {
                uid,
                found,
                rounds,
                elapsed: start.elapsed(),
            };
            tracing::info!(uid, processes = report.found.len(), rounds, elapsed = ?report.elapsed, "killed by uid");
            return Ok(report);
        }
        if start.elapsed() >= timeout {
            return Err(IsolationError::Survivors {
                uid,
                pids: left,
                after: timeout,
            });
        }
        // Dying tasks leave /proc only once they have exited: give them a
        // moment before the next round.
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields() {
        let s = "Name:\tsleep\nState:\tS (sleeping)\nTgid:\t7\nUid:\t1001\t1002\t1003\t1004\n";
        assert_eq!(status_uids(s), Some(([1001, 1002, 1003], false)));
        let z = "State:\tZ (zombie)\nUid:\t5\t5\t5\t5\n";
        assert_eq!(status_uids(z), Some(([5, 5, 5], true)));
        assert_eq!(status_uids("State:\tR (running)\n"), None);
    }

    #[test]
    fn scan_of_a_fake_proc() {
        let d = tempfile::tempdir().unwrap();
        let put = |pid: &str, text: &str| {
            std::fs::create_dir_all(d.path().join(pid)).unwrap();
            std::fs::write(d.path().join(pid).join("status"), text).unwrap();
        };
        put("10", "State:\tS (sleeping)\nUid:\t2000\t2000\t2000\t2000\n");
        // Matched through its saved uid.
        put("11", "State:\tR (running)\nUid:\t3000\t3000\t2000\t3000\n");
        put("12", "State:\tZ (zombie)\nUid:\t2000\t2000\t2000\t2000\n");
        // A zombie leader whose other thread still runs.
        put("13", "State:\tZ (zombie)\nUid:\t2000\t2000\t2000\t2000\n");
        let task = d.path().join("13/task/14");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::write(
            task.join("status"),
            "State:\tR (running)\nUid:\t2000\t2000\t2000\t2000\n",
        )
        .unwrap();
        put("15", "State:\tS (sleeping)\nUid:\t4000\t4000\t4000\t4000\n");
        put(
            "self",
            "State:\tS (sleeping)\nUid:\t2000\t2000\t2000\t2000\n",
        );
        assert_eq!(processes_of_uid_in(d.path(), 2000), vec![10, 11, 13]);
        assert_eq!(processes_of_uid_in(d.path(), 9), Vec::<i32>::new());
    }

    #[test]
    fn root_and_self_are_never_killed_by_uid() {
        assert!(matches!(
            kill_uid(0, REAP_TIMEOUT),
            Err(IsolationError::RefusedUid { uid: 0, .. })
        ));
        let me = nix::unistd::geteuid().as_raw();
        assert!(matches!(
            kill_uid(me, REAP_TIMEOUT),
            Err(IsolationError::RefusedUid { .. })
        ));
    }
}
