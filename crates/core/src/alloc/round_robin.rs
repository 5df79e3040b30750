//! The Round-Robin allocator (Mutka 1988 L663, L688).
//!
//! The coordinator keeps a cyclic order of workstations and a persistent
//! pointer into it. When nodes are free it asks the next station whether it
//! wants one and continues in order "until all processors are allocated or
//! all workstations have been asked"; a station that wants nothing when its
//! turn comes waits until every other station has had one chance.
//! Non-preemptive, like Random.

use super::{Allocator, AllocatorKind, Decision, PerPass, PoolView, StationId, partial_shuffle};
use rand::RngCore;

#[derive(Debug, Clone)]
pub struct RoundRobin {
    per_pass: PerPass,
    /// The station to ask first in the next pass (the persistent pointer).
    /// Stations are ordered by id; a pointer to a departed station moves to
    /// the next id after it.
    cursor: StationId,
}

impl RoundRobin {
    pub fn new(per_pass: PerPass) -> Self {
        RoundRobin {
            per_pass,
            cursor: 0,
        }
    }

    /// The station that will be asked first next time.
    pub fn cursor(&self) -> StationId {
        self.cursor
    }

    /// Restores the pointer (a coordinator restart).
    pub fn set_cursor(&mut self, cursor: StationId) {
        self.cursor = cursor;
    }
}

impl Default for RoundRobin {
    fn default() -> Self {
        RoundRobin::new(PerPass::One)
    }
}

impl Allocator for RoundRobin {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::RoundRobin
    }

    fn on_interval(&mut self, _view: &PoolView<'_>) {}

    fn allocate(&mut self, view: &PoolView<'_>, rng: &mut dyn RngCore) -> Vec<Decision> {
        let mut out = Vec::new();
        if view.free_nodes.is_empty() || view.stations.is_empty() {
            return out;
        }
        let mut order: Vec<(StationId, u32)> = view
            .stations
            .iter()
            .map(|d| (d.station, d.waiting))
            .collect();
        order.sort_unstable_by_key(|&(s, _)| s);
        let first = order.partition_point(|&(s, _)| s < self.cursor) % order.len();
        let n = order.len();
        let mut free = view.free_nodes.to_vec();
        let k = free.len();
        partial_shuffle(&mut free, k, rng);
        let mut free = free.into_iter();
        let mut granted = vec![0u32; n];
        let mut next_cursor = self.cursor;
        'passes: loop {
            let mut progressed = false;
            for step in 0..n {
                let idx = (first + step) % n;
                let (station, waiting) = order[idx];
                let cap = match self.per_pass {
                    PerPass::One => waiting.min(1),
                    PerPass::UntilSatisfied => waiting,
                };
                if granted[idx] < cap {
                    let Some(node) = free.next() else {
                        break 'passes;
                    };
                    out.push(Decision::Grant { node, to: station });
                    granted[idx] += 1;
                    progressed = true;
                }
                // This station has now been asked; the next pass starts after it.
                next_cursor = order[(idx + 1) % n].0;
                if free.as_slice().is_empty() {
                    break 'passes;
                }
            }
            if !progressed || self.per_pass == PerPass::One {
                break;
            }
        }
        self.cursor = next_cursor;
        out
    }
}
