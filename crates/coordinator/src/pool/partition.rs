//! The reservation coordinator's role in the pool (Mutka 1988 ch. 6,
//! seeds/000_14c1149197e96532.txt L974–1191): the market's tables
//! (`gleaner_core::reservation::Market`), the binding of the current slot's
//! reservations to stations, and the partition rule placing obeys.
//!
//! Pure like the rest of `pool`: every call takes `now`; `Random`
//! replacement draws from its own seeded stream. The daemon persists
//! [`PartitionState`] (`reservations.json`) after every change.
//!
//! - The System Table follows the ads: a station joins the market at its
//!   first ad; AV (hosting) or NA is its state; an ad attribute
//!   `ReservationDonated = true` (station `[attrs]`) is its owner's manual
//!   donation, so specific reservations of it are allowed (L974, L1068).
//! - When a slot begins, [`Binding::bind`] picks the machines of its
//!   reservations (specific first, then the rule, L883–893).
//! - A bound station turning NA is replaced by an unreserved AV station
//!   (Longest-Free or Random); none free counts an error (L883).
//! - While bound, a station runs only its holder's jobs; with `confine`, a
//!   user holding stations runs only on them.

use crate::reserve_config::ReservationsConfig;
use gleaner_core::reservation::replacement::{Binding, Demand, ReplacementRule};
use gleaner_core::reservation::session::{Ack, RequestEntry};
use gleaner_core::reservation::{Market, MarketError, MarketParams, ReservationId, StationState};
use gleaner_core::rng::PolicyRng;
use gleaner_core::time::Time;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Schema of `reservations.json`.
pub const PARTITION_SCHEMA: u32 = 1;

/// The station ad attribute by which an owner donates the station for
/// specific reservations.
pub const DONATED_ATTR: &str = "ReservationDonated";

/// Replacement counters since the pool began (persisted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplacementStats {
    /// Reserved stations whose owner returned (each needed a replacement).
    pub withdrawals: u64,
    /// Replacements made.
    pub replaced: u64,
    /// Machine-hours missing: at a slot's start or on a withdrawal with no
    /// unreserved AV station free (the thesis's error, L883).
    pub errors: u64,
}

/// Everything the role keeps across restarts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartitionState {
    pub schema: u32,
    pub market: Market,
    /// The slot the binding is for, and the binding.
    pub slot: Option<u64>,
    pub binding: Option<Binding<String>>,
    /// When each hosting station last became AV (Longest-Free's key).
    pub av_since: BTreeMap<String, Time>,
    /// Stations whose ads donate them.
    pub donated: BTreeSet<String>,
    pub stats: ReplacementStats,
}

/// A station's facts from its ad, as the role needs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// AV and not submit-only: it offers nodes.
    pub hosting: bool,
    pub donated: bool,
}

/// What a binding change means to placing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rebound {
    /// Withdrawn stations and what replaced them (`None`: an error).
    pub replaced: Vec<(String, Option<String>)>,
}

/// The reservation role. See the module docs.
pub struct Partition {
    market: Market,
    rule: ReplacementRule,
    confine: bool,
    accounts: BTreeMap<String, String>,
    owners: BTreeMap<String, String>,
    public: BTreeSet<String>,
    slot: Option<u64>,
    binding: Option<Binding<String>>,
    av_since: BTreeMap<String, Time>,
    donated: BTreeSet<String>,
    stats: ReplacementStats,
    rng: PolicyRng,
    dirty: bool,
}

/// Why the role could not start.
#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    #[error("{0}")]
    Config(String),
    #[error("reservations.json: {0}")]
    State(#[from] MarketError),
    #[error("reservations.json: schema {found}, expected {PARTITION_SCHEMA}")]
    Schema { found: u32 },
}

impl Partition {
    /// The role from the configuration, restoring `saved` if any. A saved
    /// market keeps its parameters except the reservable share, which the
    /// administrator may change between starts (L1090).
    pub fn new(
        config: &ReservationsConfig,
        seed: u64,
        saved: Option<PartitionState>,
    ) -> Result<Partition, PartitionError> {
        let params = config
            .market_params()
            .map_err(|e| PartitionError::Config(e.to_string()))?;
        Partition::with_params(config, params, seed, saved)
    }

    /// The role with market parameters resolved by the caller: the
    /// simulator's, whose clock starts on a Monday (`Calendar::SIM`), not
    /// at the Unix epoch. `params` are `config.market_params()` otherwise.
    pub fn with_params(
        config: &ReservationsConfig,
        params: MarketParams,
        seed: u64,
        saved: Option<PartitionState>,
    ) -> Result<Partition, PartitionError> {
        params.validate().map_err(|(field, msg)| {
            PartitionError::Config(format!("reservations.{field}: {msg}"))
        })?;
        let mut p = Partition {
            market: Market::new(params.clone())?,
            rule: config.replacement,
            confine: config.confine,
            accounts: config.accounts.clone(),
            owners: config.owners.clone(),
            public: config.public_stations.clone(),
            slot: None,
            binding: None,
            av_since: BTreeMap::new(),
            donated: BTreeSet::new(),
            stats: ReplacementStats::default(),
            rng: gleaner_core::rng::seeded(config.seed.unwrap_or(seed)),
            dirty: false,
        };
        if let Some(s) = saved {
            if s.schema != PARTITION_SCHEMA {
                return Err(PartitionError::Schema { found: s.schema });
            }
            s.market.validate_loaded()?;
            let mut market = s.market;
            let mut want = params.clone();
            want.reservable_share = market.params().reservable_share;
            if *market.params() != want {
                return Err(PartitionError::Config(
                    "reservations.json was written under other [reservations] parameters \
                     (only reservable_share may change while reservations exist); restore \
                     the old settings or move reservations.json away"
                        .into(),
                ));
            }
            for (h, share) in params.reservable_share.iter().enumerate() {
                market.set_share(h as u32, *share)?;
            }
            p.market = market;
            p.slot = s.slot;
            p.binding = s.binding;
            p.av_since = s.av_since;
            p.donated = s.donated;
            p.stats = s.stats;
        }
        let links: Vec<(String, String)> = p
            .accounts
            .iter()
            .map(|(u, s)| (u.clone(), s.clone()))
            .collect();
        for (user, station) in links {
            if p.market.station(&station).is_some() && p.market.account_of(&user) != Some(&station)
            {
                p.market.link_user(&user, &station)?;
            }
        }
        Ok(p)
    }

    /// The durable state.
    pub fn state(&self) -> PartitionState {
        PartitionState {
            schema: PARTITION_SCHEMA,
            market: self.market.clone(),
            slot: self.slot,
            binding: self.binding.clone(),
            av_since: self.av_since.clone(),
            donated: self.donated.clone(),
            stats: self.stats,
        }
    }

    /// Whether something durable changed since the last call.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    pub fn market(&self) -> &Market {
        &self.market
    }
    pub fn stats(&self) -> ReplacementStats {
        self.stats
    }
    pub fn rule(&self) -> ReplacementRule {
        self.rule
    }
    /// Hosting stations and when each became AV (Longest-Free's key).
    pub fn av_since(&self) -> &BTreeMap<String, Time> {
        &self.av_since
    }

    /// The current slot's stations and the reservation each serves.
    pub fn bound(&self) -> Vec<(String, ReservationId)> {
        let Some(b) = &self.binding else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for r in self.market.reservation_list() {
            for s in b.stations_of(r.id) {
                out.push((s, r.id));
            }
        }
        out.sort();
        out
    }

    /// The user whose reservation `station` serves now.
    pub fn holder(&self, station: &str) -> Option<&str> {
        let id = self.binding.as_ref()?.holder(station)?;
        self.market.reservation(id).map(|r| r.user.as_str())
    }

    /// Whether `user` holds stations now (and so, under `confine`, runs
    /// only there).
    pub fn holds_any(&self, user: &str) -> bool {
        self.binding.as_ref().is_some_and(|b| {
            self.market
                .reservations_of(user)
                .iter()
                .any(|r| !b.stations_of(r.id).is_empty())
        })
    }

    /// The partition rule: may a job of `owner` run on `host` now? A bound
    /// station runs only its holder's jobs; under `confine` a user holding
    /// stations runs nowhere else. `owner` is `None` for a home that sends
    /// no job classes: it may use only unbound stations.
    pub fn allows(&self, host: &str, owner: Option<&str>) -> bool {
        match (self.holder(host), owner) {
            (Some(h), Some(o)) => h == o,
            (Some(_), None) => false,
            (None, Some(o)) => !(self.confine && self.holds_any(o)),
            (None, None) => true,
        }
    }

    fn av_list(&self, except: Option<&str>) -> Vec<(String, Time)> {
        self.av_since
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != except)
            .map(|(k, t)| (k.clone(), *t))
            .collect()
    }

    /// Records a station's ad: joins the System Table, follows AV/NA and the
    /// donation flag; a bound station turning NA is replaced.
    pub fn observe(&mut self, name: &str, seen: Seen, now: Time) -> Rebound {
        let mut out = Rebound::default();
        if self.market.station(name).is_none() {
            let owner = self.owners.get(name).cloned().unwrap_or_default();
            let public = self.public.contains(name);
            if let Err(e) = self.market.add_station(name, &owner, public) {
                tracing::warn!(station = name, error = %e, "cannot add the station to the reservation tables");
                return out;
            }
            let users: Vec<String> = self
                .accounts
                .iter()
                .filter(|(_, s)| s.as_str() == name)
                .map(|(u, _)| u.clone())
                .collect();
            for u in users {
                let _ = self.market.link_user(&u, name);
            }
            self.dirty = true;
        }
        // Donated while the ad says so. The market needs an instant: the
        // donation always reaches past anything bookable, renewed as time
        // goes by (a donation ends when the ad stops saying so).
        let horizon = self.market.params().booking_horizon;
        let until = self.market.station(name).and_then(|e| e.global_donation);
        let renew = seen.donated && until.is_none_or(|u| u < now + horizon);
        let end = !seen.donated && self.donated.contains(name);
        if renew || end {
            let until = seen.donated.then(|| now + horizon + horizon);
            if self.market.set_donation(name, until, Vec::new()).is_ok() {
                if seen.donated {
                    self.donated.insert(name.to_string());
                } else {
                    self.donated.remove(name);
                }
                self.dirty = true;
            }
        }
        let was = self.av_since.contains_key(name);
        if seen.hosting && !was {
            self.av_since.insert(name.to_string(), now);
            self.dirty = true;
            self.catch_up(now);
            if let Some(b) = &mut self.binding
                && b.available(&name.to_string()).is_some()
            {
                tracing::info!(station = name, "reserved slot short of a machine: filled");
            }
        } else if !seen.hosting && was {
            self.av_since.remove(name);
            self.dirty = true;
            self.catch_up(now);
            out.replaced.extend(self.withdraw(name));
        }
        if out.replaced.is_empty() {
            self.sync_state(name);
        } else {
            self.sync_states();
        }
        out
    }

    /// A station left the pool (silent): as if its owner came back.
    pub fn forget(&mut self, name: &str, now: Time) -> Rebound {
        let mut out = Rebound::default();
        if self.av_since.remove(name).is_some() {
            self.dirty = true;
            self.catch_up(now);
            out.replaced.extend(self.withdraw(name));
            self.sync_states();
        }
        out
    }

    /// Moves to `now`'s slot first if the binding is for a slot that has
    /// ended: an owner returning after its hour is no withdrawal from that
    /// hour (the thesis's error is an hour's shortfall, L883); the new
    /// slot binds from the stations AV now instead.
    fn catch_up(&mut self, now: Time) {
        if self.slot.is_some_and(|s| s != self.market.slot_of(now)) {
            self.advance(now);
        }
    }

    fn withdraw(&mut self, name: &str) -> Option<(String, Option<String>)> {
        // Most owners who return hold no reserved machine: no list to build.
        self.binding.as_ref()?.holder(name)?;
        let av = self.av_list(Some(name));
        let b = self.binding.as_mut()?;
        let r = b.withdrawn(&name.to_string(), &av, &mut self.rng)?;
        self.stats.withdrawals += 1;
        match &r.by {
            Some(by) => {
                self.stats.replaced += 1;
                tracing::info!(station = name, replacement = %by, reservation = r.reservation, rule = ?self.rule, "reserved station withdrawn by its owner: replaced");
            }
            None => {
                self.stats.errors += 1;
                tracing::warn!(
                    station = name,
                    reservation = r.reservation,
                    "reserved station withdrawn and no unreserved AV station free: error"
                );
            }
        }
        Some((name.to_string(), r.by))
    }

    /// The System Table's state of `name` now: RES if bound, AV or NA.
    fn table_state(&self, name: &str) -> (StationState, Option<&str>) {
        let holder = self.holder(name);
        let state = match (holder, self.av_since.contains_key(name)) {
            (Some(_), _) => StationState::Res,
            (None, true) => StationState::Av,
            (None, false) => StationState::Na,
        };
        (state, holder)
    }

    /// Brings every station's System Table entry up to date.
    fn sync_states(&mut self) {
        // Allocates only for the entries that change.
        let mut changed: Vec<(String, StationState, Option<String>)> = Vec::new();
        for (n, e) in self.market.stations() {
            let (state, holder) = self.table_state(n);
            if e.state != state || e.client.as_deref() != holder {
                changed.push((n.to_string(), state, holder.map(str::to_string)));
            }
        }
        for (n, state, holder) in changed {
            let _ = self.market.set_state(&n, state, holder);
        }
    }

    /// Brings `name`'s entry up to date: all an ad changes when it moves
    /// no reserved machine (every ad of a pool calls this).
    fn sync_state(&mut self, name: &str) {
        let Some(e) = self.market.station(name) else {
            return;
        };
        let (state, holder) = self.table_state(name);
        if e.state != state || e.client.as_deref() != holder {
            let holder = holder.map(str::to_string);
            let _ = self.market.set_state(name, state, holder);
        }
    }

    /// Moves the market to `now` (expiries, income) and binds the slot's
    /// reservations when a slot begins or its reservations changed.
    pub fn advance(&mut self, now: Time) -> bool {
        let before = self.market.bank();
        let expired = self.market.advance(now);
        let slot = self.market.slot_of(now);
        let mut changed = !expired.is_empty() || self.market.bank() != before;
        if self.slot != Some(slot) || !self.binding_matches(slot) {
            self.rebind(slot);
            changed = true;
        }
        if changed {
            self.dirty = true;
            self.sync_states();
        }
        changed
    }

    /// The current slot's demands. A reservation that continues from the
    /// previous slot asks first for the stations serving it now, so it
    /// keeps them (and its running jobs) across the slot boundary.
    fn demands(&self, slot: u64) -> Vec<Demand<String>> {
        self.market
            .active_in(slot)
            .into_iter()
            .map(|r| {
                let mut specific = r.specific.get(&slot).cloned().unwrap_or_default();
                if specific.is_empty()
                    && let Some(b) = &self.binding
                {
                    specific = b.stations_of(r.id);
                    specific.truncate(r.held(slot) as usize);
                }
                Demand {
                    reservation: r.id,
                    count: r.held(slot),
                    specific,
                }
            })
            .collect()
    }

    /// Whether the binding still covers exactly the slot's reservations.
    fn binding_matches(&self, slot: u64) -> bool {
        let Some(b) = &self.binding else {
            return self.demands(slot).is_empty();
        };
        let want: BTreeMap<ReservationId, u32> = self
            .demands(slot)
            .into_iter()
            .map(|d| (d.reservation, d.count))
            .collect();
        let mut have: BTreeMap<ReservationId, u32> = BTreeMap::new();
        for (n, _) in self.market.stations() {
            if let Some(id) = b.holder(n) {
                *have.entry(id).or_default() += 1;
            }
        }
        for (id, n) in b.shortfall() {
            *have.entry(*id).or_default() += n;
        }
        want == have
    }

    fn rebind(&mut self, slot: u64) {
        let demands = self.demands(slot);
        let av = self.av_list(None);
        let b = Binding::bind(self.rule, &demands, &av, &mut self.rng);
        if b.errors > 0 {
            tracing::warn!(
                slot,
                missing = b.errors,
                "slot begins short of reserved machines"
            );
        }
        self.stats.errors += b.errors;
        self.slot = Some(slot);
        self.binding = (!demands.is_empty()).then_some(b);
    }

    /// Applies a local handler's session for `user` (Tables 6.11/6.12).
    pub fn sync(&mut self, user: &str, rows: &[RequestEntry], now: Time) -> Vec<Ack> {
        let acks = self.market.sync(user, rows, now);
        self.dirty |= acks.iter().any(|a| a.accepted);
        self.advance(now);
        acks
    }
}
