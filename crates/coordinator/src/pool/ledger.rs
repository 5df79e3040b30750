//! The pool's promises, indexed: pending claims and preemption
//! reservations with their counts per host, per home and per job class, so
//! that a pass over 10 000 stations asks each count in O(1) instead of
//! scanning every promise for every station.

use super::claims::PendingClaim;
use gleaner_core::alloc::StationId;
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

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

/// Claims granted and not yet seen running, oldest first, with the
/// claims of each host listed apart: an ad settles its host's claims
/// without a look at the others (a pass can issue a claim on each of
/// thousands of hosts).
#[derive(Default)]
pub(super) struct Claims {
    /// By issue number: iteration is oldest first.
    list: BTreeMap<u64, PendingClaim>,
    next: u64,
    /// Each host's claims' issue numbers, oldest first, by host id (ids
    /// are dense): every ad asks its host's, one look-up without hashing.
    on_host: Vec<Vec<u64>>,
    for_home: HashMap<StationId, u32>,
    /// (home, class key) → claims.
    for_class: HashMap<(StationId, String), u32>,
    /// (expiry, issue number): a pass finds the expired claims without
    /// looking at the others.
    by_expiry: BTreeSet<(Time, u64)>,
}

impl Claims {
    /// Adds a claim; returns its issue number.
    pub(super) fn push(&mut self, c: PendingClaim) -> u64 {
        let n = self.next;
        self.next += 1;
        let h = c.host as usize;
        if self.on_host.len() <= h {
            self.on_host.resize_with(h + 1, Vec::new);
        }
        self.on_host[h].push(n);
        self.by_expiry.insert((c.expires, n));
        bump(&mut self.for_home, c.home);
        if let Some(k) = &c.class {
            *self.for_class.entry((c.home, k.clone())).or_default() += 1;
        }
        self.list.insert(n, c);
        n
    }

    /// Claim `n`, to fill in its id (nothing the counts depend on).
    pub(super) fn get_mut(&mut self, n: u64) -> Option<&mut PendingClaim> {
        self.list.get_mut(&n)
    }

    /// Takes claim `n` out of the counts (it has left `list`).
    fn unindex(&mut self, n: u64, c: &PendingClaim) {
        self.by_expiry.remove(&(c.expires, n));
        if let Some(v) = self.on_host.get_mut(c.host as usize) {
            v.retain(|&m| m != n);
        }
        drop_one(&mut self.for_home, c.home);
        if let Some(k) = &c.class {
            let key = (c.home, k.clone());
            if let Some(v) = self.for_class.get_mut(&key) {
                *v -= 1;
                if *v == 0 {
                    self.for_class.remove(&key);
                }
            }
        }
    }

    /// Keeps the claims for which `keep` is true; returns the hosts of the
    /// others.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&PendingClaim) -> bool) -> Vec<StationId> {
        let gone: Vec<u64> = self
            .list
            .iter()
            .filter(|(_, c)| !keep(c))
            .map(|(&n, _)| n)
            .collect();
        self.remove(&gone)
    }

    /// Removes the claims that expire at or before `now`; returns their
    /// hosts.
    pub(super) fn expire(&mut self, now: Time) -> Vec<StationId> {
        let gone: Vec<u64> = self
            .by_expiry
            .iter()
            .take_while(|(t, _)| *t <= now)
            .map(|&(_, n)| n)
            .collect();
        self.remove(&gone)
    }

    /// Removes the claims numbered `gone`; returns their hosts.
    pub(super) fn remove(&mut self, gone: &[u64]) -> Vec<StationId> {
        let mut hosts = Vec::with_capacity(gone.len());
        for n in gone {
            if let Some(c) = self.list.remove(n) {
                self.unindex(*n, &c);
                hosts.push(c.host);
            }
        }
        hosts
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &PendingClaim> {
        self.list.values()
    }

    /// The claims pending on `host` with their numbers, oldest first.
    pub(super) fn of_host(&self, host: StationId) -> impl Iterator<Item = (u64, &PendingClaim)> {
        self.on_host
            .get(host as usize)
            .into_iter()
            .flatten()
            .filter_map(|n| self.list.get(n).map(|c| (*n, c)))
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// Claims pending on `host`.
    pub(super) fn on_host(&self, host: StationId) -> u32 {
        self.on_host
            .get(host as usize)
            .map_or(0, |v| v.len() as u32)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn claim(
        n: u32,
        host: StationId,
        home: StationId,
        class: Option<u8>,
        exp: u64,
    ) -> PendingClaim {
        PendingClaim {
            host,
            home,
            claim_id: format!("c{n}"),
            nonce: None,
            after_ad: 0,
            expires: Time::from_secs(exp),
            baseline: 0,
            class: class.map(|c| format!("k{c}")),
            licences: Vec::new(),
            known: None,
        }
    }

    proptest! {
        /// The ledger answers as a plain list of claims would: all claims
        /// and each host's oldest first, every count, and which claims
        /// have expired (claims need not expire in the order issued: a
        /// restarted coordinator restores them with their own expiries).
        #[test]
        fn answers_as_a_plain_list(ops in proptest::collection::vec(
            (0u8..4, 0u32..5, 0u32..4, proptest::option::of(0u8..2), 0u64..40), 0..120)) {
            let mut ledger = Claims::default();
            let mut list: Vec<PendingClaim> = Vec::new();
            for (i, (op, host, home, class, exp)) in ops.into_iter().enumerate() {
                match op {
                    0 | 1 => {
                        ledger.push(claim(i as u32, host, home, class, exp));
                        list.push(claim(i as u32, host, home, class, exp));
                    }
                    2 => {
                        let now = Time::from_secs(exp);
                        let mut gone_hosts = ledger.expire(now);
                        let mut want_hosts: Vec<StationId> =
                            list.iter().filter(|c| c.expires <= now).map(|c| c.host).collect();
                        list.retain(|c| c.expires > now);
                        gone_hosts.sort_unstable();
                        want_hosts.sort_unstable();
                        prop_assert_eq!(gone_hosts, want_hosts);
                    }
                    _ => {
                        // Drop the claims of `home` on `host`.
                        let gone_hosts = ledger.retain(|c| !(c.host == host && c.home == home));
                        let before = list.len();
                        list.retain(|c| !(c.host == host && c.home == home));
                        prop_assert_eq!(gone_hosts.len(), before - list.len());
                    }
                }
                let all: Vec<&str> = ledger.iter().map(|c| c.claim_id.as_str()).collect();
                let want: Vec<&str> = list.iter().map(|c| c.claim_id.as_str()).collect();
                prop_assert_eq!(all, want);
                for h in 0..5 {
                    let mine: Vec<&str> = ledger.of_host(h).map(|(_, c)| c.claim_id.as_str()).collect();
                    let want: Vec<&str> = list.iter().filter(|c| c.host == h).map(|c| c.claim_id.as_str()).collect();
                    prop_assert_eq!(ledger.on_host(h) as usize, want.len());
                    prop_assert_eq!(mine, want);
                    prop_assert_eq!(ledger.for_home(h) as usize, list.iter().filter(|c| c.home == h).count());
                    for k in 0..2u8 {
                        let key = format!("k{k}");
                        let n = list.iter().filter(|c| c.home == h && c.class.as_deref() == Some(key.as_str())).count();
                        prop_assert_eq!(ledger.for_class(h, &key) as usize, n);
                    }
                }
            }
        }
    }
}
