//! Control of a guest's real processes: signals, freeze and thaw, idle
//! priority, kill, and the guard that kills them whatever happens to the
//! task that supervises them.
//!
//! A guest's processes are its cgroup's, or without cgroups every process
//! of its slot account's uid (each guest has a uid of its own, so this
//! finds the processes that left its process group or, in a PID
//! namespace, never were in it), or in a personal pool its process group.

use crate::host::procs::proc_stat;
use crate::isolation::{GuestCgroup, processes_of_uid};
use gleaner_proto::wire::Usage;
use std::time::Instant;

/// The real process behind a guest: its cgroup, or its process group.
pub(crate) struct Control {
    pub(crate) pgid: i32,
    pub(crate) cgroup: Option<GuestCgroup>,
    /// Stopped with SIGSTOP (no freezer, or the freezer failed).
    pub(crate) stopped_by_signal: bool,
    pub(crate) frozen: bool,
    pub(crate) checkpoint_signal: i32,
    /// The slot account's uid (`None` in a personal pool).
    pub(crate) uid: Option<u32>,
    /// The guest runs in a PID namespace of its own: what it leaves behind
    /// dies and is reaped with the namespace, never re-parented to us.
    pub(crate) pid_ns: bool,
    /// A pidfd of the namespace's first process (the job's root), taken
    /// while its waiter lived: see [`Control::reap_root`].
    pub(crate) root_fd: Option<std::os::fd::OwnedFd>,
}

impl Control {
    pub(crate) fn new(
        pgid: i32,
        cgroup: Option<GuestCgroup>,
        checkpoint_signal: i32,
        uid: Option<u32>,
        pid_ns: bool,
    ) -> Self {
        Control {
            pgid,
            cgroup,
            stopped_by_signal: false,
            frozen: false,
            checkpoint_signal,
            uid,
            pid_ns,
            root_fd: if pid_ns { pidfd_of(pgid) } else { None },
        }
    }

    /// Reaps the job's root if it came to this daemon: a PID namespace's
    /// first process whose waiter died first (both killed at once) is
    /// re-parented to the daemon, its subreaper, and nobody else waits for
    /// it. Through its pidfd, so that no other child's status is taken
    /// (its pid may be another process's by now). A no-op when the waiter
    /// reaped it.
    pub(crate) fn reap_root(&self) {
        use std::os::fd::AsRawFd;
        let Some(fd) = &self.root_fd else { return };
        for _ in 0..100 {
            // SAFETY: a zeroed siginfo_t is a valid output buffer.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid on a pidfd we own; WNOHANG never blocks.
            let r = unsafe {
                libc::waitid(
                    libc::P_PIDFD,
                    fd.as_raw_fd() as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG,
                )
            };
            // SAFETY: si_pid is valid to read after waitid.
            let reaped = r == 0 && unsafe { info.si_pid() } != 0;
            if r < 0 || reaped {
                // ECHILD: not ours (its waiter reaped it). Reaped: done.
                if reaped {
                    tracing::debug!(pid = self.pgid, "reaped the guest's orphaned first process");
                }
                return;
            }
            // Ours and not dead yet: it was just killed.
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// After [`Control::kill`]: the guest ran in a cgroup and a PID
    /// namespace of its own, and its cgroup has no process left, so no
    /// process of it lives anywhere (`slot.rs`).
    pub(crate) fn contained_and_empty(&self) -> bool {
        self.pid_ns
            && self
                .cgroup
                .as_ref()
                .is_some_and(|g| g.pids().is_ok_and(|p| p.is_empty()))
    }

    /// Every pid of the guest.
    fn pids(&self) -> Vec<i32> {
        if let Some(g) = &self.cgroup
            && let Ok(p) = g.pids()
        {
            return p;
        }
        match self.uid {
            Some(uid) => processes_of_uid(uid),
            None => pgroup_members(self.pgid),
        }
    }

    /// Signals every process of the guest (stop, continue, kill: a second
    /// copy does no harm).
    fn signal_all(&self, sig: i32) {
        let Ok(sig) = nix::sys::signal::Signal::try_from(sig) else {
            return;
        };
        if self.cgroup.is_some() || self.uid.is_some() {
            for pid in self.pids() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
            }
        }
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pgid), sig);
    }

    /// Sends the job's `kill_sig` to its process group, as the checkpoint
    /// signal: not to the waiter above it, which would die of it and take
    /// the job with it.
    pub(crate) fn send_signal(&self, sig: i32) {
        if let Ok(sig) = nix::sys::signal::Signal::try_from(sig) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pgid), sig);
        }
    }

    /// Strict low priority (Ryu & Hollingsworth L54), at all times (issue
    /// 12): the guest's group idle, and `SCHED_IDLE` on every task it has
    /// (which it cannot leave: the launcher pinned it, `confine.rs`). There
    /// is no way back to normal priority.
    pub(crate) fn keep_idle(&self) {
        if let Some(g) = &self.cgroup
            && let Err(e) = g.set_idle(true)
        {
            tracing::warn!(error = %e, "cgroup idle setting failed; per-task only");
        }
        // Per-task SCHED_IDLE as well: the second line of defence when the
        // cpu controller is missing (isolation/launch.rs).
        for pid in self.pids() {
            for tid in threads_of(pid) {
                let p = libc::sched_param { sched_priority: 0 };
                // SAFETY: plain syscall on a tid with a valid param struct.
                let r = unsafe { libc::sched_setscheduler(tid, libc::SCHED_IDLE, &p) };
                if r != 0 {
                    tracing::debug!(tid, error = %std::io::Error::last_os_error(), "sched_setscheduler");
                }
            }
        }
    }

    /// Stop the guest: the freezer, else SIGSTOP (Mutka 1988 L841 "stops").
    pub(crate) fn suspend(&mut self) {
        if let Some(g) = &self.cgroup {
            match g.freeze() {
                Ok(()) => {
                    self.frozen = true;
                    return;
                }
                Err(e) => tracing::warn!(error = %e, "freeze failed; using SIGSTOP"),
            }
        }
        self.signal_all(libc::SIGSTOP);
        self.stopped_by_signal = true;
    }

    pub(crate) fn resume(&mut self) {
        if self.frozen
            && let Some(g) = &self.cgroup
        {
            if let Err(e) = g.thaw() {
                tracing::warn!(error = %e, "thaw failed");
            }
            self.frozen = false;
        }
        if self.stopped_by_signal {
            self.signal_all(libc::SIGCONT);
            self.stopped_by_signal = false;
        }
    }

    /// Stopped, by the freezer or by SIGSTOP.
    pub(crate) fn is_stopped(&self) -> bool {
        self.frozen || self.stopped_by_signal
    }

    /// The job's checkpoint signal, delivered once, to the job's process
    /// group: a second copy arriving while the job saves its state would
    /// kill the helpers it runs for that (the `mv` of its state file). The
    /// group is the job's own (it is a session leader; in a PID namespace,
    /// its first process): the waiter above it, which would die of the
    /// signal and take the job with it, is not in it.
    pub(crate) fn checkpoint_signal(&self) {
        if let Ok(sig) = nix::sys::signal::Signal::try_from(self.checkpoint_signal) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pgid), sig);
        }
    }

    pub(crate) fn kill(&self) {
        if let Some(g) = &self.cgroup
            && let Err(e) = g.kill()
        {
            tracing::warn!(error = %e, "cgroup kill failed; signalling the group");
        }
        self.signal_all(libc::SIGKILL);
    }

    /// What the guest used so far: CPU from its cgroup, wall time since
    /// `started`.
    pub(crate) fn usage(&self, started: Instant) -> Usage {
        Usage {
            cpu_secs: self
                .cgroup
                .as_ref()
                .and_then(|g| g.cpu_usage().ok())
                .map_or(0.0, |d| d.as_secs_f64()),
            wall_secs: started.elapsed().as_secs_f64(),
            max_rss_mb: 0,
        }
    }
}

/// Members of a process group, from /proc.
fn pgroup_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| proc_stat(pid).is_some_and(|st| st.pgrp == pgid))
        .collect()
}

fn threads_of(pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    if v.is_empty() {
        v.push(pid);
    }
    v
}

/// A pidfd for `pid` (`None` without one: kernels before 5.3).
fn pidfd_of(pid: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    let fd = i32::try_from(fd).ok().filter(|f| *f >= 0)?;
    // SAFETY: a fresh descriptor, owned from here on.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// A live (not zombie) process's parent PID, from /proc.
pub(crate) fn parent_of(pid: u32) -> Option<u32> {
    let st = proc_stat(i32::try_from(pid).ok()?)?;
    u32::try_from(st.ppid).ok()
}

/// The exit code of a status; killed by a signal: 128 + the signal.
pub(crate) fn exit_code(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// Kills the guest and removes its cgroup whatever happens to the
/// supervising task (error, panic, runtime shutdown).
pub(crate) struct KillOnDrop {
    pub(crate) pgid: Option<i32>,
    pub(crate) cgroup: Option<GuestCgroup>,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(g) = &self.cgroup {
            if let Err(e) = g.kill() {
                tracing::warn!(error = %e, "cleanup: cgroup kill failed");
            }
            if let Err(e) = g.remove() {
                tracing::warn!(error = %e, "cleanup: cgroup removal failed");
            }
        }
        if let Some(p) = self.pgid {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}
