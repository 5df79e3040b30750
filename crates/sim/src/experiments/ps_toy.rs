//! B5: the processor-sharing counter-example (Mutka 1988 §4.2,
//! seeds/000_14c1149197e96532.txt L637; spec mutka-thesis.md §2.5, B5).
//!
//! Two workstations, each AV half the time, and one remote processor. User
//! I has two permanent background jobs, user II one; each runs a job at
//! home while its station is AV. The thesis schedules the remote processor
//! by processor sharing and counts a shared half-processor as half
//! waiting: RCWR_I = 3 and RCWR_II = 1, so II waits three times as much per
//! cycle received (L637). We compute that accounting exactly from the
//! four equally likely (AV, NA) combinations, then run the same pool in the
//! simulator with Up-Down, Random and Round-Robin: "Up-Down should narrow
//! the gap" (no number in the source).
//!
//! Availability: station I alternates 1 h AV / 1 h NA, station II 2 h AV /
//! 2 h NA, so each combination holds a quarter of the time; the remote
//! processor is always AV and has no jobs. 60 days (`--quick`: 10).

use super::report::{Report, f};
use super::{ExperimentOpts, ExperimentReport, variant};
use crate::SimError;
use crate::availability::{Interval, Source, State, Trace};
use crate::papers::T;
use crate::workload::{Demand, StationWorkload};
use crate::workstations::{Class, PoolConfig, simulate};
use gleaner_core::alloc::{AllocatorConfig, AllocatorKind};
use gleaner_core::time::{Dur, Time};
use std::fmt::Write as _;
use std::sync::Arc;

fn alternating(period: Dur, horizon: Time) -> Vec<Interval> {
    let mut v = Vec::new();
    let mut t = Time::ZERO;
    let mut s = State::Av;
    while t < horizon {
        v.push(Interval {
            start: t,
            end: t + period,
            state: s,
        });
        t += period;
        s = s.other();
    }
    v
}

/// The thesis's processor-sharing accounting over the four combinations
/// (I AV?, II AV?): a user wants the remote node when it has a job not
/// running at home; wanting users share it equally; a share s < 1 counts
/// s as remote execution and 1 − s as waiting. Returns (RCWR_I, RCWR_II).
pub fn processor_sharing() -> (f64, f64) {
    let (mut e, mut w) = ([0.0f64; 2], [0.0f64; 2]);
    for i_av in [true, false] {
        for ii_av in [true, false] {
            // Remote demand: I has 2 jobs (1 runs at home when AV), II has 1.
            let want = [if i_av { 1 } else { 2 }, if ii_av { 0 } else { 1 }];
            let wanting = want.iter().filter(|x| **x > 0).count() as f64;
            for u in 0..2 {
                if want[u] > 0 {
                    let share = 1.0 / wanting;
                    e[u] += 0.25 * share;
                    w[u] += 0.25 * (1.0 - share);
                }
            }
        }
    }
    (e[0] / w[0], e[1] / w[1])
}

pub fn run(opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    let mut rep = Report::new(opts);
    let days = if opts.quick { 10 } else { 60 };
    let horizon = Time::from_secs(days * 86_400);
    let trace = Trace {
        names: vec!["I".into(), "II".into(), "remote".into()],
        stations: vec![
            alternating(Dur::from_hours(1), horizon),
            alternating(Dur::from_hours(2), horizon),
            vec![Interval {
                start: Time::ZERO,
                end: horizon,
                state: State::Av,
            }],
        ],
    };
    let (ps_i, ps_ii) = processor_sharing();
    let mut md = format!(
        "# ps_toy: the processor-sharing counter-example (Mutka 1988 L637, B5)\n\n\
         Two stations AV half the time (I: 1 h on/off, II: 2 h on/off), one remote processor; \
         user I has 2 permanent jobs, user II 1; {days} days × {} seeds from {}. RCWR = remote \
         execution time / time wanting a node and holding none (higher is better).\n\n\
         | scheduling | RCWR_I | RCWR_II | I/II |\n|---|---|---|---|\n\
         | processor sharing, thesis accounting (paper: 3 and 1) | {} | {} | {} |\n",
        opts.seeds,
        opts.seed,
        f(ps_i, 2),
        f(ps_ii, 2),
        f(ps_i / ps_ii, 2)
    );
    let mut csv = String::from("algorithm,seed,rcwr_i,rcwr_ii\n");
    let mut ratio = Vec::new();
    let random_as_updown = variant("ps_toy", opts)? == Some("random-as-updown");
    for label in [
        AllocatorKind::UpDown,
        AllocatorKind::Random,
        AllocatorKind::RoundRobin,
    ] {
        // Variant: the Up-Down arm allocates at random.
        let kind = if label == AllocatorKind::UpDown && random_as_updown {
            AllocatorKind::Random
        } else {
            label
        };
        let (mut a, mut b) = (0.0, 0.0);
        for s in 0..opts.seeds {
            let seed = opts.seed + u64::from(s);
            let cfg = PoolConfig {
                workloads: vec![
                    StationWorkload::Permanent {
                        count: 2,
                        demand: Demand::Exp(Dur::from_hours(5)),
                    },
                    StationWorkload::Permanent {
                        count: 1,
                        demand: Demand::Exp(Dur::from_hours(5)),
                    },
                    StationWorkload::Idle,
                ],
                classes: vec![Class::Heavy, Class::Light, Class::Other],
                allocator: AllocatorConfig::default_for(kind),
                sched_interval: Dur::from_mins(10),
                transfer_cost: Dur::from_mins(1),
                horizon,
                availability: Source::Trace(Arc::new(trace.clone())),
                coordinator: Default::default(),
                guest_eviction: None,
            };
            let r = simulate(&cfg, seed)?;
            rep.events += r.events;
            let (x, y) = (
                r.accounts[0].rcwr().unwrap_or(f64::NAN),
                r.accounts[1].rcwr().unwrap_or(f64::NAN),
            );
            let _ = writeln!(csv, "{label:?},{seed},{x:.4},{y:.4}");
            a += x;
            b += y;
        }
        let n = f64::from(opts.seeds);
        let (a, b) = (a / n, b / n);
        let _ = writeln!(
            md,
            "| {label:?} (simulated) | {} | {} | {} |",
            f(a, 2),
            f(b, 2),
            f(a / b, 2)
        );
        ratio.push(a / b);
    }
    rep.md = md;
    rep.md.push_str(
        "\nThe processor-sharing row is arithmetic (the thesis's own accounting, a unit test: \
         `ps_toy::tests`), not a result.\n",
    );
    rep.write("ps_toy.csv", &csv)?;
    rep.claim(
        "taking past history into account treats the light user fairer than a history-free allocator",
        format!("{T} L637, L639"),
        "\"processor sharing causes User II to wait 3 times more for each cycle allocated than User I\"; \"Algorithms that do not consider past behavior do not protect the high quality of service for light users\"",
        format!(
            "RCWR_I / RCWR_II: Up-Down {}, Random {}, Round-Robin {}",
            f(ratio[0], 2),
            f(ratio[1], 2),
            f(ratio[2], 2)
        ),
        "Up-Down's ratio below 3 and below Random's and Round-Robin's",
        ratio[0] < 3.0 && ratio[0] < ratio[1] && ratio[0] < ratio[2],
    );
    rep.claims_table();
    rep.finish("ps_toy")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thesis's accounting of the counter-example (T:L637).
    #[test]
    fn processor_sharing_gives_rcwr_3_and_1() {
        let (i, ii) = processor_sharing();
        assert!(
            (i - 3.0).abs() < 1e-9 && (ii - 1.0).abs() < 1e-9,
            "{i} {ii}"
        );
    }
}
