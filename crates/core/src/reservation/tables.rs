//! The reservation coordinator's tables (Mutka 1988 §6.3.3,
//! seeds/000_14c1149197e96532.txt L1086–1152): the System Table (one
//! [`StationEntry`] per station: owner, manual donations, state, client,
//! P_D, P_G, NP), the Accounting List (user → station), the Reservation
//! List ([`Reservation`]) and the Global Reservation Table (per slot, a
//! [`MaskState`] per station).

use super::money::Money;
use super::params::Calendar;
use crate::time::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A reservation class (L1025): 1st preempts 2nd and 3rd, 2nd preempts
/// 3rd, 3rd preempts 3rd of holders with less NP; 1st is never preempted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    First,
    Second,
    Third,
}

impl Class {
    /// 1, 2 or 3.
    pub fn number(self) -> u8 {
        match self {
            Class::First => 1,
            Class::Second => 2,
            Class::Third => 3,
        }
    }
    pub fn from_number(n: u8) -> Option<Class> {
        match n {
            1 => Some(Class::First),
            2 => Some(Class::Second),
            3 => Some(Class::Third),
            _ => None,
        }
    }
    /// Is this class paid in NP money?
    pub fn uses_np(self) -> bool {
        self == Class::Third
    }
}

/// A weekly donation window (Table 6.6's "Periodic 1/2", e.g. `M-F
/// 20:00-6:00`): on the days `first_day..=last_day` (0 = Monday, may wrap:
/// Sa-Su is 5..=6, F-Su 4..=6), from `from_min` to `to_min` minutes after
/// midnight. A window with `to_min <= from_min` runs past midnight into
/// the next day (L1108: "M-F from the hours of 8PM and 6AM").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub first_day: u8,
    pub last_day: u8,
    pub from_min: u16,
    pub to_min: u16,
}

impl Window {
    fn day_in(&self, d: u32) -> bool {
        let (a, b) = (u32::from(self.first_day), u32::from(self.last_day));
        if a <= b {
            (a..=b).contains(&d)
        } else {
            d >= a || d <= b
        }
    }
    /// Does the window cover instant `t`?
    pub fn covers(&self, cal: &Calendar, t: Time) -> bool {
        let m = cal.minute_of_day(t);
        let d = cal.weekday(t);
        let (f, to) = (u32::from(self.from_min), u32::from(self.to_min));
        if f < to {
            self.day_in(d) && m >= f && m < to
        } else {
            // Overnight: the evening part on a listed day, the morning part
            // on the day after a listed day.
            (self.day_in(d) && m >= f) || (self.day_in((d + 6) % 7) && m < to)
        }
    }
    pub fn validate(&self) -> Result<(), String> {
        if self.first_day > 6 || self.last_day > 6 {
            return Err("days are 0 (Monday) to 6 (Sunday)".into());
        }
        if self.from_min >= 1440 || self.to_min > 1440 {
            return Err("minutes are 0–1439 (to: up to 1440)".into());
        }
        if self.from_min == self.to_min {
            return Err("an empty window (from == to)".into());
        }
        Ok(())
    }
}

/// A station's state in the System Table (L1110).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StationState {
    /// Not in the processor bank (its owner is using it).
    Na,
    /// In the bank, not allocated.
    Av,
    /// Allocated to a user, not as a time reservation (a guest job).
    Frn,
    /// Serving a reservation.
    Res,
    /// Not reserved, but available for a specific reservation.
    Nr,
}

/// One P/NP account set (Table 6.6's P_D, P_G, NP columns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounts {
    /// P money from daily income (capped by Maximum_income, L1052).
    pub p_d: Money,
    /// P money from capital gains (no cap).
    pub p_g: Money,
    /// NP money held (not committed to 3rd-class reservations).
    pub np: Money,
}

impl Accounts {
    pub fn p(&self) -> Money {
        self.p_d + self.p_g
    }
}

/// One row of the System Table (Table 6.6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StationEntry {
    pub owner: String,
    /// A public station without an owner: always reservable (stations H and
    /// I of Table 6.6, L1090).
    pub public: bool,
    /// Donated globally until this instant (Table 6.6's "Global Donation";
    /// `None` is the table's −1).
    pub global_donation: Option<Time>,
    /// Weekly donation windows (at most `max_periodic_windows`).
    pub periodic: Vec<Window>,
    pub state: StationState,
    /// The user currently consuming cycles on it, if any.
    pub client: Option<String>,
    pub accounts: Accounts,
    /// NP endowment fixed when the station joined: `np` + NP committed to
    /// its live 3rd-class reservations always equals this (L1050).
    pub np_endowment: Money,
}

impl StationEntry {
    /// Is the station manually donated (reservable specifically) at `t`?
    pub fn donated_at(&self, cal: &Calendar, t: Time) -> bool {
        self.public
            || self.global_donation.is_some_and(|until| t < until)
            || self.periodic.iter().any(|w| w.covers(cal, t))
    }
}

/// Identifier of a reservation (Table 6.11's "Res. ID").
pub type ReservationId = u64;

/// One entry of the Reservation List (Table 6.9).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub id: ReservationId,
    /// The user who made it (Table 6.9's ID).
    pub user: String,
    /// The station whose accounts paid (the user's Accounting List entry).
    pub station: String,
    pub class: Class,
    /// First slot and the slot after the last, as slot indices.
    pub start: u64,
    pub stop: u64,
    pub lower: u32,
    pub upper: u32,
    /// Machines held in each slot (non-specific reservations).
    pub counts: BTreeMap<u64, u32>,
    /// Stations held in each slot (specific reservations, L1068).
    pub specific: BTreeMap<u64, Vec<String>>,
    /// Money paid for the slots still held, by the account it came from;
    /// refunds and forfeits are taken from here.
    pub escrow: Accounts,
    /// NP forfeited by a cancellation under `ScheduleUntilStop`, returned
    /// at `stop`.
    pub np_forfeit: Money,
    /// When it was accepted.
    pub made_at: Time,
    /// Set once cancelled or preempted entirely: kept only while it still
    /// holds forfeited NP, then dropped.
    pub withdrawn: bool,
}

impl Reservation {
    /// Machines held in slot `s`.
    pub fn held(&self, s: u64) -> u32 {
        if self.is_specific() {
            self.specific.get(&s).map_or(0, |v| v.len() as u32)
        } else {
            self.counts.get(&s).copied().unwrap_or(0)
        }
    }
    pub fn is_specific(&self) -> bool {
        !self.specific.is_empty()
    }
    /// Machine-slots held in all.
    pub fn slots_held(&self) -> u64 {
        (self.start..self.stop)
            .map(|s| u64::from(self.held(s)))
            .sum()
    }
    /// Takes out of the escrow the money of `removed` of the `before`
    /// machine-slots it held (all of it when `all`, so rounding leftovers
    /// go too) and returns it.
    pub fn take_escrow(&mut self, removed: u64, before: u64, all: bool) -> Accounts {
        let value = if all {
            self.escrow
        } else {
            Accounts {
                p_g: self.escrow.p_g.share(removed, before),
                p_d: self.escrow.p_d.share(removed, before),
                np: self.escrow.np.share(removed, before),
            }
        };
        self.escrow.p_g -= value.p_g;
        self.escrow.p_d -= value.p_d;
        self.escrow.np -= value.np;
        value
    }

    /// Fewest machines held in any of its slots (Table 6.9's "Num Machines").
    pub fn machines(&self) -> u32 {
        (self.start..self.stop)
            .map(|s| self.held(s))
            .min()
            .unwrap_or(0)
    }
}

/// A station's state in one slot of the Global Reservation Table (two bits
/// per machine, L1116, L1133).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskState {
    ReservedSpecific,
    /// Counted towards a non-specific reservation. Which machines serve it
    /// is decided when the slot begins (Longest-Free, `replacement`); this
    /// marking is the provisional choice in station order.
    ReservedNonSpecific,
    NotReserved,
    Unreservable,
}

impl MaskState {
    /// The 2-bit code: 0 RS, 1 RN, 2 NR, 3 UR.
    pub fn bits(self) -> u8 {
        match self {
            MaskState::ReservedSpecific => 0,
            MaskState::ReservedNonSpecific => 1,
            MaskState::NotReserved => 2,
            MaskState::Unreservable => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    fn at(day: u64, hour: u64, min: u64) -> Time {
        Time(0) + Dur::from_hours(day * 24 + hour) + Dur::from_mins(min)
    }

    #[test]
    fn overnight_window_covers_the_next_morning() {
        // M-F 20:00-6:00 (L1108), simulator calendar (day 0 = Monday).
        let w = Window {
            first_day: 0,
            last_day: 4,
            from_min: 20 * 60,
            to_min: 6 * 60,
        };
        let cal = Calendar::SIM;
        assert!(w.covers(&cal, at(0, 21, 0)));
        assert!(w.covers(&cal, at(1, 5, 59)));
        assert!(!w.covers(&cal, at(1, 6, 0)));
        assert!(
            !w.covers(&cal, at(0, 5, 0)),
            "Monday morning follows Sunday"
        );
        assert!(
            w.covers(&cal, at(5, 3, 0)),
            "Saturday morning follows Friday"
        );
        assert!(!w.covers(&cal, at(5, 21, 0)));
        // Sa-Su wraps nothing; F-Su is 4..=6; Su-M wraps the week.
        let sun_mon = Window {
            first_day: 6,
            last_day: 0,
            from_min: 0,
            to_min: 1440,
        };
        assert!(sun_mon.covers(&cal, at(6, 12, 0)) && sun_mon.covers(&cal, at(7, 12, 0)));
        assert!(!sun_mon.covers(&cal, at(2, 12, 0)));
    }
}
