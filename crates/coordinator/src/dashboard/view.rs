//! The dashboard's picture of the pool, as the page receives it (JSON):
//! built from what the coordinator has (the stations' ads with their
//! summaries, the Up-Down table, the pool status) and the dashboard's
//! history. Pure: the caller passes the time.

use super::history::History;
use crate::matchmaker::AdsView;
use gleaner_core::detector::OwnerState;
use gleaner_proto::wire::{PoolStatus, UserPrio};
use serde::Serialize;
use std::collections::HashMap;

/// What the dashboard reads from the pool at one moment.
pub struct PoolView {
    pub ads: AdsView,
    pub status: PoolStatus,
    pub prio: UserPrio,
}

/// Up-Down snapshots sent to the page at most (the newest).
const MAX_SNAPSHOTS_SENT: usize = 360;
/// Evictions and holds listed at most, over all homes.
const MAX_RECENT_SENT: usize = 40;

#[derive(Serialize, PartialEq)]
pub struct Guest {
    pub job: String,
    pub home: String,
    pub owner: String,
    pub since_ms: u64,
    /// Ladder state (`running`, `lingering`, `suspended`, …).
    pub state: String,
}

#[derive(Serialize, PartialEq)]
pub struct Station {
    pub name: String,
    /// `AV` or `NA`.
    pub state: &'static str,
    pub cpus: u32,
    pub memory_mb: u64,
    pub idle_jobs: u32,
    pub remote_jobs: u32,
    pub submit_only: bool,
    /// An administrator drained it: no new guests.
    pub drained: bool,
    pub si: Option<f64>,
    pub nodes_held: u32,
    pub waiting: u32,
    pub guests: Vec<Guest>,
    /// Owner-active periods over the last day, `[from_ms, to_ms]`.
    pub owner_periods: Vec<[u64; 2]>,
    pub changes_today: usize,
}

#[derive(Serialize, PartialEq)]
pub struct UserRow {
    pub station: String,
    pub user: String,
    pub idle: u32,
    pub running: u32,
    pub suspended: u32,
    pub held: u32,
    /// The longest current wait: since the oldest idle job's submission.
    pub oldest_wait_secs: Option<u64>,
}

#[derive(Serialize, PartialEq)]
pub struct Recent {
    pub station: String,
    pub job: String,
    pub user: String,
    pub kind: String,
    pub reason: String,
    pub at_ms: u64,
}

/// A job's newest events as its home sent them (the job panel's link to
/// its history).
#[derive(Serialize, PartialEq)]
pub struct Trail {
    /// The job's home.
    pub station: String,
    pub job: String,
    pub user: String,
    pub events: Vec<TrailEvent>,
    /// Older events kept on the home only.
    pub earlier: u64,
}

#[derive(Serialize, PartialEq)]
pub struct TrailEvent {
    pub kind: String,
    pub detail: String,
    pub at_ms: u64,
}

/// One DAG's progress, with its home.
#[derive(Serialize, PartialEq)]
pub struct Dag {
    pub station: String,
    #[serde(flatten)]
    pub progress: gleaner_proto::summary::DagProgress,
}

/// The page's model of the pool.
#[derive(Serialize, PartialEq)]
pub struct Dashboard {
    pub now_ms: u64,
    pub allocator: String,
    pub stations: Vec<Station>,
    pub users: Vec<UserRow>,
    pub recent: Vec<Recent>,
    pub dags: Vec<Dag>,
    pub updown: Vec<super::history::Snapshot>,
    pub trails: Vec<Trail>,
}

fn state_name(s: OwnerState) -> &'static str {
    match s {
        OwnerState::Av => "AV",
        OwnerState::Na => "NA",
    }
}

/// The dashboard at `now_ms`.
pub fn build(v: &PoolView, h: &History, now_ms: u64) -> Dashboard {
    let prio: HashMap<&str, _> = v
        .prio
        .stations
        .iter()
        .map(|r| (r.station.as_str(), r))
        .collect();
    let mut stations = Vec::new();
    let (mut users, mut recent, mut dags) = (Vec::new(), Vec::new(), Vec::new());
    let mut trails = Vec::new();
    for e in &v.ads.stations {
        let ad = &e.ad;
        let summary = ad.summary.clone().unwrap_or_default();
        let ladder: HashMap<(String, String), String> = summary
            .guests
            .iter()
            .map(|g| ((g.job.to_string(), g.home.clone()), g.state.clone()))
            .collect();
        let p = prio.get(ad.name.as_str());
        let drained = v
            .status
            .stations
            .iter()
            .any(|s| s.name == ad.name && s.drained);
        stations.push(Station {
            name: ad.name.clone(),
            state: state_name(ad.state),
            cpus: ad.cpus,
            memory_mb: ad.memory_mb,
            idle_jobs: ad.demand.idle_jobs,
            remote_jobs: ad.demand.remote_jobs,
            submit_only: ad.submit_only,
            drained,
            si: p.map(|r| r.si),
            nodes_held: p.map_or(0, |r| r.nodes_held),
            waiting: p.map_or(0, |r| r.waiting),
            guests: ad
                .running_guests
                .iter()
                .map(|g| {
                    let job = g.job.to_string();
                    let state = ladder
                        .get(&(job.clone(), g.home.clone()))
                        .cloned()
                        .unwrap_or_else(|| {
                            if g.suspended { "suspended" } else { "running" }.to_string()
                        });
                    Guest {
                        job,
                        home: g.home.clone(),
                        owner: g.owner.clone(),
                        since_ms: g.since.as_micros() / 1000,
                        state,
                    }
                })
                .collect(),
            owner_periods: h.owner_periods(&ad.name, now_ms),
            changes_today: h.changes_today(&ad.name, now_ms),
        });
        let now_s = now_ms / 1000;
        users.extend(summary.users.iter().map(|u| UserRow {
            station: ad.name.clone(),
            user: u.user.clone(),
            idle: u.idle,
            running: u.running,
            suspended: u.suspended,
            held: u.held,
            oldest_wait_secs: u.oldest_idle_unix.map(|t| now_s.saturating_sub(t)),
        }));
        recent.extend(summary.recent.iter().map(|r| Recent {
            station: ad.name.clone(),
            job: r.job.to_string(),
            user: r.user.clone(),
            kind: r.kind.clone(),
            reason: r.reason.clone(),
            at_ms: r.at_unix * 1000,
        }));
        dags.extend(summary.dags.iter().map(|d| Dag {
            station: ad.name.clone(),
            progress: d.clone(),
        }));
        trails.extend(summary.trails.iter().map(|t| {
            Trail {
                station: ad.name.clone(),
                job: t.job.to_string(),
                user: t.user.clone(),
                earlier: t.earlier,
                events: t
                    .events
                    .iter()
                    .map(|e| TrailEvent {
                        kind: e.kind.clone(),
                        detail: e.detail.clone(),
                        at_ms: e.at_unix * 1000,
                    })
                    .collect(),
            }
        }));
    }
    stations.sort_by(|a, b| a.name.cmp(&b.name));
    users.sort_by(|a, b| (&a.user, &a.station).cmp(&(&b.user, &b.station)));
    recent.sort_by_key(|r| std::cmp::Reverse(r.at_ms));
    recent.truncate(MAX_RECENT_SENT);
    let skip = h.updown.len().saturating_sub(MAX_SNAPSHOTS_SENT);
    Dashboard {
        now_ms,
        allocator: v.prio.allocator.clone(),
        stations,
        users,
        recent,
        dags,
        updown: h.updown.iter().skip(skip).cloned().collect(),
        trails,
    }
}

impl Dashboard {
    /// Whether `other` differs in anything but the clock (what makes the
    /// page worth updating at once): an open owner-active period that only
    /// grew, or waits that only aged, do not count.
    pub fn differs(&self, other: &Dashboard) -> bool {
        fn key(d: &Dashboard) -> serde_json::Value {
            let mut v = serde_json::to_value(d).unwrap_or_default();
            v["now_ms"] = serde_json::Value::Null;
            for s in v["stations"].as_array_mut().into_iter().flatten() {
                let starts: Vec<serde_json::Value> = s["owner_periods"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| p[0].clone())
                    .collect();
                s["owner_periods"] = serde_json::Value::Array(starts);
            }
            for u in v["users"].as_array_mut().into_iter().flatten() {
                u["oldest_wait_secs"] = serde_json::Value::Null;
            }
            v
        }
        key(self) != key(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matchmaker::AdEntry;
    use gleaner_core::time::Time;
    use gleaner_proto::job::JobId;
    use gleaner_proto::summary::{GuestLadder, JobTrail, StationSummary, UserQueue};
    use gleaner_proto::wire::{GuestInfo, StationAd, UserPrioEntry};

    fn ad(name: &str, state: OwnerState) -> StationAd {
        let mut a: StationAd = serde_json::from_value(serde_json::json!({
            "name": name, "address": "http://x", "state": state, "cpus": 2,
            "memory_mb": 1024, "disk_free_kb": 1, "arch": "X86_64", "opsys": "LINUX",
            "sent_at": 0,
        }))
        .unwrap();
        a.running_guests = vec![GuestInfo {
            job: JobId {
                cluster: 3,
                proc: 1,
            },
            home: "home1".into(),
            owner: "alice".into(),
            since: Time::from_micros(5_000_000),
            suspended: false,
            concurrency_limits: Vec::new(),
            class: None,
        }];
        a.summary = Some(StationSummary {
            users: vec![UserQueue {
                user: "bob".into(),
                idle: 2,
                oldest_idle_unix: Some(100),
                ..Default::default()
            }],
            guests: vec![GuestLadder {
                job: JobId {
                    cluster: 3,
                    proc: 1,
                },
                home: "home1".into(),
                state: "lingering".into(),
            }],
            trails: vec![JobTrail {
                job: JobId::new(7, 0),
                user: "bob".into(),
                events: vec![gleaner_proto::summary::TrailEvent {
                    kind: "started".into(),
                    detail: "on ws2".into(),
                    at_unix: 100,
                }],
                earlier: 3,
            }],
            ..Default::default()
        });
        a
    }

    #[test]
    fn stations_users_and_ladder_states_come_from_the_ads() {
        let view = PoolView {
            ads: AdsView {
                now_unix: 0,
                stations: vec![AdEntry {
                    ad: ad("ws1", OwnerState::Na),
                    pending_claims: 0,
                    embargoed: false,
                }],
                licences: Vec::new(),
            },
            status: PoolStatus::default(),
            prio: UserPrio {
                allocator: "updown".into(),
                submitters: Vec::new(),
                stations: vec![UserPrioEntry {
                    station: "ws1".into(),
                    si: -2.5,
                    nodes_held: 1,
                    waiting: 2,
                    wants: true,
                    known: true,
                }],
            },
        };
        let mut h = History::default();
        h.observe("ws1", OwnerState::Na, 150_000);
        let d = build(&view, &h, 160_000);
        let s = &d.stations[0];
        assert_eq!((s.state, s.si, s.nodes_held), ("NA", Some(-2.5), 1));
        assert_eq!(s.guests[0].state, "lingering");
        assert_eq!(s.guests[0].since_ms, 5000);
        assert_eq!(s.owner_periods, vec![[150_000, 160_000]]);
        assert_eq!(d.users[0].oldest_wait_secs, Some(60));
        // A job's trail, under its home's name, times in milliseconds.
        let t = &d.trails[0];
        assert_eq!(
            (t.station.as_str(), t.job.as_str(), t.earlier),
            ("ws1", "7.0", 3)
        );
        assert_eq!(
            (t.events[0].kind.as_str(), t.events[0].at_ms),
            ("started", 100_000)
        );
        // Time alone changes nothing worth a push; a new change does.
        assert!(!d.differs(&build(&view, &h, 170_000)));
        h.observe("ws1", OwnerState::Av, 171_000);
        assert!(d.differs(&build(&view, &h, 172_000)));
    }
}
