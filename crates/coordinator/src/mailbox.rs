//! The daemon's delivery of the pool's effects.
//!
//! The [`Pool`] writes grants and preemptions into an [`Outbox`]; the
//! daemon keeps each station's messages here. A station that waits on
//! `GET /v1/events` gets them as soon as they are posted (each message
//! numbered, kept until a later call acknowledges it, so a lost reply is
//! sent again); whatever it has not been sent that way goes out in the reply
//! to its next advertisement (Mutka 1988 §5: the coordinator's poll is the
//! stations' advertisement). Each message goes out by one of the two ways
//! only. The mailbox also remembers that claims holding licences must be
//! written before they are delivered.

use crate::matchmaker::AdsView;
use crate::persist::{ClaimsState, FairnessState};
use crate::pool::{Message, Outbox, Pool};
use gleaner_core::time::Time;
use gleaner_proto::wire::{
    AdvertiseReply, EventsReply, PROTOCOL_VERSION, PoolStatus, StationAd, UserPrio,
};
use std::collections::HashMap;
use tokio::sync::watch;

/// One message waiting for its station.
struct Letter {
    seq: u64,
    message: Message,
    /// Sent on the events stream and not acknowledged yet: it stays for
    /// that stream and never goes in an advertise reply.
    sent: bool,
    /// Issued with a claim holding licences that is not on disk yet: not
    /// streamed until [`Served::release_held`] (an advertise reply waits
    /// for the write itself).
    held: bool,
}

/// A station's undelivered messages, and the bell its events call waits on.
#[derive(Default)]
struct Mail {
    letters: Vec<Letter>,
    bell: Option<watch::Sender<u64>>,
}

/// Splits messages into an advertise reply's or an events reply's lists.
fn sort_into(
    messages: impl Iterator<Item = Message>,
    grants: &mut Vec<gleaner_proto::wire::Grant>,
    preemptions: &mut Vec<gleaner_proto::wire::Preemption>,
) {
    for m in messages {
        match m {
            Message::Grant { grant, .. } => grants.push(grant),
            Message::Preempt { preemption, .. } => preemptions.push(preemption),
        }
    }
}

/// The pool as the daemon serves it: the pool plus undelivered mail.
pub(crate) struct Served {
    pool: Pool,
    mail: HashMap<String, Mail>,
    claims_dirty: bool,
    /// Number of the last message posted (numbers grow across stations,
    /// and across restarts: they start from the clock, so a station's
    /// `after` from before a restart acknowledges nothing new).
    seq: u64,
    /// Grants and preemptions posted since start (for `/metrics`).
    issued: Issued,
}

/// Running totals of the messages the pool has issued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Issued {
    pub(crate) grants: u64,
    pub(crate) preemptions: u64,
}

impl Served {
    pub(crate) fn new(pool: Pool) -> Self {
        Served {
            pool,
            mail: HashMap::new(),
            claims_dirty: false,
            seq: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX / 2)),
            issued: Issued::default(),
        }
    }

    fn post(&mut self, out: Outbox) {
        for name in out.forgotten {
            // A waiting events call keeps its bell; only the letters go.
            if let Some(m) = self.mail.get_mut(&name) {
                m.letters.clear();
            }
        }
        self.claims_dirty |= out.persist_claims;
        for message in out.messages {
            match &message {
                Message::Grant { .. } => self.issued.grants += 1,
                Message::Preempt { .. } => self.issued.preemptions += 1,
            }
            self.seq += 1;
            let mail = self.mail.entry(message.to().to_string()).or_default();
            mail.letters.push(Letter {
                seq: self.seq,
                message,
                sent: false,
                held: out.persist_claims,
            });
            if let (Some(bell), false) = (&mail.bell, out.persist_claims) {
                bell.send_replace(self.seq);
            }
        }
    }

    /// Handles one advertisement; the reply carries the sender's mail that
    /// its events stream has not been sent.
    pub(crate) fn advertise(&mut self, ad: StationAd, now: Time) -> AdvertiseReply {
        let name = ad.name.clone();
        let mut out = Outbox::default();
        let mut reply = self.pool.advertise(ad, now, &mut out);
        self.post(out);
        if let Some(m) = self.mail.get_mut(&name) {
            let (unsent, kept): (Vec<Letter>, Vec<Letter>) =
                m.letters.drain(..).partition(|l| !l.sent);
            m.letters = kept;
            sort_into(
                unsent.into_iter().map(|l| l.message),
                &mut reply.grants,
                &mut reply.preemptions,
            );
        }
        reply
    }

    /// `GET /v1/events?after=SEQ` for `station`: drops its messages up to
    /// `after` (received), and returns the rest, marked sent, or `None`
    /// when there are none, with a receiver that changes on the next post.
    pub(crate) fn events(
        &mut self,
        station: &str,
        after: u64,
    ) -> Result<EventsReply, watch::Receiver<u64>> {
        // An `after` beyond anything posted comes from before a restart
        // (or a clock set back): it acknowledges nothing.
        let after = if after > self.seq { 0 } else { after };
        let mail = self.mail.entry(station.to_string()).or_default();
        mail.letters.retain(|l| l.seq > after);
        if mail.letters.iter().all(|l| l.held) {
            let bell = mail.bell.get_or_insert_with(|| watch::channel(0).0);
            return Err(bell.subscribe());
        }
        let mut reply = EventsReply {
            protocol: PROTOCOL_VERSION,
            last: after,
            ..EventsReply::default()
        };
        for l in mail.letters.iter_mut().filter(|l| !l.held) {
            l.sent = true;
            reply.last = reply.last.max(l.seq);
        }
        sort_into(
            mail.letters
                .iter()
                .filter(|l| l.sent)
                .map(|l| l.message.clone()),
            &mut reply.grants,
            &mut reply.preemptions,
        );
        Ok(reply)
    }

    /// The claims are on disk: held letters may be streamed now.
    pub(crate) fn release_held(&mut self) {
        for mail in self.mail.values_mut() {
            let mut rung = None;
            for l in mail.letters.iter_mut().filter(|l| l.held) {
                l.held = false;
                rung = Some(l.seq);
            }
            if let (Some(seq), Some(bell)) = (rung, &mail.bell) {
                bell.send_replace(seq);
            }
        }
    }

    /// An events reply with nothing in it (the wait ended).
    pub(crate) fn no_events(after: u64) -> EventsReply {
        EventsReply {
            protocol: PROTOCOL_VERSION,
            last: after,
            ..EventsReply::default()
        }
    }

    /// The periodic pass; its mail goes out at once to stations waiting
    /// on their events, else with their next ads.
    pub(crate) fn tick(&mut self, now: Time) {
        let mut out = Outbox::default();
        self.pool.tick(now, &mut out);
        self.post(out);
    }

    /// When an event pass held back by the gap is due ([`Pool::pass_due`]).
    pub(crate) fn pass_due(&self) -> Option<Time> {
        self.pool.pass_due()
    }

    /// Runs a held-back event pass if due and posts its mail.
    pub(crate) fn run_due(&mut self, now: Time) {
        let mut out = Outbox::default();
        self.pool.run_due(now, &mut out);
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

    pub(crate) fn issued(&self) -> Issued {
        self.issued
    }

    pub(crate) fn passes(&self) -> u64 {
        self.pool.passes()
    }

    pub(crate) fn transitions(&self) -> (u64, u64) {
        self.pool.transitions()
    }

    /// The reservation role, if configured.
    pub(crate) fn partition(&self) -> Option<&crate::pool::partition::Partition> {
        self.pool.partition()
    }

    /// Runs `f` on the reservation role and a pass, posting its mail.
    pub(crate) fn with_partition<R>(
        &mut self,
        now: Time,
        f: impl FnOnce(&mut crate::pool::partition::Partition) -> R,
    ) -> Option<R> {
        let mut out = Outbox::default();
        let r = self.pool.with_partition_mut(now, &mut out, f);
        self.post(out);
        r
    }

    /// The reservation role's state when it changed since the last call.
    pub(crate) fn take_partition_state(
        &mut self,
    ) -> Option<crate::pool::partition::PartitionState> {
        self.pool.take_partition_state()
    }

    /// Drains `host` or ends its drain ([`Pool::set_drained`]), posting
    /// the call-backs of its idle claims; whether that changed anything.
    pub(crate) fn set_drained(&mut self, host: &str, on: bool) -> bool {
        let mut out = Outbox::default();
        let changed = self.pool.set_drained(host, on, &mut out);
        self.post(out);
        changed
    }

    /// The drained hosts.
    pub(crate) fn drained(&self) -> std::collections::BTreeSet<String> {
        self.pool.drained().clone()
    }

    /// Preempts every guest on `host` now ([`Pool::vacate_host`]); how
    /// many were asked to leave.
    pub(crate) fn vacate(&mut self, host: &str, reason: &str) -> usize {
        let mut out = Outbox::default();
        let n = self.pool.vacate_host(host, reason, &mut out);
        self.post(out);
        n
    }

    #[cfg(test)]
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }
}
