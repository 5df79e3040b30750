//! Which machines serve an hour's reservations, and what replaces a
//! reserved machine whose owner comes back (Mutka 1988 §6.2,
//! seeds/000_14c1149197e96532.txt L883–893).
//!
//! When a reserved machine is withdrawn by its owner, an unreserved AV
//! station replaces it; if none is free the hour counts as an *error*
//! (L883). Two selection rules: **Random** (every AV station equally
//! likely) and **Longest-Free** (the station AV the longest; AV lengths are
//! long-tailed, so a station long AV tends to stay AV, L893). The same rule
//! picks the machines when a slot begins.

use super::tables::ReservationId;
use crate::rng::{Rng, RngCore};
use crate::time::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The selection rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplacementRule {
    /// The station that has been AV the longest (L885); ties by key.
    #[default]
    LongestFree,
    /// Uniformly among the AV stations (L885).
    Random,
}

/// Picks one of `candidates` (a station key and the instant it became AV).
pub fn choose<K: Clone + Ord>(
    rule: ReplacementRule,
    candidates: &[(K, Time)],
    rng: &mut dyn RngCore,
) -> Option<K> {
    match rule {
        ReplacementRule::LongestFree => candidates
            .iter()
            .min_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)))
            .map(|c| c.0.clone()),
        ReplacementRule::Random => {
            if candidates.is_empty() {
                None
            } else {
                let i = rng.random_range(0..candidates.len());
                Some(candidates[i].0.clone())
            }
        }
    }
}

/// What one reservation needs in a slot: a count, or specific stations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Demand<K> {
    pub reservation: ReservationId,
    pub count: u32,
    /// Specific stations (L1068); when one is not AV at the start, or its
    /// owner returns, another machine substitutes for it.
    pub specific: Vec<K>,
}

/// What a withdrawal led to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replaced<K> {
    pub reservation: ReservationId,
    /// The replacement, or `None`: an error (no AV station was free).
    pub by: Option<K>,
}

/// The machines serving one slot's reservations, kept up to date as owners
/// come and go. Pure: the caller passes the current AV stations.
/// Serialisable, so a coordinator keeps the hour's binding across restarts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding<K: Ord> {
    rule: ReplacementRule,
    /// Station → reservation it serves.
    holders: BTreeMap<K, ReservationId>,
    /// Machines each reservation still lacks.
    short: BTreeMap<ReservationId, u32>,
    /// Replacements made (owner withdrawals of reserved machines).
    pub preemptions: u64,
    /// Times a machine was missing: at the start, or on a withdrawal with
    /// nothing to replace it.
    pub errors: u64,
}

impl<K: Clone + Ord> Binding<K> {
    /// Binds `demands` at the start of a slot. `av` are the AV stations
    /// with the instant each became AV. Specific stations first, then
    /// counts by the rule.
    pub fn bind(
        rule: ReplacementRule,
        demands: &[Demand<K>],
        av: &[(K, Time)],
        rng: &mut dyn RngCore,
    ) -> Binding<K> {
        let mut b = Binding {
            rule,
            holders: BTreeMap::new(),
            short: BTreeMap::new(),
            preemptions: 0,
            errors: 0,
        };
        let avail: BTreeMap<&K, Time> = av.iter().map(|(k, t)| (k, *t)).collect();
        let mut need: Vec<(ReservationId, u32)> = Vec::new();
        for d in demands {
            let mut n = d.count;
            for k in &d.specific {
                if n == 0 {
                    break;
                }
                if avail.contains_key(k) && !b.holders.contains_key(k) {
                    b.holders.insert(k.clone(), d.reservation);
                    n -= 1;
                }
            }
            need.push((d.reservation, n));
        }
        // The free stations, in `av`'s order, kept as picks take them
        // (not rebuilt per pick: a slot may bind many machines).
        let mut free = b.free_candidates(av);
        for (id, n) in need {
            for _ in 0..n {
                match choose(rule, &free, rng) {
                    Some(k) => {
                        free.retain(|(x, _)| *x != k);
                        b.holders.insert(k, id);
                    }
                    None => {
                        *b.short.entry(id).or_insert(0) += 1;
                        b.errors += 1;
                    }
                }
            }
        }
        b
    }

    fn free_candidates(&self, av: &[(K, Time)]) -> Vec<(K, Time)> {
        av.iter()
            .filter(|(k, _)| !self.holders.contains_key(k))
            .cloned()
            .collect()
    }

    /// The reservation `station` serves, if any.
    pub fn holder<Q>(&self, station: &Q) -> Option<ReservationId>
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.holders.get(station).copied()
    }
    /// Stations serving reservation `id`.
    pub fn stations_of(&self, id: ReservationId) -> Vec<K> {
        self.holders
            .iter()
            .filter(|(_, r)| **r == id)
            .map(|(k, _)| k.clone())
            .collect()
    }
    /// Machines still lacking, per reservation.
    pub fn shortfall(&self) -> &BTreeMap<ReservationId, u32> {
        &self.short
    }

    /// `station`'s owner came back. If it served a reservation, the rule
    /// picks a replacement among `av` (the AV stations now, which must not
    /// include `station`); with none free this is an error.
    pub fn withdrawn(
        &mut self,
        station: &K,
        av: &[(K, Time)],
        rng: &mut dyn RngCore,
    ) -> Option<Replaced<K>> {
        let id = self.holders.remove(station)?;
        self.preemptions += 1;
        let free: Vec<(K, Time)> = self
            .free_candidates(av)
            .into_iter()
            .filter(|(k, _)| k != station)
            .collect();
        let by = choose(self.rule, &free, rng);
        match &by {
            Some(k) => {
                self.holders.insert(k.clone(), id);
            }
            None => {
                *self.short.entry(id).or_insert(0) += 1;
                self.errors += 1;
            }
        }
        Some(Replaced {
            reservation: id,
            by,
        })
    }

    /// `station` became AV: it fills a reservation that lacks a machine,
    /// if any (lowest id first).
    pub fn available(&mut self, station: &K) -> Option<ReservationId> {
        if self.holders.contains_key(station) {
            return None;
        }
        let (&id, n) = self.short.iter_mut().find(|(_, n)| **n > 0)?;
        *n -= 1;
        self.holders.insert(station.clone(), id);
        self.short.retain(|_, n| *n > 0);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded;

    #[test]
    fn longest_free_takes_the_oldest_av() {
        let av = vec![("a", Time(30)), ("b", Time(10)), ("c", Time(20))];
        let mut rng = seeded(1);
        assert_eq!(
            choose(ReplacementRule::LongestFree, &av, &mut rng),
            Some("b")
        );
        let d = vec![Demand {
            reservation: 7,
            count: 2,
            specific: vec![],
        }];
        let mut b = Binding::bind(ReplacementRule::LongestFree, &d, &av, &mut rng);
        assert_eq!(b.stations_of(7), vec!["b", "c"]);
        // b's owner returns: a replaces it; then c's: nothing left, error.
        let now_av = vec![("a", Time(30)), ("c", Time(20))];
        let r = b.withdrawn(&"b", &now_av, &mut rng);
        assert_eq!(
            r,
            Some(Replaced {
                reservation: 7,
                by: Some("a")
            })
        );
        let r = b.withdrawn(&"c", &[("a", Time(30))], &mut rng);
        assert_eq!(
            r,
            Some(Replaced {
                reservation: 7,
                by: None
            })
        );
        assert_eq!((b.preemptions, b.errors), (2, 1));
        assert_eq!(b.available(&"c"), Some(7));
        assert!(b.shortfall().is_empty());
        assert_eq!(
            b.withdrawn(&"z", &[], &mut rng),
            None,
            "unreserved: nothing"
        );
    }

    #[test]
    fn random_is_uniform_enough_and_seeded() {
        let av: Vec<(u32, Time)> = (0..4).map(|i| (i, Time(u64::from(i)))).collect();
        let mut counts = [0u32; 4];
        let mut rng = seeded(9);
        for _ in 0..4000 {
            let k = choose(ReplacementRule::Random, &av, &mut rng).unwrap_or(0);
            counts[k as usize] += 1;
        }
        assert!(counts.iter().all(|c| (850..1150).contains(c)), "{counts:?}");
    }
}
