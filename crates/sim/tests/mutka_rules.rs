//! Hand-checkable scenarios of the pool simulation's model rules (spec
//! mutka-livny-1987.md §2.4 "Rules implied by the text", R-SIM-1…3).

use gleaner_core::alloc::{AllocatorConfig, AllocatorKind};
use gleaner_core::eviction::EvictionPolicy;
use gleaner_core::time::{Dur, Time};
use gleaner_sim::availability::{Interval, Source, State, Trace};
use gleaner_sim::experiments::updown::{Class, CoordinatorKind, PoolConfig, simulate};
use gleaner_sim::workload::{Demand, Family, StationWorkload};
use std::sync::Arc;

fn m(x: u64) -> Time {
    Time::from_secs(x * 60)
}

fn iv(a: u64, b: u64, s: State) -> Interval {
    Interval {
        start: m(a),
        end: m(b),
        state: s,
    }
}

fn family(at: u64, mins: u64) -> StationWorkload {
    StationWorkload::Families(vec![Family {
        at: m(at),
        count: 1,
        demand: Demand::Fixed(Dur::from_mins(mins)),
    }])
}

fn pool(kind: AllocatorKind, host1: Vec<Interval>, w1: StationWorkload) -> PoolConfig {
    let trace = Trace {
        names: vec!["home".into(), "host".into()],
        stations: vec![vec![iv(0, 200, State::Na)], host1],
    };
    PoolConfig {
        workloads: vec![family(0, 60), w1],
        classes: vec![Class::Light, Class::Other],
        allocator: AllocatorConfig::default_for(kind),
        sched_interval: Dur::from_mins(10),
        transfer_cost: Dur::from_mins(1),
        horizon: m(200),
        availability: Source::Trace(Arc::new(trace)),
        coordinator: CoordinatorKind::Bare,
        guest_eviction: None,
    }
}

fn secs_close(a: f64, b_mins: f64) {
    assert!((a - b_mins * 60.0).abs() < 1e-6, "{a} s vs {b_mins} min");
}

/// A 60-minute job of an NA home station goes to the only AV host at the
/// first tick, pays the 1-minute transfer and finishes at 61 min.
#[test]
fn remote_placement_pays_the_transfer_cost() {
    for kind in [
        AllocatorKind::UpDown,
        AllocatorKind::Random,
        AllocatorKind::RoundRobin,
    ] {
        let r = simulate(
            &pool(kind, vec![iv(0, 200, State::Av)], StationWorkload::Idle),
            1,
        )
        .unwrap();
        let a = &r.accounts[0];
        assert_eq!(a.jobs.len(), 1);
        assert_eq!(a.jobs[0].finish, m(61), "{kind:?}");
        assert!(a.jobs[0].finished_remote);
        assert_eq!(a.rcp(), Some(100.0));
        assert_eq!(a.rcwr(), None, "never waited");
        secs_close(a.remote_alloc, 61.0);
    }
}

/// The host turns NA at 30 min: the guest is vacated with its progress (29
/// min after the transfer) and re-placed when the host is AV again at 40
/// (a capacity event), paying another transfer: it finishes at 41 + 31 = 72.
/// Waiting 30–40 min, node time 0–30 and 40–72: RCWR = 62/10.
#[test]
fn owner_return_vacates_and_na_to_av_reallocates() {
    let host = vec![
        iv(0, 30, State::Av),
        iv(30, 40, State::Na),
        iv(40, 200, State::Av),
    ];
    let r = simulate(&pool(AllocatorKind::UpDown, host, StationWorkload::Idle), 1).unwrap();
    let a = &r.accounts[0];
    assert_eq!(a.jobs[0].finish, m(72));
    assert_eq!(a.jobs[0].placements, 2);
    secs_close(a.wait, 10.0);
    secs_close(a.remote_alloc, 62.0);
    assert!((a.rcwr().unwrap() - 6.2).abs() < 1e-9);
    secs_close(a.remote_cpu, 60.0);
    assert_eq!(r.vacates, 1);
}

/// The host's owner submits a 10-minute job at 20 min: it runs locally and
/// displaces the guest (ran 19 min). When the owner's job finishes at 30 the
/// idle AV host is capacity again; the guest returns at 30 + 1 and needs 41
/// more minutes: finish at 72. The owner's job never counts as remote.
#[test]
fn owner_job_displaces_guest_and_runs_locally() {
    let r = simulate(
        &pool(
            AllocatorKind::Random,
            vec![iv(0, 200, State::Av)],
            family(20, 10),
        ),
        3,
    )
    .unwrap();
    let guest = &r.accounts[0].jobs[0];
    assert_eq!(guest.finish, m(72));
    let own = &r.accounts[1];
    assert_eq!(own.jobs[0].finish, m(30));
    assert!(!own.jobs[0].finished_remote);
    assert_eq!(own.rcp(), Some(0.0));
    secs_close(own.local_cpu, 10.0);
}

/// Condor-1988 ladder (Mutka 1988 L841): the host's owner is back 30–33
/// min, within the 5-minute grace, so the guest is suspended and resumed in
/// place: no requeue, no second transfer, 3 minutes suspended; it finishes
/// at 61 + 3 = 64 and never waits in the queue after its first start.
#[test]
fn condor_1988_guest_resumes_in_place_after_a_short_owner_visit() {
    let host = vec![
        iv(0, 30, State::Av),
        iv(30, 33, State::Na),
        iv(33, 200, State::Av),
    ];
    let mut cfg = pool(AllocatorKind::UpDown, host, StationWorkload::Idle);
    cfg.guest_eviction = Some(EvictionPolicy::default());
    let r = simulate(&cfg, 1).unwrap();
    let j = &r.accounts[0].jobs[0];
    assert_eq!(j.finish, m(64));
    assert_eq!(j.placements, 1);
    assert_eq!(j.suspended, Dur::from_mins(3));
    assert_eq!(j.queued, Dur::ZERO);
    assert_eq!(r.vacates, 0);
    secs_close(r.accounts[0].remote_cpu, 60.0);
}

/// The owner stays 30–40 min: suspended 30–35, then checkpointed and sent
/// home (L841), queued 35–40 until the host is AV again, re-placed with a
/// transfer at 40: 29 min done, 31 left, finish at 41 + 31 = 72.
#[test]
fn condor_1988_guest_leaves_after_the_grace() {
    let host = vec![
        iv(0, 30, State::Av),
        iv(30, 40, State::Na),
        iv(40, 200, State::Av),
    ];
    let mut cfg = pool(AllocatorKind::UpDown, host, StationWorkload::Idle);
    cfg.guest_eviction = Some(EvictionPolicy::default());
    let r = simulate(&cfg, 1).unwrap();
    let j = &r.accounts[0].jobs[0];
    assert_eq!(j.finish, m(72));
    assert_eq!(j.placements, 2);
    assert_eq!(j.suspended, Dur::from_mins(5));
    assert_eq!(j.queued, Dur::from_mins(5));
    assert_eq!(j.first_wait, Dur::ZERO);
    assert_eq!(r.vacates, 1);
    secs_close(r.accounts[0].remote_cpu, 60.0);
}

/// Policies that linger or lose work belong to the cluster simulator; the
/// pool model refuses them by name.
#[test]
fn pool_model_refuses_lingering_guests() {
    let mut cfg = pool(
        AllocatorKind::UpDown,
        vec![iv(0, 200, State::Av)],
        StationWorkload::Idle,
    );
    cfg.guest_eviction = EvictionPolicy::from_name("linger_longer");
    let e = simulate(&cfg, 1).expect_err("refused");
    assert!(e.to_string().contains("guest_eviction"), "{e}");
}
