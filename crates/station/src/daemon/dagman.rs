//! The DAG manager: runs job DAGs (`glean dag submit`) on the user's home
//! station.
//!
//! A DAG is a schedule of jobs with DMW's two dependence kinds (Neeracher
//! 1998, seeds/001_c7470f9b5ea54797.txt L391, L996–1012; format in
//! `docs/dag-format.md`):
//! - a node's jobs enter this station's queue only after every **data**
//!   parent's jobs all completed with exit code 0;
//! - and not before every **priority** parent's jobs *started* running
//!   (some proc of its cluster has a start time).
//!
//! Eligibility is the core's [`Dag`], unchanged. The manager keeps each
//! DAG's nodes in two tables of the queue's own SQLite database, so that
//! submitting a node's cluster and recording it on the node commit in one
//! transaction ([`JobQueue::submit_linked`]); every other state change of a
//! node or DAG is one transaction too. After a crash (even SIGKILL) the
//! manager rebuilds every running DAG from these rows and the job queue and
//! carries on: nothing is submitted twice and nothing is lost.
//!
//! A failed attempt is retried while the node's `RETRY` budget lasts. When a
//! DAG fails (a node failed for good and nothing else can run) or is
//! removed, the manager writes a rescue file (`<dag file>.rescue`, or under
//! the station's state directory if that is not writable) naming the DAG
//! file, the nodes done and the attempts used; `glean dag submit` of the
//! rescue file resumes there.

use super::{ApiError, Station, body, may_act_on, now, parse_json, shadow};
use crate::queue::{JobFilter, JobQueue, JobRecord, QueueError};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gleaner_core::dag::{Dag, JobSpec, NodeId, NodeState, Rescue, RescueRetries, parse_dag};
use gleaner_core::time::Time;
use gleaner_proto::auth::Claims;
use gleaner_proto::job::{JobId, JobState};
use gleaner_proto::submit::ClusterSubmission;
use gleaner_proto::wire::{ErrorCode, PROTOCOL_VERSION, check_version};
use rusqlite::{TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The manager's tables, created next to the job queue's (a separate block
/// so that other modules' migrations stay independent).
const DAG_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dags (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    owner        TEXT NOT NULL,
    dag_file     TEXT NOT NULL,          -- absolute path on this machine
    dag_text     TEXT NOT NULL,          -- the DAG file as submitted
    state        TEXT NOT NULL,          -- running | done | failed | removed
    submitted_at INTEGER NOT NULL,
    finished_at  INTEGER,
    rescue_file  TEXT,
    message      TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS dag_nodes (
    dag        INTEGER NOT NULL,
    name       TEXT NOT NULL,
    submission TEXT NOT NULL,            -- ClusterSubmission as JSON
    submit_dir TEXT,
    status     TEXT NOT NULL,            -- pending | submitted | running | done | failed
    failures   INTEGER NOT NULL DEFAULT 0,
    cluster    INTEGER,                  -- the current (or last) attempt
    clusters   TEXT NOT NULL DEFAULT '', -- every attempt, comma-separated
    PRIMARY KEY (dag, name)
);
CREATE INDEX IF NOT EXISTS dags_by_state ON dags (state, id);
";

/// Creates the manager's tables if missing.
pub fn init(q: &mut JobQueue) -> Result<(), QueueError> {
    q.conn_mut()
        .execute_batch(&format!("BEGIN IMMEDIATE; {DAG_SCHEMA} COMMIT;"))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// API types
// ---------------------------------------------------------------------------

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
    fn parse(s: &str) -> Option<Self> {
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

// ---------------------------------------------------------------------------
// Store
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Pending,
    Submitted,
    Running,
    Done,
    Failed,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Submitted => "submitted",
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Status::Pending,
            "submitted" => Status::Submitted,
            "running" => Status::Running,
            "done" => Status::Done,
            "failed" => Status::Failed,
            _ => return None,
        })
    }
}

struct DagRow {
    id: i64,
    owner: String,
    dag_file: String,
    dag_text: String,
    state: DagState,
    submitted_at: i64,
    finished_at: Option<i64>,
    rescue_file: Option<String>,
    message: String,
}

struct NodeRow {
    name: String,
    submission: String,
    submit_dir: Option<String>,
    status: Status,
    failures: u32,
    cluster: Option<u64>,
    clusters: Vec<u64>,
}

fn corrupt(what: impl Into<String>) -> QueueError {
    QueueError::Corrupt {
        job: JobId::new(0, 0),
        reason: what.into(),
    }
}

fn time_sql(t: Time) -> Result<i64, QueueError> {
    i64::try_from(t.as_micros()).map_err(|_| QueueError::Range("time"))
}

fn time_from(v: i64) -> Time {
    Time::from_micros(u64::try_from(v).unwrap_or(0))
}

fn load_dags(q: &mut JobQueue, state: Option<DagState>) -> Result<Vec<DagRow>, QueueError> {
    let conn = q.conn_mut();
    let mut stmt = conn.prepare_cached(
        "SELECT id, owner, dag_file, dag_text, state, submitted_at, finished_at, rescue_file, \
         message FROM dags WHERE (?1 IS NULL OR state = ?1) ORDER BY id",
    )?;
    let rows = stmt.query_map(params![state.map(DagState::name)], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, i64>(5)?,
            r.get::<_, Option<i64>>(6)?,
            r.get::<_, Option<String>>(7)?,
            r.get::<_, String>(8)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, owner, dag_file, dag_text, state, submitted_at, finished_at, rescue_file, message) =
            row?;
        let state = DagState::parse(&state)
            .ok_or_else(|| corrupt(format!("DAG {id}: unknown state {state:?}")))?;
        out.push(DagRow {
            id,
            owner,
            dag_file,
            dag_text,
            state,
            submitted_at,
            finished_at,
            rescue_file,
            message,
        });
    }
    Ok(out)
}

fn load_dag(q: &mut JobQueue, id: u64) -> Result<Option<DagRow>, QueueError> {
    let id = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    Ok(load_dags(q, None)?.into_iter().find(|d| d.id == id))
}

fn load_nodes(q: &mut JobQueue, dag: i64) -> Result<Vec<NodeRow>, QueueError> {
    let conn = q.conn_mut();
    let mut stmt = conn.prepare_cached(
        "SELECT name, submission, submit_dir, status, failures, cluster, clusters \
         FROM dag_nodes WHERE dag = ?1 ORDER BY rowid",
    )?;
    let rows = stmt.query_map(params![dag], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, u32>(4)?,
            r.get::<_, Option<i64>>(5)?,
            r.get::<_, String>(6)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (name, submission, submit_dir, status, failures, cluster, clusters) = row?;
        let status = Status::parse(&status)
            .ok_or_else(|| corrupt(format!("DAG {dag} node {name}: status {status:?}")))?;
        let clusters = clusters
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<u64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| corrupt(format!("DAG {dag} node {name}: bad cluster list")))?;
        out.push(NodeRow {
            name,
            submission,
            submit_dir,
            status,
            failures,
            cluster: cluster.and_then(|c| u64::try_from(c).ok()),
            clusters,
        });
    }
    Ok(out)
}

/// Rebuilds the core DAG's state from the stored rows: done and failed
/// nodes and failed attempts through a rescue record, then the nodes whose
/// current attempt has started, parents first.
fn restore(text: &str, rows: &[NodeRow]) -> Result<Dag<JobSpec>, String> {
    let mut dag = parse_dag(text).map_err(|e| e.to_string())?;
    let rescue = Rescue {
        dag: None,
        done: rows
            .iter()
            .filter(|r| r.status == Status::Done)
            .map(|r| r.name.clone())
            .collect(),
        attempts: rows
            .iter()
            .filter(|r| r.failures > 0)
            .map(|r| (r.name.clone(), r.failures))
            .collect(),
    };
    dag.apply_rescue(&rescue, RescueRetries::Keep)
        .map_err(|e| e.to_string())?;
    let mut running: Vec<NodeId> = rows
        .iter()
        .filter(|r| r.status == Status::Running)
        .filter_map(|r| dag.id(&r.name))
        .collect();
    running.sort_by_key(|&i| (dag.depth(i), i));
    for id in running {
        dag.on_started(id).map_err(|e| e.to_string())?;
    }
    Ok(dag)
}

fn update_node(
    q: &mut JobQueue,
    dag: i64,
    name: &str,
    status: Status,
    failures: u32,
) -> Result<(), QueueError> {
    let tx = q
        .conn_mut()
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "UPDATE dag_nodes SET status = ?3, failures = ?4 WHERE dag = ?1 AND name = ?2",
        params![dag, name, status.name(), failures],
    )?;
    tx.commit()?;
    Ok(())
}

fn finish_dag(
    q: &mut JobQueue,
    dag: i64,
    state: DagState,
    message: &str,
    at: Time,
) -> Result<bool, QueueError> {
    let now = time_sql(at)?;
    let tx = q
        .conn_mut()
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    let n = tx.execute(
        "UPDATE dags SET state = ?2, finished_at = ?3, message = ?4 \
         WHERE id = ?1 AND state = 'running'",
        params![dag, state.name(), now, message],
    )?;
    tx.commit()?;
    Ok(n == 1)
}

fn set_rescue_file(q: &mut JobQueue, dag: i64, path: &str) -> Result<(), QueueError> {
    let tx = q
        .conn_mut()
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "UPDATE dags SET rescue_file = ?2 WHERE id = ?1",
        params![dag, path],
    )?;
    tx.commit()?;
    Ok(())
}

/// Writes the rescue record next to the DAG file, or under `fallback_dir`
/// if that fails; records and returns the path.
fn write_rescue(
    q: &mut JobQueue,
    row: &DagRow,
    dag: &Dag<JobSpec>,
    fallback_dir: &std::path::Path,
) -> Result<Option<String>, QueueError> {
    let mut r = dag.rescue();
    r.dag = Some(row.dag_file.clone());
    let text = r.to_text();
    let beside = PathBuf::from(format!("{}.rescue", row.dag_file));
    let fallback = fallback_dir.join(format!("dag-{}.rescue", row.id));
    let written = match std::fs::write(&beside, &text) {
        Ok(()) => Some(beside),
        Err(e) => {
            tracing::warn!(path = %beside.display(), error = %e, "cannot write rescue file beside the DAG; using the state directory");
            match std::fs::create_dir_all(fallback_dir)
                .and_then(|()| std::fs::write(&fallback, &text))
            {
                Ok(()) => Some(fallback),
                Err(e) => {
                    tracing::error!(path = %fallback.display(), error = %e, "cannot write rescue file");
                    None
                }
            }
        }
    };
    let path = written.map(|p| p.display().to_string());
    if let Some(p) = &path {
        set_rescue_file(q, row.id, p)?;
    }
    Ok(path)
}

/// Validates a submission and stores it as a running DAG, in one
/// transaction. Errors name the DAG file and line, or the node.
pub fn submit(
    q: &mut JobQueue,
    owner: &str,
    mut body: DagSubmitBody,
    at: Time,
) -> Result<DagSubmitResponse, ApiError> {
    check_version(body.protocol).map_err(ApiError)?;
    if !body.dag_file.starts_with('/') {
        return Err(ApiError::bad(
            "dag_file",
            format!("dag_file must be an absolute path, got {:?}", body.dag_file),
        ));
    }
    let mut dag = parse_dag(&body.dag_text).map_err(|errs| {
        let lines: Vec<String> = errs
            .0
            .iter()
            .map(|e| format!("{}:{}: {}", body.dag_file, e.line, e.kind))
            .collect();
        ApiError::bad("dag_text", lines.join("\n"))
    })?;
    let mut by_name: BTreeMap<String, DagNodeSubmit> = BTreeMap::new();
    for n in body.nodes.drain(..) {
        if dag.id(&n.name).is_none() {
            return Err(ApiError::bad(
                "nodes",
                format!("node {:?} is not in {}", n.name, body.dag_file),
            ));
        }
        if let Some(d) = &n.submit_dir
            && !d.starts_with('/')
        {
            return Err(ApiError::bad(
                "submit_dir",
                format!("node {}: submit_dir must be absolute, got {d:?}", n.name),
            ));
        }
        if by_name.contains_key(&n.name) {
            return Err(ApiError::bad(
                "nodes",
                format!("node {:?} given twice", n.name),
            ));
        }
        by_name.insert(n.name.clone(), n);
    }
    if let Some(missing) = dag.nodes().iter().find(|n| !by_name.contains_key(&n.name)) {
        return Err(ApiError::bad(
            "nodes",
            format!("no submit description for node {:?}", missing.name),
        ));
    }
    if dag.is_empty() {
        return Err(ApiError::bad(
            "dag_text",
            format!("{}: the DAG has no JOB lines", body.dag_file),
        ));
    }
    if let Some(r) = &body.rescue {
        dag.apply_rescue(r, body.rescue_retries)
            .map_err(|e| ApiError::bad("rescue", format!("rescue record: {e}")))?;
    }
    let now_sql = time_sql(at)?;
    let tx = q
        .conn_mut()
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(QueueError::from)?;
    tx.execute(
        "INSERT INTO dags (owner, dag_file, dag_text, state, submitted_at) \
         VALUES (?1, ?2, ?3, 'running', ?4)",
        params![owner, body.dag_file, body.dag_text, now_sql],
    )
    .map_err(QueueError::from)?;
    let id = tx.last_insert_rowid();
    let mut done = 0;
    for (i, node) in dag.nodes().iter().enumerate() {
        let Some(n) = by_name.get_mut(&node.name) else {
            continue;
        };
        // The owner is who the token says, never what the body claims.
        n.submission.owner = owner.to_string();
        let json = serde_json::to_string(&n.submission)
            .map_err(|e| ApiError::bad("nodes", format!("node {}: {e}", n.name)))?;
        let status = match dag.state(i) {
            Some(NodeState::Done) => {
                done += 1;
                Status::Done
            }
            Some(NodeState::Failed { .. }) => Status::Failed,
            _ => Status::Pending,
        };
        tx.execute(
            "INSERT INTO dag_nodes (dag, name, submission, submit_dir, status, failures) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                id,
                n.name,
                json,
                n.submit_dir,
                status.name(),
                dag.failures(i).unwrap_or(0)
            ],
        )
        .map_err(QueueError::from)?;
    }
    tx.commit().map_err(QueueError::from)?;
    Ok(DagSubmitResponse {
        id: u64::try_from(id).unwrap_or(0),
        nodes: dag.len(),
        done,
    })
}

/// What one pass of the manager did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TickReport {
    /// Jobs submitted into the queue, per node: (dag, node, jobs).
    pub submitted: Vec<(u64, String, Vec<JobId>)>,
    /// DAGs that finished in this pass, with their new state.
    pub finished: Vec<(u64, DagState)>,
    /// DAGs that were running at the start of this pass.
    pub running: usize,
}

/// One pass over every running DAG: observe the jobs of submitted nodes,
/// record starts, ends and retries, finish DAGs, and submit the nodes that
/// became eligible. Every change is its own transaction, so a crash at any
/// point leaves a state the next pass continues from.
pub fn tick(
    q: &mut JobQueue,
    at: Time,
    rescue_dir: &std::path::Path,
) -> Result<TickReport, QueueError> {
    let mut report = TickReport::default();
    let rows = load_dags(q, Some(DagState::Running))?;
    report.running = rows.len();
    for row in rows {
        if let Err(e) = tick_one(q, &row, at, rescue_dir, &mut report) {
            tracing::error!(dag = row.id, error = %e, "DAG manager pass failed");
        }
    }
    Ok(report)
}

fn cluster_jobs(q: &JobQueue, cluster: u64) -> Result<Vec<JobRecord>, QueueError> {
    q.list(&JobFilter {
        cluster: Some(cluster),
        ..Default::default()
    })
}

fn tick_one(
    q: &mut JobQueue,
    row: &DagRow,
    at: Time,
    rescue_dir: &std::path::Path,
    report: &mut TickReport,
) -> Result<(), QueueError> {
    let dag_id = u64::try_from(row.id).unwrap_or(0);
    let mut nodes = load_nodes(q, row.id)?;
    let mut dag = match restore(&row.dag_text, &nodes) {
        Ok(d) => d,
        Err(e) => {
            finish_dag(
                q,
                row.id,
                DagState::Failed,
                &format!("cannot restore: {e}"),
                at,
            )?;
            report.finished.push((dag_id, DagState::Failed));
            return Ok(());
        }
    };

    // 1. Observe the jobs of submitted and running nodes.
    for n in &mut nodes {
        if !matches!(n.status, Status::Submitted | Status::Running) {
            continue;
        }
        let (Some(cluster), Some(id)) = (n.cluster, dag.id(&n.name)) else {
            continue;
        };
        let jobs = cluster_jobs(q, cluster)?;
        let started = jobs
            .iter()
            .any(|j| j.started_at.is_some() || j.run_count > 0);
        let ended = !jobs.is_empty() && jobs.iter().all(|j| j.state.is_terminal());
        if n.status == Status::Submitted && (started || ended) {
            // A priority child may go as soon as this is recorded (L391).
            update_node(q, row.id, &n.name, Status::Running, n.failures)?;
            n.status = Status::Running;
            if dag.on_started(id).is_err() {
                tracing::warn!(dag = row.id, node = %n.name, "start of a node that was not ready");
            }
        }
        if ended {
            // Data children need success: every proc completed with exit 0
            // (L998, L1896).
            let ok = jobs
                .iter()
                .all(|j| j.state == JobState::Completed { exit_code: 0 });
            let new = match dag.on_finished(id, ok) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(dag = row.id, node = %n.name, error = %e, "end of a node that was not running");
                    continue;
                }
            };
            let failures = dag.failures(id).unwrap_or(n.failures);
            let status = match new {
                NodeState::Done => Status::Done,
                NodeState::Failed { .. } => Status::Failed,
                _ => Status::Pending,
            };
            update_node(q, row.id, &n.name, status, failures)?;
            n.status = status;
            n.failures = failures;
            tracing::info!(dag = row.id, node = %n.name, ok, status = status.name(), "DAG node attempt ended");
        }
    }

    // 2. Done, or stuck behind a node that failed for good?
    if dag.is_complete() {
        if finish_dag(q, row.id, DagState::Done, "", at)? {
            report.finished.push((dag_id, DagState::Done));
            tracing::info!(dag = row.id, "DAG done");
        }
        return Ok(());
    }
    if dag.is_stuck() {
        let failed: Vec<String> = nodes
            .iter()
            .filter(|n| n.status == Status::Failed)
            .map(|n| format!("{} after {} attempt(s)", n.name, n.failures))
            .collect();
        let msg = format!("failed: {}", failed.join(", "));
        if finish_dag(q, row.id, DagState::Failed, &msg, at)? {
            write_rescue(q, row, &dag, rescue_dir)?;
            report.finished.push((dag_id, DagState::Failed));
            tracing::warn!(dag = row.id, %msg, "DAG failed");
        }
        return Ok(());
    }

    // 3. Submit what became eligible, in the DAG's order.
    let pending: BTreeSet<&str> = nodes
        .iter()
        .filter(|n| n.status == Status::Pending)
        .map(|n| n.name.as_str())
        .collect();
    let by_name: HashMap<&str, &NodeRow> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    for id in dag.eligible() {
        let Some(node) = dag.node(id) else { continue };
        if !pending.contains(node.name.as_str()) {
            continue;
        }
        let Some(n) = by_name.get(node.name.as_str()) else {
            continue;
        };
        let sub: ClusterSubmission = match serde_json::from_str(&n.submission) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!("node {}: stored submission unreadable: {e}", n.name);
                if finish_dag(q, row.id, DagState::Failed, &msg, at)? {
                    write_rescue(q, row, &dag, rescue_dir)?;
                    report.finished.push((dag_id, DagState::Failed));
                }
                return Ok(());
            }
        };
        let owner = row.owner.clone();
        let submit_dir = n.submit_dir.clone();
        let name = n.name.clone();
        let dag_row = row.id;
        let ids = q.submit_linked(
            at,
            |cluster| {
                let mut descs = sub.expand(cluster)?;
                for d in &mut descs {
                    d.owner = owner.clone();
                    d.iwd = super::user::resolve_iwd(d.iwd.as_deref(), submit_dir.as_deref());
                }
                Ok(descs)
            },
            |tx, ids| {
                let cluster = ids.first().map_or(0, |j| j.cluster);
                let changed = tx.execute(
                    "UPDATE dag_nodes SET status = 'submitted', cluster = ?3, \
                     clusters = CASE WHEN clusters = '' THEN ?4 ELSE clusters || ',' || ?4 END \
                     WHERE dag = ?1 AND name = ?2 AND status = 'pending'",
                    params![
                        dag_row,
                        name,
                        i64::try_from(cluster).map_err(|_| QueueError::Range("cluster id"))?,
                        cluster.to_string()
                    ],
                )?;
                if changed != 1 {
                    return Err(corrupt(format!(
                        "DAG {dag_row} node {name} was not pending"
                    )));
                }
                Ok(())
            },
        );
        match ids {
            Ok(ids) => {
                tracing::info!(dag = row.id, node = %n.name, cluster = ids.first().map_or(0, |j| j.cluster), "DAG node submitted");
                report.submitted.push((dag_id, n.name.clone(), ids));
            }
            Err(e) => {
                let msg = format!("node {}: cannot submit: {e}", n.name);
                if finish_dag(q, row.id, DagState::Failed, &msg, at)? {
                    write_rescue(q, row, &dag, rescue_dir)?;
                    report.finished.push((dag_id, DagState::Failed));
                }
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Jobs removed with a DAG, each with whether it was running on a host.
pub type RemovedJobs = Vec<(JobId, bool)>;

/// Removes a running DAG: marks it removed (first, so a crash half-way never
/// resubmits anything), removes its unfinished jobs and writes the rescue
/// file. Returns the removed jobs with whether each was running remotely.
pub fn remove(
    q: &mut JobQueue,
    id: u64,
    by: &str,
    at: Time,
    rescue_dir: &std::path::Path,
) -> Result<(RemovedJobs, Option<String>), QueueError> {
    let Some(row) = load_dag(q, id)? else {
        return Err(QueueError::NotFound(JobId::new(id, 0)));
    };
    finish_dag(
        q,
        row.id,
        DagState::Removed,
        &format!("removed by {by}"),
        at,
    )?;
    let removed = remove_jobs_of(q, row.id, by, at)?;
    let nodes = load_nodes(q, row.id)?;
    let rescue = match restore(&row.dag_text, &nodes) {
        Ok(dag) => write_rescue(q, &row, &dag, rescue_dir)?,
        Err(e) => {
            tracing::error!(dag = row.id, error = %e, "cannot build the rescue record");
            None
        }
    };
    Ok((removed, rescue))
}

/// Removes the unfinished jobs of a DAG's submitted and running nodes.
fn remove_jobs_of(
    q: &mut JobQueue,
    dag: i64,
    by: &str,
    at: Time,
) -> Result<RemovedJobs, QueueError> {
    let mut out = Vec::new();
    for n in load_nodes(q, dag)? {
        if !matches!(n.status, Status::Submitted | Status::Running) {
            continue;
        }
        let Some(c) = n.cluster else { continue };
        for j in cluster_jobs(q, c)? {
            if j.state.is_terminal() {
                continue;
            }
            let remote = matches!(j.state, JobState::Running | JobState::Suspended);
            q.transition(
                j.id,
                JobState::Removed,
                &format!("removed with DAG {dag} by {by}"),
                at,
            )?;
            out.push((j.id, remote));
        }
    }
    Ok(out)
}

/// After a restart: jobs of DAGs removed just before a crash may still be
/// queued; remove them. Returns the jobs removed.
pub fn recover(q: &mut JobQueue, at: Time) -> Result<RemovedJobs, QueueError> {
    let mut out = Vec::new();
    for row in load_dags(q, Some(DagState::Removed))? {
        out.extend(remove_jobs_of(q, row.id, "the DAG manager", at)?);
    }
    Ok(out)
}

/// The status of DAGs (all, or one owner's).
pub fn status(q: &mut JobQueue, owner: Option<&str>) -> Result<Vec<DagStatus>, QueueError> {
    let rows = load_dags(q, None)?;
    let mut out = Vec::new();
    for row in rows.iter().filter(|r| owner.is_none_or(|o| o == r.owner)) {
        out.push(status_of(q, row)?);
    }
    Ok(out)
}

/// One DAG's status.
pub fn status_one(q: &mut JobQueue, id: u64) -> Result<Option<DagStatus>, QueueError> {
    match load_dag(q, id)? {
        Some(row) => Ok(Some(status_of(q, &row)?)),
        None => Ok(None),
    }
}

fn status_of(q: &mut JobQueue, row: &DagRow) -> Result<DagStatus, QueueError> {
    let nodes = load_nodes(q, row.id)?;
    let dag = restore(&row.dag_text, &nodes).ok();
    let mut out = Vec::with_capacity(nodes.len());
    for n in &nodes {
        let id = dag.as_ref().and_then(|d| d.id(&n.name));
        let status = match (n.status, dag.as_ref().zip(id)) {
            (Status::Pending, Some((d, i))) => match d.state(i) {
                Some(NodeState::Ready) if row.state == DagState::Running => "ready",
                _ => "waiting",
            },
            (s, _) => s.name(),
        };
        let (mut started_at, mut finished_at) = (None, None);
        if let Some(c) = n.cluster {
            let jobs = cluster_jobs(q, c)?;
            started_at = jobs.iter().filter_map(|j| j.started_at).min();
            if !jobs.is_empty() && jobs.iter().all(|j| j.state.is_terminal()) {
                finished_at = jobs.iter().filter_map(|j| j.finished_at).max();
            }
        }
        let names = |ids: &[NodeId]| -> Vec<String> {
            ids.iter()
                .filter_map(|&p| dag.as_ref().and_then(|d| d.node(p)).map(|n| n.name.clone()))
                .collect()
        };
        let (data_parents, priority_parents, retries) = match (dag.as_ref(), id) {
            (Some(d), Some(i)) => (
                names(d.data_parents(i)),
                names(d.priority_parents(i)),
                d.node(i).map_or(0, |x| x.retries),
            ),
            _ => (Vec::new(), Vec::new(), 0),
        };
        out.push(DagNodeStatus {
            name: n.name.clone(),
            status: status.to_string(),
            failures: n.failures,
            retries,
            clusters: n.clusters.clone(),
            started_at,
            finished_at,
            data_parents,
            priority_parents,
        });
    }
    Ok(DagStatus {
        id: u64::try_from(row.id).unwrap_or(0),
        owner: row.owner.clone(),
        dag_file: row.dag_file.clone(),
        state: row.state,
        submitted_at: time_from(row.submitted_at),
        finished_at: row.finished_at.map(time_from),
        rescue_file: row.rescue_file.clone(),
        message: row.message.clone(),
        nodes: out,
    })
}

// ---------------------------------------------------------------------------
// Daemon side
// ---------------------------------------------------------------------------

/// How often the manager looks at its DAGs.
const PASS_PERIOD: Duration = Duration::from_millis(300);

fn rescue_dir(st: &Station) -> PathBuf {
    st.config.state_dir.join("dags")
}

/// The manager's loop: a pass every [`PASS_PERIOD`] while a DAG runs, until
/// shutdown. With no DAG running it sleeps until one is submitted: a home
/// whose jobs run elsewhere should not wake a few times a second for
/// nothing (its CPU time is what Mutka's leverage divides by).
pub(crate) async fn run_loop(st: Arc<Station>, mut shutdown: watch::Receiver<bool>) {
    let orphans = recover(&mut st.queue(), now());
    match orphans {
        Ok(jobs) => after_removal(&st, &jobs, "removed with its DAG"),
        Err(e) => tracing::error!(error = %e, "DAG manager recovery failed"),
    }
    let dir = rescue_dir(&st);
    loop {
        let at = now();
        let result = tick(&mut st.queue(), at, &dir);
        let mut idle = false;
        match result {
            Ok(r) => {
                idle = r.running == 0 && r.submitted.is_empty();
                for (_, _, jobs) in &r.submitted {
                    for id in jobs {
                        shadow::user_log(
                            &st,
                            *id,
                            at,
                            "000",
                            "Job submitted from host",
                            &st.address,
                        );
                    }
                }
                if !r.submitted.is_empty() {
                    st.wake.notify_one();
                }
            }
            Err(e) => tracing::error!(error = %e, "DAG manager pass failed"),
        }
        if idle {
            tokio::select! {
                _ = st.dag_wake.notified() => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        } else {
            tokio::select! {
                _ = tokio::time::sleep(PASS_PERIOD) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }
}

fn after_removal(st: &Arc<Station>, jobs: &[(JobId, bool)], why: &str) {
    let at = now();
    for &(id, remote) in jobs {
        shadow::user_log(st, id, at, "009", "Job was aborted", why);
        if remote {
            super::schedd::spawn_vacate(st, id, why);
        }
    }
    if !jobs.is_empty() {
        st.wake.notify_one();
    }
}

pub(crate) fn router() -> Router<Arc<Station>> {
    Router::new()
        .route("/v1/dags", post(submit_handler).get(list_handler))
        .route("/v1/dags/{id}", get(detail_handler))
        .route("/v1/dags/{id}/rm", post(rm_handler))
}

fn parse_dag_id(s: &str) -> Result<u64, ApiError> {
    s.parse()
        .map_err(|_| ApiError::bad("dag", format!("invalid DAG id {s:?}: expected a number")))
}

async fn submit_handler(
    State(st): State<Arc<Station>>,
    Extension(claims): Extension<Claims>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<DagSubmitResponse>, ApiError> {
    if !st.config.role.submits() {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "this station is execute-only and accepts no submissions",
        ));
    }
    let raw = body(raw)?;
    let req: DagSubmitBody = parse_json(&raw)?;
    let resp = submit(&mut st.queue(), &claims.subject, req, now())?;
    st.dag_wake.notify_one();
    tracing::info!(owner = %claims.subject, dag = resp.id, nodes = resp.nodes, "DAG submitted");
    Ok(Json(resp))
}

async fn list_handler(
    State(st): State<Arc<Station>>,
    q: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<DagStatus>>, ApiError> {
    let q = q
        .map(|Query(m)| m)
        .map_err(|e| ApiError::bad("query", e.to_string()))?;
    let owner = q.get("owner").filter(|o| !o.is_empty());
    Ok(Json(status(&mut st.queue(), owner.map(String::as_str))?))
}

async fn detail_handler(
    State(st): State<Arc<Station>>,
    Path(id): Path<String>,
) -> Result<Json<DagStatus>, ApiError> {
    let id = parse_dag_id(&id)?;
    status_one(&mut st.queue(), id)?
        .map(Json)
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such DAG {id}")))
}

async fn rm_handler(
    State(st): State<Arc<Station>>,
    Extension(claims): Extension<Claims>,
    Path(id): Path<String>,
) -> Result<Json<DagRmResponse>, ApiError> {
    let id = parse_dag_id(&id)?;
    let (jobs, rescue) = {
        let mut q = st.queue();
        let row = load_dag(&mut q, id)?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such DAG {id}")))?;
        if !may_act_on(&claims, &row.owner) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("DAG {id} belongs to {}", row.owner),
            ));
        }
        if row.state != DagState::Running {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("DAG {id} is {}, not running", row.state.name()),
            ));
        }
        remove(&mut q, id, &claims.subject, now(), &rescue_dir(&st))?
    };
    after_removal(
        &st,
        &jobs,
        &format!("removed with DAG {id} by {}", claims.subject),
    );
    tracing::info!(user = %claims.subject, dag = id, jobs = jobs.len(), "DAG removed");
    Ok(Json(DagRmResponse {
        id,
        removed_jobs: jobs.into_iter().map(|(j, _)| j).collect(),
        rescue_file: rescue,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_proto::submit::{SubmitContext, parse_submit};

    fn sub(text: &str) -> ClusterSubmission {
        parse_submit(text, &SubmitContext::new("n.sub", "alice")).unwrap()
    }

    fn body(dag_text: &str, dir: &std::path::Path) -> DagSubmitBody {
        let dag = parse_dag(dag_text).unwrap();
        DagSubmitBody {
            protocol: PROTOCOL_VERSION,
            dag_file: dir.join("x.dag").display().to_string(),
            dag_text: dag_text.to_string(),
            nodes: dag
                .nodes()
                .iter()
                .map(|n| DagNodeSubmit {
                    name: n.name.clone(),
                    submission: sub(&format!(
                        "executable = /bin/true\narguments = {}\nqueue\n",
                        n.name
                    )),
                    submit_dir: Some("/tmp".into()),
                })
                .collect(),
            rescue: None,
            rescue_retries: RescueRetries::Reset,
        }
    }

    fn t(s: u64) -> Time {
        Time::from_secs(1_700_000_000 + s)
    }

    fn open(dir: &std::path::Path) -> JobQueue {
        let mut q = JobQueue::open(dir.join("queue.db")).unwrap();
        init(&mut q).unwrap();
        q
    }

    /// Node name → its current cluster's job.
    fn job_of(q: &mut JobQueue, dag: u64, node: &str) -> Option<JobId> {
        let s = status_one(q, dag).unwrap().unwrap();
        let n = s.nodes.iter().find(|n| n.name == node)?;
        n.clusters.last().map(|&c| JobId::new(c, 0))
    }

    fn statuses(q: &mut JobQueue, dag: u64) -> BTreeMap<String, String> {
        status_one(q, dag)
            .unwrap()
            .unwrap()
            .nodes
            .into_iter()
            .map(|n| (n.name, n.status))
            .collect()
    }

    fn run(q: &mut JobQueue, j: JobId, at: Time) {
        q.transition(j, JobState::Running, "test", at).unwrap();
    }

    fn complete(q: &mut JobQueue, j: JobId, code: i32, at: Time) {
        q.transition(j, JobState::Completed { exit_code: code }, "test", at)
            .unwrap();
    }

    /// Submits DIAMOND as alice at t(0); the DAG's id.
    fn submit_diamond(q: &mut JobQueue, dir: &std::path::Path) -> u64 {
        submit(q, "alice", body(DIAMOND, dir), t(0)).unwrap().id
    }

    /// Runs `node`'s current job at t(`at`) and completes it one second
    /// later with `code`.
    fn run_to_exit(q: &mut JobQueue, dag: u64, node: &str, code: i32, at: u64) {
        let j = job_of(q, dag, node).unwrap();
        run(q, j, t(at));
        complete(q, j, code, t(at + 1));
    }

    const DIAMOND: &str = "JOB a a.sub\nJOB b b.sub\nJOB c c.sub\nJOB d d.sub\n\
                           PARENT a CHILD b\nPRIORITY_PARENT b CHILD c\nPARENT b c CHILD d\nRETRY b 1\n";

    #[test]
    fn data_and_priority_eligibility_against_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = open(dir.path());
        let id = submit_diamond(&mut q, dir.path());
        let rd = dir.path().join("rescue");
        // Only the root is submitted.
        let r = tick(&mut q, t(1), &rd).unwrap();
        assert_eq!(r.submitted.len(), 1);
        assert_eq!(r.submitted[0].1, "a");
        assert_eq!(statuses(&mut q, id)["b"], "waiting");
        let a = job_of(&mut q, id, "a").unwrap();
        // a running is not enough for its data child b.
        run(&mut q, a, t(2));
        assert!(tick(&mut q, t(3), &rd).unwrap().submitted.is_empty());
        assert_eq!(statuses(&mut q, id)["a"], "running");
        // a completed: b goes.
        complete(&mut q, a, 0, t(4));
        let r = tick(&mut q, t(5), &rd).unwrap();
        assert_eq!(r.submitted.len(), 1);
        assert_eq!(r.submitted[0].1, "b");
        // c has a priority parent b: submitted b is not started b.
        assert!(tick(&mut q, t(6), &rd).unwrap().submitted.is_empty());
        let b = job_of(&mut q, id, "b").unwrap();
        run(&mut q, b, t(7));
        let r = tick(&mut q, t(8), &rd).unwrap();
        assert_eq!(r.submitted.len(), 1);
        assert_eq!(r.submitted[0].1, "c");
        // b fails once: RETRY 1 resubmits it; d waits for both.
        complete(&mut q, b, 3, t(9));
        let r = tick(&mut q, t(10), &rd).unwrap();
        assert_eq!(r.submitted.len(), 1);
        assert_eq!(r.submitted[0].1, "b");
        let b2 = job_of(&mut q, id, "b").unwrap();
        assert_ne!(b, b2);
        run(&mut q, b2, t(11));
        complete(&mut q, b2, 0, t(12));
        let c = job_of(&mut q, id, "c").unwrap();
        run(&mut q, c, t(12));
        assert!(tick(&mut q, t(13), &rd).unwrap().submitted.is_empty());
        complete(&mut q, c, 0, t(14));
        let r = tick(&mut q, t(15), &rd).unwrap();
        assert_eq!(r.submitted[0].1, "d");
        run_to_exit(&mut q, id, "d", 0, 16);
        let r = tick(&mut q, t(18), &rd).unwrap();
        assert_eq!(r.finished, vec![(id, DagState::Done)]);
        let s = status_one(&mut q, id).unwrap().unwrap();
        assert_eq!(s.state, DagState::Done);
        let b = s.nodes.iter().find(|n| n.name == "b").unwrap();
        assert_eq!((b.failures, b.clusters.len()), (1, 2));
    }

    #[test]
    fn failure_without_retries_fails_the_dag_and_writes_a_rescue() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = open(dir.path());
        let id = submit_diamond(&mut q, dir.path());
        let rd = dir.path().join("rescue");
        tick(&mut q, t(1), &rd).unwrap();
        run_to_exit(&mut q, id, "a", 1, 2);
        let r = tick(&mut q, t(4), &rd).unwrap();
        assert_eq!(r.finished, vec![(id, DagState::Failed)]);
        let s = status_one(&mut q, id).unwrap().unwrap();
        assert!(s.message.contains("a after 1 attempt"), "{}", s.message);
        let path = s.rescue_file.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let r = Rescue::parse(&text).unwrap();
        assert_eq!(r.dag.as_deref(), Some(s.dag_file.as_str()));
        assert!(r.done.is_empty());
        assert_eq!(r.attempts.get("a"), Some(&1));
        // Nothing else was ever submitted.
        assert_eq!(q.list(&JobFilter::default()).unwrap().len(), 1);
    }

    #[test]
    fn a_restarted_manager_continues_without_resubmitting() {
        let dir = tempfile::tempdir().unwrap();
        let rd = dir.path().join("rescue");
        let id = {
            let mut q = open(dir.path());
            let id = submit_diamond(&mut q, dir.path());
            tick(&mut q, t(1), &rd).unwrap();
            run_to_exit(&mut q, id, "a", 0, 2);
            tick(&mut q, t(4), &rd).unwrap();
            let b = job_of(&mut q, id, "b").unwrap();
            run(&mut q, b, t(5));
            id
        };
        // A new process: same database, fresh state.
        let mut q = open(dir.path());
        let r = tick(&mut q, t(6), &rd).unwrap();
        // b's start is noticed now and releases its priority child c only.
        assert_eq!(r.submitted.len(), 1);
        assert_eq!(r.submitted[0].1, "c");
        assert!(tick(&mut q, t(7), &rd).unwrap().submitted.is_empty());
        assert_eq!(q.list(&JobFilter::default()).unwrap().len(), 3);
        let st = statuses(&mut q, id);
        assert_eq!((st["a"].as_str(), st["b"].as_str()), ("done", "running"));
        assert_eq!(
            (st["c"].as_str(), st["d"].as_str()),
            ("submitted", "waiting")
        );
    }

    #[test]
    fn remove_then_resubmit_the_rescue_skips_done_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = open(dir.path());
        let id = submit_diamond(&mut q, dir.path());
        let rd = dir.path().join("rescue");
        tick(&mut q, t(1), &rd).unwrap();
        run_to_exit(&mut q, id, "a", 0, 2);
        tick(&mut q, t(4), &rd).unwrap();
        let b = job_of(&mut q, id, "b").unwrap();
        let (removed, rescue) = remove(&mut q, id, "alice", t(5), &rd).unwrap();
        assert_eq!(removed, vec![(b, false)]);
        assert_eq!(
            q.get(b).unwrap().unwrap().state,
            JobState::Removed,
            "the unfinished job went with the DAG"
        );
        assert_eq!(
            status_one(&mut q, id).unwrap().unwrap().state,
            DagState::Removed
        );
        // The removed DAG is not ticked any more.
        assert!(tick(&mut q, t(6), &rd).unwrap().submitted.is_empty());
        let text = std::fs::read_to_string(rescue.unwrap()).unwrap();
        let r = Rescue::parse(&text).unwrap();
        assert_eq!(r.done, BTreeSet::from(["a".to_string()]));
        let mut b2 = body(DIAMOND, dir.path());
        b2.rescue = Some(r);
        let resp = submit(&mut q, "alice", b2, t(7)).unwrap();
        assert_eq!(resp.done, 1);
        let r = tick(&mut q, t(8), &rd).unwrap();
        assert_eq!(r.submitted.len(), 1);
        assert_eq!(r.submitted[0].1, "b", "a is not run again");
    }

    #[test]
    fn bad_submissions_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = open(dir.path());
        let mut b = body(DIAMOND, dir.path());
        b.dag_text.push_str("PARENT d CHILD a\n");
        let e = submit(&mut q, "alice", b, t(0)).unwrap_err();
        let msg = e.0.error.message.clone();
        assert!(msg.contains("x.dag:9: dependency cycle"), "{msg}");
        let mut b = body(DIAMOND, dir.path());
        b.nodes.pop();
        assert!(submit(&mut q, "alice", b, t(0)).is_err());
        let mut b = body(DIAMOND, dir.path());
        b.rescue = Some(Rescue::parse("DONE nope\n").unwrap());
        assert!(submit(&mut q, "alice", b, t(0)).is_err());
        assert!(status(&mut q, None).unwrap().is_empty());
        assert!(
            tick(&mut q, t(1), &dir.path().join("r"))
                .unwrap()
                .submitted
                .is_empty()
        );
    }
}
