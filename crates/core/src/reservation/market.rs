//! The market's state and everything but admission and cancellation:
//! stations and users, the administrator's settings, income and expiry as
//! time passes, the tables' views, and the invariants.

use super::money::{Money, Rate};
use super::params::{AdmissionPolicy, MarketParams, RefundAccount};
use super::tables::{
    Accounts, MaskState, Reservation, ReservationId, StationEntry, StationState, Window,
};
use super::{MarketError, ResaleCredit};
use crate::time::{Dur, Time};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the serialised form; bumped on incompatible changes.
pub const MARKET_SCHEMA: u32 = 1;

/// The coordinator's own money: what it received and what it created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bank {
    /// P money the coordinator kept: prices of reservations that were
    /// used, forfeited parts of cancellations, unrefunded preemptions.
    pub revenue: Money,
    /// All P money ever created: initial endowments and daily income.
    pub minted: Money,
}

/// The reservation coordinator's whole state: pure, serialisable, driven
/// by calls that carry the current time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Market {
    pub(super) schema: u32,
    pub(super) params: MarketParams,
    /// The System Table (Table 6.6), by station name.
    pub(super) stations: BTreeMap<String, StationEntry>,
    /// The Accounting List (Table 6.7): user → station.
    pub(super) accounting: BTreeMap<String, String>,
    /// The Reservation List (Table 6.9) by id; withdrawn ones stay only
    /// while they hold forfeited NP.
    pub(super) reservations: BTreeMap<ReservationId, Reservation>,
    pub(super) next_id: ReservationId,
    pub(super) bank: Bank,
    /// Slots freed by cancellations, for the resale discount (L1062).
    pub(super) resale: Vec<ResaleCredit>,
    /// Local day for which daily income was last paid.
    pub(super) income_day: Option<i64>,
}

impl Market {
    pub fn new(params: MarketParams) -> Result<Market, MarketError> {
        params
            .validate()
            .map_err(|(field, msg)| MarketError::Param { field, msg })?;
        Ok(Market {
            schema: MARKET_SCHEMA,
            params,
            stations: BTreeMap::new(),
            accounting: BTreeMap::new(),
            reservations: BTreeMap::new(),
            next_id: 1,
            bank: Bank::default(),
            resale: Vec::new(),
            income_day: None,
        })
    }

    /// Checks a state read back from disk: schema, parameters, invariants.
    pub fn validate_loaded(&self) -> Result<(), MarketError> {
        if self.schema != MARKET_SCHEMA {
            return Err(MarketError::Schema {
                found: self.schema,
                expected: MARKET_SCHEMA,
            });
        }
        self.params
            .validate()
            .map_err(|(field, msg)| MarketError::Param { field, msg })?;
        self.check_invariants().map_err(MarketError::Corrupt)
    }

    pub fn params(&self) -> &MarketParams {
        &self.params
    }
    pub fn bank(&self) -> Bank {
        self.bank
    }

    // ----- slots -------------------------------------------------------

    /// Slot index containing `t`.
    pub fn slot_of(&self, t: Time) -> u64 {
        t.0 / self.params.slot.0
    }
    /// Start instant of slot `s`.
    pub fn slot_start(&self, s: u64) -> Time {
        Time(s.saturating_mul(self.params.slot.0))
    }
    /// Is `t` on a slot boundary?
    pub fn is_slot_aligned(&self, t: Time) -> bool {
        t.0.is_multiple_of(self.params.slot.0)
    }

    // ----- the System Table and the Accounting List ---------------------

    /// Adds a station. Its endowment is Initial_P_Money and
    /// Initial_NP_Money for the pool size including it (Table 6.4); the
    /// stations already there receive the per-workstation increment.
    pub fn add_station(
        &mut self,
        name: &str,
        owner: &str,
        public: bool,
    ) -> Result<(), MarketError> {
        if name.is_empty() || name.len() > 255 {
            return Err(MarketError::Param {
                field: "station",
                msg: "a name of 1–255 bytes".into(),
            });
        }
        if self.stations.contains_key(name) {
            return Err(MarketError::DuplicateStation(name.to_string()));
        }
        let n = self.stations.len() + 1;
        let p = self.params.initial_p_money.resolve(n);
        let np = self.params.initial_np_money.resolve(n);
        self.bank.minted += p;
        // "ALL stations initially have Initial_P_Money" (L1052) and it is a
        // function of Num_Workstations (Table 6.4): a growing pool tops up
        // the stations already in it, so every station's endowment is the
        // one for the current size.
        let dp = self.params.initial_p_money.per_workstation;
        let dnp = self.params.initial_np_money.per_workstation;
        for st in self.stations.values_mut() {
            st.accounts.p_d += dp;
            st.accounts.np += dnp;
            st.np_endowment += dnp;
            self.bank.minted += dp;
        }
        self.stations.insert(
            name.to_string(),
            StationEntry {
                owner: owner.to_string(),
                public,
                global_donation: None,
                periodic: Vec::new(),
                state: StationState::Na,
                client: None,
                accounts: Accounts {
                    p_d: p,
                    p_g: Money::ZERO,
                    np,
                },
                np_endowment: np,
            },
        );
        // The owner reserves with its own station's money by default.
        if !owner.is_empty() && !public && !self.accounting.contains_key(owner) {
            self.accounting.insert(owner.to_string(), name.to_string());
        }
        Ok(())
    }

    /// Links `user` to `station`'s reservation budget (set by a
    /// supervisor, L1114).
    pub fn link_user(&mut self, user: &str, station: &str) -> Result<(), MarketError> {
        if !self.stations.contains_key(station) {
            return Err(MarketError::UnknownStation(station.to_string()));
        }
        if user.is_empty() {
            return Err(MarketError::UnknownUser(String::new()));
        }
        self.accounting
            .insert(user.to_string(), station.to_string());
        Ok(())
    }
    pub fn unlink_user(&mut self, user: &str) -> bool {
        self.accounting.remove(user).is_some()
    }
    /// The station whose money `user` spends.
    pub fn account_of(&self, user: &str) -> Option<&str> {
        self.accounting.get(user).map(String::as_str)
    }

    /// Sets a station's manual donations (global until, weekly windows).
    pub fn set_donation(
        &mut self,
        station: &str,
        global_until: Option<Time>,
        periodic: Vec<Window>,
    ) -> Result<(), MarketError> {
        if periodic.len() > self.params.max_periodic_windows {
            return Err(MarketError::Param {
                field: "periodic",
                msg: format!(
                    "at most {} periodic windows per station",
                    self.params.max_periodic_windows
                ),
            });
        }
        for w in &periodic {
            w.validate().map_err(|msg| MarketError::Param {
                field: "periodic",
                msg,
            })?;
        }
        let e = self
            .stations
            .get_mut(station)
            .ok_or_else(|| MarketError::UnknownStation(station.to_string()))?;
        e.global_donation = global_until;
        e.periodic = periodic;
        Ok(())
    }

    /// Records a station's current state and client (from the pool).
    pub fn set_state(
        &mut self,
        station: &str,
        state: StationState,
        client: Option<String>,
    ) -> Result<(), MarketError> {
        let e = self
            .stations
            .get_mut(station)
            .ok_or_else(|| MarketError::UnknownStation(station.to_string()))?;
        e.state = state;
        e.client = client;
        Ok(())
    }

    /// Sets the reservable share of local hour `hour` (L1090). Existing
    /// reservations are kept even if the new share is smaller.
    pub fn set_share(&mut self, hour: u32, share: Rate) -> Result<(), MarketError> {
        if hour > 23 || share > Rate::ONE {
            return Err(MarketError::Param {
                field: "reservable_share",
                msg: "hour 0–23 and a share of at most 100 %".into(),
            });
        }
        self.params.reservable_share[hour as usize] = share;
        Ok(())
    }

    pub fn station(&self, name: &str) -> Option<&StationEntry> {
        self.stations.get(name)
    }
    pub fn stations(&self) -> impl Iterator<Item = (&str, &StationEntry)> {
        self.stations.iter().map(|(k, v)| (k.as_str(), v))
    }
    pub fn accounting_list(&self) -> impl Iterator<Item = (&str, &str)> {
        self.accounting
            .iter()
            .map(|(u, s)| (u.as_str(), s.as_str()))
    }

    // ----- capacity -------------------------------------------------------

    /// Stations manually donated (reservable specifically) in slot `s`.
    pub fn donated(&self, s: u64) -> Vec<&str> {
        let t = self.slot_start(s);
        let cal = self.params.calendar;
        self.stations
            .iter()
            .filter(|(_, e)| e.donated_at(&cal, t))
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// Machines reservable in slot `s`: the administrator's share of the
    /// stations not manually donated then, plus every donated one.
    pub fn capacity(&self, s: u64) -> u32 {
        let d = self.donated(s).len() as u32;
        let n = self.stations.len() as u32;
        let hour = self.params.calendar.hour_of_day(self.slot_start(s)) as usize;
        self.params.reservable_share[hour].of_count(n - d) + d
    }

    pub(super) fn live(&self) -> impl Iterator<Item = &Reservation> {
        self.reservations.values().filter(|r| !r.withdrawn)
    }

    /// Machines held by live reservations in slot `s`.
    pub fn used(&self, s: u64) -> u32 {
        self.live()
            .filter(|r| r.start <= s && s < r.stop)
            .map(|r| r.held(s))
            .sum()
    }
    /// Machines still free in slot `s` (zero when a lowered share left the
    /// slot over-booked).
    pub fn free(&self, s: u64) -> u32 {
        self.capacity(s).saturating_sub(self.used(s))
    }

    // ----- views ---------------------------------------------------------

    /// The Reservation List in the thesis's order: by stop time (L1135).
    pub fn reservation_list(&self) -> Vec<&Reservation> {
        let mut v: Vec<&Reservation> = self.live().collect();
        v.sort_by_key(|r| (r.stop, r.start, r.id));
        v
    }
    pub fn reservation(&self, id: ReservationId) -> Option<&Reservation> {
        self.reservations.get(&id).filter(|r| !r.withdrawn)
    }
    /// `Check UserID` (Table 6.5): the user's reservations.
    pub fn reservations_of(&self, user: &str) -> Vec<&Reservation> {
        self.reservation_list()
            .into_iter()
            .filter(|r| r.user == user)
            .collect()
    }
    /// Live reservations holding machines in slot `s`.
    pub fn active_in(&self, s: u64) -> Vec<&Reservation> {
        self.live()
            .filter(|r| r.start <= s && s < r.stop && r.held(s) > 0)
            .collect()
    }

    /// One row of the Global Reservation Table (Table 6.8): each station's
    /// mask state in slot `s`, in station order.
    pub fn mask(&self, s: u64) -> Vec<(String, MaskState)> {
        let mut specific: BTreeMap<&str, ()> = BTreeMap::new();
        let mut nonspecific = 0u32;
        for r in self.active_in(s) {
            if r.is_specific() {
                for st in r.specific.get(&s).into_iter().flatten() {
                    specific.insert(st, ());
                }
            } else {
                nonspecific += r.held(s);
            }
        }
        let mut reservable_left = self.capacity(s).saturating_sub(specific.len() as u32);
        let donated: Vec<&str> = self.donated(s);
        let mut out = Vec::with_capacity(self.stations.len());
        // Donated stations first, so that the provisional non-specific
        // marking does not hide the ones open to specific requests.
        let mut order: Vec<&str> = self.stations.keys().map(String::as_str).collect();
        order.sort_by_key(|k| (!donated.contains(k), *k));
        let mut marks: BTreeMap<String, MaskState> = BTreeMap::new();
        for name in order {
            let m = if specific.contains_key(name) {
                MaskState::ReservedSpecific
            } else if reservable_left > 0 && nonspecific > 0 {
                reservable_left -= 1;
                nonspecific -= 1;
                MaskState::ReservedNonSpecific
            } else if reservable_left > 0 {
                reservable_left -= 1;
                MaskState::NotReserved
            } else {
                MaskState::Unreservable
            };
            marks.insert(name.to_string(), m);
        }
        out.extend(marks);
        out
    }

    /// The Global Availability Table (Table 6.10): free machines per slot.
    pub fn availability(&self, from: u64, to: u64) -> Vec<(u64, u32)> {
        (from..to.min(from.saturating_add(u64::from(self.params.max_request_slots))))
            .map(|s| (s, self.free(s)))
            .collect()
    }

    // ----- time passing ----------------------------------------------------

    /// Brings the market to `now`: pays daily income for each day begun
    /// since the last payment (L1052), expires reservations whose stop has
    /// come (returning their NP, L1050) and drops resale credits of slots
    /// that have begun. Returns the ids that expired.
    pub fn advance(&mut self, now: Time) -> Vec<ReservationId> {
        self.pay_income(now);
        let stop_slot = self.slot_of(now);
        let due: Vec<ReservationId> = self
            .reservations
            .values()
            .filter(|r| r.stop <= stop_slot)
            .map(|r| r.id)
            .collect();
        let mut expired = Vec::new();
        for id in due {
            let Some(r) = self.reservations.remove(&id) else {
                continue;
            };
            if let Some(st) = self.stations.get_mut(&r.station) {
                st.accounts.np += r.escrow.np + r.np_forfeit;
            }
            // The slots were used: their price is the coordinator's.
            self.bank.revenue += r.escrow.p();
            if !r.withdrawn {
                expired.push(id);
            }
        }
        self.resale.retain(|c| c.slot >= stop_slot);
        expired
    }

    fn pay_income(&mut self, now: Time) {
        let shifted = Time(
            now.0
                .saturating_sub(u64::from(self.params.income_hour) * 3_600_000_000),
        );
        let day = self.params.calendar.day(shifted);
        let Some(last) = self.income_day else {
            self.income_day = Some(day);
            return;
        };
        if day <= last {
            return;
        }
        let days = (day - last) as u64;
        self.income_day = Some(day);
        let n = self.stations.len();
        let income = self.params.daily_income.resolve(n);
        let cap = self.params.maximum_income.resolve(n);
        for st in self.stations.values_mut() {
            // Income stops once P_D reaches Maximum_income (L1052).
            let room = (cap - st.accounts.p_d).max(Money::ZERO);
            let paid = income.times(days).min(room);
            st.accounts.p_d += paid;
            self.bank.minted += paid;
        }
    }

    // ----- money movements used by admission and cancellation -----------

    /// Puts a P refund into `station`'s accounts, split as the setting
    /// says; `origin` is how the refunded payment was split (P_G, P_D).
    pub(super) fn credit_p(&mut self, station: &str, amount: Money, origin: (Money, Money)) {
        if amount == Money::ZERO {
            return;
        }
        let rule = self.params.open.refund_account;
        let Some(st) = self.stations.get_mut(station) else {
            // A station removed from the table: the money stays with the bank.
            self.bank.revenue += amount;
            return;
        };
        match rule {
            RefundAccount::Income => st.accounts.p_d += amount,
            RefundAccount::Gains => st.accounts.p_g += amount,
            RefundAccount::Origin => {
                let total = (origin.0 + origin.1).0.max(0) as u64;
                let g = if total == 0 {
                    Money::ZERO
                } else {
                    amount.share(origin.0.0.max(0) as u64, total)
                };
                st.accounts.p_g += g;
                st.accounts.p_d += amount - g;
            }
        }
    }

    // ----- invariants -----------------------------------------------------

    /// The market's invariants, checked by the tests after every step and
    /// by a coordinator on loading its state:
    /// - P is conserved: Σ stations (P_D + P_G) + Σ escrow + the bank's
    ///   revenue = all P ever minted (initial money and income);
    /// - per station, NP held + NP committed to its reservations (escrow and
    ///   forfeits awaiting their stop) = its endowment (L1050);
    /// - no account is negative; no specific station is held twice in a
    ///   slot; every live reservation holds at least its lower bound in
    ///   every slot (FCFS/PAC alike).
    pub fn check_invariants(&self) -> Result<(), String> {
        let held: Money = self.stations.values().map(|s| s.accounts.p()).sum();
        let escrow: Money = self.reservations.values().map(|r| r.escrow.p()).sum();
        if held + escrow + self.bank.revenue != self.bank.minted {
            return Err(format!(
                "P not conserved: stations {held} + escrow {escrow} + revenue {} != minted {}",
                self.bank.revenue, self.bank.minted
            ));
        }
        if self.bank.revenue.is_negative() {
            return Err(format!("bank revenue negative: {}", self.bank.revenue));
        }
        for (name, st) in &self.stations {
            let committed: Money = self
                .reservations
                .values()
                .filter(|r| &r.station == name)
                .map(|r| r.escrow.np + r.np_forfeit)
                .sum();
            if st.accounts.np + committed != st.np_endowment {
                return Err(format!(
                    "{name}: NP held {} + committed {committed} != {}",
                    st.accounts.np, st.np_endowment
                ));
            }
            let a = st.accounts;
            if a.p_d.is_negative() || a.p_g.is_negative() || a.np.is_negative() {
                return Err(format!("{name}: negative account {a:?}"));
            }
        }
        for r in self.reservations.values() {
            let e = r.escrow;
            if e.p_d.is_negative() || e.p_g.is_negative() || e.np.is_negative() {
                return Err(format!("reservation {}: negative escrow {e:?}", r.id));
            }
            if r.withdrawn {
                continue;
            }
            for s in r.start..r.stop {
                if r.held(s) < r.lower {
                    return Err(format!(
                        "reservation {} holds {} < lower {} in slot {s}",
                        r.id,
                        r.held(s),
                        r.lower
                    ));
                }
            }
            if !r.class.uses_np() && e.np != Money::ZERO {
                return Err(format!("reservation {} paid in P holds NP", r.id));
            }
        }
        let mut seen: BTreeMap<(u64, &str), ReservationId> = BTreeMap::new();
        for r in self.live() {
            for (s, v) in &r.specific {
                for st in v {
                    if let Some(other) = seen.insert((*s, st.as_str()), r.id) {
                        return Err(format!(
                            "station {st} held by {other} and {} in slot {s}",
                            r.id
                        ));
                    }
                }
            }
        }
        if let AdmissionPolicy::Fcfs | AdmissionPolicy::Pac { .. } = self.params.policy {
            let paid: Money = self
                .reservations
                .values()
                .map(|r| r.escrow.p() + r.escrow.np)
                .sum();
            if paid != Money::ZERO {
                return Err("FCFS/PAC reservations hold money".into());
            }
        }
        Ok(())
    }

    /// Lead time from `now` to the start of slot `s` (zero if begun).
    pub(super) fn lead(&self, now: Time, s: u64) -> Dur {
        self.slot_start(s).since(now)
    }
}
