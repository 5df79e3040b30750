//! The home's end of the lease with each job's host ([`crate::lease`]).
//!
//! - `POST /v1/shadow/{job}/lease`: the starter's renewal
//!   ([`LeaseRenewal`]), heard from the job's host only (403 from any other
//!   station, [`super::host_caller`]); 409 tells a host that the job is no
//!   longer its to run (the home gave up on it, or the renewal names a run
//!   other than the job's current one), and the host kills the guest.
//! - The lease monitor requeues a running job whose host has not been heard
//!   from for `lease_secs` plus one renewal period (the host itself gives
//!   up at `lease_secs`, so the old run is dead before the new one starts).
//!   A restarted home gives every running job a fresh lease: hosts that are
//!   still running its jobs re-attach with their next renewal.
//!
//! A host that lost a job's lease is avoided for that job for a while
//! ([`super::remote`]).

use super::shadow::STATIONS_ONLY;
use super::user_log::{UserEvent, spawn_user_log};
use super::{Home, parse_job_id};
use crate::clock::now;
use crate::lease::LeaseRenewal;
use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Extension, Json, Router};
use gleaner_edge::{ApiError, Caller, body_bytes, parse_json, require_station};
use gleaner_proto::api::StoredResponse;
use gleaner_proto::job::{JobId, JobState};
use gleaner_proto::wire::ErrorCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub(crate) fn router() -> Router<Arc<Home>> {
    Router::new().route("/v1/shadow/{job}/lease", post(renew))
}

async fn renew(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    raw: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<StoredResponse>, ApiError> {
    require_station(&caller, STATIONS_ONLY)?;
    let id = parse_job_id(&id)?;
    let raw = body_bytes(raw)?;
    let ren: LeaseRenewal = parse_json(&raw)?;
    let (r, remote) = super::http::remote_job_record(&home, id)?;
    super::host_caller::require_host_of(&home, &caller, &r, Some(&ren.host))?;
    let ours = home.remote.speaks_for(id, r.host.as_deref(), &ren.host) && remote;
    if !ours {
        tracing::warn!(job = %id, host = %ren.host, state = %r.state, "lease renewal from a host that no longer runs the job");
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} is {} and not running on {}", r.state, ren.host),
        ));
    }
    // A stale run on the right host (it was requeued and placed there
    // again) is refused too: its host kills it.
    let run = ren.run.as_ref().map(ToString::to_string);
    super::runs::require_current_run(&home, id, run.as_deref())?;
    home.remote.renewed(id, &ren.host, &ren.host_address);
    Ok(Json(StoredResponse {
        ok: true,
        detail: "lease renewed".into(),
    }))
}

/// The lease a job is placed with, seconds (`None`: none): the home's
/// `lease_secs`, or the job's `job_lease_duration` when shorter. A longer
/// one is cut to the home's, whose monitor requeues the job at its own
/// lease: a host holding on longer could run it twice at once.
pub(crate) fn lease_secs_of(home: &Home, d: &gleaner_proto::job::JobDescription) -> Option<u64> {
    let own = home.config.lease_secs.ceil() as u64;
    if own == 0 {
        return None;
    }
    Some(d.job_lease_duration.map_or(own, |j| j.clamp(1, own)))
}

/// Requeues running jobs whose host went silent for longer than the lease.
///
/// The monitor sleeps until the earliest lease deadline instead of polling:
/// hosts renew every third of the lease, so on a quiet home it wakes about
/// once per renewal period however many jobs run, and each pass reads only
/// the running jobs (an index range of the queue, see
/// [`crate::queue::JobQueue::running_jobs`]), not the whole queue. Leases are
/// cut on time: a deadline is checked when it falls due, not up to a tick
/// later.
pub(crate) async fn monitor(home: Arc<Home>, mut shutdown: watch::Receiver<bool>) {
    let lease = home.remote.lease();
    if lease.is_zero() {
        return;
    }
    // The host gives up at `lease`; the home waits one renewal more, so the
    // old run is gone before the job can start elsewhere.
    let limit = lease + lease / 3;
    // Longest sleep. A job is first seen (its lease starts) at the next
    // pass after it went running; starters renew as soon as the guest
    // starts, so this bound matters only for a host that died at once.
    let max_sleep = (lease / 3).max(Duration::from_millis(100));
    // Recheck of an expired job that is being placed again right now.
    let placing_recheck = (lease / 6).clamp(Duration::from_millis(100), Duration::from_secs(5));
    loop {
        let running = home.queue().running_remote_jobs();
        let running = match running {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "lease monitor cannot read the running jobs");
                Vec::new()
            }
        };
        let (expired, next) = home.remote.lease_pass(&running, limit, placing_recheck);
        for (id, host) in expired {
            requeue_expired(&home, id, host.unwrap_or_default(), limit);
        }
        let wake = Instant::now() + max_sleep;
        let wake = next.map_or(wake, |n| n.min(wake));
        tokio::select! {
            _ = tokio::time::sleep_until(wake.into()) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// Requeues `id` after its lease ran out on `host`.
fn requeue_expired(home: &Arc<Home>, id: JobId, host: String, limit: Duration) {
    let detail = format!(
        "lease expired: no report from {host} for {:.0} s; requeued",
        limit.as_secs_f64()
    );
    let at = now();
    // Bound first: the queue lock must be released before the user log
    // (which reads the queue) is written.
    let moved = home.queue().transition(id, JobState::Idle, &detail, at);
    match moved {
        Ok(_) => {
            tracing::warn!(job = %id, %host, "lease expired; job requeued");
            home.remote.avoid_host(id, &host);
            home.remote.forget(id);
            // The run is presumed dead: if it is not, nothing of it is heard.
            super::runs::retire_run(home, id);
            let checkpointed = super::user_log::checkpointed_this_run(home, id);
            let ev = UserEvent::Evicted {
                checkpointed,
                reason: detail.clone(),
            };
            spawn_user_log(home, id, at, ev);
            home.news.notify_one();
        }
        Err(e) => {
            tracing::warn!(job = %id, error = %e, "cannot requeue after lease expiry")
        }
    }
}
