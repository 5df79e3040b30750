//! The dependence graph with DMW's two dependence kinds, retries and a
//! progress record: what the simulator's DMW scheduler runs (`glean sim
//! dmw`).
//!
//! A schedule is a set of jobs linked by two kinds of dependence
//! (Neeracher 1998, seeds/001_c7470f9b5ea54797.txt L391, L998–999,
//! L1894–1898; spec `dmw-neeracher.md` §1.1, §1.6):
//!
//! - **data** ([`Dependence::Data`]): the child may start only after the
//!   parent finished *successfully*;
//! - **priority** ([`Dependence::Priority`]): the child may not start before
//!   the parent has *started*; it pushes execution towards depth-first order
//!   so early results appear sooner.
//!
//! The union of both must be acyclic (L1002–1008); [`DagBuilder::build`]
//! rejects cycles and names one. A built [`Dag`] tracks node states
//! ([`NodeState`]) and answers [`Dag::eligible`] in a deterministic order
//! ([`Order`]). [`Progress`] records how far a run got. HTCondor's DAG
//! language and DAGMan's run of it are in the sibling modules
//! ([`super::parse`], [`super::run`]).
//!
//! [`must_start_regardless_of_load`] is the progress guarantee for a
//! station's local scheduler.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Index of a node in its [`Dag`], in declaration order.
pub type NodeId = usize;

/// The two dependence kinds (L998–999, `AddDependence`, L1901–1915).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dependence {
    /// Child starts only after the parent is [`NodeState::Done`].
    Data,
    /// Child starts only after the parent has started at least once.
    Priority,
}

/// State of one node.
///
/// This is the schedule-level view of the job state machine of spec §2.3:
/// `done` is the only state satisfying a data dependence, and any start
/// satisfies a priority dependence. A failed attempt with retries left goes
/// back to `Ready`; `Failed` is final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Some dependence is not yet satisfied.
    Waiting,
    /// All dependences satisfied; may be started.
    Ready,
    Running,
    /// Finished successfully.
    Done,
    /// Failed with no retries left, after `attempts` failed attempts.
    Failed {
        attempts: u32,
    },
}

impl NodeState {
    pub fn is_final(self) -> bool {
        matches!(self, NodeState::Done | NodeState::Failed { .. })
    }
}

/// Order of [`Dag::eligible`].
///
/// DMW's default is depth-first: "choosing a dessis job over a dios job when
/// both are eligible" (L2796), i.e. prefer jobs further down the graph so
/// complete branches finish early. Breadth-first makes more jobs eligible
/// sooner and finished the whole experiment faster (L2796, L2846). Depth is
/// the longest path from a root over both edge kinds; ties go to
/// declaration order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Deepest first, then declaration order.
    #[default]
    DepthFirst,
    /// Shallowest first, then declaration order.
    BreadthFirst,
}

/// One node: a name, the caller's payload and its retry budget.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node<P> {
    pub name: String,
    pub payload: P,
    /// Extra attempts after a failure (DAGMan `RETRY`): at most
    /// `retries + 1` attempts in all.
    pub retries: u32,
}

/// Errors of DAG construction, state changes and rescue application.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DagError {
    #[error("node {0:?} declared twice")]
    DuplicateNode(String),
    #[error(
        "invalid node name {0:?}: must be non-empty, without whitespace, and not PARENT or CHILD"
    )]
    InvalidName(String),
    #[error("unknown node {0:?}")]
    UnknownNode(String),
    #[error("unknown node id {0}")]
    UnknownNodeId(NodeId),
    #[error("dependency cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    #[error("node {node:?} cannot start: it is {state:?}, not Ready")]
    NotReady { node: String, state: NodeState },
    #[error("node {node:?} cannot finish: it is {state:?}, not Running")]
    NotRunning { node: String, state: NodeState },
    #[error("a rescue record can only be applied before any node has started")]
    RescueAfterStart,
    #[error("rescue marks {node:?} done but its data parent {parent:?} is not done")]
    RescueInconsistent { node: String, parent: String },
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.chars().any(char::is_whitespace)
        && !name.eq_ignore_ascii_case("PARENT")
        && !name.eq_ignore_ascii_case("CHILD")
}

/// Collects nodes and edges; [`DagBuilder::build`] checks for cycles.
#[derive(Clone, Debug)]
pub struct DagBuilder<P> {
    nodes: Vec<Node<P>>,
    index: BTreeMap<String, NodeId>,
    edges: BTreeSet<(NodeId, NodeId, Dependence)>,
}

impl<P> Default for DagBuilder<P> {
    fn default() -> Self {
        DagBuilder {
            nodes: Vec::new(),
            index: BTreeMap::new(),
            edges: BTreeSet::new(),
        }
    }
}

impl<P> DagBuilder<P> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node; names are unique.
    pub fn add_node(
        &mut self,
        name: impl Into<String>,
        payload: P,
        retries: u32,
    ) -> Result<NodeId, DagError> {
        let name = name.into();
        if !valid_name(&name) {
            return Err(DagError::InvalidName(name));
        }
        if self.index.contains_key(&name) {
            return Err(DagError::DuplicateNode(name));
        }
        let id = self.nodes.len();
        self.index.insert(name.clone(), id);
        self.nodes.push(Node {
            name,
            payload,
            retries,
        });
        Ok(id)
    }

    pub fn id(&self, name: &str) -> Option<NodeId> {
        self.index.get(name).copied()
    }

    /// Adds `parent → child` of the given kind. Repeated edges are merged.
    pub fn add_edge(
        &mut self,
        parent: NodeId,
        child: NodeId,
        dep: Dependence,
    ) -> Result<(), DagError> {
        for n in [parent, child] {
            if n >= self.nodes.len() {
                return Err(DagError::UnknownNodeId(n));
            }
        }
        self.edges.insert((parent, child, dep));
        Ok(())
    }

    /// Adds an edge by node names.
    pub fn add_edge_by_name(
        &mut self,
        parent: &str,
        child: &str,
        dep: Dependence,
    ) -> Result<(), DagError> {
        let p = self
            .id(parent)
            .ok_or_else(|| DagError::UnknownNode(parent.to_string()))?;
        let c = self
            .id(child)
            .ok_or_else(|| DagError::UnknownNode(child.to_string()))?;
        self.add_edge(p, c, dep)
    }

    /// Checks acyclicity over both edge kinds together (the completion
    /// guarantee needs ¬(j δ* j) with δ = δ^d ∪ δ^p, L1002–1008) and builds
    /// the DAG with every node Waiting or Ready.
    pub fn build(self) -> Result<Dag<P>, DagError> {
        let n = self.nodes.len();
        let mut data_parents = vec![Vec::new(); n];
        let mut prio_parents = vec![Vec::new(); n];
        let mut children: Vec<Vec<NodeId>> = vec![Vec::new(); n];
        for &(p, c, dep) in &self.edges {
            match dep {
                Dependence::Data => data_parents[c].push(p),
                Dependence::Priority => prio_parents[c].push(p),
            }
            if children[p].last() != Some(&c) {
                children[p].push(c);
            }
        }
        for v in &mut children {
            v.sort_unstable();
            v.dedup();
        }
        if let Some(cycle) = find_cycle(&children) {
            return Err(DagError::Cycle(
                cycle
                    .into_iter()
                    .map(|i| self.nodes[i].name.clone())
                    .collect(),
            ));
        }
        let topo = topo_order(&children);
        let mut depth = vec![0u32; n];
        for &u in &topo {
            for &c in &children[u] {
                depth[c] = depth[c].max(depth[u].saturating_add(1));
            }
        }
        let mut dag = Dag {
            nodes: self.nodes,
            index: self.index,
            data_parents,
            prio_parents,
            children,
            depth,
            topo,
            order: Order::default(),
            rt: vec![Runtime::default(); n],
        };
        for i in 0..n {
            dag.refresh(i);
        }
        Ok(dag)
    }
}

/// Finds a cycle in the graph, as a path whose first and last node are the
/// same, or `None`. Iterative, so deep graphs cannot overflow the stack.
fn find_cycle(children: &[Vec<NodeId>]) -> Option<Vec<NodeId>> {
    const WHITE: u8 = 0;
    const GREY: u8 = 1;
    const BLACK: u8 = 2;
    let mut color = vec![WHITE; children.len()];
    for root in 0..children.len() {
        if color[root] != WHITE {
            continue;
        }
        // (node, index of the next child to visit)
        let mut stack: Vec<(NodeId, usize)> = vec![(root, 0)];
        color[root] = GREY;
        while let Some(top) = stack.last_mut() {
            let (u, i) = *top;
            if let Some(&c) = children[u].get(i) {
                top.1 += 1;
                match color[c] {
                    WHITE => {
                        color[c] = GREY;
                        stack.push((c, 0));
                    }
                    GREY => {
                        let start = stack.iter().position(|&(x, _)| x == c).unwrap_or(0);
                        let mut path: Vec<NodeId> =
                            stack[start..].iter().map(|&(x, _)| x).collect();
                        path.push(c);
                        return Some(path);
                    }
                    _ => {}
                }
            } else {
                color[u] = BLACK;
                stack.pop();
            }
        }
    }
    None
}

/// Kahn's topological order, smallest id first among the available nodes.
/// Only called on acyclic graphs.
fn topo_order(children: &[Vec<NodeId>]) -> Vec<NodeId> {
    let n = children.len();
    let mut indeg = vec![0usize; n];
    for cs in children {
        for &c in cs {
            indeg[c] += 1;
        }
    }
    let mut ready: BTreeSet<NodeId> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut out = Vec::with_capacity(n);
    while let Some(u) = ready.pop_first() {
        out.push(u);
        for &c in &children[u] {
            indeg[c] -= 1;
            if indeg[c] == 0 {
                ready.insert(c);
            }
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Runtime {
    state: NodeState,
    /// Attempts that ended in failure.
    failures: u32,
    /// Started at least once (satisfies priority dependences for good).
    started: bool,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime {
            state: NodeState::Waiting,
            failures: 0,
            started: false,
        }
    }
}

/// A validated, acyclic job DAG and the state of its nodes.
#[derive(Clone, Debug)]
pub struct Dag<P> {
    nodes: Vec<Node<P>>,
    index: BTreeMap<String, NodeId>,
    data_parents: Vec<Vec<NodeId>>,
    prio_parents: Vec<Vec<NodeId>>,
    children: Vec<Vec<NodeId>>,
    depth: Vec<u32>,
    topo: Vec<NodeId>,
    order: Order,
    rt: Vec<Runtime>,
}

impl<P> Dag<P> {
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, id: NodeId) -> Option<&Node<P>> {
        self.nodes.get(id)
    }

    pub fn nodes(&self) -> &[Node<P>] {
        &self.nodes
    }

    pub fn id(&self, name: &str) -> Option<NodeId> {
        self.index.get(name).copied()
    }

    pub fn state(&self, id: NodeId) -> Option<NodeState> {
        self.rt.get(id).map(|r| r.state)
    }

    /// Attempts of `id` that ended in failure so far.
    pub fn failures(&self, id: NodeId) -> Option<u32> {
        self.rt.get(id).map(|r| r.failures)
    }

    /// Whether `id` has ever started.
    pub fn started(&self, id: NodeId) -> Option<bool> {
        self.rt.get(id).map(|r| r.started)
    }

    pub fn data_parents(&self, id: NodeId) -> &[NodeId] {
        self.data_parents.get(id).map_or(&[], Vec::as_slice)
    }

    pub fn priority_parents(&self, id: NodeId) -> &[NodeId] {
        self.prio_parents.get(id).map_or(&[], Vec::as_slice)
    }

    /// Direct dependants of `id`, both kinds, ascending.
    pub fn children(&self, id: NodeId) -> &[NodeId] {
        self.children.get(id).map_or(&[], Vec::as_slice)
    }

    /// Longest path from a root to `id`, both edge kinds.
    pub fn depth(&self, id: NodeId) -> Option<u32> {
        self.depth.get(id).copied()
    }

    pub fn order(&self) -> Order {
        self.order
    }

    pub fn set_order(&mut self, order: Order) {
        self.order = order;
    }

    fn name_of(&self, id: NodeId) -> String {
        self.nodes
            .get(id)
            .map_or_else(|| format!("#{id}"), |n| n.name.clone())
    }

    /// Are all dependences of `id` satisfied (DMW's `Eligible`, L1915)?
    fn dependences_met(&self, id: NodeId) -> bool {
        self.data_parents(id)
            .iter()
            .all(|&p| self.rt[p].state == NodeState::Done)
            && self
                .priority_parents(id)
                .iter()
                .all(|&p| self.rt[p].started)
    }

    /// Moves a Waiting/Ready node to the state its parents allow.
    fn refresh(&mut self, id: NodeId) {
        if matches!(self.rt[id].state, NodeState::Waiting | NodeState::Ready) {
            self.rt[id].state = if self.dependences_met(id) {
                NodeState::Ready
            } else {
                NodeState::Waiting
            };
        }
    }

    fn refresh_children(&mut self, id: NodeId) {
        for i in 0..self.children(id).len() {
            let c = self.children[id][i];
            self.refresh(c);
        }
    }

    /// Ready nodes in schedule order (see [`Order`]).
    pub fn eligible(&self) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = (0..self.len())
            .filter(|&i| self.rt[i].state == NodeState::Ready)
            .collect();
        match self.order {
            Order::DepthFirst => {
                v.sort_by_key(|&i| (std::cmp::Reverse(self.depth[i]), i));
            }
            Order::BreadthFirst => v.sort_by_key(|&i| (self.depth[i], i)),
        }
        v
    }

    /// `id` was started. It must be Ready.
    pub fn on_started(&mut self, id: NodeId) -> Result<(), DagError> {
        let state = self.state(id).ok_or(DagError::UnknownNodeId(id))?;
        if state != NodeState::Ready {
            return Err(DagError::NotReady {
                node: self.name_of(id),
                state,
            });
        }
        self.rt[id].state = NodeState::Running;
        self.rt[id].started = true;
        self.refresh_children(id);
        Ok(())
    }

    /// `id` finished. It must be Running. On success it is Done; on failure
    /// it goes back to Ready while failed attempts ≤ retries, else it is
    /// Failed. Returns the node's new state.
    pub fn on_finished(&mut self, id: NodeId, success: bool) -> Result<NodeState, DagError> {
        let state = self.state(id).ok_or(DagError::UnknownNodeId(id))?;
        if state != NodeState::Running {
            return Err(DagError::NotRunning {
                node: self.name_of(id),
                state,
            });
        }
        let new = if success {
            NodeState::Done
        } else {
            let f = self.rt[id].failures.saturating_add(1);
            self.rt[id].failures = f;
            if f <= self.nodes[id].retries {
                NodeState::Ready
            } else {
                NodeState::Failed { attempts: f }
            }
        };
        self.rt[id].state = new;
        if new == NodeState::Done {
            self.refresh_children(id);
        }
        Ok(new)
    }

    /// Every node is Done.
    pub fn is_complete(&self) -> bool {
        self.rt.iter().all(|r| r.state == NodeState::Done)
    }

    /// Not complete, and nothing is Ready or Running: what remains is blocked
    /// by nodes that failed with no retries left.
    pub fn is_stuck(&self) -> bool {
        !self.is_complete()
            && !self
                .rt
                .iter()
                .any(|r| matches!(r.state, NodeState::Ready | NodeState::Running))
    }

    /// Nodes that can never start: a data ancestor failed for good (a failed
    /// node never releases its data children, spec R1), or a priority parent
    /// can never start. Ascending ids.
    pub fn blocked(&self) -> Vec<NodeId> {
        let mut blocked = vec![false; self.len()];
        for &u in &self.topo {
            if self.rt[u].state != NodeState::Waiting {
                continue;
            }
            let data = self
                .data_parents(u)
                .iter()
                .any(|&p| blocked[p] || matches!(self.rt[p].state, NodeState::Failed { .. }));
            let prio = self.priority_parents(u).iter().any(|&p| blocked[p]);
            blocked[u] = data || prio;
        }
        (0..self.len()).filter(|&i| blocked[i]).collect()
    }

    /// The rescue record of the current state: Done nodes and the failed
    /// attempts of every node that had any. Running nodes are recorded as not
    /// done; their current attempt is not counted.
    pub fn progress(&self) -> Progress {
        let mut r = Progress::default();
        for (node, rt) in self.nodes.iter().zip(&self.rt) {
            if rt.state == NodeState::Done {
                r.done.insert(node.name.clone());
            }
            if rt.failures > 0 {
                r.attempts.insert(node.name.clone(), rt.failures);
            }
        }
        r
    }

    /// Applies a rescue record to a freshly built DAG (no node started), so a
    /// stopped run resumes where it was: recorded nodes are Done, and failed
    /// attempts are restored per `retries`. A node with recorded failed
    /// attempts counts as having started (it did, in the earlier run).
    /// Checks everything before changing anything: unknown names, a DAG that
    /// already ran, and a done node whose data parent is not done.
    pub fn apply_progress(
        &mut self,
        rescue: &Progress,
        retries: RescueRetries,
    ) -> Result<(), DagError> {
        if self
            .rt
            .iter()
            .any(|r| r.started || !matches!(r.state, NodeState::Waiting | NodeState::Ready))
        {
            return Err(DagError::RescueAfterStart);
        }
        for name in rescue.done.iter().chain(rescue.attempts.keys()) {
            if !self.index.contains_key(name) {
                return Err(DagError::UnknownNode(name.clone()));
            }
        }
        let done: BTreeSet<NodeId> = rescue.done.iter().filter_map(|n| self.id(n)).collect();
        for &d in &done {
            if let Some(&p) = self.data_parents(d).iter().find(|p| !done.contains(p)) {
                return Err(DagError::RescueInconsistent {
                    node: self.name_of(d),
                    parent: self.name_of(p),
                });
            }
        }
        for &d in &done {
            self.rt[d].state = NodeState::Done;
            self.rt[d].started = true;
        }
        for (name, &f) in &rescue.attempts {
            let Some(id) = self.id(name) else { continue };
            if f > 0 {
                self.rt[id].started = true;
            }
            if retries == RescueRetries::Keep {
                self.rt[id].failures = f;
                if self.rt[id].state != NodeState::Done && f > self.nodes[id].retries {
                    self.rt[id].state = NodeState::Failed { attempts: f };
                }
            }
        }
        for i in 0..self.len() {
            self.refresh(i);
        }
        Ok(())
    }
}

/// How [`Dag::apply_progress`] treats recorded failed attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RescueRetries {
    /// Count them against the retry budget: the run resumes exactly where it
    /// stopped (a node that had used up its retries is Failed again).
    #[default]
    Keep,
    /// Start every not-done node with a fresh budget, as after fixing the
    /// cause of a failure (DAGMan's rescue DAG behaviour).
    Reset,
}

/// A progress record: which nodes are done and how many failed attempts each
/// node has used, by node name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub done: BTreeSet<String>,
    /// Failed attempts per node (nodes with none are omitted).
    pub attempts: BTreeMap<String, u32>,
}

/// Progress guarantee for a station's local scheduler: with eligible work and
/// no job of this user running, one job must be started whatever the load.
///
/// Neeracher 1998 (L1016): "Regardless of load conditions, one job per
/// individual scheduler is always kept running"; RStat starts "the first
/// eligible job … regardless of the load average" when none runs (L1104).
/// The reason is trust: users seeing nothing run would suspect a fault and
/// place jobs by hand (L1057).
pub fn must_start_regardless_of_load(eligible_jobs: usize, running_jobs: usize) -> bool {
    running_jobs == 0 && eligible_jobs > 0
}
