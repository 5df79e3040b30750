//! The home's part of the station's dashboard summary
//! ([`StationSummary`]): per-user queues and waits, the newest evictions
//! and holds with their reasons, DAG progress, and the newest events of
//! the jobs the dashboard shows (its link from a job to its history).
//! Bounded whatever the queue holds (`gleaner_proto::summary`'s limits).

use super::Home;
use super::dagman::status as dag_status;
use gleaner_proto::job::{JobEventKind, JobId, JobStateKind};
use gleaner_proto::summary::{
    DagProgress, JobTrail, MAX_DAGS, MAX_REASON, MAX_RECENT, MAX_TRAIL_DETAIL, MAX_TRAIL_EVENTS,
    MAX_TRAILS, MAX_USERS, RecentEvent, StationSummary, TrailEvent, UserQueue, cut,
};
use std::collections::BTreeMap;

fn secs(t: gleaner_core::time::Time) -> u64 {
    t.as_micros() / 1_000_000
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Home {
    /// The home's part of the summary (the host adds its guests).
    pub fn summary(&self) -> StationSummary {
        let mut q = self.queue();
        let mut users: BTreeMap<String, UserQueue> = BTreeMap::new();
        for c in q.owner_state_counts().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "summary: cannot count jobs by owner");
            Vec::new()
        }) {
            let u = users.entry(c.owner.clone()).or_insert_with(|| UserQueue {
                user: c.owner.clone(),
                ..Default::default()
            });
            let n = to_u32(c.count);
            match c.state {
                JobStateKind::Idle => {
                    u.idle = n;
                    u.oldest_idle_unix = Some(secs(c.oldest_submitted));
                }
                JobStateKind::Running => u.running = n,
                JobStateKind::Suspended => u.suspended = n,
                JobStateKind::Held => u.held = n,
                JobStateKind::Completed | JobStateKind::Removed => {}
            }
        }
        let mut users: Vec<UserQueue> = users.into_values().collect();
        users.sort_by_key(|u| std::cmp::Reverse(u.idle + u.running + u.suspended + u.held));
        users.truncate(MAX_USERS);
        let recent: Vec<RecentEvent> = q
            .recent_events(&[JobEventKind::Evicted, JobEventKind::Held], MAX_RECENT)
            .unwrap_or_default()
            .into_iter()
            .map(|e| RecentEvent {
                job: e.job,
                user: e.owner,
                kind: e.kind.name().to_string(),
                reason: cut(&e.detail, MAX_REASON),
                at_unix: secs(e.at),
            })
            .collect();
        let mut dags: Vec<DagProgress> = dag_status(&mut q, None)
            .unwrap_or_default()
            .into_iter()
            .map(|d| {
                let count =
                    |s: &str| to_u32(d.nodes.iter().filter(|n| n.status == s).count() as u64);
                DagProgress {
                    id: d.id,
                    owner: d.owner.clone(),
                    name: std::path::Path::new(&d.dag_file)
                        .file_name()
                        .map_or_else(|| d.dag_file.clone(), |f| f.to_string_lossy().into_owned()),
                    state: d.state.name().to_string(),
                    nodes: to_u32(d.nodes.len() as u64),
                    done: count("done"),
                    running: count("running") + count("submitted"),
                    failed: count("failed"),
                }
            })
            .collect();
        // Running DAGs first, then the newest.
        dags.sort_by_key(|d| (d.state != "running", std::cmp::Reverse(d.id)));
        dags.truncate(MAX_DAGS);
        let trails = trails(&q, &recent);
        StationSummary {
            users,
            recent,
            dags,
            guests: Vec::new(),
            trails,
        }
    }
}

/// The newest events of the jobs the dashboard shows from this home:
/// those of its recent evictions and holds, then its running and
/// suspended jobs, newest first ([`MAX_TRAILS`] jobs at most).
fn trails(q: &crate::queue::JobQueue, recent: &[RecentEvent]) -> Vec<JobTrail> {
    let mut jobs: Vec<JobId> = Vec::new();
    let running = q.running_jobs().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "summary: cannot list running jobs");
        Vec::new()
    });
    let newest_running = running.iter().rev().map(|(id, _)| *id);
    for id in recent.iter().map(|r| r.job).chain(newest_running) {
        if jobs.len() == MAX_TRAILS {
            break;
        }
        if !jobs.contains(&id) {
            jobs.push(id);
        }
    }
    jobs.into_iter()
        .filter_map(|id| {
            let (events, total) = q.newest_events_of(id, MAX_TRAIL_EVENTS).ok()?;
            let user = events.first()?.owner.clone();
            Some(JobTrail {
                job: id,
                user,
                earlier: total.saturating_sub(events.len() as u64),
                events: events
                    .into_iter()
                    .map(|e| TrailEvent {
                        kind: e.kind.name().to_string(),
                        detail: cut(&e.detail, MAX_TRAIL_DETAIL),
                        at_unix: secs(e.at),
                    })
                    .collect(),
            })
        })
        .collect()
}
