//! One pass of the manager over its running DAGs.

use super::api::DagState;
use super::store::{
    DagRow, NodeRow, RescueFile, Status, corrupt, finish_dag, load_dags, load_nodes, rescue_file,
    restore, update_node,
};
use crate::queue::{JobFilter, JobQueue, JobRecord, QueueError};
use gleaner_core::dag::NodeState;
use gleaner_core::time::Time;
use gleaner_proto::job::{JobId, JobState};
use gleaner_proto::submit::ClusterSubmission;
use rusqlite::params;
use std::collections::{BTreeSet, HashMap};

/// What one pass of the manager did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TickReport {
    /// Jobs submitted into the queue, per node: (dag, node, jobs).
    pub submitted: Vec<(u64, String, Vec<JobId>)>,
    /// DAGs that finished in this pass, with their new state.
    pub finished: Vec<(u64, DagState)>,
    /// DAGs that were running at the start of this pass.
    pub running: usize,
    /// Rescue files of the DAGs that failed in this pass, to be written
    /// (as their owners) and recorded.
    pub rescues: Vec<RescueFile>,
}

/// One pass over every running DAG: observe the jobs of submitted nodes,
/// record starts, ends and retries, finish DAGs, and submit the nodes that
/// became eligible. Every change is its own transaction, so a crash at any
/// point leaves a state the next pass continues from.
pub fn tick(q: &mut JobQueue, at: Time) -> Result<TickReport, QueueError> {
    let mut report = TickReport::default();
    let rows = load_dags(q, Some(DagState::Running))?;
    report.running = rows.len();
    for row in rows {
        if let Err(e) = tick_one(q, &row, at, &mut report) {
            tracing::error!(dag = row.id, error = %e, "DAG manager pass failed");
        }
    }
    Ok(report)
}

pub(super) fn cluster_jobs(q: &JobQueue, cluster: u64) -> Result<Vec<JobRecord>, QueueError> {
    q.list(&JobFilter {
        cluster: Some(cluster),
        ..Default::default()
    })
}

fn tick_one(
    q: &mut JobQueue,
    row: &DagRow,
    at: Time,
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
            report.rescues.push(rescue_file(row, &dag));
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
                    report.rescues.push(rescue_file(row, &dag));
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
                    gleaner_proto::job::resolve_submit_paths(d, submit_dir.as_deref());
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
            // Over a per-user limit for now: the node stays pending and is
            // submitted once the user's queue has room.
            Err(QueueError::Limit(l)) => {
                tracing::info!(dag = row.id, node = %n.name, limit = %l, "DAG node waits: over a per-user limit");
                return Ok(());
            }
            Err(e) => {
                let msg = format!("node {}: cannot submit: {e}", n.name);
                if finish_dag(q, row.id, DagState::Failed, &msg, at)? {
                    report.rescues.push(rescue_file(row, &dag));
                    report.finished.push((dag_id, DagState::Failed));
                }
                return Ok(());
            }
        }
    }
    Ok(())
}
