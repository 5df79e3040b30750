//! How the pool honours reservations (Mutka 1988 §6.2–6.3,
//! seeds/000_14c1149197e96532.txt L883–893, L974): the reservation role
//! ([`super::partition::Partition`]) learns every ad; each pass first
//! moves it to `now` (a slot beginning binds its reservations), asks the
//! guests of other users on bound stations to leave, and places the
//! holders' jobs on their free bound nodes. Placing everywhere else obeys
//! [`Partition::allows`], so a bound station never gets another user's job.

use super::Pool;
use super::effects::{Message, Outbox};
use super::partition::{DONATED_ATTR, Partition, Seen};
use gleaner_core::alloc::StationId;
use gleaner_core::dmw::Pass;
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::Preemption;

impl Pool {
    /// Runs the pool with a reservation role.
    pub fn with_partition(mut self, p: Partition) -> Self {
        self.partition = Some(p);
        self
    }

    /// The reservation role, if configured.
    pub fn partition(&self) -> Option<&Partition> {
        self.partition.as_ref()
    }

    /// Runs `f` on the role, then a pass so that a changed binding takes
    /// effect at once (e.g. a reservation made for the current slot).
    pub fn with_partition_mut<R>(
        &mut self,
        now: Time,
        out: &mut Outbox,
        f: impl FnOnce(&mut Partition) -> R,
    ) -> Option<R> {
        let r = f(self.partition.as_mut()?);
        self.allocate_pass(now, out);
        Some(r)
    }

    /// The role's durable state, if it changed since the last call.
    pub fn take_partition_state(&mut self) -> Option<super::partition::PartitionState> {
        let p = self.partition.as_mut()?;
        p.take_dirty().then(|| p.state())
    }

    /// Whether a job of `owner` may run on `host` now (always, without a
    /// reservation role).
    pub(super) fn partition_allows(&self, host: StationId, owner: Option<&str>) -> bool {
        self.partition
            .as_ref()
            .is_none_or(|p| p.allows(self.name(host), owner))
    }

    /// Tells the role about `id`'s latest ad.
    pub(super) fn partition_observe(&mut self, id: StationId, now: Time) {
        // Most pools run no market: nothing to observe, nothing to build.
        if self.partition.is_none() {
            return;
        }
        let Some(k) = self.stations.get(&id) else {
            return;
        };
        // A submit-only station never hosts: it is no machine to reserve.
        if k.ad.submit_only {
            return;
        }
        let seen = Seen {
            hosting: k.hosting(),
            donated: k
                .ad
                .attrs
                .get(DONATED_ATTR)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        };
        let name = self.name(id).to_string();
        if let Some(p) = &mut self.partition {
            p.observe(&name, seen, now);
        }
    }

    /// A silent station left: the role treats it as withdrawn.
    pub(super) fn partition_forget(&mut self, id: StationId, now: Time) {
        let name = self.name(id).to_string();
        if let Some(p) = &mut self.partition {
            p.forget(&name, now);
        }
    }

    /// The reservation step of every pass: advance the role, evict other
    /// users' guests from bound stations, place holders' jobs there.
    pub(super) fn serve_partition(&mut self, now: Time, out: &mut Outbox) {
        let Some(p) = &mut self.partition else {
            return;
        };
        p.advance(now);
        let bound = p.bound();
        self.evicting.retain(|_, deadline| *deadline > now);
        if !bound.is_empty() {
            self.evict_disallowed(now, out);
        }
        for (host_name, _) in &bound {
            if let Some(&host) = self.ids.get(host_name.as_str()) {
                self.serve_holder(host, now, out);
            }
        }
    }

    /// Asks the homes of guests the partition no longer allows where they
    /// run to take them back: other users' guests (and idle claims held
    /// for homes without the holder's jobs) on bound stations, and under
    /// `confine` a holder's guests outside its stations.
    fn evict_disallowed(&mut self, now: Time, out: &mut Outbox) {
        let Some(p) = &self.partition else {
            return;
        };
        let mut victims: Vec<(StationId, String, JobId, Option<String>, String)> = Vec::new();
        for (&host, k) in self.stations.iter() {
            if !k.hosting() {
                continue;
            }
            let name = self.name(host);
            for g in &k.ad.running_guests {
                let owner = g.class.as_ref().map_or(g.owner.as_str(), |c| &c.owner);
                if !p.allows(name, Some(owner)) {
                    let why = match p.holder(name) {
                        Some(h) => format!("{name} is reserved for {h} this slot"),
                        None => format!("{owner}'s reservation confines its jobs to its stations"),
                    };
                    victims.push((
                        host,
                        g.home.clone(),
                        g.job,
                        k.ad.claim_for(&g.home, g.job).map(str::to_string),
                        why,
                    ));
                }
            }
            let Some(holder) = p.holder(name) else {
                continue;
            };
            for c in k.ad.idle_claims() {
                let serves = self
                    .ids
                    .get(c.home.as_str())
                    .and_then(|h| self.stations.get(h))
                    .is_some_and(|h| h.jobs.iter().any(|j| j.class.owner == holder));
                if !serves {
                    victims.push((
                        host,
                        c.home.clone(),
                        c.job,
                        Some(c.claim.clone()),
                        format!("{name} is reserved for {holder} this slot"),
                    ));
                }
            }
        }
        for (host, home, job, claim, reason) in victims {
            // A guest is its home's job: another home's job of the same id
            // on this host is another guest.
            let guest = gleaner_proto::guest_key::GuestKey::new(home.clone(), job);
            if self.evicting.contains_key(&(host, guest.clone())) {
                continue;
            }
            let host_name = self.name(host).to_string();
            tracing::info!(host = %host_name, %job, %reason, "reservation partition: asking a guest to leave");
            out.messages.push(Message::Preempt {
                to: home,
                preemption: Preemption {
                    host: host_name,
                    job: Some(job),
                    reason,
                    claim,
                },
            });
            self.evicting
                .insert((host, guest), now + self.timing.preempt_timeout);
        }
    }

    /// Places jobs of `host`'s holder on its free nodes, from any home that
    /// queues them.
    fn serve_holder(&mut self, host: StationId, now: Time, out: &mut Outbox) {
        let Some(holder) = self
            .partition
            .as_ref()
            .and_then(|p| p.holder(self.name(host)))
            .map(str::to_string)
        else {
            return;
        };
        let homes: Vec<StationId> = self
            .stations
            .iter()
            .filter(|(_, k)| !k.ad.execute_only && k.jobs.iter().any(|j| j.class.owner == holder))
            .map(|(&id, _)| id)
            .collect();
        for home in homes {
            while self.free_on(host) > 0 {
                if !self.place(home, host, true, Pass::Regular, now, out) {
                    break;
                }
                tracing::info!(host = self.name(host), home = self.name(home), holder = %holder, "reserved station: placed its holder's job");
            }
        }
    }
}
