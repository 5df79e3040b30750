//! Allocation passes and placements: Up-Down (or another allocator) picks
//! which station gets a node, the matchmaker which host and class, DMW's
//! progress guarantee serves stations with nothing running, and preemptions
//! reserve the freed node for the preempting station.

use super::Pool;
use super::effects::{Message, Outbox};
use super::ledger::Reservation;
use crate::matchmaker::{self, Candidate, LicenceBook};
use gleaner_core::alloc::{Decision, NodeId, PoolView, StationDemand, StationId};
use gleaner_core::dmw::{Pass, needs_progress};
use gleaner_core::time::Time;
use gleaner_proto::fit::{self, HostView, JobView};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{Grant, Preemption};

/// What one node of a pass is.
#[derive(Clone)]
pub(super) struct Slot {
    host: StationId,
    /// The guest on it, for held nodes (for a claim its host holds idle
    /// for reuse, the claim's last job).
    guest: Option<JobId>,
    /// The claim the node is held by, when its host holds it for reuse.
    claim: Option<String>,
}

/// One pass's input to the allocator; node ids index `slots`. The pool
/// keeps the last one's buffers for the next: with 10 000 stations they
/// are megabytes, and fresh ones cost page faults on every pass.
#[derive(Default)]
pub(super) struct Snapshot {
    demands: Vec<StationDemand>,
    free: Vec<NodeId>,
    held: Vec<(NodeId, StationId)>,
    slots: Vec<Slot>,
}

impl Snapshot {
    fn clear(&mut self) {
        self.demands.clear();
        self.free.clear();
        self.held.clear();
        self.slots.clear();
    }

    pub(super) fn view(&self) -> PoolView<'_> {
        PoolView {
            stations: &self.demands,
            free_nodes: &self.free,
            held: &self.held,
        }
    }
}

impl Pool {
    /// `h` as the matchmaker sees it in `pass`.
    pub(super) fn candidate(&self, h: StationId, pass: Pass, now: Time) -> Option<Candidate<'_>> {
        let k = self.stations.get(&h)?;
        let pending = self.pending_on(h);
        Some(Candidate {
            ad: &k.ad,
            pending,
            fit: HostView::of_ad(&k.ad, k, pending, self.embargoed(h, now, pass)),
        })
    }

    /// The hosts a placement may use in `pass`: `only`, or every host with
    /// a free node (no other host fits any job: each needs a CPU), with the
    /// station ids.
    fn candidates(
        &self,
        only: Option<StationId>,
        pass: Pass,
        now: Time,
    ) -> (Vec<StationId>, Vec<Candidate<'_>>) {
        let ids: Vec<StationId> = match only {
            Some(h) => vec![h],
            None => self.free_hosts.iter().copied().collect(),
        };
        let mut found = Vec::with_capacity(ids.len());
        let mut hosts = Vec::with_capacity(ids.len());
        for h in ids {
            if let Some(c) = self.candidate(h, pass, now) {
                found.push(h);
                hosts.push(c);
            }
        }
        (found, hosts)
    }

    /// Every known host, free or not, for the demand count.
    fn all_hosts(&self, now: Time) -> Vec<Candidate<'_>> {
        self.stations
            .keys()
            .filter_map(|&h| self.candidate(h, Pass::Regular, now))
            .collect()
    }

    /// Idle jobs of `home`'s class `c` not yet covered by a pending claim.
    pub(super) fn class_left(&self, home: StationId, c: &JobView) -> u32 {
        c.class
            .count
            .saturating_sub(self.claims.for_class(home, &c.class.key))
            .saturating_sub(self.used_unseen(home, Some(&c.class.key)))
    }

    /// Whether a class must wait out the startup grace: after a restart the
    /// running licensed guests are known only once their hosts advertised.
    pub(super) fn waits_for_grace(&self, job: &JobView, book: &LicenceBook, now: Time) -> bool {
        self.in_grace(now)
            && job
                .class
                .licences()
                .iter()
                .any(|(n, _)| book.limits.contains_key(n))
    }

    /// The best (class, host) for `home`: among its classes with jobs left,
    /// the first (queue order) that fits some host, on that class's best
    /// host. `only` restricts the hosts.
    fn choose(
        &self,
        home: StationId,
        only: Option<StationId>,
        pass: Pass,
        now: Time,
    ) -> Option<(usize, StationId)> {
        let k = self.stations.get(&home)?;
        let book = self.licence_book();
        let unix = Self::unix(now);
        // Built on first need: all candidates (for jobs with a Rank).
        let mut all: Option<(Vec<StationId>, Vec<Candidate<'_>>)> = None;
        for (i, job) in k.jobs.iter().enumerate() {
            // Gangs are placed whole (`gang.rs`), never one node at a time.
            if job.class.gang.is_some()
                || self.class_left(home, job) == 0
                || self.waits_for_grace(job, &book, now)
            {
                continue;
            }
            let found = if job.ad.get(gleaner_classad::matching::RANK).is_none() {
                // Every host ranks 0: the fitting host with the highest σ
                // (then the lowest name) wins, so try them in that order
                // and build a host's view only when its turn comes.
                let fits = |h: StationId| {
                    let c = self.candidate(h, pass, now)?;
                    (self.partition_allows(h, Some(&job.class.owner))
                        && fit::fits(job, &c.fit, &book, unix))
                    .then_some(h)
                };
                match only {
                    Some(h) => fits(h),
                    // The free hosts kept in this order (`host_order`).
                    None => self.free_order.iter().find_map(|(sigma, h)| {
                        debug_assert_eq!(
                            self.stations
                                .get(&h)
                                .map(|k| matchmaker::sigma(&k.ad, self.pending_on(h))),
                            Some(sigma),
                            "the free order's σ of {} is stale",
                            self.name(h)
                        );
                        fits(h)
                    }),
                }
            } else {
                let (ids, hosts) = all.get_or_insert_with(|| self.candidates(only, pass, now));
                if self.partition.is_some() {
                    // Only the hosts the reservations leave to this owner.
                    let ok: Vec<StationId> = ids
                        .iter()
                        .copied()
                        .filter(|&h| self.partition_allows(h, Some(&job.class.owner)))
                        .collect();
                    let cands: Vec<Candidate<'_>> = ok
                        .iter()
                        .filter_map(|&h| self.candidate(h, pass, now))
                        .collect();
                    matchmaker::best_host(job, &cands, &book, unix).map(|j| ok[j])
                } else {
                    matchmaker::best_host(job, hosts, &book, unix).map(|j| ids[j])
                }
            };
            if let Some(h) = found {
                return Some((i, h));
            }
        }
        None
    }

    /// How many of `home`'s idle jobs some host of `hosts` could take,
    /// now or once its owner, guests or embargo let it
    /// ([`fit::could_fit`]).
    fn matchable(
        &self,
        home: StationId,
        hosts: &[Candidate<'_>],
        book: &LicenceBook,
        now: Time,
    ) -> u32 {
        let Some(k) = self.stations.get(&home) else {
            return 0;
        };
        let unix = Self::unix(now);
        k.jobs
            .iter()
            .filter(|job| {
                hosts
                    .iter()
                    .any(|h| fit::could_fit(job, &h.fit, book, unix))
                    && self.gang_could_fit(job, hosts, book, unix)
            })
            .map(|job| self.class_left(home, job))
            .sum()
    }

    /// Could `host` take a job of `home` once one of its guests left? Only
    /// occupancy rejects (cpus, guest limit, embargo; the host of a held
    /// node is AV) go away with a guest ([`fit::could_fit`]).
    fn fits_after_vacate(
        &self,
        home: StationId,
        host: StationId,
        book: &LicenceBook,
        now: Time,
    ) -> bool {
        let (Some(k), Some(h)) = (self.stations.get(&home), self.stations.get(&host)) else {
            return false;
        };
        if k.jobs.is_empty() {
            return self.partition_allows(host, None);
        }
        let view = HostView::of_ad(
            &h.ad,
            h,
            self.pending_on(host),
            self.embargoed(host, now, Pass::Regular),
        );
        let unix = Self::unix(now);
        // No preemption for a gang: one freed node does not start it.
        k.jobs.iter().any(|job| {
            job.class.gang.is_none()
                && self.class_left(home, job) > 0
                && self.partition_allows(host, Some(&job.class.owner))
                && fit::could_fit(job, &view, book, unix)
        })
    }

    /// The allocator's input, and what each node id stands for.
    pub(super) fn snapshot(&mut self, now: Time) -> Snapshot {
        let mut snap = self.spare_snapshot.take().unwrap_or_default();
        snap.clear();
        self.fill_snapshot(&mut snap, now);
        snap
    }

    fn fill_snapshot(&self, snap: &mut Snapshot, now: Time) {
        let Snapshot {
            demands,
            free,
            held,
            slots,
        } = snap;
        for (&id, k) in self.stations.iter() {
            if !k.ad.execute_only {
                let waiting = k.ad.demand.idle_jobs.saturating_sub(self.unused_grants(id));
                demands.push(StationDemand {
                    station: id,
                    waiting,
                    remote: k.ad.demand.remote_jobs,
                });
            }
            if !k.hosting() {
                continue;
            }
            // `holders` has the guests' homes, then the idle claims'.
            let (guest_homes, claim_homes) = k
                .holders
                .split_at(k.ad.running_guests.len().min(k.holders.len()));
            for (g, &home) in k.ad.running_guests.iter().zip(guest_homes) {
                if !self.reservations.vacating(id, home, g.job) {
                    held.push((slots.len() as NodeId, home));
                    slots.push(Slot {
                        host: id,
                        guest: Some(g.job),
                        claim: k.ad.claim_for(&g.home, g.job).map(str::to_string),
                    });
                }
            }
            // A claim held idle between two jobs of its home is that
            // home's node as much as a guest is (claim reuse).
            for (c, &home) in k.ad.idle_claims().zip(claim_homes) {
                if !self.reservations.vacating(id, home, c.job) {
                    held.push((slots.len() as NodeId, home));
                    slots.push(Slot {
                        host: id,
                        guest: Some(c.job),
                        claim: Some(c.claim.clone()),
                    });
                }
            }
            for _ in 0..self.free_on(id) {
                free.push(slots.len() as NodeId);
                slots.push(Slot {
                    host: id,
                    guest: None,
                    claim: None,
                });
            }
        }
        // Only jobs some host could take count as demand, so Up-Down does
        // not spend nodes on jobs no host matches. A job whose hosts are
        // all busy (or their owners active) still counts: Up-Down must see
        // it to preempt for it and to credit its station's index. The hosts
        // are built once per pass, and only when some station that sends
        // job classes waits.
        let matching = demands.iter().any(|d| {
            d.waiting > 0
                && self
                    .stations
                    .get(&d.station)
                    .is_some_and(|k| !k.jobs.is_empty())
        });
        if matching {
            let hosts = self.all_hosts(now);
            let book = self.licence_book();
            for d in demands.iter_mut().filter(|d| d.waiting > 0) {
                if self
                    .stations
                    .get(&d.station)
                    .is_some_and(|k| !k.jobs.is_empty())
                {
                    d.waiting = d.waiting.min(self.matchable(d.station, &hosts, &book, now));
                }
            }
        }
    }

    /// One allocation pass on a capacity event.
    pub(super) fn allocate_pass(&mut self, now: Time, out: &mut Outbox) {
        // Reserved stations first: their holders' jobs, before the
        // allocator hands the rest out (Mutka 1988 L974).
        self.serve_partition(now, out);
        let snap = self.snapshot(now);
        self.allocate_with(snap, now, out);
    }

    /// Runs the allocator on `snap` (taken after the reservation step,
    /// [`Pool::serve_partition`]), applies its decisions, then the progress
    /// guarantee.
    pub(super) fn allocate_with(&mut self, snap: Snapshot, now: Time, out: &mut Outbox) {
        if snap.demands.iter().any(|d| d.waiting > 0) {
            self.passes += 1;
            let decisions = self.policy.alloc().allocate(&snap.view(), &mut self.rng);
            let unused = self.apply(decisions, &snap.slots, now, out);
            self.backfill(unused, &snap.demands, now, out);
        }
        self.spare_snapshot = Some(snap);
        self.progress(now, out);
    }

    /// Applies the allocator's decisions; returns the hosts of granted
    /// nodes that none of the grantee's jobs fits.
    fn apply(
        &mut self,
        decisions: Vec<Decision>,
        slots: &[Slot],
        now: Time,
        out: &mut Outbox,
    ) -> Vec<StationId> {
        let grace = self.in_grace(now);
        let mut unused = Vec::new();
        let book = self.licence_book();
        for d in decisions {
            let Some(slot) = slots.get(d.node() as usize).cloned() else {
                continue;
            };
            match d {
                Decision::Grant { to, .. } => {
                    tracing::info!(host = self.name(slot.host), to = self.name(to), "grant");
                    if !self.place(to, slot.host, false, Pass::Regular, now, out) {
                        unused.push(slot.host);
                    }
                }
                Decision::Preempt { from, to, .. } => {
                    let Some(job) = slot.guest else { continue };
                    if self.is_drained(self.name(slot.host)) {
                        // A drained host's freed node would go to no one.
                        continue;
                    }
                    if !self.fits_after_vacate(to, slot.host, &book, now) {
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
                    self.preempt(slot.host, job, slot.claim, from, to, reason, now, out);
                }
            }
        }
        unused
    }

    /// Offers the free nodes on `hosts`, which the allocator granted to a
    /// station none of whose jobs fits them, to the other waiting stations,
    /// lowest schedule index first: the allocator decides who gets
    /// contested capacity, not whether a free node is used while a job that
    /// fits it waits. (Demand counts jobs that fit a busy host too, so that
    /// Up-Down preempts for them; without this, such a station would keep
    /// winning a node it cannot use.)
    fn backfill(
        &mut self,
        hosts: Vec<StationId>,
        demands: &[StationDemand],
        now: Time,
        out: &mut Outbox,
    ) {
        if hosts.is_empty() {
            return;
        }
        let mut order: Vec<(f64, StationId)> = demands
            .iter()
            .filter(|d| d.waiting > 0)
            .map(|d| (self.policy.index(d.station), d.station))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for host in hosts {
            for &(_, s) in &order {
                let idle = self.stations.get(&s).map_or(0, |k| k.ad.demand.idle_jobs);
                if self.free_on(host) == 0 {
                    break;
                }
                if idle > self.unused_grants(s)
                    && self.place(s, host, true, Pass::Regular, now, out)
                {
                    tracing::info!(host = self.name(host), to = self.name(s), "backfilled");
                    break;
                }
            }
        }
    }

    /// DMW's progress guarantee (Neeracher 1998 L1016, L1203): a station
    /// with matchable work, nothing running and nothing promised gets one
    /// free matching host even when the allocator gave it none, under the
    /// configured [`gleaner_core::dmw::ProgressGuarantee`] (by default the
    /// embargo may be ignored, the guest limit never). It takes no node from
    /// anyone (see `gleaner_core::dmw::rules`): a station whose every
    /// fitting host is busy waits for the allocator.
    fn progress(&mut self, now: Time, out: &mut Outbox) {
        let rule = self.timing.progress;
        if !rule.enabled() {
            return;
        }
        let needy: Vec<StationId> = self
            .stations
            .iter()
            .filter(|(id, k)| {
                !k.ad.execute_only
                    && !k.jobs.is_empty()
                    && needs_progress(
                        k.ad.demand.idle_jobs > 0,
                        k.ad.demand
                            .remote_jobs
                            .max(self.guests_of.get(*id).copied().unwrap_or(0)),
                        self.unused_grants(**id),
                    )
            })
            .map(|(id, _)| *id)
            .collect();
        for s in needy {
            if self.place(s, s, false, Pass::Progress(rule), now, out) {
                tracing::info!(station = self.name(s), "progress guarantee: granted");
            }
        }
    }

    /// Asks `from` to give `host` back (vacating `job`, and giving up
    /// `claim` if the host holds it for reuse) and reserves the freed node
    /// for `to` until the preemption times out.
    #[allow(clippy::too_many_arguments)]
    fn preempt(
        &mut self,
        host: StationId,
        job: JobId,
        claim: Option<String>,
        from: StationId,
        to: StationId,
        reason: String,
        now: Time,
        out: &mut Outbox,
    ) {
        tracing::info!(host = self.name(host), %job, %reason, "preempt");
        out.messages.push(Message::Preempt {
            to: self.name(from).to_string(),
            preemption: Preemption {
                host: self.name(host).to_string(),
                job: Some(job),
                reason,
                claim: claim.clone(),
            },
        });
        self.reservations.push(Reservation {
            host,
            from,
            job,
            claim,
            to,
            deadline: now + self.timing.preempt_timeout,
        });
    }

    /// Hands the nodes that preempted guests left on `host` to the stations
    /// they were reserved for.
    pub(super) fn settle_reservations(&mut self, host: StationId, now: Time, out: &mut Outbox) {
        if !self.reservations.has_on(host) {
            return;
        }
        let Some(k) = self.stations.get(&host) else {
            return;
        };
        // Vacated: the guest is gone, and the claim it held the node by
        // (when its host holds it for reuse) too.
        let names = &self.names;
        let vacated = self.reservations.take_unless(|r| {
            let home = names.get(r.from as usize).map(String::as_str);
            r.host != host
                || k.ad
                    .running_guests
                    .iter()
                    .any(|g| g.job == r.job && Some(g.home.as_str()) == home)
                || r.claim
                    .as_ref()
                    .is_some_and(|c| k.ad.claims_held.iter().any(|h| &h.claim == c))
        });
        for r in vacated {
            let waiting = self
                .stations
                .get(&r.to)
                .map_or(0, |k| k.ad.demand.idle_jobs);
            // The guest's leaving has lifted the host's embargo already.
            if self.free_on(host) > 0
                && waiting > self.unused_grants(r.to)
                && self.place(r.to, host, true, Pass::Regular, now, out)
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
    /// (class, host) pair, on `node_host` only when `restrict`; for one that
    /// does not, `node_host` itself. False when nothing fits.
    pub(super) fn place(
        &mut self,
        to: StationId,
        node_host: StationId,
        restrict: bool,
        pass: Pass,
        now: Time,
        out: &mut Outbox,
    ) -> bool {
        let legacy = self.stations.get(&to).is_none_or(|k| k.jobs.is_empty());
        if legacy {
            // A home without job classes cannot show whose jobs it would
            // place: only unreserved hosts.
            if !self.partition_allows(node_host, None) {
                return false;
            }
            return self.grant(node_host, to, None, Vec::new(), now, out);
        }
        // A waiting gang takes its nodes all at once, wherever they are
        // free (`gang.rs`).
        if self.has_gangs(to) && self.place_gang(to, pass, now, out) {
            return true;
        }
        match self.choose(to, restrict.then_some(node_host), pass, now) {
            Some((class, host)) => {
                let Some(job) = self.stations.get(&to).and_then(|k| k.jobs.get(class)) else {
                    return false;
                };
                let key = job.class.key.clone();
                let licences = job.class.licences();
                tracing::info!(
                    host = self.name(host),
                    to = self.name(to),
                    class = %key,
                    "matched"
                );
                if !self.grant(host, to, Some(key), licences, now, out) {
                    return false;
                }
                self.embargoes
                    .entry(host)
                    .or_default()
                    .on_grant(now, self.timing.embargo);
                true
            }
            None => {
                tracing::debug!(to = self.name(to), "no host matches; grant dropped");
                false
            }
        }
    }

    /// Issues a claim for `to` on `host` and posts the grant; false (and
    /// nothing granted) when no claim could be minted.
    fn grant(
        &mut self,
        host: StationId,
        to: StationId,
        class: Option<String>,
        licences: Vec<(String, u32)>,
        now: Time,
        out: &mut Outbox,
    ) -> bool {
        let persist = !licences.is_empty();
        let minted = match self.mint_claim(host, to, class.clone(), licences, now) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(host = self.name(host), to = self.name(to), error = %e, "cannot mint a claim; grant dropped");
                return false;
            }
        };
        out.persist_claims |= persist;
        let host_address = self
            .stations
            .get(&host)
            .map(|k| k.ad.address.clone())
            .unwrap_or_default();
        out.messages.push(Message::Grant {
            to: self.name(to).to_string(),
            grant: Grant {
                host: self.name(host).to_string(),
                host_address,
                claim_id: minted.id,
                class,
                nonce: Some(minted.nonce),
                gang: Vec::new(),
            },
        });
        true
    }
}
