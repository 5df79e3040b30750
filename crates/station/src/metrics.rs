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
    r.register_with_unit(
        "queue_wait",
        "Wait in the queue before each start, from the job's last turn to idle (submission or requeue)",
        Unit::Seconds,
        meters.queue_wait.clone(),
    );
    r.register_with_unit(
        "checkpoint_duration",
        "Time to receive each checkpoint this station stored",
        Unit::Seconds,
        meters.checkpoint_duration.clone(),
    );
}

/// What one scrape reads from the host side.
#[derive(Debug, Default)]
pub struct HostView {
    /// Each guest's ladder state.
    pub guest_states: Vec<String>,
    /// The owner is away and the station lends.
    pub available: bool,
    /// Ladder actions carried out since start, by name.
    pub actions: BTreeMap<&'static str, u64>,
    /// Changes of the lent state since start: (to AV, to NA).
    pub transitions: (u64, u64),
    /// CPU seconds since boot: the whole machine's busy time and the
    /// guests' (their cgroups'), when known.
    pub machine_busy_secs: Option<f64>,
    pub guest_cpu_secs: Option<f64>,
    /// Each recorded guest reaction to an owner's return, seconds.
    pub return_latencies: Vec<f64>,
}

impl HostView {
    fn read(host: &Host) -> HostView {
        let mut v = HostView {
            guest_states: host.guests().into_iter().map(|g| g.state).collect(),
            available: host.owner_state().is_available(),
            ..Default::default()
        };
        if let Some(s) = host.starter() {
            v.actions = s.action_counts();
            v.guest_cpu_secs = s
                .cgroups()
                .and_then(|m| m.total_guest_usage().ok())
                .map(|d| d.as_secs_f64());
        }
        if let Some(o) = host.owner_side() {
            use std::sync::atomic::Ordering::Relaxed;
            v.transitions = (o.news.to_av.load(Relaxed), o.news.to_na.load(Relaxed));
            let saved = o.log.saved();
            v.return_latencies = saved
                .returns
                .iter()
                .flat_map(|r| r.guests.iter().map(|g| g.latency_ms / 1000.0))
                .collect();
            if v.guest_cpu_secs.is_none() {
                v.guest_cpu_secs = Some(o.log.guest_cpu_secs());
            }
        }
        v.machine_busy_secs = crate::owner::read_proc_stat(std::path::Path::new("/proc"))
            .ok()
            .map(|(t, _)| {
                // SAFETY: sysconf has no preconditions; it reads a constant.
                let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
                t.busy() as f64 / (hz.max(1) as f64)
            });
        v
    }
}

/// Names of the ladder actions counted (zero series for the others).
const ACTIONS: [&str; 8] = [
    "run",
    "lowered",
    "suspended",
    "resumed",
    "checkpoint",
    "migrated",
    "vacated",
    "killed",
];

/// The host side's metrics: guests by ladder state and by ladder action,
/// the owner's state and its changes, the owner's and the guests' CPU, and
/// how quickly guests got out of the owner's way.
pub fn register_host(r: &mut Registry, v: &HostView) {
    let guests = Family::<Labels, Gauge>::default();
    for s in ["starting", "running", "lingering", "suspended", "migrating"] {
        let _ = guests.get_or_create(&labels(&[("state", s)]));
    }
    for s in &v.guest_states {
        guests.get_or_create(&labels(&[("state", s)])).inc();
    }
    r.register(
        "guests",
        "Guests on this station (as host) by eviction-ladder state",
        guests,
    );
    let actions = Family::<Labels, Counter>::default();
    for a in ACTIONS {
        actions
            .get_or_create(&labels(&[("action", a)]))
            .inc_by(v.actions.get(a).copied().unwrap_or(0));
    }
    r.register(
        "guest_actions",
        "Eviction-ladder actions carried out on guests here since the station started",
        actions,
    );
    r.register(
        "owner_available",
        "1 if the owner is away and the station lends (AV), 0 if not (NA)",
        gauge(i64::from(v.available)),
    );
    let transitions = Family::<Labels, Counter>::default();
    transitions
        .get_or_create(&labels(&[("to", "AV")]))
        .inc_by(v.transitions.0);
    transitions
        .get_or_create(&labels(&[("to", "NA")]))
        .inc_by(v.transitions.1);
    r.register(
        "owner_transitions",
        "Changes of this station's lent state (AV/NA, after the owner's stops and schedule) since it started",
        transitions,
    );
    if let (Some(busy), Some(guests)) = (v.machine_busy_secs, v.guest_cpu_secs) {
        let cpu = Family::<Labels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
        cpu.get_or_create(&labels(&[("who", "guests")]))
            .inc_by(guests);
        cpu.get_or_create(&labels(&[("who", "owner")]))
            .inc_by((busy - guests).max(0.0));
        r.register_with_unit(
            "host_cpu",
            "CPU time used on this machine: by guests (their cgroups, else finished runs) and by everything else (the owner's, daemons included), since boot",
            Unit::Seconds,
            cpu,
        );
    }
    let latency = prometheus_client::metrics::histogram::Histogram::new(
        prometheus_client::metrics::histogram::exponential_buckets(0.001, 2.0, 14),
    );
    for l in &v.return_latencies {
        latency.observe(*l);
    }
    r.register_with_unit(
        "owner_return_reaction",
        "From the station turning NA to each guest's first ladder action (frozen, killed, vacate begun, lowered), over the kept history",
        Unit::Seconds,
        latency,
    );
}

/// The registry of one scrape.
pub fn registry(home: &Home, host: &Host) -> Registry {
    let mut r = Registry::with_prefix("gleaner");
    let view = QueueView::read(home);
    register_home(&mut r, &view, &home.meters);
    register_host(&mut r, &HostView::read(host));
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
        register_host(
            &mut r,
            &HostView {
                guest_states: vec!["lingering".to_string()],
                actions: [("suspended", 2)].into_iter().collect(),
                transitions: (1, 2),
                machine_busy_secs: Some(10.0),
                guest_cpu_secs: Some(4.0),
                return_latencies: vec![0.05],
                ..Default::default()
            },
        );
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
            "gleaner_guest_actions_total{action=\"suspended\"} 2",
            "gleaner_guest_actions_total{action=\"killed\"} 0",
            "gleaner_owner_transitions_total{to=\"NA\"} 2",
            "gleaner_host_cpu_seconds_total{who=\"guests\"} 4.0",
            "gleaner_host_cpu_seconds_total{who=\"owner\"} 6.0",
            "gleaner_owner_return_reaction_seconds_count 1",
            "gleaner_queue_wait_seconds_count 0",
            "gleaner_checkpoint_duration_seconds_count 0",
        ] {
            assert!(out.contains(line), "missing {line} in\n{out}");
        }
    }
}
