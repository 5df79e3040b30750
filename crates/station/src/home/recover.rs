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
