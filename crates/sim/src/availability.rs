//! Station availability: Mutka's stochastic models M1–M4 and trace replay.
//!
//! A station is either **AV** (available: its owner has been idle long
//! enough) or **NA** (non-available) — Mutka & Livny 1987
//! (seeds/003_0d675f08666827bf.txt L144–152). The simulator consumes, per
//! station, a time-ordered sequence of [`Interval`]s; it can come from a
//! generator ([`Model`]) or from a recorded [`Trace`].
//!
//! # Calendar
//! Simulation time 0 is **Monday 00:00 of 1 September** — the calendar of
//! Mutka's study, which started on Monday 1 September 1986 (spec
//! mutka-livny-1987.md §1.2). Months have their real lengths from there
//! (30, 31, 30, 31, 31, 28, …). Hour-of-day, weekday and month breakdowns
//! (the profiling tables) and M4's time-of-day modulation use this calendar.
//!
//! # Trace CSV format
//! One row per interval, with a header row, comma separated:
//!
//! ```text
//! station,start,end,state
//! ws01,0,5040,AV
//! ws01,5040,5460,NA
//! ws02,0,600.5,NA
//! ```
//!
//! - `station`: any non-empty name without commas; stations get dense ids in
//!   order of first appearance.
//! - `start`, `end`: **seconds** since the trace epoch (time 0 above), as a
//!   non-negative decimal with at most 6 fractional digits (microsecond
//!   resolution, parsed exactly); `start < end`.
//! - `state`: `AV` or `NA` (case-insensitive).
//! - Rows of one station must be in time order and must not overlap; rows
//!   of different stations may interleave. Gaps count as **NA**, the
//!   conservative choice of the original monitor, which recorded periods
//!   without monitoring as NA (seeds/003_0d675f08666827bf.txt L152).
//! - Blank lines and lines starting with `#` are ignored.
//!
//! Errors name the file and the 1-based line ([`SimError::Trace`]).
//! [`Trace::write_csv`] writes the same format, so export → import is exact.

mod m5;
pub use m5::{
    CELL_HOURS, FITTED_MONTH23, FITTED_MUTKA87, M5, M5Gen, M5Pool, NPARAMS, PARAM_NAMES, cell_of,
};

use crate::SimError;
use gleaner_core::rng::{PolicyRng, Rng, substream};
use gleaner_core::time::{Dur, Time};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;

/// Owner-activity state of a station.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// Available for remote execution.
    Av,
    /// Non-available: the owner is using it, or used it recently.
    Na,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Av => "AV",
            State::Na => "NA",
        }
    }
    pub fn other(self) -> State {
        match self {
            State::Av => State::Na,
            State::Na => State::Av,
        }
    }
}

/// One interval of a station's availability history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub start: Time,
    pub end: Time,
    pub state: State,
}

impl Interval {
    pub fn len(&self) -> Dur {
        self.end.since(self.start)
    }
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

const MINUTE_US: f64 = 60e6;

fn mins(d: f64) -> Dur {
    Dur::from_secs_f64(d * 60.0)
}

// ---------------------------------------------------------------------------
// Calendar helpers
// ---------------------------------------------------------------------------

/// Month lengths in days starting from September (the study calendar).
const MONTH_DAYS: [u64; 12] = [30, 31, 30, 31, 31, 28, 31, 30, 31, 30, 31, 31];
/// Month names from September on.
pub const MONTH_NAMES: [&str; 12] = [
    "Sep", "Oct", "Nov", "Dec", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug",
];

/// Start of month `m` (0 = September) in simulation time; wraps yearly.
pub fn month_start(m: usize) -> Time {
    let years = (m / 12) as u64;
    let days: u64 = years * 365 + MONTH_DAYS[..m % 12].iter().sum::<u64>();
    Time(days * 86_400_000_000)
}

/// Month index (0 = September of year 0, 12 = September of year 1, …) of `t`.
pub fn month_of(t: Time) -> usize {
    let mut m = 0usize;
    while month_start(m + 1) <= t {
        m += 1;
    }
    m
}

/// Hour of day (0–23) of `t`.
pub fn hour_of_day(t: Time) -> u32 {
    ((t.0 / 3_600_000_000) % 24) as u32
}

/// Day of week of `t`: 0 = Monday … 6 = Sunday (time 0 is a Monday).
pub fn day_of_week(t: Time) -> u32 {
    ((t.0 / 86_400_000_000) % 7) as u32
}

// ---------------------------------------------------------------------------
// Distributions
// ---------------------------------------------------------------------------

/// A k-stage hyperexponential: a mixture of exponentials (Eq. 1 of Mutka &
/// Livny 1987, seeds/003_0d675f08666827bf.txt L178). Means in minutes.
#[derive(Clone, Debug, PartialEq)]
pub struct Hyperexp {
    pub weights: Vec<f64>,
    pub means: Vec<f64>,
}

impl Hyperexp {
    pub fn new(weights: Vec<f64>, means: Vec<f64>) -> Result<Self, SimError> {
        if weights.len() != means.len() || weights.is_empty() {
            return Err(param(
                "hyperexp",
                "weights and means must be non-empty and equal length",
            ));
        }
        if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0))
            || means.iter().any(|m| !(m.is_finite() && *m > 0.0))
        {
            return Err(param("hyperexp", "weights must be ≥ 0 and means > 0"));
        }
        let s: f64 = weights.iter().sum();
        if s <= 0.0 {
            return Err(param("hyperexp", "weights sum to zero"));
        }
        // Normalise: the thesis prints weights summing to 1.01 (T:L483).
        Ok(Hyperexp {
            weights: weights.iter().map(|w| w / s).collect(),
            means,
        })
    }

    /// Mean in minutes.
    pub fn mean(&self) -> f64 {
        self.weights
            .iter()
            .zip(&self.means)
            .map(|(w, m)| w * m)
            .sum()
    }

    /// CDF at `t` minutes.
    pub fn cdf(&self, t: f64) -> f64 {
        if t <= 0.0 {
            return 0.0;
        }
        self.weights
            .iter()
            .zip(&self.means)
            .map(|(w, m)| w * (1.0 - (-t / m).exp()))
            .sum()
    }

    /// `E[max(floor, X)]` in minutes: `floor + Σ wₖ μₖ e^{−floor/μₖ}`.
    pub fn mean_clamped(&self, floor: f64) -> f64 {
        floor
            + self
                .weights
                .iter()
                .zip(&self.means)
                .map(|(w, m)| w * m * (-floor / m).exp())
                .sum::<f64>()
    }

    /// Draws a component index by weight.
    pub fn component(&self, rng: &mut PolicyRng) -> usize {
        let u: f64 = rng.random();
        let mut acc = 0.0;
        for (i, w) in self.weights.iter().enumerate() {
            acc += w;
            if u < acc {
                return i;
            }
        }
        self.weights.len() - 1
    }

    /// Draws `(component, length in minutes)`.
    pub fn sample(&self, rng: &mut PolicyRng) -> (usize, f64) {
        let k = self.component(rng);
        (k, exp_sample(rng, self.means[k]))
    }
}

/// Exponential with mean `mean` by inversion.
pub fn exp_sample(rng: &mut PolicyRng, mean: f64) -> f64 {
    let u: f64 = rng.random();
    -mean * (1.0 - u).ln()
}

fn param(name: &str, msg: &str) -> SimError {
    SimError::Param {
        name: name.to_string(),
        msg: msg.to_string(),
    }
}

/// How the 7-minute NA minimum is applied to the H2 draw (spec R-GEN-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FloorMode {
    /// `max(floor, X)`: Eq. 3 as printed has an atom `F(7) = 0.468` at 7
    /// minutes (seeds/003_0d675f08666827bf.txt L190–192); this reading also
    /// reproduces the observed 74/26 NA label split (spec §1.8).
    #[default]
    Clamp,
    /// `floor + X`.
    Shift,
    /// Redraw until `X ≥ floor` (truncate and renormalise).
    Truncate,
}

fn apply_floor(
    rng: &mut PolicyRng,
    mode: FloorMode,
    floor: f64,
    mut draw: impl FnMut(&mut PolicyRng) -> f64,
) -> f64 {
    match mode {
        FloorMode::Clamp => draw(rng).max(floor),
        FloorMode::Shift => floor + draw(rng),
        FloorMode::Truncate => {
            for _ in 0..10_000 {
                let x = draw(rng);
                if x >= floor {
                    return x;
                }
            }
            floor
        }
    }
}

// ---------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------

/// M1: alternating independent exponentials (P:L337). The paper gives no
/// means for M1; the defaults are the "about 100 minutes and 40 minutes"
/// average AV and NA lengths of Mutka & Livny 1987b
/// (seeds/004_8811df6e42c9e111.txt L156), i.e. 71.4 % AV, matching the
/// measured ~70–71 %.
#[derive(Clone, Debug, PartialEq)]
pub struct M1 {
    pub av_mean: f64,
    pub na_mean: f64,
}

impl Default for M1 {
    fn default() -> Self {
        M1 {
            av_mean: 100.0,
            na_mean: 40.0,
        }
    }
}

/// M2: independent hyperexponentials (P:L339). AV ~ Eq. 2 / Eq. 3.2
/// `0.32·Exp(3) + 0.44·Exp(medium) + 0.24·Exp(300)` (P:L184; T:L483 prints
/// 0.33 for the first weight, summing to 1.01 — we use P's 0.32), with the
/// medium mean a parameter (25 as printed in Eq. 2; 35 per P:L216, T:L551).
/// NA ~ Eq. 3 / Eq. 3.3 `max(7, 0.68·Exp(7) + 0.32·Exp(55))` (P:L190–192).
#[derive(Clone, Debug, PartialEq)]
pub struct M2 {
    pub medium_mean: f64,
    pub na_floor: f64,
    pub floor_mode: FloorMode,
}

impl Default for M2 {
    fn default() -> Self {
        M2 {
            medium_mean: 25.0,
            na_floor: 7.0,
            floor_mode: FloorMode::Clamp,
        }
    }
}

impl M2 {
    /// The AV distribution (Eq. 2).
    pub fn av(&self) -> Hyperexp {
        Hyperexp {
            weights: vec![0.32, 0.44, 0.24],
            means: vec![3.0, self.medium_mean, 300.0],
        }
    }
    /// The NA distribution before the floor (Eq. 3).
    pub fn na_raw(&self) -> Hyperexp {
        Hyperexp {
            weights: vec![0.68, 0.32],
            means: vec![7.0, 55.0],
        }
    }
}

/// M3: the type-correlated chain of P:L341 / T:L527–543. AV periods have a
/// type (short, medium, long) whose successor is drawn from `av_matrix`
/// (rows = current type); NA periods likewise with `na_matrix`; given its
/// type, a length is exponential with that component's mean. AV and NA are
/// independent of each other (P:L222).
///
/// **Off-diagonals are ours.** The paper publishes only the AV diagonals
/// 0.64/0.52/0.48 and "a long AV not followed by a long is more likely
/// followed by a medium" (P:L224); NA has only "slightly more" short→short.
/// The defaults are the feasible example of spec mutka-livny-1987.md §1.9:
/// AV rows S [.64 .345 .015], M [.207 .52 .273], L [.10 .42 .48]; NA
/// P(S|S) = .69, P(S|L) = .659. Their stationary laws are (0.32, 0.44,
/// 0.24) and (0.68, 0.32), exactly Eq. 2/3's weights, so M3 keeps M2's
/// marginals (and mean availability) and only adds correlation. NA draws
/// keep the 7-minute floor (the measurement guarantees NA ≥ 7, spec §1.10).
#[derive(Clone, Debug, PartialEq)]
pub struct M3 {
    pub av_means: [f64; 3],
    pub na_means: [f64; 2],
    pub av_matrix: [[f64; 3]; 3],
    pub na_matrix: [[f64; 2]; 2],
    pub na_floor: f64,
}

impl Default for M3 {
    fn default() -> Self {
        M3 {
            av_means: [3.0, 25.0, 300.0],
            na_means: [7.0, 55.0],
            av_matrix: [
                [0.64, 0.345, 0.015],
                [0.207, 0.52, 0.273],
                [0.10, 0.42, 0.48],
            ],
            na_matrix: [[0.69, 0.31], [0.659, 0.341]],
            na_floor: 7.0,
        }
    }
}

/// Table 1 "Average" column of Mutka & Livny 1987 (P:L243–261): per-station
/// percentage of time AV, stations 1–13.
pub const TABLE1_AVERAGE: [f64; 13] = [
    84.0, 90.0, 51.0, 85.0, 29.0, 73.0, 66.0, 69.0, 83.0, 82.0, 84.0, 39.0, 80.0,
];

/// M4: per-station parameters plus time-of-day / day-of-week modulation
/// (proposed but never built: P:L343–345, T:L543). Ours, documented:
///
/// - Shape: M3's correlated chain (so M2's component mixture and AV→AV
///   correlation are kept).
/// - Per station `i`: AV means are scaled by `a_i` and NA means by `b_i`;
///   `a_i = √rᵢ` where `rᵢ` is the ratio of the target odds of being AV to
///   the base model's, and `b_i` then solves the renewal availability
///   exactly, including the 7-minute floor. Targets default to Table 1's
///   per-station averages (station `i` uses row `i mod 13`).
/// - Modulation: an interval starting in hour `h` of a weekday (Mon–Fri) or
///   weekend has its AV means multiplied by `av_mod[h]` and its NA means by
///   `na_mod[h]`. Defaults are shaped after Figs 10/11 (P:L241, L266): busy
///   weekday afternoons (availability ≈ 50 % at 14–16 h), quiet nights and
///   weekends (70–80 %).
/// - After modulation, each station's scale is recalibrated by a short
///   deterministic pilot run (fixed seed, 150 days) so that its long-run
///   availability still meets its target.
#[derive(Clone, Debug, PartialEq)]
pub struct M4 {
    pub base: M3,
    /// Target AV fraction (0–1) per station, cycled by station index.
    pub targets: Vec<f64>,
    pub weekday_av_mod: [f64; 24],
    pub weekday_na_mod: [f64; 24],
    pub weekend_av_mod: [f64; 24],
    pub weekend_na_mod: [f64; 24],
}

impl Default for M4 {
    fn default() -> Self {
        // Weekday: long AV at night, short AV / long NA in working hours,
        // busiest 14–16 h.
        let mut wd_av = [1.0; 24];
        let mut wd_na = [1.0; 24];
        for h in 0..24 {
            let (a, n) = match h {
                0..=6 => (2.5, 0.6),
                7..=8 => (1.2, 0.9),
                9..=12 => (0.55, 1.8),
                13 => (0.5, 2.2),
                14..=16 => (0.4, 2.8),
                17..=19 => (0.8, 1.2),
                _ => (1.6, 0.8),
            };
            wd_av[h] = a;
            wd_na[h] = n;
        }
        let mut we_av = [1.0; 24];
        let mut we_na = [1.0; 24];
        for h in 0..24 {
            let (a, n) = match h {
                14..=17 => (1.0, 1.3),
                9..=13 | 18..=21 => (1.4, 1.0),
                _ => (2.5, 0.7),
            };
            we_av[h] = a;
            we_na[h] = n;
        }
        M4 {
            base: M3::default(),
            targets: TABLE1_AVERAGE.iter().map(|p| p / 100.0).collect(),
            weekday_av_mod: wd_av,
            weekday_na_mod: wd_na,
            weekend_av_mod: we_av,
            weekend_na_mod: we_na,
        }
    }
}

impl M4 {
    fn modulation(&self, t: Time) -> (f64, f64) {
        let h = hour_of_day(t) as usize;
        if day_of_week(t) < 5 {
            (self.weekday_av_mod[h], self.weekday_na_mod[h])
        } else {
            (self.weekend_av_mod[h], self.weekend_na_mod[h])
        }
    }

    fn target(&self, station: u32) -> f64 {
        if self.targets.is_empty() {
            0.776
        } else {
            self.targets[station as usize % self.targets.len()].clamp(0.01, 0.99)
        }
    }
}

/// A selectable availability model.
#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    M1(M1),
    M2(M2),
    M3(M3),
    /// Boxed: M4 carries per-hour tables and is much larger than the others.
    M4(Box<M4>),
    /// The papers' own stations (Table 1 or Table 6.1), long local jobs and
    /// a shared busy mood, fitted to the papers' statistics
    /// (`availability::m5`).
    M5(Box<M5>),
}

impl Default for Model {
    fn default() -> Self {
        Model::M2(M2::default())
    }
}

impl Model {
    /// `m1`, `m2`, `m2-35` (medium mean 35), `m3`, `m4` with default
    /// parameters; `m5` and `m5-23` fitted to the 1987 paper's 13 stations
    /// and to the thesis's 23-station month.
    pub fn parse(name: &str) -> Result<Model, SimError> {
        match name.to_ascii_lowercase().as_str() {
            "m1" => Ok(Model::M1(M1::default())),
            "m2" => Ok(Model::M2(M2::default())),
            "m2-35" | "m2_35" => Ok(Model::M2(M2 {
                medium_mean: 35.0,
                ..M2::default()
            })),
            "m3" => Ok(Model::M3(M3::default())),
            "m4" => Ok(Model::M4(Box::default())),
            "m5" => Ok(Model::M5(Box::new(M5::fitted(M5Pool::Mutka87)))),
            "m5-23" | "m5_23" => Ok(Model::M5(Box::new(M5::fitted(M5Pool::Month23)))),
            other => Err(param(
                "model",
                &format!(
                    "unknown availability model {other:?} (known: m1, m2, m2-35, m3, m4, m5, m5-23)"
                ),
            )),
        }
    }

    pub fn name(&self) -> String {
        match self {
            Model::M1(_) => "m1".into(),
            Model::M2(m) if (m.medium_mean - 25.0).abs() > 1e-9 => {
                format!("m2 (medium mean {})", m.medium_mean)
            }
            Model::M2(_) => "m2".into(),
            Model::M3(_) => "m3".into(),
            Model::M4(_) => "m4".into(),
            Model::M5(m) => match m.pool {
                M5Pool::Mutka87 => "m5".into(),
                M5Pool::Month23 => "m5-23".into(),
            },
        }
    }

    /// The generator of station `station` for run seed `seed`; stations draw
    /// from independent streams (`substream(seed, station)`).
    pub fn station(&self, seed: u64, station: u32) -> StationGen {
        if let Model::M5(m) = self {
            return StationGen {
                model: self.clone(),
                rng: substream(seed, u64::from(station)),
                now: Time::ZERO,
                next_state: State::Av,
                av_type: 0,
                na_type: 0,
                scale: (1.0, 1.0),
                m5: Some(Box::new(m.station(seed, station))),
            };
        }
        StationGen::new(self.clone(), substream(seed, u64::from(station)), station)
    }
}

/// Per-station generator state: an endless iterator of alternating intervals
/// starting at time 0.
#[derive(Clone, Debug)]
pub struct StationGen {
    model: Model,
    rng: PolicyRng,
    now: Time,
    next_state: State,
    av_type: usize,
    na_type: usize,
    /// M4 per-station scales (AV, NA); (1, 1) otherwise.
    scale: (f64, f64),
    /// M5: the merged stream this generator hands out.
    m5: Option<Box<M5Gen>>,
}

impl StationGen {
    fn new(model: Model, mut rng: PolicyRng, station: u32) -> Self {
        let scale = match &model {
            Model::M4(m4) => m4_calibrate(m4, station),
            _ => (1.0, 1.0),
        };
        // Start in AV with the model's long-run AV probability; the first
        // interval is a fresh draw (no residual-life correction; its effect
        // fades after one cycle).
        let p_av = match &model {
            Model::M1(m) => m.av_mean / (m.av_mean + m.na_mean),
            Model::M2(m) => {
                let av = m.av().mean();
                av / (av + m.na_raw().mean_clamped(m.na_floor))
            }
            Model::M3(_) => 0.776,
            Model::M4(m) => m.target(station),
            Model::M5(_) => 0.7,
        };
        let u: f64 = rng.random();
        let first = if u < p_av { State::Av } else { State::Na };
        // Initial chain types from the stationary laws.
        let (av_type, na_type) = match &model {
            Model::M3(m) => (
                stationary_pick3(&mut rng, &m.av_matrix),
                stationary_pick2(&mut rng, &m.na_matrix),
            ),
            Model::M4(m) => (
                stationary_pick3(&mut rng, &m.base.av_matrix),
                stationary_pick2(&mut rng, &m.base.na_matrix),
            ),
            _ => (0, 0),
        };
        StationGen {
            model,
            rng,
            now: Time::ZERO,
            next_state: first,
            av_type,
            na_type,
            scale,
            m5: None,
        }
    }

    /// Draws the length (minutes) of the next interval in state `s`.
    fn draw(&mut self, s: State) -> f64 {
        let rng = &mut self.rng;
        match &self.model {
            Model::M1(m) => match s {
                State::Av => exp_sample(rng, m.av_mean),
                State::Na => exp_sample(rng, m.na_mean),
            },
            Model::M2(m) => match s {
                State::Av => m.av().sample(rng).1,
                State::Na => {
                    let h = m.na_raw();
                    apply_floor(rng, m.floor_mode, m.na_floor, |r| h.sample(r).1)
                }
            },
            Model::M3(m) => {
                let (x, av_t, na_t) = m3_step(m, rng, s, self.av_type, self.na_type, 1.0, 1.0);
                self.av_type = av_t;
                self.na_type = na_t;
                x
            }
            Model::M4(m) => {
                let (am, nm) = m.modulation(self.now);
                let (x, av_t, na_t) = m3_step(
                    &m.base,
                    rng,
                    s,
                    self.av_type,
                    self.na_type,
                    am * self.scale.0,
                    nm * self.scale.1,
                );
                self.av_type = av_t;
                self.na_type = na_t;
                x
            }
            // M5 hands out its merged stream from `next`.
            Model::M5(_) => exp_sample(rng, 60.0),
        }
    }

    /// The chain type of the AV period generated last (M3/M4: 0 = short,
    /// 1 = medium, 2 = long).
    pub fn av_type(&self) -> usize {
        self.av_type
    }
}

impl Iterator for StationGen {
    type Item = Interval;
    fn next(&mut self) -> Option<Interval> {
        if let Some(m5) = self.m5.as_mut() {
            return m5.next();
        }
        let s = self.next_state;
        // At least one microsecond, so time always advances.
        let len = mins(self.draw(s)).max(Dur(1));
        let iv = Interval {
            start: self.now,
            end: self.now + len,
            state: s,
        };
        self.now = iv.end;
        self.next_state = s.other();
        Some(iv)
    }
}

fn pick_row(rng: &mut PolicyRng, row: &[f64]) -> usize {
    let total: f64 = row.iter().sum();
    let u: f64 = rng.random::<f64>() * total;
    let mut acc = 0.0;
    for (i, p) in row.iter().enumerate() {
        acc += p;
        if u < acc {
            return i;
        }
    }
    row.len() - 1
}

/// Stationary distribution of a 3-state chain by power iteration.
fn stationary3(m: &[[f64; 3]; 3]) -> [f64; 3] {
    let mut p = [1.0 / 3.0; 3];
    for _ in 0..500 {
        let mut q = [0.0; 3];
        for (i, row) in m.iter().enumerate() {
            let s: f64 = row.iter().sum();
            for j in 0..3 {
                q[j] += p[i] * row[j] / s;
            }
        }
        p = q;
    }
    p
}

fn stationary2(m: &[[f64; 2]; 2]) -> [f64; 2] {
    let a = m[0][1] / (m[0][0] + m[0][1]);
    let b = m[1][0] / (m[1][0] + m[1][1]);
    if a + b <= 0.0 {
        [1.0, 0.0]
    } else {
        [b / (a + b), a / (a + b)]
    }
}

fn stationary_pick3(rng: &mut PolicyRng, m: &[[f64; 3]; 3]) -> usize {
    pick_row(rng, &stationary3(m))
}
fn stationary_pick2(rng: &mut PolicyRng, m: &[[f64; 2]; 2]) -> usize {
    pick_row(rng, &stationary2(m))
}

/// One M3 draw in state `s`: advance that state's type chain, then draw an
/// exponential with the new type's mean (scaled). Returns (length, av type,
/// na type).
fn m3_step(
    m: &M3,
    rng: &mut PolicyRng,
    s: State,
    av_type: usize,
    na_type: usize,
    av_scale: f64,
    na_scale: f64,
) -> (f64, usize, usize) {
    match s {
        State::Av => {
            let t = pick_row(rng, &m.av_matrix[av_type.min(2)]);
            (exp_sample(rng, m.av_means[t] * av_scale), t, na_type)
        }
        State::Na => {
            let t = pick_row(rng, &m.na_matrix[na_type.min(1)]);
            let mean = m.na_means[t] * na_scale;
            (exp_sample(rng, mean).max(m.na_floor), av_type, t)
        }
    }
}

/// Mean AV and NA lengths (minutes) of the M3 base with scales.
fn m3_means(m: &M3, a: f64, b: f64) -> (f64, f64) {
    let pa = stationary3(&m.av_matrix);
    let pn = stationary2(&m.na_matrix);
    let av: f64 = (0..3).map(|i| pa[i] * m.av_means[i] * a).sum();
    let na = Hyperexp {
        weights: pn.to_vec(),
        means: m.na_means.iter().map(|x| x * b).collect(),
    }
    .mean_clamped(m.na_floor);
    (av, na)
}

/// Solves `b` so that `a·E[AV] / (a·E[AV] + E[NA](b)) = p` (bisection on a
/// log scale; `E[NA]` grows with `b`).
fn solve_na_scale(m: &M3, a: f64, p: f64) -> f64 {
    let want_na = m3_means(m, a, 1.0).0 * (1.0 - p) / p;
    let (mut lo, mut hi) = (1e-4f64, 1e4f64);
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if m3_means(m, a, mid).1 < want_na {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo * hi).sqrt()
}

/// Per-station (AV scale, NA scale) of M4: analytic start, then two pilot
/// corrections with a fixed seed so the modulated process meets the target.
fn m4_calibrate(m4: &M4, station: u32) -> (f64, f64) {
    let p = m4.target(station);
    let (av0, na0) = m3_means(&m4.base, 1.0, 1.0);
    let base_p = av0 / (av0 + na0);
    let odds = |x: f64| x / (1.0 - x);
    let mut r = odds(p) / odds(base_p);
    for _ in 0..3 {
        let a = r.sqrt();
        let b = solve_na_scale(
            &m4.base,
            a,
            (odds(base_p) * r / (1.0 + odds(base_p) * r)).clamp(0.005, 0.995),
        );
        let achieved = m4_pilot(m4, a, b);
        let achieved = achieved.clamp(0.005, 0.995);
        r *= odds(p) / odds(achieved);
    }
    let a = r.sqrt();
    let b = solve_na_scale(
        &m4.base,
        a,
        (odds(base_p) * r / (1.0 + odds(base_p) * r)).clamp(0.005, 0.995),
    );
    (a, b)
}

/// Long-run AV fraction of M4 with the given scales (pilot: 150 days,
/// fixed seed, independent of the run seed).
fn m4_pilot(m4: &M4, a: f64, b: f64) -> f64 {
    let mut g = StationGen {
        model: Model::M4(Box::new(m4.clone())),
        rng: substream(0x4d34_7069_6c6f_7421, 0),
        now: Time::ZERO,
        next_state: State::Av,
        av_type: 1,
        na_type: 0,
        scale: (a, b),
        m5: None,
    };
    let horizon = Time(150 * 86_400_000_000);
    let (mut av, mut total) = (0u64, 0u64);
    for iv in g.by_ref() {
        let end = iv.end.min(horizon);
        let d = end.since(iv.start).0;
        total += d;
        if iv.state == State::Av {
            av += d;
        }
        if iv.end >= horizon {
            break;
        }
    }
    if total == 0 {
        0.5
    } else {
        av as f64 / total as f64
    }
}

// ---------------------------------------------------------------------------
// Traces
// ---------------------------------------------------------------------------

/// A recorded (or generated) availability history of several stations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// Station names, indexed by dense station id.
    pub names: Vec<String>,
    /// Intervals per station, in time order, non-overlapping.
    pub stations: Vec<Vec<Interval>>,
}

/// Parses seconds with up to 6 fractional digits exactly into µs.
fn parse_secs(s: &str) -> Result<Time, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty time".into());
    }
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(format!("bad time {s:?}"));
    }
    if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("bad time {s:?}: expected non-negative seconds"));
    }
    if frac.len() > 6 {
        return Err(format!("bad time {s:?}: more than 6 fractional digits"));
    }
    let i: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| format!("bad time {s:?}"))?
    };
    let mut f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| format!("bad time {s:?}"))?
    };
    for _ in frac.len()..6 {
        f *= 10;
    }
    i.checked_mul(1_000_000)
        .and_then(|x| x.checked_add(f))
        .map(Time)
        .ok_or_else(|| format!("time {s:?} out of range"))
}

/// Formats µs as seconds, exact, without trailing zeros.
fn fmt_secs(t: Time) -> String {
    let (i, f) = (t.0 / 1_000_000, t.0 % 1_000_000);
    if f == 0 {
        i.to_string()
    } else {
        let s = format!("{i}.{f:06}");
        s.trim_end_matches('0').to_string()
    }
}

impl Trace {
    /// Loads a trace CSV (format in the module documentation).
    pub fn load(path: &Path) -> Result<Trace, SimError> {
        let f = std::fs::File::open(path).map_err(|e| SimError::io(path, e))?;
        Trace::parse(std::io::BufReader::new(f), &path.display().to_string())
    }

    /// Parses a trace from `reader`; `origin` names it in errors.
    pub fn parse(reader: impl BufRead, origin: &str) -> Result<Trace, SimError> {
        let err = |line: u64, msg: String| SimError::Trace {
            path: origin.to_string(),
            line,
            msg,
        };
        let mut t = Trace::default();
        let mut ids: HashMap<String, usize> = HashMap::new();
        let mut header_seen = false;
        for (i, line) in reader.lines().enumerate() {
            let no = i as u64 + 1;
            let line = line.map_err(|e| err(no, format!("read error: {e}")))?;
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = l.split(',').map(str::trim).collect();
            if !header_seen {
                let want = ["station", "start", "end", "state"];
                if fields.len() != 4
                    || fields
                        .iter()
                        .zip(want)
                        .any(|(a, b)| !a.eq_ignore_ascii_case(b))
                {
                    return Err(err(
                        no,
                        format!("expected header \"station,start,end,state\", found {l:?}"),
                    ));
                }
                header_seen = true;
                continue;
            }
            if fields.len() != 4 {
                return Err(err(
                    no,
                    format!("expected 4 fields, found {}", fields.len()),
                ));
            }
            let name = fields[0];
            if name.is_empty() {
                return Err(err(no, "empty station name".into()));
            }
            let start = parse_secs(fields[1]).map_err(|m| err(no, format!("start: {m}")))?;
            let end = parse_secs(fields[2]).map_err(|m| err(no, format!("end: {m}")))?;
            let state = match fields[3].to_ascii_uppercase().as_str() {
                "AV" => State::Av,
                "NA" => State::Na,
                s => return Err(err(no, format!("state must be AV or NA, found {s:?}"))),
            };
            if end <= start {
                return Err(err(no, format!("end {} ≤ start {}", fields[2], fields[1])));
            }
            let id = match ids.get(name) {
                Some(&id) => id,
                None => {
                    let id = t.names.len();
                    ids.insert(name.to_string(), id);
                    t.names.push(name.to_string());
                    t.stations.push(Vec::new());
                    id
                }
            };
            let list = &mut t.stations[id];
            if let Some(prev) = list.last()
                && start < prev.end
            {
                return Err(err(
                    no,
                    format!(
                        "station {name:?}: interval starting at {} overlaps or precedes the previous one ending at {}",
                        fields[1],
                        fmt_secs(prev.end)
                    ),
                ));
            }
            list.push(Interval { start, end, state });
        }
        if !header_seen {
            return Err(err(0, "empty trace: no header".into()));
        }
        Ok(t)
    }

    /// Writes the trace as CSV (same format as [`Trace::load`] reads),
    /// stations in id order.
    pub fn write_csv(&self, path: &Path) -> Result<(), SimError> {
        let f = std::fs::File::create(path).map_err(|e| SimError::io(path, e))?;
        let mut w = std::io::BufWriter::new(f);
        self.write_to(&mut w).map_err(|e| SimError::io(path, e))?;
        w.flush().map_err(|e| SimError::io(path, e))
    }

    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        writeln!(w, "station,start,end,state")?;
        for (name, ivs) in self.names.iter().zip(&self.stations) {
            for iv in ivs {
                writeln!(
                    w,
                    "{},{},{},{}",
                    name,
                    fmt_secs(iv.start),
                    fmt_secs(iv.end),
                    iv.state.as_str()
                )?;
            }
        }
        Ok(())
    }

    /// Generates `n` stations of `model` over `[0, horizon)` (the last
    /// interval is cut at the horizon). Station names are `0`, `1`, ….
    pub fn generate(model: &Model, seed: u64, n: u32, horizon: Time) -> Trace {
        let mut t = Trace::default();
        for s in 0..n {
            t.names.push(s.to_string());
            let mut v = Vec::new();
            for mut iv in model.station(seed, s) {
                if iv.start >= horizon {
                    break;
                }
                iv.end = iv.end.min(horizon);
                v.push(iv);
            }
            t.stations.push(v);
        }
        t
    }

    /// The end of the last interval over all stations.
    pub fn end(&self) -> Time {
        self.stations
            .iter()
            .filter_map(|v| v.last().map(|iv| iv.end))
            .max()
            .unwrap_or(Time::ZERO)
    }

    /// Station `s`'s history as contiguous alternating intervals from 0 to
    /// `until` (gaps and the time after the trace become NA; adjacent
    /// equal states merge).
    pub fn contiguous(&self, s: usize, until: Time) -> Vec<Interval> {
        let src = self.stations.get(s).map(Vec::as_slice).unwrap_or(&[]);
        contiguous(src.iter().copied(), until)
    }
}

/// Normalises a time-ordered interval sequence into contiguous alternating
/// intervals covering `[0, until)`; gaps are NA.
pub fn contiguous(src: impl IntoIterator<Item = Interval>, until: Time) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    let push = |out: &mut Vec<Interval>, iv: Interval| {
        if iv.end <= iv.start {
            return;
        }
        if let Some(last) = out.last_mut()
            && last.state == iv.state
            && last.end == iv.start
        {
            last.end = iv.end;
            return;
        }
        out.push(iv);
    };
    let mut now = Time::ZERO;
    for iv in src {
        if now >= until {
            break;
        }
        if iv.start > now {
            push(
                &mut out,
                Interval {
                    start: now,
                    end: iv.start.min(until),
                    state: State::Na,
                },
            );
        }
        let s = iv.start.max(now);
        let e = iv.end.min(until);
        push(
            &mut out,
            Interval {
                start: s,
                end: e,
                state: iv.state,
            },
        );
        now = now.max(e);
    }
    if now < until {
        push(
            &mut out,
            Interval {
                start: now,
                end: until,
                state: State::Na,
            },
        );
    }
    out
}

/// Where a simulation gets station availability from.
#[derive(Clone, Debug)]
pub enum Source {
    Model(Model),
    Trace(std::sync::Arc<Trace>),
}

impl Source {
    /// Builds the source from experiment options: a trace file wins over a
    /// model name; otherwise `default`.
    pub fn from_opts(
        trace: Option<&Path>,
        model: Option<&str>,
        default: Model,
    ) -> Result<Source, SimError> {
        if let Some(p) = trace {
            return Ok(Source::Trace(std::sync::Arc::new(Trace::load(p)?)));
        }
        match model {
            Some(m) => Ok(Source::Model(Model::parse(m)?)),
            None => Ok(Source::Model(default)),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Source::Model(m) => format!("model {}", m.name()),
            Source::Trace(t) => format!("trace ({} stations)", t.names.len()),
        }
    }

    /// Station `s`'s availability for run `seed`, as an endless or finite
    /// iterator of time-ordered intervals. Trace stations beyond the trace's
    /// station count wrap around (station `s` replays `s mod n`).
    pub fn station(&self, seed: u64, s: u32) -> Box<dyn Iterator<Item = Interval> + Send> {
        match self {
            Source::Model(m) => Box::new(m.station(seed, s)),
            Source::Trace(t) => {
                let n = t.stations.len().max(1);
                let v = t.stations.get(s as usize % n).cloned().unwrap_or_default();
                Box::new(v.into_iter())
            }
        }
    }
}

/// Minutes as f64 of a duration (convenience for statistics).
pub fn dur_mins(d: Dur) -> f64 {
    d.0 as f64 / MINUTE_US
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secs_parse_and_format_exactly() {
        assert_eq!(parse_secs("12").unwrap(), Time(12_000_000));
        assert_eq!(parse_secs("0.5").unwrap(), Time(500_000));
        assert_eq!(parse_secs("1.000001").unwrap(), Time(1_000_001));
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("1.0000001").is_err());
        assert_eq!(fmt_secs(Time(1_500_000)), "1.5");
        assert_eq!(fmt_secs(Time(7_000_000)), "7");
    }

    #[test]
    fn m2_means_match_the_derived_values() {
        let m = M2::default();
        assert!((m.av().mean() - 83.96).abs() < 0.01);
        assert!((m.na_raw().mean_clamped(7.0) - 24.25).abs() < 0.01);
        assert!((m.na_raw().cdf(7.0) - 0.4681).abs() < 1e-3);
        assert!((m.av().cdf(9.0) - 0.4442).abs() < 1e-3);
    }

    #[test]
    fn calendar() {
        assert_eq!(month_of(Time::ZERO), 0);
        assert_eq!(month_of(month_start(1)), 1);
        assert_eq!(month_of(Time(month_start(1).0 - 1)), 0);
        assert_eq!(month_start(5).0 / 86_400_000_000, 153);
        assert_eq!(day_of_week(Time(5 * 86_400_000_000)), 5);
    }

    #[test]
    fn m4_calibration_hits_targets() {
        let m = M4::default();
        for s in [1u32, 4] {
            let t = Trace::generate(
                &Model::M4(Box::new(m.clone())),
                3,
                s + 1,
                Time(150 * 86_400_000_000),
            );
            let ivs = &t.stations[s as usize];
            let (mut av, mut tot) = (0u64, 0u64);
            for iv in ivs {
                tot += iv.len().0;
                if iv.state == State::Av {
                    av += iv.len().0;
                }
            }
            let p = av as f64 / tot as f64;
            assert!((p - m.target(s)).abs() < 0.06, "station {s}: {p}");
        }
    }

    #[test]
    fn contiguous_fills_gaps_with_na() {
        let ivs = vec![
            Interval {
                start: Time(10),
                end: Time(20),
                state: State::Av,
            },
            Interval {
                start: Time(20),
                end: Time(30),
                state: State::Av,
            },
        ];
        let c = contiguous(ivs, Time(40));
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].state, State::Na);
        assert_eq!(
            c[1],
            Interval {
                start: Time(10),
                end: Time(30),
                state: State::Av
            }
        );
        assert_eq!(c[2].end, Time(40));
    }
}
