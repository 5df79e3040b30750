//! The coordinator's view of the pool and its allocation rules, free of I/O.
//!
//! The coordinator knows only availability, demand and the schedule index
//! (Mutka 1988 §4.3, L583–585); job state lives on the home stations. Ads are
//! soft state: they are rebuilt from advertisements after a restart, and only
//! the station-id map and the Up-Down table are persisted.
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

use crate::matchmaker::{
    self, AdEntry, AdsView, HostExtra, HostView, LicenceBook, LicenceUse, Reject,
};
use crate::persist::{ClaimsState, FairnessState, SavedClaim};
use gleaner_core::alloc::{
    Allocator, AllocatorConfig, Decision, NodeId, PoolView, StationDemand, StationId, UpDown,
};
use gleaner_core::detector::OwnerState;
use gleaner_core::rng::PolicyRng;
use gleaner_proto::auth::{ClaimTicket, PoolKey};
use gleaner_proto::job::JobId;
use gleaner_proto::machine::{JobClass, class_ad, parse_limits};
use gleaner_proto::wire::{
    AdvertiseReply, ClaimNotice, Grant, PROTOCOL_VERSION, PoolStatus, Preemption, StationAd,
    StationStatus, UserPrio, UserPrioEntry,
};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::config::Timing;

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

struct Known {
    ad: StationAd,
    last_seen: Instant,
}

/// A grant whose placement the host has not reported yet.
struct PendingClaim {
    host: StationId,
    home: StationId,
    claim_id: String,
    expires_wall: u64,
    expires: Instant,
    /// Guests of `home` on `host` holding the same licences (plus earlier
    /// pending claims alike) when the claim was issued: once the host
    /// reports more, the claim has been used.
    baseline: u32,
    /// The job class the host was matched for.
    class: Option<String>,
    /// Licence units the claim holds until the guest shows in an ad.
    licences: Vec<(String, u32)>,
    /// The jobs of `home` on `host` holding the same licences when the
    /// claim was issued: a guest not among them is the claim's. Unknown
    /// (`None`) for claims restored after a restart, which settle by
    /// `baseline`. Counting alone misses a use when an older guest alike
    /// leaves in the same advertising period, and then the claim and its
    /// guest hold the licence twice until the claim expires.
    known: Option<Vec<JobId>>,
}

/// A node taken from `from` by a preemption and promised to `to`.
struct Reservation {
    host: StationId,
    job: JobId,
    to: StationId,
    deadline: Instant,
}

#[derive(Default)]
struct Outbox {
    grants: Vec<Grant>,
    preemptions: Vec<Preemption>,
}

/// What one node of a pass is.
#[derive(Clone, Copy)]
struct Slot {
    host: StationId,
    /// The guest on it, for held nodes.
    guest: Option<JobId>,
}

/// One pass's input to the allocator; node ids index `slots`.
struct Snapshot {
    demands: Vec<StationDemand>,
    free: Vec<NodeId>,
    held: Vec<(NodeId, StationId)>,
    slots: Vec<Slot>,
}

impl Snapshot {
    fn view(&self) -> PoolView<'_> {
        PoolView {
            stations: &self.demands,
            free_nodes: &self.free,
            held: &self.held,
        }
    }
}

/// The coordinator's state. All methods take the current time, so tests and
/// the server drive the same code.
pub struct Pool {
    timing: Timing,
    key: PoolKey,
    kind: &'static str,
    names: Vec<String>,
    ids: HashMap<String, StationId>,
    stations: BTreeMap<StationId, Known>,
    policy: Policy,
    rng: PolicyRng,
    claims: Vec<PendingClaim>,
    reservations: Vec<Reservation>,
    outbox: HashMap<StationId, Outbox>,
    started: Instant,
    nonce: u64,
    /// Floating-licence limits, lower-case names.
    licence_limits: BTreeMap<String, u32>,
    /// DMW embargo: no placement on the host before this instant.
    embargoes: HashMap<StationId, Instant>,
    /// A claim holding licences was added since the last
    /// [`Pool::take_claims_dirty`]: persist before replying.
    claims_dirty: bool,
}

/// Does a reject still hold once a victim has vacated (for preemption
/// targets)? Capacity-type rejects do not.
fn blocks_after_vacate(r: &Reject) -> bool {
    !matches!(
        r,
        Reject::Cpus { .. } | Reject::GuestLimit { .. } | Reject::Embargo
    )
}

impl Pool {
    pub(crate) fn new(
        timing: Timing,
        key: PoolKey,
        allocator: &AllocatorConfig,
        seed: u64,
        restored: &FairnessState,
        now: Instant,
    ) -> Self {
        let mut pool = Pool {
            timing,
            key,
            kind: allocator.kind().name(),
            names: Vec::new(),
            ids: HashMap::new(),
            stations: BTreeMap::new(),
            policy: Policy::new(allocator),
            rng: gleaner_core::rng::seeded(seed),
            claims: Vec::new(),
            reservations: Vec::new(),
            outbox: HashMap::new(),
            started: now,
            nonce: 0,
            licence_limits: BTreeMap::new(),
            embargoes: HashMap::new(),
            claims_dirty: false,
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

    /// Sets the licence limits and restores the claims persisted before a
    /// restart (they keep holding their licences until seen or expired).
    pub(crate) fn with_licences(
        mut self,
        limits: &BTreeMap<String, u32>,
        restored: &ClaimsState,
        now: Instant,
        wall: u64,
    ) -> Self {
        self.licence_limits = limits
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), *v))
            .collect();
        for c in &restored.claims {
            if c.expires_at <= wall {
                continue;
            }
            let host = self.intern(&c.host);
            let home = self.intern(&c.home);
            self.claims.push(PendingClaim {
                host,
                home,
                claim_id: c.claim_id.clone(),
                expires_wall: c.expires_at,
                expires: now + Duration::from_secs(c.expires_at - wall),
                baseline: c.baseline,
                class: c.class.clone(),
                licences: c.licences.clone(),
                known: None,
            });
        }
        self
    }

    /// The pending claims, for `claims.json`.
    pub(crate) fn saved_claims(&self) -> ClaimsState {
        ClaimsState::new(
            self.claims
                .iter()
                .map(|c| SavedClaim {
                    host: self.name(c.host).to_string(),
                    home: self.name(c.home).to_string(),
                    claim_id: c.claim_id.clone(),
                    class: c.class.clone(),
                    licences: c.licences.clone(),
                    expires_at: c.expires_wall,
                    baseline: c.baseline,
                })
                .collect(),
        )
    }

    /// Whether claims holding licences were added since the last call.
    pub(crate) fn take_claims_dirty(&mut self) -> bool {
        std::mem::take(&mut self.claims_dirty)
    }

    /// A pool with an empty fairness table, for benchmarks that drive
    /// [`Pool::advertise`] and [`Pool::tick`] without a server.
    #[doc(hidden)]
    pub fn for_bench(
        config: &crate::CoordinatorConfig,
        key: PoolKey,
        seed: u64,
        now: Instant,
    ) -> Result<Self, crate::CoordinatorError> {
        Ok(Pool::new(
            config.timing()?,
            key,
            &config.allocator,
            seed,
            &FairnessState::default(),
            now,
        ))
    }

    fn intern(&mut self, name: &str) -> StationId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as StationId;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    fn name(&self, id: StationId) -> &str {
        self.names
            .get(id as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }

    /// The durable part: the id map and the index of every station.
    pub(crate) fn fairness(&self) -> FairnessState {
        FairnessState::new(
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
        )
    }

    /// Guests of `home` on `host` that hold exactly `licences`.
    fn guests_like(&self, host: StationId, home: StationId, licences: &[(String, u32)]) -> u32 {
        let home_name = self.name(home);
        self.stations.get(&host).map_or(0, |k| {
            k.ad.running_guests
                .iter()
                .filter(|g| {
                    g.home == home_name
                        && parse_limits(&g.concurrency_limits).unwrap_or_default() == licences
                })
                .count() as u32
        })
    }

    /// Licence units in use: guests in the hosts' ads plus pending claims.
    fn licence_book(&self) -> LicenceBook {
        let mut book = LicenceBook {
            limits: self.licence_limits.clone(),
            in_use: BTreeMap::new(),
        };
        for k in self.stations.values() {
            for g in &k.ad.running_guests {
                book.take(&parse_limits(&g.concurrency_limits).unwrap_or_default());
            }
        }
        for c in &self.claims {
            book.take(&c.licences);
        }
        book
    }

    fn embargoed(&self, host: StationId, now: Instant) -> bool {
        self.embargoes.get(&host).is_some_and(|&t| t > now)
    }

    fn extra(&self, host: StationId, now: Instant) -> HostExtra {
        HostExtra {
            pending: self.pending_on(host),
            embargoed: self.embargoed(host, now),
        }
    }

    /// Idle jobs of `home`'s class `c` not yet covered by a pending claim.
    fn class_left(&self, home: StationId, c: &JobClass) -> u32 {
        let claimed = self
            .claims
            .iter()
            .filter(|p| p.home == home && p.class.as_deref() == Some(c.key.as_str()))
            .count() as u32;
        c.count.saturating_sub(claimed)
    }

    /// The best (class, host) for `home`: among its classes with jobs left,
    /// the first (queue order) that fits some host, on that class's best
    /// host. `only` restricts the hosts; `ignore_embargo` is for the
    /// progress guarantee.
    fn choose(
        &self,
        home: StationId,
        only: Option<StationId>,
        ignore_embargo: bool,
        now: Instant,
        wall: u64,
    ) -> Option<(JobClass, StationId)> {
        let k = self.stations.get(&home)?;
        let ids: Vec<StationId> = self
            .stations
            .keys()
            .copied()
            .filter(|h| only.is_none_or(|o| o == *h))
            .collect();
        let views: Vec<HostView<'_>> = ids
            .iter()
            .filter_map(|h| {
                let mut extra = self.extra(*h, now);
                extra.embargoed &= !ignore_embargo;
                self.stations.get(h).map(|k| HostView::new(&k.ad, extra))
            })
            .collect();
        let book = self.licence_book();
        let grace = now.saturating_duration_since(self.started) < self.timing.startup_grace;
        for c in &k.ad.classes {
            if self.class_left(home, c) == 0 {
                continue;
            }
            let licences = c.licences();
            // After a restart the running licensed guests are known only
            // once their hosts have advertised: wait out the grace.
            if grace && licences.iter().any(|(n, _)| book.limits.contains_key(n)) {
                continue;
            }
            let job = class_ad(c);
            if let Some(i) = matchmaker::best_host(c, &job, &views, &book, wall as i64) {
                return Some((c.clone(), ids[i]));
            }
        }
        None
    }

    /// How many of `home`'s idle jobs could be matched now on `views`.
    fn matchable(
        &self,
        home: StationId,
        views: &[HostView<'_>],
        book: &LicenceBook,
        wall: u64,
    ) -> u32 {
        let Some(k) = self.stations.get(&home) else {
            return 0;
        };
        k.ad.classes
            .iter()
            .filter(|c| {
                let job = class_ad(c);
                matchmaker::best_host(c, &job, views, book, wall as i64).is_some()
            })
            .map(|c| self.class_left(home, c))
            .sum()
    }

    /// Could `host` take a job of `home` once one of its guests left?
    fn fits_after_vacate(&self, home: StationId, host: StationId, now: Instant, wall: u64) -> bool {
        let (Some(k), Some(h)) = (self.stations.get(&home), self.stations.get(&host)) else {
            return false;
        };
        if k.ad.classes.is_empty() {
            return true;
        }
        let view = HostView::new(&h.ad, self.extra(host, now));
        let book = self.licence_book();
        k.ad.classes.iter().any(|c| {
            self.class_left(home, c) > 0
                && !matchmaker::check(c, &class_ad(c), &view, &book, wall as i64)
                    .iter()
                    .any(blocks_after_vacate)
        })
    }

    fn pending_on(&self, host: StationId) -> u32 {
        self.claims.iter().filter(|c| c.host == host).count() as u32
    }

    fn unused_grants(&self, home: StationId) -> u32 {
        let claims = self.claims.iter().filter(|c| c.home == home).count();
        let reserved = self.reservations.iter().filter(|r| r.to == home).count();
        (claims + reserved) as u32
    }

    /// Nodes of `host` that nothing occupies or reserves.
    fn free_on(&self, host: StationId) -> u32 {
        match self.stations.get(&host) {
            Some(k) if k.ad.state == OwnerState::Av && !k.ad.submit_only => {
                k.ad.cpus
                    .saturating_sub(k.ad.running_guests.len() as u32)
                    .saturating_sub(self.pending_on(host))
            }
            _ => 0,
        }
    }

    /// Handles one advertisement and returns the reply for its sender.
    /// `wall_secs` is the UNIX time used in claim tickets.
    pub fn advertise(&mut self, ad: StationAd, now: Instant, wall_secs: u64) -> AdvertiseReply {
        let id = self.intern(&ad.name);
        let mut event = false;
        let mut keep = true;
        let mut lift_embargo = false;
        match self.stations.get(&id) {
            None => {
                // A new station that can host is new capacity (L643).
                event = ad.state == OwnerState::Av && !ad.submit_only;
            }
            Some(prev) => {
                // A replayed or reordered ad must not roll the state back;
                // a restarted station begins again at sequence 0.
                if ad.sequence != 0 && ad.sequence < prev.ad.sequence {
                    keep = false;
                } else {
                    let became_av = prev.ad.state == OwnerState::Na && ad.state == OwnerState::Av;
                    let guest_left = prev
                        .ad
                        .running_guests
                        .iter()
                        .any(|g| !ad.running_guests.iter().any(|h| h.job == g.job));
                    let remote_done = ad.demand.remote_jobs < prev.ad.demand.remote_jobs;
                    // Capacity events: a station turning AV, a remote job
                    // finishing (Mutka 1988 L643–645, resolution A4).
                    event = became_av || guest_left || remote_done;
                    // A job ending on the host ends its embargo (L1111).
                    lift_embargo = guest_left;
                }
            }
        }
        if lift_embargo {
            self.embargoes.remove(&id);
        }
        if keep {
            for g in &ad.running_guests {
                self.intern(&g.home);
            }
            self.stations.insert(id, Known { ad, last_seen: now });
            self.settle_claims(id);
            self.settle_reservations(id, now, wall_secs);
        }
        if event {
            tracing::debug!(station = self.name(id), "capacity event: allocating");
            self.allocate_pass(now, wall_secs);
        }
        let out = self.outbox.remove(&id).unwrap_or_default();
        let claims = self
            .claims
            .iter()
            .filter(|c| c.host == id)
            .map(|c| ClaimNotice {
                claim_id: c.claim_id.clone(),
                home: self.name(c.home).to_string(),
                expires_at: c.expires_wall,
            })
            .collect();
        AdvertiseReply {
            protocol: PROTOCOL_VERSION,
            grants: out.grants,
            preemptions: out.preemptions,
            next_advertise_secs: self.timing.advertise_secs,
            claims,
            checkpoint_transfer_rate: crate::ckpt_rate::pool_rate(
                self.stations.values().map(|k| &k.ad),
            ),
        }
    }

    /// Drops the pending claims on `host` that its ad shows in use.
    fn settle_claims(&mut self, host: StationId) {
        let mut counts: HashMap<(StationId, Vec<(String, u32)>), u32> = HashMap::new();
        for c in self.claims.iter().filter(|c| c.host == host) {
            counts
                .entry((c.home, c.licences.clone()))
                .or_insert_with(|| self.guests_like(host, c.home, &c.licences));
        }
        // Each new guest settles one claim, oldest claim first.
        let guests = self
            .stations
            .get(&host)
            .map(|k| k.ad.running_guests.as_slice())
            .unwrap_or_default();
        let mut used: Vec<JobId> = Vec::new();
        let mut settled = vec![false; self.claims.len()];
        for (i, c) in self.claims.iter().enumerate() {
            if c.host != host {
                continue;
            }
            settled[i] = match &c.known {
                Some(known) => {
                    let home = self.name(c.home);
                    let new = guests.iter().find(|g| {
                        g.home == home
                            && !known.contains(&g.job)
                            && !used.contains(&g.job)
                            && parse_limits(&g.concurrency_limits).unwrap_or_default() == c.licences
                    });
                    new.inspect(|g| used.push(g.job)).is_some()
                }
                None => counts
                    .get(&(c.home, c.licences.clone()))
                    .is_some_and(|&now| now > c.baseline),
            };
        }
        let mut i = 0;
        self.claims.retain(|_| {
            i += 1;
            !settled[i - 1]
        });
    }

    fn settle_reservations(&mut self, host: StationId, now: Instant, wall: u64) {
        let Some(k) = self.stations.get(&host) else {
            return;
        };
        let vacated: Vec<usize> = self
            .reservations
            .iter()
            .enumerate()
            .filter(|(_, r)| r.host == host && !k.ad.running_guests.iter().any(|g| g.job == r.job))
            .map(|(i, _)| i)
            .collect();
        for i in vacated.into_iter().rev() {
            let r = self.reservations.remove(i);
            let waiting = self
                .stations
                .get(&r.to)
                .map_or(0, |k| k.ad.demand.idle_jobs);
            if self.free_on(host) > 0
                && waiting > self.unused_grants(r.to)
                && self.place(r.to, host, true, true, now, wall)
            {
                tracing::info!(
                    host = self.name(host),
                    to = self.name(r.to),
                    "preempted node vacated; granted"
                );
            }
        }
    }

    /// Grants `to` a node: for a station that sends job classes, the best
    /// (class, host) pair, on `node_host` only when `restrict`; for one
    /// that does not, `node_host` itself. False when nothing fits.
    fn place(
        &mut self,
        to: StationId,
        node_host: StationId,
        restrict: bool,
        ignore_embargo: bool,
        now: Instant,
        wall: u64,
    ) -> bool {
        let legacy = self
            .stations
            .get(&to)
            .is_none_or(|k| k.ad.classes.is_empty());
        if legacy {
            self.grant(node_host, to, None, Vec::new(), now, wall);
            return true;
        }
        match self.choose(to, restrict.then_some(node_host), ignore_embargo, now, wall) {
            Some((class, host)) => {
                tracing::info!(
                    host = self.name(host),
                    to = self.name(to),
                    class = %class.key,
                    "matched"
                );
                let licences = class.licences();
                self.grant(host, to, Some(class.key), licences, now, wall);
                if !self.timing.embargo.is_zero() {
                    self.embargoes.insert(host, now + self.timing.embargo);
                }
                true
            }
            None => {
                tracing::debug!(to = self.name(to), "no host matches; grant dropped");
                false
            }
        }
    }

    fn grant(
        &mut self,
        host: StationId,
        to: StationId,
        class: Option<String>,
        licences: Vec<(String, u32)>,
        now: Instant,
        wall: u64,
    ) {
        self.nonce += 1;
        let expires_wall = wall.saturating_add(self.timing.claim_lifetime_secs);
        let ticket = ClaimTicket::new(
            self.name(host),
            self.name(to),
            wall,
            expires_wall,
            format!("{wall:x}-{:x}", self.nonce),
        );
        let claim_id = self.key.sign_claim(&ticket);
        let to_name = self.name(to);
        let known: Vec<JobId> = self.stations.get(&host).map_or_else(Vec::new, |k| {
            k.ad.running_guests
                .iter()
                .filter(|g| {
                    g.home == to_name
                        && parse_limits(&g.concurrency_limits).unwrap_or_default() == licences
                })
                .map(|g| g.job)
                .collect()
        });
        let baseline = self.guests_like(host, to, &licences)
            + self
                .claims
                .iter()
                .filter(|c| c.host == host && c.home == to && c.licences == licences)
                .count() as u32;
        let host_address = self
            .stations
            .get(&host)
            .map(|k| k.ad.address.clone())
            .unwrap_or_default();
        let grant = Grant {
            host: self.name(host).to_string(),
            host_address,
            claim_id: claim_id.clone(),
            class: class.clone(),
        };
        self.outbox.entry(to).or_default().grants.push(grant);
        self.claims_dirty |= !licences.is_empty();
        self.claims.push(PendingClaim {
            host,
            home: to,
            claim_id,
            expires_wall,
            expires: now + Duration::from_secs(self.timing.claim_lifetime_secs),
            baseline,
            class,
            licences,
            known: Some(known),
        });
    }

    /// The allocator's input, and what each node id stands for.
    fn snapshot(&self, now: Instant, wall: u64) -> Snapshot {
        let mut demands = Vec::new();
        let mut free = Vec::new();
        let mut held = Vec::new();
        let mut slots = Vec::new();
        // Built once per pass: every home is matched against the same hosts.
        let views: Vec<HostView<'_>> = self
            .stations
            .iter()
            .map(|(h, k)| HostView::new(&k.ad, self.extra(*h, now)))
            .collect();
        let book = self.licence_book();
        for (&id, k) in &self.stations {
            if !k.ad.execute_only {
                let mut waiting = k.ad.demand.idle_jobs.saturating_sub(self.unused_grants(id));
                if !k.ad.classes.is_empty() {
                    // Only jobs some host could take now count as demand,
                    // so Up-Down does not spend nodes on unmatchable jobs.
                    waiting = waiting.min(self.matchable(id, &views, &book, wall));
                }
                demands.push(StationDemand {
                    station: id,
                    waiting,
                    remote: k.ad.demand.remote_jobs,
                });
            }
            if k.ad.state != OwnerState::Av || k.ad.submit_only {
                continue;
            }
            for g in &k.ad.running_guests {
                let vacating = self
                    .reservations
                    .iter()
                    .any(|r| r.host == id && r.job == g.job);
                if let (false, Some(&home)) = (vacating, self.ids.get(&g.home)) {
                    held.push((slots.len() as NodeId, home));
                    slots.push(Slot {
                        host: id,
                        guest: Some(g.job),
                    });
                }
            }
            for _ in 0..self.free_on(id) {
                free.push(slots.len() as NodeId);
                slots.push(Slot {
                    host: id,
                    guest: None,
                });
            }
        }
        Snapshot {
            demands,
            free,
            held,
            slots,
        }
    }

    /// One allocation pass; applies its decisions.
    fn allocate_pass(&mut self, now: Instant, wall: u64) {
        let snap = self.snapshot(now, wall);
        let view = snap.view();
        let decisions = self.policy.alloc().allocate(&view, &mut self.rng);
        self.apply(decisions, &snap.slots, now, wall);
        self.progress(now, wall);
    }

    /// Whether any guest of `home` runs anywhere.
    fn holds_any(&self, home: StationId) -> bool {
        let name = self.name(home);
        self.stations
            .values()
            .any(|k| k.ad.running_guests.iter().any(|g| g.home == name))
    }

    /// DMW's progress guarantee (Neeracher 1998 L1016, L1203): a station
    /// with matchable work and nothing running gets one host even when
    /// Up-Down gave it none: a free matching host despite the embargo, or
    /// else a node taken from a station holding two or more.
    fn progress(&mut self, now: Instant, wall: u64) {
        let needy: Vec<StationId> = self
            .stations
            .iter()
            .filter(|(id, k)| {
                !k.ad.execute_only
                    && !k.ad.classes.is_empty()
                    && k.ad.demand.idle_jobs > 0
                    && k.ad.demand.remote_jobs == 0
                    && self.unused_grants(**id) == 0
                    && !self.holds_any(**id)
            })
            .map(|(id, _)| *id)
            .collect();
        let grace = now.saturating_duration_since(self.started) < self.timing.startup_grace;
        for s in needy {
            if self.place(s, s, false, true, now, wall) {
                tracing::info!(station = self.name(s), "progress guarantee: granted");
                continue;
            }
            if grace {
                continue;
            }
            let mut held: HashMap<String, u32> = HashMap::new();
            for k in self.stations.values() {
                for g in &k.ad.running_guests {
                    *held.entry(g.home.clone()).or_default() += 1;
                }
            }
            let mut victim: Option<(u32, StationId, JobId, StationId)> = None;
            for (&hid, k) in &self.stations {
                if k.ad.state != OwnerState::Av || k.ad.submit_only {
                    continue;
                }
                for g in &k.ad.running_guests {
                    let n = held.get(&g.home).copied().unwrap_or(0);
                    let Some(&from) = self.ids.get(&g.home) else {
                        continue;
                    };
                    if n < 2
                        || self.reservations.iter().any(|r| r.job == g.job)
                        || !self.fits_after_vacate(s, hid, now, wall)
                    {
                        continue;
                    }
                    if victim.is_none_or(|(m, ..)| n > m) {
                        victim = Some((n, hid, g.job, from));
                    }
                }
            }
            if let Some((_, host, job, from)) = victim {
                let reason = format!(
                    "progress guarantee: {} has no job running, {} holds several",
                    self.name(s),
                    self.name(from)
                );
                self.preempt(host, job, from, s, reason, now);
            }
        }
    }

    /// Asks `from` to give `host` back (vacating `job`) and reserves the
    /// freed node for `to` until the preemption times out.
    fn preempt(
        &mut self,
        host: StationId,
        job: JobId,
        from: StationId,
        to: StationId,
        reason: String,
        now: Instant,
    ) {
        tracing::info!(host = self.name(host), %job, %reason, "preempt");
        let preemption = Preemption {
            host: self.name(host).to_string(),
            job: Some(job),
            reason,
        };
        self.outbox
            .entry(from)
            .or_default()
            .preemptions
            .push(preemption);
        self.reservations.push(Reservation {
            host,
            job,
            to,
            deadline: now + self.timing.preempt_timeout,
        });
    }

    fn apply(&mut self, decisions: Vec<Decision>, slots: &[Slot], now: Instant, wall: u64) {
        let grace = now.saturating_duration_since(self.started) < self.timing.startup_grace;
        for d in decisions {
            let Some(slot) = slots.get(d.node() as usize).copied() else {
                continue;
            };
            match d {
                Decision::Grant { to, .. } => {
                    tracing::info!(host = self.name(slot.host), to = self.name(to), "grant");
                    self.place(to, slot.host, false, false, now, wall);
                }
                Decision::Preempt { from, to, .. } => {
                    let Some(job) = slot.guest else { continue };
                    if !self.fits_after_vacate(to, slot.host, now, wall) {
                        // The freed node would be of no use to `to`.
                        continue;
                    }
                    if grace {
                        // A restarted coordinator first learns who holds
                        // what; it must not disturb running jobs meanwhile.
                        tracing::debug!("preemption suppressed during startup grace");
                        continue;
                    }
                    let reason = format!(
                        "up-down: {} (SI {:.1}) preempts {} (SI {:.1})",
                        self.name(to),
                        self.policy.index(to),
                        self.name(from),
                        self.policy.index(from)
                    );
                    self.preempt(slot.host, job, from, to, reason, now);
                }
            }
        }
    }

    /// The periodic pass: forget silent stations, expire claims and
    /// reservations, update the indices (Table 4.3) and allocate (L583).
    pub fn tick(&mut self, now: Instant, wall: u64) {
        let timeout = self.timing.station_timeout;
        let stale: Vec<StationId> = self
            .stations
            .iter()
            .filter(|(_, k)| now.saturating_duration_since(k.last_seen) > timeout)
            .map(|(&id, _)| id)
            .collect();
        for id in stale {
            tracing::info!(station = self.name(id), "station silent; forgetting its ad");
            self.stations.remove(&id);
            self.outbox.remove(&id);
            self.claims.retain(|c| c.host != id && c.home != id);
            self.reservations.retain(|r| r.host != id && r.to != id);
        }
        self.claims.retain(|c| c.expires > now);
        self.reservations.retain(|r| r.deadline > now);
        self.embargoes.retain(|_, t| *t > now);
        let snap = self.snapshot(now, wall);
        let view = snap.view();
        self.policy.alloc().on_interval(&view);
        let decisions = self.policy.alloc().allocate(&view, &mut self.rng);
        self.apply(decisions, &snap.slots, now, wall);
        self.progress(now, wall);
    }

    /// `GET /v1/ads`: every ad with the coordinator's additions, for
    /// `glean q --analyze`.
    pub fn ads(&self, now: Instant, wall: u64) -> AdsView {
        let book = self.licence_book();
        AdsView {
            now_unix: wall as i64,
            stations: self
                .stations
                .iter()
                .map(|(&id, k)| AdEntry {
                    ad: k.ad.clone(),
                    pending_claims: self.pending_on(id),
                    embargoed: self.embargoed(id, now),
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

    /// Licence units in use by name (guests plus pending claims).
    #[cfg(test)]
    pub fn licences_in_use(&self) -> BTreeMap<String, u32> {
        self.licence_book().in_use
    }

    /// `GET /v1/pool`.
    pub fn status(&self, now: Instant) -> PoolStatus {
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
                    last_seen_secs: now.saturating_duration_since(k.last_seen).as_secs_f64(),
                })
                .collect(),
        }
    }

    /// `GET /v1/userprio`: every station with an index or an ad.
    pub fn userprio(&self) -> UserPrio {
        let mut held: HashMap<&str, u32> = HashMap::new();
        for k in self.stations.values() {
            for g in &k.ad.running_guests {
                *held.entry(g.home.as_str()).or_default() += 1;
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CoordinatorConfig;
    use gleaner_core::time::Time;
    use gleaner_proto::wire::{Demand, GuestInfo};

    fn pool(grace: f64) -> (Pool, Instant) {
        let cfg = CoordinatorConfig {
            startup_grace_secs: Some(grace),
            advertise_period_secs: 10,
            ..CoordinatorConfig::default()
        };
        let now = Instant::now();
        let p = Pool::new(
            cfg.timing().unwrap(),
            PoolKey::from_bytes([1; 32]),
            &cfg.allocator,
            7,
            &FairnessState::default(),
            now,
        );
        (p, now)
    }

    fn ad(name: &str, av: bool, cpus: u32, idle: u32, guests: &[(u64, &str)]) -> StationAd {
        StationAd {
            protocol: PROTOCOL_VERSION,
            name: name.into(),
            address: String::new(),
            state: if av { OwnerState::Av } else { OwnerState::Na },
            cpus,
            memory_mb: 0,
            disk_free_kb: 0,
            arch: String::new(),
            opsys: String::new(),
            speed: 0.0,
            running_guests: guests
                .iter()
                .map(|&(c, h)| GuestInfo {
                    job: JobId::new(c, 0),
                    home: h.into(),
                    owner: String::new(),
                    since: Time::ZERO,
                    suspended: false,
                    concurrency_limits: Vec::new(),
                })
                .collect(),
            attrs: Default::default(),
            demand: Demand {
                idle_jobs: idle,
                remote_jobs: 0,
            },
            policy: Default::default(),
            classes: Vec::new(),
            submit_only: false,
            execute_only: false,
            sequence: 0,
            sent_at: Time::ZERO,
        }
    }

    #[test]
    fn grants_bounded_by_free_cpus_and_idle_jobs() {
        let (mut p, t0) = pool(0.0);
        p.advertise(ad("h", true, 3, 0, &[(1, "x")]), t0, 0);
        let mut got = 0;
        for i in 1..8u64 {
            let t = t0 + Duration::from_secs(i);
            got += p.advertise(ad("a", false, 1, 5, &[]), t, i).grants.len();
            p.tick(t, i);
        }
        assert_eq!(got, 2, "3 cpus, 1 guest");
        let (mut p, t0) = pool(0.0);
        p.advertise(ad("h", true, 8, 0, &[]), t0, 0);
        let mut got = 0;
        for i in 1..8u64 {
            let t = t0 + Duration::from_secs(i);
            got += p.advertise(ad("a", false, 1, 1, &[]), t, i).grants.len();
            p.tick(t, i);
        }
        assert_eq!(got, 1, "one idle job");
    }

    #[test]
    fn replayed_ad_does_not_roll_back() {
        let (mut p, t0) = pool(0.0);
        let mut a = ad("h", true, 1, 0, &[]);
        a.sequence = 5;
        p.advertise(a, t0, 0);
        let mut old = ad("h", false, 1, 0, &[]);
        old.sequence = 3;
        p.advertise(old, t0, 0);
        assert_eq!(p.status(t0).stations[0].state, OwnerState::Av);
    }

    #[test]
    fn no_preemption_during_startup_grace() {
        let (mut p, t0) = pool(100.0);
        for i in 1..6u64 {
            let t = t0 + Duration::from_secs(i);
            p.advertise(ad("h", true, 1, 0, &[(1, "heavy")]), t, i);
            p.advertise(ad("heavy", false, 1, 3, &[]), t, i);
            p.advertise(ad("light", false, 1, 1, &[]), t, i);
            p.tick(t, i);
        }
        let t = t0 + Duration::from_secs(6);
        let r = p.advertise(ad("heavy", false, 1, 3, &[]), t, 6);
        assert!(r.preemptions.is_empty());
        // After the grace the next interval preempts.
        let t = t0 + Duration::from_secs(101);
        p.advertise(ad("h", true, 1, 0, &[(1, "heavy")]), t, 101);
        p.advertise(ad("light", false, 1, 1, &[]), t, 101);
        p.advertise(ad("heavy", false, 1, 3, &[]), t, 101);
        p.tick(t, 101);
        let r = p.advertise(ad("heavy", false, 1, 3, &[]), t, 101);
        assert_eq!(r.preemptions.len(), 1);
    }
}

#[cfg(test)]
#[path = "pool_match_tests.rs"]
mod match_tests;
