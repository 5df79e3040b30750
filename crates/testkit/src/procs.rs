//! Finding and killing a uid's processes through `/proc`, so a test user
//! can be removed even when a test left a process of theirs behind.

use std::time::{Duration, Instant};

/// Ids of the live processes any of whose real, effective or saved uids is
/// `uid`. Zombies (already dead, waiting for their parent) and processes
/// that vanish while `/proc` is read are skipped.
pub fn pids_of_uid(uid: u32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| process_uids(*pid).is_some_and(|uids| uids.contains(&uid)))
        .collect()
}

/// Real, effective and saved uid of a live `pid` (the `Uid:` line of its
/// status file); `None` for a zombie.
fn process_uids(pid: i32) -> Option<Vec<u32>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let state = status.lines().find(|l| l.starts_with("State:"))?;
    if state.contains("zombie") {
        return None;
    }
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace()
        .skip(1)
        .take(3)
        .map(|t| t.parse().ok())
        .collect()
}

/// Sends SIGKILL to every process of `uid` until none is left or
/// `patience` has passed (a process may fork while it is being killed).
/// Returns the pids still alive at the end (empty on success). Never kills
/// uid 0's processes.
pub fn kill_user_processes(uid: u32, patience: Duration) -> Vec<i32> {
    if uid == 0 {
        return Vec::new();
    }
    let deadline = Instant::now() + patience;
    loop {
        let pids = pids_of_uid(uid);
        if pids.is_empty() || Instant::now() >= deadline {
            return pids;
        }
        for pid in pids {
            // The pid was read from /proc an instant ago with this uid; a
            // reuse in between would need a full pid-space wrap.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
