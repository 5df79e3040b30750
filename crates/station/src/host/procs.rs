//! The guests' processes as `/proc` shows them: a process's stat, and a
//! guest's whole process tree found and killed without cgroups.

use std::collections::{HashMap, HashSet};

/// The fields of `/proc/<pid>/stat` a record needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    /// Field 22: start time, clock ticks after boot.
    pub start_time: u64,
}

/// Parses a `/proc/<pid>/stat` line. The command (field 2) may hold spaces
/// and parentheses, so fields are counted after its last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = text.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state), so field N is f[N - 3].
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        start_time: f.get(19)?.parse().ok()?,
    })
}

/// The stat of a live process; `None` when there is none (zombies count as
/// gone: they hold no CPU and only wait for their parent).
pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text).filter(|s| s.state != 'Z' && s.state != 'X')
}

/// Live processes: pid → stat.
pub(crate) fn process_table() -> HashMap<i32, ProcStat> {
    let mut out = HashMap::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some(s) = proc_stat(pid) {
            out.insert(pid, s);
        }
    }
    out
}

/// The guest's processes: its group and the descendants of `pid`, none
/// older than the guest itself (a descendant cannot be).
fn guest_processes(pid: i32, pgid: i32, start_time: u64) -> HashSet<i32> {
    let table = process_table();
    let mut set: HashSet<i32> = table
        .iter()
        .filter(|(_, s)| s.pgrp == pgid && s.start_time >= start_time)
        .map(|(p, _)| *p)
        .collect();
    set.insert(pid);
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (c, s) in &table {
            if s.ppid == p && s.start_time >= start_time && set.insert(*c) {
                frontier.push(*c);
            }
        }
    }
    let me = std::process::id() as i32;
    set.retain(|p| *p > 1 && *p != me);
    set
}

/// Stops the guest's processes (so none forks away meanwhile), then
/// kills them and the group. Returns how many processes were signalled.
pub(crate) fn kill_guest(pid: i32, pgid: i32, start_time: u64) -> usize {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;
    let mut all = HashSet::new();
    // A few rounds: a child forked between the scan and the stop is found
    // by the next scan.
    for _ in 0..3 {
        let found = guest_processes(pid, pgid, start_time);
        let new: Vec<i32> = found.difference(&all).copied().collect();
        if new.is_empty() {
            break;
        }
        for p in new {
            let _ = kill(Pid::from_raw(p), Signal::SIGSTOP);
            all.insert(p);
        }
    }
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    for p in &all {
        let _ = kill(Pid::from_raw(*p), Signal::SIGKILL);
    }
    all.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command() {
        let line = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 \
                    1000 100 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.pgrp, 4242);
        assert_eq!(s.start_time, 987654);
        assert_eq!(parse_stat("12 (x) S 1 2"), None);
        assert_eq!(parse_stat("garbage"), None);
    }
}
