//! Removing a DAG, and finishing a removal a crash interrupted.

use super::api::DagState;
use super::store::{
    RescueFile, Status, finish_dag, load_dag, load_dags, load_nodes, rescue_file, restore,
};
use super::tick::cluster_jobs;
use crate::queue::{JobQueue, QueueError};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobId, JobState};

/// Jobs removed with a DAG, each with whether it was running on a host.
pub type RemovedJobs = Vec<(JobId, bool)>;

/// Removes a running DAG: marks it removed (first, so a crash half-way never
/// resubmits anything), removes its unfinished jobs and makes the rescue
/// record. Returns the removed jobs with whether each was running
/// remotely, and the rescue file to write.
pub fn remove(
    q: &mut JobQueue,
    id: u64,
    by: &str,
    at: Time,
) -> Result<(RemovedJobs, Option<RescueFile>), QueueError> {
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
        Ok(dag) => Some(rescue_file(&row, &dag)),
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
