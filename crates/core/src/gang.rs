//! Parallel jobs of `machine_count = k` processes that run as a gang:
//! where they run, and what a member's owner coming back does to the gang.
//! Ryu & Hollingsworth §5 (seeds/002_34f613b0a80e1e58.txt L250–333; spec
//! linger-longer.md §5.2, Fig. 13, L286–290) compare two policies:
//!
//! - **LL-k**: run k processes; "if k or more idle nodes are available …
//!   runs k processes on k idle nodes, otherwise it runs on all idle nodes
//!   available and some nonidle nodes by lingering" (L286). A member whose
//!   owner returns keeps running at idle priority (lingers).
//! - **Reconfiguration**: run on as many idle nodes as the program's shape
//!   allows — the largest power of two not above the idle count in the
//!   paper (L268, L286) — and shrink (restart on fewer nodes) when an owner
//!   returns.
//!
//! Both are pure decisions on a view of the nodes; the simulator and the
//! daemons call the same functions.

use crate::eviction::{EvictionPolicy, LingerForeverConfig, NoDestination, PauseAndMigrateConfig};
use serde::{Deserialize, Serialize};

mod settle;
pub use settle::{Hold, Member, Plan, VacateWhy, settle};

/// Node counts a program can run on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// Any count.
    Any,
    /// Powers of two (the paper's constraint, L268).
    #[default]
    PowerOfTwo,
    /// Perfect squares (the other constraint the paper names, L268).
    Square,
}

impl Shape {
    /// The largest allowed count not above `n` (0 if none).
    pub fn floor(self, n: u32) -> u32 {
        match self {
            Shape::Any => n,
            Shape::PowerOfTwo => {
                if n == 0 {
                    0
                } else {
                    1 << (31 - n.leading_zeros())
                }
            }
            Shape::Square => {
                let mut r = (f64::from(n)).sqrt() as u32;
                while r * r > n {
                    r -= 1;
                }
                while (r + 1) * (r + 1) <= n {
                    r += 1;
                }
                r * r
            }
        }
    }
}

/// What happens to the gang when a member cannot stay on its node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnEviction {
    /// Every member is suspended until the node (or another) is free.
    #[default]
    Suspend,
    /// The gang is checkpointed and vacated; it is placed again later.
    Vacate,
}

/// The gang policy of a parallel job.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GangPolicy {
    /// LL-k. A member lingers while its owner's CPU utilisation is at most
    /// `linger_limit` (1.0: always, as in the paper's study); above it the
    /// member moves to a free idle node if there is one, else `on_eviction`.
    LingerK {
        k: u32,
        linger_limit: f64,
        on_eviction: OnEviction,
    },
    /// Reconfiguration: `shape.floor(min(max, idle nodes))` processes, at
    /// least `min`; below `min` the gang waits (`on_eviction`).
    Reconfigure {
        max: u32,
        min: u32,
        shape: Shape,
        on_eviction: OnEviction,
    },
}

/// A node as the gang scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeView {
    pub id: u32,
    /// No owner activity (the paper's "idle", L126).
    pub idle: bool,
    /// The owner's CPU utilisation (0–1) on a nonidle node.
    pub utilisation: f64,
    /// Already running a member of another gang or a guest.
    pub busy: bool,
}

/// Where a gang runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Every member's node.
    pub nodes: Vec<u32>,
    /// Those of them that are nonidle (members lingering there).
    pub lingering: Vec<u32>,
}

/// What the gang does after a member's owner returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GangAction {
    /// The member stays, at idle priority.
    Linger,
    /// The member moves to this free idle node.
    Move { to: u32 },
    /// Restart on these nodes (reconfiguration).
    Shrink { nodes: Vec<u32> },
    /// Every member suspended.
    Suspend,
    /// The gang is checkpointed and leaves.
    Vacate,
}

impl GangPolicy {
    /// LL-k with the paper's behaviour: always linger.
    pub fn linger(k: u32) -> GangPolicy {
        GangPolicy::LingerK {
            k,
            linger_limit: 1.0,
            on_eviction: OnEviction::Suspend,
        }
    }
    /// Reconfiguration to powers of two up to `max`.
    pub fn reconfigure(max: u32) -> GangPolicy {
        GangPolicy::Reconfigure {
            max,
            min: 1,
            shape: Shape::PowerOfTwo,
            on_eviction: OnEviction::Suspend,
        }
    }

    /// Where a gang starts, or `None` if it cannot start now. Idle nodes
    /// first (by id); LL-k then takes the least-loaded nonidle nodes.
    pub fn place(&self, nodes: &[NodeView]) -> Option<Placement> {
        let mut idle: Vec<&NodeView> = nodes.iter().filter(|n| n.idle && !n.busy).collect();
        idle.sort_by_key(|n| n.id);
        match *self {
            GangPolicy::LingerK {
                k, linger_limit, ..
            } => {
                if k == 0 {
                    return None;
                }
                let mut chosen: Vec<u32> = idle.iter().take(k as usize).map(|n| n.id).collect();
                let mut lingering = Vec::new();
                if chosen.len() < k as usize {
                    let mut busy: Vec<&NodeView> = nodes
                        .iter()
                        .filter(|n| !n.idle && !n.busy && n.utilisation <= linger_limit)
                        .collect();
                    busy.sort_by(|a, b| {
                        a.utilisation
                            .total_cmp(&b.utilisation)
                            .then(a.id.cmp(&b.id))
                    });
                    for n in busy.into_iter().take(k as usize - chosen.len()) {
                        chosen.push(n.id);
                        lingering.push(n.id);
                    }
                }
                (chosen.len() == k as usize).then_some(Placement {
                    nodes: chosen,
                    lingering,
                })
            }
            GangPolicy::Reconfigure {
                max, min, shape, ..
            } => {
                let n = shape.floor(max.min(idle.len() as u32));
                (n >= min.max(1)).then(|| Placement {
                    nodes: idle.iter().take(n as usize).map(|n| n.id).collect(),
                    lingering: Vec::new(),
                })
            }
        }
    }

    /// A member on `node` saw its owner return with CPU utilisation
    /// `utilisation`; `gang` are the gang's nodes, `nodes` the pool now.
    pub fn on_owner_return(
        &self,
        gang: &[u32],
        node: u32,
        utilisation: f64,
        nodes: &[NodeView],
    ) -> GangAction {
        let free_idle = || {
            let mut v: Vec<u32> = nodes
                .iter()
                .filter(|n| n.idle && !n.busy && !gang.contains(&n.id))
                .map(|n| n.id)
                .collect();
            v.sort();
            v
        };
        match *self {
            GangPolicy::LingerK {
                linger_limit,
                on_eviction,
                ..
            } => {
                if utilisation <= linger_limit {
                    GangAction::Linger
                } else if let Some(&to) = free_idle().first() {
                    GangAction::Move { to }
                } else {
                    eviction(on_eviction)
                }
            }
            GangPolicy::Reconfigure {
                max,
                min,
                shape,
                on_eviction,
            } => {
                // Remaining idle members plus free idle nodes, shaped.
                let mut pool: Vec<u32> = gang
                    .iter()
                    .copied()
                    .filter(|id| *id != node)
                    .filter(|id| nodes.iter().any(|n| n.id == *id && n.idle))
                    .collect();
                pool.extend(free_idle());
                let n = shape.floor(max.min(pool.len() as u32));
                if n >= min.max(1) {
                    pool.truncate(n as usize);
                    GangAction::Shrink { nodes: pool }
                } else {
                    eviction(on_eviction)
                }
            }
        }
    }
}

/// The eviction ladder a gang member runs under on a host whose owner
/// chose `host`. Under LL-k a member lingers (Ryu & Hollingsworth L286:
/// "some nonidle nodes by lingering") wherever the owner lets guests
/// linger at all (Linger-Longer or Linger-Forever): it stays as long as
/// the owner allows, never migrating alone, since a member that leaves
/// stops the gang. Where the owner's ladder does not linger it stands,
/// and what it does to the member the gang's `on_eviction` does to all
/// ([`GangPolicy::member_left`]).
///
/// Reconfiguration never lingers: it runs on idle nodes only and shrinks
/// when an owner returns (L268, L286). On a host whose owner would let
/// guests linger, its member is suspended at once instead (Pause-and-
/// Migrate, checkpointing if it must leave), so that its home hears of the
/// owner and reconfigures the gang; any other owner's ladder stands.
pub fn member_ladder(policy: &GangPolicy, host: EvictionPolicy) -> EvictionPolicy {
    match (policy, host) {
        (
            GangPolicy::LingerK { .. },
            EvictionPolicy::LingerLonger(_) | EvictionPolicy::LingerForever(_),
        ) => EvictionPolicy::LingerForever(LingerForeverConfig::default()),
        (
            GangPolicy::Reconfigure { .. },
            EvictionPolicy::LingerLonger(_) | EvictionPolicy::LingerForever(_),
        ) => EvictionPolicy::PauseAndMigrate(PauseAndMigrateConfig {
            checkpoint_first: true,
            no_destination: NoDestination::Vacate,
            ..PauseAndMigrateConfig::default()
        }),
        _ => host,
    }
}

impl GangPolicy {
    /// Whether a gang of this policy runs on `n` members: LL-k on exactly
    /// k; reconfiguration on a count its shape allows, from `min` to `max`
    /// (what [`GangPolicy::place`] may choose).
    pub fn runs_on(&self, n: u32) -> bool {
        match *self {
            GangPolicy::LingerK { k, .. } => n == k && k > 0,
            GangPolicy::Reconfigure {
                max, min, shape, ..
            } => n >= min.max(1) && n <= max && shape.floor(n) == n,
        }
    }
}

impl GangPolicy {
    /// A member's host did not let it linger (its ladder suspended or
    /// evicted it): what the whole gang does, `free` being the free idle
    /// nodes the caller knows of (none at a home, which sees no pool).
    pub fn member_left(&self, gang: &[u32], node: u32, free: &[NodeView]) -> GangAction {
        // Above any linger limit: the owner's ladder has ruled already.
        self.on_owner_return(gang, node, f64::INFINITY, free)
    }
}

fn eviction(e: OnEviction) -> GangAction {
    match e {
        OnEviction::Suspend => GangAction::Suspend,
        OnEviction::Vacate => GangAction::Vacate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(idle: u32, busy: &[f64]) -> Vec<NodeView> {
        let mut v: Vec<NodeView> = (0..idle)
            .map(|id| NodeView {
                id,
                idle: true,
                utilisation: 0.0,
                busy: false,
            })
            .collect();
        for (i, u) in busy.iter().enumerate() {
            v.push(NodeView {
                id: idle + i as u32,
                idle: false,
                utilisation: *u,
                busy: false,
            });
        }
        v
    }

    #[test]
    fn shapes() {
        assert_eq!(
            (0..10)
                .map(|n| Shape::PowerOfTwo.floor(n))
                .collect::<Vec<_>>(),
            vec![0, 1, 2, 2, 4, 4, 4, 4, 8, 8]
        );
        assert_eq!(Shape::Square.floor(15), 9);
        assert_eq!(Shape::Square.floor(16), 16);
        assert_eq!(Shape::Any.floor(7), 7);
    }

    #[test]
    fn ll_k_lingers_on_least_loaded_nonidle_nodes() {
        let nodes = pool(5, &[0.4, 0.1, 0.2]);
        let p = GangPolicy::linger(7).place(&nodes).unwrap();
        assert_eq!(p.nodes, vec![0, 1, 2, 3, 4, 6, 7]);
        assert_eq!(p.lingering, vec![6, 7]);
        assert!(GangPolicy::linger(9).place(&nodes).is_none());
        assert_eq!(
            GangPolicy::linger(7).on_owner_return(&p.nodes, 0, 0.2, &nodes),
            GangAction::Linger
        );
    }

    #[test]
    fn reconfiguration_takes_the_largest_power_of_two_of_idle_nodes() {
        let nodes = pool(13, &[0.2; 19]);
        let p = GangPolicy::reconfigure(32).place(&nodes).unwrap();
        assert_eq!(p.nodes.len(), 8);
        assert!(p.lingering.is_empty());
        // Member 3's owner returns: 7 idle members + 5 free idle = 12 → 8.
        let mut now = nodes.clone();
        now[3].idle = false;
        match GangPolicy::reconfigure(32).on_owner_return(&p.nodes, 3, 0.2, &now) {
            GangAction::Shrink { nodes } => {
                assert_eq!(nodes.len(), 8);
                assert!(!nodes.contains(&3));
            }
            other => panic!("{other:?}"),
        }
        // No idle node at all: the gang is suspended.
        let none = pool(0, &[0.2; 4]);
        assert!(GangPolicy::reconfigure(4).place(&none).is_none());
    }

    #[test]
    fn members_linger_where_the_owner_lets_guests_linger() {
        use crate::eviction::{Condor1988Config, LingerLongerConfig};
        let ll = GangPolicy::linger(3);
        let lf = EvictionPolicy::LingerForever(LingerForeverConfig::default());
        assert_eq!(
            member_ladder(
                &ll,
                EvictionPolicy::LingerLonger(LingerLongerConfig::default())
            ),
            lf
        );
        assert_eq!(member_ladder(&ll, lf), lf);
        let condor = EvictionPolicy::Condor1988(Condor1988Config::default());
        assert_eq!(member_ladder(&ll, condor), condor);
        // Reconfiguration never lingers: suspended at once where the
        // owner would let guests linger; other ladders stand.
        for host in [
            lf,
            EvictionPolicy::LingerLonger(LingerLongerConfig::default()),
        ] {
            assert!(matches!(
                member_ladder(&GangPolicy::reconfigure(4), host),
                EvictionPolicy::PauseAndMigrate(c) if c.checkpoint_first
            ));
        }
        assert_eq!(member_ladder(&GangPolicy::reconfigure(4), condor), condor);
        // A member its owner's ladder removed: the gang's on_eviction.
        for (on_eviction, action) in [
            (OnEviction::Suspend, GangAction::Suspend),
            (OnEviction::Vacate, GangAction::Vacate),
        ] {
            let p = GangPolicy::LingerK {
                k: 3,
                linger_limit: 1.0,
                on_eviction,
            };
            assert_eq!(p.member_left(&[0, 1, 2], 1, &[]), action);
        }
    }

    #[test]
    fn which_member_counts_a_gang_runs_on() {
        assert!(GangPolicy::linger(3).runs_on(3));
        assert!(!GangPolicy::linger(3).runs_on(2));
        assert!(!GangPolicy::linger(0).runs_on(0));
        let r = GangPolicy::Reconfigure {
            max: 8,
            min: 2,
            shape: Shape::PowerOfTwo,
            on_eviction: OnEviction::Suspend,
        };
        let ok: Vec<u32> = (0..=10).filter(|n| r.runs_on(*n)).collect();
        assert_eq!(ok, vec![2, 4, 8]);
    }

    proptest::proptest! {
        /// A gang placed by a policy runs on as many members as the policy
        /// says it runs on: the home takes every grant the coordinator
        /// makes with `place`.
        #[test]
        fn every_placement_is_a_count_the_policy_runs_on(
            idle in 0u32..40,
            k in 1u32..33,
            min in 1u32..33,
            shape in 0u8..3,
            reconfigure: bool,
        ) {
            let shape = [Shape::Any, Shape::PowerOfTwo, Shape::Square][shape as usize];
            let p = if reconfigure {
                GangPolicy::Reconfigure { max: k, min: min.min(k), shape, on_eviction: OnEviction::Suspend }
            } else {
                GangPolicy::linger(k)
            };
            if let Some(pl) = p.place(&pool(idle, &[])) {
                proptest::prop_assert!(p.runs_on(pl.nodes.len() as u32));
            }
        }
    }

    #[test]
    fn a_member_over_the_linger_limit_moves_or_the_gang_is_vacated() {
        let ll = GangPolicy::LingerK {
            k: 2,
            linger_limit: 0.3,
            on_eviction: OnEviction::Vacate,
        };
        let mut nodes = pool(3, &[]);
        nodes[0].idle = false;
        assert_eq!(
            ll.on_owner_return(&[0, 1], 0, 0.9, &nodes),
            GangAction::Move { to: 2 }
        );
        nodes[2].busy = true;
        assert_eq!(
            ll.on_owner_return(&[0, 1], 0, 0.9, &nodes),
            GangAction::Vacate
        );
    }
}
