//! A gang's end and what waits with it: rank 0's exit stops every member,
//! the members a reconfigured run did not use wait with the job (no demand
//! of their own) and end with it, and a user's action on one member is an
//! action on the whole job.

use super::super::Home;
use super::super::schedd;
use super::super::user_log::{UserEvent, user_log};
use crate::clock::now;
use crate::queue::{JobQueue, JobRecord};
use gleaner_proto::job::{GangMember, GangPolicyKind, JobId, JobState, JobStateKind};
use std::collections::HashSet;
use std::sync::Arc;

const ON_HOST: [JobStateKind; 2] = [JobStateKind::Running, JobStateKind::Suspended];

/// The other members of `m`'s gang (cluster `cluster`) in `states`.
fn members_in(home: &Home, cluster: u64, m: GangMember, states: &[JobStateKind]) -> Vec<JobRecord> {
    let q = home.queue();
    (0..m.gang.machine_count)
        .filter(|r| *r != m.rank)
        .filter_map(|r| q.get(JobId::new(cluster, r)).ok().flatten())
        .filter(|r| states.contains(&r.state.kind()))
        .collect()
}

/// Rank 0 ended: the members still on their hosts are removed from them
/// and complete with rank 0's exit code; the members still in the queue
/// end too (a reconfigured run's unused ranks complete with rank 0's
/// exit code, as the job did; under LL-k a member that never started is
/// removed).
pub(super) async fn stop_gang(home: &Arc<Home>, cluster: u64, m: GangMember, exit_code: i32) {
    let at = now();
    for r in members_in(home, cluster, m, &ON_HOST) {
        // Completed first, then removed from its host: the host's report
        // of the removal then finds the member complete (the other order
        // would requeue it).
        let detail = format!("gang ended: rank 0 exited with {exit_code}");
        let task = tokio::spawn(super::super::deliver::complete(
            home.clone(),
            r.clone(),
            JobState::Completed { exit_code },
            detail,
            at,
        ));
        match task.await {
            Ok(Ok((done, detail))) => {
                schedd::spawn_vacate_as(home, r.id, "gang ended: rank 0 exited", "remove");
                super::super::runs::retire_run(home, r.id);
                home.remote.reported(r.id, false);
                super::super::claim_reuse::after_departure(home, r.id);
                tracing::info!(job = %r.id, state = %done.state, "member stopped with its gang");
                user_log(home, r.id, at, UserEvent::Terminated { exit_code, detail }).await;
            }
            Ok(Err(e)) => {
                tracing::warn!(job = %r.id, error = ?e, "cannot complete a gang member; removed from its host all the same");
                schedd::spawn_vacate_as(home, r.id, "gang ended: rank 0 exited", "remove");
            }
            Err(e) => {
                tracing::warn!(job = %r.id, error = %e, "cannot complete a gang member; removed from its host all the same");
                schedd::spawn_vacate_as(home, r.id, "gang ended: rank 0 exited", "remove");
            }
        }
    }
    let size = home
        .queue()
        .gang_run(cluster)
        .ok()
        .flatten()
        .map_or(m.gang.machine_count, |r| r.size);
    for r in members_in(home, cluster, m, &[JobStateKind::Idle]) {
        if home.remote.is_placing(r.id) {
            continue;
        }
        if m.gang.policy == GangPolicyKind::Reconfigure {
            // Not needed by the run that ended the job: the job is done,
            // and so is this rank (a DAG node or a user waiting on the
            // cluster sees every proc complete with the job's code).
            let detail = format!(
                "gang ended: rank 0 exited with {exit_code}; the gang ran on {size} of its {} \
                 members and this one was not used",
                m.gang.machine_count
            );
            let task = tokio::spawn(super::super::deliver::complete_unused(
                home.clone(),
                r.clone(),
                exit_code,
                detail,
                at,
            ));
            match task.await {
                Ok(Ok(detail)) => {
                    user_log(home, r.id, at, UserEvent::Terminated { exit_code, detail }).await
                }
                Ok(Err(e)) => {
                    tracing::warn!(job = %r.id, error = ?e, "cannot complete an unused gang member")
                }
                Err(e) => {
                    tracing::warn!(job = %r.id, error = %e, "cannot complete an unused gang member")
                }
            }
            continue;
        }
        // LL-k: a member still waiting (its start failed, say) never runs
        // alone: the job is over, so it leaves the queue.
        let why = format!("gang ended: rank 0 exited with {exit_code} before this member ran");
        let moved = home.queue().transition(r.id, JobState::Removed, &why, at);
        match moved {
            Ok(_) => user_log(home, r.id, at, UserEvent::Aborted { reason: why }).await,
            Err(e) => {
                tracing::warn!(job = %r.id, error = %e, "cannot remove a waiting gang member")
            }
        }
    }
    home.gangs.forget(cluster);
    if let Err(e) = home.queue().end_gang_run(cluster) {
        tracing::warn!(cluster, error = %e, "cannot forget an ended gang's run");
    }
    home.news.notify_one();
}

/// The idle members that wait with their gang rather than for a grant of
/// their own: every idle member of a parallel job with a recorded run
/// that still has a member on a host or being placed (a reconfigured
/// run's unused ranks, members back in the queue while the others leave),
/// and of a gang whose run ended less than `REGROUP` ago. Left out of the
/// home's demand and classes.
pub(crate) fn parked(home: &Home) -> HashSet<JobId> {
    let regrouping = home.gangs.regrouping();
    let q = home.queue();
    let runs = match q.gang_runs() {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "cannot read the running gangs");
            return HashSet::new();
        }
    };
    let mut out: HashSet<JobId> = regrouping
        .into_iter()
        .flat_map(|(c, k)| (0..k).map(move |r| JobId::new(c, r)))
        .filter(|id| {
            q.get(*id)
                .ok()
                .flatten()
                .is_some_and(|j| j.state == JobState::Idle)
        })
        .collect();
    for run in runs {
        let members: Vec<(JobId, JobStateKind)> = (0..run.machine_count)
            .filter_map(|r| {
                let id = JobId::new(run.cluster, r);
                q.get(id).ok().flatten().map(|j| (id, j.state.kind()))
            })
            .collect();
        let running = members
            .iter()
            .any(|(id, s)| ON_HOST.contains(s) || home.remote.is_placing(*id));
        if running {
            out.extend(
                members
                    .iter()
                    .filter(|(_, s)| *s == JobStateKind::Idle)
                    .map(|(id, _)| *id),
            );
        }
    }
    out
}

/// The jobs a user's `rm`, `hold` or `release` of `r` acts on: a parallel
/// job is one job (as in HTCondor), so naming any member names every
/// member; any other job is itself.
pub(crate) fn whole_job(q: &JobQueue, r: JobRecord) -> Vec<JobRecord> {
    let Some(m) = r.description.gang else {
        return vec![r];
    };
    let cluster = r.id.cluster;
    let mut all: Vec<JobRecord> = (0..m.gang.machine_count)
        .filter_map(|rank| q.get(JobId::new(cluster, rank)).ok().flatten())
        .collect();
    if all.is_empty() {
        all.push(r);
    }
    all
}
