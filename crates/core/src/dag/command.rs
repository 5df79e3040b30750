//! One DAG file's commands as written, before includes, splices and
//! `ALL_NODES` are resolved (HTCondor 25's DAG language; reference
//! `docs/automated-workflows/dagman-reference.rst` in HTCondor's sources,
//! summarised in `docs/dag-format.md`).

use serde::{Deserialize, Serialize};

/// The kinds of node a DAG declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// `JOB`: a node running a cluster of jobs.
    Job,
    /// `FINAL`: runs last, whatever happened before.
    Final,
    /// `PROVISIONER`: runs first; the rest waits until its job says it has
    /// provisioned.
    Provisioner,
    /// `SERVICE`: runs beside the DAG, removed when the DAG ends.
    Service,
    /// `SUBDAG EXTERNAL`: a node whose job is another DAG.
    Subdag,
}

impl NodeKind {
    pub fn keyword(self) -> &'static str {
        match self {
            NodeKind::Job => "JOB",
            NodeKind::Final => "FINAL",
            NodeKind::Provisioner => "PROVISIONER",
            NodeKind::Service => "SERVICE",
            NodeKind::Subdag => "SUBDAG",
        }
    }
}

/// A node's submit description as the `JOB` line gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubmitRef {
    /// A file name, or the name of a `SUBMIT-DESCRIPTION` (resolved when
    /// the DAG is loaded), or a sub-DAG's DAG file.
    Name(String),
    /// An inline description (`JOB a { … }`).
    Inline(String),
}

/// `JOB`, `FINAL`, `PROVISIONER`, `SERVICE`, `SUBDAG EXTERNAL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCmd {
    pub kind: NodeKind,
    pub name: String,
    pub submit: SubmitRef,
    pub dir: Option<String>,
    pub noop: bool,
    pub done: bool,
}

/// The three script types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptKind {
    Pre,
    Post,
    Hold,
}

impl ScriptKind {
    pub fn name(self) -> &'static str {
        match self {
            ScriptKind::Pre => "PRE",
            ScriptKind::Post => "POST",
            ScriptKind::Hold => "HOLD",
        }
    }
}

/// Which of a script's output streams `DEBUG` captures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capture {
    Stdout,
    Stderr,
    All,
}

/// `SCRIPT [DEFER status time] [DEBUG file type] PRE|POST|HOLD node cmd…`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptCmd {
    pub kind: ScriptKind,
    pub node: String,
    /// The executable and its arguments, as written.
    pub command: String,
    /// Run again after `time` seconds when it exits with `status`.
    pub defer: Option<(i32, u64)>,
    pub debug: Option<(String, Capture)>,
}

/// The dependence a `PARENT … CHILD …` line declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// `PARENT`: the child runs after the parent succeeded.
    Strong,
    /// `WEAK PARENT`: the child runs after the parent finished, either way.
    Weak,
    /// Gleaner's `PRIORITY_PARENT` (DMW): the child runs once the parent
    /// has started.
    Priority,
}

/// Where `VARS` puts its macros relative to the submit description.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    Prepend,
    Append,
}

/// `TOLERANCE`'s mode for the rest of a failed job list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToleranceMode {
    FailFast,
    Wait,
}

/// One command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Node(NodeCmd),
    SubmitDescription {
        name: String,
        text: String,
    },
    Splice {
        name: String,
        file: String,
        dir: Option<String>,
    },
    ParentChild {
        kind: EdgeKind,
        parents: Vec<String>,
        children: Vec<String>,
    },
    Script(ScriptCmd),
    Retry {
        node: String,
        max: u32,
        unless_exit: Option<i32>,
    },
    AbortDagOn {
        node: String,
        status: i32,
        ret: Option<u8>,
    },
    Vars {
        node: String,
        placement: Option<Placement>,
        pairs: Vec<(String, String)>,
    },
    Priority {
        node: String,
        prio: i32,
    },
    PreSkip {
        node: String,
        code: i32,
    },
    Tolerance {
        node: String,
        value: u32,
        percent: bool,
        mode: Option<ToleranceMode>,
    },
    Done {
        node: String,
    },
    Category {
        node: String,
        category: String,
    },
    MaxJobs {
        category: String,
        limit: u32,
    },
    Config {
        file: String,
    },
    Include {
        file: String,
    },
    Dot {
        file: String,
        update: bool,
        overwrite: bool,
        include: Option<String>,
    },
    NodeStatusFile {
        file: String,
        min_update: Option<u64>,
        always_update: bool,
    },
    JobstateLog {
        file: String,
    },
    SavePointFile {
        node: String,
        file: Option<String>,
    },
    SetJobAttr {
        name: String,
        value: String,
    },
    Env {
        set: bool,
        text: String,
    },
    Reject,
    Connect {
        from: String,
        to: String,
    },
    Pin {
        node: String,
        pin: u32,
        out: bool,
    },
}

impl Command {
    /// The keyword that wrote it, for messages.
    pub fn keyword(&self) -> &'static str {
        match self {
            Command::Node(n) => n.kind.keyword(),
            Command::SubmitDescription { .. } => "SUBMIT-DESCRIPTION",
            Command::Splice { .. } => "SPLICE",
            Command::ParentChild { kind, .. } => match kind {
                EdgeKind::Strong => "PARENT",
                EdgeKind::Weak => "WEAK PARENT",
                EdgeKind::Priority => "PRIORITY_PARENT",
            },
            Command::Script(_) => "SCRIPT",
            Command::Retry { .. } => "RETRY",
            Command::AbortDagOn { .. } => "ABORT-DAG-ON",
            Command::Vars { .. } => "VARS",
            Command::Priority { .. } => "PRIORITY",
            Command::PreSkip { .. } => "PRE_SKIP",
            Command::Tolerance { .. } => "TOLERANCE",
            Command::Done { .. } => "DONE",
            Command::Category { .. } => "CATEGORY",
            Command::MaxJobs { .. } => "MAXJOBS",
            Command::Config { .. } => "CONFIG",
            Command::Include { .. } => "INCLUDE",
            Command::Dot { .. } => "DOT",
            Command::NodeStatusFile { .. } => "NODE_STATUS_FILE",
            Command::JobstateLog { .. } => "JOBSTATE_LOG",
            Command::SavePointFile { .. } => "SAVE_POINT_FILE",
            Command::SetJobAttr { .. } => "SET_JOB_ATTR",
            Command::Env { .. } => "ENV",
            Command::Reject => "REJECT",
            Command::Connect { .. } => "CONNECT",
            Command::Pin { out: false, .. } => "PIN_IN",
            Command::Pin { out: true, .. } => "PIN_OUT",
        }
    }
}

/// A command and the line it starts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub line: usize,
    pub cmd: Command,
}
