//! Reservations of processor-bank machines by the hour: Mutka 1988
//! Chapter 6 (seeds/000_14c1149197e96532.txt L974–1191), which the thesis
//! designed but never built.
//!
//! - [`money`]: P and NP amounts and rates as exact integers.
//! - [`params`]: Tables 6.3/6.4 and a setting for every open question.
//! - [`tables`]: the System Table, Accounting List, Reservation List and
//!   Global Reservation Table's masks.
//! - [`Market`]: the reservation coordinator's state and the free-market
//!   algorithm (`reserve`, `cancel`, `advance`), with FCFS and Pre-Allocated
//!   Capacity as selectable baselines; serialisable for durability.
//! - [`refund`]: the cancellation refund schedule.
//! - [`replacement`]: which unreserved AV station replaces a reserved one
//!   whose owner returned (Longest-Free, Random; L883–893), and the binding
//!   of an hour's reservations to stations.
//! - [`session`]: the local handler's Reservation Request Table and the
//!   coordinator's acknowledgement (Tables 6.11/6.12, L1156–1162).
//!
//! The market never reads a clock: every call takes `now`. It makes no
//! random choice (ties go by id and name), so it needs no RNG; the
//! replacement rule takes one for `Random`.

mod admit;
mod cancel;
mod market;
pub mod money;
pub mod params;
pub mod refund;
pub mod replacement;
pub mod session;
pub mod tables;

pub use market::{Bank, MARKET_SCHEMA, Market};
pub use money::{Money, Rate};
pub use params::{AdmissionPolicy, Calendar, MarketParams, MoneyAmount, OpenChoices};
pub use tables::{
    Class, MaskState, Reservation, ReservationId, StationEntry, StationState, Window,
};

use crate::time::Time;
use serde::{Deserialize, Serialize};

/// A reservation request (`Reserve Start Stop NumStations Class [Specific
/// Stations]`, Table 6.5; a row of the Reservation Request Table 6.11).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub user: String,
    /// Slot-aligned start and stop instants (`stop` exclusive).
    pub start: Time,
    pub stop: Time,
    /// The coordinator grants the most machines it can up to `upper`, and
    /// nothing below `lower` (L1068).
    pub lower: u32,
    pub upper: u32,
    pub class: Class,
    /// Specific stations wanted; only manually donated ones can be had
    /// (L974, L1068). Empty for a non-specific request.
    #[serde(default)]
    pub specific: Vec<String>,
    /// Under `PreemptOn::WhenAsked`, whether this request may preempt.
    #[serde(default)]
    pub preempt: bool,
}

/// What an accepted request got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Granted {
    pub id: ReservationId,
    /// Machines in every slot.
    pub machines: u32,
    /// The specific stations, when asked for.
    pub stations: Vec<String>,
    /// Price paid (P for 1st/2nd class, NP for 3rd), after resale discounts.
    pub paid: Money,
    /// Preemption fees paid to the preempted stations (P).
    pub fees: Money,
    /// Resale discount received (L1062).
    pub discount: Money,
    /// Reservations that lost machines to this one.
    pub preempted: Vec<PreemptionNotice>,
}

/// A reservation that lost machine-slots to a higher-priority request: the
/// coordinator tells its user (L993: "needs to be aware of its preemption").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptionNotice {
    pub reservation: ReservationId,
    pub user: String,
    pub station: String,
    pub by: ReservationId,
    /// Machine-slots taken.
    pub slots: u64,
    /// Whether the whole reservation went (it fell below its lower bound).
    pub whole: bool,
    /// Price refunded (in the reservation's currency).
    pub refund: Money,
    /// Fee received as a capital gain (P).
    pub fee: Money,
}

/// What a cancellation returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancelled {
    pub id: ReservationId,
    /// Machine-slots given up.
    pub slots: u64,
    /// Refund rate applied.
    pub rate: Rate,
    /// Money returned now (in the reservation's currency).
    pub refund: Money,
    /// Whether nothing of the reservation is left.
    pub whole: bool,
}

/// A machine-slot freed by a cancellation, for the resale discount:
/// "discount = Discount_Rate × (original price − normal refund)", paid to
/// the buyer as a lower price and to the canceller as a further refund
/// (L1062).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResaleCredit {
    pub slot: u64,
    /// The cancelled reservation and its paying station.
    pub from: ReservationId,
    pub station: String,
    /// Currency of the cancelled slot (NP credits exist only under
    /// `NpCancellation::ScheduleUntilStop`).
    pub np: bool,
    /// Forfeited amount per slot (price − refund).
    pub forfeited: Money,
    /// How the price was paid (P_G, P_D), for refunds to origin.
    pub origin: (Money, Money),
    /// Machine-slots of this slot still awaiting a buyer.
    pub count: u32,
}

/// Why the market refused something. Each refusal leaves the state as it
/// was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MarketError {
    #[error("invalid {field}: {msg}")]
    Param { field: &'static str, msg: String },
    #[error("user {0:?} is not in the accounting list")]
    UnknownUser(String),
    #[error("no station {0:?} in the system table")]
    UnknownStation(String),
    #[error("station {0:?} is already in the system table")]
    DuplicateStation(String),
    #[error("station {station:?} is not donated for the whole request")]
    NotDonated { station: String },
    #[error("only {available} machine(s) can be had, fewer than the lower bound {lower}")]
    Unavailable { lower: u32, available: u32 },
    #[error("the request costs {needed} but the account holds {have}")]
    Unaffordable { needed: Money, have: Money },
    #[error("quota: station {station:?} may hold {quota} machine-slots a day")]
    Quota { station: String, quota: u32 },
    #[error("no reservation {0}")]
    NotFound(ReservationId),
    #[error("reservation {0} belongs to another account")]
    NotYours(ReservationId),
    #[error("too late to cancel: the reservation starts within the last cancel time")]
    TooLate,
    #[error("state schema {found}, expected {expected}")]
    Schema { found: u32, expected: u32 },
    #[error("inconsistent state: {0}")]
    Corrupt(String),
}
