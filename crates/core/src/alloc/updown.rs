//! The Up-Down allocator (Mutka 1988 §4.3.1, seeds/000_14c1149197e96532.txt
//! L641–655, Tables 4.2, 4.3 and 4.5 at L649–651, L667–679, L717–722;
//! Mutka & Livny 1987, seeds/004_8811df6e42c9e111.txt L172–213).
//!
//! Each home station `i` has a schedule index `SI[i]`, initially 0; a smaller
//! index means a higher priority. While a station holds remote nodes its
//! index goes *up* by `f` per node per interval; while it waits without any
//! it goes *down* by `g`; when it wants nothing the index decays back towards
//! 0 by `h` (from above) or `l` (from below) and then stays at 0 (L655).
//! Free nodes go to the waiting stations with the smallest indices; a
//! waiting station with no node preempts the holder with the largest index
//! when its own index is strictly smaller (Table 4.2).
//!
//! Ambiguities of the source are resolved as in `spec/mutka-livny-1987.md`
//! §2.6 (A1–A9); each non-default reading is a field of [`UpDownConfig`].

use super::{
    Allocator, AllocatorKind, Decision, NodeId, PerPass, PoolView, StationId, partial_shuffle,
    uniform_below,
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// What an index function may look at when computing one station's step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexContext {
    /// The station's own index at the start of the interval.
    pub si: f64,
    /// The smallest index over all known stations at the start of the
    /// interval (resolution A7: over every station, wanting or not).
    pub min_si: f64,
    /// Nodes the station holds this interval (NumProcessors of Table 4.3).
    pub nodes: u32,
}

/// The four schedule-index functions of Mutka 1988 Table 4.3 (L647).
/// Each returns a non-negative step size.
pub trait IndexFunctions: Send + Sync + std::fmt::Debug {
    /// Charge per node held, per interval, while the station wants nodes.
    fn f(&self, c: &IndexContext) -> f64;
    /// Credit per interval while the station wants a node and holds none.
    fn g(&self, c: &IndexContext) -> f64;
    /// Decay of a positive index while the station wants nothing.
    fn h(&self, c: &IndexContext) -> f64;
    /// Rise of a negative index while the station wants nothing.
    fn l(&self, c: &IndexContext) -> f64;
}

/// How the distance used by `g` is formed (OCR ambiguity of Table 4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GOperator {
    /// `SI[i] − min{SI}`: the only reading that makes sense when min ≤ 0
    /// (spec mutka-thesis.md §2.2; supported by the rationale at L709).
    #[default]
    Difference,
    /// `SI[i] · min{SI}` as the OCR prints it (`\cdot`), kept for comparison.
    Product,
}

/// Table 4.5 of Mutka 1988 (L717–722), with every constant configurable:
/// `f = h = l = 1`; `g = 3` if `SI[i] − min SI ≥ 6`, `2` if `≥ 3`, else `1`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Table45 {
    pub f: f64,
    pub h: f64,
    pub l: f64,
    /// `g` when the distance to the minimum is below `g_mid_threshold`.
    pub g_low: f64,
    /// Distance at which `g` becomes `g_mid` (3 in the thesis).
    pub g_mid_threshold: f64,
    pub g_mid: f64,
    /// Distance at which `g` becomes `g_high` (6 in the thesis).
    pub g_high_threshold: f64,
    pub g_high: f64,
    pub g_operator: GOperator,
}

impl Default for Table45 {
    fn default() -> Self {
        Table45 {
            f: 1.0,
            h: 1.0,
            l: 1.0,
            g_low: 1.0,
            g_mid_threshold: 3.0,
            g_mid: 2.0,
            g_high_threshold: 6.0,
            g_high: 3.0,
            g_operator: GOperator::Difference,
        }
    }
}

impl IndexFunctions for Table45 {
    fn f(&self, _: &IndexContext) -> f64 {
        self.f
    }
    fn g(&self, c: &IndexContext) -> f64 {
        let d = match self.g_operator {
            GOperator::Difference => c.si - c.min_si,
            GOperator::Product => c.si * c.min_si,
        };
        if d >= self.g_high_threshold {
            self.g_high
        } else if d >= self.g_mid_threshold {
            self.g_mid
        } else {
            self.g_low
        }
    }
    fn h(&self, _: &IndexContext) -> f64 {
        self.h
    }
    fn l(&self, _: &IndexContext) -> f64 {
        self.l
    }
}

/// Resolution A1: what happens to the holder bag S1 after a preemption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum S1Update {
    /// Remove one occurrence of the victim `t` from S1 (it lost a node).
    #[default]
    RemoveTarget,
    /// Keep `t` in S1 as printed (`S1 ← S1 + t`, L651): the same station stays
    /// the victim, and the pass stops once it has no node left to give.
    AsPrinted,
}

/// Resolution A4: when Table 4.3 is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiUpdate {
    /// Once per scheduling interval, in [`Allocator::on_interval`].
    #[default]
    PerInterval,
    /// Before every allocation pass, including event-triggered ones
    /// (charges f and g more than once per interval).
    EveryPass,
}

/// Resolution A5: what "wants a processor-bank node" means for Table 4.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WantsRule {
    /// Has background jobs queued or running remotely.
    #[default]
    QueuedOrRemote,
    /// Has background jobs queued and running nowhere.
    QueuedOnly,
}

/// Every switch of the Up-Down allocator. Defaults are the resolutions
/// A1–A9 of spec/mutka-livny-1987.md §2.6.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpDownConfig {
    pub functions: Table45,
    /// A3: one node per station per pass (default) or repeat while nodes remain.
    pub per_pass: PerPass,
    /// A2: let a waiting station that already holds nodes preempt too
    /// (default false: only stations holding none, per S:L172).
    pub preempt_with_nodes: bool,
    /// A1.
    pub s1_update: S1Update,
    /// A4.
    pub si_update: SiUpdate,
    /// A5.
    pub wants: WantsRule,
    /// A8: never let `h`/`l` carry an index past 0 (the text's "until the
    /// entry reaches zero", L655).
    pub clamp_decay: bool,
}

impl Default for UpDownConfig {
    fn default() -> Self {
        UpDownConfig {
            functions: Table45::default(),
            per_pass: PerPass::One,
            preempt_with_nodes: false,
            s1_update: S1Update::RemoveTarget,
            si_update: SiUpdate::PerInterval,
            wants: WantsRule::QueuedOrRemote,
            clamp_decay: true,
        }
    }
}

/// The Up-Down allocator and its schedule-index table.
#[derive(Debug)]
pub struct UpDown {
    config: UpDownConfig,
    functions: Box<dyn IndexFunctions>,
    /// SI indexed by station id; ids never seen read as 0 (the initial value).
    si: Vec<f64>,
    seen: Vec<bool>,
    scratch: HolderCounts,
}

/// Per-station node counts for one pass, reset in O(1) by bumping a
/// generation number instead of clearing the table.
#[derive(Debug, Default)]
struct HolderCounts {
    generation: u32,
    stamp: Vec<u32>,
    count: Vec<u32>,
}

impl HolderCounts {
    fn next_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped: stale stamps could collide, so clear once.
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
    }
    fn add(&mut self, station: StationId) {
        let i = station as usize;
        if self.stamp.len() <= i {
            self.stamp.resize(i + 1, 0);
            self.count.resize(i + 1, 0);
        }
        if self.stamp[i] != self.generation {
            self.stamp[i] = self.generation;
            self.count[i] = 0;
        }
        self.count[i] += 1;
    }
    fn count(&self, station: StationId) -> u32 {
        let i = station as usize;
        match self.stamp.get(i) {
            Some(&g) if g == self.generation => self.count[i],
            _ => 0,
        }
    }
}

impl UpDown {
    pub fn new(config: UpDownConfig) -> Self {
        let functions = Box::new(config.functions.clone());
        UpDown {
            config,
            functions,
            si: Vec::new(),
            seen: Vec::new(),
            scratch: HolderCounts::default(),
        }
    }

    /// Up-Down with custom f, g, h, l.
    pub fn with_functions(config: UpDownConfig, functions: Box<dyn IndexFunctions>) -> Self {
        UpDown {
            config,
            functions,
            si: Vec::new(),
            seen: Vec::new(),
            scratch: HolderCounts::default(),
        }
    }

    pub fn config(&self) -> &UpDownConfig {
        &self.config
    }

    /// The schedule index of `station` (0 if never seen).
    pub fn index(&self, station: StationId) -> f64 {
        self.si.get(station as usize).copied().unwrap_or(0.0)
    }

    /// Sets one index, e.g. when a coordinator restores its table from disk.
    pub fn set_index(&mut self, station: StationId, value: f64) {
        self.ensure(station);
        self.si[station as usize] = value;
        self.seen[station as usize] = true;
    }

    /// Every station seen so far with its index, in id order.
    pub fn table(&self) -> Vec<(StationId, f64)> {
        self.si
            .iter()
            .zip(&self.seen)
            .enumerate()
            .filter(|(_, (_, seen))| **seen)
            .map(|(i, (v, _))| (i as StationId, *v))
            .collect()
    }

    fn ensure(&mut self, station: StationId) {
        let n = station as usize + 1;
        if self.si.len() < n {
            self.si.resize(n, 0.0);
            self.seen.resize(n, false);
        }
    }

    fn wants(&self, d: &super::StationDemand) -> bool {
        match self.config.wants {
            WantsRule::QueuedOrRemote => d.wants(),
            WantsRule::QueuedOnly => d.waiting > 0,
        }
    }

    /// Table 4.3 (Mutka 1988 L667–679), applied to every station in the view
    /// synchronously: each step is computed from the table as it stood at the
    /// start of the interval, so station order cannot change the outcome.
    pub fn update_indices(&mut self, view: &PoolView<'_>) {
        if view.stations.is_empty() {
            return;
        }
        let max_id = view.stations.iter().map(|d| d.station).max().unwrap_or(0);
        self.ensure(max_id);
        let mut nodes = vec![0u32; max_id as usize + 1];
        for &(_, holder) in view.held {
            if let Some(n) = nodes.get_mut(holder as usize) {
                *n += 1;
            }
        }
        let min_si = view
            .stations
            .iter()
            .map(|d| self.si[d.station as usize])
            .fold(f64::INFINITY, f64::min);
        let mut next: Vec<(usize, f64)> = Vec::with_capacity(view.stations.len());
        for d in view.stations {
            let i = d.station as usize;
            let si = self.si[i];
            let ctx = IndexContext {
                si,
                min_si,
                nodes: nodes[i],
            };
            let v = if self.wants(d) {
                if ctx.nodes > 0 {
                    // "increased proportionally to the number of processors
                    // granted for that interval" (L647).
                    si + ctx.nodes as f64 * self.functions.f(&ctx)
                } else {
                    si - self.functions.g(&ctx)
                }
            } else if si > 0.0 {
                let v = si - self.functions.h(&ctx);
                if self.config.clamp_decay {
                    v.max(0.0)
                } else {
                    v
                }
            } else if si < 0.0 {
                let v = si + self.functions.l(&ctx);
                if self.config.clamp_decay {
                    v.min(0.0)
                } else {
                    v
                }
            } else {
                // "Once a station's SI entry reaches zero, it will stay there
                // until it wants a processor" (L655).
                si
            };
            next.push((i, v));
        }
        for (i, v) in next {
            self.si[i] = v;
            self.seen[i] = true;
        }
    }
}

/// Orders f64 indices totally (NaN never arises from the default functions;
/// treat it as larger than everything so a broken custom function cannot
/// win priority).
fn cmp_si(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// A station of S2: smallest index first, then its random tie-break key.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    si: f64,
    key: u64,
    station: StationId,
    waiting: u32,
}
impl PartialEq for Candidate {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Candidate {
    fn cmp(&self, o: &Self) -> Ordering {
        cmp_si(self.si, o.si)
            .then(self.key.cmp(&o.key))
            .then(self.station.cmp(&o.station))
    }
}

/// A holder in the max-heap of Phase 2: largest index first, random tie-break.
struct Holder {
    si: f64,
    key: u64,
    station: StationId,
}
impl PartialEq for Holder {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Holder {}
impl PartialOrd for Holder {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Holder {
    fn cmp(&self, o: &Self) -> Ordering {
        cmp_si(self.si, o.si)
            .then(self.key.cmp(&o.key))
            .then(self.station.cmp(&o.station))
    }
}

impl Allocator for UpDown {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::UpDown
    }

    fn on_interval(&mut self, view: &PoolView<'_>) {
        if self.config.si_update == SiUpdate::PerInterval {
            self.update_indices(view);
        }
    }

    /// Table 4.2 (Mutka 1988 L649–651).
    fn allocate(&mut self, view: &PoolView<'_>, rng: &mut dyn RngCore) -> Vec<Decision> {
        if self.config.si_update == SiUpdate::EveryPass {
            self.update_indices(view);
        }
        let mut out = Vec::new();

        // Nodes held per station before this pass (the bag S1), counted in a
        // reusable generation-stamped table: O(|held|), no allocation sized
        // to the pool (the simulator runs ~10^5 passes over 10^4 stations).
        self.scratch.next_generation();
        for &(_, h) in view.held {
            self.scratch.add(h);
        }
        let preempt_with_nodes = self.config.preempt_with_nodes;

        // S2: stations with waiting jobs, smallest SI first. Ties are broken
        // uniformly at random (L645) by an i.i.d. random key per station.
        // S2 is kept as two min-heaps, heapified in O(|S2|): stations that
        // may preempt in Phase 2 (A2: they hold no node) and the rest. Most
        // passes, triggered by one capacity event, need only a few entries.
        let mut may_preempt: BinaryHeap<Reverse<Candidate>> = BinaryHeap::new();
        let mut others: BinaryHeap<Reverse<Candidate>> = BinaryHeap::new();
        for d in view.stations.iter().filter(|d| d.waiting > 0) {
            let c = Candidate {
                si: self.index(d.station),
                key: rng.next_u64(),
                station: d.station,
                waiting: d.waiting,
            };
            if preempt_with_nodes || self.scratch.count(d.station) == 0 {
                may_preempt.push(Reverse(c));
            } else {
                others.push(Reverse(c));
            }
        }
        if may_preempt.is_empty() && others.is_empty() {
            return out;
        }
        // Pops the smallest of both heaps: S2 in ascending order.
        fn pop_min(
            a: &mut BinaryHeap<Reverse<Candidate>>,
            b: &mut BinaryHeap<Reverse<Candidate>>,
        ) -> Option<Candidate> {
            match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if y.0 < x.0 => b.pop().map(|r| r.0),
                (Some(_), _) => a.pop().map(|r| r.0),
                (None, _) => b.pop().map(|r| r.0),
            }
        }

        // Phase 1: free nodes, in random order (A9), to the lowest indices.
        let mut free: Vec<NodeId> = view.free_nodes.to_vec();
        // Stations of S2 not served in Phase 1, in ascending order, for Phase 2.
        let mut leftover: std::vec::IntoIter<Candidate> = Vec::new().into_iter();
        match self.config.per_pass {
            PerPass::One => {
                let k = free.len().min(may_preempt.len() + others.len());
                partial_shuffle(&mut free, k, rng);
                for &node in free.iter().take(k) {
                    if let Some(c) = pop_min(&mut may_preempt, &mut others) {
                        out.push(Decision::Grant {
                            node,
                            to: c.station,
                        });
                    }
                }
            }
            PerPass::UntilSatisfied => {
                let mut order: Vec<Candidate> = Vec::new();
                while let Some(c) = pop_min(&mut may_preempt, &mut others) {
                    order.push(c);
                }
                let k = free.len();
                partial_shuffle(&mut free, k, rng);
                let mut granted = vec![0u32; order.len()];
                let mut next_free = 0usize;
                'rounds: loop {
                    let mut progressed = false;
                    for (slot, c) in order.iter().enumerate() {
                        if next_free == free.len() {
                            break 'rounds;
                        }
                        if granted[slot] < c.waiting {
                            out.push(Decision::Grant {
                                node: free[next_free],
                                to: c.station,
                            });
                            next_free += 1;
                            granted[slot] += 1;
                            progressed = true;
                        }
                    }
                    if !progressed {
                        break;
                    }
                }
                leftover = order
                    .into_iter()
                    .zip(granted)
                    .filter(|(c, g)| {
                        *g == 0 && (preempt_with_nodes || self.scratch.count(c.station) == 0)
                    })
                    .map(|(c, _)| c)
                    .collect::<Vec<_>>()
                    .into_iter();
            }
        }
        // Phase 2: preemption. Candidates are the stations still in S2 (not
        // served in Phase 1) that hold no node (A2), smallest SI first. S1 is
        // the bag of nodes held *before* this pass, so a node granted in
        // Phase 1 cannot be taken back in the same round (L645).
        if view.held.is_empty() || (may_preempt.is_empty() && leftover.as_slice().is_empty()) {
            return out;
        }

        // Only stations that may preempt are left in `may_preempt` (One) or
        // `leftover` (UntilSatisfied), already in ascending order.
        let mut next_candidate = || -> Option<(f64, StationId)> {
            let c = match may_preempt.pop() {
                Some(Reverse(c)) => c,
                None => leftover.next()?,
            };
            Some((c.si, c.station))
        };
        let Some(first) = next_candidate() else {
            return out;
        };
        let best_si = first.0;
        // Only holders whose index is strictly above the best candidate's
        // can ever be preempted (L651), so S1 is reduced to them up front.
        let mut victims: Vec<(StationId, NodeId)> = view
            .held
            .iter()
            .filter(|&&(_, h)| cmp_si(self.index(h), best_si) == Ordering::Greater)
            .map(|&(n, h)| (h, n))
            .collect();
        if victims.is_empty() {
            return out;
        }
        victims.sort_unstable();
        // Group by holder: runs of equal station ids.
        let mut groups: Vec<(StationId, usize, usize)> = Vec::new(); // (holder, start, remaining)
        let mut i = 0;
        while i < victims.len() {
            let h = victims[i].0;
            let mut j = i + 1;
            while j < victims.len() && victims[j].0 == h {
                j += 1;
            }
            groups.push((h, i, j - i));
            i = j;
        }
        let mut heap: BinaryHeap<(Holder, usize)> = groups
            .iter()
            .enumerate()
            .map(|(g, &(h, _, _))| {
                (
                    Holder {
                        si: self.index(h),
                        key: rng.next_u64(),
                        station: h,
                    },
                    g,
                )
            })
            .collect();

        let mut candidate = Some(first);
        while let Some((si_s, s)) = candidate.take() {
            let Some((top, g)) = heap.peek() else { break };
            if cmp_si(si_s, top.si) != Ordering::Less || top.station == s {
                // Preempt only when SI[s] < SI[t] strictly (L651).
                break;
            }
            let g = *g;
            let (t, base, remaining) = groups[g];
            if remaining == 0 {
                // Only reachable with S1Update::AsPrinted: the printed update
                // keeps a victim with nothing left to take, which ends the pass.
                break;
            }
            // A6: a random node of the victim.
            let pick = base + uniform_below(rng, remaining as u64) as usize;
            let node = victims[pick].1;
            victims.swap(pick, base + remaining - 1);
            groups[g].2 -= 1;
            out.push(Decision::Preempt {
                node,
                from: t,
                to: s,
            });
            if self.config.s1_update == S1Update::RemoveTarget && groups[g].2 == 0 {
                heap.pop();
            }
            candidate = next_candidate();
        }
        out
    }
}
