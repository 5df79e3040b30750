//! Cancellation (`Unreserve`, Table 6.5): the refund schedule of L1060 and
//! the resale credits of L1062.

use super::market::Market;
use super::money::{Money, Rate};
use super::params::{AdmissionPolicy, NpCancellation};
use super::refund::refund_rate;
use super::tables::ReservationId;
use super::{Cancelled, MarketError, ResaleCredit};
use crate::time::Time;

impl Market {
    /// Cancels `machines` machines of reservation `id` in every slot (all of
    /// them when `None`) on behalf of `user`, who must have made it or
    /// share its station's account (L1114). Under the free market the
    /// refund follows the schedule and nothing can be cancelled within
    /// `Last_cancel_time` of the start; under FCFS/PAC, which hold no
    /// money, anything not yet begun can be cancelled.
    pub fn cancel(
        &mut self,
        id: ReservationId,
        user: &str,
        machines: Option<u32>,
        now: Time,
    ) -> Result<Cancelled, MarketError> {
        let r = self.reservation(id).ok_or(MarketError::NotFound(id))?;
        if r.user != user && self.account_of(user) != Some(r.station.as_str()) {
            return Err(MarketError::NotYours(id));
        }
        let lead = self.lead(now, r.start);
        let rate = if self.params.policy == AdmissionPolicy::FreeMarket {
            refund_rate(&self.params, lead).ok_or(MarketError::TooLate)?
        } else if now < self.slot_start(r.start) {
            Rate::ZERO
        } else {
            return Err(MarketError::TooLate);
        };
        if machines == Some(0) {
            return Err(MarketError::Param {
                field: "machines",
                msg: "cancel at least one machine".into(),
            });
        }
        let np_rule = self.params.open.np_cancellation;
        let Some(r) = self.reservations.get_mut(&id) else {
            return Err(MarketError::NotFound(id));
        };
        let before = r.slots_held();
        let k = machines.unwrap_or(u32::MAX);
        let whole = k >= r.machines();
        let mut per_slot: Vec<(u64, u32)> = Vec::new();
        for s in r.start..r.stop {
            let held = r.held(s);
            let gone = if whole { held } else { k.min(held) };
            if gone == 0 {
                continue;
            }
            per_slot.push((s, gone));
            if let Some(c) = r.counts.get_mut(&s) {
                *c -= gone;
            }
            if let Some(v) = r.specific.get_mut(&s) {
                v.truncate(v.len() - gone as usize);
            }
        }
        if !whole {
            // The user chose to hold fewer: the lower bound follows.
            r.lower = r.lower.min(r.machines());
        }
        let removed = before - r.slots_held();
        let value = r.take_escrow(removed, before, whole);
        let p_refund = value.p().scale(rate);
        let np_refund = match np_rule {
            NpCancellation::FullRefund => value.np,
            NpCancellation::ScheduleUntilStop => value.np.scale(rate),
        };
        r.np_forfeit += value.np - np_refund;
        if whole {
            r.withdrawn = true;
        }
        let station = r.station.clone();
        let drop = whole && r.np_forfeit == Money::ZERO;
        if drop {
            self.reservations.remove(&id);
        }
        // P: the refund to the station, the rest to the coordinator.
        self.bank.revenue += value.p() - p_refund;
        self.credit_p(&station, p_refund, (value.p_g, value.p_d));
        if let Some(e) = self.stations.get_mut(&station) {
            e.accounts.np += np_refund;
        }
        // Resale credits for the freed machine-slots (L1062).
        if removed > 0 && self.params.policy == AdmissionPolicy::FreeMarket {
            let unit_p = value.p().share(1, removed);
            let unit_np = value.np.share(1, removed);
            let origin = (value.p_g.share(1, removed), value.p_d.share(1, removed));
            let (np, unit, forfeit) = if unit_np > Money::ZERO {
                (true, unit_np, unit_np - unit_np.scale(rate))
            } else {
                (false, unit_p, unit_p - unit_p.scale(rate))
            };
            let credit = !np || np_rule == NpCancellation::ScheduleUntilStop;
            if credit && unit > Money::ZERO && forfeit > Money::ZERO {
                for (s, gone) in per_slot {
                    self.resale.push(ResaleCredit {
                        slot: s,
                        from: id,
                        station: station.clone(),
                        np,
                        forfeited: forfeit,
                        origin,
                        count: gone,
                    });
                }
            }
        }
        Ok(Cancelled {
            id,
            slots: removed,
            rate,
            refund: p_refund + np_refund,
            whole,
        })
    }
}
