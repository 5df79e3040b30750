//! Start-up recovery of the home's queue after the station died while
//! hosting its own jobs.
//!
//! Guests are supervised by the starter inside the daemon process; after a
//! crash (SIGKILL, power loss) nobody watches them and nobody will report
//! their end. A job of this station's own queue that was running *here*
//! would stay Running forever, so at start it goes back to Idle and runs
//! again (HTCondor likewise reruns a job whose starter vanished). The host
//! side kills what is left of the old run (`host::leftovers`).

use crate::queue::JobQueue;
use gleaner_core::time::Time;
use gleaner_proto::job::JobState;

/// Placements recorded but not known to be accepted when the home stopped
/// ([`JobQueue::in_doubt_placements`]): each is held as being placed, so
/// that its host's report of that run is heard and the job is not placed
/// again meanwhile; [`settle_in_doubt`] lets the others go after a lease.
pub fn in_doubt(home: &super::Home) -> Vec<gleaner_proto::job::JobId> {
    let jobs = match home.queue().in_doubt_placements() {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(error = %e, "cannot read placements in doubt");
            return Vec::new();
        }
    };
    let mut ids = Vec::new();
    for j in jobs {
        let (Some(host), Some(address), Some(claim)) = (&j.host, &j.host_address, &j.host_claim)
        else {
            continue;
        };
        home.remote_jobs()
            .begin_placing(j.id, host, address, claim, j.run_id.as_deref());
        ids.push(j.id);
    }
    if !ids.is_empty() {
        tracing::info!(
            jobs = ids.len(),
            "placements in doubt after a restart: waiting for their hosts"
        );
    }
    ids
}

/// After a lease, the placements in doubt whose host never reported are
/// given up: the job may be placed again (its old run, if any, is refused
/// and killed by its host when it speaks).
pub async fn settle_in_doubt(
    home: std::sync::Arc<super::Home>,
    ids: Vec<gleaner_proto::job::JobId>,
) {
    if ids.is_empty() {
        return;
    }
    let wait = home
        .remote_jobs()
        .lease()
        .max(std::time::Duration::from_secs(10));
    tokio::time::sleep(wait).await;
    let mut freed = 0;
    for id in ids {
        if !home.remote_jobs().is_placing(id) {
            continue;
        }
        let idle = matches!(home.queue().get(id), Ok(Some(r)) if r.state == JobState::Idle);
        if idle {
            home.remote_jobs().end_placing(id);
            super::runs::retire_run(&home, id);
            freed += 1;
        }
    }
    if freed > 0 {
        tracing::info!(
            jobs = freed,
            "placements in doubt given up: their hosts never reported"
        );
        home.news().notify_one();
    }
}

/// Requeues this station's own jobs that were running or suspended on this
/// very station when it stopped; returns how many.
pub fn requeue_own_guests(queue: &mut JobQueue, station: &str, at: Time) -> usize {
    // The running jobs from the state index alone: a queue of 100 000 jobs
    // is not read whole at start.
    let jobs = match queue.running_jobs() {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(error = %e, "cannot list jobs for start-up recovery");
            return 0;
        }
    };
    let mut n = 0;
    for (id, host) in jobs {
        if host.as_deref() != Some(station) {
            continue;
        }
        match queue.transition(
            id,
            JobState::Idle,
            "the station restarted while the job ran on it; requeued",
            at,
        ) {
            Ok(_) => n += 1,
            Err(e) => tracing::warn!(job = %id, error = %e, "cannot requeue"),
        }
    }
    if n > 0 {
        tracing::info!(
            jobs = n,
            "requeued jobs that were running here when the station stopped"
        );
    }
    n
}
