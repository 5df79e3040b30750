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

    /// Whether a job of `owner` may run on `host` now (always, without a
    /// reservation role).
    pub(super) fn partition_allows(&self, host: StationId, owner: Option<&str>) -> bool {
        self.partition
            .as_ref()
            .is_none_or(|p| p.allows(self.name(host), owner))
    }

    /// Tells the role about `id`'s latest ad.
    pub(super) fn partition_observe(&mut self, id: StationId, now: Time) {
        let Some(k) = self.stations.get(&id) else {
            return;
        };
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
    pub(super) fn partition_forget(&mut self, id: StationId) {
        let name = self.name(id).to_string();
        if let Some(p) = &mut self.partition {
            p.forget(&name);
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
        for (host_name, _) in &bound {
            let Some(&host) = self.ids.get(host_name) else {
                continue;
            };
            self.evict_foreign(host, now, out);
            self.serve_holder(host, now, out);
        }
    }

    /// Asks the homes of other users' guests (and of idle claims held for
    /// other users' homes) on bound `host` to give it back.
    fn evict_foreign(&mut self, host: StationId, now: Time, out: &mut Outbox) {
        let Some(holder) = self
            .partition
            .as_ref()
            .and_then(|p| p.holder(self.name(host)))
            .map(str::to_string)
        else {
            return;
        };
        let Some(k) = self.stations.get(&host) else {
            return;
        };
        if !k.hosting() {
            return;
        }
        let mut victims: Vec<(String, JobId, Option<String>)> = Vec::new();
        for g in &k.ad.running_guests {
            let owner = g.class.as_ref().map_or(g.owner.as_str(), |c| &c.owner);
            if owner != holder {
                victims.push((
                    g.home.clone(),
                    g.job,
                    k.ad.claim_of(g.job).map(str::to_string),
                ));
            }
        }
        for c in k.ad.idle_claims() {
            let home_serves_holder = self
                .ids
                .get(&c.home)
                .and_then(|h| self.stations.get(h))
                .is_some_and(|h| h.jobs.iter().any(|j| j.class.owner == holder));
            if !home_serves_holder {
                victims.push((c.home.clone(), c.job, Some(c.claim.clone())));
            }
        }
        let host_name = self.name(host).to_string();
        for (home, job, claim) in victims {
            if self.evicting.contains_key(&(host, job)) {
                continue;
            }
            tracing::info!(host = %host_name, %job, holder = %holder, "reserved station: asking another user's guest to leave");
            out.messages.push(Message::Preempt {
                to: home,
                preemption: Preemption {
                    host: host_name.clone(),
                    job: Some(job),
                    reason: format!("{host_name} is reserved for {holder} this slot"),
                    claim,
                },
            });
            self.evicting
                .insert((host, job), now + self.timing.preempt_timeout);
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
