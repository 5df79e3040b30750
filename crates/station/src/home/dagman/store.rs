//! The manager's tables in the queue's database, and the core DAG
//! rebuilt from them.

use super::api::DagState;
use crate::queue::{JobQueue, QueueError};
use gleaner_core::dag::{Dag, JobSpec, NodeId, Rescue, RescueRetries, parse_dag};
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use rusqlite::{TransactionBehavior, params};
use std::path::PathBuf;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Status {
    Pending,
    Submitted,
    Running,
    Done,
    Failed,
}

impl Status {
    pub(super) fn name(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Submitted => "submitted",
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
        }
    }
    pub(super) fn parse(s: &str) -> Option<Self> {
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

pub(super) struct DagRow {
    pub(super) id: i64,
    pub(super) owner: String,
    pub(super) dag_file: String,
    pub(super) dag_text: String,
    pub(super) state: DagState,
    pub(super) submitted_at: i64,
    pub(super) finished_at: Option<i64>,
    pub(super) rescue_file: Option<String>,
    pub(super) message: String,
}

pub(super) struct NodeRow {
    pub(super) name: String,
    pub(super) submission: String,
    pub(super) submit_dir: Option<String>,
    pub(super) status: Status,
    pub(super) failures: u32,
    pub(super) cluster: Option<u64>,
    pub(super) clusters: Vec<u64>,
}

pub(super) fn corrupt(what: impl Into<String>) -> QueueError {
    QueueError::Corrupt {
        job: JobId::new(0, 0),
        reason: what.into(),
    }
}

pub(super) fn time_sql(t: Time) -> Result<i64, QueueError> {
    i64::try_from(t.as_micros()).map_err(|_| QueueError::Range("time"))
}

pub(super) fn time_from(v: i64) -> Time {
    Time::from_micros(u64::try_from(v).unwrap_or(0))
}

pub(super) fn load_dags(
    q: &mut JobQueue,
    state: Option<DagState>,
) -> Result<Vec<DagRow>, QueueError> {
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

pub(super) fn load_dag(q: &mut JobQueue, id: u64) -> Result<Option<DagRow>, QueueError> {
    let id = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    Ok(load_dags(q, None)?.into_iter().find(|d| d.id == id))
}

pub(super) fn load_nodes(q: &mut JobQueue, dag: i64) -> Result<Vec<NodeRow>, QueueError> {
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
pub(super) fn restore(text: &str, rows: &[NodeRow]) -> Result<Dag<JobSpec>, String> {
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

pub(super) fn update_node(
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
    q.committed();
    Ok(())
}

pub(super) fn finish_dag(
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
    q.committed();
    Ok(n == 1)
}

/// Records where a DAG's rescue file was written.
pub fn record_rescue(q: &mut JobQueue, dag: u64, path: &str) -> Result<(), QueueError> {
    let dag = i64::try_from(dag).map_err(|_| QueueError::Range("DAG id"))?;
    let tx = q
        .conn_mut()
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "UPDATE dags SET rescue_file = ?2 WHERE id = ?1",
        params![dag, path],
    )?;
    tx.commit()?;
    q.committed();
    Ok(())
}

/// A rescue file to write for a DAG that failed or was removed. The
/// manager's steps only produce it: writing it is file work in the owner's
/// directory, done as the owner and outside the queue lock
/// (`service::write_rescue`), then recorded with [`record_rescue`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RescueFile {
    pub dag: u64,
    /// The DAG's owner, as whom the file is written.
    pub owner: String,
    /// `<dag file>.rescue`, where it belongs.
    pub path: PathBuf,
    /// The rescue record's text.
    pub text: String,
}

impl RescueFile {
    /// The file's name for a fallback directory (`dag-<id>.rescue`).
    pub fn fallback_name(&self) -> String {
        format!("dag-{}.rescue", self.dag)
    }
}

/// The rescue record of `dag` (the DAG in `row`), to be written beside
/// its DAG file.
pub(super) fn rescue_file(row: &DagRow, dag: &Dag<JobSpec>) -> RescueFile {
    let mut r = dag.rescue();
    r.dag = Some(row.dag_file.clone());
    RescueFile {
        dag: u64::try_from(row.id).unwrap_or(0),
        owner: row.owner.clone(),
        path: PathBuf::from(format!("{}.rescue", row.dag_file)),
        text: r.to_text(),
    }
}
