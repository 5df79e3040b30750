//! Every parameter of the free market (Mutka 1988 Tables 6.3/6.4,
//! seeds/000_14c1149197e96532.txt L999–1046), the administrator's
//! reservable share per hour of the day (L1090), and a setting for each
//! question the thesis leaves open (spec mutka-thesis.md §2.9,
//! "[NOT IN SOURCE]"); `docs/reservations.md` lists each with its default.

use super::money::{Money, Rate};
use crate::time::{Dur, Time};
use serde::{Deserialize, Serialize};

/// An amount that may scale with the number of workstations, as Table 6.4
/// writes several of them (`P = Num_Workstations × 3`, L1036–1038).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoneyAmount {
    /// Fixed part.
    #[serde(default)]
    pub fixed: Money,
    /// Added once per workstation in the System Table.
    #[serde(default)]
    pub per_workstation: Money,
}

impl MoneyAmount {
    pub const fn per_workstation(m: Money) -> Self {
        MoneyAmount {
            fixed: Money::ZERO,
            per_workstation: m,
        }
    }
    pub const fn fixed(m: Money) -> Self {
        MoneyAmount {
            fixed: m,
            per_workstation: Money::ZERO,
        }
    }
    /// The amount for a pool of `n` workstations.
    pub fn resolve(&self, n: usize) -> Money {
        self.fixed + self.per_workstation.times(n as u64)
    }
}

/// Which admission rule the market runs: the free market, or one of the
/// two simple strategies the thesis rejects (L995), kept as baselines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum AdmissionPolicy {
    /// Classes, money, preemption, refunds (L997–1064).
    FreeMarket,
    /// First come, first served: a request is refused only when the slots
    /// are taken; no money, no preemption (L995).
    Fcfs,
    /// Pre-Allocated Capacity (printed "Re-Allocated", L995): every
    /// station may hold at most `quota` machine-slots per calendar day;
    /// no money, no preemption.
    Pac { quota: u32 },
}

/// The calendar that maps instants to hours of the day and weekdays.
/// Daemons use the UNIX epoch (a Thursday); the simulator's epoch is a
/// Monday (docs/trace-format.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calendar {
    /// Seconds added to UTC to get local time.
    pub utc_offset_secs: i64,
    /// Weekday of the epoch's day, 0 = Monday … 6 = Sunday.
    pub epoch_weekday: u8,
}

impl Calendar {
    /// The UNIX epoch in UTC (1 January 1970 was a Thursday).
    pub const UNIX_UTC: Calendar = Calendar {
        utc_offset_secs: 0,
        epoch_weekday: 3,
    };
    /// The simulator's calendar: time 0 is Monday 00:00.
    pub const SIM: Calendar = Calendar {
        utc_offset_secs: 0,
        epoch_weekday: 0,
    };

    fn local_secs(&self, t: Time) -> i64 {
        (t.0 / 1_000_000) as i64 + self.utc_offset_secs
    }
    /// Hour of the day (0–23) of `t`.
    pub fn hour_of_day(&self, t: Time) -> u32 {
        (self.local_secs(t).rem_euclid(86_400) / 3600) as u32
    }
    /// Minute of the day (0–1439).
    pub fn minute_of_day(&self, t: Time) -> u32 {
        (self.local_secs(t).rem_euclid(86_400) / 60) as u32
    }
    /// Weekday of `t`, 0 = Monday.
    pub fn weekday(&self, t: Time) -> u32 {
        (self.local_secs(t).div_euclid(86_400) + i64::from(self.epoch_weekday)).rem_euclid(7) as u32
    }
    /// Local day number of `t` (days since the epoch's local midnight).
    pub fn day(&self, t: Time) -> i64 {
        self.local_secs(t).div_euclid(86_400)
    }
}

/// How a cancellation exactly on a refund boundary is treated (the thesis
/// does not say, spec §2.9 "Boundary inclusivity is not specified").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundBoundary {
    /// "more than early-cancel-time days before" earns the early rate
    /// (L1060 read literally): exactly 3 days ahead gets the middle rate.
    /// A cancellation exactly `Last_cancel_time` ahead is still allowed.
    StrictlyMore,
    /// At least the boundary earns the higher rate.
    AtLeast,
}

/// Where refunds of P money go (open: "Which account receives refunds?").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundAccount {
    /// Back to the accounts the payment came from, in the same proportion
    /// (so capital gains stay capital gains and income stays under the
    /// income rules).
    Origin,
    /// All to P_D (daily income).
    Income,
    /// All to P_G (capital gains).
    Gains,
}

/// Whether a request may preempt without asking (open: "Does a 1st-class
/// request have to target occupied slots explicitly?").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreemptOn {
    /// The coordinator preempts lower classes whenever free slots do not
    /// cover the request ("If a user wants to preempt an existing 2nd class
    /// reservation, a 1st class request is issued", L1054).
    Automatic,
    /// Only requests that set `preempt` may preempt.
    WhenAsked,
}

/// In which order victims are taken (open: "In what order are victims
/// chosen?"). Always lowest class first (a 3rd-class slot costs the
/// preemptor no fee, L1054); within a class 3rd-class holders with the least
/// available NP go first (the 3rd-vs-3rd rule, L1025); then:
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VictimOrder {
    /// The most recently made reservation first (older bookings are the
    /// ones users have planned around).
    NewestFirst,
    /// The oldest reservation first.
    OldestFirst,
}

/// What cancelling a 3rd-class reservation returns (open: "Does the
/// cancellation refund schedule apply to NP?").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NpCancellation {
    /// All the NP at once: NP is "spent but not accumulated or earned"
    /// and held + committed is a constant (L1050), so there is nothing to
    /// forfeit it to.
    FullRefund,
    /// The refund schedule applies; the forfeited NP stays committed (held
    /// by the coordinator) until the cancelled reservation's stop time and
    /// then returns, so the invariant of L1050 still holds.
    ScheduleUntilStop,
}

/// From when the preemption lock counts (L1056: "until the
/// preemptable_time_period before the reservation").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockFrom {
    /// The reservation's start: once `start − period` has passed, none of
    /// its slots can be preempted.
    ReservationStart,
    /// Each slot's own start: later hours of a long reservation stay
    /// preemptable until a period before each of them.
    EachSlot,
}

/// The settings for the questions the thesis leaves open (spec
/// mutka-thesis.md §2.9). Defaults are the choices documented in
/// `docs/reservations.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenChoices {
    /// Is a preempted holder's payment for the lost slots refunded, besides
    /// the fee? Default yes: the thesis calls the fee a "consolation award
    /// for relinquishing the reserved capacity" (L993), which makes sense
    /// only on top of getting the price back.
    pub refund_preempted: bool,
    pub refund_account: RefundAccount,
    /// Fee a 1st/2nd-class preemptor pays per 3rd-class slot, as a fraction
    /// of `third_class_rate`, paid in P to the victim's P_G. Default 0
    /// ("The preemption of a 3rd class reservation does not pay any extra
    /// money", L1054).
    pub third_preemption_fee_rate: Rate,
    pub preempt_on: PreemptOn,
    pub victim_order: VictimOrder,
    pub np_cancellation: NpCancellation,
    pub refund_boundary: RefundBoundary,
    pub lock_from: LockFrom,
}

impl Default for OpenChoices {
    fn default() -> Self {
        OpenChoices {
            refund_preempted: true,
            refund_account: RefundAccount::Origin,
            third_preemption_fee_rate: Rate::ZERO,
            preempt_on: PreemptOn::Automatic,
            victim_order: VictimOrder::NewestFirst,
            np_cancellation: NpCancellation::FullRefund,
            refund_boundary: RefundBoundary::StrictlyMore,
            lock_from: LockFrom::ReservationStart,
        }
    }
}

/// The market's parameters. [`MarketParams::default`] is Table 6.4.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarketParams {
    pub policy: AdmissionPolicy,
    /// Length of a reservation slot ("normally each interval is one hour",
    /// L1116). Slots are aligned to multiples of it since the epoch.
    pub slot: Dur,
    /// Preemptable_Time_Period: 1 day (L1031).
    pub preemptable_time_period: Dur,
    /// Discount_Rate: ½ (L1032).
    pub discount_rate: Rate,
    /// 1st_class_rate: P = 2 per machine-slot (L1033).
    pub first_class_rate: Money,
    /// 2nd_class_rate: P = 1 (L1034).
    pub second_class_rate: Money,
    /// 3rd_class_rate: NP = 1 (L1035).
    pub third_class_rate: Money,
    /// Fee a 1st-class preemptor pays per 2nd-class slot, as a fraction of
    /// 2nd_class_rate, to the victim's P_G: ½ (L1054).
    pub preemption_fee_rate: Rate,
    /// Maximum_income: P_D stops growing from income at N × 3 (L1036).
    pub maximum_income: MoneyAmount,
    /// Initial_P_Money: N (L1037).
    pub initial_p_money: MoneyAmount,
    /// Initial_NP_Money: N (L1038).
    pub initial_np_money: MoneyAmount,
    /// Daily income per station. NOT IN SOURCE (the thesis names the
    /// allotment, L1052, but not its size): N / 7, so a station earns back
    /// its initial endowment in a week and reaches the cap after three
    /// weeks of not spending.
    pub daily_income: MoneyAmount,
    /// Local hour at which daily income is paid. NOT IN SOURCE: midnight.
    pub income_hour: u32,
    /// Early/Middle/Late/Last_cancel_time: 3 d, 2 d, 1 d, 2 h (L1039–1042).
    pub early_cancel_time: Dur,
    pub middle_cancel_time: Dur,
    pub late_cancel_time: Dur,
    pub last_cancel_time: Dur,
    /// Early/Middle/Late/Last_cancel_rate: 90 %, 75 %, 50 %, 25 % (L1043–1046).
    pub early_cancel_rate: Rate,
    pub middle_cancel_rate: Rate,
    pub late_cancel_rate: Rate,
    pub last_cancel_rate: Rate,
    /// Share of the pool's (not manually donated) machines reservable in
    /// each local hour of the day, set by the administrator (L1090).
    /// NOT IN SOURCE as numbers: 40 % every hour, the level Fig. 6.2 shows
    /// is almost always there (L883).
    pub reservable_share: [Rate; 24],
    /// How far ahead a slot may be reserved. NOT IN SOURCE: 28 days.
    pub booking_horizon: Dur,
    /// Most slots one request may span (bounds memory and work). NOT IN
    /// SOURCE: 14 days of hourly slots.
    pub max_request_slots: u32,
    /// Periodic donation windows per station: 2 (Table 6.6, L1097).
    pub max_periodic_windows: usize,
    pub calendar: Calendar,
    pub open: OpenChoices,
}

impl Default for MarketParams {
    fn default() -> Self {
        MarketParams {
            policy: AdmissionPolicy::FreeMarket,
            slot: Dur::from_hours(1),
            preemptable_time_period: Dur::from_hours(24),
            discount_rate: Rate::percent(50),
            first_class_rate: Money::units(2),
            second_class_rate: Money::units(1),
            third_class_rate: Money::units(1),
            preemption_fee_rate: Rate::percent(50),
            maximum_income: MoneyAmount::per_workstation(Money::units(3)),
            initial_p_money: MoneyAmount::per_workstation(Money::units(1)),
            initial_np_money: MoneyAmount::per_workstation(Money::units(1)),
            daily_income: MoneyAmount::per_workstation(Money(super::money::UNIT / 7)),
            income_hour: 0,
            early_cancel_time: Dur::from_hours(72),
            middle_cancel_time: Dur::from_hours(48),
            late_cancel_time: Dur::from_hours(24),
            last_cancel_time: Dur::from_hours(2),
            early_cancel_rate: Rate::percent(90),
            middle_cancel_rate: Rate::percent(75),
            late_cancel_rate: Rate::percent(50),
            last_cancel_rate: Rate::percent(25),
            reservable_share: [Rate::percent(40); 24],
            booking_horizon: Dur::from_hours(28 * 24),
            max_request_slots: 14 * 24,
            max_periodic_windows: 2,
            calendar: Calendar::UNIX_UTC,
            open: OpenChoices::default(),
        }
    }
}

impl MarketParams {
    /// Checks that the parameters make sense; names the field otherwise.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.slot.is_zero() || !self.slot.0.is_multiple_of(1_000_000) {
            return Err(("slot", "must be a positive whole number of seconds".into()));
        }
        if !86_400_000_000u64.is_multiple_of(self.slot.0) {
            return Err(("slot", "must divide one day".into()));
        }
        let times = [
            self.early_cancel_time,
            self.middle_cancel_time,
            self.late_cancel_time,
            self.last_cancel_time,
        ];
        if !times.windows(2).all(|w| w[0] >= w[1]) {
            return Err((
                "early_cancel_time",
                "cancel times must satisfy early >= middle >= late >= last".into(),
            ));
        }
        let rates = [
            self.early_cancel_rate,
            self.middle_cancel_rate,
            self.late_cancel_rate,
            self.last_cancel_rate,
        ];
        if rates.iter().any(|r| *r > Rate::ONE) {
            return Err(("early_cancel_rate", "refund rates are at most 100 %".into()));
        }
        for (name, r) in [
            ("discount_rate", self.discount_rate),
            ("preemption_fee_rate", self.preemption_fee_rate),
        ] {
            if r > Rate::ONE {
                return Err((name, "must be at most 100 %".into()));
            }
        }
        for (name, m) in [
            ("first_class_rate", self.first_class_rate),
            ("second_class_rate", self.second_class_rate),
            ("third_class_rate", self.third_class_rate),
        ] {
            if m.0 < 0 {
                return Err((name, "must not be negative".into()));
            }
        }
        if self.reservable_share.iter().any(|r| *r > Rate::ONE) {
            return Err((
                "reservable_share",
                "each hour's share is at most 100 %".into(),
            ));
        }
        if self.income_hour > 23 {
            return Err(("income_hour", "must be 0–23".into()));
        }
        if self.max_request_slots == 0 {
            return Err(("max_request_slots", "must be at least 1".into()));
        }
        Ok(())
    }

    /// Price per machine-slot of a class (P for 1st/2nd, NP for 3rd).
    pub fn price(&self, class: super::Class) -> Money {
        match class {
            super::Class::First => self.first_class_rate,
            super::Class::Second => self.second_class_rate,
            super::Class::Third => self.third_class_rate,
        }
    }
}
