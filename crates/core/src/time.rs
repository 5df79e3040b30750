//! Time as policies see it.
//!
//! Policies never read a clock: callers pass the current [`Time`]. The
//! daemons derive it from the system clock, the simulator from its event
//! queue. Resolution is one microsecond, which keeps a simulated century in a
//! `u64` and is fine enough for millisecond-scale reaction measurements.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant, in microseconds since an epoch chosen by the caller
/// (the UNIX epoch in daemons, simulation start in the simulator).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Time(pub u64);

/// A non-negative span of time in microseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Dur(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_micros(us: u64) -> Self {
        Time(us)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Time(ms.saturating_mul(1_000))
    }
    pub const fn from_secs(s: u64) -> Self {
        Time(s.saturating_mul(1_000_000))
    }
    pub fn from_secs_f64(s: f64) -> Self {
        Time(Dur::from_secs_f64(s).0)
    }
    pub const fn as_micros(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Time elapsed since `earlier`, zero if `earlier` is in the future.
    pub const fn since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const MAX: Dur = Dur(u64::MAX);

    pub const fn from_micros(us: u64) -> Self {
        Dur(us)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Dur(ms.saturating_mul(1_000))
    }
    pub const fn from_secs(s: u64) -> Self {
        Dur(s.saturating_mul(1_000_000))
    }
    pub const fn from_mins(m: u64) -> Self {
        Dur(m.saturating_mul(60_000_000))
    }
    pub const fn from_hours(h: u64) -> Self {
        Dur(h.saturating_mul(3_600_000_000))
    }
    /// Converts seconds to a duration; negative and NaN become zero, and
    /// values beyond the range saturate (so an infinite linger time is `MAX`).
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Dur(0)
        } else {
            let us = s * 1e6;
            if us >= u64::MAX as f64 {
                Dur(u64::MAX)
            } else {
                Dur(us.round() as u64)
            }
        }
    }
    pub const fn as_micros(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn as_mins_f64(self) -> f64 {
        self.0 as f64 / 60e6
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Time> for Time {
    type Output = Dur;
    fn sub(self, rhs: Time) -> Dur {
        self.since(rhs)
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Dur {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}s", self.as_secs_f64())
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:.3}s", self.as_secs_f64())
    }
}

/// Source of the current time. The core never implements this against the
/// wall clock; daemons do, and tests and the simulator use [`ManualClock`].
pub trait Clock {
    fn now(&self) -> Time;
}

/// A clock that only moves when told to. Used by tests and the simulator.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: std::cell::Cell<Time>,
}

impl ManualClock {
    pub fn new(start: Time) -> Self {
        ManualClock {
            now: std::cell::Cell::new(start),
        }
    }
    pub fn set(&self, t: Time) {
        self.now.set(t);
    }
    pub fn advance(&self, d: Dur) {
        self.now.set(self.now.get() + d);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Time {
        self.now.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip() {
        assert_eq!(Dur::from_mins(5), Dur::from_secs(300));
        assert_eq!(Dur::from_secs_f64(1.5), Dur::from_millis(1500));
        assert_eq!(Dur::from_secs_f64(f64::INFINITY), Dur::MAX);
        assert_eq!(Dur::from_secs_f64(-3.0), Dur::ZERO);
        assert_eq!(Time::from_secs(10) - Time::from_secs(4), Dur::from_secs(6));
        assert_eq!(Time::from_secs(4) - Time::from_secs(10), Dur::ZERO);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Time::from_secs(1));
        assert_eq!(c.now(), Time::from_secs(1));
        c.advance(Dur::from_secs(2));
        assert_eq!(c.now(), Time::from_secs(3));
    }
}
