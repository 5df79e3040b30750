//! The free hosts in placement order — σ descending, then name — kept up
//! to date as hosts change, so that a placement reads them in order
//! instead of computing and sorting σ for every free host each time.
//!
//! A pass makes a grant for each placement and each grant looked at every
//! free host: with 10 000 stations that sorting was the largest part of a
//! pass (issue 15). `Pool::sync_free` — called after anything that changes
//! a host's ad or its claims, the inputs of σ — updates one entry here.

use gleaner_core::alloc::StationId;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

#[derive(Clone, Debug)]
struct Entry {
    sigma: f64,
    name: String,
    id: StationId,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .sigma
            .total_cmp(&self.sigma)
            .then_with(|| self.name.cmp(&other.name))
            .then_with(|| self.id.cmp(&other.id))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

/// Hosts with a free node, best first.
#[derive(Debug, Default)]
pub(super) struct FreeOrder {
    set: BTreeSet<Entry>,
    at: HashMap<StationId, Entry>,
}

impl FreeOrder {
    /// `id` is free with this σ (`Some`), or not free (`None`).
    pub(super) fn set(&mut self, id: StationId, free: Option<(f64, &str)>) {
        if let Some((sigma, name)) = free
            && let Some(old) = self.at.get(&id)
            && old.sigma.total_cmp(&sigma) == Ordering::Equal
            && old.name == name
        {
            return;
        }
        if let Some(old) = self.at.remove(&id) {
            self.set.remove(&old);
        }
        if let Some((sigma, name)) = free {
            let e = Entry {
                sigma,
                name: name.to_string(),
                id,
            };
            self.set.insert(e.clone());
            self.at.insert(id, e);
        }
    }

    /// `(σ, host)`, best first.
    pub(super) fn iter(&self) -> impl Iterator<Item = (f64, StationId)> + '_ {
        self.set.iter().map(|e| (e.sigma, e.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// After any sequence of changes the order is the full sort of
        /// the hosts that are free.
        #[test]
        fn the_order_is_always_the_sorted_free_hosts(
            ops in proptest::collection::vec((0u32..30, proptest::option::of(0u8..4)), 0..200),
        ) {
            let mut order = FreeOrder::default();
            let mut model: HashMap<StationId, f64> = HashMap::new();
            let name = |id: StationId| format!("h{:02}", (id * 7) % 30);
            for (id, s) in ops {
                let s = s.map(f64::from);
                order.set(id, s.map(|s| (s, name(id))).as_ref().map(|(s, n)| (*s, n.as_str())));
                match s {
                    Some(s) => model.insert(id, s),
                    None => model.remove(&id),
                };
            }
            let mut want: Vec<(f64, StationId)> = model.into_iter().map(|(h, s)| (s, h)).collect();
            want.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| name(a.1).cmp(&name(b.1))));
            let got: Vec<(f64, StationId)> = order.iter().collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(order.set.len(), order.at.len());
        }
    }
}
