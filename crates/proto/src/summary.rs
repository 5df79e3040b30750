//! A station's bounded summary, carried in its ad so that the
//! coordinator's dashboard can show per-user queues and waits, recent
//! evictions and holds with their reasons, DAG progress and each guest's
//! ladder state without reading any home's queue (homes know jobs, hosts
//! know guests; the coordinator knows only what the ads say). Every list is bounded ([`MAX_USERS`],
//! [`MAX_RECENT`], [`MAX_DAGS`]) so an ad stays small whatever the queue
//! holds; the coordinator refuses a summary over the bounds.

use crate::job::JobId;
use serde::{Deserialize, Serialize};

/// Users listed at most (those with the most jobs first).
pub const MAX_USERS: usize = 32;
/// Recent evictions and holds listed at most (newest first).
pub const MAX_RECENT: usize = 12;
/// DAGs listed at most (running ones first, then the newest).
pub const MAX_DAGS: usize = 12;
/// Guests listed at most.
pub const MAX_GUESTS: usize = 1024;
/// Longest reason text carried (longer ones are cut).
pub const MAX_REASON: usize = 200;
/// Jobs whose recent history is carried at most (the dashboard's link
/// from a job to its history): the home's running and suspended jobs,
/// newest first, and those of [`StationSummary::recent`].
pub const MAX_TRAILS: usize = 24;
/// Events carried per job at most (its newest).
pub const MAX_TRAIL_EVENTS: usize = 8;
/// Longest event detail carried in a trail.
pub const MAX_TRAIL_DETAIL: usize = 120;

/// [`crate::wire::StationAd::summary`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StationSummary {
    pub users: Vec<UserQueue>,
    pub recent: Vec<RecentEvent>,
    pub dags: Vec<DagProgress>,
    /// As a host: each guest's eviction-ladder state (`running`,
    /// `lingering`, `suspended`, …), as `GET /v1/guests` shows it.
    pub guests: Vec<GuestLadder>,
    /// As a home: the newest events of the jobs the dashboard shows, so a
    /// job links to its history without anyone reading the home's queue.
    pub trails: Vec<JobTrail>,
}

/// The newest events of one of the home's jobs, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobTrail {
    pub job: JobId,
    pub user: String,
    pub events: Vec<TrailEvent>,
    /// Events of the job's history left out (older than these).
    #[serde(default)]
    pub earlier: u64,
}

/// One history event in a [`JobTrail`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrailEvent {
    /// The event's kind (`submitted`, `started`, `evicted`, …).
    pub kind: String,
    /// Its detail, cut to [`MAX_TRAIL_DETAIL`] bytes.
    pub detail: String,
    pub at_unix: u64,
}

/// One guest's ladder state on a host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestLadder {
    pub job: JobId,
    pub home: String,
    pub state: String,
}

/// One user's jobs in a home's queue.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserQueue {
    pub user: String,
    pub idle: u32,
    pub running: u32,
    pub suspended: u32,
    pub held: u32,
    /// Submission time (UNIX seconds) of the user's oldest idle job: the
    /// longest current wait.
    pub oldest_idle_unix: Option<u64>,
}

/// An eviction or hold of one of the home's jobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentEvent {
    pub job: JobId,
    pub user: String,
    /// `evicted` or `held`.
    pub kind: String,
    /// The history event's detail (host and reason), cut to
    /// [`MAX_REASON`] bytes.
    pub reason: String,
    pub at_unix: u64,
}

/// One DAG's progress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DagProgress {
    pub id: u64,
    pub owner: String,
    /// The DAG file's name (without its directory).
    pub name: String,
    /// `running`, `done`, `failed`, `removed`.
    pub state: String,
    pub nodes: u32,
    pub done: u32,
    pub running: u32,
    pub failed: u32,
}

impl StationSummary {
    /// Whether every list is within its bound (the coordinator's check).
    pub fn within_bounds(&self) -> Result<(), &'static str> {
        if self.users.len() > MAX_USERS {
            return Err("summary.users");
        }
        if self.recent.len() > MAX_RECENT
            || self.recent.iter().any(|r| r.reason.len() > MAX_REASON + 4)
        {
            return Err("summary.recent");
        }
        if self.dags.len() > MAX_DAGS {
            return Err("summary.dags");
        }
        if self.guests.len() > MAX_GUESTS {
            return Err("summary.guests");
        }
        if self.trails.len() > MAX_TRAILS
            || self.trails.iter().any(|t| {
                t.events.len() > MAX_TRAIL_EVENTS
                    || t.events
                        .iter()
                        .any(|e| e.detail.len() > MAX_TRAIL_DETAIL + 4 || e.kind.len() > 32)
            })
        {
            return Err("summary.trails");
        }
        Ok(())
    }
}

/// `s` cut to at most `max` bytes on a character boundary, with "…" when cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_cuts() {
        assert_eq!(cut("héllo", 2), "h…");
        assert_eq!(cut("abc", 5), "abc");
        let mut s = StationSummary::default();
        assert!(s.within_bounds().is_ok());
        s.dags = vec![DagProgress::default(); MAX_DAGS + 1];
        assert_eq!(s.within_bounds(), Err("summary.dags"));
        s.dags.clear();
        let event = TrailEvent {
            kind: "started".into(),
            detail: "x".repeat(MAX_TRAIL_DETAIL),
            at_unix: 1,
        };
        let trail = JobTrail {
            job: JobId::new(1, 0),
            user: "u".into(),
            events: vec![event.clone(); MAX_TRAIL_EVENTS],
            earlier: 0,
        };
        s.trails = vec![trail.clone(); MAX_TRAILS];
        assert!(s.within_bounds().is_ok());
        s.trails[0].events.push(event);
        assert_eq!(s.within_bounds(), Err("summary.trails"));
        s.trails = vec![trail; MAX_TRAILS + 1];
        assert_eq!(s.within_bounds(), Err("summary.trails"));
    }
}
