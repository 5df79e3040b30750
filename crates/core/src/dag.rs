//! Job DAGs with DMW's two dependence kinds, retries, a DAGMan-like text
//! format and rescue records.
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
//! ([`Order`]). The text format and the rescue format are described in
//! `docs/dag-format.md`; see [`parse_dag`] and [`Rescue`].
//!
//! [`must_start_regardless_of_load`] is the progress guarantee for a
//! station's local scheduler.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

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
    pub fn rescue(&self) -> Rescue {
        let mut r = Rescue::default();
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
    pub fn apply_rescue(
        &mut self,
        rescue: &Rescue,
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

/// How [`Dag::apply_rescue`] treats recorded failed attempts.
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

// ---------------------------------------------------------------------------
// Text formats
// ---------------------------------------------------------------------------

/// Payload of a node read from a DAG file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The submit description file named on the `JOB` line.
    pub submit: String,
    /// `VARS` macros, for substitution into the submit description.
    pub vars: BTreeMap<String, String>,
}

/// What went wrong on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("{0}")]
    Syntax(String),
    #[error("unknown keyword {0:?}")]
    UnknownKeyword(String),
    #[error("invalid node name {0:?}")]
    InvalidName(String),
    #[error("node {name:?} already declared on line {first_line}")]
    DuplicateNode { name: String, first_line: usize },
    #[error("unknown node {0:?}")]
    UnknownNode(String),
    #[error("{what} for {name:?} already given on line {first_line}")]
    Duplicate {
        what: &'static str,
        name: String,
        first_line: usize,
    },
    #[error("dependency cycle: {0}")]
    Cycle(String),
}

/// One error with its 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    pub line: usize,
    pub kind: ParseErrorKind,
}

/// All errors of one file, in line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseErrors(pub Vec<ParseError>);

impl fmt::Display for ParseErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseErrors {}

fn syntax(line: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        line,
        kind: ParseErrorKind::Syntax(msg.into()),
    }
}

/// Splits a line into its keyword and the rest; `None` for blank lines and
/// `#` comments.
fn keyword(raw: &str) -> Option<(String, &str)> {
    let t = raw.trim();
    if t.is_empty() || t.starts_with('#') {
        return None;
    }
    let (kw, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
    Some((kw.to_ascii_uppercase(), rest.trim()))
}

/// Parses `key="value" key2="value2"` (at least one pair). Inside values,
/// `\"` is a quote and `\\` a backslash; other characters are literal.
fn parse_vars(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|&c| c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        let key_ok = key
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !key_ok {
            return Err(format!(
                "invalid VARS key {key:?}: letters, digits and _ only, not starting with a digit"
            ));
        }
        if chars.next() != Some('=') {
            return Err(format!("VARS key {key:?} must be followed by =\"value\""));
        }
        if chars.next() != Some('"') {
            return Err(format!("VARS value of {key:?} must be in double quotes"));
        }
        let mut value = String::new();
        let mut closed = false;
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    closed = true;
                    break;
                }
                '\\' => match chars.next_if(|&n| n == '"' || n == '\\') {
                    Some(n) => value.push(n),
                    None => value.push('\\'),
                },
                c => value.push(c),
            }
        }
        if !closed {
            return Err(format!("unterminated VARS value of {key:?}"));
        }
        if chars.peek().is_some_and(|c| !c.is_whitespace()) {
            return Err(format!("VARS value of {key:?} must be followed by a space"));
        }
        out.push((key, value));
    }
    if out.is_empty() {
        return Err("VARS needs at least one key=\"value\"".into());
    }
    Ok(out)
}

/// Splits `a b CHILD c d` into parents and children.
fn parent_child(rest: &str, kw: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let Some(pos) = toks.iter().position(|t| t.eq_ignore_ascii_case("CHILD")) else {
        return Err(format!("{kw} needs CHILD: {kw} p1 p2 … CHILD c1 c2 …"));
    };
    let parents: Vec<String> = toks[..pos].iter().map(|s| s.to_string()).collect();
    let children: Vec<String> = toks[pos + 1..].iter().map(|s| s.to_string()).collect();
    if parents.is_empty() {
        return Err(format!("{kw} needs at least one parent before CHILD"));
    }
    if children.is_empty() {
        return Err(format!("{kw} needs at least one child after CHILD"));
    }
    if let Some(extra) = children.iter().find(|t| t.eq_ignore_ascii_case("CHILD")) {
        return Err(format!("{kw}: {extra} appears twice"));
    }
    Ok((parents, children))
}

/// A parsed `VARS` line: line number, node name, key/value pairs.
type VarsLine = (usize, String, Vec<(String, String)>);

/// Parses a DAG file (format: `docs/dag-format.md`). Statements may come in
/// any order. Either the whole DAG is returned or every error found, each
/// with its line number.
pub fn parse_dag(text: &str) -> Result<Dag<JobSpec>, ParseErrors> {
    let mut errors = Vec::new();
    // name -> (line, submit)
    let mut jobs: Vec<(usize, String, String)> = Vec::new();
    let mut job_line: BTreeMap<String, usize> = BTreeMap::new();
    let mut edges: Vec<(usize, Vec<String>, Vec<String>, Dependence)> = Vec::new();
    let mut retries: Vec<(usize, String, u32)> = Vec::new();
    let mut vars: Vec<VarsLine> = Vec::new();

    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let Some((kw, rest)) = keyword(raw) else {
            continue;
        };
        match kw.as_str() {
            "JOB" => {
                let toks: Vec<&str> = rest.split_whitespace().collect();
                match toks.as_slice() {
                    [name, submit] => {
                        if !valid_name(name) {
                            errors.push(ParseError {
                                line,
                                kind: ParseErrorKind::InvalidName(name.to_string()),
                            });
                        } else if let Some(&first_line) = job_line.get(*name) {
                            errors.push(ParseError {
                                line,
                                kind: ParseErrorKind::DuplicateNode {
                                    name: name.to_string(),
                                    first_line,
                                },
                            });
                        } else {
                            job_line.insert(name.to_string(), line);
                            jobs.push((line, name.to_string(), submit.to_string()));
                        }
                    }
                    _ => errors.push(syntax(line, "expected: JOB <name> <submit-file>")),
                }
            }
            "PARENT" | "PRIORITY_PARENT" => {
                let dep = if kw == "PARENT" {
                    Dependence::Data
                } else {
                    Dependence::Priority
                };
                match parent_child(rest, &kw) {
                    Ok((p, c)) => edges.push((line, p, c, dep)),
                    Err(m) => errors.push(syntax(line, m)),
                }
            }
            "RETRY" => {
                let toks: Vec<&str> = rest.split_whitespace().collect();
                match toks.as_slice() {
                    [name, n] => match n.parse::<u32>() {
                        Ok(n) => retries.push((line, name.to_string(), n)),
                        Err(_) => errors.push(syntax(
                            line,
                            format!("RETRY count {n:?} is not a non-negative integer"),
                        )),
                    },
                    _ => errors.push(syntax(line, "expected: RETRY <name> <count>")),
                }
            }
            "VARS" => {
                let (name, kv) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                if name.is_empty() {
                    errors.push(syntax(line, "expected: VARS <name> key=\"value\" …"));
                } else {
                    match parse_vars(kv) {
                        Ok(pairs) => vars.push((line, name.to_string(), pairs)),
                        Err(m) => errors.push(syntax(line, m)),
                    }
                }
            }
            _ => errors.push(ParseError {
                line,
                kind: ParseErrorKind::UnknownKeyword(kw),
            }),
        }
    }

    let unknown = |line: usize, name: &str| ParseError {
        line,
        kind: ParseErrorKind::UnknownNode(name.to_string()),
    };

    let mut specs: BTreeMap<String, (JobSpec, u32)> = jobs
        .iter()
        .map(|(_, name, submit)| {
            (
                name.clone(),
                (
                    JobSpec {
                        submit: submit.clone(),
                        vars: BTreeMap::new(),
                    },
                    0,
                ),
            )
        })
        .collect();

    let mut retry_line: BTreeMap<String, usize> = BTreeMap::new();
    for (line, name, n) in &retries {
        match specs.get_mut(name) {
            None => errors.push(unknown(*line, name)),
            Some(spec) => {
                if let Some(&first_line) = retry_line.get(name) {
                    errors.push(ParseError {
                        line: *line,
                        kind: ParseErrorKind::Duplicate {
                            what: "RETRY",
                            name: name.clone(),
                            first_line,
                        },
                    });
                } else {
                    retry_line.insert(name.clone(), *line);
                    spec.1 = *n;
                }
            }
        }
    }

    let mut var_line: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (line, name, pairs) in &vars {
        let Some(spec) = specs.get_mut(name) else {
            errors.push(unknown(*line, name));
            continue;
        };
        for (k, v) in pairs {
            let key = (name.clone(), k.clone());
            if let Some(&first_line) = var_line.get(&key) {
                errors.push(ParseError {
                    line: *line,
                    kind: ParseErrorKind::Duplicate {
                        what: "VARS key",
                        name: format!("{name}.{k}"),
                        first_line,
                    },
                });
            } else {
                var_line.insert(key, *line);
                spec.0.vars.insert(k.clone(), v.clone());
            }
        }
    }

    let mut builder = DagBuilder::new();
    for (_, name, _) in &jobs {
        if let Some((spec, r)) = specs.remove(name) {
            // Names were validated and deduplicated above.
            if let Err(e) = builder.add_node(name.clone(), spec, r) {
                errors.push(syntax(
                    job_line.get(name).copied().unwrap_or(0),
                    e.to_string(),
                ));
            }
        }
    }
    // First line declaring each (parent, child) pair, to place cycle errors.
    let mut edge_line: BTreeMap<(NodeId, NodeId), usize> = BTreeMap::new();
    for (line, parents, children, dep) in &edges {
        for name in parents.iter().chain(children) {
            if builder.id(name).is_none() {
                errors.push(unknown(*line, name));
            }
        }
        for p in parents {
            for c in children {
                if let (Some(pi), Some(ci)) = (builder.id(p), builder.id(c)) {
                    edge_line.entry((pi, ci)).or_insert(*line);
                    if builder.add_edge(pi, ci, *dep).is_err() {
                        errors.push(syntax(*line, "internal: bad edge"));
                    }
                }
            }
        }
    }

    let ids_by_name = builder.index.clone();
    match builder.build() {
        Ok(dag) if errors.is_empty() => Ok(dag),
        Ok(_) => {
            errors.sort_by_key(|e| e.line);
            Err(ParseErrors(errors))
        }
        Err(DagError::Cycle(path)) => {
            // Report the cycle at the line of its last edge, which closes it.
            let ids: Vec<Option<NodeId>> =
                path.iter().map(|n| ids_by_name.get(n).copied()).collect();
            let line = ids
                .windows(2)
                .filter_map(|w| match (w[0], w[1]) {
                    (Some(a), Some(b)) => edge_line.get(&(a, b)).copied(),
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            errors.push(ParseError {
                line,
                kind: ParseErrorKind::Cycle(path.join(" -> ")),
            });
            errors.sort_by_key(|e| e.line);
            Err(ParseErrors(errors))
        }
        Err(e) => {
            errors.push(syntax(0, e.to_string()));
            errors.sort_by_key(|e| e.line);
            Err(ParseErrors(errors))
        }
    }
}

/// A rescue record: which nodes are done and how many failed attempts each
/// node has used, by node name. Text format in `docs/dag-format.md`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rescue {
    /// The DAG file this record belongs to (`DAG <path>` line), so that
    /// `glean dag submit RESCUE` can find it. A relative path is relative to
    /// the rescue file's directory. Optional: records without it are applied
    /// by callers that already know the DAG.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dag: Option<String>,
    pub done: BTreeSet<String>,
    /// Failed attempts per node (nodes with none are omitted).
    pub attempts: BTreeMap<String, u32>,
}

impl Rescue {
    /// The text form: a header comment, the `DAG path` line if known, then
    /// `DONE name` lines and `ATTEMPTS name n` lines, sorted by name.
    pub fn to_text(&self) -> String {
        let mut s = String::from("# Gleaner DAG rescue file, format 1\n");
        if let Some(d) = &self.dag {
            s.push_str("DAG ");
            s.push_str(d);
            s.push('\n');
        }
        for n in &self.done {
            s.push_str("DONE ");
            s.push_str(n);
            s.push('\n');
        }
        for (n, a) in &self.attempts {
            s.push_str(&format!("ATTEMPTS {n} {a}\n"));
        }
        s
    }

    /// Whether `text` is a rescue record rather than a DAG file: its first
    /// statement is `DAG`, `DONE` or `ATTEMPTS` (none of which a DAG file
    /// may use).
    pub fn looks_like(text: &str) -> bool {
        text.lines()
            .find_map(keyword)
            .is_some_and(|(kw, _)| matches!(kw.as_str(), "DAG" | "DONE" | "ATTEMPTS"))
    }

    /// Parses the text form; all errors with line numbers, or the record.
    pub fn parse(text: &str) -> Result<Rescue, ParseErrors> {
        let mut errors = Vec::new();
        let mut r = Rescue::default();
        let mut done_line: BTreeMap<String, usize> = BTreeMap::new();
        let mut att_line: BTreeMap<String, usize> = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let Some((kw, rest)) = keyword(raw) else {
                continue;
            };
            let toks: Vec<&str> = rest.split_whitespace().collect();
            match (kw.as_str(), toks.as_slice()) {
                // The path is the rest of the line, so it may hold spaces.
                ("DAG", [_, ..]) => {
                    if r.dag.is_some() {
                        errors.push(syntax(line, "DAG given twice"));
                    } else {
                        r.dag = Some(rest.to_string());
                    }
                }
                ("DAG", _) => errors.push(syntax(line, "expected: DAG <dag-file>")),
                ("DONE", [name]) => {
                    if let Some(&first_line) = done_line.get(*name) {
                        errors.push(ParseError {
                            line,
                            kind: ParseErrorKind::Duplicate {
                                what: "DONE",
                                name: name.to_string(),
                                first_line,
                            },
                        });
                    } else {
                        done_line.insert(name.to_string(), line);
                        r.done.insert(name.to_string());
                    }
                }
                ("DONE", _) => errors.push(syntax(line, "expected: DONE <name>")),
                ("ATTEMPTS", [name, n]) => match n.parse::<u32>() {
                    Ok(n) => {
                        if let Some(&first_line) = att_line.get(*name) {
                            errors.push(ParseError {
                                line,
                                kind: ParseErrorKind::Duplicate {
                                    what: "ATTEMPTS",
                                    name: name.to_string(),
                                    first_line,
                                },
                            });
                        } else {
                            att_line.insert(name.to_string(), line);
                            if n > 0 {
                                r.attempts.insert(name.to_string(), n);
                            }
                        }
                    }
                    Err(_) => errors.push(syntax(
                        line,
                        format!("ATTEMPTS count {n:?} is not a non-negative integer"),
                    )),
                },
                ("ATTEMPTS", _) => errors.push(syntax(line, "expected: ATTEMPTS <name> <count>")),
                _ => errors.push(ParseError {
                    line,
                    kind: ParseErrorKind::UnknownKeyword(kw),
                }),
            }
        }
        if errors.is_empty() {
            Ok(r)
        } else {
            Err(ParseErrors(errors))
        }
    }
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
