//! A running gang: the home carries out `gleaner_core::gang::settle` on
//! what its queue says (each member's state, the run's size, the members
//! it suspended itself), after every report of a member, at start and
//! every few seconds. Marks are written before the requests they stand
//! for leave, so a home killed at any moment resends at start whatever may
//! not have arrived (hosts take holds and releases idempotently).

use super::super::Home;
use super::super::schedd;
use super::super::user_log::{UserEvent, user_log};
use crate::clock::now;
use crate::queue::{JobQueue, JobRecord};
use gleaner_core::gang::{Hold, Member, VacateWhy, settle};
use gleaner_proto::job::{Gang, JobId, JobState, JobStateKind};
use gleaner_proto::wire::GangHoldResponse;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often every running gang is looked at again (reports the home did
/// not hear: a member requeued by its lease, a request lost).
const WATCH_EVERY: Duration = Duration::from_secs(5);

/// A member's report was applied (`before` → `after`): what it means for
/// its gang.
pub(crate) fn after_report(home: &Arc<Home>, before: &JobRecord, after: &JobRecord) {
    let Some(m) = after.description.gang else {
        return;
    };
    let cluster = after.id.cluster;
    if let (JobState::Completed { exit_code }, 0) = (&after.state, m.rank) {
        if before.state.kind() != JobStateKind::Completed {
            // In a task of its own: completing the others must not hang
            // on rank 0's report (whose sender may give up waiting).
            let (home, exit_code) = (home.clone(), *exit_code);
            tokio::spawn(async move { super::stop::stop_gang(&home, cluster, m, exit_code).await });
        }
        return;
    }
    settle_gang(home, cluster, m.gang, false);
}

/// Every few seconds, each running gang's state settled again; the first
/// time (at start) with every hold and release sent again.
pub(crate) async fn watch(home: Arc<Home>, mut shutdown: watch::Receiver<bool>) {
    let mut resend = true;
    loop {
        // Never between a gang's run being recorded and its members being
        // marked as placing (`place_gang` holds this lock throughout).
        let placing = home.last_placement.lock().await;
        let runs = home.queue().gang_runs().unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot read the running gangs");
            Vec::new()
        });
        for run in runs {
            let gang = {
                let q = home.queue();
                gang_of(&q, run.cluster)
            };
            match gang {
                Some(g) => settle_gang(&home, run.cluster, g, resend),
                None => {
                    // Its jobs are gone (removed from the queue): so is
                    // its run.
                    let _ = home.queue().end_gang_run(run.cluster);
                }
            }
        }
        drop(placing);
        resend = false;
        tokio::select! {
            _ = tokio::time::sleep(WATCH_EVERY) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// The gang settings of `cluster`, from its rank 0.
fn gang_of(q: &JobQueue, cluster: u64) -> Option<Gang> {
    q.get(JobId::new(cluster, 0))
        .ok()
        .flatten()
        .and_then(|r| r.description.gang)
        .map(|m| m.gang)
}

/// One member as `settle` sees it: a member being placed counts as
/// running (its report is on the way).
fn member(home: &Home, r: Option<JobRecord>) -> Member {
    match r {
        Some(r) => match r.state.kind() {
            JobStateKind::Running => Member::Running,
            JobStateKind::Suspended => Member::Suspended,
            JobStateKind::Idle if home.remote.is_placing(r.id) => Member::Running,
            JobStateKind::Idle => Member::Idle,
            JobStateKind::Completed => Member::Exited,
            _ => Member::Done,
        },
        None => Member::Done,
    }
}

/// Why a member that exited before rank 0 is back in the queue.
const REOPENED: &str = "its gang was vacated before rank 0 exited: it runs again with \
                        the whole gang, from the start";

/// Members `back` of `cluster` went back to the queue (`why`): the
/// user's log says so.
fn reopened(
    home: &Arc<Home>,
    cluster: u64,
    back: Vec<u32>,
    why: &str,
    at: gleaner_core::time::Time,
) {
    if back.is_empty() {
        return;
    }
    tracing::info!(cluster, members = ?back, "{why}");
    let home = home.clone();
    let why = why.to_string();
    tokio::spawn(async move {
        for r in back {
            let event = UserEvent::Evicted {
                checkpointed: false,
                reason: why.clone(),
            };
            user_log(&home, JobId::new(cluster, r), at, event).await;
        }
    });
}

/// A user released the parallel job `cluster`, held with no run on a
/// host: the members that exited before rank 0 in its last run (their
/// release was refused, completed as they are) go back to the queue with
/// the others, as after a vacate, so that the job runs again whole.
pub(crate) fn after_release(home: &Arc<Home>, cluster: u64) {
    let Some(gang) = gang_of(&home.queue(), cluster) else {
        return;
    };
    let at = now();
    let back = {
        let mut q = home.queue();
        if !matches!(q.gang_run(cluster), Ok(None)) {
            // A run is recorded: `settle_gang` ends it.
            return;
        }
        let exited: Vec<u32> = (1..gang.machine_count)
            .filter(|r| {
                q.get(JobId::new(cluster, *r))
                    .ok()
                    .flatten()
                    .is_some_and(|j| j.state.kind() == JobStateKind::Completed)
            })
            .collect();
        if exited.is_empty() {
            return;
        }
        q.end_gang_run_reopening(cluster, &exited, RELEASED, at)
    };
    match back {
        Ok(back) => reopened(home, cluster, back, RELEASED, at),
        Err(e) => tracing::warn!(cluster, error = %e, "cannot send a released gang's members back"),
    }
}

/// Why a member that exited before rank 0 is back after a release.
const RELEASED: &str = "its gang was released before rank 0 exited: it runs again with \
                        the whole gang, from the start";

/// Settles `cluster`'s gang (of settings `gang`) and carries out the plan.
fn settle_gang(home: &Arc<Home>, cluster: u64, gang: Gang, resend: bool) {
    let (plan, on_host) = {
        let q = home.queue();
        let size = match q.gang_run(cluster) {
            Ok(Some(r)) => r.size,
            // No run recorded (its run ended, or it was placed by a home
            // of before schema 9): all k members.
            Ok(None) => gang.machine_count,
            Err(e) => {
                tracing::error!(cluster, error = %e, "cannot read a gang's run");
                return;
            }
        };
        let holds = match q.gang_holds(cluster) {
            Ok(h) => h,
            Err(e) => {
                tracing::error!(cluster, error = %e, "cannot read a gang's holds");
                return;
            }
        };
        let records: Vec<Option<JobRecord>> = (0..size)
            .map(|r| q.get(JobId::new(cluster, r)).ok().flatten())
            .collect();
        let on_host: Vec<JobId> = records
            .iter()
            .flatten()
            .filter(|r| {
                matches!(
                    r.state.kind(),
                    JobStateKind::Running | JobStateKind::Suspended
                )
            })
            .map(|r| r.id)
            .collect();
        let run: Vec<Member> = records.into_iter().map(|r| member(home, r)).collect();
        (settle(&gang.policy(), &run, &holds, resend), on_host)
    };
    let mut q = home.queue();
    if plan.ended {
        // The members wait a moment with the job (from before the run's
        // record goes), so the hosts they left are seen free when it asks
        // again; then the coordinator hears.
        home.gangs.run_ended(cluster, gang.machine_count);
        let at = now();
        let ended = q.end_gang_run_reopening(cluster, &plan.reopen, REOPENED, at);
        drop(q);
        match ended {
            Ok(back) => reopened(home, cluster, back, REOPENED, at),
            Err(e) => tracing::warn!(cluster, error = %e, "cannot forget a gang's run"),
        }
        let home = home.clone();
        tokio::spawn(async move {
            tokio::time::sleep(super::REGROUP).await;
            home.news.notify_one();
        });
        return;
    }
    if !plan.forget.is_empty()
        && let Err(e) = q.forget_gang_holds(cluster, &plan.forget)
    {
        tracing::warn!(cluster, error = %e, "cannot drop a gang's marks");
    }
    // Each mark is committed before its request leaves.
    for (ranks, hold) in [(&plan.hold, Hold::Held), (&plan.release, Hold::Releasing)] {
        if ranks.is_empty() {
            continue;
        }
        if let Err(e) = q.mark_gang_holds(cluster, ranks, hold) {
            tracing::error!(cluster, error = %e, "cannot record a gang hold; not sent");
            return;
        }
    }
    drop(q);
    if !plan.hold.is_empty() {
        tracing::info!(cluster, members = ?plan.hold, resend, "a member's owner is back: the gang is suspended");
    }
    if !plan.release.is_empty() {
        tracing::info!(cluster, members = ?plan.release, resend, "the owner left: the gang resumes");
    }
    for r in &plan.hold {
        spawn_gang_hold(home, JobId::new(cluster, *r), true);
    }
    for r in &plan.release {
        spawn_gang_hold(home, JobId::new(cluster, *r), false);
    }
    if let Some(why) = plan.vacate
        && home.gangs.vacate_now(cluster)
    {
        let why = match why {
            VacateWhy::MemberLeft => "gang vacated: a member left its host".to_string(),
            VacateWhy::OwnerBack => "gang vacated: a member's owner is back".to_string(),
            VacateWhy::Reconfigure { members } => format!(
                "gang reconfigured: a member's owner is back; it runs again on the idle \
                 hosts ({members} of its nodes still idle)"
            ),
        };
        tracing::info!(cluster, members = on_host.len(), %why, "the gang leaves its hosts");
        for id in on_host {
            schedd::spawn_vacate(home, id, &why);
        }
    }
}

/// Asks the host of `job` to hold (or release) it with its gang, with the
/// claim the member was placed with.
fn spawn_gang_hold(home: &Arc<Home>, job: JobId, hold: bool) {
    let Some((host_name, host, claim)) = home
        .remote
        .placement(job)
        .and_then(|p| Some((p.host, p.address?, p.claim?)))
    else {
        tracing::warn!(%job, "gang hold: host address or claim unknown");
        return;
    };
    let home = home.clone();
    tokio::spawn(async move {
        let url = format!(
            "{}/v1/guests/{job}/gang?hold={hold}",
            host.trim_end_matches('/')
        );
        match home
            .peers
            .station(&host_name)
            .post(&url)
            .bearer_auth(&claim)
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => {
                tracing::info!(%job, %host, hold, "gang hold sent");
                let answer = r.json::<GangHoldResponse>().await.ok();
                if !hold && answer.and_then(|a| a.suspended_by_owner) == Some(true) {
                    owner_keeps_it(&home, job);
                }
            }
            Ok(r) => tracing::warn!(%job, %host, status = %r.status(), "gang hold refused"),
            Err(e) => tracing::warn!(%job, %host, error = %e, "gang hold failed"),
        }
    });
}

/// The gang released `job`, but its own owner's ladder keeps it stopped:
/// its own owner came back while the gang held it. Its mark goes (it is no
/// longer the home's hold), so that `settle` sees an owner back on it and
/// does for that owner what it does for any member's: hold the others
/// again, vacate or reconfigure the gang.
fn owner_keeps_it(home: &Arc<Home>, job: JobId) {
    let cluster = job.cluster;
    let gang = {
        let mut q = home.queue();
        let releasing = q
            .gang_holds(cluster)
            .map(|h| h.get(&job.proc) == Some(&Hold::Releasing))
            .unwrap_or(false);
        if !releasing {
            return;
        }
        if let Err(e) = q.forget_gang_holds(cluster, &[job.proc]) {
            tracing::warn!(%job, error = %e, "cannot drop a gang mark");
            return;
        }
        gang_of(&q, cluster)
    };
    tracing::info!(%job, "released with its gang, but its own owner is back: the gang is held for that owner");
    if let Some(g) = gang {
        settle_gang(home, cluster, g, false);
    }
}
