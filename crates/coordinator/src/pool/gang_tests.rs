//! Gang placement: a parallel job's members are granted all together or
//! not at all, each on its own host.

use super::event_tests::pool_with;
use super::gang::gangs_left;
use super::*;
use crate::CoordinatorConfig;
use gleaner_core::gang::{OnEviction, Shape};
use gleaner_core::time::Dur;
use gleaner_proto::job::{Gang, GangMember, GangPolicyKind, JobDescription};
use gleaner_proto::matchmaking::JobClass;
use proptest::prelude::*;

fn host(name: &str, cpus: u32) -> StationAd {
    let mut a = crate::matchmaker::tests::host(name, cpus, 4096, 1.0);
    a.execute_only = true;
    a
}

fn gang(k: u32, policy: GangPolicyKind, min: u32, shape: Shape) -> Gang {
    Gang {
        machine_count: k,
        policy,
        on_eviction: OnEviction::Suspend,
        min,
        shape,
    }
}

/// A home with `jobs` parallel jobs of gang `g` waiting (all members idle).
fn home_with(name: &str, g: Gang, jobs: u32) -> StationAd {
    let mut a = crate::matchmaker::tests::host(name, 0, 0, 1.0);
    a.submit_only = true;
    a.state = OwnerState::Na;
    let mut d = JobDescription::new("alice", "/bin/true");
    d.gang = Some(GangMember { gang: g, rank: 0 });
    let c = JobClass::of(&d);
    a.classes = vec![JobClass {
        count: g.machine_count * jobs,
        ..c
    }];
    a.demand.idle_jobs = g.machine_count * jobs;
    a
}

/// Every grant in `out`: (home, member hosts).
fn gangs(out: &Outbox) -> Vec<(String, Vec<String>)> {
    out.grants()
        .map(|(to, g)| {
            (
                to.to_string(),
                g.gang.iter().map(|m| m.host.clone()).collect(),
            )
        })
        .collect()
}

#[test]
fn a_gang_is_granted_its_k_hosts_in_one_grant() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    for h in ["h1", "h2", "h3", "h4"] {
        p.advertise(host(h, 1), t0, &mut out);
    }
    let g = gang(3, GangPolicyKind::Linger, 1, Shape::Any);
    p.advertise(home_with("a", g, 1), t0 + Dur::from_secs(1), &mut out);
    let got = gangs(&out);
    assert_eq!(got.len(), 1, "{out:?}");
    let (to, hosts) = &got[0];
    assert_eq!(to, "a");
    assert_eq!(hosts.len(), 3);
    let mut distinct = hosts.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "one member per host: {hosts:?}");
    // The grant's own host is rank 0's.
    let (_, grant) = out.grants().next().unwrap();
    assert_eq!(grant.host, hosts[0]);
    assert_eq!(p.claims.len(), 3);
}

#[test]
fn a_gang_larger_than_the_free_hosts_waits_and_holds_nothing() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    // Two hosts, one of them with two CPUs: still two hosts.
    p.advertise(host("h1", 2), t0, &mut out);
    p.advertise(host("h2", 1), t0, &mut out);
    let g = gang(3, GangPolicyKind::Linger, 1, Shape::Any);
    for s in 1..30 {
        let t = t0 + Dur::from_secs(s);
        p.advertise(home_with("a", g, 1), t, &mut out);
        p.tick(t, &mut out);
    }
    assert!(gangs(&out).is_empty(), "{out:?}");
    assert_eq!(
        p.claims.len(),
        0,
        "no node held for a gang that cannot start"
    );
}

#[test]
fn reconfiguration_takes_the_shapes_floor_of_the_free_hosts() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    for h in ["h1", "h2", "h3"] {
        p.advertise(host(h, 1), t0, &mut out);
    }
    let g = gang(4, GangPolicyKind::Reconfigure, 2, Shape::PowerOfTwo);
    p.advertise(home_with("a", g, 1), t0 + Dur::from_secs(1), &mut out);
    let got = gangs(&out);
    assert_eq!(got.len(), 1, "{out:?}");
    assert_eq!(got[0].1.len(), 2, "3 idle hosts, powers of two: 2");
}

proptest! {
    /// Whatever the pool, a gang is granted exactly the nodes its policy
    /// asks for, on distinct hosts, or nothing at all; and no claim is
    /// left pending beyond the granted members.
    #[test]
    fn never_a_partial_gang(
        cpus in proptest::collection::vec(0u32..3, 0..8),
        k in 1u32..6,
        jobs in 1u32..3,
        reconfigure in any::<bool>(),
        min in 1u32..4,
    ) {
        let (mut p, t0) = pool_with(CoordinatorConfig::default());
        let mut out = Outbox::default();
        for (i, c) in cpus.iter().enumerate() {
            p.advertise(host(&format!("h{i}"), *c), t0, &mut out);
        }
        let g = if reconfigure {
            gang(k, GangPolicyKind::Reconfigure, min.min(k), Shape::Any)
        } else {
            gang(k, GangPolicyKind::Linger, 1, Shape::Any)
        };
        let t = t0 + Dur::from_secs(1);
        p.advertise(home_with("a", g, jobs), t, &mut out);
        p.tick(t, &mut out);
        let hosts_up = cpus.iter().filter(|c| **c > 0).count() as u32;
        let mut granted = 0;
        for (to, members) in gangs(&out) {
            prop_assert_eq!(to, "a");
            let n = members.len() as u32;
            let mut d = members.clone();
            d.sort();
            d.dedup();
            prop_assert_eq!(d.len() as u32, n, "one member per host");
            if reconfigure {
                prop_assert!(n >= g.min && n <= k);
            } else {
                prop_assert_eq!(n, k);
            }
            granted += n;
        }
        prop_assert_eq!(p.claims.len() as u32, granted);
        if !reconfigure && hosts_up < k {
            prop_assert_eq!(granted, 0);
        }
        if !reconfigure && hosts_up >= k {
            prop_assert!(granted >= k, "a gang that fits starts at once");
        }
    }
}

#[test]
fn a_reconfigurable_gang_starts_on_the_idle_hosts_it_finds_and_is_granted_once() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    // Three hosts, one of them with its owner back: two idle hosts fit.
    for h in ["h1", "h2", "h3"] {
        let mut a = host(h, 1);
        if h == "h2" {
            a.state = OwnerState::Na;
        }
        p.advertise(a, t0, &mut out);
    }
    let g = gang(3, GangPolicyKind::Reconfigure, 1, Shape::Any);
    for s in 1..10 {
        let t = t0 + Dur::from_secs(s);
        if s == 3 {
            // A host comes free while the gang's grant is pending: the
            // job, granted already, takes no stray member there.
            p.advertise(host("h4", 1), t, &mut out);
        }
        p.advertise(home_with("a", g, 1), t, &mut out);
        p.tick(t, &mut out);
    }
    let got = gangs(&out);
    assert_eq!(got.len(), 1, "one grant for the one job: {got:?}");
    let mut hosts = got[0].1.clone();
    hosts.sort();
    assert_eq!(
        hosts,
        ["h1", "h3"],
        "fewer than machine_count, idle hosts only"
    );
    assert_eq!(p.claims.len(), 2);

    // Below gang_min: nothing at all.
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    for h in ["h1", "h2"] {
        p.advertise(host(h, 1), t0, &mut out);
    }
    let g = gang(3, GangPolicyKind::Reconfigure, 3, Shape::Any);
    let t = t0 + Dur::from_secs(1);
    p.advertise(home_with("a", g, 1), t, &mut out);
    p.tick(t, &mut out);
    assert!(gangs(&out).is_empty(), "{out:?}");
    assert_eq!(p.claims.len(), 0);
}

#[test]
fn gangs_left_counts_whole_jobs() {
    // LL-k: k members a job, k claims a gang.
    assert_eq!(gangs_left(6, 0, 3, 3), 2);
    assert_eq!(gangs_left(6, 3, 3, 3), 1);
    assert_eq!(gangs_left(2, 0, 3, 3), 0, "no whole job");
    // Reconfiguration: a gang of 2 of 3 granted leaves no job behind.
    assert_eq!(gangs_left(3, 2, 3, 1), 0);
    assert_eq!(gangs_left(6, 2, 3, 2), 1);
}

proptest! {
    /// However many gangs were granted (each between `fewest` and k
    /// nodes), the jobs still waiting are never overcounted.
    #[test]
    fn gangs_left_never_counts_a_granted_job(
        k in 1u32..8,
        fewest in 1u32..8,
        jobs in 0u32..6,
        sizes in proptest::collection::vec(0u32..8, 0..6),
    ) {
        let fewest = fewest.min(k);
        let granted: Vec<u32> = sizes
            .iter()
            .take(jobs as usize)
            .map(|s| fewest + s % (k - fewest + 1))
            .collect();
        let pending: u32 = granted.iter().sum();
        let left = gangs_left(jobs * k, pending, k, fewest);
        prop_assert!(left <= jobs - granted.len() as u32);
        if granted.is_empty() {
            prop_assert_eq!(left, jobs);
        }
    }
}
