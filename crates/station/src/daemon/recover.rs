//! Start-up recovery of a station that died while hosting guests.
//!
//! Guests are supervised by the starter inside the daemon process; after a
//! crash (SIGKILL, power loss) nobody watches them and nobody will report
//! their end. A job of this station's own queue that was running *here*
//! would stay Running forever, so at start it goes back to Idle and runs
//! again (HTCondor likewise reruns a job whose starter vanished).

use crate::isolation::CgroupManager;
use crate::queue::{JobFilter, JobQueue};
use gleaner_core::time::Time;
use gleaner_proto::job::JobState;

/// Requeues this station's own jobs that were running or suspended on this
/// very station when it stopped; returns how many.
pub(crate) fn requeue_own_guests(queue: &mut JobQueue, station: &str, at: Time) -> usize {
    let jobs = match queue.list(&JobFilter::default()) {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(error = %e, "cannot list jobs for start-up recovery");
            return 0;
        }
    };
    let mut n = 0;
    for j in jobs {
        let here = j.host.as_deref() == Some(station);
        if here && matches!(j.state, JobState::Running | JobState::Suspended) {
            match queue.transition(
                j.id,
                JobState::Idle,
                "the station restarted while the job ran on it; requeued",
                at,
            ) {
                Ok(_) => n += 1,
                Err(e) => tracing::warn!(job = %j.id, error = %e, "cannot requeue"),
            }
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

/// Kills the guests a previous run of this station left behind. After a
/// crash their processes may still run in their cgroups, unsupervised: the
/// jobs were requeued (above) or will be by their homes' leases, so a
/// survivor would only duplicate work and hold the owner's CPU. Without
/// cgroups such processes are found through their records instead
/// (guest_records.rs); returns how many groups were cleared.
pub(crate) fn kill_leftover_guests(cgroups: &CgroupManager) -> usize {
    let names = match cgroups.list() {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list guest cgroups left from a previous run");
            return 0;
        }
    };
    let mut n = 0;
    for name in names {
        let cleared = cgroups
            .open(&name)
            .and_then(|g| g.kill().and_then(|_| g.remove()));
        match cleared {
            Ok(()) => n += 1,
            Err(e) => tracing::warn!(guest = %name, error = %e, "cannot clear a leftover guest"),
        }
    }
    if n > 0 {
        tracing::info!(
            groups = n,
            "killed guests left by a previous run of this station"
        );
    }
    n
}
