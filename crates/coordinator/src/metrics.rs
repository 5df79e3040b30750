//! `GET /metrics`: the pool as Prometheus sees it, read from the same
//! state `glean status` (`/v1/pool`) and `glean userprio` (`/v1/userprio`)
//! show, at scrape time, so the numbers agree with them by construction.

use crate::mailbox::Issued;
use gleaner_core::detector::OwnerState;
use gleaner_edge::metrics::{FloatGauge, ProcessStats, counter, gauge};
use gleaner_proto::wire::{PoolStatus, UserPrio};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

type Labels = Vec<(&'static str, String)>;

/// What one scrape reports, taken under the pool lock and encoded after it.
pub(crate) struct Snapshot {
    pub(crate) status: PoolStatus,
    pub(crate) prio: UserPrio,
    pub(crate) issued: Issued,
    pub(crate) passes: u64,
    /// Owner-state changes seen in ads: (to AV, to NA).
    pub(crate) transitions: (u64, u64),
}

fn station(name: &str) -> Labels {
    vec![("station", name.to_string())]
}

fn state_name(s: OwnerState) -> &'static str {
    match s {
        OwnerState::Av => "AV",
        OwnerState::Na => "NA",
    }
}

/// The coordinator's registry for one scrape.
pub(crate) fn registry(snap: &Snapshot, process: Option<ProcessStats>) -> Registry {
    let mut r = Registry::with_prefix("gleaner");

    // Up-Down (Mutka 1988 Table 4.3): one row per station `glean userprio` shows.
    let si = Family::<Labels, FloatGauge>::default();
    let held = Family::<Labels, Gauge>::default();
    let wanted = Family::<Labels, Gauge>::default();
    for e in &snap.prio.stations {
        si.get_or_create(&station(&e.station)).set(e.si);
        held.get_or_create(&station(&e.station))
            .set(i64::from(e.nodes_held));
        wanted
            .get_or_create(&station(&e.station))
            .set(i64::from(e.waiting));
    }
    r.register(
        "updown_index",
        "Up-Down schedule index SI per station (smaller is served first; 0 for other allocators)",
        si,
    );
    r.register(
        "station_nodes_held",
        "Remote nodes the station holds now (its guests on other hosts)",
        held,
    );
    r.register(
        "station_nodes_wanted",
        "Idle jobs of the station waiting for a remote node",
        wanted,
    );

    // The pool's accountant: one row per submitter `condor_userprio` shows.
    let sub_held = Family::<Labels, Gauge>::default();
    let sub_usage = Family::<Labels, FloatGauge>::default();
    for e in &snap.prio.submitters {
        let l = vec![("submitter", e.name.clone())];
        sub_held.get_or_create(&l).set(i64::from(e.nodes_held));
        sub_usage.get_or_create(&l).set(e.usage);
    }
    r.register(
        "submitter_nodes_held",
        "Nodes the submitter's jobs hold now, pool-wide (SUBMITTER@HOME)",
        sub_held,
    );
    r.register(
        "submitter_usage",
        "Submitter's decayed usage in nodes (half-life one day; HTCondor's real user priority)",
        sub_usage,
    );

    // One row per advertising station, as `glean status` shows.
    let by_state = Family::<Labels, Gauge>::default();
    for s in [OwnerState::Av, OwnerState::Na] {
        let _ = by_state.get_or_create(&vec![("state", state_name(s).to_string())]);
    }
    let guests = Family::<Labels, Gauge>::default();
    let idle = Family::<Labels, Gauge>::default();
    let remote = Family::<Labels, Gauge>::default();
    let available = Family::<Labels, Gauge>::default();
    let last_seen = Family::<Labels, FloatGauge>::default();
    for s in &snap.status.stations {
        by_state
            .get_or_create(&vec![("state", state_name(s.state).to_string())])
            .inc();
        guests
            .get_or_create(&station(&s.name))
            .set(i64::from(s.guests));
        idle.get_or_create(&station(&s.name))
            .set(i64::from(s.idle_jobs));
        remote
            .get_or_create(&station(&s.name))
            .set(i64::from(s.remote_jobs));
        available
            .get_or_create(&station(&s.name))
            .set(i64::from(s.state.is_available()));
        last_seen
            .get_or_create(&station(&s.name))
            .set(s.last_seen_secs);
    }
    r.register(
        "stations",
        "Advertising stations by owner state (AV available, NA not available)",
        by_state,
    );
    r.register(
        "station_available",
        "1 if the station is available for guests (AV), 0 if its owner holds it (NA)",
        available,
    );
    r.register(
        "station_guests",
        "Guests running on the station (as host)",
        guests,
    );
    r.register(
        "station_idle_jobs",
        "Idle jobs in the station's queue (as home), from its last ad",
        idle,
    );
    r.register(
        "station_remote_jobs",
        "Jobs of the station running on other hosts, from its last ad",
        remote,
    );
    r.register_with_unit(
        "station_last_seen_age",
        "Time since the coordinator last heard from the station",
        Unit::Seconds,
        last_seen,
    );

    r.register(
        "grants",
        "Remote nodes granted to stations since the coordinator started",
        counter(snap.issued.grants),
    );
    r.register(
        "preemptions",
        "Preemptions issued (a home asked to give a host back) since the coordinator started",
        counter(snap.issued.preemptions),
    );
    let changes = Family::<Labels, Counter>::default();
    changes
        .get_or_create(&vec![("to", "AV".to_string())])
        .inc_by(snap.transitions.0);
    changes
        .get_or_create(&vec![("to", "NA".to_string())])
        .inc_by(snap.transitions.1);
    r.register(
        "station_state_changes",
        "Stations' owner-state changes seen in their ads since the coordinator started, by new state",
        changes,
    );
    r.register(
        "allocation_passes",
        "Allocation passes run since the coordinator started",
        counter(snap.passes),
    );
    r.register(
        "known_stations",
        "Stations currently advertising",
        gauge(i64::try_from(snap.status.stations.len()).unwrap_or(i64::MAX)),
    );
    if let Some(p) = process {
        p.register(&mut r);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_proto::wire::{StationStatus, UserPrioEntry};
    use prometheus_client::encoding::text::encode;

    #[test]
    fn names_and_values_follow_the_views() {
        let snap = Snapshot {
            status: PoolStatus {
                stations: vec![StationStatus {
                    name: "ws1".into(),
                    address: "http://x".into(),
                    state: OwnerState::Av,
                    cpus: 2,
                    memory_mb: 10,
                    disk_free_kb: 10,
                    guests: 1,
                    idle_jobs: 3,
                    remote_jobs: 2,
                    submit_only: false,
                    execute_only: false,
                    drained: false,
                    last_seen_secs: 0.5,
                }],
            },
            prio: UserPrio {
                allocator: "updown".into(),
                submitters: vec![gleaner_proto::wire::SubmitterPrio {
                    name: "ann@ws1".into(),
                    submitter: "ann".into(),
                    home: "ws1".into(),
                    nodes_held: 2,
                    usage: 1.5,
                }],
                stations: vec![UserPrioEntry {
                    station: "ws1".into(),
                    si: -2.5,
                    nodes_held: 2,
                    waiting: 3,
                    wants: true,
                    known: true,
                }],
            },
            issued: Issued {
                grants: 7,
                preemptions: 1,
            },
            passes: 9,
            transitions: (2, 3),
        };
        let mut out = String::new();
        encode(&mut out, &registry(&snap, None)).unwrap();
        for line in [
            "gleaner_updown_index{station=\"ws1\"} -2.5",
            "gleaner_station_nodes_held{station=\"ws1\"} 2",
            "gleaner_station_nodes_wanted{station=\"ws1\"} 3",
            "gleaner_submitter_nodes_held{submitter=\"ann@ws1\"} 2",
            "gleaner_submitter_usage{submitter=\"ann@ws1\"} 1.5",
            "gleaner_stations{state=\"AV\"} 1",
            "gleaner_stations{state=\"NA\"} 0",
            "gleaner_grants_total 7",
            "gleaner_preemptions_total 1",
            "gleaner_station_state_changes_total{to=\"NA\"} 3",
            "gleaner_station_last_seen_age_seconds{station=\"ws1\"} 0.5",
        ] {
            assert!(out.contains(line), "missing {line} in\n{out}");
        }
    }
}
