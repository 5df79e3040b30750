//! The expanded DAG: every node with its settings and edges after
//! includes, splices, `ALL_NODES` and pins are resolved ([`super::load`]
//! makes it). This is what the DAG manager runs and stores.

use super::command::{Capture, EdgeKind, NodeKind, ScriptKind, ToleranceMode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a command came from, for messages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loc {
    pub file: String,
    pub line: usize,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A node's submit description.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Submit {
    /// A submit file, as written (relative to the node's directory).
    File(String),
    /// An inline description or a `SUBMIT-DESCRIPTION`: its name and text.
    Inline { name: String, text: String },
    /// A sub-DAG's DAG file, as written (relative to the node's directory).
    Dag(String),
}

/// A node script.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Script {
    /// Executable and arguments as written; split on blanks when run.
    pub command: String,
    #[serde(default)]
    pub defer: Option<(i32, u64)>,
    #[serde(default)]
    pub debug: Option<(String, Capture)>,
}

/// One `VARS` macro.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Var {
    pub key: String,
    pub value: String,
    /// Defined before the submit description is read (else after).
    pub prepend: bool,
}

/// `TOLERANCE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tolerance {
    pub value: u32,
    pub percent: bool,
    pub mode: Option<ToleranceMode>,
}

/// One parent of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Parent {
    pub node: u32,
    pub kind: EdgeKind,
}

/// One node, fully resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// The full name (`Splice+Inner` inside splices, `N.name` when several
    /// DAG files were submitted as one).
    pub name: String,
    pub kind: NodeKind,
    pub submit: Submit,
    /// Absolute directory the node's jobs are submitted from and its
    /// scripts run in.
    pub dir: String,
    #[serde(default)]
    pub noop: bool,
    /// Declared done (`JOB … DONE`, `DONE`, or a rescue file's `DONE`).
    #[serde(default)]
    pub done: bool,
    #[serde(default)]
    pub scripts: BTreeMap<ScriptKind, Script>,
    #[serde(default)]
    pub pre_skip: Option<i32>,
    #[serde(default)]
    pub retries: u32,
    #[serde(default)]
    pub unless_exit: Option<i32>,
    /// `ABORT-DAG-ON status [RETURN code]`.
    #[serde(default)]
    pub abort_on: Option<(i32, Option<u8>)>,
    #[serde(default)]
    pub vars: Vec<Var>,
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub save_point: Option<String>,
    #[serde(default)]
    pub tolerance: Option<Tolerance>,
    /// Parents, ascending by index.
    #[serde(default)]
    pub parents: Vec<Parent>,
    /// Children (all kinds), ascending by index.
    #[serde(default)]
    pub children: Vec<u32>,
    /// A join node DAGMan inserts for `PARENT a b CHILD c d`.
    #[serde(default)]
    pub join: bool,
    /// Where the node was declared.
    pub loc: Loc,
}

impl NodeSpec {
    pub fn script(&self, kind: ScriptKind) -> Option<&Script> {
        self.scripts.get(&kind)
    }
}

/// `DOT`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DotSpec {
    pub file: String,
    pub update: bool,
    pub overwrite: bool,
    pub include: Option<String>,
}

/// `NODE_STATUS_FILE`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusFileSpec {
    pub file: String,
    /// Seconds between rewrites at least (DAGMan's default: 60).
    pub min_update: u64,
    pub always_update: bool,
}

/// `ENV SET`/`ENV GET`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvSpec {
    /// `ENV SET k=v;…` pairs.
    #[serde(default)]
    pub set: Vec<(String, String)>,
    /// `ENV GET` names: taken from the submitter's environment.
    #[serde(default)]
    pub get: Vec<String>,
}

/// A warning found while loading (the DAG still runs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub loc: Loc,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: warning: {}", self.loc, self.message)
    }
}

/// A whole DAG, as the DAG manager runs it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DagSpec {
    /// The DAG files submitted (absolute), the primary one first.
    pub files: Vec<String>,
    /// The directory relative paths are taken from (condor_submit_dag's
    /// working directory).
    pub cwd: String,
    pub nodes: Vec<NodeSpec>,
    /// `MAXJOBS` per category.
    #[serde(default)]
    pub maxjobs: BTreeMap<String, u32>,
    /// `CONFIG` (absolute).
    #[serde(default)]
    pub config: Option<String>,
    #[serde(default)]
    pub set_job_attrs: Vec<(String, String)>,
    #[serde(default)]
    pub env: EnvSpec,
    #[serde(default)]
    pub dot: Option<DotSpec>,
    #[serde(default)]
    pub status_file: Option<StatusFileSpec>,
    #[serde(default)]
    pub jobstate_log: Option<String>,
    /// `REJECT`: where. A rejected DAG does not run.
    #[serde(default)]
    pub reject: Option<Loc>,
    /// A dependency cycle, if the DAG has one: where and which.
    #[serde(default)]
    pub cycle: Option<Warning>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

impl DagSpec {
    /// The node named `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The FINAL node, if any.
    pub fn final_node(&self) -> Option<usize> {
        self.nodes.iter().position(|n| n.kind == NodeKind::Final)
    }

    /// Nodes a user declared (join nodes left out).
    pub fn user_nodes(&self) -> impl Iterator<Item = (usize, &NodeSpec)> {
        self.nodes.iter().enumerate().filter(|(_, n)| !n.join)
    }
}
