//! Poison jobs (issue 14): a job whose program fails to start is counted,
//! sent back to the queue with its host avoided for a while (so the host's
//! next grant goes to the station's next idle job), and held after too
//! many failed starts in a row, with HTCondor's `HoldReasonCode` 6 and the
//! errno as subcode. The policy is `gleaner_core::start_failures`; the
//! count is durable (`jobs.start_failures`, with a `start_failed` event
//! each time).
//!
//! Two roads lead here: a host that accepted the job reports that the
//! program could not be executed (`JobStatusReport::start_failure`), or a
//! host refuses the placement because the job itself cannot run anywhere
//! (`RejectReason::Unrunnable`, e.g. a NUL byte in a file name).

use super::Home;
use super::user_log::{UserEvent, user_log};
use crate::queue::{FailedStart, QueueError};
use gleaner_core::start_failures::{StartFailureDecision, StartFailurePolicy};
use gleaner_core::time::{Dur, Time};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::StartFailure;
use std::sync::Arc;
use std::time::Duration;

/// The station's policy, from its configuration.
fn policy(home: &Home) -> StartFailurePolicy {
    StartFailurePolicy {
        limit: home.config.max_start_failures.max(1),
        first_avoid: Dur::from_secs_f64(home.config.start_retry_secs),
        max_avoid: Dur::from_secs_f64(home.config.avoid_host_secs),
    }
}

/// Applies one failed start of `id` on `host`: counted, then back to the
/// queue (host avoided) or on hold. The user log gets HTCondor's event
/// for it (007 "Shadow exception", or 012 "Job was held").
pub(crate) async fn failed_start(
    home: &Arc<Home>,
    id: JobId,
    host: &str,
    failure: &StartFailure,
    at: Time,
) -> Result<FailedStart, QueueError> {
    let policy = policy(home);
    let mut avoid = None;
    let done = {
        let mut q = home.queue();
        let limit = match q.get(id)? {
            Some(r) => policy.limit_for(r.description.max_retries),
            None => return Err(QueueError::NotFound(id)),
        };
        q.record_start_failure(
            id,
            host,
            failure,
            |n| match policy.decide(n, limit, &failure.message, host) {
                StartFailureDecision::Hold { reason } => Some(format!(
                    "{reason} [HoldReasonCode {}, HoldReasonSubCode {}]",
                    failure.code, failure.subcode
                )),
                StartFailureDecision::Retry { avoid_host_for } => {
                    avoid = Some(avoid_host_for);
                    None
                }
            },
            at,
        )?
    };
    // The failed run is over: nothing more of it is heard (a retried
    // report of it is refused as stale rather than counted twice).
    super::runs::retire_run(home, id);
    if done.held {
        let reason = match &done.record.state {
            gleaner_proto::job::JobState::Held { reason } => reason.clone(),
            other => other.to_string(),
        };
        tracing::warn!(job = %id, %host, failures = done.failures, %reason, "job held: it keeps failing to start");
        let event = UserEvent::Held {
            reason,
            code: failure.code,
            subcode: failure.subcode,
        };
        user_log(home, id, at, event).await;
    } else if done.failures > 0 {
        if let Some(d) = avoid {
            home.remote
                .avoid_host_for(id, host, Duration::from_micros(d.as_micros()));
        }
        tracing::info!(job = %id, %host, failures = done.failures, message = %failure.message, "failed start: job back in the queue");
        let message = format!("failed to start on {host}: {}", failure.message);
        user_log(home, id, at, UserEvent::ShadowException { message }).await;
    }
    // A host came free, a job came back or left the queue: tell the
    // coordinator now.
    home.news.notify_one();
    Ok(done)
}

/// The program of `id` runs: its series of failed starts is over.
pub(crate) fn started(home: &Home, id: JobId) {
    if let Err(e) = home.queue().clear_start_failures(id) {
        tracing::warn!(job = %id, error = %e, "cannot clear failed starts");
    }
}
