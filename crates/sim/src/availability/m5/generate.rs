//! M5's generators: the owner's time-stretched chain, the long local jobs'
//! spells, the shared hourly mood `Z`, and their merge into one station's
//! alternating AV/NA intervals.

use super::super::{Interval, M3, State, exp_sample};
use super::{M5, Targets};
use gleaner_core::rng::{PolicyRng, Rng, substream};
use gleaner_core::time::{Dur, Time};
use rand_distr::{Distribution, StandardNormal};

const HOUR_US: u64 = 3_600_000_000;
const MIN_US: f64 = 60e6;
/// Log-odds are kept in this range (availability between 1e-6 and
/// 1 − 1e-6), so every hazard stays finite and positive.
const L_MAX: f64 = 14.0;
const LATENT_STREAM: u64 = 0x4d35_6c61_7465_6e74;
const SPELL_STREAM: u64 = 0x4d35_7370_656c_6c00;
const AWAY_STREAM: u64 = 0x4d35_6177_6179_0000;
/// Seeds of the calibration pilots: fixed, apart from any run's.
pub(super) const PILOT_SEED: u64 = 0x4d35_7069_6c6f_7431;

/// The shared hourly log-odds `Z`: an AR(1) drawn hour by hour from the
/// run seed alone, so every station of a run sees the same path.
#[derive(Clone, Debug)]
pub(super) struct Latent {
    rng: PolicyRng,
    sd: f64,
    corr: f64,
    hour: u64,
    z: f64,
}

impl Latent {
    pub(super) fn new(seed: u64, sd: f64, corr: f64) -> Self {
        let mut rng = substream(seed, LATENT_STREAM);
        let n: f64 = StandardNormal.sample(&mut rng);
        Latent {
            rng,
            sd,
            corr,
            hour: 0,
            z: sd * n,
        }
    }

    /// `Z` in hour `h` (hours only move forward).
    pub(super) fn at(&mut self, h: u64) -> f64 {
        if self.sd == 0.0 {
            return 0.0;
        }
        while self.hour < h {
            let n: f64 = StandardNormal.sample(&mut self.rng);
            self.z = self.corr * self.z + (1.0 - self.corr * self.corr).sqrt() * self.sd * n;
            self.hour += 1;
        }
        self.z
    }
}

/// Where the owner's offset comes from: the calibrated table, or one group
/// held fixed (a calibration pilot of that group).
#[derive(Clone, Debug)]
pub(super) struct Offsets {
    pub targets: Targets,
    pub offset: [f64; 6],
    pub fixed_group: Option<usize>,
}

impl Offsets {
    fn at(&self, t: Time) -> f64 {
        let g = self
            .fixed_group
            .unwrap_or_else(|| self.targets.group(t))
            .min(5);
        self.offset[g]
    }
}

/// The owner's process: M3's chain with lengths stretched hour by hour.
#[derive(Clone, Debug)]
pub(super) struct Owner {
    model: M5,
    offsets: Offsets,
    latent: Latent,
    rng: PolicyRng,
    now: Time,
    state: State,
    av_type: usize,
    na_type: usize,
}

impl Owner {
    pub(super) fn new(model: &M5, offsets: Offsets, latent: Latent, mut rng: PolicyRng) -> Self {
        let p_av = offsets.targets.availability(0);
        let u: f64 = rng.random();
        let state = if u < p_av { State::Av } else { State::Na };
        let av_type = pick(&mut rng, &stationary3(&model.base.av_matrix));
        let na_type = pick(&mut rng, &stationary2(&model.base.na_matrix));
        Owner {
            model: model.clone(),
            offsets,
            latent,
            rng,
            now: Time::ZERO,
            state,
            av_type,
            na_type,
        }
    }

    /// NA log-odds (relative to the base chain) in the hour starting at `t`.
    fn log_odds(&mut self, t: Time) -> f64 {
        let l = self.offsets.at(t) + self.model.shape(t) + self.latent.at(t.0 / HOUR_US);
        l.clamp(-L_MAX, L_MAX)
    }

    /// The end of a period in `state` of base mean `mean` (minutes) that
    /// starts at `start`: an exponential whose hazard is constant within
    /// each clock hour and set by that hour's log-odds.
    fn end_of(&mut self, start: Time, mean: f64, state: State) -> Time {
        let split = self.model.split;
        let mut budget = exp_sample(&mut self.rng, 1.0);
        let mut t = start;
        // Ten years at most (a target of 0 % or 100 % over a long run).
        let cap = start + Dur(10 * 365 * 24 * HOUR_US);
        while t < cap {
            let next_hour = Time((t.0 / HOUR_US + 1) * HOUR_US);
            let l = self.log_odds(t);
            let scale = match state {
                State::Av => (-split * l).exp(),
                State::Na => ((1.0 - split) * l).exp(),
            };
            let rate_per_us = 1.0 / (mean * scale * MIN_US);
            let span = next_hour.since(t).0 as f64;
            if budget <= rate_per_us * span {
                let d = (budget / rate_per_us).ceil().max(1.0) as u64;
                return t + Dur(d);
            }
            budget -= rate_per_us * span;
            t = next_hour;
        }
        cap
    }

    fn next_interval(&mut self) -> Interval {
        let start = self.now;
        let m: &M3 = &self.model.base;
        let end = match self.state {
            State::Av => {
                let stay: f64 = self.rng.random();
                if stay >= self.model.av_persistence {
                    self.av_type = pick(&mut self.rng, &m.av_matrix[self.av_type.min(2)]);
                }
                let mean = m.av_means[self.av_type];
                self.end_of(start, mean, State::Av)
            }
            State::Na => {
                self.na_type = pick(&mut self.rng, &m.na_matrix[self.na_type.min(1)]);
                let mean = m.na_means[self.na_type];
                let floor = start + Dur((m.na_floor * MIN_US) as u64);
                self.end_of(start, mean, State::Na).max(floor)
            }
        };
        let iv = Interval {
            start,
            end: end.max(start + Dur(1)),
            state: self.state,
        };
        self.now = iv.end;
        self.state = self.state.other();
        iv
    }
}

impl Iterator for Owner {
    type Item = Interval;
    fn next(&mut self) -> Option<Interval> {
        Some(self.next_interval())
    }
}

/// Long local jobs: alternating spells (NA) and gaps (AV), exponential,
/// the spells covering `share` of the time with mean `hours`.
#[derive(Clone, Debug)]
pub(super) struct Spells {
    rng: PolicyRng,
    on_mean: f64,
    off_mean: f64,
    now: Time,
    on: bool,
}

impl Spells {
    /// Long jobs of `station`.
    pub(super) fn new(seed: u64, station: u32, share: f64, hours: f64) -> Self {
        Spells::with_stream(
            seed,
            SPELL_STREAM.wrapping_add(u64::from(station)),
            share,
            hours,
        )
    }

    /// Absences of `station` (an interval "NA" here means away).
    pub(super) fn away(seed: u64, station: u32, share: f64, hours: f64) -> Self {
        Spells::with_stream(
            seed,
            AWAY_STREAM.wrapping_add(u64::from(station)),
            share,
            hours,
        )
    }

    fn with_stream(seed: u64, stream: u64, share: f64, hours: f64) -> Self {
        let mut rng = substream(seed, stream);
        let share = share.clamp(0.0, 0.999);
        let u: f64 = rng.random();
        Spells {
            rng,
            on_mean: hours * 60.0,
            off_mean: if share > 0.0 {
                hours * 60.0 * (1.0 - share) / share
            } else {
                f64::INFINITY
            },
            now: Time::ZERO,
            on: u < share,
        }
    }
}

impl Iterator for Spells {
    type Item = Interval;
    fn next(&mut self) -> Option<Interval> {
        let start = self.now;
        let mean = if self.on { self.on_mean } else { self.off_mean };
        let end = if mean.is_finite() {
            let mins = exp_sample(&mut self.rng, mean);
            start + Dur(((mins * MIN_US) as u64).max(1))
        } else {
            Time::MAX
        };
        let iv = Interval {
            start,
            end,
            state: if self.on { State::Na } else { State::Av },
        };
        self.now = end;
        self.on = !self.on;
        Some(iv)
    }
}

/// One M5 station: NA during a long job, or when its owner is NA and not
/// away; adjacent equal states coalesced.
#[derive(Clone, Debug)]
pub struct M5Gen {
    owner: Owner,
    spells: Spells,
    away: Spells,
    cur_owner: Interval,
    cur_spell: Interval,
    cur_away: Interval,
    now: Time,
}

const ALWAYS_AV: Interval = Interval {
    start: Time::ZERO,
    end: Time::MAX,
    state: State::Av,
};

impl M5Gen {
    pub(super) fn new(mut owner: Owner, mut spells: Spells, mut away: Spells) -> Self {
        let cur_owner = owner.next_interval();
        let cur_spell = spells.next().unwrap_or(ALWAYS_AV);
        let cur_away = away.next().unwrap_or(ALWAYS_AV);
        M5Gen {
            owner,
            spells,
            away,
            cur_owner,
            cur_spell,
            cur_away,
            now: Time::ZERO,
        }
    }

    /// The merged state at `t` and when any source next changes.
    fn at(&mut self, t: Time) -> (State, Time) {
        while self.cur_owner.end <= t {
            self.cur_owner = self.owner.next_interval();
        }
        while self.cur_spell.end <= t {
            match self.spells.next() {
                Some(iv) => self.cur_spell = iv,
                None => break,
            }
        }
        while self.cur_away.end <= t {
            match self.away.next() {
                Some(iv) => self.cur_away = iv,
                None => break,
            }
        }
        let away = self.cur_away.state == State::Na;
        let s = if self.cur_spell.state == State::Na || (self.cur_owner.state == State::Na && !away)
        {
            State::Na
        } else {
            State::Av
        };
        let next = self
            .cur_owner
            .end
            .min(self.cur_spell.end)
            .min(self.cur_away.end);
        (s, next)
    }
}

impl Iterator for M5Gen {
    type Item = Interval;
    fn next(&mut self) -> Option<Interval> {
        let start = self.now;
        let (state, mut end) = self.at(start);
        loop {
            if end == Time::MAX {
                break;
            }
            let (s, e) = self.at(end);
            if s != state {
                break;
            }
            end = e;
        }
        self.now = end;
        Some(Interval { start, end, state })
    }
}

fn pick(rng: &mut PolicyRng, row: &[f64]) -> usize {
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

/// Station `station`'s generator for run `seed` (calibrated offsets).
pub(super) fn station(m: &M5, seed: u64, station: u32) -> M5Gen {
    let (targets, spell) = m.targets(station);
    let away = m.away(&targets, spell);
    let offset = super::calibrate::offsets(m, &targets, spell, away);
    let owner = Owner::new(
        m,
        Offsets {
            targets,
            offset,
            fixed_group: None,
        },
        Latent::new(seed, m.latent_sd, m.latent_corr),
        substream(seed, u64::from(station)),
    );
    M5Gen::new(
        owner,
        Spells::new(seed, station, spell, m.spell_hours),
        Spells::away(seed, station, away, m.away_hours),
    )
}
