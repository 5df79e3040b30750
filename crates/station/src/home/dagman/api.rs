//! What `glean dag` sends and receives (`/v1/dags`).

use super::prepare::{DagOptions, RescueUsed};
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::PROTOCOL_VERSION;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

fn current_version() -> u32 {
    PROTOCOL_VERSION
}

/// `POST /v1/dags`: condor_submit_dag. The station reads the DAG files
/// (and the files they name) itself, as the caller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagSubmitBody {
    #[serde(default = "current_version")]
    pub protocol: u32,
    /// The DAG files as given (relative ones are taken from `cwd`).
    pub files: Vec<String>,
    /// condor_submit_dag's working directory (absolute).
    pub cwd: String,
    #[serde(default)]
    pub options: DagOptions,
    /// The submitter's environment (`ENV GET`, `-include_env`,
    /// `-import_env`, `$ENV()` in submit files).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DagSubmitResponse {
    /// The DAG's id: its DAGMan job's cluster (`DAGManJobId`).
    pub id: u64,
    pub nodes: usize,
    /// Nodes already done (DONE, or from the rescue DAG).
    pub done: usize,
    #[serde(default)]
    pub rescue: Option<RescueUsed>,
    /// Warnings (file:line: message).
    #[serde(default)]
    pub notes: Vec<String>,
    /// `FILE.dagman.out`.
    #[serde(default)]
    pub dagman_out: String,
}

/// A DAG's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DagState {
    Running,
    Done,
    Failed,
    Removed,
}

impl DagState {
    pub fn name(self) -> &'static str {
        match self {
            DagState::Running => "running",
            DagState::Done => "done",
            DagState::Failed => "failed",
            DagState::Removed => "removed",
        }
    }
    pub(super) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => DagState::Running,
            "done" => DagState::Done,
            "failed" => DagState::Failed,
            "removed" => DagState::Removed,
            _ => return None,
        })
    }
}

/// One node as `glean dag status` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagNodeStatus {
    pub name: String,
    /// waiting | ready | pre | submitted | running | post | done | failed
    /// | futile
    pub status: String,
    /// DAGMan's `NodeStatus` (0–7).
    pub node_status: u8,
    /// Retries used.
    pub retries: u32,
    pub max_retries: u32,
    /// Attempts that ended in failure (retries used, plus one if it failed).
    pub failures: u32,
    /// Cluster of every attempt, oldest first.
    pub clusters: Vec<u64>,
    /// Earliest start and latest end of the last attempt's jobs.
    pub started_at: Option<Time>,
    pub finished_at: Option<Time>,
    /// Strong and weak parents.
    pub data_parents: Vec<String>,
    /// `PRIORITY_PARENT` parents.
    pub priority_parents: Vec<String>,
    /// Why it failed.
    #[serde(default)]
    pub error: String,
}

/// `GET /v1/dags/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagStatus {
    pub id: u64,
    pub owner: String,
    /// The primary DAG file.
    pub dag_file: String,
    pub files: Vec<String>,
    pub state: DagState,
    /// condor_dagman's exit code, once over.
    pub exit_code: Option<i32>,
    /// `DAG_Status`.
    pub dag_status: i32,
    pub submitted_at: Time,
    pub finished_at: Option<Time>,
    pub rescue_file: Option<String>,
    pub message: String,
    pub nodes_total: usize,
    pub nodes_done: usize,
    pub nodes_failed: usize,
    pub nodes: Vec<DagNodeStatus>,
}

/// `POST /v1/dags/{id}/rm`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagRmResponse {
    pub id: u64,
    pub removed_jobs: Vec<JobId>,
    pub rescue_file: Option<String>,
}
