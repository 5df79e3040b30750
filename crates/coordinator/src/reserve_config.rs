//! The coordinator's `[reservations]` section: every parameter of Mutka
//! 1988 Tables 6.3/6.4 (seeds/000_14c1149197e96532.txt L999–1046) in
//! administrator's units (hours, fractions, units of money), the reservable
//! share per hour of the day (L1090), the open questions' settings, the
//! accounting list (L1114) and the daemon's own settings (replacement rule,
//! confinement, slot length). Defaults are Table 6.4's, listed in
//! docs/configuration.md.

use crate::CoordinatorError;
use gleaner_core::reservation::money::UNIT;
use gleaner_core::reservation::params::{
    LockFrom, NpCancellation, PreemptOn, RefundAccount, RefundBoundary, VictimOrder,
};
use gleaner_core::reservation::replacement::ReplacementRule;
use gleaner_core::reservation::{
    AdmissionPolicy, Calendar, MarketParams, Money, MoneyAmount, OpenChoices, Rate,
};
use gleaner_core::time::Dur;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// An amount written `fixed + per_workstation × N` (Table 6.4's
/// "Num_Workstations × 3"), in units of money.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AmountConfig {
    #[serde(default)]
    pub fixed: f64,
    #[serde(default)]
    pub per_workstation: f64,
}

impl AmountConfig {
    const fn per(n: f64) -> Self {
        AmountConfig {
            fixed: 0.0,
            per_workstation: n,
        }
    }
    fn resolve(&self, field: &str) -> Result<MoneyAmount, CoordinatorError> {
        Ok(MoneyAmount {
            fixed: money(&format!("{field}.fixed"), self.fixed)?,
            per_workstation: money(&format!("{field}.per_workstation"), self.per_workstation)?,
        })
    }
}

/// `[reservations]`: present means the coordinator runs the reservation
/// coordinator role (Mutka 1988 §6.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReservationsConfig {
    /// `free_market` (default), `fcfs` or `pac` (L995–997).
    pub policy: PolicyName,
    /// PAC's machine-slots per station and local day.
    pub pac_quota: u32,
    /// Length of a slot, seconds; must divide a day. Default 3600 ("normally
    /// each interval is one hour", L1116). Shorter slots exist for tests and
    /// demonstrations.
    pub slot_secs: u64,
    /// Preemptable_Time_Period, hours (24, L1031).
    pub preemptable_time_period_hours: f64,
    /// Discount_Rate (0.5, L1032).
    pub discount_rate: f64,
    /// 1st/2nd/3rd_class_rate per machine-slot (P 2, P 1, NP 1; L1033–1035).
    pub first_class_rate: f64,
    pub second_class_rate: f64,
    pub third_class_rate: f64,
    /// Share of 2nd_class_rate a 1st-class preemptor pays (0.5, L1054).
    pub preemption_fee_rate: f64,
    /// Maximum_income, Initial_P_Money, Initial_NP_Money (N×3, N, N;
    /// L1036–1038) and the daily income (N/7, not in the thesis).
    pub maximum_income: AmountConfig,
    pub initial_p_money: AmountConfig,
    pub initial_np_money: AmountConfig,
    pub daily_income: AmountConfig,
    /// Local hour at which income is paid (0).
    pub income_hour: u32,
    /// Early/Middle/Late/Last_cancel_time, hours (72, 48, 24, 2; L1039–1042).
    pub early_cancel_hours: f64,
    pub middle_cancel_hours: f64,
    pub late_cancel_hours: f64,
    pub last_cancel_hours: f64,
    /// Early/Middle/Late/Last_cancel_rate (0.9, 0.75, 0.5, 0.25; L1043–1046).
    pub early_cancel_rate: f64,
    pub middle_cancel_rate: f64,
    pub late_cancel_rate: f64,
    pub last_cancel_rate: f64,
    /// Reservable share of the pool in each local hour (L1090): one
    /// fraction for every hour, or 24 of them. Default 0.4.
    pub reservable_share: ShareConfig,
    /// How far ahead a slot may be booked, hours (672 = 28 days).
    pub booking_horizon_hours: f64,
    /// Most slots one request may span (336).
    pub max_request_slots: u32,
    /// Periodic donation windows per station (2, Table 6.6).
    pub max_periodic_windows: usize,
    /// Local time: seconds east of UTC (hour-of-day shares, income hour).
    pub utc_offset_secs: i64,
    /// The open questions (docs/reservations.md).
    pub refund_preempted: bool,
    pub refund_account: RefundAccount,
    pub third_preemption_fee_rate: f64,
    pub preempt_on: PreemptOn,
    pub victim_order: VictimOrder,
    pub np_cancellation: NpCancellation,
    pub refund_boundary: RefundBoundary,
    pub lock_from: LockFrom,
    /// Which unreserved AV station replaces a reserved one whose owner
    /// returned: `longest_free` (default) or `random` (L883–893).
    pub replacement: ReplacementRule,
    /// While a user's reservation is active, that user's jobs run only on
    /// its stations (default true: the reservation is the user's partition
    /// of the pool). False lets them also compete for the rest.
    pub confine: bool,
    /// The Accounting List (L1114): user = station whose money the user
    /// spends. A station's owner (below) is linked to it automatically.
    pub accounts: BTreeMap<String, String>,
    /// Station = owner (user) for the System Table.
    pub owners: BTreeMap<String, String>,
    /// Stations without an owner, always reservable specifically (the
    /// processor bank's own machines, stations H and I of Table 6.6).
    pub public_stations: BTreeSet<String>,
    /// Seed of the Random replacement rule (default: the coordinator's
    /// `seed`, else the clock).
    pub seed: Option<u64>,
}

/// The reservable share: one value for every hour, or 24.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ShareConfig {
    All(f64),
    Hourly(Vec<f64>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyName {
    FreeMarket,
    Fcfs,
    Pac,
}

impl Default for ReservationsConfig {
    fn default() -> Self {
        ReservationsConfig {
            policy: PolicyName::FreeMarket,
            pac_quota: 24,
            slot_secs: 3600,
            preemptable_time_period_hours: 24.0,
            discount_rate: 0.5,
            first_class_rate: 2.0,
            second_class_rate: 1.0,
            third_class_rate: 1.0,
            preemption_fee_rate: 0.5,
            maximum_income: AmountConfig::per(3.0),
            initial_p_money: AmountConfig::per(1.0),
            initial_np_money: AmountConfig::per(1.0),
            daily_income: AmountConfig::per(1.0 / 7.0),
            income_hour: 0,
            early_cancel_hours: 72.0,
            middle_cancel_hours: 48.0,
            late_cancel_hours: 24.0,
            last_cancel_hours: 2.0,
            early_cancel_rate: 0.9,
            middle_cancel_rate: 0.75,
            late_cancel_rate: 0.5,
            last_cancel_rate: 0.25,
            reservable_share: ShareConfig::All(0.4),
            booking_horizon_hours: 28.0 * 24.0,
            max_request_slots: 14 * 24,
            max_periodic_windows: 2,
            utc_offset_secs: 0,
            refund_preempted: true,
            refund_account: RefundAccount::Origin,
            third_preemption_fee_rate: 0.0,
            preempt_on: PreemptOn::Automatic,
            victim_order: VictimOrder::NewestFirst,
            np_cancellation: NpCancellation::FullRefund,
            refund_boundary: RefundBoundary::StrictlyMore,
            lock_from: LockFrom::ReservationStart,
            replacement: ReplacementRule::LongestFree,
            confine: true,
            accounts: BTreeMap::new(),
            owners: BTreeMap::new(),
            public_stations: BTreeSet::new(),
            seed: None,
        }
    }
}

fn bad(field: &str, msg: impl std::fmt::Display) -> CoordinatorError {
    CoordinatorError::Config(format!("reservations.{field}: {msg}"))
}

fn money(field: &str, v: f64) -> Result<Money, CoordinatorError> {
    if v.is_finite() && (0.0..1e9).contains(&v) {
        Ok(Money((v * UNIT as f64).round() as i64))
    } else {
        Err(bad(field, format!("an amount of 0 to 1e9 units, got {v}")))
    }
}

fn rate(field: &str, v: f64) -> Result<Rate, CoordinatorError> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(Rate::from_fraction(v))
    } else {
        Err(bad(field, format!("a fraction from 0 to 1, got {v}")))
    }
}

fn hours(field: &str, v: f64) -> Result<Dur, CoordinatorError> {
    if v.is_finite() && (0.0..1e6).contains(&v) {
        Ok(Dur::from_secs_f64(v * 3600.0))
    } else {
        Err(bad(field, format!("hours from 0 to 1e6, got {v}")))
    }
}

impl ReservationsConfig {
    /// The market's parameters; every error names its field.
    pub fn market_params(&self) -> Result<MarketParams, CoordinatorError> {
        let mut share = [Rate::ZERO; 24];
        match &self.reservable_share {
            ShareConfig::All(v) => share = [rate("reservable_share", *v)?; 24],
            ShareConfig::Hourly(v) => {
                if v.len() != 24 {
                    return Err(bad(
                        "reservable_share",
                        format!("one fraction or 24 (one per hour), got {}", v.len()),
                    ));
                }
                for (h, x) in v.iter().enumerate() {
                    share[h] = rate(&format!("reservable_share[{h}]"), *x)?;
                }
            }
        }
        let params = MarketParams {
            policy: match self.policy {
                PolicyName::FreeMarket => AdmissionPolicy::FreeMarket,
                PolicyName::Fcfs => AdmissionPolicy::Fcfs,
                PolicyName::Pac => AdmissionPolicy::Pac {
                    quota: self.pac_quota,
                },
            },
            slot: Dur::from_secs(self.slot_secs),
            preemptable_time_period: hours(
                "preemptable_time_period_hours",
                self.preemptable_time_period_hours,
            )?,
            discount_rate: rate("discount_rate", self.discount_rate)?,
            first_class_rate: money("first_class_rate", self.first_class_rate)?,
            second_class_rate: money("second_class_rate", self.second_class_rate)?,
            third_class_rate: money("third_class_rate", self.third_class_rate)?,
            preemption_fee_rate: rate("preemption_fee_rate", self.preemption_fee_rate)?,
            maximum_income: self.maximum_income.resolve("maximum_income")?,
            initial_p_money: self.initial_p_money.resolve("initial_p_money")?,
            initial_np_money: self.initial_np_money.resolve("initial_np_money")?,
            daily_income: self.daily_income.resolve("daily_income")?,
            income_hour: self.income_hour,
            early_cancel_time: hours("early_cancel_hours", self.early_cancel_hours)?,
            middle_cancel_time: hours("middle_cancel_hours", self.middle_cancel_hours)?,
            late_cancel_time: hours("late_cancel_hours", self.late_cancel_hours)?,
            last_cancel_time: hours("last_cancel_hours", self.last_cancel_hours)?,
            early_cancel_rate: rate("early_cancel_rate", self.early_cancel_rate)?,
            middle_cancel_rate: rate("middle_cancel_rate", self.middle_cancel_rate)?,
            late_cancel_rate: rate("late_cancel_rate", self.late_cancel_rate)?,
            last_cancel_rate: rate("last_cancel_rate", self.last_cancel_rate)?,
            reservable_share: share,
            booking_horizon: hours("booking_horizon_hours", self.booking_horizon_hours)?,
            max_request_slots: self.max_request_slots,
            max_periodic_windows: self.max_periodic_windows,
            calendar: Calendar {
                utc_offset_secs: self.utc_offset_secs,
                ..Calendar::UNIX_UTC
            },
            open: OpenChoices {
                refund_preempted: self.refund_preempted,
                refund_account: self.refund_account,
                third_preemption_fee_rate: rate(
                    "third_preemption_fee_rate",
                    self.third_preemption_fee_rate,
                )?,
                preempt_on: self.preempt_on,
                victim_order: self.victim_order,
                np_cancellation: self.np_cancellation,
                refund_boundary: self.refund_boundary,
                lock_from: self.lock_from,
            },
        };
        params.validate().map_err(|(field, msg)| bad(field, msg))?;
        for (user, station) in &self.accounts {
            if user.is_empty() || station.is_empty() {
                return Err(bad("accounts", "user and station names must not be empty"));
            }
        }
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_table_6_4() {
        let p = ReservationsConfig::default().market_params().unwrap();
        assert_eq!(p, MarketParams::default());
    }

    #[test]
    fn errors_name_the_field() {
        let c: ReservationsConfig =
            toml::from_str("reservable_share = [0.5, 0.5]\nslot_secs = 60\n").unwrap();
        let e = c.market_params().unwrap_err().to_string();
        assert!(e.contains("reservations.reservable_share"), "{e}");
        let c: ReservationsConfig = toml::from_str("slot_secs = 7\n").unwrap();
        let e = c.market_params().unwrap_err().to_string();
        assert!(e.contains("reservations.slot"), "{e}");
        let c: ReservationsConfig = toml::from_str("discount_rate = 1.5\n").unwrap();
        let e = c.market_params().unwrap_err().to_string();
        assert!(e.contains("reservations.discount_rate"), "{e}");
        assert!(toml::from_str::<ReservationsConfig>("bogus = 1\n").is_err());
    }

    #[test]
    fn baselines_and_rules_parse() {
        let c: ReservationsConfig = toml::from_str(
            "policy = \"pac\"\npac_quota = 3\nreplacement = \"random\"\n\
             [accounts]\nalice = \"ws1\"\n",
        )
        .unwrap();
        let p = c.market_params().unwrap();
        assert_eq!(p.policy, AdmissionPolicy::Pac { quota: 3 });
        assert_eq!(c.replacement, ReplacementRule::Random);
    }
}
