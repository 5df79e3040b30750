//! The pool's promises, indexed: pending claims and preemption
//! reservations with their counts per host, per home and per job class, so
//! that a pass over 10 000 stations asks each count in O(1) instead of
//! scanning every promise for every station.

use super::claims::PendingClaim;
use gleaner_core::alloc::StationId;
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use std::collections::{HashMap, HashSet};

fn bump(m: &mut HashMap<StationId, u32>, k: StationId) {
    *m.entry(k).or_default() += 1;
}

fn drop_one(m: &mut HashMap<StationId, u32>, k: StationId) {
    if let Some(v) = m.get_mut(&k) {
        *v -= 1;
        if *v == 0 {
            m.remove(&k);
        }
    }
}

/// Claims granted and not yet seen running, oldest first.
#[derive(Default)]
pub(super) struct Claims {
    list: Vec<PendingClaim>,
    on_host: HashMap<StationId, u32>,
    for_home: HashMap<StationId, u32>,
    /// (home, class key) → claims.
    for_class: HashMap<(StationId, String), u32>,
}

impl Claims {
    pub(super) fn push(&mut self, c: PendingClaim) {
        bump(&mut self.on_host, c.host);
        bump(&mut self.for_home, c.home);
        if let Some(k) = &c.class {
            *self.for_class.entry((c.home, k.clone())).or_default() += 1;
        }
        self.list.push(c);
    }

    /// Keeps the claims for which `keep` is true; returns the hosts of the
    /// others.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&PendingClaim) -> bool) -> Vec<StationId> {
        let (on_host, for_home, for_class) =
            (&mut self.on_host, &mut self.for_home, &mut self.for_class);
        let mut hosts = Vec::new();
        self.list.retain(|c| {
            if keep(c) {
                return true;
            }
            hosts.push(c.host);
            drop_one(on_host, c.host);
            drop_one(for_home, c.home);
            if let Some(k) = &c.class {
                let key = (c.home, k.clone());
                if let Some(v) = for_class.get_mut(&key) {
                    *v -= 1;
                    if *v == 0 {
                        for_class.remove(&key);
                    }
                }
            }
            false
        });
        hosts
    }

    pub(super) fn iter(&self) -> std::slice::Iter<'_, PendingClaim> {
        self.list.iter()
    }

    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// Claims pending on `host`.
    pub(super) fn on_host(&self, host: StationId) -> u32 {
        self.on_host.get(&host).copied().unwrap_or(0)
    }

    /// Claims granted to `home`.
    pub(super) fn for_home(&self, home: StationId) -> u32 {
        self.for_home.get(&home).copied().unwrap_or(0)
    }

    /// Claims granted to `home` for its job class `key`.
    pub(super) fn for_class(&self, home: StationId, key: &str) -> u32 {
        self.for_class
            .get(&(home, key.to_string()))
            .copied()
            .unwrap_or(0)
    }
}

/// A node taken from a guest's home by a preemption and promised to `to`.
pub(super) struct Reservation {
    pub host: StationId,
    /// The guest vacated: its home's job (a job id alone could be another
    /// home's guest on the same host).
    pub from: StationId,
    pub job: JobId,
    /// The claim the node was held by, if its host held it for reuse: the
    /// node is free once neither the job nor the claim is held.
    pub claim: Option<String>,
    pub to: StationId,
    pub deadline: Time,
}

/// Nodes being vacated for the stations that preempted them.
#[derive(Default)]
pub(super) struct Reservations {
    list: Vec<Reservation>,
    on_host: HashMap<StationId, u32>,
    for_home: HashMap<StationId, u32>,
    /// (host, the guest's home, its job).
    vacating: HashSet<(StationId, StationId, JobId)>,
}

impl Reservations {
    pub(super) fn push(&mut self, r: Reservation) {
        bump(&mut self.on_host, r.host);
        bump(&mut self.for_home, r.to);
        self.vacating.insert((r.host, r.from, r.job));
        self.list.push(r);
    }

    /// Keeps the reservations for which `keep` is true; returns the others.
    pub(super) fn take_unless(
        &mut self,
        mut keep: impl FnMut(&Reservation) -> bool,
    ) -> Vec<Reservation> {
        let mut gone = Vec::new();
        let mut kept = Vec::with_capacity(self.list.len());
        for r in self.list.drain(..) {
            if keep(&r) {
                kept.push(r);
            } else {
                drop_one(&mut self.on_host, r.host);
                drop_one(&mut self.for_home, r.to);
                self.vacating.remove(&(r.host, r.from, r.job));
                gone.push(r);
            }
        }
        self.list = kept;
        gone
    }

    pub(super) fn has_on(&self, host: StationId) -> bool {
        self.on_host.contains_key(&host)
    }

    /// Nodes reserved for `home`.
    pub(super) fn for_home(&self, home: StationId) -> u32 {
        self.for_home.get(&home).copied().unwrap_or(0)
    }

    /// Whether `home`'s job `job` on `host` is being vacated for a
    /// reservation.
    pub(super) fn vacating(&self, host: StationId, home: StationId, job: JobId) -> bool {
        self.vacating.contains(&(host, home, job))
    }
}
