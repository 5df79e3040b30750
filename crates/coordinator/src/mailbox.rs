//! The daemon's delivery of the pool's effects.
//!
//! The [`Pool`] writes grants and preemptions into an [`Outbox`]; the
//! daemon keeps each station's messages here until that station's next
//! advertisement, and hands them out in the reply (Mutka 1988 §5: the
//! coordinator's poll is the stations' advertisement). It also remembers
//! that claims holding licences must be written before they are delivered.

use crate::matchmaker::AdsView;
use crate::persist::{ClaimsState, FairnessState};
use crate::pool::{Message, Outbox, Pool};
use gleaner_core::time::Time;
use gleaner_proto::wire::{AdvertiseReply, Grant, PoolStatus, Preemption, StationAd, UserPrio};
use std::collections::HashMap;

#[derive(Default)]
struct Mail {
    grants: Vec<Grant>,
    preemptions: Vec<Preemption>,
}

/// The pool as the daemon serves it: the pool plus undelivered mail.
pub(crate) struct Served {
    pool: Pool,
    mail: HashMap<String, Mail>,
    claims_dirty: bool,
}

impl Served {
    pub(crate) fn new(pool: Pool) -> Self {
        Served {
            pool,
            mail: HashMap::new(),
            claims_dirty: false,
        }
    }

    fn post(&mut self, out: Outbox) {
        for name in out.forgotten {
            self.mail.remove(&name);
        }
        self.claims_dirty |= out.persist_claims;
        for m in out.messages {
            match m {
                Message::Grant { to, grant } => self.mail.entry(to).or_default().grants.push(grant),
                Message::Preempt { to, preemption } => self
                    .mail
                    .entry(to)
                    .or_default()
                    .preemptions
                    .push(preemption),
            }
        }
    }

    /// Handles one advertisement; the reply carries the sender's mail.
    pub(crate) fn advertise(&mut self, ad: StationAd, now: Time) -> AdvertiseReply {
        let name = ad.name.clone();
        let mut out = Outbox::default();
        let mut reply = self.pool.advertise(ad, now, &mut out);
        self.post(out);
        if let Some(m) = self.mail.remove(&name) {
            reply.grants = m.grants;
            reply.preemptions = m.preemptions;
        }
        reply
    }

    /// The periodic pass; its grants wait for their stations' next ads.
    pub(crate) fn tick(&mut self, now: Time) {
        let mut out = Outbox::default();
        self.pool.tick(now, &mut out);
        self.post(out);
    }

    /// Whether claims holding licences were issued since the last call.
    pub(crate) fn take_claims_dirty(&mut self) -> bool {
        std::mem::take(&mut self.claims_dirty)
    }

    pub(crate) fn saved_claims(&self) -> ClaimsState {
        self.pool.saved_claims()
    }

    pub(crate) fn fairness(&self) -> FairnessState {
        self.pool.fairness()
    }

    pub(crate) fn ads(&self, now: Time) -> AdsView {
        self.pool.ads(now)
    }

    pub(crate) fn status(&self, now: Time) -> PoolStatus {
        self.pool.status(now)
    }

    pub(crate) fn userprio(&self) -> UserPrio {
        self.pool.userprio()
    }

    #[cfg(test)]
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }
}
