//! The Random allocator (Mutka 1988 L659–661; Mutka & Livny 1987 S:L182).
//!
//! "Whenever there is contention for cycles, the Random algorithm randomly
//! picks one of the contenders to receive the resource. Whenever there is no
//! contention, a requester is given the resource." It keeps no history and
//! never preempts: a holder keeps its node until the job ends or the node's
//! owner returns.

use super::{
    Allocator, AllocatorKind, Decision, PerPass, PoolView, partial_shuffle, uniform_below,
};
use rand::RngCore;

#[derive(Debug, Clone)]
pub struct RandomAlloc {
    per_pass: PerPass,
}

impl RandomAlloc {
    /// `per_pass` bounds how many nodes one station may win in one pass; the
    /// default ([`PerPass::UntilSatisfied`]) lets an uncontended requester
    /// take every free node it has jobs for.
    pub fn new(per_pass: PerPass) -> Self {
        RandomAlloc { per_pass }
    }
}

impl Default for RandomAlloc {
    fn default() -> Self {
        RandomAlloc::new(PerPass::UntilSatisfied)
    }
}

impl Allocator for RandomAlloc {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::Random
    }

    fn on_interval(&mut self, _view: &PoolView<'_>) {}

    fn allocate(&mut self, view: &PoolView<'_>, rng: &mut dyn RngCore) -> Vec<Decision> {
        // Contenders are stations (not jobs): each is a requester as long as
        // it has waiting jobs not yet served in this pass.
        let mut contenders: Vec<(super::StationId, u32)> = view
            .stations
            .iter()
            .filter(|d| d.waiting > 0)
            .map(|d| {
                let cap = match self.per_pass {
                    PerPass::One => 1,
                    PerPass::UntilSatisfied => d.waiting,
                };
                (d.station, cap)
            })
            .collect();
        let mut free = view.free_nodes.to_vec();
        let k = free.len();
        partial_shuffle(&mut free, k, rng);
        let mut out = Vec::new();
        for node in free {
            if contenders.is_empty() {
                break;
            }
            let k = uniform_below(rng, contenders.len() as u64) as usize;
            let (to, left) = &mut contenders[k];
            out.push(Decision::Grant { node, to: *to });
            *left -= 1;
            if *left == 0 {
                contenders.swap_remove(k);
            }
        }
        out
    }
}
