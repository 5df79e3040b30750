//! An administrator's hold on a host (HTCondor's `condor_drain` and
//! `condor_vacate`), as pool rules:
//!
//! - **drained**: the host is offered to no one ([`Pool::free_on`] is 0, so
//!   no grant, backfill, progress guarantee or reservation lands there),
//!   and the allocator's preemptions on it are not sent (a freed node
//!   would go to no one). Its guests run to the end; the nodes they hold
//!   still count for their homes' Up-Down index. Idle claims its host
//!   holds for its homes' next jobs are called back when the drain begins.
//!   Drained hosts are kept by name, so a drain holds for a station that
//!   is silent now and, restored by the daemon (`drained.json`), across a
//!   restart.
//! - **vacate**: every guest and held claim on the host is preempted now,
//!   through the normal path: its home vacates it (checkpointing when the
//!   job can) and queues it again.

use super::{Message, Outbox, Pool};
use gleaner_proto::wire::Preemption;
use std::collections::BTreeSet;

impl Pool {
    /// Whether `host` is drained.
    pub fn is_drained(&self, host: &str) -> bool {
        self.drained.contains(host)
    }

    /// The drained hosts, by name.
    pub fn drained(&self) -> &BTreeSet<String> {
        &self.drained
    }

    /// Drains `host` (`on`) or ends its drain; returns whether that changed
    /// anything. Beginning a drain calls back the idle claims the host
    /// holds, in `out`.
    pub fn set_drained(&mut self, host: &str, on: bool, out: &mut Outbox) -> bool {
        let changed = if on {
            self.drained.insert(host.to_string())
        } else {
            self.drained.remove(host)
        };
        if !changed {
            return false;
        }
        tracing::info!(host, drained = on, "drain changed");
        if on {
            self.call_back(host, false, &format!("{host} is drained"), out);
        }
        if let Some(&id) = self.ids.get(host) {
            self.sync_free(id);
        }
        true
    }

    /// Asks the homes of every guest (and held claim) on `host` to vacate
    /// it now; returns how many were asked.
    pub fn vacate_host(&mut self, host: &str, reason: &str, out: &mut Outbox) -> usize {
        self.call_back(host, true, reason, out)
    }

    /// Preempts the idle claims held on `host` and, with `guests`, its
    /// guests too.
    fn call_back(&mut self, host: &str, guests: bool, reason: &str, out: &mut Outbox) -> usize {
        let Some(k) = self.ids.get(host).and_then(|id| self.stations.get(id)) else {
            return 0;
        };
        let running = k.ad.running_guests.iter().filter(|_| guests).map(|g| {
            (
                g.home.clone(),
                g.job,
                k.ad.claim_for(&g.home, g.job).map(str::to_string),
            )
        });
        let idle =
            k.ad.idle_claims()
                .map(|c| (c.home.clone(), c.job, Some(c.claim.clone())));
        let asked: Vec<_> = running.chain(idle).collect();
        for (home, job, claim) in &asked {
            tracing::info!(host, %home, %job, reason, "administrator: preempt");
            out.messages.push(Message::Preempt {
                to: home.clone(),
                preemption: Preemption {
                    host: host.to_string(),
                    job: Some(*job),
                    reason: reason.to_string(),
                    claim: claim.clone(),
                },
            });
        }
        asked.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ad, pool};
    use gleaner_core::time::Dur;
    use gleaner_proto::wire::HeldClaim;

    #[test]
    fn a_drained_host_gets_no_guest_until_the_drain_ends() {
        let (mut p, t0) = pool(0.0);
        p.set_drained("h", true);
        let mut got = 0;
        for i in 1..6u64 {
            let t = t0 + Dur::from_secs(i);
            p.advertise(ad("h", true, 2, 0, &[]), t);
            got += p.advertise(ad("a", false, 1, 3, &[]), t).grants.len();
            p.tick(t);
        }
        assert_eq!(got, 0, "drained: nothing granted on h");
        assert!(
            p.status(t0)
                .stations
                .iter()
                .any(|s| s.name == "h" && s.drained)
        );
        assert!(p.set_drained("h", false) && !p.set_drained("h", false));
        let t = t0 + Dur::from_secs(7);
        p.advertise(ad("h", true, 2, 0, &[]), t);
        p.tick(t);
        let r = p.advertise(ad("a", false, 1, 3, &[]), t);
        assert_eq!(r.grants.len(), 2, "both nodes once the drain ends");
    }

    #[test]
    fn the_allocator_does_not_preempt_on_a_drained_host() {
        let (mut p, t0) = pool(0.0);
        p.set_drained("h", true);
        let round = |p: &mut crate::mailbox::Served, t| {
            p.advertise(ad("h", true, 1, 0, &[(1, "heavy")]), t);
            p.advertise(ad("heavy", false, 1, 3, &[]), t);
            p.advertise(ad("light", false, 1, 1, &[]), t);
            p.tick(t);
            p.advertise(ad("heavy", false, 1, 3, &[]), t)
                .preemptions
                .len()
        };
        let mut asked = 0;
        for i in 1..8u64 {
            asked += round(&mut p, t0 + Dur::from_secs(i));
        }
        assert_eq!(asked, 0, "the guest on a drained host runs on");
        // The same pool undrained preempts it for the light user.
        p.set_drained("h", false);
        let mut asked = 0;
        for i in 8..12u64 {
            asked += round(&mut p, t0 + Dur::from_secs(i));
        }
        assert!(asked > 0);
    }

    #[test]
    fn vacate_preempts_every_guest_and_drain_calls_back_idle_claims() {
        let (mut p, t0) = pool(100.0);
        let mut h = ad("h", true, 4, 0, &[(1, "a"), (1, "b")]);
        h.claims_held.push(HeldClaim {
            claim: "c-idle".into(),
            home: "a".into(),
            job: gleaner_proto::job::JobId::new(7, 0),
            running: false,
            concurrency_limits: Vec::new(),
        });
        p.advertise(h.clone(), t0);
        // During the startup grace too: an administrator's word is explicit.
        assert_eq!(p.vacate("h", "administrator root vacated h"), 3);
        assert_eq!(p.vacate("nowhere", "x"), 0);
        let ra = p.advertise(ad("a", false, 1, 0, &[]), t0);
        let rb = p.advertise(ad("b", false, 1, 0, &[]), t0);
        assert_eq!((ra.preemptions.len(), rb.preemptions.len()), (2, 1));
        assert!(
            ra.preemptions
                .iter()
                .all(|x| x.host == "h" && x.reason == "administrator root vacated h")
        );
        assert!(
            ra.preemptions
                .iter()
                .any(|x| x.claim.as_deref() == Some("c-idle"))
        );
        // A drain leaves the guests alone and calls back the idle claim.
        assert!(p.set_drained("h", true));
        let ra = p.advertise(ad("a", false, 1, 0, &[]), t0);
        let rb = p.advertise(ad("b", false, 1, 0, &[]), t0);
        assert_eq!(ra.preemptions.len(), 1);
        assert_eq!(ra.preemptions[0].claim.as_deref(), Some("c-idle"));
        assert!(rb.preemptions.is_empty());
        assert!(!p.set_drained("h", true), "already drained");
    }
}
