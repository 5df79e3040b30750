//! This station's idle jobs grouped into classes for matchmaking: the
//! coordinator matches hosts to classes, not to single jobs.

use crate::queue::JobQueue;
use gleaner_proto::job::JobId;
use gleaner_proto::matchmaking::JobClass;
use std::collections::HashSet;

/// Most idle jobs looked at when grouping (a bigger queue still advertises
/// its full count; the rest is grouped as it comes forward).
const MAX_GROUPED: usize = 10_000;

/// Most classes advertised: the ad stays small; jobs of further classes
/// still count in the demand and are advertised as earlier ones leave.
const MAX_CLASSES: usize = 256;

/// The station's idle jobs in queue order, grouped into classes; `skip`
/// jobs are being placed right now; `avoided` names the hosts a job must
/// stay away from (so the matchmaker never offers them).
pub fn idle_classes(
    q: &JobQueue,
    skip: &HashSet<JobId>,
    avoided: impl Fn(JobId) -> Vec<String>,
) -> Vec<JobClass> {
    match q.next_idle_jobs(MAX_GROUPED) {
        Ok(jobs) => {
            let mut classes = JobClass::merge(
                jobs.iter()
                    .filter(|j| !skip.contains(&j.id))
                    .map(|j| JobClass::avoiding(&j.description, avoided(j.id))),
            );
            classes.truncate(MAX_CLASSES);
            classes
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot read idle jobs");
            Vec::new()
        }
    }
}
