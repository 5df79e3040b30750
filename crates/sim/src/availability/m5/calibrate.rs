//! M5's per-station calibration: the owner's log-odds offset of each group
//! (a month for `Mutka87`, a cell for `Month23`) is corrected by pilot runs
//! until the station meets its table there. The pilots use a fixed seed
//! per station, apart from every run's, so a station's offsets are the
//! same in every run and every experiment.

use super::generate::{Latent, Offsets, Owner, PILOT_SEED};
use super::{M5, Targets};
use crate::availability::State;
use gleaner_core::rng::substream;
use gleaner_core::time::Time;
use std::sync::Mutex;

/// Pilot length: twelve weeks.
const PILOT_HOURS: u64 = 12 * 7 * 24;
const HOUR_US: u64 = 3_600_000_000;
/// Correction rounds after the analytic start.
const ROUNDS: usize = 4;
/// The base chain's long-run AV share (M3's stationary laws, spec
/// mutka-livny-1987.md §1.9).
const BASE_AV: f64 = 0.776;

fn na_log_odds(av: f64) -> f64 {
    let a = av.clamp(1e-4, 1.0 - 1e-4);
    ((1.0 - a) / a).ln()
}

/// AV share per group of a pilot run with `offsets`.
fn pilot(m: &M5, offsets: &Offsets, station: u32) -> [f64; 6] {
    let seed = PILOT_SEED.wrapping_add(u64::from(station));
    let mut owner = Owner::new(
        m,
        offsets.clone(),
        Latent::new(seed, m.latent_sd, m.latent_corr),
        substream(seed, 1),
    );
    let horizon = Time(PILOT_HOURS * HOUR_US);
    let (mut av, mut tot) = ([0f64; 6], [0f64; 6]);
    for iv in owner.by_ref() {
        if iv.start >= horizon {
            break;
        }
        // Split the interval at hour boundaries (cells change by the hour).
        let mut t = iv.start;
        let end = iv.end.min(horizon);
        while t < end {
            let next = Time((t.0 / HOUR_US + 1) * HOUR_US).min(end);
            let g = offsets
                .fixed_group
                .unwrap_or_else(|| offsets.targets.group(t))
                .min(5);
            let d = next.since(t).0 as f64;
            tot[g] += d;
            if iv.state == State::Av {
                av[g] += d;
            }
            t = next;
        }
    }
    let mut out = [f64::NAN; 6];
    for g in 0..6 {
        if tot[g] > 0.0 {
            out[g] = av[g] / tot[g];
        }
    }
    out
}

/// Offsets already calibrated in this process, by model and targets (every
/// seed of a run, and every run of an experiment, calibrates the same
/// stations).
static CACHE: Mutex<Vec<(String, [f64; 6])>> = Mutex::new(Vec::new());
/// Entries kept at most (a fit visits many models).
const CACHE_MAX: usize = 4096;

/// The calibrated offsets of a station with `targets`, a share `spell` of
/// its time in long spells and a share `away` away (neither of which the
/// owner's process sees).
pub(super) fn offsets(m: &M5, targets: &Targets, spell: f64, away: f64) -> [f64; 6] {
    let key = format!("{m:?}|{targets:?}|{spell:?}|{away:?}");
    if let Ok(c) = CACHE.lock()
        && let Some((_, o)) = c.iter().find(|(k, _)| *k == key)
    {
        return *o;
    }
    let o = calibrate(m, targets, spell, away);
    if let Ok(mut c) = CACHE.lock() {
        if c.len() >= CACHE_MAX {
            c.clear();
        }
        c.push((key, o));
    }
    o
}

fn calibrate(m: &M5, targets: &Targets, spell: f64, away: f64) -> [f64; 6] {
    // A = (1 − spell)·(away + (1 − away)·A_owner).
    let want: Vec<f64> = (0..targets.groups())
        .map(|g| {
            let a = targets.availability(g) / (1.0 - spell).max(1e-6);
            ((a - away) / (1.0 - away).max(1e-6)).clamp(0.002, 0.998)
        })
        .collect();
    let mut offset = [0.0; 6];
    for (g, o) in offset.iter_mut().enumerate() {
        *o = na_log_odds(want[g]) - na_log_odds(BASE_AV);
    }
    // A station index for the pilot's seed: the targets themselves would
    // do, but a plain hash of them is enough and keeps pilots independent.
    let station = want.iter().fold(0u32, |h, a| {
        h.wrapping_mul(31).wrapping_add((a * 1e6) as u32)
    });
    match targets {
        Targets::Monthly { .. } => {
            // Each month on its own pilot (months are long; a month's
            // level barely leaks into the next).
            for g in 0..targets.groups() {
                for _ in 0..ROUNDS {
                    let o = Offsets {
                        targets: targets.clone(),
                        offset,
                        fixed_group: Some(g),
                    };
                    let got = pilot(m, &o, station.wrapping_add(g as u32))[g];
                    offset[g] += na_log_odds(want[g]) - na_log_odds(got);
                }
            }
        }
        Targets::Cells(_) => {
            // The cells together: a night's long AV period reaches into the
            // morning, so each cell's share depends on its neighbours.
            for _ in 0..ROUNDS {
                let o = Offsets {
                    targets: targets.clone(),
                    offset,
                    fixed_group: None,
                };
                let got = pilot(m, &o, station);
                for g in 0..6 {
                    if got[g].is_finite() {
                        offset[g] += na_log_odds(want[g]) - na_log_odds(got[g]);
                    }
                }
            }
        }
    }
    offset
}
