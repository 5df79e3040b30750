//! Removing a DAG (`glean dag rm`, or `glean rm` of its DAGMan job): its
//! DAGMan job is removed; the manager sees that on its next pass and does
//! what condor_dagman does on removal (`main_shutdown_rescue`): the rescue
//! DAG written, node jobs removed, scripts killed, the FINAL node run.

use super::api::DagState;
use super::store;
use crate::clock::now;
use crate::home::Home;
use crate::home::user_log::{UserEvent, spawn_user_log};
use crate::queue::{JobQueue, QueueError};
use gleaner_proto::job::{JobId, JobState};
use std::sync::Arc;

/// Removes DAG `id`'s job (the manager takes it from there).
pub fn remove(q: &mut JobQueue, id: u64, by: &str) -> Result<(), QueueError> {
    q.transition(
        JobId::new(id, 0),
        JobState::Removed,
        &format!("DAG removed by {by}"),
        now(),
    )?;
    Ok(())
}

/// At start: a DAG marked over whose job is still running (the daemon
/// died in between) gets its job completed; nothing else to do.
pub fn recover(home: &Arc<Home>) {
    let ids = store::ids(&mut home.queue(), None).unwrap_or_default();
    for id in ids {
        let Ok(Some(s)) = store::load(&mut home.queue(), id) else {
            continue;
        };
        if s.state == DagState::Running {
            continue;
        }
        let job = JobId::new(id, 0);
        let running = matches!(home.queue().get(job), Ok(Some(r)) if r.state == JobState::Running);
        if running {
            let exit = s.exit_code.unwrap_or(1);
            let at = now();
            if home
                .queue()
                .transition_exited(
                    job,
                    JobState::Completed { exit_code: exit },
                    "DAG ended",
                    at,
                    None,
                )
                .is_ok()
            {
                spawn_user_log(
                    home,
                    job,
                    at,
                    UserEvent::Terminated {
                        exit_code: exit,
                        detail: String::new(),
                    },
                );
            }
        }
    }
}
