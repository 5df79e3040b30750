//! B8: the placement throttle (Mutka 1988 L839, L817; spec mutka-thesis.md
//! B8), with `gleaner_core::placement_throttle`.
//!
//! A home station gets `H` idle hosts at once for its `Q` queued jobs. Each
//! placement costs the home about 2.5 s of CPU (5 s per MB of a 0.5 MB
//! checkpoint, L817) and sends 0.5 MB over a 10 Mbit/s Ethernet used at an
//! effective 3 Mbit/s (Ryu & Hollingsworth L189); concurrent placements share
//! the home's CPU and link (processor sharing). The owner at the home feels
//! the longest stretch during which placements saturate its CPU (an
//! interactive freeze); the pool pays in host-minutes left idle before each
//! placement. Throttle intervals: none, 10 s, 30 s and 2 min (L839).
//! The thesis states the effect only qualitatively.

use super::report::{Report, f};
use super::{ExperimentOpts, ExperimentReport};
use crate::SimError;
use crate::plot::{Series, line_chart};
use gleaner_core::placement_throttle::PlacementThrottle;
use gleaner_core::time::{Dur, Time};
use std::fmt::Write as _;

const CPU_PER_PLACEMENT: f64 = 2.5;
const LINK_PER_PLACEMENT: f64 = 0.5 * 8.0 / 3.0;

/// Processor-sharing drain of placements started at `starts` with `work`
/// seconds each: returns (longest saturated stretch, completion times).
fn drain(starts: &[f64], work: f64) -> (f64, Vec<f64>) {
    let mut left: Vec<(f64, f64)> = Vec::new(); // (remaining, start)
    let mut done = Vec::new();
    let (mut t, mut i) = (0.0f64, 0usize);
    let (mut busy_from, mut longest) = (None::<f64>, 0.0f64);
    loop {
        let next_arrival = starts.get(i).copied();
        if left.is_empty() {
            if let Some(b) = busy_from.take() {
                longest = longest.max(t - b);
            }
            match next_arrival {
                Some(a) => {
                    t = a;
                    left.push((work, a));
                    busy_from = Some(a);
                    i += 1;
                    continue;
                }
                None => break,
            }
        }
        let n = left.len() as f64;
        let min_rem = left.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
        let finish = t + min_rem * n;
        match next_arrival {
            Some(a) if a < finish => {
                let dt = a - t;
                left.iter_mut().for_each(|x| x.0 -= dt / n);
                t = a;
                left.push((work, a));
                i += 1;
            }
            _ => {
                left.iter_mut().for_each(|x| x.0 -= min_rem);
                t = finish;
                left.retain(|x| {
                    if x.0 <= 1e-9 {
                        done.push(t);
                        false
                    } else {
                        true
                    }
                });
            }
        }
    }
    (longest, done)
}

pub fn run(opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    let mut rep = Report::new(opts);
    let (hosts, jobs) = if opts.quick {
        (10usize, 10usize)
    } else {
        (20, 30)
    };
    let job_hours = 5.0;
    let intervals = [0u64, 10, 30, 120];
    let mut csv = String::from(
        "interval_s,longest_cpu_freeze_s,longest_link_busy_s,last_start_min,idle_host_min,idle_share_pct\n",
    );
    let md = &mut rep.md;
    let _ = writeln!(
        md,
        "# throttle: one placement every two minutes (Mutka 1988 L839, B8)\n\n\
         {hosts} idle hosts granted at once to a home with {jobs} queued jobs of about {job_hours} h; \
         2.5 s of home CPU (L817) and 1.33 s of a 3 Mbit/s link per placement; concurrent \
         placements share both. Deterministic (no seeds).\n\n\
         | throttle | longest home CPU freeze s | longest link saturation s | last host placed after min | host-min idle before placement | share of the jobs' host time % |\n|---|---|---|---|---|---|"
    );
    let mut freeze = Vec::new();
    let mut idle_share = Vec::new();
    for iv in intervals {
        let mut th = PlacementThrottle::new(Dur::from_secs(iv));
        let mut starts = Vec::new();
        let mut now = Time::ZERO;
        for _ in 0..hosts.min(jobs) {
            if let Err(at) = th.try_place(now) {
                now = at;
                let _ = th.try_place(now);
            }
            starts.push(now.as_secs_f64());
        }
        let (cpu_freeze, _) = drain(&starts, CPU_PER_PLACEMENT);
        let (link, done) = drain(&starts, LINK_PER_PLACEMENT);
        let idle: f64 = done.iter().map(|d| d / 60.0).sum();
        let share = 100.0 * idle / (hosts.min(jobs) as f64 * job_hours * 60.0);
        let last = starts.last().copied().unwrap_or(0.0) / 60.0;
        rep.events += starts.len() as u64;
        let _ = writeln!(
            csv,
            "{iv},{cpu_freeze:.2},{link:.2},{last:.2},{idle:.2},{share:.3}"
        );
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            if iv == 0 {
                "none".to_string()
            } else {
                format!("{iv} s")
            },
            f(cpu_freeze, 1),
            f(link, 1),
            f(last, 1),
            f(idle, 0),
            f(share, 2)
        );
        freeze.push((iv as f64, cpu_freeze));
        idle_share.push((iv as f64, share));
    }
    let _ = writeln!(
        md,
        "\nPaper (L839, text only): placing or checkpointing several jobs at once badly degrades \
         the owner's station and the network; one placement every two minutes avoids it."
    );
    rep.write("throttle.csv", &csv)?;
    let p = rep.path("throttle.svg");
    line_chart(
        &p,
        "Placement throttle: owner freeze vs idle host time",
        "throttle interval (s)",
        "seconds (freeze) / % (idle share)",
        &[
            Series::new("longest home CPU freeze (s)", freeze.clone()),
            Series::new("host time idle before placement (%)", idle_share.clone()),
        ],
    )?;
    let _ = writeln!(
        rep.md,
        "\nNo `--strict` checks: the thesis states the effect only in words (L839), and this \
         table is deterministic arithmetic from its two numbers (2.5 s of CPU per placement, \
         L817; one placement per 2 minutes, L839), so `--seed` changes nothing. That the \
         unthrottled placements freeze the home for tens of seconds and the 2-minute throttle \
         for one placement only, at a few per cent of the jobs' host time, is a unit test \
         (`throttle::tests`)."
    );
    rep.finish("throttle")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unthrottled_placements_freeze_the_home_and_the_throttle_does_not() {
        let starts: Vec<f64> = vec![0.0; 20];
        let (freeze, _) = drain(&starts, CPU_PER_PLACEMENT);
        assert!((freeze - 50.0).abs() < 1e-6, "{freeze}");
        let spaced: Vec<f64> = (0..20).map(|i| 120.0 * f64::from(i)).collect();
        let (freeze, done) = drain(&spaced, CPU_PER_PLACEMENT);
        assert!((freeze - CPU_PER_PLACEMENT).abs() < 1e-9);
        assert_eq!(done.len(), 20);
    }
}
