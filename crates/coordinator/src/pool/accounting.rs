//! The pool's accounting of each submitter's use, as HTCondor's
//! negotiator keeps it for `condor_userprio`: every submitter's decayed
//! count of the nodes its jobs hold anywhere in the pool.
//!
//! Up-Down shares the pool between *stations* (Mutka 1988, Table 4.3) and
//! each home shares its nodes between its *users* (`gleaner_core::
//! fair_share`); neither decision reads this table. It answers the
//! administrator's question that neither answers: who used the pool
//! lately, across every home. A submitter is named `NAME@HOME`, as
//! HTCondor names one `user@UID_DOMAIN`: the same Unix name at two homes
//! is two people. Usage decays with HTCondor's default half-life
//! (`PRIORITY_HALFLIFE`, one day) by the same rule the homes use
//! (`FairShare::observe`), brought up to date at every periodic pass from
//! the hosts' ads, and it is kept in `fairness.json` across restarts.

use gleaner_core::fair_share::{FairShare, SavedUsage, ShareConfig};
use gleaner_core::time::{Dur, Time};
use gleaner_proto::wire::{StationAd, SubmitterPrio};
use std::collections::BTreeMap;

/// HTCondor's default `PRIORITY_HALFLIFE`.
const HALF_LIFE: Dur = Dur::from_secs(86_400);

pub(super) struct Accounting {
    share: FairShare,
}

impl Accounting {
    /// A table with what `restored` kept from before a restart.
    pub(super) fn new(restored: Option<SavedUsage>) -> Self {
        let mut share = FairShare::new(ShareConfig {
            half_life: HALF_LIFE,
            ..ShareConfig::default()
        });
        if let Some(saved) = restored {
            share.restore(&saved);
        }
        Accounting { share }
    }

    /// Brings every submitter's usage up to `now`, from what the hosts'
    /// `ads` show running (a guest counts one node, suspended or not, as
    /// HTCondor counts a claimed slot).
    pub(super) fn observe<'a>(&mut self, now: Time, ads: impl Iterator<Item = &'a StationAd>) {
        let held = holdings(ads);
        self.share
            .observe(now, held.iter().map(|(name, n)| (name.as_str(), *n)));
    }

    /// The rows of `condor_userprio`: every submitter holding a node or
    /// with usage left, by name.
    pub(super) fn rows<'a>(&self, ads: impl Iterator<Item = &'a StationAd>) -> Vec<SubmitterPrio> {
        let mut held = holdings(ads);
        for name in self
            .share
            .saved()
            .map(|s| s.usage)
            .unwrap_or_default()
            .into_keys()
        {
            held.entry(name).or_insert(0);
        }
        held.into_iter()
            .map(|(name, nodes_held)| {
                let (submitter, home) = match name.rsplit_once('@') {
                    Some((s, h)) => (s.to_string(), h.to_string()),
                    None => (name.clone(), String::new()),
                };
                SubmitterPrio {
                    usage: self.share.usage(&name),
                    name,
                    submitter,
                    home,
                    nodes_held,
                }
            })
            .collect()
    }

    /// What `fairness.json` keeps.
    pub(super) fn saved(&self) -> Option<SavedUsage> {
        self.share.saved()
    }
}

/// Nodes held now by each `SUBMITTER@HOME` (counted by borrowed names
/// first: one name is made per submitter, not per guest).
fn holdings<'a>(ads: impl Iterator<Item = &'a StationAd>) -> BTreeMap<String, u32> {
    let mut by: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for ad in ads {
        for g in &ad.running_guests {
            let submitter = g.class.as_ref().map_or(g.owner.as_str(), |c| c.submitter());
            let n = by.entry((submitter, g.home.as_str())).or_insert(0);
            *n = n.saturating_add(1);
        }
    }
    by.into_iter()
        .map(|((s, h), n)| (format!("{s}@{h}"), n))
        .collect()
}
