//! DAGs as `glean dag status` shows them: the stored run (nodes' states,
//! retries, clusters) with the times of each node's last attempt from the
//! queue.

use super::api::{DagNodeStatus, DagStatus};
use super::store::{self, Stored};
use crate::queue::{JobQueue, QueueError};
use gleaner_core::dag::EdgeKind;
use gleaner_core::dag::run::Status;

/// The status of DAGs (all, or one owner's).
pub fn status(q: &mut JobQueue, owner: Option<&str>) -> Result<Vec<DagStatus>, QueueError> {
    let mut out = Vec::new();
    for id in store::ids(q, None)? {
        if let Some(s) = store::load(q, id)?
            && owner.is_none_or(|o| o == s.owner)
        {
            out.push(status_of(q, &s)?);
        }
    }
    Ok(out)
}

/// One DAG's status.
pub fn status_one(q: &mut JobQueue, id: u64) -> Result<Option<DagStatus>, QueueError> {
    match store::load(q, id)? {
        Some(s) => Ok(Some(status_of(q, &s)?)),
        None => Ok(None),
    }
}

fn name(st: Status, running: bool) -> &'static str {
    match st {
        Status::NotReady => "waiting",
        Status::Ready => "ready",
        Status::PreRun => "pre",
        Status::Submitted if running => "running",
        Status::Submitted => "submitted",
        Status::PostRun => "post",
        Status::Done => "done",
        Status::Error => "failed",
        Status::Futile => "futile",
    }
}

fn status_of(q: &mut JobQueue, s: &Stored) -> Result<DagStatus, QueueError> {
    let mut nodes = Vec::new();
    let (mut done, mut failed) = (0, 0);
    for (i, spec) in s.spec.nodes.iter().enumerate() {
        if spec.join {
            continue;
        }
        let n = s.run.nodes.get(i).cloned().unwrap_or_default();
        let (mut started_at, mut finished_at) = (None, None);
        if let Some(c) = n.cluster {
            let jobs = q.jobs_of_clusters(&[c])?;
            started_at = jobs.iter().filter_map(|j| j.started_at).min();
            if !jobs.is_empty() && jobs.iter().all(|j| j.state.is_terminal()) {
                finished_at = jobs.iter().filter_map(|j| j.finished_at).max();
            }
        }
        let running = n.procs.contains(&gleaner_core::dag::run::Proc::Running);
        match n.status {
            Status::Done => done += 1,
            Status::Error => failed += 1,
            _ => {}
        }
        let names = |kinds: &[EdgeKind]| -> Vec<String> {
            spec.parents
                .iter()
                .filter(|p| kinds.contains(&p.kind))
                .map(|p| s.spec.nodes[p.node as usize].name.clone())
                .collect()
        };
        nodes.push(DagNodeStatus {
            name: spec.name.clone(),
            status: name(n.status, running).to_string(),
            node_status: n.status.code(),
            retries: n.retries,
            max_retries: n.max_retries,
            failures: n.retries + u32::from(n.status == Status::Error),
            clusters: n.clusters.clone(),
            started_at,
            finished_at,
            data_parents: names(&[EdgeKind::Strong, EdgeKind::Weak]),
            priority_parents: names(&[EdgeKind::Priority]),
            error: n.error.clone(),
        });
    }
    Ok(DagStatus {
        id: s.id,
        owner: s.owner.clone(),
        dag_file: s.spec.files.first().cloned().unwrap_or_default(),
        files: s.spec.files.clone(),
        state: s.state,
        exit_code: s.exit_code,
        dag_status: s.run.status.code(),
        submitted_at: s.submitted_at,
        finished_at: s.finished_at,
        rescue_file: s.rescue_file.clone(),
        message: s.message.clone(),
        nodes_total: nodes.len(),
        nodes_done: done,
        nodes_failed: failed,
        nodes,
    })
}
