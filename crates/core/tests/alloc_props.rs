//! Property tests shared by all three allocators (spec R-SCH-3, R13, R14;
//! Mutka 1988 L645–663) and the χ² test of uniform tie-breaking.

use gleaner_core::alloc::{
    Allocator, AllocatorConfig, AllocatorKind, Decision, PoolView, RandomAlloc, RoundRobin,
    StationDemand, UpDown, UpDownConfig,
};
use gleaner_core::rng::seeded;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

/// A random pool: per station (AV?, waiting, SI); nodes are one per station;
/// an AV station's node is either free, held by another station, or busy
/// with the owner's own background work. NA stations contribute no node.
#[derive(Debug, Clone)]
struct Pool {
    stations: Vec<StationDemand>,
    free: Vec<u32>,
    held: Vec<(u32, u32)>,
    si: Vec<f64>,
}

fn pool() -> impl Strategy<Value = Pool> {
    (1usize..30).prop_flat_map(|n| {
        (
            proptest::collection::vec((any::<bool>(), 0u32..4, -6i32..7, 0u8..3), n),
            proptest::collection::vec(0usize..n, n),
        )
            .prop_map(move |(spec, holder_pick)| {
                let mut stations: Vec<StationDemand> = (0..n as u32)
                    .map(|s| StationDemand {
                        station: s,
                        waiting: spec[s as usize].1,
                        remote: 0,
                    })
                    .collect();
                let mut free = vec![];
                let mut held = vec![];
                for s in 0..n {
                    let (av, _, _, use_) = spec[s];
                    if !av {
                        continue; // NA: its node is never offered
                    }
                    match use_ {
                        0 => free.push(s as u32),
                        1 => {
                            let h = holder_pick[s];
                            if h != s {
                                held.push((s as u32, h as u32));
                                stations[h].remote += 1;
                            }
                        }
                        _ => {} // owner's own background job runs there
                    }
                }
                let si = spec.iter().map(|x| x.2 as f64).collect();
                Pool {
                    stations,
                    free,
                    held,
                    si,
                }
            })
    })
}

fn check_common(p: &Pool, d: &[Decision]) -> Result<(), TestCaseError> {
    let free: HashSet<u32> = p.free.iter().copied().collect();
    let held: HashMap<u32, u32> = p.held.iter().copied().collect();
    let waiting: HashMap<u32, u32> = p.stations.iter().map(|s| (s.station, s.waiting)).collect();
    let mut used = HashSet::new();
    let mut per_station: HashMap<u32, u32> = HashMap::new();
    for dec in d {
        prop_assert!(used.insert(dec.node()), "node {} decided twice", dec.node());
        let to = dec.to();
        prop_assert!(
            waiting.get(&to).copied().unwrap_or(0) > 0,
            "node went to station {to} which wants none"
        );
        *per_station.entry(to).or_default() += 1;
        match *dec {
            // Free nodes only come from AV stations (the pool builder offers
            // nothing else), so a grant outside `free` would be an NA node.
            Decision::Grant { node, .. } => prop_assert!(free.contains(&node)),
            Decision::Preempt { node, from, to } => {
                prop_assert_eq!(held.get(&node).copied(), Some(from));
                prop_assert_ne!(from, to);
            }
        }
    }
    for (s, n) in per_station {
        prop_assert!(n <= waiting[&s], "station {s} got {n} > waiting");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn updown_respects_the_rules(p in pool(), seed in any::<u64>(), multi in any::<bool>()) {
        let mut ud = UpDown::new(UpDownConfig {
            per_pass: if multi { gleaner_core::alloc::PerPass::UntilSatisfied } else { Default::default() },
            ..UpDownConfig::default()
        });
        for (s, v) in p.si.iter().enumerate() {
            ud.set_index(s as u32, *v);
        }
        let view = PoolView { stations: &p.stations, free_nodes: &p.free, held: &p.held };
        let d = ud.allocate(&view, &mut seeded(seed));
        check_common(&p, &d)?;
        let holders: HashSet<u32> = p.held.iter().map(|&(_, h)| h).collect();
        let granted: HashSet<u32> = d.iter().filter_map(|d| match d {
            Decision::Grant { node, .. } => Some(*node), _ => None }).collect();
        for dec in &d {
            if let Decision::Preempt { node, from, to } = *dec {
                // Strictly smaller index only.
                prop_assert!(ud.index(to) < ud.index(from));
                // A station holding a node never preempts in the same round.
                prop_assert!(!holders.contains(&to));
                // A node granted in phase 1 is not preempted in the same round.
                prop_assert!(!granted.contains(&node));
                // Preemption only happens once free nodes are used up.
                prop_assert_eq!(granted.len(), p.free.len());
            }
        }
        // Without preemption potential, every free node is used while stations wait.
        let waiting_stations = p.stations.iter().filter(|s| s.waiting > 0).count();
        prop_assert_eq!(granted.len(), p.free.len().min(if multi {
            p.stations.iter().map(|s| s.waiting as usize).sum()
        } else { waiting_stations }));
    }

    #[test]
    fn random_and_round_robin_never_preempt(p in pool(), seed in any::<u64>()) {
        for kind in [AllocatorKind::Random, AllocatorKind::RoundRobin] {
            let mut a = AllocatorConfig::default_for(kind).build();
            let view = PoolView { stations: &p.stations, free_nodes: &p.free, held: &p.held };
            let d = a.allocate(&view, &mut seeded(seed));
            check_common(&p, &d)?;
            let only_grants = d.iter().all(|d| matches!(d, Decision::Grant { .. }));
            prop_assert!(only_grants);
        }
    }

    #[test]
    fn index_never_crosses_zero_while_idle(start in -20i32..20, steps in 1usize..40) {
        let mut ud = UpDown::new(UpDownConfig::default());
        ud.set_index(0, start as f64);
        let st = [StationDemand { station: 0, waiting: 0, remote: 0 }];
        for _ in 0..steps {
            let before = ud.index(0);
            ud.on_interval(&PoolView { stations: &st, free_nodes: &[], held: &[] });
            let after = ud.index(0);
            prop_assert!(before.signum() * after >= 0.0, "{before} -> {after}");
            prop_assert!(after.abs() <= before.abs());
        }
    }
}

/// Pearson χ² statistic of `counts` against a uniform expectation.
fn chi_square(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let e = total as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

// χ² critical value for 4 degrees of freedom at p = 0.001.
const CHI2_4DF_P001: f64 = 18.467;

fn winner_counts(mut alloc: impl FnMut(u64) -> u32) -> Vec<u64> {
    let mut counts = vec![0u64; 5];
    for seed in 0..20_000u64 {
        counts[alloc(seed) as usize] += 1;
    }
    counts
}

#[test]
fn updown_breaks_ties_uniformly() {
    let st: Vec<StationDemand> = (0..5)
        .map(|s| StationDemand {
            station: s,
            waiting: 1,
            remote: 0,
        })
        .collect();
    let mut ud = UpDown::new(UpDownConfig::default());
    let counts = winner_counts(|seed| {
        let view = PoolView {
            stations: &st,
            free_nodes: &[99],
            held: &[],
        };
        ud.allocate(&view, &mut seeded(seed))[0].to()
    });
    let chi = chi_square(&counts);
    assert!(chi < CHI2_4DF_P001, "χ² = {chi:.2} for counts {counts:?}");

    // Ties among preemption victims are uniform too.
    let st: Vec<StationDemand> = std::iter::once(StationDemand {
        station: 9,
        waiting: 1,
        remote: 0,
    })
    .chain((0..5).map(|s| StationDemand {
        station: s,
        waiting: 0,
        remote: 1,
    }))
    .collect();
    let held: Vec<(u32, u32)> = (0..5).map(|s| (100 + s, s)).collect();
    let mut ud = UpDown::new(UpDownConfig::default());
    ud.set_index(9, -1.0);
    let counts = winner_counts(|seed| {
        let view = PoolView {
            stations: &st,
            free_nodes: &[],
            held: &held,
        };
        match ud.allocate(&view, &mut seeded(seed))[0] {
            Decision::Preempt { from, .. } => from,
            d => panic!("unexpected {d:?}"),
        }
    });
    let chi = chi_square(&counts);
    assert!(chi < CHI2_4DF_P001, "χ² = {chi:.2} for counts {counts:?}");
}

#[test]
fn random_picks_contenders_uniformly() {
    let st: Vec<StationDemand> = (0..5)
        .map(|s| StationDemand {
            station: s,
            waiting: 1 + s,
            remote: 0,
        })
        .collect();
    let mut r = RandomAlloc::default();
    let counts = winner_counts(|seed| {
        let view = PoolView {
            stations: &st,
            free_nodes: &[7],
            held: &[],
        };
        r.allocate(&view, &mut seeded(seed))[0].to()
    });
    let chi = chi_square(&counts);
    assert!(chi < CHI2_4DF_P001, "χ² = {chi:.2} for counts {counts:?}");
}

#[test]
fn round_robin_cursor_persists_across_passes() {
    let st: Vec<StationDemand> = (0..4)
        .map(|s| StationDemand {
            station: s,
            waiting: if s == 2 { 0 } else { 3 },
            remote: 0,
        })
        .collect();
    let mut rr = RoundRobin::default();
    let mut order = vec![];
    for seed in 0..6 {
        let view = PoolView {
            stations: &st,
            free_nodes: &[1],
            held: &[],
        };
        order.push(rr.allocate(&view, &mut seeded(seed))[0].to());
    }
    // Station 2 wants nothing when its turn comes and is skipped.
    assert_eq!(order, vec![0, 1, 3, 0, 1, 3]);
    // Two free nodes in one pass go to consecutive wanting stations, then the
    // cursor continues after the last one asked.
    let view = PoolView {
        stations: &st,
        free_nodes: &[1, 2],
        held: &[],
    };
    let d: Vec<u32> = rr
        .allocate(&view, &mut seeded(9))
        .iter()
        .map(|d| d.to())
        .collect();
    assert_eq!(d, vec![0, 1]);
    assert_eq!(rr.cursor(), 2);
}
