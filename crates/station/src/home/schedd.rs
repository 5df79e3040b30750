//! The home station's local scheduler.
//!
//! The coordinator only hands out hosts; the home station's own scheduler
//! picks which of its jobs uses each granted host, by the home's fair
//! share between its users ([`super::share`]; each user's jobs in their
//! own order: higher `priority` first, then first in, first out), and places at most one job per placement interval (Mutka
//! 1988 L839): a grant that comes within the interval waits for its end
//! rather than being dropped, since the coordinator holds the host for the
//! grant until its claim is used or expires. Preemptions are passed on to
//! the host as vacate requests; the job is requeued when the host reports
//! it vacated.
//!
//! A grant's claim is kept after its job completes, for the next job of
//! the same class ([`super::claim_reuse`]): [`place`] serves both.

use super::user_log::{UserEvent, user_log};
use super::{Home, runs, start_failures};
use crate::clock::now;
use crate::queue::JobRecord;
use gleaner_proto::job::{JobId, JobState};
use gleaner_proto::run::RunId;
use gleaner_proto::wire::{
    Grant, PROTOCOL_VERSION, PlacementRequest, PlacementResponse, Preemption, RejectReason,
    StartFailure, hold_code,
};
use std::sync::Arc;
use std::time::Instant;

impl Home {
    /// Uses the coordinator's grants, in order.
    pub async fn on_grants(self: &Arc<Self>, grants: &[Grant]) {
        for g in grants {
            if g.gang.is_empty() {
                place(self, &Target::of(g)).await;
            } else {
                super::gang::place_gang(self, g).await;
            }
        }
    }

    /// Passes the coordinator's preemptions on to the hosts.
    pub fn on_preemptions(self: &Arc<Self>, preemptions: &[Preemption]) {
        for p in preemptions {
            preempt(self, p);
        }
    }
}

/// Where a placement goes: a grant's claim, new or held for reuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) host: String,
    pub(crate) host_address: String,
    pub(crate) claim_id: String,
    /// The claim's nonce (from the grant; `None` from an older
    /// coordinator: the claim is then used once).
    pub(crate) nonce: Option<String>,
    /// The job class the host was matched for (`None`: any idle job).
    pub(crate) class: Option<String>,
    /// The placement's number under the claim: 0 for the grant's own.
    pub(crate) seq: u64,
}

impl Target {
    pub(crate) fn of(g: &Grant) -> Self {
        Target {
            host: g.host.clone(),
            host_address: g.host_address.clone(),
            claim_id: g.claim_id.clone(),
            nonce: g.nonce.clone(),
            class: g.class.clone(),
            seq: 0,
        }
    }
}

/// Uses one claim: the next idle job of its class goes to its host, once
/// the placement interval since the last placement is over. True when the
/// host accepted a job.
pub(crate) async fn place(home: &Arc<Home>, g: &Target) -> bool {
    // At most one placement per interval (Mutka 1988 L839).
    let mut last = home.last_placement.lock().await;
    if let Some(t) = *last {
        let left = home.config.placement_interval().saturating_sub(t.elapsed());
        if !left.is_zero() {
            tracing::debug!(host = %g.host, ?left, "grant waits for the placement interval");
            tokio::time::sleep(left).await;
        }
    }
    // The share decides which user's job it is (`share`): the first in
    // its order with a job that needs what the grant's class needs.
    let job = match super::share::pick(home, g) {
        super::share::Pick::Job(job) => job,
        super::share::Pick::GiveBack => return false,
        super::share::Pick::Nothing => {
            tracing::debug!(host = %g.host, class = ?g.class, "no idle job for the grant");
            return false;
        }
    };
    if job.description.gang.is_some() {
        // A parallel job's member starts only with its gang (`gang.rs`).
        tracing::debug!(job = %job.id, host = %g.host, "a gang member waits for its gang's grant");
        return false;
    }
    let Some(run) = begin(home, g, &job).await else {
        return false;
    };
    *last = Some(Instant::now());
    drop(last);
    let description = super::timing::placed_description(&job);
    send(home, g, &job, run, description).await
}

/// Names the new run of `job` on `g` and records the placement before
/// anything is sent: from now on only its data is heard (`runs.rs`).
pub(crate) async fn begin(home: &Arc<Home>, g: &Target, job: &JobRecord) -> Option<RunId> {
    let run = match RunId::new(&home.name, job.id, job.run_count.saturating_add(1)) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(job = %job.id, error = %e, "cannot name a new run (no randomness)");
            return None;
        }
    };
    runs::begin_run(home, job.id, &g.host, &g.host_address, &g.claim_id, &run).await;
    Some(run)
}

/// Sends the placement of `job` (its run `run` begun) to `g`'s host with
/// `description`, and applies the answer. True when the host accepted.
pub(crate) async fn send(
    home: &Arc<Home>,
    g: &Target,
    job: &JobRecord,
    run: RunId,
    description: gleaner_proto::job::JobDescription,
) -> bool {
    let req = PlacementRequest {
        protocol: PROTOCOL_VERSION,
        job_id: job.id,
        home: home.name.clone(),
        claim_id: g.claim_id.clone(),
        description,
        shadow: home.address.clone(),
        checkpoint: None,
        run_count: job.run_count,
        lease_secs: super::lease::lease_secs_of(home, &job.description),
        run: Some(run.clone()),
        claim_seq: g.seq,
    };
    let url = format!("{}/v1/place", g.host_address.trim_end_matches('/'));
    let outcome = match home.peers.check_url("host address", &g.host_address) {
        // Plain HTTP only to a loopback host, in a pool without TLS.
        Err(why) => Err(why),
        Ok(()) => {
            let result = home
                .peers
                .station(&g.host)
                .post(&url)
                // The claim is this home's credential at the host.
                .bearer_auth(&g.claim_id)
                .json(&req)
                .send()
                .await;
            match result {
                Ok(resp) if resp.status().is_success() => resp
                    .json::<PlacementResponse>()
                    .await
                    .map_err(|e| e.to_string()),
                Ok(resp) => Err(format!("host answered {}", resp.status())),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    match outcome {
        Ok(PlacementResponse::Accepted { guest_id }) => {
            let at = now();
            // The queue lock is released before the user log is written.
            let started_here = {
                let mut q = home.queue();
                // The host may have reported already (under this lock:
                // before or after, never between) that the program could
                // not start: a failed start of this run was counted, the
                // run is over, and the job is not marked running.
                let failed_already = q
                    .get(job.id)
                    .ok()
                    .flatten()
                    .is_some_and(|r| r.start_failures > job.start_failures);
                if failed_already {
                    drop(q);
                    tracing::info!(job = %job.id, host = %g.host, "placed, but its start failed already");
                    home.remote.end_placing(job.id);
                    return true;
                }
                // The placement was recorded before it went out
                // (`runs::begin_run`). The host may already have reported
                // "started" (then the
                // shadow has logged the start).
                let current = q.get(job.id).ok().flatten();
                let mut started_here = false;
                if let Some(before) = current.filter(|r| r.state == JobState::Idle) {
                    match q.transition(
                        job.id,
                        JobState::Running,
                        &format!("placed on host {} as {guest_id}", g.host),
                        at,
                    ) {
                        Ok(_) => {
                            home.meters.job_started(&before, at);
                            started_here = true
                        }
                        Err(e) => {
                            tracing::warn!(job = %job.id, error = %e, "cannot mark job running")
                        }
                    }
                }
                started_here
            };
            // The lease runs from the placement, not from an earlier run.
            // Only now, after the queue says running: the shadow's
            // endpoints look at the phase before the queue row
            // (`http::remote_job_record`), so they never see neither.
            home.remote.placed(job.id);
            if !home.claims.placed(g, job.id) {
                // The coordinator preempted the claim while this placement
                // was on its way: the job leaves again.
                spawn_vacate(home, job.id, "preempted: its claim was given up");
            }
            if started_here {
                let host = g.host.clone();
                user_log(home, job.id, at, UserEvent::Executing { host }).await;
            }
            tracing::info!(job = %job.id, host = %g.host, seq = g.seq, "job placed");
            return true;
        }
        Ok(PlacementResponse::Rejected {
            reason: RejectReason::Unrunnable,
            message,
        }) => {
            // Refused for what the job is: a failed start like any other
            // (counted; the host avoided for a while, so its next grant
            // goes to the next idle job; held after too many).
            tracing::info!(job = %job.id, host = %g.host, message, "placement refused: job cannot run");
            let failure = StartFailure {
                code: hold_code::FAILED_TO_EXECUTE,
                subcode: 0,
                message: format!("refused by the host: {message}"),
            };
            if let Err(e) =
                start_failures::failed_start(home, job.id, &g.host, &failure, now()).await
            {
                tracing::error!(job = %job.id, error = %e, "cannot record a failed start");
            }
        }
        Ok(PlacementResponse::Rejected { reason, message }) => {
            tracing::info!(job = %job.id, host = %g.host, ?reason, message, "placement rejected");
            // Refused: no run of it exists anywhere.
            if let Err(e) = home.queue().retire_run(job.id) {
                tracing::warn!(job = %job.id, error = %e, "cannot record the refusal");
            }
        }
        Err(e) => tracing::warn!(job = %job.id, host = %g.host, error = %e, "placement failed"),
    }
    home.remote.end_placing(job.id);
    false
}

/// Passes a preemption on to the host running our job there: a claim held
/// for reuse is given up with whatever runs on it; otherwise the job named
/// is vacated.
fn preempt(home: &Arc<Home>, p: &Preemption) {
    let why = format!("preempted: {}", p.reason);
    if super::claim_reuse::retire(home, p.claim.as_deref(), p.job, &why) {
        return;
    }
    let jobs: Vec<JobId> = match p.job {
        Some(j) => vec![j],
        None => home
            .queue()
            .running_jobs()
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, host)| host.as_deref() == Some(p.host.as_str()))
            .map(|(id, _)| id)
            .collect(),
    };
    for j in jobs {
        spawn_vacate(home, j, &format!("preempted: {}", p.reason));
    }
}

/// Asks the host running `job` to vacate it, in the background. The job is
/// requeued when the host reports it evicted, not here.
pub(crate) fn spawn_vacate(home: &Arc<Home>, job: JobId, why: &str) {
    spawn_vacate_as(home, job, why, "vacate");
}

/// [`spawn_vacate`] for a hold (`kind` `hold`) or a removal (`remove`):
/// the host gives the job the signal it asked for in that case
/// (`hold_kill_sig`, `remove_kill_sig`, `want_graceful_removal`).
pub(crate) fn spawn_vacate_as(home: &Arc<Home>, job: JobId, why: &str, kind: &'static str) {
    let Some((host_name, host, claim)) = home
        .remote
        .placement(job)
        .and_then(|p| Some((p.host, p.address?, p.claim?)))
    else {
        // The lease ends such a job: the host's next renewal is refused.
        tracing::warn!(job = %job, "vacate: host address or claim unknown (placed by an older home?)");
        return;
    };
    let home = home.clone();
    let why = why.to_string();
    tokio::spawn(async move {
        let url = format!(
            "{}/v1/guests/{job}/vacate?kind={kind}",
            host.trim_end_matches('/')
        );
        let http = home.peers.station(&host_name);
        match http.post(&url).bearer_auth(&claim).send().await {
            Ok(r) if r.status().is_success() => {
                tracing::info!(%job, %host, why, "vacate requested");
            }
            Ok(r) => tracing::warn!(%job, %host, status = %r.status(), "vacate refused"),
            Err(e) => tracing::warn!(%job, %host, error = %e, "vacate failed"),
        }
    });
}
