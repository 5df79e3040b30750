//! What the dashboard shows over time and the pool's state does not keep:
//! each station's owner-state changes over the last day (a bounded ring
//! per station) and the Up-Down table at each snapshot (a bounded ring).
//! Kept in `<state_dir>/dashboard.json`, written now and then and at stop,
//! so that a restarted coordinator still shows the day.

use gleaner_core::detector::OwnerState;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

/// How far back the owner-state history goes.
pub const DAY_SECS: u64 = 24 * 3600;
/// Owner-state changes kept per station at most (a station whose owner
/// comes and goes every minute fills a day with 1440×2).
pub const MAX_CHANGES: usize = 4096;
/// Up-Down snapshots kept at most.
pub const MAX_SNAPSHOTS: usize = 1440;
/// Stations tracked at most (the oldest-seen go first).
pub const MAX_STATIONS: usize = 4096;

/// One owner-state change of a station.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// UNIX milliseconds.
    pub at_ms: u64,
    pub state: OwnerState,
}

/// The Up-Down table at one moment: station → SI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub at_ms: u64,
    pub si: BTreeMap<String, f64>,
    /// Nodes each station held then.
    #[serde(default)]
    pub held: BTreeMap<String, u32>,
}

/// The dashboard's history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct History {
    pub changes: BTreeMap<String, VecDeque<Change>>,
    pub updown: VecDeque<Snapshot>,
}

impl History {
    /// Records `station`'s state at `at_ms`; returns whether it changed.
    pub fn observe(&mut self, station: &str, state: OwnerState, at_ms: u64) -> bool {
        if !self.changes.contains_key(station) && self.changes.len() >= MAX_STATIONS {
            let stalest = self
                .changes
                .iter()
                .min_by_key(|(_, c)| c.back().map_or(0, |c| c.at_ms))
                .map(|(k, _)| k.clone());
            if let Some(k) = stalest {
                self.changes.remove(&k);
            }
        }
        let ring = self.changes.entry(station.to_string()).or_default();
        if ring.back().is_some_and(|c| c.state == state) {
            return false;
        }
        ring.push_back(Change { at_ms, state });
        // Keep the last change before the day's start: it says what the
        // state was when the day began.
        let cutoff = at_ms.saturating_sub(DAY_SECS * 1000);
        while ring.len() > MAX_CHANGES || (ring.len() > 1 && ring[1].at_ms <= cutoff) {
            ring.pop_front();
        }
        true
    }

    /// Adds an Up-Down snapshot.
    pub fn snapshot(&mut self, s: Snapshot) {
        self.updown.push_back(s);
        while self.updown.len() > MAX_SNAPSHOTS {
            self.updown.pop_front();
        }
    }

    /// The periods in which `station`'s owner was active (NA) over the
    /// day before `now_ms`, as `[from, to]` UNIX milliseconds, clipped to
    /// the day; an open period ends at `now_ms`.
    pub fn owner_periods(&self, station: &str, now_ms: u64) -> Vec<[u64; 2]> {
        let start = now_ms.saturating_sub(DAY_SECS * 1000);
        let mut out = Vec::new();
        let Some(ring) = self.changes.get(station) else {
            return out;
        };
        let mut open: Option<u64> = None;
        for c in ring {
            match (c.state, open) {
                (OwnerState::Na, None) => open = Some(c.at_ms.max(start)),
                (OwnerState::Av, Some(from)) => {
                    if c.at_ms > start {
                        out.push([from, c.at_ms]);
                    }
                    open = None;
                }
                _ => {}
            }
        }
        if let Some(from) = open {
            out.push([from, now_ms]);
        }
        out
    }

    /// Owner-state changes of `station` within the day before `now_ms`.
    pub fn changes_today(&self, station: &str, now_ms: u64) -> usize {
        let start = now_ms.saturating_sub(DAY_SECS * 1000);
        self.changes
            .get(station)
            .map_or(0, |r| r.iter().filter(|c| c.at_ms > start).count())
    }

    fn path(dir: &Path) -> PathBuf {
        dir.join("dashboard.json")
    }

    /// The history saved in `dir`; empty when there is none or it cannot
    /// be read (the dashboard's history is a convenience, never a reason
    /// not to start).
    pub fn load(dir: &Path) -> History {
        let path = Self::path(dir);
        match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "dashboard history unreadable; starting a new one");
                History::default()
            }),
            Err(_) => History::default(),
        }
    }

    /// Writes the history to `dir` atomically (0600).
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        gleaner_proto::creds::write_atomic(&Self::path(dir), &bytes, 0o600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H: u64 = 3600 * 1000;

    #[test]
    fn periods_of_the_day_are_clipped_and_an_open_one_ends_now() {
        let mut h = History::default();
        let now = 30 * H;
        assert!(h.observe("ws", OwnerState::Na, 2 * H)); // before the day
        assert!(h.observe("ws", OwnerState::Av, 8 * H));
        assert!(!h.observe("ws", OwnerState::Av, 9 * H), "no change");
        h.observe("ws", OwnerState::Na, 10 * H);
        h.observe("ws", OwnerState::Av, 11 * H);
        h.observe("ws", OwnerState::Na, 29 * H);
        assert_eq!(
            h.owner_periods("ws", now),
            vec![[6 * H, 8 * H], [10 * H, 11 * H], [29 * H, 30 * H]]
        );
        assert!(h.owner_periods("other", now).is_empty());
        // The first change of the day (at 8 h) and later ones.
        assert_eq!(h.changes_today("ws", now), 4);
    }

    #[test]
    fn saved_and_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = History::default();
        h.observe("a", OwnerState::Na, 5);
        h.snapshot(Snapshot {
            at_ms: 5,
            si: [("a".to_string(), 1.5)].into_iter().collect(),
            held: BTreeMap::new(),
        });
        h.save(dir.path()).unwrap();
        assert_eq!(History::load(dir.path()), h);
        std::fs::write(dir.path().join("dashboard.json"), "{").unwrap();
        assert_eq!(History::load(dir.path()), History::default());
    }

    proptest! {
        /// Whatever the changes, the rings stay within their bounds and
        /// the periods are ordered, disjoint and inside the day.
        #[test]
        fn bounded_and_ordered(steps in proptest::collection::vec((0u64..4 * H, any::<bool>()), 0..400)) {
            let mut h = History::default();
            let mut t = 0;
            for (dt, na) in steps {
                t += dt;
                h.observe("ws", if na { OwnerState::Na } else { OwnerState::Av }, t);
                h.snapshot(Snapshot { at_ms: t, si: BTreeMap::new(), held: BTreeMap::new() });
            }
            prop_assert!(h.changes.get("ws").map_or(0, |r| r.len()) <= MAX_CHANGES);
            prop_assert!(h.updown.len() <= MAX_SNAPSHOTS);
            let p = h.owner_periods("ws", t);
            let start = t.saturating_sub(DAY_SECS * 1000);
            for w in p.windows(2) {
                prop_assert!(w[0][1] <= w[1][0]);
            }
            for [a, b] in p {
                prop_assert!(start <= a && a <= b && b <= t);
            }
        }
    }
}
