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
use std::cmp::Ordering;
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
}

impl UpDown {
    pub fn new(config: UpDownConfig) -> Self {
        let functions = Box::new(config.functions.clone());
        UpDown {
            config,
            functions,
            si: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Up-Down with custom f, g, h, l.
    pub fn with_functions(config: UpDownConfig, functions: Box<dyn IndexFunctions>) -> Self {
        UpDown {
            config,
            functions,
            si: Vec::new(),
            seen: Vec::new(),
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

        // S2: stations with waiting jobs, smallest SI first. Ties are broken
        // uniformly at random (L645) by an i.i.d. random key per station.
        let mut s2: Vec<(f64, u64, StationId, u32)> = view
            .stations
            .iter()
            .filter(|d| d.waiting > 0)
            .map(|d| (self.index(d.station), rng.next_u64(), d.station, d.waiting))
            .collect();
        if s2.is_empty() {
            return out;
        }
        s2.sort_unstable_by(|a, b| cmp_si(a.0, b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));

        // Phase 1: free nodes, in random order (A9), to the lowest indices.
        let mut free: Vec<NodeId> = view.free_nodes.to_vec();
        let mut granted = vec![0u32; s2.len()];
        let mut next_free = 0usize;
        match self.config.per_pass {
            PerPass::One => {
                let k = free.len().min(s2.len());
                partial_shuffle(&mut free, k, rng);
                for (slot, s) in s2.iter().enumerate().take(k) {
                    out.push(Decision::Grant {
                        node: free[slot],
                        to: s.2,
                    });
                    granted[slot] = 1;
                }
            }
            PerPass::UntilSatisfied => {
                let k = free.len();
                partial_shuffle(&mut free, k, rng);
                'rounds: loop {
                    let mut progressed = false;
                    for (slot, s) in s2.iter().enumerate() {
                        if next_free == free.len() {
                            break 'rounds;
                        }
                        if granted[slot] < s.3 {
                            out.push(Decision::Grant {
                                node: free[next_free],
                                to: s.2,
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
            }
        }
        // Phase 2: preemption. Candidates are the stations still in S2 (not
        // served in Phase 1) that hold no node (A2), smallest SI first. S1 is
        // the bag of nodes held *before* this pass, so a node granted in
        // Phase 1 cannot be taken back in the same round (L645).
        if view.held.is_empty() || granted.iter().all(|&g| g > 0) {
            return out;
        }

        // Group held nodes by holder with a counting sort (O(n)).
        let max_holder = view.held.iter().map(|&(_, h)| h).max().unwrap_or(0) as usize;
        let mut start = vec![0u32; max_holder + 2];
        for &(_, h) in view.held {
            start[h as usize + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut fill = start.clone();
        let mut nodes_by_holder = vec![0 as NodeId; view.held.len()];
        for &(n, h) in view.held {
            nodes_by_holder[fill[h as usize] as usize] = n;
            fill[h as usize] += 1;
        }
        let held_before = |st: StationId| -> u32 {
            let i = st as usize;
            if i <= max_holder {
                start[i + 1] - start[i]
            } else {
                0
            }
        };
        // remaining[h] = nodes of h still in S1.
        let mut remaining: Vec<u32> = (0..=max_holder).map(|h| start[h + 1] - start[h]).collect();
        let mut heap: BinaryHeap<Holder> = (0..=max_holder)
            .filter(|&h| remaining[h] > 0)
            .map(|h| Holder {
                si: self.index(h as StationId),
                key: rng.next_u64(),
                station: h as StationId,
            })
            .collect();

        let candidates = s2
            .iter()
            .zip(&granted)
            .filter(|(_, g)| **g == 0)
            .map(|(s, _)| (s.0, s.2))
            .filter(|&(_, st)| self.config.preempt_with_nodes || held_before(st) == 0);
        for (si_s, s) in candidates {
            let Some(top) = heap.peek() else { break };
            if cmp_si(si_s, top.si) != Ordering::Less || top.station == s {
                // Preempt only when SI[s] < SI[t] strictly (L651).
                break;
            }
            let t = top.station as usize;
            if remaining[t] == 0 {
                // Only reachable with S1Update::AsPrinted: the printed update
                // keeps a victim with nothing left to take, which ends the pass.
                break;
            }
            // A6: a random node of the victim.
            let base = start[t] as usize;
            let len = remaining[t] as usize;
            let pick = base + uniform_below(rng, len as u64) as usize;
            let node = nodes_by_holder[pick];
            nodes_by_holder.swap(pick, base + len - 1);
            remaining[t] -= 1;
            out.push(Decision::Preempt {
                node,
                from: t as StationId,
                to: s,
            });
            if self.config.s1_update == S1Update::RemoveTarget && remaining[t] == 0 {
                heap.pop();
            }
        }
        out
    }
}
