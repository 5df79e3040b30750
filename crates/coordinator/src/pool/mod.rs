//! The coordinator's view of the pool and its allocation rules, free of I/O.
//!
//! The coordinator knows only availability, demand and the schedule index
//! (Mutka 1988 §4.3, L583–585); job state lives on the home stations. Ads are
//! soft state: they are rebuilt from advertisements after a restart, and only
//! the station-id map and the Up-Down table are persisted.
//!
//! ## One clock, effects as data
//! Every method takes the current [`Time`]: the daemon passes wall-clock
//! microseconds since the UNIX epoch, the simulator its own time. Randomness
//! (Random allocation, Up-Down ties) comes from one seeded
//! [`gleaner_core::rng`] stream. Grants, preemptions and "persist the claims"
//! are written into an [`Outbox`] the caller delivers; claim ids come from an
//! injected [`ClaimMinter`]. So `gleaner-sim` drives this very code
//! (`glean sim pool`).
//!
//! ## Nodes
//! An AV station that is not `submit_only` offers `cpus` nodes. Each guest in
//! its ad occupies one node, held by the guest's home station; each pending
//! claim (granted, not yet seen running) reserves one more. The rest are
//! free. The ad has no count of the owner's own background work: a station
//! daemon that runs local jobs advertises fewer `cpus` (or NA). Guests on an
//! NA host are neither free nor preemptible (the host itself vacates them).
//!
//! ## Demand
//! A station's waiting count is its `idle_jobs` less the grants it has not
//! used yet (pending claims and nodes reserved for it by a preemption), so a
//! station is never granted more nodes than it has idle jobs. `execute_only`
//! stations take no part in allocation or in the index table.
//!
//! ## DMW's rules
//! The embargo, the guest limit and the progress guarantee are the core's
//! (`gleaner_core::dmw::rules`), applied through the fit check of
//! `gleaner_proto::fit`; the guarantee never preempts.

mod accounting;
mod claims;
mod destinations;
mod drain;
mod effects;
mod event_pass;
mod gang;
#[cfg(test)]
mod gang_tests;
mod host_order;
mod known;
mod ledger;
mod name_key;
pub mod partition;
mod partition_placing;
mod placing;

pub use claims::{ClaimFacts, ClaimMinter, Minted, Prepared, Sealing, UnsignedClaims};
pub use effects::{Message, Outbox};

use crate::config::Timing;
use crate::matchmaker::{AdEntry, AdsView, LicenceBook, LicenceUse};
use crate::persist::{ClaimsState, FairnessState, SavedClaim};
use claims::{PendingClaim, guest_licences};
use gleaner_core::alloc::{Allocator, AllocatorConfig, StationId, UpDown};
use gleaner_core::detector::OwnerState;
use gleaner_core::dmw::{Embargo, Pass};
use gleaner_core::rng::PolicyRng;
use gleaner_core::time::Time;
use gleaner_proto::matchmaking::parse_limits;
use gleaner_proto::wire::{
    AdvertiseReply, ClaimNotice, PROTOCOL_VERSION, PoolStatus, StationAd, StationStatus, UserPrio,
    UserPrioEntry,
};
use known::Known;
use ledger::{Claims, Reservations};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The allocator, keeping Up-Down concrete so its index table can be read
/// and restored.
enum Policy {
    UpDown(UpDown),
    Other(Box<dyn Allocator>),
}

impl Policy {
    fn new(config: &AllocatorConfig) -> Self {
        match config {
            AllocatorConfig::UpDown(c) => Policy::UpDown(UpDown::new(c.clone())),
            other => Policy::Other(other.build()),
        }
    }
    fn alloc(&mut self) -> &mut dyn Allocator {
        match self {
            Policy::UpDown(u) => u,
            Policy::Other(a) => a.as_mut(),
        }
    }
    fn index(&self, id: StationId) -> f64 {
        match self {
            Policy::UpDown(u) => u.index(id),
            Policy::Other(_) => 0.0,
        }
    }
}

/// The coordinator's state. All methods take the current time and write
/// their effects into an [`Outbox`], so the server and the simulator drive
/// the same code.
pub struct Pool {
    timing: Timing,
    minter: Box<dyn ClaimMinter>,
    kind: &'static str,
    names: Vec<String>,
    /// Names to ids, looked up for every ad: foldhash, seeded at random
    /// per map like std's SipHash, and faster on short names; short names
    /// kept in the table's slots (`name_key.rs`).
    ids: HashMap<name_key::NameKey, StationId, foldhash::fast::RandomState>,
    stations: known::ById<Known>,
    policy: Policy,
    rng: PolicyRng,
    /// A separate stream for claim nonces, so that minting does not shift
    /// the allocator's random choices.
    nonce_rng: PolicyRng,
    claims: Claims,
    /// Claims minted in this call and not signed yet, by issue number
    /// ([`Pool::seal_claims`]).
    unsealed: Vec<(u64, claims::Prepared)>,
    /// The last pass's snapshot, emptied, for its buffers.
    spare_snapshot: Option<placing::Snapshot>,
    reservations: Reservations,
    /// Guests each home runs anywhere, by the hosts' ads.
    guests_of: HashMap<StationId, u32>,
    /// Hosts with a node free now ([`Pool::free_on`] > 0), kept up to
    /// date so a placement looks only at them.
    free_hosts: BTreeSet<StationId>,
    /// The same hosts by σ, then name: the order a placement tries them.
    free_order: host_order::FreeOrder,
    started: Time,
    nonce: u64,
    /// Floating-licence limits, lower-case names.
    licence_limits: BTreeMap<String, u32>,
    /// DMW's embargo of each host that had a recent placement.
    embargoes: BTreeMap<StationId, Embargo>,
    /// The pool's checkpoint transfer rate, recomputed when a rate changes.
    transfer_rate: Option<Option<u64>>,
    /// Allocation passes run (the allocator was asked).
    passes: u64,
    /// When the last event-triggered pass ran, and whether an event since
    /// then waits for the gap to end ([`Pool::pass_due`]).
    last_event_pass: Option<Time>,
    event_waiting: bool,
    /// Claims of each home that its hosts' ads showed in use since the
    /// home's own last ad, by job class: that ad still counts those jobs
    /// as idle, and must not win their nodes a second time.
    used_unseen: HashMap<StationId, Vec<Option<String>>>,
    /// Ads received and kept, numbering them ([`Known::serial`]).
    ads_seen: u64,
    /// Owner-state changes seen in kept ads: to AV, to NA (`/metrics`).
    transitions: (u64, u64),
    /// The reservation coordinator role (`[reservations]`), if configured.
    partition: Option<partition::Partition>,
    /// Guests asked to leave a reserved station, until when the request
    /// stands (so it is not repeated every pass).
    evicting: BTreeMap<(StationId, gleaner_proto::guest_key::GuestKey), Time>,
    /// Hosts an administrator drained, by name (`drain`).
    drained: BTreeSet<String>,
    /// Each submitter's use of the pool (`accounting`).
    accounting: accounting::Accounting,
}

impl Pool {
    pub(crate) fn new(
        timing: Timing,
        minter: Box<dyn ClaimMinter>,
        allocator: &AllocatorConfig,
        seed: u64,
        restored: &FairnessState,
        now: Time,
    ) -> Self {
        let mut pool = Pool {
            timing,
            minter,
            kind: allocator.kind().name(),
            names: Vec::new(),
            ids: HashMap::default(),
            stations: known::ById::default(),
            policy: Policy::new(allocator),
            rng: gleaner_core::rng::seeded(seed),
            nonce_rng: gleaner_core::rng::substream(seed, 1),
            claims: Claims::default(),
            unsealed: Vec::new(),
            spare_snapshot: None,
            reservations: Reservations::default(),
            guests_of: HashMap::new(),
            free_hosts: BTreeSet::new(),
            free_order: host_order::FreeOrder::default(),
            started: now,
            nonce: 0,
            licence_limits: BTreeMap::new(),
            embargoes: BTreeMap::new(),
            transfer_rate: None,
            passes: 0,
            last_event_pass: None,
            event_waiting: false,
            used_unseen: HashMap::new(),
            ads_seen: 0,
            transitions: (0, 0),
            partition: None,
            evicting: BTreeMap::new(),
            drained: BTreeSet::new(),
            accounting: accounting::Accounting::new(
                restored.accounting.as_ref().map(|a| a.to_usage()),
            ),
        };
        // Ids are dense and were validated on load: entry k has id k.
        for entry in &restored.stations {
            let id = pool.intern(&entry.name);
            if let (Policy::UpDown(u), Some(si)) = (&mut pool.policy, entry.si) {
                u.set_index(id, si);
            }
        }
        pool
    }

    /// A pool with an empty fairness table and no saved claims, for the
    /// simulator and benchmarks that drive [`Pool::advertise`] and
    /// [`Pool::tick`] without a server. `seed` fixes every random choice.
    pub fn from_config(
        config: &crate::CoordinatorConfig,
        minter: Box<dyn ClaimMinter>,
        seed: u64,
        now: Time,
    ) -> Result<Self, crate::CoordinatorError> {
        let pool = Pool::new(
            config.timing()?,
            minter,
            &config.allocator,
            seed,
            &FairnessState::default(),
            now,
        )
        .with_licences(&config.licences, &ClaimsState::default(), now);
        // A `[reservations]` section runs the same reservation role here as
        // in the daemon.
        Ok(match &config.reservations {
            Some(rc) => pool.with_partition(
                partition::Partition::new(rc, seed, None)
                    .map_err(|e| crate::CoordinatorError::Config(e.to_string()))?,
            ),
            None => pool,
        })
    }

    /// Sets the licence limits and restores the claims persisted before a
    /// restart (they keep holding their licences until seen or expired).
    pub(crate) fn with_licences(
        mut self,
        limits: &BTreeMap<String, u32>,
        restored: &ClaimsState,
        now: Time,
    ) -> Self {
        self.licence_limits = limits
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), *v))
            .collect();
        for c in &restored.claims {
            let expires = Time::from_secs(c.expires_at);
            if expires <= now {
                continue;
            }
            let host = self.intern(&c.host);
            let home = self.intern(&c.home);
            self.claims.push(PendingClaim {
                host,
                home,
                claim_id: c.claim_id.clone(),
                nonce: None,
                after_ad: 0,
                expires,
                baseline: c.baseline,
                class: c.class.clone(),
                licences: c.licences.clone(),
                known: None,
            });
        }
        self
    }

    /// The pending claims, for `claims.json`.
    pub fn saved_claims(&self) -> ClaimsState {
        ClaimsState::new(
            self.claims
                .iter()
                .map(|c| SavedClaim {
                    host: self.name(c.host).to_string(),
                    home: self.name(c.home).to_string(),
                    claim_id: c.claim_id.clone(),
                    class: c.class.clone(),
                    licences: c.licences.clone(),
                    expires_at: c.expires.as_micros() / 1_000_000,
                    baseline: c.baseline,
                })
                .collect(),
        )
    }

    fn intern(&mut self, name: &str) -> StationId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as StationId;
        self.names.push(name.to_string());
        self.ids.insert(name_key::NameKey::new(name), id);
        id
    }

    fn name(&self, id: StationId) -> &str {
        self.names
            .get(id as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }

    /// The durable part: the id map and the index of every station.
    pub fn fairness(&self) -> FairnessState {
        let mut state = FairnessState::new(
            self.names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let si = match &self.policy {
                        Policy::UpDown(_) => Some(self.policy.index(i as StationId)),
                        Policy::Other(_) => None,
                    };
                    (n.clone(), si)
                })
                .collect(),
        );
        state.accounting = self
            .accounting
            .saved()
            .map(|u| crate::persist::SavedAccounting::from_usage(&u));
        state
    }

    /// Takes the guests of a replaced or forgotten ad out of the homes'
    /// counts.
    fn forget_guests(&mut self, k: &Known) {
        for home in &k.holders {
            if let Some(n) = self.guests_of.get_mut(home) {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// Whether the startup grace still holds at `now`.
    fn in_grace(&self, now: Time) -> bool {
        now.since(self.started) < self.timing.startup_grace
    }

    /// UNIX seconds of `now`, for ClassAd `time()` and operating windows.
    fn unix(now: Time) -> i64 {
        (now.as_micros() / 1_000_000) as i64
    }

    /// Licence units in use: guests in the hosts' ads plus pending claims.
    fn licence_book(&self) -> LicenceBook {
        let mut book = LicenceBook {
            limits: self.licence_limits.clone(),
            in_use: BTreeMap::new(),
        };
        if book.limits.is_empty() {
            // Names without a limit are unlimited: nothing to count.
            return book;
        }
        for k in self.stations.values() {
            for g in &k.ad.running_guests {
                book.take(&guest_licences(g));
            }
            // An idle held claim keeps its last job's licences for the
            // next job of the same class.
            for c in k.ad.idle_claims() {
                book.take(&parse_limits(&c.concurrency_limits).unwrap_or_default());
            }
        }
        for c in self.claims.iter() {
            book.take(&c.licences);
        }
        book
    }

    /// Whether `host`'s embargo keeps `pass` off it at `now`.
    fn embargoed(&self, host: StationId, now: Time, pass: Pass) -> bool {
        pass.embargo_blocks() && self.embargoes.get(&host).is_some_and(|e| e.active(now))
    }

    /// Records whether `host` has a free node now (call after anything
    /// that changes its ad or its claims).
    fn sync_free(&mut self, host: StationId) {
        let free = self.free_on(host) > 0;
        if free {
            self.free_hosts.insert(host);
        } else {
            self.free_hosts.remove(&host);
        }
        // σ depends on the ad and the pending claims: what this follows.
        let sigma = self
            .stations
            .get(&host)
            .filter(|_| free)
            .map(|k| crate::matchmaker::sigma(&k.ad, self.pending_on(host)));
        let name = self.names.get(host as usize).map_or("?", String::as_str);
        self.free_order.set(host, sigma.map(|s| (s, name)));
    }

    /// Nodes of `host` that nothing occupies or reserves.
    fn free_on(&self, host: StationId) -> u32 {
        match self.stations.get(&host) {
            Some(k) if k.hosting() && !self.drained.contains(&k.ad.name) => {
                k.ad.cpus
                    .saturating_sub(k.ad.occupied())
                    .saturating_sub(self.pending_on(host))
            }
            _ => 0,
        }
    }

    /// Handles one advertisement and returns the reply for its sender. The
    /// reply carries no grants or preemptions: those are in `out`, for the
    /// caller to deliver.
    pub fn advertise(&mut self, ad: StationAd, now: Time, out: &mut Outbox) -> AdvertiseReply {
        let id = self.intern(&ad.name);
        let mut event = false;
        let mut keep = true;
        let mut job_ended = false;
        // New work at a station: worth a pass if some node is free (checked
        // once the ad is in).
        let mut more_demand = false;
        let mut unchanged = false;
        match self.stations.get(&id) {
            None => {
                // A new station that can host is new capacity (L643).
                event = ad.state == OwnerState::Av && !ad.submit_only;
                more_demand = ad.demand.idle_jobs > 0;
            }
            Some(prev) => {
                // A replayed or reordered ad must not roll the state back;
                // a restarted station begins again at sequence 0.
                if ad.sequence != 0 && ad.sequence < prev.ad.sequence {
                    keep = false;
                } else if prev.ad.same_apart_from_progress(&ad) {
                    // Nothing new: no capacity event, and what the pool
                    // derived from the last ad stands.
                    unchanged = true;
                } else {
                    let became_av = prev.ad.state == OwnerState::Na && ad.state == OwnerState::Av;
                    match (prev.ad.state, ad.state) {
                        (OwnerState::Na, OwnerState::Av) => self.transitions.0 += 1,
                        (OwnerState::Av, OwnerState::Na) => self.transitions.1 += 1,
                        _ => {}
                    }
                    // A guest whose claim the host still holds (reused, or
                    // idle for its home's next job) freed no node.
                    let guest_left = prev.ad.running_guests.iter().any(|g| {
                        !ad.running_guests
                            .iter()
                            .any(|h| h.job == g.job && h.home == g.home)
                            && prev
                                .ad
                                .claim_for(&g.home, g.job)
                                .is_none_or(|c| !ad.claims_held.iter().any(|h| h.claim == c))
                    });
                    let remote_done = ad.demand.remote_jobs < prev.ad.demand.remote_jobs;
                    // An AV host whose own work ended offers more CPUs.
                    let more_cpus = ad.state == OwnerState::Av && ad.cpus > prev.ad.cpus;
                    // Capacity events: a station turning AV, a remote job
                    // finishing, new capacity on a host (Mutka 1988
                    // L643–645, resolution A4).
                    event = became_av || guest_left || remote_done || more_cpus;
                    job_ended = guest_left;
                    more_demand = ad.demand.idle_jobs > prev.ad.demand.idle_jobs;
                }
            }
        }
        if job_ended {
            // A job ending on the host ends its embargo (Neeracher L1111).
            if let Some(e) = self.embargoes.get_mut(&id) {
                e.on_job_end();
            }
        }
        if keep {
            self.ads_seen += 1;
            if unchanged {
                if let Some(k) = self.stations.get_mut(&id) {
                    k.touch(ad, now, self.ads_seen);
                }
            } else {
                let holders: Vec<StationId> = node_holders(&ad).map(|h| self.intern(h)).collect();
                for &home in &holders {
                    *self.guests_of.entry(home).or_default() += 1;
                }
                let rate_changed = self.stations.get(&id).is_none_or(|k| {
                    crate::transfer_rate::advertised_rate(&k.ad)
                        != crate::transfer_rate::advertised_rate(&ad)
                });
                if rate_changed {
                    self.transfer_rate = None;
                }
                let prev = self.stations.remove(&id);
                if let Some(p) = &prev {
                    self.forget_guests(p);
                }
                self.stations
                    .insert(id, Known::new(ad, now, self.ads_seen, prev, holders));
            }
            // The home's own ad now counts its placed jobs as running.
            self.used_unseen.remove(&id);
            // A claim used by a guest that has ended already frees its node.
            event |= self.settle_claims(id) && self.free_on(id) > 0;
            self.sync_free(id);
            self.partition_observe(id, now);
            self.settle_reservations(id, now, out);
            let demand_event = self.timing.pass_on_demand
                && more_demand
                && self.stations.get(&id).is_some_and(|k| !k.ad.execute_only)
                && !self.free_hosts.is_empty();
            event |= demand_event;
        }
        if event {
            tracing::debug!(station = self.name(id), "capacity event: allocating");
            self.event_pass(now, out);
        }
        self.seal_claims(out);
        let claims = self
            .claims
            .of_host(id)
            .map(|(_, c)| ClaimNotice {
                claim_id: c.claim_id.clone(),
                home: self.name(c.home).to_string(),
                expires_at: c.expires.as_micros() / 1_000_000,
            })
            .collect();
        AdvertiseReply {
            protocol: PROTOCOL_VERSION,
            grants: Vec::new(),
            preemptions: Vec::new(),
            next_advertise_secs: self.timing.advertise_secs,
            claims,
            checkpoint_transfer_rate: self.transfer_rate(),
            destinations: self.destinations(id, now),
            // The daemon fills them in (server.rs): the pool keeps no tokens.
            revoked: Default::default(),
            drained: self.drained.contains(self.name(id)),
        }
    }

    /// The pool's median checkpoint transfer rate, computed again only
    /// after an ad changed its rate or a station left.
    fn transfer_rate(&mut self) -> Option<u64> {
        if let Some(r) = self.transfer_rate {
            return r;
        }
        let r = crate::transfer_rate::pool_rate(self.stations.values().map(|k| &k.ad));
        self.transfer_rate = Some(r);
        r
    }

    /// The periodic pass: forget silent stations, expire claims and
    /// reservations, update the indices (Table 4.3) and allocate (L583).
    pub fn tick(&mut self, now: Time, out: &mut Outbox) {
        let timeout = self.timing.station_timeout;
        let stale: Vec<StationId> = self
            .stations
            .iter()
            .filter(|(_, k)| now.since(k.last_seen) > timeout)
            .map(|(&id, _)| id)
            .collect();
        for id in stale {
            tracing::info!(station = self.name(id), "station silent; forgetting its ad");
            if let Some(k) = self.stations.remove(&id) {
                self.forget_guests(&k);
            }
            self.transfer_rate = None;
            self.used_unseen.remove(&id);
            out.forgotten.push(self.name(id).to_string());
            self.sync_free(id);
            for h in self.claims.retain(|c| c.host != id && c.home != id) {
                self.sync_free(h);
            }
            self.reservations
                .take_unless(|r| r.host != id && r.to != id);
            self.partition_forget(id, now);
        }
        for h in self.claims.expire(now) {
            self.sync_free(h);
        }
        self.reservations.take_unless(|r| r.deadline > now);
        self.embargoes.retain(|_, e| e.active(now));
        self.accounting
            .observe(now, self.stations.values().map(|k| &k.ad));
        self.serve_partition(now, out);
        let snap = self.snapshot(now);
        self.policy.alloc().on_interval(&snap.view());
        // This pass serves any event still waiting for the gap.
        self.event_waiting = false;
        self.allocate_with(snap, now, out);
        self.seal_claims(out);
    }

    /// `GET /v1/ads`: every ad with the coordinator's additions, for
    /// `glean q --analyze`.
    pub fn ads(&self, now: Time) -> AdsView {
        let book = self.licence_book();
        AdsView {
            now_unix: Self::unix(now),
            stations: self
                .stations
                .iter()
                .map(|(&id, k)| AdEntry {
                    ad: k.ad.clone(),
                    pending_claims: self.pending_on(id),
                    embargoed: self.embargoed(id, now, Pass::Regular),
                })
                .collect(),
            licences: book
                .limits
                .iter()
                .map(|(name, &limit)| LicenceUse {
                    name: name.clone(),
                    limit,
                    in_use: book.in_use.get(name).copied().unwrap_or(0),
                })
                .collect(),
        }
    }

    /// Allocation passes run so far (interval and capacity-event passes in
    /// which some station waited).
    pub fn passes(&self) -> u64 {
        self.passes
    }

    /// Owner-state changes seen in the stations' ads since start: (to AV,
    /// to NA).
    pub fn transitions(&self) -> (u64, u64) {
        self.transitions
    }

    /// Licence units in use by name (guests plus pending claims).
    #[cfg(test)]
    pub fn licences_in_use(&self) -> BTreeMap<String, u32> {
        self.licence_book().in_use
    }

    /// `GET /v1/pool`.
    pub fn status(&self, now: Time) -> PoolStatus {
        PoolStatus {
            stations: self
                .stations
                .values()
                .map(|k| StationStatus {
                    name: k.ad.name.clone(),
                    address: k.ad.address.clone(),
                    state: k.ad.state,
                    cpus: k.ad.cpus,
                    memory_mb: k.ad.memory_mb,
                    disk_free_kb: k.ad.disk_free_kb,
                    guests: k.ad.running_guests.len() as u32,
                    idle_jobs: k.ad.demand.idle_jobs,
                    remote_jobs: k.ad.demand.remote_jobs,
                    submit_only: k.ad.submit_only,
                    execute_only: k.ad.execute_only,
                    drained: self.drained.contains(&k.ad.name),
                    last_seen_secs: now.since(k.last_seen).as_secs_f64(),
                })
                .collect(),
        }
    }

    /// `GET /v1/userprio`: every station with an index or an ad.
    pub fn userprio(&self) -> UserPrio {
        let mut held: HashMap<&str, u32> = HashMap::new();
        for k in self.stations.values() {
            for home in node_holders(&k.ad) {
                *held.entry(home).or_default() += 1;
            }
        }
        let stations = self
            .names
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                let id = i as StationId;
                let k = self.stations.get(&id);
                if k.is_some_and(|k| k.ad.execute_only) {
                    return None;
                }
                let waiting = k.map_or(0, |k| k.ad.demand.idle_jobs);
                let remote = k.map_or(0, |k| k.ad.demand.remote_jobs);
                Some(UserPrioEntry {
                    station: name.clone(),
                    si: self.policy.index(id),
                    nodes_held: held.get(name.as_str()).copied().unwrap_or(0),
                    waiting,
                    wants: waiting > 0 || remote > 0,
                    known: k.is_some(),
                })
            })
            .collect();
        UserPrio {
            allocator: self.kind.to_string(),
            stations,
            submitters: self.accounting.rows(self.stations.values().map(|k| &k.ad)),
        }
    }
}

/// The home of each node held on the host of `ad`: one per guest and one
/// per claim held idle between two jobs (claim reuse).
fn node_holders(ad: &StationAd) -> impl Iterator<Item = &str> {
    ad.running_guests
        .iter()
        .map(|g| g.home.as_str())
        .chain(ad.idle_claims().map(|c| c.home.as_str()))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod match_tests;

#[cfg(test)]
mod known_tests;

#[cfg(test)]
mod event_tests;

#[cfg(test)]
mod same_id_tests;

#[cfg(test)]
mod partition_tests;

#[cfg(test)]
mod seal_tests;
