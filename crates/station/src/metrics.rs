//! `GET /metrics` on a station: its queue (as home) and its guests (as
//! host), read at scrape time from the same state `glean q` and
//! `GET /v1/guests` show, plus the home's event meters
//! ([`crate::home::meters`]) and the daemon's own CPU and memory.
//!
//! Served on the station's TCP port to any caller the edge admits (a
//! pool token of any role): it names users and counts, never job contents.

use crate::home::Home;
use crate::host::Host;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use gleaner_edge::metrics::{ProcessStats, counter, gauge, metrics_response};
use gleaner_proto::job::{JobEventKind, JobStateKind};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::collections::BTreeMap;
use std::sync::Arc;

type Labels = Vec<(&'static str, String)>;

/// Reasons evictions are counted under, from the eviction's detail.
pub const EVICTION_REASONS: [&str; 8] = [
    "owner_active",
    "migrating",
    "vacated",
    "station_shutdown",
    "start_failed",
    "disk_full",
    "host_error",
    "other",
];

/// The reason label of an eviction whose history detail is `detail` (the
/// texts the host's starter and the home write, `host/starter/run/`).
pub fn eviction_reason(detail: &str) -> &'static str {
    if crate::disk::says_full(detail) {
        "disk_full"
    } else if detail.contains("migrating") {
        "migrating"
    } else if detail.contains("owner active") {
        "owner_active"
    } else if detail.contains("vacated on request") {
        // The home asked (a preemption from the coordinator, or `glean rm`/hold).
        "vacated"
    } else if detail.contains("shutting down") {
        "station_shutdown"
    } else if detail.contains("failed to start") {
        "start_failed"
    } else if detail.contains("host error") {
        "host_error"
    } else {
        "other"
    }
}

/// What one scrape reads from the queue, taken under the queue lock.
#[derive(Debug, Default)]
pub struct QueueView {
    pub by_state: Vec<(JobStateKind, u64)>,
    pub by_owner: Vec<(String, JobStateKind, u64)>,
    pub evictions: BTreeMap<&'static str, u64>,
    /// Checkpoints recorded in the jobs' histories (rejections excluded).
    pub checkpoint_events: u64,
}

impl QueueView {
    fn read(home: &Home) -> QueueView {
        let q = home.queue();
        let by_state = q.count_by_state().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "metrics: cannot count jobs");
            Vec::new()
        });
        let by_owner = q
            .count_by_owner(&[JobStateKind::Idle, JobStateKind::Running])
            .unwrap_or_default();
        let mut evictions = BTreeMap::new();
        for (detail, n) in q.event_details(JobEventKind::Evicted).unwrap_or_default() {
            *evictions.entry(eviction_reason(&detail)).or_default() += n;
        }
        let checkpoint_events = q
            .event_details(JobEventKind::Checkpointed)
            .unwrap_or_default()
            .into_iter()
            .filter(|(d, _)| !d.starts_with("checkpoint rejected"))
            .map(|(_, n)| n)
            .sum();
        QueueView {
            by_state,
            by_owner,
            evictions,
            checkpoint_events,
        }
    }
}

fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|&(k, v)| (k, v.to_string())).collect()
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The home side's metrics.
pub fn register_home(r: &mut Registry, view: &QueueView, meters: &crate::home::meters::HomeMeters) {
    let jobs = Family::<Labels, Gauge>::default();
    for k in JobStateKind::ALL {
        let _ = jobs.get_or_create(&labels(&[("state", k.name())]));
    }
    for (k, n) in &view.by_state {
        jobs.get_or_create(&labels(&[("state", k.name())]))
            .set(to_i64(*n));
    }
    r.register(
        "jobs",
        "Jobs in this station's queue by state (Completed and Removed until the queue forgets them)",
        jobs,
    );
    let by_user = Family::<Labels, Gauge>::default();
    for (owner, k, n) in &view.by_owner {
        by_user
            .get_or_create(&labels(&[("user", owner), ("state", k.name())]))
            .set(to_i64(*n));
    }
    r.register(
        "user_jobs",
        "Idle and running jobs in this station's queue by owner",
        by_user,
    );
    let evictions = Family::<Labels, Counter>::default();
    for reason in EVICTION_REASONS {
        let n = view.evictions.get(reason).copied().unwrap_or(0);
        evictions
            .get_or_create(&labels(&[("reason", reason)]))
            .inc_by(n);
    }
    r.register(
        "evictions",
        "Evictions of this station's jobs from their hosts, by reason (from the jobs' histories)",
        evictions,
    );
    r.register(
        "checkpoint_events",
        "Checkpoints recorded in the histories of this station's jobs",
        counter(view.checkpoint_events),
    );
    r.register(
        "checkpoints_stored",
        "Checkpoints this station received and stored since it started",
        meters.checkpoints_stored.clone(),
    );
    r.register_with_unit(
        "checkpoints_stored",
        "Size of the checkpoints this station stored since it started",
        Unit::Bytes,
        meters.checkpoint_bytes.clone(),
    );
    r.register_with_unit(
        "checkpoint_receive",
        "Time spent receiving the checkpoints this station stored",
        Unit::Seconds,
        meters.checkpoint_seconds.clone(),
    );
    r.register(
        "checkpoints_rejected",
        "Checkpoints refused (corrupt, partial or too large) since the station started",
        meters.checkpoints_rejected.clone(),
    );
    r.register_with_unit(
        "submit_to_running",
        "Wait from submission to a job's first start, observed when it starts",
        Unit::Seconds,
        meters.submit_to_running.clone(),
    );
}

/// The host side's metrics: guests by ladder state, the owner's state.
pub fn register_host(r: &mut Registry, guest_states: &[String], available: bool) {
    let guests = Family::<Labels, Gauge>::default();
    for s in ["starting", "running", "lingering", "suspended", "migrating"] {
        let _ = guests.get_or_create(&labels(&[("state", s)]));
    }
    for s in guest_states {
        guests.get_or_create(&labels(&[("state", s)])).inc();
    }
    r.register(
        "guests",
        "Guests on this station (as host) by eviction-ladder state",
        guests,
    );
    r.register(
        "owner_available",
        "1 if the owner is away and the station lends (AV), 0 if not (NA)",
        gauge(i64::from(available)),
    );
}

/// The registry of one scrape.
pub fn registry(home: &Home, host: &Host) -> Registry {
    let mut r = Registry::with_prefix("gleaner");
    let view = QueueView::read(home);
    register_home(&mut r, &view, &home.meters);
    let states: Vec<String> = host.guests().into_iter().map(|g| g.state).collect();
    register_host(&mut r, &states, host.owner_state().is_available());
    if let Some(p) = ProcessStats::current() {
        p.register(&mut r);
    }
    r
}

struct Sides {
    home: Arc<Home>,
    host: Arc<Host>,
}

async fn metrics(State(s): State<Arc<Sides>>) -> Response {
    let sides = s.clone();
    // The queue is SQLite: read it off the async workers.
    match tokio::task::spawn_blocking(move || registry(&sides.home, &sides.host)).await {
        Ok(r) => metrics_response(&r),
        Err(_) => gleaner_edge::ApiError::new(
            gleaner_proto::wire::ErrorCode::Internal,
            "metrics collection failed",
        )
        .into_response(),
    }
}

/// `GET /metrics` (behind the station's authentication).
pub fn router(home: Arc<Home>, host: Arc<Host>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(Arc::new(Sides { home, host }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn evictions_are_classified_by_their_detail() {
        let cases = [
            (
                "on h: evicted by condor policy: owner active",
                "owner_active",
            ),
            (
                "on h: migrating (ll policy): owner active and a free node would take the job",
                "migrating",
            ),
            ("on h: vacated on request", "vacated"),
            ("on h: the station is shutting down", "station_shutdown"),
            ("failed to start on h (2 in a row)", "start_failed"),
            ("on h: host error: boom", "host_error"),
            ("on h: input transfer interrupted: x", "other"),
        ];
        for (detail, want) in cases {
            assert_eq!(eviction_reason(detail), want, "{detail}");
            assert!(EVICTION_REASONS.contains(&want));
        }
    }

    #[test]
    fn home_and_host_metrics_are_named_by_convention() {
        let mut r = Registry::with_prefix("gleaner");
        let view = QueueView {
            by_state: vec![(JobStateKind::Idle, 3), (JobStateKind::Running, 1)],
            by_owner: vec![("alice".into(), JobStateKind::Idle, 3)],
            evictions: [("owner_active", 2)].into_iter().collect(),
            checkpoint_events: 4,
        };
        let meters = crate::home::meters::HomeMeters::default();
        meters.submit_to_running.observe(0.05);
        meters.checkpoint_bytes.inc_by(1000);
        register_home(&mut r, &view, &meters);
        register_host(&mut r, &["lingering".to_string()], false);
        let mut out = String::new();
        encode(&mut out, &r).unwrap();
        for line in [
            "gleaner_jobs{state=\"idle\"} 3",
            "gleaner_jobs{state=\"held\"} 0",
            "gleaner_user_jobs{user=\"alice\",state=\"idle\"} 3",
            "gleaner_evictions_total{reason=\"owner_active\"} 2",
            "gleaner_evictions_total{reason=\"other\"} 0",
            "gleaner_checkpoints_stored_bytes_total 1000",
            "gleaner_submit_to_running_seconds_count 1",
            "gleaner_guests{state=\"lingering\"} 1",
            "gleaner_owner_available 0",
        ] {
            assert!(out.contains(line), "missing {line} in\n{out}");
        }
    }
}
