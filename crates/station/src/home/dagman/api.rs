//! What `glean dag` sends and receives (`/v1/dags`).

use gleaner_core::dag::{Rescue, RescueRetries};
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use gleaner_proto::submit::ClusterSubmission;
use gleaner_proto::wire::PROTOCOL_VERSION;
use serde::{Deserialize, Serialize};

/// One node's parsed submit description, as `glean dag submit` sends it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagNodeSubmit {
    pub name: String,
    pub submission: ClusterSubmission,
    /// Absolute directory of the node's submit file (relative `initialdir`
    /// and transfer paths resolve against it).
    #[serde(default)]
    pub submit_dir: Option<String>,
}

fn current_version() -> u32 {
    PROTOCOL_VERSION
}

/// `POST /v1/dags`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagSubmitBody {
    #[serde(default = "current_version")]
    pub protocol: u32,
    /// Absolute path of the DAG file (rescue files point at it).
    pub dag_file: String,
    /// The DAG file's text; the station parses it again.
    pub dag_text: String,
    /// Every node's submit description, exactly one per `JOB` line.
    pub nodes: Vec<DagNodeSubmit>,
    /// Resume from this rescue record.
    #[serde(default)]
    pub rescue: Option<Rescue>,
    /// How the rescue's failed attempts count (default: a fresh budget, as
    /// DAGMan's rescue DAGs).
    #[serde(default = "default_retries")]
    pub rescue_retries: RescueRetries,
}

fn default_retries() -> RescueRetries {
    RescueRetries::Reset
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DagSubmitResponse {
    pub id: u64,
    pub nodes: usize,
    /// Nodes already done (from the rescue record).
    pub done: usize,
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
    /// waiting | ready | submitted | running | done | failed
    pub status: String,
    /// Attempts that ended in failure.
    pub failures: u32,
    pub retries: u32,
    /// Cluster of every attempt, oldest first.
    pub clusters: Vec<u64>,
    /// Earliest start and latest end of the last attempt's jobs.
    pub started_at: Option<Time>,
    pub finished_at: Option<Time>,
    pub data_parents: Vec<String>,
    pub priority_parents: Vec<String>,
}

/// `GET /v1/dags/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagStatus {
    pub id: u64,
    pub owner: String,
    pub dag_file: String,
    pub state: DagState,
    pub submitted_at: Time,
    pub finished_at: Option<Time>,
    pub rescue_file: Option<String>,
    pub message: String,
    pub nodes: Vec<DagNodeStatus>,
}

/// `POST /v1/dags/{id}/rm`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DagRmResponse {
    pub id: u64,
    pub removed_jobs: Vec<JobId>,
    pub rescue_file: Option<String>,
}
