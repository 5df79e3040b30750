//! What the owner's page shows of the past (issue 18, item 3): the guests
//! that ran on this machine (job, its owner and home, start, end, CPU
//! seconds, how it ended) and each time the owner came back (or stopped
//! lending, or the schedule closed) how quickly each guest got out of the
//! way: from the moment the station saw the owner's state turn NA to the
//! moment the starter carried out the guest's first ladder action
//! (frozen, killed, vacate begun, priority lowered).
//!
//! Bounded ([`MAX_RETURNS`], [`MAX_GUESTS`]) and kept in
//! `<state_dir>/owner_history.json` (0600), rewritten on each change
//! (changes come at human pace: an owner's return, a guest's end).

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Owner returns kept at most.
pub const MAX_RETURNS: usize = 200;
/// Guest runs kept at most.
pub const MAX_GUESTS: usize = 500;

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// One guest's reaction to an owner's return.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reaction {
    pub job: String,
    pub home: String,
    /// `suspended`, `vacated`, `killed`, `lowered`, `checkpoint`.
    pub action: String,
    /// From the state turning NA to the action carried out, ms.
    pub latency_ms: f64,
}

/// One time the station stopped lending while it could have.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OwnerReturn {
    pub at_ms: u64,
    /// `owner` (the detector), `stopped` (the owner's control), `schedule`.
    pub cause: String,
    /// When lending resumed, if it has.
    pub until_ms: Option<u64>,
    pub guests: Vec<Reaction>,
}

/// One guest's run on this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuestRun {
    pub job: String,
    pub owner: String,
    pub home: String,
    pub started_ms: u64,
    pub ended_ms: u64,
    pub cpu_secs: f64,
    /// `completed (exit 0)`, `evicted: …`, `held: …`, `failed to start`.
    pub outcome: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Saved {
    pub returns: VecDeque<OwnerReturn>,
    pub guests: VecDeque<GuestRun>,
}

struct Inner {
    saved: Saved,
    /// The return in progress: when it began (for latencies).
    open: Option<Instant>,
    /// Number of the latest snapshot taken for the disk.
    serial: u64,
}

/// Writes snapshot `serial` unless a newer one is on disk already.
fn save(path: &Path, serial: u64, saved: &Saved, written: &Mutex<u64>) {
    let mut w = written.lock().unwrap_or_else(|p| p.into_inner());
    if serial <= *w {
        return;
    }
    match serde_json::to_vec(saved) {
        Ok(b) => match gleaner_proto::creds::write_atomic(path, &b, 0o600) {
            Ok(()) => *w = serial,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot save the owner history")
            }
        },
        Err(e) => tracing::warn!(error = %e, "cannot encode the owner history"),
    }
}

/// The owner's history on this station.
pub struct OwnerLog {
    path: Option<PathBuf>,
    inner: Mutex<Inner>,
    /// The serial of the snapshot last written.
    written: std::sync::Arc<Mutex<u64>>,
}

impl OwnerLog {
    /// The history kept in `state_dir` (an unreadable one starts anew,
    /// with a warning: it is a record for the owner, not state the station
    /// needs).
    pub fn open(state_dir: &Path) -> Self {
        let path = state_dir.join("owner_history.json");
        let saved = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "owner history unreadable; starting a new one");
                Saved::default()
            }),
            Err(_) => Saved::default(),
        };
        OwnerLog {
            path: Some(path),
            inner: Mutex::new(Inner {
                saved,
                open: None,
                serial: 0,
            }),
            written: Default::default(),
        }
    }

    /// A history kept in memory only (tests, submit-only stations).
    pub fn in_memory() -> Self {
        OwnerLog {
            path: None,
            inner: Mutex::new(Inner {
                saved: Saved::default(),
                open: None,
                serial: 0,
            }),
            written: Default::default(),
        }
    }

    /// Runs `f` on the history; when it says it changed something, a
    /// snapshot is written after the lock is released (off the async
    /// workers when there are any), so that a guest recording its reaction
    /// never waits for the disk.
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> (T, bool)) -> T {
        let (out, snapshot) = {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let (out, dirty) = f(&mut g);
            let snap = (dirty && self.path.is_some()).then(|| {
                g.serial += 1;
                (g.serial, g.saved.clone())
            });
            (out, snap)
        };
        if let (Some((serial, saved)), Some(path)) = (snapshot, self.path.clone()) {
            let written = self.written.clone();
            let write = move || save(&path, serial, &saved, &written);
            match tokio::runtime::Handle::try_current() {
                Ok(h) => {
                    h.spawn_blocking(write);
                }
                Err(_) => write(),
            }
        }
        out
    }

    /// The station stopped lending (`cause`) at `at`.
    pub fn returned(&self, cause: &str, at: Instant) {
        self.with(|g| {
            g.open = Some(at);
            g.saved.returns.push_back(OwnerReturn {
                at_ms: unix_ms().saturating_sub(at.elapsed().as_millis() as u64),
                cause: cause.to_string(),
                until_ms: None,
                guests: Vec::new(),
            });
            while g.saved.returns.len() > MAX_RETURNS {
                g.saved.returns.pop_front();
            }
            ((), true)
        })
    }

    /// The station lends again.
    pub fn left(&self) {
        self.with(|g| {
            let dirty = g.open.take().is_some();
            if dirty && let Some(r) = g.saved.returns.back_mut() {
                r.until_ms = Some(unix_ms());
            }
            ((), dirty)
        })
    }

    /// A guest's first ladder action after the current return, carried
    /// out now; later actions of the same guest are not recorded. Returns
    /// the latency recorded, if any.
    pub fn acted(&self, job: &str, home: &str, action: &str) -> Option<f64> {
        let now = Instant::now();
        self.with(|g| {
            let Some(at) = g.open else {
                return (None, false);
            };
            let Some(r) = g.saved.returns.back_mut() else {
                return (None, false);
            };
            if r.guests.iter().any(|x| x.job == job && x.home == home) {
                return (None, false);
            }
            let latency_ms = now.saturating_duration_since(at).as_secs_f64() * 1000.0;
            r.guests.push(Reaction {
                job: job.to_string(),
                home: home.to_string(),
                action: action.to_string(),
                latency_ms,
            });
            (Some(latency_ms), true)
        })
    }

    /// A guest's run ended.
    pub fn guest_ended(&self, run: GuestRun) {
        self.with(|g| {
            g.saved.guests.push_back(run);
            while g.saved.guests.len() > MAX_GUESTS {
                g.saved.guests.pop_front();
            }
            ((), true)
        })
    }

    /// Everything kept, oldest first.
    pub fn saved(&self) -> Saved {
        self.with(|g| (g.saved.clone(), false))
    }

    /// CPU seconds of every recorded guest run.
    pub fn guest_cpu_secs(&self) -> f64 {
        self.with(|g| (g.saved.guests.iter().map(|r| r.cpu_secs).sum(), false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_record_each_guests_first_action_and_are_saved() {
        let dir = tempfile::tempdir().unwrap();
        let log = OwnerLog::open(dir.path());
        assert_eq!(log.acted("1.0", "h", "suspended"), None, "no return open");
        log.returned("owner", Instant::now());
        let l = log.acted("1.0", "h", "suspended").unwrap();
        assert!((0.0..5000.0).contains(&l));
        assert_eq!(log.acted("1.0", "h", "vacated"), None, "only the first");
        assert!(log.acted("2.0", "h", "killed").is_some());
        log.left();
        log.guest_ended(GuestRun {
            job: "1.0".into(),
            owner: "alice".into(),
            home: "h".into(),
            started_ms: 1,
            ended_ms: 2,
            cpu_secs: 1.5,
            outcome: "completed (exit 0)".into(),
        });
        let again = OwnerLog::open(dir.path()).saved();
        assert_eq!(again, log.saved());
        assert_eq!(again.returns[0].guests.len(), 2);
        assert!(again.returns[0].until_ms.is_some());
        assert_eq!(log.guest_cpu_secs(), 1.5);
    }

    #[test]
    fn bounded() {
        let log = OwnerLog::in_memory();
        for _ in 0..MAX_RETURNS + 5 {
            log.returned("owner", Instant::now());
        }
        assert_eq!(log.saved().returns.len(), MAX_RETURNS);
    }
}
