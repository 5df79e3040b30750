//! DMW scores and the UMol arbiter (spec dmw-neeracher.md §3.2, §3.4, §3.8,
//! requirements R9–R17, benchmark B11; Neeracher 1998 L1187–1211,
//! L1285–1331, L2122).

use gleaner_core::dmw::{
    Backoff, HostId, HostLoad, HostSpec, LoadIndex, ProgressGuarantee, SchedId, Score, Umpire,
    UmpireConfig, sigma_lambda_hetero, sigma_lambda_umol, sigma_mu, sigma_umol, uncoordinated_pick,
};
use gleaner_core::rng::{Rng, seeded};
use gleaner_core::time::{Dur, Time};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn sigma_mu_breakpoints_as_printed() {
    for (mu, want) in [
        (0.0, 0.0),
        (4999.0, 99.98),
        (5000.0, 100.5),
        (100_000.0, 110.0),
        (200_000.0, 120.0),
        (200_001.0, 120.0),
    ] {
        assert!(close(sigma_mu(mu), want), "σ_μ({mu}) = {}", sigma_mu(mu));
    }
    assert_eq!(sigma_mu(-5.0), 0.0);
}

#[test]
fn sigma_lambda_breakpoints_as_printed_with_quirks() {
    for (l, want) in [
        (0.0, 121.0),
        (0.5, 103.5),
        (0.6, 100.0),
        (1.0, 92.0),
        (4.9, 14.0),
        (4.91, 0.0),
    ] {
        assert!(
            close(sigma_lambda_umol(l), want),
            "σ_λ({l}) = {}",
            sigma_lambda_umol(l)
        );
    }
    assert!(close(sigma_umol(200_001.0, 0.0), 241.0));
}

#[test]
fn hetero_index_vectors_from_table_7_4() {
    // zinal β=2.7 n=4
    for l in [0.0, 1.0, 2.0, 3.0] {
        assert!(close(sigma_lambda_hetero(2.7, 4, l), 2.7));
    }
    assert!(close(sigma_lambda_hetero(2.7, 4, 4.0), 2.16));
    // arkadin β=2.7 n=1
    assert!(close(sigma_lambda_hetero(2.7, 1, 0.0), 2.7));
    assert!(close(sigma_lambda_hetero(2.7, 1, 1.0), 1.35));
    // maipo β=3.2 n=2
    assert!(close(sigma_lambda_hetero(3.2, 2, 0.0), 3.2));
    assert!(close(sigma_lambda_hetero(3.2, 2, 1.0), 3.2));
    assert!((sigma_lambda_hetero(3.2, 2, 2.0) - 2.133).abs() < 1e-3);
}

#[test]
fn score_combination_and_thresholds() {
    let het = Score::default();
    assert_eq!(het.index, LoadIndex::Heterogeneous);
    assert_eq!(het.mu_thresh_kb, 20_000.0);
    let fast = HostSpec::new(2.7, 1);
    let big = HostLoad {
        load: 0.0,
        free_mem_kb: 300_000.0,
    };
    // Plenty of memory: σ is the β index itself.
    assert!(close(het.sigma(&fast, &big), 2.7));
    // 100 MB free scales it by σ_μ/120 = 110/120.
    let mid = HostLoad {
        load: 0.0,
        free_mem_kb: 100_000.0,
    };
    assert!(close(het.sigma(&fast, &mid), 2.7 * 110.0 / 120.0));
    assert!(het.acceptable(&fast, &mid));
    // Below the recommended 20000 KB the host is not acceptable.
    let small = HostLoad {
        load: 0.0,
        free_mem_kb: 19_000.0,
    };
    assert!(!het.acceptable(&fast, &small));
    // The reference host (β=1, n=1) is acceptable unloaded, not at λ = 0.5.
    let reference = HostSpec::new(1.0, 1);
    assert!(het.acceptable(&reference, &mid));
    assert!(!het.acceptable(
        &reference,
        &HostLoad {
            load: 0.5,
            free_mem_kb: 100_000.0
        }
    ));

    // The printed UMol score stays available.
    let umol = Score::umol_1998();
    let plain = HostSpec::new(1.0, 1);
    assert!(close(umol.sigma(&plain, &mid), 110.0 + 121.0));
    assert!(umol.acceptable(
        &plain,
        &HostLoad {
            load: 0.59,
            free_mem_kb: 5001.0
        }
    ));
    assert!(!umol.acceptable(
        &plain,
        &HostLoad {
            load: 0.6,
            free_mem_kb: 5001.0
        }
    ));
    assert!(!umol.acceptable(
        &plain,
        &HostLoad {
            load: 0.0,
            free_mem_kb: 5000.0
        }
    ));
    // λ_w = λ / w_h: a weight-2 host at λ = 1 has λ_w = 0.5.
    let heavy = HostSpec::new(1.0, 1).with_weight(2.0);
    assert!(umol.acceptable(
        &heavy,
        &HostLoad {
            load: 1.0,
            free_mem_kb: 6000.0
        }
    ));
}

#[test]
fn backoff_sequence() {
    let b = Backoff::default();
    let mins: Vec<u64> = (1..=7).map(|k| b.delay(k).0 / 60_000_000).collect();
    assert_eq!(mins, vec![5, 10, 20, 40, 60, 60, 60]);
    assert_eq!(b.delay(0), Dur::ZERO);

    let mut u = Umpire::new(UmpireConfig::default());
    let h = u.add_host(HostSpec::new(1.0, 1));
    u.set_load(h, idle()).unwrap();
    u.set_useful(1, [h]).unwrap();
    let t0 = Time::from_secs(1000);
    assert_eq!(u.report_unreachable(t0, h).unwrap(), Dur::from_mins(5));
    assert_eq!(
        u.request(t0, 1),
        None,
        "dysfunctional host is never granted"
    );
    assert_eq!(u.request(t0 + Dur::from_mins(5), 1), Some(h));
    u.release(t0 + Dur::from_mins(6), 1, h).unwrap();
    assert_eq!(u.report_unreachable(t0, h).unwrap(), Dur::from_mins(10));
    u.report_reachable(h).unwrap();
    assert_eq!(u.report_unreachable(t0, h).unwrap(), Dur::from_mins(5));
}

fn idle() -> HostLoad {
    HostLoad {
        load: 0.0,
        free_mem_kb: 500_000.0,
    }
}

fn overloaded() -> HostLoad {
    HostLoad {
        load: 20.0,
        free_mem_kb: 1_000.0,
    }
}

/// `hosts` identical hosts (β=1, 1 CPU, given limit), all idle, all useful
/// to schedulers 0..scheds.
fn pool(cfg: UmpireConfig, hosts: u32, limit: u32, scheds: u32) -> Umpire {
    let mut u = Umpire::new(cfg);
    for _ in 0..hosts {
        let h = u.add_host(HostSpec::new(1.0, 1).with_job_limit(limit));
        u.set_load(h, idle()).unwrap();
    }
    for s in 0..scheds {
        u.set_useful(s, 0..hosts).unwrap();
    }
    u
}

#[test]
fn apportions_best_sigma_to_highest_priority() {
    let mut u = Umpire::new(UmpireConfig::default());
    let slow = u.add_host(HostSpec::new(1.0, 1));
    let fast = u.add_host(HostSpec::new(3.2, 2));
    for h in [slow, fast] {
        u.set_load(h, idle()).unwrap();
    }
    u.set_useful(7, [slow, fast]).unwrap();
    u.set_useful(3, [slow, fast]).unwrap();
    let t = Time::from_secs(10);
    // Equal (n, t): the lower id (3) has priority and gets the faster host.
    let made = u.apportion(t);
    assert_eq!(made, vec![(3, fast), (7, slow)]);
    assert_eq!(u.request(t, 3), Some(fast));
    assert_eq!(u.request(t, 7), Some(slow));
    assert_eq!(u.scheduler(3).unwrap().running, 1);
    assert_eq!(u.host(fast).unwrap().jobs, 1);
}

#[test]
fn apportionment_expires_after_timeout_and_when_dropped_from_useful() {
    let mut u = pool(UmpireConfig::default(), 2, 1, 2);
    let t = Time::from_secs(0);
    let made = u.apportion(t);
    assert_eq!(made, vec![(0, 0), (1, 1)]);
    // Scheduler 1 narrows H_s: its apportioned host is freed (L1190).
    u.set_useful(1, [0]).unwrap();
    assert_eq!(u.scheduler(1).unwrap().apportioned, None);
    // Scheduler 0 never asks: after 90 s its host goes back.
    u.apportion(t + Dur::from_secs(89));
    assert!(u.scheduler(0).unwrap().apportioned.is_some());
    u.set_useful(1, [0, 1]).unwrap();
    u.apportion(t + Dur::from_secs(90));
    let a0 = u.scheduler(0).unwrap().apportioned.unwrap();
    assert_eq!(a0, (0, t + Dur::from_secs(90)), "re-apportioned afresh");
}

#[test]
fn embargo_blocks_second_grant_and_lifts_on_release() {
    // One host with room for 3 jobs, 90 s embargo.
    let mut u = pool(UmpireConfig::default(), 1, 3, 1);
    let t0 = Time::from_secs(100);
    assert_eq!(u.request(t0, 0), Some(0));
    // Within the window the host is embargoed (scheduler 0 runs a job, so the
    // progress guarantee does not apply).
    assert_eq!(u.request(t0 + Dur::from_secs(10), 0), None);
    assert_eq!(u.request(t0 + Dur::from_secs(89), 0), None);
    // After 90 s it is free again.
    assert_eq!(u.request(t0 + Dur::from_secs(90), 0), Some(0));
    // Embargoed again; a release on the host lifts it at once.
    let t1 = t0 + Dur::from_secs(95);
    assert_eq!(u.request(t1, 0), None);
    u.release(t1, 0, 0).unwrap();
    assert_eq!(u.request(t1, 0), Some(0));
    assert_eq!(u.host(0).unwrap().jobs, 2);
}

#[test]
fn embargo_length_is_configurable() {
    let cfg = UmpireConfig {
        embargo: Dur::from_secs(300),
        ..UmpireConfig::default()
    };
    let mut u = pool(cfg, 1, 3, 1);
    assert_eq!(u.request(Time::ZERO, 0), Some(0));
    assert_eq!(u.request(Time::from_secs(200), 0), None);
    assert_eq!(u.request(Time::from_secs(300), 0), Some(0));
}

#[test]
fn progress_guarantee_ignores_thresholds_but_never_job_limits() {
    let mut u = Umpire::new(UmpireConfig::default());
    let a = u.add_host(HostSpec::new(1.0, 1));
    let b = u.add_host(HostSpec::new(2.0, 1));
    for h in [a, b] {
        u.set_load(h, overloaded()).unwrap();
    }
    u.set_useful(0, [a, b]).unwrap();
    u.set_useful(1, [a, b]).unwrap();
    let t = Time::from_secs(5);
    // Nothing meets the thresholds, but scheduler 0 has no job: best host.
    assert_eq!(u.request(t, 0), Some(b));
    // Scheduler 0 now runs one job: no more under overload.
    assert_eq!(u.request(t, 0), None);
    // Scheduler 1 has none: it gets the remaining host.
    assert_eq!(u.request(t, 1), Some(a));
    // A third scheduler with n_s = 0 finds every host at its limit: denied.
    u.set_useful(2, [a, b]).unwrap();
    assert_eq!(u.request(t, 2), None);
    for h in [a, b] {
        assert!(u.host(h).unwrap().jobs <= 1);
    }
    // Once a job ends, scheduler 2 gets that host even though it is still
    // overloaded.
    u.release(t, 1, a).unwrap();
    assert_eq!(u.request(t, 2), Some(a));
}

#[test]
fn progress_guarantee_embargo_rule_is_configurable() {
    // Host with limit 2, one job of scheduler 0 just granted (embargoed).
    for (rule, want) in [
        (ProgressGuarantee::IgnoreThresholdsAndEmbargo, Some(0)),
        (ProgressGuarantee::IgnoreThresholds, None),
        (ProgressGuarantee::Off, None),
    ] {
        let cfg = UmpireConfig {
            progress: rule,
            ..UmpireConfig::default()
        };
        let mut u = pool(cfg, 1, 2, 2);
        let t = Time::from_secs(1);
        assert_eq!(u.request(t, 0), Some(0));
        assert_eq!(u.request(t + Dur::from_secs(1), 1), want, "{rule:?}");
    }
    // With the guarantee off, an overloaded pool grants nothing.
    let cfg = UmpireConfig {
        progress: ProgressGuarantee::Off,
        ..UmpireConfig::default()
    };
    let mut u = pool(cfg, 1, 1, 1);
    u.set_load(0, overloaded()).unwrap();
    assert_eq!(u.request(Time::ZERO, 0), None);
}

#[test]
fn unknown_ids_are_errors_not_panics() {
    let mut u = pool(UmpireConfig::default(), 1, 1, 0);
    assert!(u.set_useful(0, [5]).is_err());
    assert!(u.scheduler(0).is_none(), "nothing changed on error");
    assert!(u.set_load(9, idle()).is_err());
    assert!(u.release(Time::ZERO, 0, 9).is_err());
    assert_eq!(u.request(Time::ZERO, 42), None);
    // Empty H_s: no eligible work, no grant.
    u.set_useful(1, []).unwrap();
    assert_eq!(u.request(Time::ZERO, 1), None);
}

#[test]
fn unmeasured_hosts_are_not_apportioned() {
    let mut u = Umpire::new(UmpireConfig::default());
    let h = u.add_host(HostSpec::new(1.0, 1));
    u.set_useful(0, [h]).unwrap();
    assert_eq!(u.request(Time::ZERO, 0), None);
    u.set_load(h, idle()).unwrap();
    assert_eq!(u.request(Time::ZERO, 0), Some(h));
}

#[test]
fn restored_jobs_count_against_limits() {
    let mut u = pool(UmpireConfig::default(), 1, 1, 2);
    u.restore_job(0, 0).unwrap();
    assert_eq!(u.scheduler(0).unwrap().running, 1);
    assert_eq!(u.request(Time::ZERO, 1), None, "host already at its limit");
    u.release(Time::ZERO, 0, 0).unwrap();
    // Scheduler 0 (n_s = 0, lower id) would win the host; its schedule is
    // finished, so it declares no more interest.
    u.set_useful(0, []).unwrap();
    assert_eq!(u.request(Time::ZERO, 1), Some(0));
}

/// Three schedulers with equal, unbounded demand on 4 single-slot hosts:
/// jobs end at random, every scheduler asks again in a random order. After
/// every round the concurrent job counts differ by at most one (R10, B6).
#[test]
fn fairness_three_schedulers_four_hosts() {
    let mut u = pool(UmpireConfig::default(), 4, 1, 3);
    let mut rng = seeded(1998);
    let mut held: Vec<(SchedId, HostId)> = Vec::new();
    let mut now = Time::ZERO;
    for round in 0..500 {
        now += Dur::from_secs(rng.random_range(1..200));
        if !held.is_empty() && round > 0 {
            let k = rng.random_range(0..held.len());
            let (s, h) = held.swap_remove(k);
            u.release(now, s, h).unwrap();
        }
        // Each scheduler keeps asking until denied, in a random order.
        let mut order: Vec<SchedId> = vec![0, 1, 2];
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        let mut progress = true;
        while progress {
            progress = false;
            for &s in &order {
                if let Some(h) = u.request(now, s) {
                    held.push((s, h));
                    progress = true;
                }
            }
        }
        let counts: Vec<u32> = (0..3).map(|s| u.scheduler(s).unwrap().running).collect();
        let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(hi - lo <= 1, "round {round}: unfair {counts:?}");
        assert_eq!(counts.iter().sum::<u32>(), 4, "all hosts used");
    }
}

/// The uncoordinated baseline sends every scheduler to the same host, the
/// umpire spreads them (host contention, L1131–1133, Fig. 7.15/7.16).
#[test]
fn uncoordinated_baseline_herds_umpire_spreads() {
    let mut u = Umpire::new(UmpireConfig::default());
    for (beta, cpus) in [(1.8, 1), (1.5, 1), (1.3, 1), (1.3, 1)] {
        let h = u.add_host(HostSpec::new(beta, cpus));
        u.set_load(h, idle()).unwrap();
    }
    let all: BTreeSet<HostId> = (0..4).collect();
    for s in 0..3 {
        u.set_useful(s, all.iter().copied()).unwrap();
    }
    let stale = u.snapshot(Time::ZERO);
    let picks: Vec<Option<HostId>> = (0..3)
        .map(|_| uncoordinated_pick(&stale, &all, &u.config().score, 0))
        .collect();
    assert_eq!(picks, vec![Some(0); 3], "herd effect on the fastest host");

    let granted: BTreeSet<HostId> = (0..3).filter_map(|s| u.request(Time::ZERO, s)).collect();
    assert_eq!(granted.len(), 3, "one host each");
    for h in u.hosts() {
        assert!(h.jobs <= h.spec.job_limit);
    }
}

#[test]
fn uncoordinated_pick_applies_thresholds_only_with_own_jobs() {
    let score = Score::default();
    let mut u = Umpire::new(UmpireConfig::default());
    let h = u.add_host(HostSpec::new(1.0, 1));
    u.set_load(h, overloaded()).unwrap();
    let snap = u.snapshot(Time::ZERO);
    let useful: BTreeSet<HostId> = [h].into();
    assert_eq!(uncoordinated_pick(&snap, &useful, &score, 0), Some(h));
    assert_eq!(uncoordinated_pick(&snap, &useful, &score, 1), None);
    assert_eq!(uncoordinated_pick(&snap, &BTreeSet::new(), &score, 0), None);
}

#[test]
fn config_round_trips_through_json() {
    let cfg = UmpireConfig::umol_1998();
    let json = serde_json::to_string(&cfg).unwrap();
    let back: UmpireConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, cfg);
    let partial: UmpireConfig = serde_json::from_str(r#"{"embargo": 300000000}"#).unwrap();
    assert_eq!(partial.embargo, Dur::from_secs(300));
    assert_eq!(partial.score, Score::default());
}

#[derive(Debug, Clone)]
enum Op {
    Request(SchedId),
    Release(usize),
    Load(HostId, f64, f64),
    Useful(SchedId, Vec<HostId>),
    Fail(HostId),
    Recover(HostId),
    Advance(u64),
}

fn op(hosts: u32, scheds: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..scheds).prop_map(Op::Request),
        3 => any::<usize>().prop_map(Op::Release),
        2 => (0..hosts, 0.0f64..8.0, 0.0f64..400_000.0).prop_map(|(h, l, m)| Op::Load(h, l, m)),
        1 => (0..scheds, proptest::collection::vec(0..hosts, 0..4)).prop_map(|(s, v)| Op::Useful(s, v)),
        1 => (0..hosts).prop_map(Op::Fail),
        1 => (0..hosts).prop_map(Op::Recover),
        2 => (0u64..200).prop_map(Op::Advance),
    ]
}

proptest! {
    /// Job limits are never exceeded and the books balance (R15, R16), for
    /// every configuration variant.
    #[test]
    fn job_limits_never_exceeded(
        limits in proptest::collection::vec(0u32..3, 1..6),
        umol in any::<bool>(),
        progress in 0u8..3,
        ops in proptest::collection::vec(op(6, 4), 0..200),
    ) {
        let cfg = UmpireConfig {
            score: if umol { Score::umol_1998() } else { Score::default() },
            progress: match progress {
                0 => ProgressGuarantee::Off,
                1 => ProgressGuarantee::IgnoreThresholds,
                _ => ProgressGuarantee::IgnoreThresholdsAndEmbargo,
            },
            ..UmpireConfig::default()
        };
        let mut u = Umpire::new(cfg);
        let nh = limits.len() as u32;
        for (i, &l) in limits.iter().enumerate() {
            let h = u.add_host(HostSpec::new(1.0 + i as f64 * 0.5, 2).with_job_limit(l));
            u.set_load(h, idle()).unwrap();
        }
        for s in 0..4 {
            u.set_useful(s, 0..nh).unwrap();
        }
        let mut now = Time::ZERO;
        let mut held: Vec<(SchedId, HostId)> = Vec::new();
        for o in ops {
            match o {
                Op::Request(s) => {
                    if let Some(h) = u.request(now, s) {
                        prop_assert!(u.scheduler(s).unwrap().useful.contains(&h));
                        held.push((s, h));
                    }
                }
                Op::Release(k) => {
                    if !held.is_empty() {
                        let (s, h) = held.swap_remove(k % held.len());
                        u.release(now, s, h).unwrap();
                    }
                }
                Op::Load(h, l, m) => {
                    let _ = u.set_load(h, HostLoad { load: l, free_mem_kb: m });
                }
                Op::Useful(s, v) => {
                    let v: Vec<HostId> = v.into_iter().filter(|&h| h < nh).collect();
                    u.set_useful(s, v).unwrap();
                }
                Op::Fail(h) => {
                    let _ = u.report_unreachable(now, h);
                }
                Op::Recover(h) => {
                    let _ = u.report_reachable(h);
                }
                Op::Advance(secs) => now += Dur::from_secs(secs),
            }
            for (i, h) in u.hosts().iter().enumerate() {
                prop_assert!(h.jobs <= h.spec.job_limit, "host {i} over its limit");
                let on_h = held.iter().filter(|&&(_, hh)| hh as usize == i).count();
                prop_assert_eq!(h.jobs as usize, on_h);
            }
            for s in 0..4 {
                let n = held.iter().filter(|&&(ss, _)| ss == s).count();
                prop_assert_eq!(u.scheduler(s).unwrap().running as usize, n);
            }
        }
    }
}
