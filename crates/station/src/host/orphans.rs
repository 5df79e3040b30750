//! The station as its guests' subreaper.
//!
//! A guest that double-forks leaves processes whose parent has exited. With
//! `PR_SET_CHILD_SUBREAPER` they are re-parented to the station rather than
//! to PID 1, so they stay below the daemon in the process tree (where the
//! guest records' descendant walk finds them) and, once killed, the station
//! reaps them: on the development VMs PID 1 does not reap, and their
//! zombies would hold PIDs a CRIU restore needs again.
//!
//! Reaping is done per slot, never with `waitpid(-1)`: the daemon has
//! children of its own that others wait for (the guests' launched
//! processes, CRIU, `useradd`, kill-by-uid killers), and a blanket reap
//! would steal their exit statuses. Only zombie children whose uid is a
//! slot's are reaped, and only when nothing else of that slot is being
//! waited for (after the guest's processes were killed by uid).

use std::time::Duration;

/// Makes this process the subreaper of everything it starts. A failure is
/// logged: orphans then go to PID 1, as before.
pub fn become_subreaper() {
    // SAFETY: plain prctl on the calling process.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if r != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(),
            "cannot become the guests' subreaper; orphaned guest processes go to PID 1");
    }
}

/// (ppid, zombie, real uid) of a process, from its status file.
fn status(pid: i32) -> Option<(i32, bool, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let (mut ppid, mut zombie, mut uid) = (None, false, None);
    for l in text.lines() {
        if let Some(v) = l.strip_prefix("PPid:") {
            ppid = v.trim().parse().ok();
        } else if let Some(v) = l.strip_prefix("State:") {
            zombie = v.trim_start().starts_with('Z');
        } else if let Some(v) = l.strip_prefix("Uid:") {
            uid = v.split_whitespace().next()?.parse().ok();
        }
    }
    Some((ppid?, zombie, uid?))
}

/// Reaps the zombie children of this process whose uid is `uid` (a slot's,
/// whose guest is over or was just killed by uid); returns how many. The
/// daemon's own uid and root's are never reaped this way.
pub fn reap_orphans_of(uid: u32) -> usize {
    if uid == 0 || uid == nix::unistd::geteuid().as_raw() {
        return 0;
    }
    let me = std::process::id() as i32;
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if !matches!(status(pid), Some((pp, true, u)) if pp == me && u == uid) {
            continue;
        }
        let mut st = 0;
        // SAFETY: waiting for one of our own children, without blocking.
        if unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) } == pid {
            n += 1;
        }
    }
    if n > 0 {
        tracing::debug!(uid, reaped = n, "reaped orphaned guest processes");
    }
    n
}

/// Kills every process of `uid` (`isolation::kill_uid`), then reaps the
/// orphans of it that came to this process. Blocking.
pub fn kill_and_reap(
    uid: u32,
    timeout: Duration,
) -> Result<crate::isolation::ReapReport, crate::isolation::IsolationError> {
    use crate::isolation::{kill_uid_found, scan_uid};
    if uid == 0 || uid == nix::unistd::geteuid().as_raw() {
        return crate::isolation::kill_uid(uid, timeout);
    }
    // One scan finds both what to kill and the zombies to reap: the usual
    // end of a guest (nothing left) costs that one pass over /proc.
    let me = std::process::id() as i32;
    let scan = scan_uid(uid, Some(me));
    reap_pids(&scan.zombie_children);
    let killed = !scan.live.is_empty();
    let r = kill_uid_found(uid, timeout, scan.live);
    if killed {
        // What the kill left as zombies of ours.
        reap_orphans_of(uid);
    }
    r
}

/// Reaps the listed zombie children (found by a scan; another waiter may
/// have reaped one meanwhile, which is harmless).
fn reap_pids(pids: &[i32]) {
    for &pid in pids {
        let mut st = 0;
        // SAFETY: waiting for one of our own children, without blocking.
        unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
    }
}
