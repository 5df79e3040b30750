//! The cancellation refund schedule (Mutka 1988 L1060, Table 6.4
//! L1039–1046): the earlier a reservation is cancelled, the more of its
//! price comes back; within `Last_cancel_time` of its start it cannot be
//! cancelled at all.

use super::money::Rate;
use super::params::{MarketParams, RefundBoundary};
use crate::time::Dur;

/// The refund rate for a cancellation `lead` ahead of the reservation's
/// start, or `None` when it is too late to cancel. With the default
/// boundary rule (`StrictlyMore`):
///
/// | lead Δ | refund |
/// |---|---|
/// | Δ > 3 d | Early_cancel_rate (90 %) |
/// | 2 d < Δ ≤ 3 d | Middle_cancel_rate (75 %) |
/// | 1 d < Δ ≤ 2 d | Late_cancel_rate (50 %) |
/// | 2 h ≤ Δ ≤ 1 d | Last_cancel_rate (25 %) |
/// | Δ < 2 h | not allowed |
pub fn refund_rate(p: &MarketParams, lead: Dur) -> Option<Rate> {
    let above = |boundary: Dur| match p.open.refund_boundary {
        RefundBoundary::StrictlyMore => lead > boundary,
        RefundBoundary::AtLeast => lead >= boundary,
    };
    if above(p.early_cancel_time) {
        Some(p.early_cancel_rate)
    } else if above(p.middle_cancel_time) {
        Some(p.middle_cancel_rate)
    } else if above(p.late_cancel_time) {
        Some(p.late_cancel_rate)
    } else if lead >= p.last_cancel_time {
        // "until last-cancel-time before the reservation" (L1060): the
        // last moment itself is still allowed under either rule.
        Some(p.last_cancel_rate)
    } else {
        None
    }
}
