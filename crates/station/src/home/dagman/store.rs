//! The DAG manager's tables in the queue's own database: one row per DAG
//! (its loaded DAG, configuration, options and run state) and one per node
//! (its run state), so that a node's submission and its cluster commit in
//! one transaction ([`JobQueue::submit_linked`]) and a restarted home
//! carries on from what was committed.
//!
//! A DAG's id is its DAGMan job's cluster (`DAGManJobId`).

use super::api::DagState;
use super::prepare::{DagOptions, RescueUsed};
use crate::queue::{JobQueue, QueueError};
use gleaner_core::dag::config::DagConfig;
use gleaner_core::dag::run::{NodeRun, RunState, SubmitExtras};
use gleaner_core::dag::spec::DagSpec;
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dagman_runs (
    id           INTEGER PRIMARY KEY,     -- the DAGMan job's cluster
    owner        TEXT NOT NULL,
    spec         TEXT NOT NULL,           -- DagSpec (JSON)
    config       TEXT NOT NULL,           -- DagConfig (JSON)
    extras       TEXT NOT NULL,           -- Extras (JSON)
    run          TEXT NOT NULL,           -- RunState without its nodes (JSON)
    state        TEXT NOT NULL,           -- running | done | failed | removed
    exit_code    INTEGER,
    submitted_at INTEGER NOT NULL,
    finished_at  INTEGER,
    rescue_file  TEXT,
    message      TEXT NOT NULL DEFAULT '',
    parent       INTEGER                  -- the DAG whose SUBDAG node this is
);
CREATE TABLE IF NOT EXISTS dagman_nodes (
    dag   INTEGER NOT NULL,
    idx   INTEGER NOT NULL,
    state TEXT NOT NULL,                  -- NodeRun (JSON)
    PRIMARY KEY (dag, idx)
);
CREATE INDEX IF NOT EXISTS dagman_runs_by_state ON dagman_runs (state, id);
";

/// Creates the manager's tables if missing.
pub fn init(q: &mut JobQueue) -> Result<(), QueueError> {
    q.conn_mut()
        .execute_batch(&format!("BEGIN IMMEDIATE; {SCHEMA} COMMIT;"))?;
    Ok(())
}

/// What a DAG's run needs besides its DAG and configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Extras {
    pub options: DagOptions,
    /// The environment scripts and `$ENV()` see (`ENV`, `-include_env` …).
    pub env: BTreeMap<String, String>,
    pub submit: SubmitExtras,
    pub rescue: Option<RescueUsed>,
    /// The rescue DAG this run writes, once chosen.
    pub rescue_out: Option<String>,
    /// `FILE.dagman.out`.
    pub out_file: String,
    /// The SUBDAG node (parent DAG, node) this DAG runs for.
    pub parent_node: Option<(u64, usize)>,
    /// Node names' job tags for the jobstate log.
    pub job_tags: BTreeMap<usize, String>,
    /// The first DAG file as the user named it (rescue DAG headers).
    pub dag_file: String,
}

/// One stored DAG.
pub struct Stored {
    pub id: u64,
    pub owner: String,
    pub spec: DagSpec,
    pub config: DagConfig,
    pub extras: Extras,
    pub run: RunState,
    pub state: DagState,
    pub exit_code: Option<i32>,
    pub submitted_at: Time,
    pub finished_at: Option<Time>,
    pub rescue_file: Option<String>,
    pub message: String,
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

fn json<T: Serialize>(v: &T) -> Result<String, QueueError> {
    serde_json::to_string(v).map_err(|e| corrupt(format!("cannot encode: {e}")))
}

fn dejson<T: for<'a> Deserialize<'a>>(s: &str, what: &str) -> Result<T, QueueError> {
    serde_json::from_str(s).map_err(|e| corrupt(format!("{what}: {e}")))
}

/// The run state without its nodes (they have rows of their own).
fn run_head(run: &RunState) -> RunState {
    RunState {
        nodes: Vec::new(),
        ..run.clone()
    }
}

/// Inserts a new DAG (its DAGMan job `id` is in the same transaction).
// Each argument is one column of the row; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub(super) fn insert(
    tx: &Transaction<'_>,
    id: u64,
    owner: &str,
    spec: &DagSpec,
    config: &DagConfig,
    extras: &Extras,
    run: &RunState,
    at: Time,
) -> Result<(), QueueError> {
    let id = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    let parent = extras
        .parent_node
        .map(|(p, _)| i64::try_from(p).unwrap_or(0));
    tx.execute(
        "INSERT INTO dagman_runs (id, owner, spec, config, extras, run, state, submitted_at, parent) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8)",
        params![
            id,
            owner,
            json(spec)?,
            json(config)?,
            json(extras)?,
            json(&run_head(run))?,
            time_sql(at)?,
            parent
        ],
    )?;
    let mut ins =
        tx.prepare_cached("INSERT INTO dagman_nodes (dag, idx, state) VALUES (?1, ?2, ?3)")?;
    for (i, n) in run.nodes.iter().enumerate() {
        ins.execute(params![id, i64::try_from(i).unwrap_or(0), json(n)?])?;
    }
    Ok(())
}

/// Writes a DAG's run head and the nodes `dirty` in `tx`.
pub(super) fn save_in(
    tx: &Transaction<'_>,
    id: u64,
    run: &RunState,
    dirty: impl IntoIterator<Item = usize>,
) -> Result<(), QueueError> {
    let id = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    tx.prepare_cached("UPDATE dagman_runs SET run = ?2 WHERE id = ?1")?
        .execute(params![id, json(&run_head(run))?])?;
    let mut up =
        tx.prepare_cached("UPDATE dagman_nodes SET state = ?3 WHERE dag = ?1 AND idx = ?2")?;
    for i in dirty {
        if let Some(n) = run.nodes.get(i) {
            up.execute(params![id, i64::try_from(i).unwrap_or(0), json(n)?])?;
        }
    }
    Ok(())
}

/// Writes one node's state in `tx` (its submission's transaction).
pub(super) fn save_node_in(
    tx: &Transaction<'_>,
    id: u64,
    node: usize,
    state: &NodeRun,
) -> Result<(), QueueError> {
    let id = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    tx.prepare_cached("UPDATE dagman_nodes SET state = ?3 WHERE dag = ?1 AND idx = ?2")?
        .execute(params![id, i64::try_from(node).unwrap_or(0), json(state)?])?;
    Ok(())
}

/// [`save_node_in`] as its own transaction.
pub(super) fn save_node(
    q: &mut JobQueue,
    id: u64,
    node: usize,
    state: &NodeRun,
) -> Result<(), QueueError> {
    let tx = q
        .conn_mut()
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    save_node_in(&tx, id, node, state)?;
    tx.commit()?;
    q.committed();
    Ok(())
}

/// [`save_in`] as its own transaction.
pub(super) fn save(
    q: &mut JobQueue,
    id: u64,
    run: &RunState,
    dirty: impl IntoIterator<Item = usize>,
) -> Result<(), QueueError> {
    let tx = q
        .conn_mut()
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    save_in(&tx, id, run, dirty)?;
    tx.commit()?;
    q.committed();
    Ok(())
}

/// Updates a DAG's extras (its rescue file name once chosen).
pub(super) fn save_extras(q: &mut JobQueue, id: u64, extras: &Extras) -> Result<(), QueueError> {
    let id = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    q.conn_mut().execute(
        "UPDATE dagman_runs SET extras = ?2 WHERE id = ?1",
        params![id, json(extras)?],
    )?;
    q.committed();
    Ok(())
}

/// Marks a DAG over.
pub(super) fn finish(
    q: &mut JobQueue,
    id: u64,
    state: DagState,
    exit_code: i32,
    message: &str,
    at: Time,
) -> Result<(), QueueError> {
    let id = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    q.conn_mut().execute(
        "UPDATE dagman_runs SET state = ?2, exit_code = ?3, message = ?4, finished_at = ?5 \
         WHERE id = ?1 AND state = 'running'",
        params![id, state.name(), exit_code, message, time_sql(at)?],
    )?;
    q.committed();
    Ok(())
}

/// Records where a DAG's rescue file was written.
pub fn record_rescue(q: &mut JobQueue, id: u64, path: &str) -> Result<(), QueueError> {
    let id = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    q.conn_mut().execute(
        "UPDATE dagman_runs SET rescue_file = ?2 WHERE id = ?1",
        params![id, path],
    )?;
    q.committed();
    Ok(())
}

/// The ids of DAGs, all or in one state.
pub(super) fn ids(q: &mut JobQueue, state: Option<DagState>) -> Result<Vec<u64>, QueueError> {
    let conn = q.conn_mut();
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM dagman_runs WHERE (?1 IS NULL OR state = ?1) ORDER BY id",
    )?;
    let rows = stmt.query_map(params![state.map(DagState::name)], |r| r.get::<_, i64>(0))?;
    let mut out = Vec::new();
    for r in rows {
        out.push(u64::try_from(r?).unwrap_or(0));
    }
    Ok(out)
}

/// Whether `cluster` is a DAG's own job.
pub fn is_dag_job(q: &mut JobQueue, cluster: u64) -> Result<bool, QueueError> {
    let id = i64::try_from(cluster).map_err(|_| QueueError::Range("DAG id"))?;
    Ok(q.conn_mut()
        .prepare_cached("SELECT 1 FROM dagman_runs WHERE id = ?1")?
        .query_row(params![id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// One DAG, with its nodes' states.
pub(super) fn load(q: &mut JobQueue, id: u64) -> Result<Option<Stored>, QueueError> {
    let key = i64::try_from(id).map_err(|_| QueueError::Range("DAG id"))?;
    let conn = q.conn_mut();
    let row = conn
        .prepare_cached(
            "SELECT owner, spec, config, extras, run, state, exit_code, submitted_at, finished_at, \
             rescue_file, message FROM dagman_runs WHERE id = ?1",
        )?
        .query_row(params![key], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Option<i32>>(6)?,
                r.get::<_, i64>(7)?,
                r.get::<_, Option<i64>>(8)?,
                r.get::<_, Option<String>>(9)?,
                r.get::<_, String>(10)?,
            ))
        })
        .optional()?;
    let Some((owner, spec, config, extras, run, state, exit_code, sub, fin, rescue_file, message)) =
        row
    else {
        return Ok(None);
    };
    let spec: DagSpec = dejson(&spec, &format!("DAG {id}: spec"))?;
    let mut run: RunState = dejson(&run, &format!("DAG {id}: run"))?;
    let mut nodes = vec![NodeRun::default(); spec.nodes.len()];
    {
        let mut stmt =
            conn.prepare_cached("SELECT idx, state FROM dagman_nodes WHERE dag = ?1 ORDER BY idx")?;
        let rows = stmt.query_map(params![key], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        for r in rows {
            let (i, s) = r?;
            let i = usize::try_from(i).map_err(|_| corrupt(format!("DAG {id}: node index")))?;
            let slot = nodes
                .get_mut(i)
                .ok_or_else(|| corrupt(format!("DAG {id}: node {i} out of range")))?;
            *slot = dejson(&s, &format!("DAG {id} node {i}"))?;
        }
    }
    run.nodes = nodes;
    Ok(Some(Stored {
        id,
        owner,
        spec,
        config: dejson(&config, &format!("DAG {id}: config"))?,
        extras: dejson(&extras, &format!("DAG {id}: extras"))?,
        run,
        state: DagState::parse(&state)
            .ok_or_else(|| corrupt(format!("DAG {id}: state {state:?}")))?,
        exit_code,
        submitted_at: time_from(sub),
        finished_at: fin.map(time_from),
        rescue_file,
        message,
    }))
}
