//! DAGs as `glean dag status` shows them.

use super::api::{DagNodeStatus, DagState, DagStatus};
use super::store::{DagRow, Status, load_dag, load_dags, load_nodes, restore, time_from};
use super::tick::cluster_jobs;
use crate::queue::{JobQueue, QueueError};
use gleaner_core::dag::{NodeId, NodeState};

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
