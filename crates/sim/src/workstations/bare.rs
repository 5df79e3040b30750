//! The thesis's coordinator: the allocator of `gleaner-core` called directly
//! on the model's pool view, its decisions applied at once (Mutka 1988
//! §4.3, T:L629–645).

use super::Coordinator;
use super::model::Model;
use gleaner_core::alloc::{Allocator, Decision, PoolView};
use gleaner_core::rng::PolicyRng;

/// Calls an [`Allocator`] at every tick and capacity event.
pub(super) struct Bare {
    alloc: Box<dyn Allocator>,
    rng: PolicyRng,
    passes: u64,
}

impl Bare {
    pub(super) fn new(alloc: Box<dyn Allocator>, rng: PolicyRng) -> Self {
        Bare {
            alloc,
            rng,
            passes: 0,
        }
    }

    /// One allocation pass; decisions are validated and applied in order.
    fn allocate(&mut self, m: &mut Model) {
        if m.waiting_total == 0 {
            return;
        }
        self.passes += 1;
        let view = PoolView {
            stations: &m.demand,
            free_nodes: &m.free.items,
            held: &m.held,
        };
        let decisions = self.alloc.allocate(&view, &mut self.rng);
        let mut work = Vec::new();
        for d in decisions {
            match d {
                Decision::Grant { node, to } => {
                    if !m.is_free(node) || to as usize >= m.st.len() {
                        continue;
                    }
                    if let Some(j) = m.dequeue(to) {
                        m.place_remote(j, node);
                    }
                }
                Decision::Preempt { node, from, to } => {
                    let Some(g) = m.st.get(node as usize).and_then(|h| h.guest) else {
                        continue;
                    };
                    if m.jobs[g as usize].owner != from
                        || m.st.get(to as usize).is_none_or(|t| t.queue.is_empty())
                    {
                        continue;
                    }
                    m.vacate_guest(node, &mut work);
                    m.count_preemption();
                    if let Some(j) = m.dequeue(to) {
                        m.place_remote(j, node);
                    }
                }
            }
        }
        m.settle(work);
    }
}

impl Coordinator for Bare {
    fn tick(&mut self, m: &mut Model) {
        let view = PoolView {
            stations: &m.demand,
            free_nodes: &m.free.items,
            held: &m.held,
        };
        self.alloc.on_interval(&view);
        self.allocate(m);
    }

    fn capacity_event(&mut self, m: &mut Model) {
        self.allocate(m);
    }

    fn after_event(&mut self, _m: &mut Model) {}

    fn passes(&self) -> u64 {
        self.passes
    }
}
