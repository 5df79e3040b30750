//! B2 and B9: the owner-activity detector's conservatism and the vacate
//! policies (Mutka 1988 L351–361, L583, L841; spec mutka-thesis.md B2, B9),
//! both driven by one raw owner-activity model and run through the core's
//! `detector` and `eviction` ladder.
//!
//! **Raw activity** (ours; the thesis measured only the detector's output):
//! each owner alternates busy bursts — two-stage hyperexponential, 60 % "a
//! few commands" (mean 1.5 min) and 40 % sustained use (mean 45 min) — and
//! quiet gaps — 45 % thinking pauses (mean 2 min), 35 % away from the desk
//! (mean 30 min), 20 % evenings and meetings (mean 5 h), after the thesis's
//! reading of its AV components (L481). While busy the owner uses 10 % of
//! the CPU; the load signal is a decaying average with a 37 s time constant,
//! so it falls below 0.25 % about 2.5 min after a burst (L353: 2–3 min).
//!
//! **B2**: the Mutka-1988 detector (0.25 %, 5-min idle wait, 60 s/30 s
//! sampling) against the same detector without the wait: every burst should
//! give NA ≥ ≈ 7 min, and the wait should cost about 4 points of
//! availability (L361).
//!
//! **B9**: one endless guest job hops between 20 such hosts (a move costs
//! 1 min, the next host is the one idle longest); on each host the core
//! ladder reacts to the owner's raw activity under Condor-1988 (suspend, move
//! after 5 min, L841), the design rule (checkpoint and move at once, L583)
//! and periodic checkpoint + immediate kill (30 min, L841). `--quick`:
//! 5 days instead of 30.
//!
//! Claims: removing "the seven minute interval for each busy period"
//! raises availability about 4 points (P:L239, T:L361) — the counterfactual
//! is NA only while the owner is busy, not merely the detector without its
//! wait (reported too); suspending avoids many migrations (T:L841). The raw
//! activity model is ours, so both are also reported across quiet-gap
//! scales. Variants: `no-detector-wait` (the wait removed in both arms),
//! `immediate-for-condor` (the Condor-1988 arm moves at once).

use super::profile::claims::mean_sd;
use super::report::{Report, f};
use super::{ExperimentOpts, ExperimentReport, variant};
use crate::SimError;
use crate::availability::exp_sample;
use gleaner_core::detector::{Detector, DetectorConfig, OwnerSample};
use gleaner_core::eviction::{
    Action, CheckpointThenKillConfig, Condor1988Config, EvictionLadder, EvictionPolicy,
    ImmediateEvictionConfig,
};
use gleaner_core::rng::{PolicyRng, Rng, substream};
use gleaner_core::time::{Dur, Time};
use std::fmt::Write as _;

const BUSY_CPU: f64 = 0.10;
const TAU: f64 = 37.0;
const HOSTS: u32 = 20;

fn h2(rng: &mut PolicyRng, parts: &[(f64, f64)]) -> f64 {
    let u: f64 = rng.random();
    let mut acc = 0.0;
    for (w, m) in parts {
        acc += w;
        if u < acc {
            return exp_sample(rng, *m);
        }
    }
    exp_sample(rng, parts[parts.len() - 1].1)
}

/// Busy bursts `[start, end)` of one owner, in seconds, up to `horizon`;
/// `gaps` scales every quiet gap (1 = the model above; 2 = half as many
/// bursts).
fn activity(seed: u64, host: u32, horizon: f64, gaps: f64) -> Vec<(f64, f64)> {
    let mut rng = substream(seed, 50_000 + u64::from(host));
    let quiet = [
        (0.45, 120.0 * gaps),
        (0.35, 1800.0 * gaps),
        (0.20, 18_000.0 * gaps),
    ];
    let mut t = h2(&mut rng, &quiet);
    let mut v = Vec::new();
    while t < horizon {
        let busy = h2(&mut rng, &[(0.6, 90.0), (0.4, 2700.0)]).max(1.0);
        v.push((t, (t + busy).min(horizon)));
        t += busy + h2(&mut rng, &quiet).max(1.0);
    }
    v
}

/// Availability (%) of an owner whose station is NA exactly while busy
/// (no decay, no wait: P:L239's "if the seven minute interval for each
/// busy period did not occur").
fn raw_availability(bursts: &[(f64, f64)], horizon: f64) -> f64 {
    100.0 * (1.0 - bursts.iter().map(|b| b.1 - b.0).sum::<f64>() / horizon)
}

/// Runs the detector over the activity; returns the NA intervals (s).
fn detect(bursts: &[(f64, f64)], cfg: DetectorConfig, horizon: f64) -> Vec<(f64, f64)> {
    let mut d = Detector::new(cfg, Time::ZERO);
    let (mut load, mut t, mut i) = (0.0f64, 0.0f64, 0usize);
    let mut na: Vec<(f64, f64)> = Vec::new();
    let mut na_start: Option<f64> = (!d.is_available()).then_some(0.0);
    while t < horizon {
        let next = d.next_sample_due().as_secs_f64().max(t + 1.0);
        // Advance the load average piecewise to `next`.
        let mut now = t;
        while now < next {
            while i < bursts.len() && bursts[i].1 <= now {
                i += 1;
            }
            let (busy, until) = match bursts.get(i) {
                Some(&(s, e)) if s <= now => (true, e.min(next)),
                Some(&(s, _)) => (false, s.min(next)),
                None => (false, next),
            };
            let c = if busy { BUSY_CPU } else { 0.0 };
            let dt = (until - now).max(0.0);
            load = c + (load - c) * (-dt / TAU).exp();
            now = until.max(now + 1e-9);
        }
        t = next;
        let before = d.is_available();
        d.sample(Time::from_secs_f64(t), &OwnerSample::cpu(load));
        match (before, d.is_available()) {
            (true, false) => na_start = Some(t),
            (false, true) => {
                if let Some(s) = na_start.take() {
                    na.push((s, t));
                }
            }
            _ => {}
        }
    }
    if let Some(s) = na_start {
        na.push((s, horizon));
    }
    na
}

#[derive(Default, Clone)]
struct VacateTally {
    cpu: f64,
    moves: u64,
    suspended: f64,
    lost: f64,
    wall: f64,
}

/// Carries out the ladder's actions on the simulated guest.
fn apply(
    actions: &[Action],
    running: &mut bool,
    left: &mut bool,
    since_ckpt: &mut f64,
    tally: &mut VacateTally,
) {
    for a in actions {
        match *a {
            Action::RunNormal | Action::Resume | Action::LowerPriority => *running = true,
            Action::Suspend => *running = false,
            Action::Checkpoint => *since_ckpt = 0.0,
            Action::Migrate { checkpoint_first } | Action::Vacate { checkpoint_first } => {
                if !checkpoint_first {
                    tally.lost += *since_ckpt;
                }
                *since_ckpt = 0.0;
                tally.moves += 1;
                *left = true;
                *running = false;
            }
            Action::Kill => {
                tally.lost += *since_ckpt;
                *since_ckpt = 0.0;
                tally.moves += 1;
                *left = true;
                *running = false;
            }
        }
    }
}

/// One endless guest under `policy` for `horizon` seconds.
fn vacate(policy: EvictionPolicy, hosts: &[Vec<(f64, f64)>], horizon: f64) -> VacateTally {
    let mut tally = VacateTally::default();
    let busy_at = |h: usize, t: f64| {
        hosts[h]
            .iter()
            .find(|b| b.1 > t)
            .filter(|b| b.0 <= t)
            .copied()
    };
    let next_busy = |h: usize, t: f64| hosts[h].iter().find(|b| b.1 > t).map(|b| (b.0.max(t), b.1));
    let idle_since = |h: usize, t: f64| {
        hosts[h]
            .iter()
            .take_while(|b| b.1 <= t)
            .last()
            .map_or(0.0, |b| b.1)
    };
    let mut host = 0usize;
    let mut t = 0.0f64;
    let mut since_ckpt = 0.0f64;
    while t < horizon {
        // Place on the host idle the longest (Longest-Free), 1-min move.
        let cands: Vec<usize> = (0..hosts.len())
            .filter(|h| *h != host && busy_at(*h, t).is_none())
            .collect();
        host = cands
            .iter()
            .copied()
            .min_by(|a, b| idle_since(*a, t).total_cmp(&idle_since(*b, t)))
            .unwrap_or(host);
        t += 60.0;
        let mut lad = EvictionLadder::new(policy, Time::from_secs_f64(t));
        lad.on_destination(Time::from_secs_f64(t), true);
        let first = lad.on_placed(Time::from_secs_f64(t), busy_at(host, t).is_some());
        let mut running = false;
        let mut left = false;
        apply(&first, &mut running, &mut left, &mut since_ckpt, &mut tally);
        while !left && t < horizon {
            // Next event: owner burst start/end, or the ladder's deadline.
            let burst = next_busy(host, t);
            let deadline = lad.next_deadline().map(|d| d.as_secs_f64());
            let (ev_t, kind) = match burst {
                Some((s, _)) if s > t => (s, 0u8),
                Some((_, e)) => (e, 1u8),
                None => (horizon, 3u8),
            };
            let (ev_t, kind) = match deadline {
                Some(d) if d < ev_t => (d.max(t), 2u8),
                _ => (ev_t, kind),
            };
            let ev_t = ev_t.min(horizon);
            let dt = ev_t - t;
            if running {
                tally.cpu += dt;
                since_ckpt += dt;
            } else {
                tally.suspended += dt;
            }
            t = ev_t;
            if t >= horizon {
                break;
            }
            let now = Time::from_secs_f64(t);
            let actions = match kind {
                0 => lad.on_owner_active(now),
                1 => lad.on_owner_idle(now),
                2 => lad.on_timer(now),
                _ => Vec::new(),
            };
            apply(
                &actions,
                &mut running,
                &mut left,
                &mut since_ckpt,
                &mut tally,
            );
        }
    }
    tally.wall = horizon;
    tally
}

/// B2 over one set of owners: (availability with the detector, without
/// its 5-minute wait, without the seven-minute interval), %, and the NA
/// periods (count, ≥ 6.5 min, shortest in min).
fn b2(
    hosts: &[Vec<(f64, f64)>],
    horizon: f64,
    padded: &DetectorConfig,
    unpadded: &DetectorConfig,
) -> ([f64; 3], u64, u64, f64) {
    let (mut av, mut n, mut n7, mut min_na) = ([0.0; 3], 0u64, 0u64, f64::INFINITY);
    let share =
        |v: &[(f64, f64)]| 100.0 * (1.0 - v.iter().map(|x| x.1 - x.0).sum::<f64>() / horizon);
    for b in hosts {
        let na = detect(b, padded.clone(), horizon);
        let nu = detect(b, unpadded.clone(), horizon);
        av[0] += share(&na);
        av[1] += share(&nu);
        av[2] += raw_availability(b, horizon);
        let inner: Vec<f64> = na
            .iter()
            .filter(|x| x.1 < horizon && x.0 > 0.0)
            .map(|x| (x.1 - x.0) / 60.0)
            .collect();
        min_na = inner.iter().copied().fold(min_na, f64::min);
        n += inner.len() as u64;
        n7 += inner.iter().filter(|x| **x >= 6.5).count() as u64;
    }
    let k = hosts.len().max(1) as f64;
    ([av[0] / k, av[1] / k, av[2] / k], n, n7, min_na)
}

/// The raw activity model's gap scales of the sensitivity table.
const GAP_SCALES: [f64; 5] = [0.5, 0.75, 1.0, 1.5, 2.0];

pub fn run(opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    let mut rep = Report::new(opts);
    let var = variant("owner", opts)?;
    let days = if opts.quick { 5.0 } else { 30.0 };
    let horizon = days * 86_400.0;
    let unpadded = DetectorConfig {
        idle_wait: Dur::ZERO,
        ..DetectorConfig::default()
    };
    // Variant: the detector's wait removed in both arms.
    let padded = if var == Some("no-detector-wait") {
        unpadded.clone()
    } else {
        DetectorConfig::default()
    };
    let condor = if var == Some("immediate-for-condor") {
        EvictionPolicy::ImmediateEviction(ImmediateEvictionConfig {
            checkpoint_first: true,
            ..ImmediateEvictionConfig::default()
        })
    } else {
        EvictionPolicy::Condor1988(Condor1988Config::default())
    };
    let policies = [
        ("Condor-1988 (suspend 5 min)", condor),
        (
            "design (checkpoint and move at once)",
            EvictionPolicy::ImmediateEviction(ImmediateEvictionConfig {
                checkpoint_first: true,
                ..ImmediateEvictionConfig::default()
            }),
        ),
        (
            "periodic checkpoint + kill",
            EvictionPolicy::CheckpointThenKill(CheckpointThenKillConfig::default()),
        ),
    ];
    let mut per_seed: Vec<[f64; 3]> = Vec::new();
    let (mut na_n, mut na_7, mut min_na) = (0u64, 0u64, f64::INFINITY);
    let (mut short_bursts, mut bursts_n) = (0u64, 0u64);
    let mut vt = vec![VacateTally::default(); policies.len()];
    let mut moves_per_seed: Vec<(f64, f64)> = Vec::new();
    let mut csv = String::from(
        "seed,availability_detector,availability_no_wait,availability_no_seven_minutes\n",
    );
    let sweep_n = if opts.quick { 0 } else { GAP_SCALES.len() };
    opts.progress
        .set_length(u64::from(opts.seeds) * (1 + sweep_n as u64));
    for s in 0..opts.seeds {
        let seed = opts.seed + u64::from(s);
        let hosts: Vec<Vec<(f64, f64)>> = (0..HOSTS)
            .map(|h| activity(seed, h, horizon, 1.0))
            .collect();
        for b in &hosts {
            rep.events += b.len() as u64;
            bursts_n += b.len() as u64;
            short_bursts += b.iter().filter(|x| x.1 - x.0 < 300.0).count() as u64;
        }
        let (av, n, n7, m) = b2(&hosts, horizon, &padded, &unpadded);
        na_n += n;
        na_7 += n7;
        min_na = min_na.min(m);
        let _ = writeln!(csv, "{seed},{:.3},{:.3},{:.3}", av[0], av[1], av[2]);
        per_seed.push(av);
        let mut moves = [0.0; 2];
        for (pi, (_, p)) in policies.iter().enumerate() {
            let r = vacate(*p, &hosts, horizon);
            if pi < 2 {
                moves[pi] = r.moves as f64;
            }
            let t = &mut vt[pi];
            t.cpu += r.cpu;
            t.moves += r.moves;
            t.suspended += r.suspended;
            t.lost += r.lost;
            t.wall += r.wall;
        }
        moves_per_seed.push((moves[0], moves[1]));
        opts.progress.advance(1);
    }
    rep.write("detector.csv", &csv)?;
    // Sensitivity: the raw activity model is ours.
    let mut sweep = Vec::new();
    if !opts.quick {
        for g in GAP_SCALES {
            let mut gains = Vec::new();
            let mut avs = Vec::new();
            let mut ratio = Vec::new();
            for s in 0..opts.seeds {
                let seed = opts.seed + u64::from(s);
                let hosts: Vec<Vec<(f64, f64)>> =
                    (0..HOSTS).map(|h| activity(seed, h, horizon, g)).collect();
                let (av, ..) = b2(&hosts, horizon, &padded, &unpadded);
                gains.push(av[2] - av[0]);
                avs.push(av[0]);
                let c = vacate(policies[0].1, &hosts, horizon).moves as f64;
                let d = vacate(policies[1].1, &hosts, horizon).moves as f64;
                ratio.push(c / d.max(1.0));
            }
            sweep.push((g, mean_sd(&gains), mean_sd(&avs).0, mean_sd(&ratio).0));
            opts.progress.advance(u64::from(opts.seeds));
        }
    }
    let col = |i: usize| per_seed.iter().map(|a| a[i]).collect::<Vec<_>>();
    let (av_p, _) = mean_sd(&col(0));
    let (av_u, _) = mean_sd(&col(1));
    let (av_r, _) = mean_sd(&col(2));
    let gain7: Vec<f64> = per_seed.iter().map(|a| a[2] - a[0]).collect();
    let (g7, g7_sd) = mean_sd(&gain7);
    let md = &mut rep.md;
    let _ = writeln!(
        md,
        "# owner: detector conservatism (B2) and vacate policies (B9), Mutka 1988 L351–361, L841\n\n\
         {HOSTS} owners × {days} days × {} seeds from {}; raw activity model in the module docs \
         ({} bursts, {} % shorter than 5 min; ours: the papers measured only the detector's \
         output).\n\n\
         ## B2: the seven-minute interval\n\n\
         | | Paper | Ours |\n|---|---|---|\n\
         | minimum NA after a burst | ≈ 7 min (2–3 min decay + 5 min wait, P:L150, T:L353) | {} min (NA periods ≥ 6.5 min: {} %) |\n\
         | availability with the detector | \"approximately 70 %\" (P:L114) | {} % |\n\
         | without the 5-minute wait (the decay remains) | — | {} % (+{} points) |\n\
         | without the seven-minute interval (NA only while busy) | \"would increase approximately 4 %\" (P:L239, T:L361) | {} % (+{} points) |\n",
        opts.seeds,
        opts.seed,
        bursts_n,
        f(100.0 * short_bursts as f64 / bursts_n.max(1) as f64, 0),
        f(min_na, 1),
        f(100.0 * na_7 as f64 / na_n.max(1) as f64, 1),
        f(av_p, 1),
        f(av_u, 1),
        f(av_u - av_p, 1),
        f(av_r, 1),
        f(g7, 1)
    );
    if !sweep.is_empty() {
        let _ = writeln!(
            md,
            "Sensitivity: the raw activity model is ours, so B2's gain depends on it. Every quiet \
             gap scaled (fewer, longer gaps: fewer busy periods, each costing seven minutes):\n\n\
             | quiet gaps × | availability % | gain without the seven minutes | Condor-1988 / design moves | +4 within tolerance |\n|---|---|---|---|---|"
        );
        for (g, (gain, sd), av, r) in &sweep {
            let tol = 0.5 + 2.0 * sd;
            let _ = writeln!(
                md,
                "| {g} | {} | +{} ± {} | {} | {} |",
                f(*av, 1),
                f(*gain, 2),
                f(tol, 2),
                f(*r, 2),
                if (gain - 4.0).abs() <= tol {
                    "yes"
                } else {
                    "no"
                }
            );
        }
    }
    let _ = writeln!(
        md,
        "\n## B9: vacate policies (one endless guest, core eviction ladder)\n\n\
         | policy | moves per 100 guest CPU-h | suspended min per 100 CPU-h (holds the owner's disk) | work lost h per 100 CPU-h | goodput % |\n|---|---|---|---|---|"
    );
    let per100 = |x: f64, t: &VacateTally| x / (t.cpu / 3600.0).max(1e-9) * 100.0;
    for (pi, (name, _)) in policies.iter().enumerate() {
        let t = &vt[pi];
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} |",
            f(per100(t.moves as f64, t), 1),
            f(per100(t.suspended / 60.0, t), 0),
            f(per100(t.lost / 3600.0, t), 2),
            f(100.0 * (t.cpu - t.lost) / t.wall.max(1.0), 1)
        );
    }
    let _ = writeln!(
        md,
        "\nThat checkpoint + kill holds no suspended guest but loses the work since the last \
         checkpoint, and that the other two lose none, follows from the policies' definitions; \
         it is a unit test (`owner::tests`), not a result. So is the detector's minimum NA of \
         about seven minutes."
    );
    let robust = |ok: &dyn Fn(f64, f64) -> bool| -> String {
        if sweep.is_empty() {
            return String::new();
        }
        let held: Vec<String> = sweep
            .iter()
            .filter(|(_, (g, sd), _, _)| ok(*g, *sd))
            .map(|(x, ..)| format!("{x}"))
            .collect();
        format!(
            "; holds for quiet-gap scales {} of {:?}",
            if held.is_empty() {
                "none".into()
            } else {
                held.join(", ")
            },
            GAP_SCALES
        )
    };
    let tol = 0.5 + 2.0 * g7_sd;
    rep.claim(
        "without the seven minutes after each busy period, availability rises about 4 points",
        "seeds/003_0d675f08666827bf.txt L239; seeds/000_14c1149197e96532.txt L361",
        "\"If the seven minute interval for each busy period did not occur, the system availability would increase approximately 4%\"",
        format!("+{} points{}", f(g7, 2), robust(&|g, sd| (g - 4.0).abs() <= 0.5 + 2.0 * sd)),
        format!("4 ± {} (0.5 + 2 sd)", f(tol, 2)),
        (g7 - 4.0).abs() <= tol,
    );
    let ratio: Vec<f64> = moves_per_seed.iter().map(|(c, d)| c / d.max(1.0)).collect();
    let (r, _) = mean_sd(&ratio);
    rep.claim(
        "suspending for 5 minutes avoids many migrations (many NA periods are short)",
        "seeds/000_14c1149197e96532.txt L841",
        "\"The strategy has worked well since many of the workstations' unavailable intervals are short\"",
        format!(
            "Condor-1988 moves {} × the design's{}",
            f(r, 2),
            if sweep.is_empty() {
                String::new()
            } else {
                let held: Vec<String> = sweep
                    .iter()
                    .filter(|s| s.3 <= 0.8)
                    .map(|s| format!("{}", s.0))
                    .collect();
                format!("; holds for quiet-gap scales {} of {GAP_SCALES:?}", if held.is_empty() { "none".into() } else { held.join(", ") })
            }
        ),
        "≤ 0.8 (\"many\": at least a fifth of the moves avoided, ours)",
        r <= 0.8,
    );
    rep.claims_table();
    rep.finish("owner")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The detector makes every burst at least about seven minutes of NA
    /// (T:L353): a property of its configuration, not a result.
    #[test]
    fn every_burst_gives_about_seven_minutes_of_na() {
        let h = 86_400.0;
        let bursts: Vec<(f64, f64)> = (1..20)
            .map(|i| (i as f64 * 3000.0, i as f64 * 3000.0 + 5.0 * i as f64))
            .collect();
        // The detector starts NA until it has seen the station idle; that
        // first interval is not a burst's.
        let na: Vec<(f64, f64)> = detect(&bursts, DetectorConfig::default(), h)
            .into_iter()
            .filter(|x| x.0 > 0.0)
            .collect();
        assert_eq!(na.len(), bursts.len());
        for x in &na {
            let m = (x.1 - x.0) / 60.0;
            assert!((5.5..=10.0).contains(&m), "{m} min");
        }
    }

    /// Checkpoint + kill never holds a suspended guest and loses work;
    /// Condor-1988 and the design lose none (the policies' definitions).
    #[test]
    fn kill_loses_work_and_the_others_do_not() {
        let h = 10.0 * 86_400.0;
        let hosts: Vec<Vec<(f64, f64)>> = (0..HOSTS).map(|i| activity(3, i, h, 1.0)).collect();
        let k = vacate(
            EvictionPolicy::CheckpointThenKill(CheckpointThenKillConfig::default()),
            &hosts,
            h,
        );
        let c = vacate(
            EvictionPolicy::Condor1988(Condor1988Config::default()),
            &hosts,
            h,
        );
        let d = vacate(
            EvictionPolicy::ImmediateEviction(ImmediateEvictionConfig {
                checkpoint_first: true,
                ..ImmediateEvictionConfig::default()
            }),
            &hosts,
            h,
        );
        assert_eq!(k.suspended, 0.0);
        assert!(k.lost > 0.0);
        assert_eq!((c.lost, d.lost), (0.0, 0.0));
        assert!(c.suspended > 0.0);
    }
}
