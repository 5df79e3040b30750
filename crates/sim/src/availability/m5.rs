//! M5: per-station spread **and** correlated busy hours.
//!
//! The paper's stations range from 29 % to 90 % available (Table 1,
//! seeds/003_0d675f08666827bf.txt L243–261) and the pool has busy hours
//! in which many stations are NA together: SU_60 ≥ 50 % in 12.8 % of
//! hours (Table 3, L314–326), where independent stations give far fewer
//! (M2 0.8 %, M4 6.1 %). The paper calls the stations "independent" from
//! the shape of Fig. 12 (L312), but the tail says otherwise; Mutka proposes
//! per-station and time-of-day models as future work (T:L543). M5 is ours:
//!
//! - **Per station**: M4 (M3's correlated AV/NA chain, per-station scale,
//!   weekday/weekend hour-of-day modulation), with each station's target
//!   raised so that, after the episodes below, its long-run availability is
//!   its Table 1 average again.
//! - **Pool-wide busy episodes**: one shared stream of episodes (a
//!   Poisson process whose rate follows the hour of day, weekdays busier;
//!   lengths exponential with a 7-minute floor, the detector's minimum NA).
//!   A station joins each episode with probability `join`, independently,
//!   and is NA for the episode (meetings ending, a lab session, a deadline:
//!   owners active together). The episodes are drawn from the run seed
//!   alone, so every station sees the same ones.
//!
//! Defaults were tuned with `glean sim profile --model m5` against Table 3's
//! SU_60 tail and Table 1's spread (docs in the profile summary).

use super::{Interval, M4, Model, State, StationGen, day_of_week, exp_sample, hour_of_day, mins};
use gleaner_core::rng::{PolicyRng, Rng, substream};
use gleaner_core::time::{Dur, Time};

/// M5's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct M5 {
    /// The per-station model (targets are Table 1's averages).
    pub base: M4,
    /// Episodes per hour, by hour of day, on weekdays and on weekends.
    pub weekday_rate: [f64; 24],
    pub weekend_rate: [f64; 24],
    /// Mean episode length in minutes (floor 7).
    pub mean_len: f64,
    /// Probability a station joins an episode.
    pub join: f64,
}

impl Default for M5 {
    fn default() -> Self {
        let mut wd = [0.0; 24];
        for (h, r) in wd.iter_mut().enumerate() {
            *r = 1.7
                * match h {
                    0..=7 => 0.02,
                    8..=10 => 0.10,
                    11..=12 => 0.12,
                    13..=16 => 0.18,
                    // Evenings quieter than the day, as in Table 6.1 of the
                    // thesis (weekday utilisation 32 % day, 20 % evening).
                    17..=19 => 0.04,
                    _ => 0.02,
                };
        }
        let mut we = [0.0; 24];
        for (h, r) in we.iter_mut().enumerate() {
            *r = 1.7
                * match h {
                    14..=17 => 0.06,
                    10..=13 | 18..=21 => 0.04,
                    _ => 0.01,
                };
        }
        M5 {
            base: M4::default(),
            weekday_rate: wd,
            weekend_rate: we,
            mean_len: 80.0,
            join: 0.7,
        }
    }
}

const EPISODE_STREAM: u64 = 0x4d35_6570_6973_6f64;
const JOIN_STREAM: u64 = 0x4d35_6a6f_696e_0000;

impl M5 {
    fn rate(&self, t: Time) -> f64 {
        let h = hour_of_day(t) as usize;
        if day_of_week(t) < 5 {
            self.weekday_rate[h]
        } else {
            self.weekend_rate[h]
        }
    }

    /// Long-run fraction of time inside episodes (a week of hours).
    fn episode_share(&self) -> f64 {
        let week: f64 = (0..168)
            .map(|h| {
                let t = Time(h as u64 * 3_600_000_000);
                self.rate(t)
            })
            .sum::<f64>()
            / 168.0;
        // Episodes per hour × mean length in hours, as a busy fraction
        // (overlaps make it slightly smaller: 1 − e^{−x}).
        let len = self.mean_len.max(7.0) / 60.0;
        1.0 - (-week * len).exp()
    }

    /// Station generator for run `seed`.
    pub(super) fn station(&self, seed: u64, station: u32) -> M5Gen {
        let mut base = self.base.clone();
        // Raise each target so that joining episodes brings it back down:
        // A = A_base × (1 − join × share).
        let loss = self.join * self.episode_share();
        base.targets = base
            .targets
            .iter()
            .map(|t| (t / (1.0 - loss)).min(0.985))
            .collect();
        let gen_ = Model::M4(Box::new(base)).station(seed, station);
        M5Gen {
            params: self.clone(),
            base: gen_,
            base_cur: None,
            episodes: substream(seed, EPISODE_STREAM),
            join_rng: substream(seed, JOIN_STREAM + u64::from(station)),
            ep_clock: Time::ZERO,
            ep_cur: None,
            now: Time::ZERO,
        }
    }
}

/// One station's M5 stream: the base intervals overlaid with the episodes
/// it joins, merged into alternating AV/NA intervals.
#[derive(Clone, Debug)]
pub struct M5Gen {
    params: M5,
    base: StationGen,
    base_cur: Option<Interval>,
    episodes: PolicyRng,
    join_rng: PolicyRng,
    /// Where the shared episode stream has been drawn to.
    ep_clock: Time,
    /// The next (or current) episode this station joins.
    ep_cur: Option<(Time, Time)>,
    now: Time,
}

impl M5Gen {
    /// The next pool-wide episode starting at or after `ep_clock` (thinning
    /// of a Poisson process at the hourly rate; the maximum rate bounds it).
    fn next_episode(&mut self) -> (Time, Time) {
        let max = self
            .params
            .weekday_rate
            .iter()
            .chain(self.params.weekend_rate.iter())
            .fold(1e-6f64, |a, b| a.max(*b));
        loop {
            let gap_h = exp_sample(&mut self.episodes, 1.0 / max);
            self.ep_clock += mins(gap_h * 60.0);
            let accept: f64 = self.episodes.random();
            let len = exp_sample(&mut self.episodes, self.params.mean_len).max(7.0);
            if accept * max < self.params.rate(self.ep_clock) {
                return (self.ep_clock, self.ep_clock + mins(len));
            }
        }
    }

    /// The next episode this station joins that ends after `now`.
    fn joined_episode(&mut self) -> (Time, Time) {
        loop {
            if let Some(e) = self.ep_cur
                && e.1 > self.now
            {
                return e;
            }
            let e = self.next_episode();
            let u: f64 = self.join_rng.random();
            if u < self.params.join {
                self.ep_cur = Some(e);
            }
        }
    }

    fn base_at(&mut self, t: Time) -> Interval {
        loop {
            if let Some(iv) = self.base_cur
                && iv.end > t
            {
                return iv;
            }
            self.base_cur = self.base.next();
            if self.base_cur.is_none() {
                return Interval {
                    start: t,
                    end: Time::MAX,
                    state: State::Na,
                };
            }
        }
    }

    /// State at `t` and when it may next change.
    fn state_at(&mut self, t: Time) -> (State, Time) {
        let b = self.base_at(t);
        let (es, ee) = self.joined_episode();
        let in_ep = es <= t && t < ee;
        if in_ep {
            // NA until the episode ends (the base may still be NA then).
            (State::Na, ee)
        } else if b.state == State::Na {
            (State::Na, b.end)
        } else {
            (State::Av, b.end.min(es))
        }
    }
}

impl Iterator for M5Gen {
    type Item = Interval;
    fn next(&mut self) -> Option<Interval> {
        let start = self.now;
        let (state, mut end) = self.state_at(start);
        // Coalesce pieces of the same state.
        loop {
            let end_guard = end.max(start + Dur(1));
            let (s, e) = self.state_at(end_guard);
            if s != state || e <= end_guard {
                end = end_guard;
                break;
            }
            end = e;
        }
        self.now = end;
        Some(Interval { start, end, state })
    }
}
