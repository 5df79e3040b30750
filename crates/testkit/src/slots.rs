//! Slot accounts made by stations that tests start (issue 12: a station
//! running as root runs each guest as a slot account `<prefix>1..N`, and
//! creates the accounts it lacks).
//!
//! - [`slot_prefix`]: a prefix of the test process's own for each station
//!   it starts (`gltest-st<pid>-<n>-`), so that stations of parallel tests
//!   never share slots (nor kill each other's guests when they reap their
//!   slots at start). Every account made under this process's prefixes is
//!   removed when the process exits (an `atexit` hook, which runs after a
//!   failed test too); accounts of a test process that was killed are
//!   removed by the next process that asks for a prefix.
//! - [`DefaultSlots`]: for tests whose stations use the default prefix
//!   (`glean up` writes its stations' configuration itself). Held while
//!   such stations run; the last holder removes the `gleaner-slot<N>`
//!   accounts a station made (their GECOS says "Gleaner guest slot").

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Every test prefix starts so (and no other account's name does).
pub const TEST_SLOT_PREFIX: &str = "gltest-st";
/// The stations' default prefix.
const DEFAULT_PREFIX: &str = "gleaner-slot";
/// GECOS of the accounts a station makes.
const STATION_GECOS: &str = "Gleaner guest slot";
const DEFAULT_LOCK: &str = "/tmp/gleaner-default-slots.lock";
/// Where stations keep their slot locks.
const SLOT_LOCK_DIR: &str = "/run/gleaner-slots";

static SERIAL: AtomicU32 = AtomicU32::new(0);
static HOOK: Once = Once::new();

/// A fresh slot prefix for one station of this test process (see the
/// module comment). Cheap; makes no account by itself.
pub fn slot_prefix() -> String {
    HOOK.call_once(|| {
        sweep_stale();
        // SAFETY: registering a plain `extern "C" fn` with no arguments.
        unsafe { libc::atexit(remove_own_at_exit) };
    });
    let n = SERIAL.fetch_add(1, Ordering::Relaxed);
    format!("{TEST_SLOT_PREFIX}{}-{n}-", std::process::id())
}

extern "C" fn remove_own_at_exit() {
    let own = format!("{TEST_SLOT_PREFIX}{}-", std::process::id());
    for name in remove_slot_accounts(|n| n.starts_with(&own)) {
        eprintln!("testkit: slot account {name} left behind");
    }
}

/// (name, uid, gecos) of every local account.
fn accounts() -> Vec<(String, u32, String)> {
    std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((
                f.first()?.to_string(),
                f.get(2)?.parse().ok()?,
                f.get(4)?.to_string(),
            ))
        })
        .collect()
}

/// Kills the processes of every account whose name `matches` and removes
/// the account and its group. Returns the names that could not be
/// removed.
pub fn remove_slot_accounts(matches: impl Fn(&str) -> bool) -> Vec<String> {
    let mut left = Vec::new();
    for (name, uid, _) in accounts().into_iter().filter(|a| matches(&a.0)) {
        if uid == 0 {
            continue;
        }
        crate::kill_user_processes(uid, Duration::from_secs(5));
        let _ = crate::user::retry_locked(Command::new("userdel").arg(&name));
        // `--user-group` made a group of the same name; userdel removes it
        // unless someone else uses it.
        let _ = crate::user::retry_locked(Command::new("groupdel").arg(&name));
        if nix::unistd::User::from_name(&name).ok().flatten().is_some() {
            left.push(name);
        } else {
            // The station's machine-wide lock of the slot (slot_pool.rs).
            let _ = std::fs::remove_file(format!("{SLOT_LOCK_DIR}/{name}.lock"));
        }
    }
    left
}

/// Removes the accounts of test processes that no longer exist.
fn sweep_stale() {
    let stale = |name: &str| {
        let Some(rest) = name.strip_prefix(TEST_SLOT_PREFIX) else {
            return false;
        };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        !pid.is_empty()
            && rest[pid.len()..].starts_with('-')
            && !std::path::Path::new("/proc").join(&pid).exists()
    };
    for name in remove_slot_accounts(stale) {
        eprintln!("testkit: cannot remove stale slot account {name}");
    }
}

/// Held by a test whose stations use the default slot accounts (see the
/// module comment): a shared lock on a file in /tmp; on drop, whoever
/// finds no other holder removes the station-made `gleaner-slot<N>`
/// accounts.
pub struct DefaultSlots(Option<File>);

impl DefaultSlots {
    pub fn hold() -> Self {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(DEFAULT_LOCK)
            .ok();
        if let Some(f) = &f {
            // SAFETY: flock on a descriptor we own.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH) };
        }
        DefaultSlots(f)
    }
}

impl Drop for DefaultSlots {
    fn drop(&mut self) {
        let Some(f) = self.0.take() else { return };
        let fd = f.as_raw_fd();
        // SAFETY: flock on a descriptor we own.
        let last = unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !last || !crate::is_root() {
            return;
        }
        let made_by_station = |name: &str| {
            name.strip_prefix(DEFAULT_PREFIX)
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        };
        let ours: Vec<String> = accounts()
            .into_iter()
            .filter(|(n, _, g)| made_by_station(n) && g == STATION_GECOS)
            .map(|a| a.0)
            .collect();
        for name in remove_slot_accounts(|n| ours.iter().any(|o| o == n)) {
            eprintln!("testkit: default slot account {name} left behind");
        }
        drop(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_valid_and_distinct() {
        let a = slot_prefix();
        let b = slot_prefix();
        assert_ne!(a, b);
        for p in [&a, &b] {
            assert!(p.starts_with(TEST_SLOT_PREFIX));
            assert!(p.len() + 2 <= 32, "{p}");
            assert!(
                p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            );
        }
    }
}
