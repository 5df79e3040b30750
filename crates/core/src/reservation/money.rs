//! Reservation money and rates as exact integers.
//!
//! The free market moves money between stations, the coordinator's bank
//! and reservations' escrow (Mutka 1988 §6.3.1, seeds/000… L1023,
//! L1050–1062). Amounts are kept in millionths of a unit so that rates such
//! as 75 % or ½ apply without rounding drift, and so that "money is
//! conserved" is an exact equality the tests can check after every step.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Neg, Sub, SubAssign};

/// An amount of P or NP money in micro-units (1 unit = 1 000 000).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Money(pub i64);

/// Micro-units in one unit of money.
pub const UNIT: i64 = 1_000_000;

impl Money {
    pub const ZERO: Money = Money(0);

    /// `n` whole units.
    pub const fn units(n: i64) -> Money {
        Money(n.saturating_mul(UNIT))
    }
    /// From a decimal number of units (rounded to the micro-unit).
    pub fn from_f64(x: f64) -> Money {
        if x.is_nan() {
            return Money::ZERO;
        }
        Money(
            (x * UNIT as f64)
                .round()
                .clamp(i64::MIN as f64, i64::MAX as f64) as i64,
        )
    }
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / UNIT as f64
    }
    /// `self × n` (saturating).
    pub fn times(self, n: u64) -> Money {
        Money(self.0.saturating_mul(i64::try_from(n).unwrap_or(i64::MAX)))
    }
    /// `self × rate`, rounded down to the micro-unit (towards zero).
    pub fn scale(self, r: Rate) -> Money {
        Money(((i128::from(self.0) * i128::from(r.0)) / i128::from(Rate::ONE.0)) as i64)
    }
    /// `self × num / den` rounded towards zero; zero when `den` is zero.
    pub fn share(self, num: u64, den: u64) -> Money {
        if den == 0 {
            return Money::ZERO;
        }
        Money(((i128::from(self.0) * i128::from(num)) / i128::from(den)) as i64)
    }
    pub fn min(self, o: Money) -> Money {
        if self <= o { self } else { o }
    }
    pub fn max(self, o: Money) -> Money {
        if self >= o { self } else { o }
    }
    pub fn is_negative(self) -> bool {
        self.0 < 0
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        let whole = a / UNIT as u64;
        let frac = a % UNIT as u64;
        if frac == 0 {
            write!(f, "{sign}{whole}")
        } else {
            let s = format!("{frac:06}");
            write!(f, "{sign}{whole}.{}", s.trim_end_matches('0'))
        }
    }
}

impl Add for Money {
    type Output = Money;
    fn add(self, o: Money) -> Money {
        Money(self.0.saturating_add(o.0))
    }
}
impl Sub for Money {
    type Output = Money;
    fn sub(self, o: Money) -> Money {
        Money(self.0.saturating_sub(o.0))
    }
}
impl AddAssign for Money {
    fn add_assign(&mut self, o: Money) {
        *self = *self + o;
    }
}
impl SubAssign for Money {
    fn sub_assign(&mut self, o: Money) {
        *self = *self - o;
    }
}
impl Neg for Money {
    type Output = Money;
    fn neg(self) -> Money {
        Money(self.0.saturating_neg())
    }
}
impl Sum for Money {
    fn sum<I: Iterator<Item = Money>>(it: I) -> Money {
        it.fold(Money::ZERO, |a, b| a + b)
    }
}

/// A rate in parts per million (so 75 % is `Rate(750_000)`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Rate(pub u32);

impl Rate {
    pub const ZERO: Rate = Rate(0);
    pub const ONE: Rate = Rate(1_000_000);
    pub const fn percent(p: u32) -> Rate {
        Rate(p.saturating_mul(10_000))
    }
    /// From a fraction (0.75 → 75 %), clamped to [0, 1].
    pub fn from_fraction(x: f64) -> Rate {
        if x.is_nan() {
            return Rate::ZERO;
        }
        Rate((x.clamp(0.0, 1.0) * 1e6).round() as u32)
    }
    pub fn as_fraction(self) -> f64 {
        f64::from(self.0) / 1e6
    }
    /// `floor(self × n)`: how many of `n` machines this share allows.
    pub fn of_count(self, n: u32) -> u32 {
        ((u64::from(self.0) * u64::from(n)) / u64::from(Rate::ONE.0)) as u32
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", f64::from(self.0) / 1e4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_percentages() {
        assert_eq!(Money::units(1).scale(Rate::percent(75)), Money(750_000));
        assert_eq!(
            Money::units(2).scale(Rate::from_fraction(0.5)),
            Money::units(1)
        );
        assert_eq!(Money(750_001).to_string(), "0.750001");
        assert_eq!(Money::units(-3).to_string(), "-3");
        assert_eq!(Money::from_f64(0.875).to_string(), "0.875");
        assert_eq!(Rate::percent(40).of_count(23), 9);
        assert_eq!(Money::units(10).share(1, 3), Money(3_333_333));
    }
}
