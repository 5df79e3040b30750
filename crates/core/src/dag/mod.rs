//! Job DAGs: HTCondor DAGMan's language and its run, as pure code, so the
//! station's DAG manager, `glean dag submit --dry-run` and the tests share
//! one implementation; plus the dependence graph of DMW's scheduler.
//!
//! - [`lexer`], [`parse`], [`command`]: one DAG file's lines and tokens
//!   into commands, every error with its line (HTCondor 25's grammar and
//!   Gleaner's `PRIORITY_PARENT`);
//! - [`load`]: files into one [`spec::DagSpec`] (includes, splices,
//!   `ALL_NODES`, pins, join nodes, several DAG files as one, rescue files
//!   laid over it), file reading injected;
//! - [`config`]: the `DAGMAN_*` knobs a DAG's `CONFIG` file sets;
//! - [`run`]: a DAG's run as a state machine: events in (a script exited,
//!   a job was submitted, started, held, ended, time passed), actions out
//!   (run a script, submit a node, remove jobs, write the rescue DAG,
//!   finish), so the daemon and the tests drive the same code;
//! - [`macros`]: script arguments (`$JOB`, `$RETURN` …) and the macros a
//!   node's submit description sees (`$(JOB)`, `$(RETRY)` …);
//! - [`rescue`]: rescue DAGs in DAGMan's format and naming;
//! - [`files`]: DAGMan's other files (node status file, jobstate log,
//!   metrics, dot file, `dagman.out` lines);
//! - [`graph`]: DMW's dependence graph (data and priority dependences,
//!   depth-first eligibility) that `glean sim dmw` runs.
//!
//! The language is described in `docs/dag-format.md`.

pub mod command;
pub mod config;
pub mod files;
pub mod graph;
pub mod lexer;
pub mod load;
pub mod macros;
pub mod parse;
pub mod rescue;
pub mod run;
pub mod spec;

pub use command::{EdgeKind, NodeKind, ScriptKind};
pub use config::DagConfig;
pub use graph::{
    Dag, DagBuilder, DagError, Dependence, Node, NodeId, NodeState, Order, Progress, RescueRetries,
    must_start_regardless_of_load,
};
pub use load::{Files, LoadError, LoadErrors, LoadOptions, apply_rescue, load};
pub use spec::{DagSpec, NodeSpec};
