//! Admission: the free-market algorithm (Mutka 1988 §6.3.1,
//! seeds/000_14c1149197e96532.txt L1023–1068) and the FCFS and
//! Pre-Allocated Capacity baselines (L995).
//!
//! A request for `lower..=upper` machines in each slot of `[start, stop)`
//! gets the most machines, up to `upper`, that (a) free capacity plus the
//! machines of reservations it may preempt can supply in every slot and (b)
//! its account can pay for; below `lower` nothing is reserved (L1068).
//! Free capacity is used before anything is preempted.

use super::market::Market;
use super::money::Money;
use super::params::{AdmissionPolicy, LockFrom, PreemptOn, VictimOrder};
use super::tables::{Accounts, Class, Reservation, ReservationId};
use super::{Granted, MarketError, PreemptionNotice, Request};
use crate::time::Time;
use std::collections::BTreeMap;

/// Machine-slots one victim loses.
#[derive(Clone, Debug, Default)]
struct Take {
    counts: BTreeMap<u64, u32>,
    stations: BTreeMap<u64, Vec<String>>,
}

impl Take {
    fn total(&self) -> u64 {
        self.counts.values().map(|c| u64::from(*c)).sum::<u64>()
            + self.stations.values().map(|v| v.len() as u64).sum::<u64>()
    }
}

/// A feasible way to grant `machines`.
#[derive(Clone, Debug, Default)]
struct Plan {
    machines: u32,
    stations: Vec<String>,
    takes: BTreeMap<ReservationId, Take>,
    fees: BTreeMap<ReservationId, Money>,
    /// Free machines used per slot (eligible for resale discounts).
    free_used: BTreeMap<u64, u32>,
}

impl Plan {
    fn fee_total(&self) -> Money {
        self.fees.values().copied().sum()
    }
}

/// A resale discount to pay: credit index, units, discount per unit.
type DiscountUse = (usize, u32, Money);

impl Market {
    /// Handles a `Reserve` request at `now`. On success the reservation is
    /// in the Reservation List and every account, escrow and victim is
    /// updated; on refusal nothing changed.
    pub fn reserve(&mut self, req: &Request, now: Time) -> Result<Granted, MarketError> {
        let (a, b) = self.check_request(req, now)?;
        let station = self
            .account_of(&req.user)
            .ok_or_else(|| MarketError::UnknownUser(req.user.clone()))?
            .to_string();
        let plan = match self.params.policy {
            AdmissionPolicy::FreeMarket => self.plan_market(req, &station, a, b, now)?,
            AdmissionPolicy::Fcfs => self.plan_simple(req, &station, a, b, None)?,
            AdmissionPolicy::Pac { quota } => self.plan_simple(req, &station, a, b, Some(quota))?,
        };
        Ok(self.commit(req, &station, a, b, plan, now))
    }

    fn check_request(&self, req: &Request, now: Time) -> Result<(u64, u64), MarketError> {
        let bad = |field: &'static str, msg: &str| MarketError::Param {
            field,
            msg: msg.to_string(),
        };
        if !self.is_slot_aligned(req.start) || !self.is_slot_aligned(req.stop) {
            return Err(bad("start", "start and stop must be on slot boundaries"));
        }
        if req.stop <= req.start {
            return Err(bad("stop", "stop must be after start"));
        }
        if req.start < now {
            return Err(bad("start", "the start has passed"));
        }
        if req.stop > now + self.params.booking_horizon {
            return Err(bad("stop", "beyond the booking horizon"));
        }
        let (a, b) = (self.slot_of(req.start), self.slot_of(req.stop));
        if b - a > u64::from(self.params.max_request_slots) {
            return Err(bad("stop", "the request spans too many slots"));
        }
        if req.lower == 0 || req.lower > req.upper {
            return Err(bad("lower", "need 1 <= lower <= upper"));
        }
        if req.upper as usize > self.stations.len().max(1) {
            return Err(bad("upper", "more machines than the pool has"));
        }
        let mut names = req.specific.clone();
        names.sort();
        names.dedup();
        if names.len() != req.specific.len() {
            return Err(bad("specific", "a station is named twice"));
        }
        for n in &req.specific {
            if !self.stations.contains_key(n) {
                return Err(MarketError::UnknownStation(n.clone()));
            }
        }
        if !req.specific.is_empty() && (req.lower as usize) > req.specific.len() {
            return Err(bad("lower", "more machines than specific stations named"));
        }
        Ok((a, b))
    }

    /// May a request of `class` paid by `station` (holding `np` NP) preempt
    /// `v` in slot `s` at `now`? (L1025, L1054, L1056.)
    fn may_preempt(
        &self,
        req: &Request,
        station: &str,
        np: Money,
        v: &Reservation,
        s: u64,
        now: Time,
    ) -> bool {
        if v.station == station {
            return false;
        }
        if self.params.open.preempt_on == PreemptOn::WhenAsked && !req.preempt {
            return false;
        }
        let by_class = match (req.class, v.class) {
            // 1st class is never preempted.
            (_, Class::First) => false,
            (Class::First, _) => true,
            (Class::Second, Class::Third) => true,
            (Class::Second, Class::Second) => false,
            // 3rd vs 3rd: the holder of more available NP wins (L1025).
            (Class::Third, Class::Third) => {
                let theirs = self
                    .stations
                    .get(&v.station)
                    .map_or(Money::ZERO, |e| e.accounts.np);
                np > theirs
            }
            (Class::Third, _) => false,
        };
        if !by_class {
            return false;
        }
        // The lock: nothing is preempted within Preemptable_Time_Period of
        // the reservation (L1056).
        let lock_slot = match self.params.open.lock_from {
            LockFrom::ReservationStart => v.start,
            LockFrom::EachSlot => s,
        };
        self.lead(now, lock_slot) > self.params.preemptable_time_period
    }

    /// Victims of slot `s`, in the order they are taken.
    fn victims(&self, req: &Request, station: &str, s: u64, now: Time) -> Vec<&Reservation> {
        let np = self
            .stations
            .get(station)
            .map_or(Money::ZERO, |e| e.accounts.np);
        let mut v: Vec<&Reservation> = self
            .live()
            .filter(|r| r.start <= s && s < r.stop && r.held(s) > 0)
            .filter(|r| self.may_preempt(req, station, np, r, s, now))
            .collect();
        let newest = self.params.open.victim_order == VictimOrder::NewestFirst;
        v.sort_by_key(|r| {
            let class_rank = match r.class {
                Class::Third => 0u8,
                Class::Second => 1,
                Class::First => 2,
            };
            let np = if r.class == Class::Third {
                self.stations.get(&r.station).map_or(0, |e| e.accounts.np.0)
            } else {
                0
            };
            let age = if newest { u64::MAX - r.id } else { r.id };
            (class_rank, np, age)
        });
        v
    }

    /// The holder of specific station `name` in slot `s`, if any.
    fn specific_holder(&self, name: &str, s: u64) -> Option<&Reservation> {
        self.live().find(|r| {
            r.specific
                .get(&s)
                .is_some_and(|v| v.iter().any(|x| x == name))
        })
    }

    /// Fee per machine-slot a preemptor of `class` pays for a victim's slot.
    fn fee(&self, by: Class, victim: Class) -> Money {
        match (by, victim) {
            (Class::First, Class::Second) => self
                .params
                .second_class_rate
                .scale(self.params.preemption_fee_rate),
            (Class::First | Class::Second, Class::Third) => self
                .params
                .third_class_rate
                .scale(self.params.open.third_preemption_fee_rate),
            _ => Money::ZERO,
        }
    }

    fn plan_market(
        &self,
        req: &Request,
        station: &str,
        a: u64,
        b: u64,
        now: Time,
    ) -> Result<Plan, MarketError> {
        let free: Vec<u32> = (a..b).map(|s| self.free(s)).collect();
        let victims: Vec<Vec<&Reservation>> =
            (a..b).map(|s| self.victims(req, station, s, now)).collect();
        // Upper bound: free plus everything preemptable, in every slot.
        let mut g_max = req.upper;
        for (i, s) in (a..b).enumerate() {
            let pre: u32 = victims[i].iter().map(|r| r.held(s)).sum();
            g_max = g_max.min(free[i].saturating_add(pre));
        }
        let specific = if req.specific.is_empty() {
            None
        } else {
            let ok =
                |r: &Reservation, s: u64| victims[(s - a) as usize].iter().any(|v| v.id == r.id);
            let cands = self.specific_candidates(req, a, b, ok)?;
            g_max = g_max.min(cands.len() as u32);
            Some(cands)
        };
        if g_max < req.lower {
            return Err(MarketError::Unavailable {
                lower: req.lower,
                available: g_max,
            });
        }
        let acc = self
            .stations
            .get(station)
            .map_or(Accounts::default(), |e| e.accounts);
        let mut first_cost = None;
        for g in (req.lower..=g_max).rev() {
            let chosen: Vec<String> = specific
                .as_ref()
                .map(|c| c.iter().take(g as usize).cloned().collect())
                .unwrap_or_default();
            let Some(plan) = self.plan_victims(req, a, b, g, &free, &victims, chosen) else {
                continue;
            };
            let (price, _) = self.price_after_discounts(req.class, station, &plan, a, b);
            let fees = plan.fee_total();
            let (need_p, need_np) = if req.class.uses_np() {
                (fees, price)
            } else {
                (price + fees, Money::ZERO)
            };
            if need_p <= acc.p() && need_np <= acc.np {
                return Ok(plan);
            }
            first_cost.get_or_insert((need_p, need_np));
        }
        let (need_p, need_np) = first_cost.unwrap_or((Money::ZERO, Money::ZERO));
        if req.class.uses_np() && need_np > acc.np {
            Err(MarketError::Unaffordable {
                needed: need_np,
                have: acc.np,
            })
        } else if need_p > acc.p() {
            Err(MarketError::Unaffordable {
                needed: need_p,
                have: acc.p(),
            })
        } else {
            Err(MarketError::Unavailable {
                lower: req.lower,
                available: 0,
            })
        }
    }

    /// Named stations that can be had for the whole request, those needing
    /// no preemption first.
    fn specific_candidates(
        &self,
        req: &Request,
        a: u64,
        b: u64,
        victim_ok: impl Fn(&Reservation, u64) -> bool,
    ) -> Result<Vec<String>, MarketError> {
        let cal = self.params.calendar;
        let mut cands: Vec<(u32, usize, String)> = Vec::new();
        let mut not_donated = None;
        for (i, name) in req.specific.iter().enumerate() {
            let Some(e) = self.stations.get(name) else {
                continue;
            };
            // Only manually donated stations can be reserved specifically.
            if !(a..b).all(|s| e.donated_at(&cal, self.slot_start(s))) {
                not_donated.get_or_insert_with(|| name.clone());
                continue;
            }
            let mut preempts = 0u32;
            let mut ok = true;
            for s in a..b {
                match self.specific_holder(name, s) {
                    None => {}
                    Some(r) if victim_ok(r, s) => preempts += 1,
                    Some(_) => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                cands.push((preempts, i, name.clone()));
            }
        }
        if cands.is_empty()
            && let Some(station) = not_donated
        {
            return Err(MarketError::NotDonated { station });
        }
        cands.sort();
        Ok(cands.into_iter().map(|(_, _, n)| n).collect())
    }

    /// Which victims lose which machine-slots to grant `g` (with the chosen
    /// specific stations), or `None` if some slot cannot be covered.
    #[allow(clippy::too_many_arguments)]
    fn plan_victims(
        &self,
        req: &Request,
        a: u64,
        b: u64,
        g: u32,
        free: &[u32],
        victims: &[Vec<&Reservation>],
        chosen: Vec<String>,
    ) -> Option<Plan> {
        let mut plan = Plan {
            machines: g,
            stations: chosen,
            ..Plan::default()
        };
        for (i, s) in (a..b).enumerate() {
            let mut covered = 0u32;
            // Chosen specific stations held by victims are taken with them.
            for name in &plan.stations {
                if let Some(r) = self.specific_holder(name, s) {
                    plan.takes
                        .entry(r.id)
                        .or_default()
                        .stations
                        .entry(s)
                        .or_default()
                        .push(name.clone());
                    covered += 1;
                }
            }
            let from_free = g.saturating_sub(covered).min(free[i]);
            plan.free_used.insert(s, from_free);
            let mut need = g.saturating_sub(covered + from_free);
            for v in &victims[i] {
                if need == 0 {
                    break;
                }
                let take = plan.takes.entry(v.id).or_default();
                if v.is_specific() {
                    let gone = take.stations.entry(s).or_default();
                    for name in v.specific.get(&s).into_iter().flatten().rev() {
                        if need == 0 {
                            break;
                        }
                        if gone.contains(name) || plan.stations.contains(name) {
                            continue;
                        }
                        gone.push(name.clone());
                        need -= 1;
                    }
                } else {
                    let already = take.counts.get(&s).copied().unwrap_or(0);
                    let t = need.min(v.held(s).saturating_sub(already));
                    if t > 0 {
                        *take.counts.entry(s).or_insert(0) += t;
                        need -= t;
                    }
                }
            }
            if need > 0 {
                return None;
            }
        }
        plan.takes.retain(|_, t| t.total() > 0);
        for (id, t) in &plan.takes {
            let class = self.reservations.get(id).map_or(Class::First, |r| r.class);
            let fee = self.fee(req.class, class).times(t.total());
            if fee > Money::ZERO {
                plan.fees.insert(*id, fee);
            }
        }
        Some(plan)
    }

    /// The price of a plan after resale discounts, and which credits it
    /// uses. Credits apply to free machines in the same currency.
    fn price_after_discounts(
        &self,
        class: Class,
        station: &str,
        plan: &Plan,
        a: u64,
        b: u64,
    ) -> (Money, Vec<DiscountUse>) {
        let unit = self.params.price(class);
        let slots = b - a;
        let mut price = unit.times(u64::from(plan.machines) * slots);
        let mut uses = Vec::new();
        if self.params.discount_rate == super::money::Rate::ZERO {
            return (price, uses);
        }
        for (s, n) in &plan.free_used {
            let mut left = *n;
            for (i, c) in self.resale.iter().enumerate() {
                if left == 0 {
                    break;
                }
                if c.slot != *s || c.np != class.uses_np() || c.count == 0 || c.station == station {
                    continue;
                }
                let k = left.min(c.count);
                let d = c.forfeited.scale(self.params.discount_rate).min(unit);
                if d > Money::ZERO {
                    uses.push((i, k, d));
                    price -= d.times(u64::from(k));
                }
                left -= k;
            }
        }
        (price, uses)
    }

    /// FCFS and Pre-Allocated Capacity: free machines only, no money.
    fn plan_simple(
        &self,
        req: &Request,
        station: &str,
        a: u64,
        b: u64,
        quota: Option<u32>,
    ) -> Result<Plan, MarketError> {
        let mut g = req.upper;
        for s in a..b {
            g = g.min(self.free(s));
        }
        let specific = if req.specific.is_empty() {
            None
        } else {
            let c = self.specific_candidates(req, a, b, |_, _| false)?;
            g = g.min(c.len() as u32);
            Some(c)
        };
        if g < req.lower {
            return Err(MarketError::Unavailable {
                lower: req.lower,
                available: g,
            });
        }
        if let Some(q) = quota {
            // Each local day: what the station holds plus g per new slot.
            let cal = self.params.calendar;
            let mut per_day: BTreeMap<i64, u32> = BTreeMap::new();
            for s in a..b {
                *per_day.entry(cal.day(self.slot_start(s))).or_insert(0) += 1;
            }
            for (day, n) in &per_day {
                let held: u64 = self
                    .live()
                    .filter(|r| r.station == station)
                    .flat_map(|r| (r.start..r.stop).map(move |s| (s, r.held(s))))
                    .filter(|(s, _)| cal.day(self.slot_start(*s)) == *day)
                    .map(|(_, h)| u64::from(h))
                    .sum();
                let room = u64::from(q).saturating_sub(held) / u64::from(*n);
                g = g.min(room as u32);
            }
            if g < req.lower {
                return Err(MarketError::Quota {
                    station: station.to_string(),
                    quota: q,
                });
            }
        }
        Ok(Plan {
            machines: g,
            stations: specific
                .map(|c| c.into_iter().take(g as usize).collect())
                .unwrap_or_default(),
            free_used: (a..b).map(|s| (s, g)).collect(),
            ..Plan::default()
        })
    }

    fn commit(
        &mut self,
        req: &Request,
        station: &str,
        a: u64,
        b: u64,
        plan: Plan,
        now: Time,
    ) -> Granted {
        let id = self.next_id;
        self.next_id += 1;
        let market = self.params.policy == AdmissionPolicy::FreeMarket;
        let (price, uses) = if market {
            self.price_after_discounts(req.class, station, &plan, a, b)
        } else {
            (Money::ZERO, Vec::new())
        };
        let fees = plan.fee_total();
        let mut escrow = Accounts::default();
        let mut discount = Money::ZERO;
        // Pay: P from capital gains first, then daily income (L1058); fees
        // are drawn first, then the price.
        if let Some(e) = self.stations.get_mut(station) {
            let p_total = if req.class.uses_np() {
                fees
            } else {
                price + fees
            };
            let from_g = e.accounts.p_g.min(p_total);
            let from_d = p_total - from_g;
            e.accounts.p_g -= from_g;
            e.accounts.p_d -= from_d;
            if req.class.uses_np() {
                e.accounts.np -= price;
                escrow.np = price;
            } else {
                let fee_g = from_g.min(fees);
                escrow.p_g = from_g - fee_g;
                escrow.p_d = from_d - (fees - fee_g);
            }
        }
        // Resale discounts: the canceller gets the same discount back.
        for (i, k, d) in uses {
            let Some(c) = self.resale.get_mut(i) else {
                continue;
            };
            c.count -= k;
            let c = c.clone();
            let amount = d.times(u64::from(k));
            discount += amount;
            if c.np {
                let back = match self.reservations.get_mut(&c.from) {
                    Some(r) => {
                        let x = amount.min(r.np_forfeit);
                        r.np_forfeit -= x;
                        x
                    }
                    None => Money::ZERO,
                };
                if let Some(e) = self.stations.get_mut(&c.station) {
                    e.accounts.np += back;
                }
            } else {
                let amount = amount.min(self.bank.revenue);
                self.bank.revenue -= amount;
                self.credit_p(&c.station, amount, c.origin);
            }
        }
        self.resale.retain(|c| c.count > 0);
        // Victims.
        let mut notices = Vec::new();
        for (vid, take) in &plan.takes {
            let fee = plan.fees.get(vid).copied().unwrap_or(Money::ZERO);
            if let Some(n) = self.apply_take(*vid, take, fee, id) {
                notices.push(n);
            }
        }
        let mut r = Reservation {
            id,
            user: req.user.clone(),
            station: station.to_string(),
            class: req.class,
            start: a,
            stop: b,
            lower: req.lower,
            upper: req.upper,
            counts: BTreeMap::new(),
            specific: BTreeMap::new(),
            escrow,
            np_forfeit: Money::ZERO,
            made_at: now,
            withdrawn: false,
        };
        for s in a..b {
            if plan.stations.is_empty() {
                r.counts.insert(s, plan.machines);
            } else {
                r.specific.insert(s, plan.stations.clone());
            }
        }
        self.reservations.insert(id, r);
        Granted {
            id,
            machines: plan.machines,
            stations: plan.stations,
            paid: price,
            fees,
            discount,
            preempted: notices,
        }
    }

    /// Takes machine-slots from reservation `vid`, refunds their price (if
    /// the setting says so; NP always returns, L1050) and pays the fee as a
    /// capital gain (L1054). A victim left below its lower bound in any
    /// slot goes entirely.
    fn apply_take(
        &mut self,
        vid: ReservationId,
        take: &Take,
        fee: Money,
        by: ReservationId,
    ) -> Option<PreemptionNotice> {
        let refund_preempted = self.params.open.refund_preempted;
        let r = self.reservations.get_mut(&vid)?;
        let before = r.slots_held();
        for (s, c) in &take.counts {
            if let Some(h) = r.counts.get_mut(s) {
                *h = h.saturating_sub(*c);
            }
        }
        for (s, gone) in &take.stations {
            if let Some(v) = r.specific.get_mut(s) {
                v.retain(|x| !gone.contains(x));
            }
        }
        let whole = (r.start..r.stop).any(|s| r.held(s) < r.lower);
        if whole {
            r.counts.values_mut().for_each(|c| *c = 0);
            r.specific.values_mut().for_each(Vec::clear);
        }
        let removed = before - r.slots_held();
        let value = r.take_escrow(removed, before, whole);
        r.withdrawn = whole;
        self.finish_take(vid, removed, value, fee, by, whole, refund_preempted)
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_take(
        &mut self,
        vid: ReservationId,
        removed: u64,
        value: Accounts,
        fee: Money,
        by: ReservationId,
        whole: bool,
        refund_preempted: bool,
    ) -> Option<PreemptionNotice> {
        let (user, station, np_forfeit) = {
            let r = self.reservations.get(&vid)?;
            (r.user.clone(), r.station.clone(), r.np_forfeit)
        };
        if let Some(e) = self.stations.get_mut(&station) {
            e.accounts.np += value.np;
            e.accounts.p_g += fee;
        }
        let p_value = value.p();
        if refund_preempted {
            self.credit_p(&station, p_value, (value.p_g, value.p_d));
        } else {
            self.bank.revenue += p_value;
        }
        if whole && np_forfeit == Money::ZERO {
            self.reservations.remove(&vid);
        }
        Some(PreemptionNotice {
            reservation: vid,
            user,
            station,
            by,
            slots: removed,
            whole,
            refund: if refund_preempted {
                p_value
            } else {
                Money::ZERO
            } + value.np,
            fee,
        })
    }
}
