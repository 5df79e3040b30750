//! Hosts in placement order (σ descending, then name), sorted only as far
//! as a placement looks.
//!
//! A grant usually takes the first or second host of the order, and a
//! pass makes a grant for each placement: sorting every free host for
//! each was most of a 10 000-station pass (issue 15). The order here is
//! built by picking the best remaining host on demand; past
//! [`PICKS_BEFORE_SORT`] picks the rest is sorted once, so a job that fits
//! nowhere costs one sort, as before.

use std::cmp::Ordering;

/// Picks made one at a time before the rest is sorted.
const PICKS_BEFORE_SORT: usize = 16;

/// `(σ, host)` pairs, delivered best first.
pub(super) struct HostOrder<H> {
    /// The first hosts of the order, in order.
    done: Vec<(f64, H)>,
    /// The others, unordered until `sorted`.
    rest: Vec<(f64, H)>,
    sorted: bool,
}

impl<H: Copy> HostOrder<H> {
    pub(super) fn new(hosts: Vec<(f64, H)>) -> Self {
        HostOrder {
            done: Vec::new(),
            rest: hosts,
            sorted: false,
        }
    }

    /// The `i`-th host of the order: higher σ first, then by `names`
    /// ascending; `None` past the end.
    pub(super) fn get(&mut self, i: usize, names: impl Fn(H, H) -> Ordering) -> Option<H> {
        let cmp = |a: &(f64, H), b: &(f64, H)| b.0.total_cmp(&a.0).then_with(|| names(a.1, b.1));
        while self.done.len() <= i && !self.rest.is_empty() {
            if self.sorted {
                // Sorted best-last, so that taking the next is a pop.
                let next = self.rest.pop()?;
                self.done.push(next);
            } else if self.done.len() >= PICKS_BEFORE_SORT {
                self.rest.sort_by(|a, b| cmp(b, a));
                self.sorted = true;
            } else {
                let mut best = 0;
                for j in 1..self.rest.len() {
                    if cmp(&self.rest[j], &self.rest[best]) == Ordering::Less {
                        best = j;
                    }
                }
                self.done.push(self.rest.swap_remove(best));
            }
        }
        self.done.get(i).map(|&(_, h)| h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Walked to any depth, the order is the full sort's.
        #[test]
        fn the_order_is_the_sorted_order(
            sigmas in proptest::collection::vec(0u8..4, 0..60),
            depth in 0usize..70,
        ) {
            let hosts: Vec<(f64, u32)> = sigmas
                .iter()
                .enumerate()
                .map(|(i, s)| (f64::from(*s), (i as u32 * 7919) % 101))
                .collect();
            let mut want = hosts.clone();
            want.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            let mut order = HostOrder::new(hosts);
            let got: Vec<u32> = (0..depth.min(want.len()))
                .map(|i| order.get(i, |a, b| a.cmp(&b)).unwrap())
                .collect();
            let want_ids: Vec<u32> = want.iter().take(got.len()).map(|h| h.1).collect();
            prop_assert_eq!(&got, &want_ids);
            // Asking again, or for an earlier one, gives the same host.
            if let Some(&first) = got.first() {
                prop_assert_eq!(order.get(0, |a, b| a.cmp(&b)), Some(first));
            }
            prop_assert_eq!(order.get(want.len(), |a, b| a.cmp(&b)), None);
        }
    }
}
