//! What the pool wants done, as data.
//!
//! Every [`Pool`](super::Pool) call that can grant, preempt or forget a
//! station writes its effects into an [`Outbox`] that the caller delivers
//! (the HyperQueue reactor/"comm" split): the daemon keeps messages for each
//! station until that station's next advertisement reply
//! ([`crate::mailbox`]), the simulator acts on them at once. The pool itself
//! sends nothing and writes nothing.

use gleaner_proto::wire::{Grant, Preemption};

/// One message to a station.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// `to` may place a job on `grant.host` with the claim.
    Grant { to: String, grant: Grant },
    /// `to` (the home of the guest) is asked to give `preemption.host` back.
    Preempt { to: String, preemption: Preemption },
}

impl Message {
    /// The station the message is for.
    pub fn to(&self) -> &str {
        match self {
            Message::Grant { to, .. } | Message::Preempt { to, .. } => to,
        }
    }
}

/// The effects of one or more pool calls, in the order they arose.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outbox {
    pub messages: Vec<Message>,
    /// Stations the pool forgot (silent too long): undelivered messages to
    /// them are void.
    pub forgotten: Vec<String>,
    /// A claim holding licences was issued: persist the claims
    /// ([`Pool::saved_claims`](super::Pool::saved_claims)) before delivering
    /// its grant, so a restarted coordinator still counts the licence.
    pub persist_claims: bool,
}

impl Outbox {
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.forgotten.is_empty() && !self.persist_claims
    }

    /// The grants in the box, with their grantee.
    pub fn grants(&self) -> impl Iterator<Item = (&str, &Grant)> {
        self.messages.iter().filter_map(|m| match m {
            Message::Grant { to, grant } => Some((to.as_str(), grant)),
            Message::Preempt { .. } => None,
        })
    }

    /// The preemptions in the box, with the station asked.
    pub fn preemptions(&self) -> impl Iterator<Item = (&str, &Preemption)> {
        self.messages.iter().filter_map(|m| match m {
            Message::Preempt { to, preemption } => Some((to.as_str(), preemption)),
            Message::Grant { .. } => None,
        })
    }
}
