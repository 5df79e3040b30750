//! Node allocators: who gets the next free remote node.
//!
//! Mutka's coordinator (Mutka 1988 §4.3, seeds/000_14c1149197e96532.txt
//! L583, L641–663) only decides *which home station* receives a free node; the
//! home station's local scheduler then picks which of its own jobs runs there.
//! All three allocators of the thesis share one interface, [`Allocator`]:
//!
//! - [`UpDown`]: the Up-Down algorithm (Tables 4.2, 4.3, 4.5) with the
//!   default resolutions A1–A9 of `spec/mutka-livny-1987.md` §2.6;
//! - [`RandomAlloc`]: uniform choice among contenders, non-preemptive (L661);
//! - [`RoundRobin`]: cyclic offers with a persistent cursor, non-preemptive (L663, L688).
//!
//! The caller describes the pool in a [`PoolView`] and applies the returned
//! [`Decision`]s. Callers run [`Allocator::on_interval`] once per scheduling
//! interval and [`Allocator::allocate`] at every interval tick and at every
//! capacity event (a station becoming AV, a remote job finishing) — Mutka
//! 1988 L643–645, resolution A4.

mod random;
mod round_robin;
mod updown;

pub use random::RandomAlloc;
pub use round_robin::RoundRobin;
pub use updown::{IndexContext, IndexFunctions, Table45, UpDown, UpDownConfig};

use rand::RngCore;
use serde::{Deserialize, Serialize};

/// Dense identifier of a (home or host) workstation. Daemons map station
/// names to these; the simulator uses indices directly.
pub type StationId = u32;

/// Identifier of one grantable remote node (a CPU slot on some AV station).
pub type NodeId = u32;

/// What one station tells the allocator about its own background jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StationDemand {
    pub station: StationId,
    /// Jobs of this home station that are queued and running nowhere.
    /// A station with `waiting > 0` is in the thesis's set S2 (L651).
    pub waiting: u32,
    /// Jobs of this home station running on *other* stations' nodes.
    /// Together with `waiting` it defines "wants a node" for the SI update
    /// (resolution A5: queued or already running remotely).
    pub remote: u32,
}

impl StationDemand {
    pub fn wants(&self) -> bool {
        self.waiting > 0 || self.remote > 0
    }
}

/// The pool as the allocator sees it in one pass.
#[derive(Clone, Copy, Debug)]
pub struct PoolView<'a> {
    /// Every known station, wanting or not (non-wanting stations still decay
    /// their Up-Down index). Each station appears at most once.
    pub stations: &'a [StationDemand],
    /// Nodes that may be granted now: on AV stations, not used by their own
    /// owner's background work and not running a guest (Mutka 1987 S:L160).
    pub free_nodes: &'a [NodeId],
    /// Nodes currently granted, with the home station holding each. This is
    /// the bag S1 of Table 4.2 (one entry per node).
    pub held: &'a [(NodeId, StationId)],
}

/// One allocation decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    /// Give the free `node` to home station `to`.
    Grant { node: NodeId, to: StationId },
    /// Take `node` away from `from` (its guest is vacated) and give it to `to`.
    Preempt {
        node: NodeId,
        from: StationId,
        to: StationId,
    },
}

impl Decision {
    pub fn node(&self) -> NodeId {
        match *self {
            Decision::Grant { node, .. } | Decision::Preempt { node, .. } => node,
        }
    }
    pub fn to(&self) -> StationId {
        match *self {
            Decision::Grant { to, .. } | Decision::Preempt { to, .. } => to,
        }
    }
}

/// Which allocator, for configuration files and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllocatorKind {
    UpDown,
    Random,
    RoundRobin,
}

impl AllocatorKind {
    pub fn name(self) -> &'static str {
        match self {
            AllocatorKind::UpDown => "updown",
            AllocatorKind::Random => "random",
            AllocatorKind::RoundRobin => "roundrobin",
        }
    }
}

impl std::str::FromStr for AllocatorKind {
    type Err = AllocError;
    fn from_str(s: &str) -> Result<Self, AllocError> {
        match s.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "updown" => Ok(AllocatorKind::UpDown),
            "random" => Ok(AllocatorKind::Random),
            "roundrobin" | "rr" => Ok(AllocatorKind::RoundRobin),
            _ => Err(AllocError::UnknownAllocator(s.to_string())),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AllocError {
    #[error("unknown allocator {0:?}: expected one of updown, random, roundrobin")]
    UnknownAllocator(String),
}

/// How many nodes one station may receive in a single pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerPass {
    /// At most one new node per station per pass (the set S2 of Table 4.2).
    #[default]
    One,
    /// Keep handing out free nodes, lowest index first again, while stations
    /// still have waiting jobs (the prose of Mutka 1988 L645; resolution A3's
    /// alternative).
    UntilSatisfied,
}

/// The common interface of all allocators.
pub trait Allocator: Send {
    fn kind(&self) -> AllocatorKind;

    /// Periodic bookkeeping, once per scheduling interval, *before* that
    /// interval's [`Allocator::allocate`] (Up-Down's index update, Table 4.3).
    fn on_interval(&mut self, view: &PoolView<'_>);

    /// One allocation pass over the current pool. Never grants a node that is
    /// not in `view.free_nodes` or `view.held`, never to a station without
    /// waiting jobs.
    fn allocate(&mut self, view: &PoolView<'_>, rng: &mut dyn RngCore) -> Vec<Decision>;
}

/// Configuration of an allocator, as found in coordinator and simulator configs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AllocatorConfig {
    UpDown(UpDownConfig),
    Random {
        #[serde(default = "per_pass_until_satisfied")]
        per_pass: PerPass,
    },
    RoundRobin {
        #[serde(default)]
        per_pass: PerPass,
    },
}

fn per_pass_until_satisfied() -> PerPass {
    PerPass::UntilSatisfied
}

impl Default for AllocatorConfig {
    fn default() -> Self {
        AllocatorConfig::UpDown(UpDownConfig::default())
    }
}

impl AllocatorConfig {
    /// The default configuration of each allocator kind.
    pub fn default_for(kind: AllocatorKind) -> Self {
        match kind {
            AllocatorKind::UpDown => AllocatorConfig::UpDown(UpDownConfig::default()),
            AllocatorKind::Random => AllocatorConfig::Random {
                per_pass: PerPass::UntilSatisfied,
            },
            AllocatorKind::RoundRobin => AllocatorConfig::RoundRobin {
                per_pass: PerPass::One,
            },
        }
    }

    pub fn kind(&self) -> AllocatorKind {
        match self {
            AllocatorConfig::UpDown(_) => AllocatorKind::UpDown,
            AllocatorConfig::Random { .. } => AllocatorKind::Random,
            AllocatorConfig::RoundRobin { .. } => AllocatorKind::RoundRobin,
        }
    }

    pub fn build(&self) -> Box<dyn Allocator> {
        match self {
            AllocatorConfig::UpDown(c) => Box::new(UpDown::new(c.clone())),
            AllocatorConfig::Random { per_pass } => Box::new(RandomAlloc::new(*per_pass)),
            AllocatorConfig::RoundRobin { per_pass } => Box::new(RoundRobin::new(*per_pass)),
        }
    }
}

/// Shuffles the first `k` positions of `v` uniformly (partial Fisher–Yates),
/// so only as many random numbers are drawn as nodes are handed out.
pub(crate) fn partial_shuffle<T>(v: &mut [T], k: usize, rng: &mut dyn RngCore) {
    let n = v.len();
    for i in 0..k.min(n) {
        let j = i + uniform_below(rng, (n - i) as u64) as usize;
        v.swap(i, j);
    }
}

/// Uniform integer in `0..n` (n > 0) without modulo bias (Lemire's method).
pub(crate) fn uniform_below(rng: &mut dyn RngCore, n: u64) -> u64 {
    debug_assert!(n > 0);
    let mut x = rng.next_u64();
    let mut m = (x as u128) * (n as u128);
    let mut lo = m as u64;
    if lo < n {
        let t = n.wrapping_neg() % n;
        while lo < t {
            x = rng.next_u64();
            m = (x as u128) * (n as u128);
            lo = m as u64;
        }
    }
    (m >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded;

    #[test]
    fn kind_parses_and_names_round_trip() {
        for k in [
            AllocatorKind::UpDown,
            AllocatorKind::Random,
            AllocatorKind::RoundRobin,
        ] {
            assert_eq!(k.name().parse::<AllocatorKind>(), Ok(k));
        }
        assert!("fifo".parse::<AllocatorKind>().is_err());
    }

    #[test]
    fn config_round_trips_through_toml_like_json() {
        let c = AllocatorConfig::default_for(AllocatorKind::Random);
        let s = serde_json::to_string(&c).unwrap();
        let back: AllocatorConfig = serde_json::from_str(&s).unwrap();
        assert_eq!(c, back);
    }

    #[test]
    fn uniform_below_stays_in_range() {
        let mut r = seeded(1);
        for n in 1..50u64 {
            for _ in 0..50 {
                assert!(uniform_below(&mut r, n) < n);
            }
        }
    }
}
