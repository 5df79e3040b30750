//! The user API: what `glean submit`, `glean q`, `glean rm|hold|release`,
//! `glean history` and `glean tail` call on the user's own station.
//!
//! Job state lives on the submitting station (Mutka 1988 §5), so every one
//! of these requests is answered from the local queue. Reading the queue is
//! open to every caller the home serves, as `condor_q` is; changing a job
//! or reading its output needs its owner (by token or on the user socket)
//! or an administrator ([`gleaner_edge::may_act_on`]). Who is served, and
//! as which Unix account a job runs, is [`super::identity`]'s; a
//! submission's paths are checked as its owner before anything is queued
//! ([`super::submit_check`]).

use super::submit_check::queue_checked;
use super::user_log::{UserEvent, user_log_records};
use super::{Home, parse_job_id, schedd, shadow};
use crate::clock::now;
use crate::queue::{JobFilter, JobRecord};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gleaner_edge::{ApiError, Caller, body_bytes, may_act_on, parse_json};
use gleaner_proto::api::{
    ActionRequest, ActionResponse, EventInfo, JobDetail, JobInfo, SubmitBody,
};
use gleaner_proto::job::{JobId, JobState, JobStateKind};
use gleaner_proto::wire::{ErrorCode, SubmitResponse, check_version};
use std::collections::HashMap;
use std::sync::Arc;

type Q = Query<HashMap<String, String>>;
type QR = Result<Q, axum::extract::rejection::QueryRejection>;

pub(crate) fn router() -> Router<Arc<Home>> {
    Router::new()
        .route("/v1/submit", post(submit))
        .route("/v1/jobs", get(list))
        .route("/v1/jobs/{id}", get(detail))
        .route("/v1/jobs/{id}/rm", post(rm))
        .route("/v1/jobs/{id}/hold", post(hold))
        .route("/v1/jobs/{id}/release", post(release))
        .route("/v1/jobs/{id}/output/{stream}", get(output))
        .route("/v1/history", get(history))
        .route("/v1/queue/summary", get(summary))
}

fn query(q: QR) -> Result<HashMap<String, String>, ApiError> {
    q.map(|Query(m)| m)
        .map_err(|e| ApiError::bad("query", e.to_string()))
}

/// The `CMD` column: executable and arguments.
fn cmd(r: &JobRecord) -> String {
    let mut s = r.description.executable.clone();
    for a in &r.description.arguments {
        s.push(' ');
        s.push_str(a);
    }
    s
}

pub(crate) fn info(r: &JobRecord) -> JobInfo {
    JobInfo {
        id: r.id,
        owner: r.owner.clone(),
        state: r.state.clone(),
        submitted_at: r.submitted_at,
        updated_at: r.updated_at,
        started_at: r.started_at,
        finished_at: r.finished_at,
        run_count: r.run_count,
        host: r.host.clone(),
        cmd: cmd(r),
        start_failures: r.start_failures,
        hold_code: r.hold_code,
        hold_subcode: r.hold_subcode,
        completions: r.completions,
        not_before: r.not_before,
    }
}

async fn submit(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<SubmitResponse>, ApiError> {
    if !home.config.role.submits() {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "this station is execute-only and accepts no submissions",
        ));
    }
    let raw = body_bytes(raw)?;
    let mut req: SubmitBody = parse_json(&raw)?;
    check_version(req.protocol).map_err(ApiError::from)?;
    // Anything can be posted here: the submission is held to the parser's
    // rules and limits (`gleaner_proto::limits`) before anything else, and
    // again while it expands.
    req.submission
        .check()
        .map_err(|e| ApiError::bad("submission", e.to_string()))?;
    if let Some(d) = &req.submit_dir
        && !d.starts_with('/')
    {
        return Err(ApiError::bad(
            "submit_dir",
            format!("submit_dir must be an absolute path, got {d:?}"),
        ));
    }
    // The owner is who the caller is, never what the body claims, and
    // must be a Unix account the home can act as (never root).
    let fs = home.submitter(&caller)?;
    req.submission.owner = caller.name.clone();
    let at = now();
    let queued = queue_checked(&home, &fs, &req.submission, req.submit_dir.as_deref(), at).await?;
    let ids = queued.ids;
    let cluster = ids.first().map_or(0, |j| j.cluster);
    // Only a cluster with a user log has anything to write (a large one
    // without would read every job back for nothing).
    if queued.logged {
        let rows = home.queue().list(&JobFilter {
            cluster: Some(cluster),
            ..Default::default()
        })?;
        let rows: Vec<&JobRecord> = rows.iter().collect();
        let host = home.address.clone();
        user_log_records(&rows, at, &UserEvent::Submitted { host }).await;
    }
    tracing::info!(owner = %caller.name, cluster, procs = ids.len(), "cluster submitted");
    // A new demand is news for the coordinator: advertise now.
    home.news.notify_one();
    Ok(Json(SubmitResponse { cluster, jobs: ids }))
}

async fn list(State(home): State<Arc<Home>>, q: QR) -> Result<Json<Vec<JobInfo>>, ApiError> {
    let q = query(q)?;
    let mut filter = JobFilter::default();
    if let Some(o) = q.get("owner").filter(|o| !o.is_empty()) {
        filter.owner = Some(o.clone());
    }
    if let Some(s) = q.get("state").filter(|s| !s.is_empty()) {
        filter.state = Some(
            s.parse::<JobStateKind>()
                .map_err(|e| ApiError::bad("state", e.to_string()))?,
        );
    }
    if q.get("constraint").is_some_and(|c| !c.trim().is_empty()) {
        return Err(ApiError::bad(
            "constraint",
            "ClassAd constraints are not supported by this station yet; use owner= and state=",
        ));
    }
    let all = q.get("all").is_some_and(|v| v == "1" || v == "true");
    if let Some(limit) = q.get("limit") {
        // One page (issue 15, item 5): `limit` jobs after `offset`.
        let number = |name: &'static str, v: &str| {
            v.parse::<u64>()
                .map_err(|_| ApiError::bad(name, format!("{name} {v:?} is not a count")))
        };
        let limit = number("limit", limit)?.min(MAX_PAGE);
        let offset = q.get("offset").map_or(Ok(0), |o| number("offset", o))?;
        let rows = home.queue().list_page(&filter, all, offset, limit)?;
        return Ok(Json(rows.iter().map(info).collect()));
    }
    let rows = home.queue().list(&filter)?;
    // Like condor_q, the queue shows active jobs; finished ones are in
    // history unless a state filter or `all` asks for them.
    let rows = rows
        .iter()
        .filter(|r| all || filter.state.is_some() || !r.state.is_terminal())
        .map(info)
        .collect();
    Ok(Json(rows))
}

/// Most jobs one page of `GET /v1/jobs?limit=N` returns.
pub const MAX_PAGE: u64 = 10_000;

/// `GET /v1/queue/summary?owner=`: the queue by cluster and state
/// (`condor_q`'s default view), from counts alone.
async fn summary(
    State(home): State<Arc<Home>>,
    q: QR,
) -> Result<Json<gleaner_proto::api::QueueSummary>, ApiError> {
    let q = query(q)?;
    let owner = q.get("owner").filter(|o| !o.is_empty());
    Ok(Json(home.queue().summary(owner.map(String::as_str))?))
}

async fn history(State(home): State<Arc<Home>>, q: QR) -> Result<Json<Vec<JobInfo>>, ApiError> {
    let q = query(q)?;
    let owner = q.get("owner").filter(|o| !o.is_empty());
    let rows = home.queue().history(owner.map(String::as_str))?;
    Ok(Json(rows.iter().map(info).collect()))
}

async fn detail(
    State(home): State<Arc<Home>>,
    Path(id): Path<String>,
) -> Result<Json<JobDetail>, ApiError> {
    let id = parse_job_id(&id)?;
    let q = home.queue();
    let r = q
        .get(id)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such job {id}")))?;
    let events = q
        .events(id)?
        .into_iter()
        .map(|e| EventInfo {
            at: e.at,
            kind: e.kind,
            detail: e.detail,
        })
        .collect();
    Ok(Json(JobDetail {
        job: info(&r),
        description: r.description,
        events,
    }))
}

/// `12.3` is one job, `12` all procs of cluster 12 (also `condor_qedit`'s
/// targets).
pub(super) fn target_jobs(home: &Home, id: &str) -> Result<Vec<JobRecord>, ApiError> {
    let q = home.queue();
    if id.contains('.') {
        let id = parse_job_id(id)?;
        let r = q
            .get(id)?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such job {id}")))?;
        // A parallel job's member names the whole job.
        return Ok(super::gang::whole_job(&q, r));
    }
    let cluster: u64 = id.parse().map_err(|_| {
        ApiError::bad(
            "job",
            format!("invalid job id {id:?}: expected CLUSTER or CLUSTER.PROC"),
        )
    })?;
    let rows = q.list(&JobFilter {
        cluster: Some(cluster),
        ..Default::default()
    })?;
    if rows.is_empty() {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            format!("no such cluster {cluster}"),
        ));
    }
    Ok(rows)
}

/// Jobs changed per transaction by a user's action on a cluster.
const ACTION_BATCH: usize = 2_000;

#[derive(Clone, Copy)]
enum Action {
    Rm,
    Hold,
    Release,
}

async fn act(
    home: Arc<Home>,
    caller: Caller,
    id: String,
    raw: Result<axum::body::Bytes, BytesRejection>,
    action: Action,
) -> Result<Json<ActionResponse>, ApiError> {
    let raw = body_bytes(raw)?;
    let req: ActionRequest = if raw.iter().all(u8::is_ascii_whitespace) {
        ActionRequest::default()
    } else {
        parse_json(&raw)?
    };
    let jobs = target_jobs(&home, &id)?;
    // All or nothing: one foreign job refuses the whole request.
    if let Some(j) = jobs.iter().find(|j| !may_act_on(&caller, &j.owner)) {
        tracing::warn!(user = %caller.name, job = %j.id, owner = %j.owner, "refused action on another user's job");
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("job {} belongs to {}", j.id, j.owner),
        ));
    }
    let by = &caller.name;
    let reason = req.reason.unwrap_or_default();
    let (to, detail) = match action {
        Action::Rm => (
            JobState::Removed,
            format!("removed by {by}{}", suffix(&reason)),
        ),
        Action::Hold => {
            let why = if reason.is_empty() {
                format!("held by {by}")
            } else {
                reason.clone()
            };
            (
                JobState::Held {
                    reason: why.clone(),
                },
                why,
            )
        }
        Action::Release => (
            JobState::Idle,
            format!("released by {by}{}", suffix(&reason)),
        ),
    };
    let event = match action {
        Action::Rm => UserEvent::Aborted {
            reason: detail.clone(),
        },
        Action::Hold => UserEvent::Held {
            reason: detail.clone(),
            code: gleaner_proto::wire::hold_code::USER_REQUEST,
            subcode: 0,
        },
        Action::Release => UserEvent::Released {
            reason: detail.clone(),
        },
    };
    let at = now();
    let mut resp = ActionResponse::default();
    let kind = match action {
        Action::Rm => "remove",
        Action::Hold => "hold",
        Action::Release => "vacate",
    };
    // A few thousand jobs per transaction: one commit for each, and the
    // queue free for the home's other work in between.
    for chunk in jobs.chunks(ACTION_BATCH) {
        let ids: Vec<JobId> = chunk.iter().map(|j| j.id).collect();
        let outcomes = home.queue().transition_many(&ids, &to, &detail, at)?;
        let mut changed = Vec::with_capacity(chunk.len());
        for (j, outcome) in chunk.iter().zip(outcomes) {
            match outcome {
                Ok(from) => {
                    resp.changed.push(j.id);
                    changed.push(j);
                    // The state it was in when it changed, not when listed.
                    if matches!(from, JobState::Running | JobState::Suspended) {
                        schedd::spawn_vacate_as(&home, j.id, &detail, kind);
                        // Nothing more of this run is heard: not its
                        // output, nor its eviction report (which would
                        // undo a hold).
                        super::runs::retire_run(&home, j.id);
                    }
                }
                Err(crate::queue::QueueError::IllegalTransition { source, .. }) => {
                    resp.skipped.push((j.id, source.to_string()));
                }
                Err(crate::queue::QueueError::NotFound(id)) => {
                    resp.skipped.push((id, "no such job".into()));
                }
                Err(e) => return Err(e.into()),
            }
        }
        user_log_records(&changed, at, &event).await;
    }
    // Acknowledged to the user: every change on disk before the answer
    // (one sync for a whole cluster, `queue::durability`).
    home.queue().sync_now();
    if resp.changed.is_empty() && !resp.skipped.is_empty() {
        let why: Vec<String> = resp
            .skipped
            .iter()
            .map(|(j, w)| format!("{j}: {w}"))
            .collect();
        return Err(ApiError::new(ErrorCode::Conflict, why.join("; ")));
    }
    // A parallel job runs again whole: with the members that exited
    // before rank 0 in its last run.
    if matches!(action, Action::Release)
        && let Some(j) = jobs.first().filter(|j| j.description.gang.is_some())
    {
        super::gang::after_release(&home, j.id.cluster);
    }
    tracing::info!(user = %by, changed = resp.changed.len(), "job action applied");
    home.news.notify_one();
    Ok(Json(resp))
}

fn suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

async fn rm(
    State(home): State<Arc<Home>>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<ActionResponse>, ApiError> {
    act(home, c, id, raw, Action::Rm).await
}

async fn hold(
    State(home): State<Arc<Home>>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<ActionResponse>, ApiError> {
    act(home, c, id, raw, Action::Hold).await
}

async fn release(
    State(home): State<Arc<Home>>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<ActionResponse>, ApiError> {
    act(home, c, id, raw, Action::Release).await
}

/// stdout/stderr received so far, from `offset` (visible while the job
/// runs: the shadow appends as the host streams).
/// Response header of `GET /v1/jobs/{id}/output/{stream}`: the stream's
/// whole length so far.
pub const OUTPUT_SIZE_HEADER: &str = "x-gleaner-output-size";

async fn output(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path((id, stream)): Path<(String, String)>,
    q: QR,
) -> Result<([(&'static str, String); 1], Vec<u8>), ApiError> {
    let id: JobId = parse_job_id(&id)?;
    let stream = shadow::Stream::parse(&stream)?;
    let q = query(q)?;
    let count = |name: &'static str, default: u64| -> Result<u64, ApiError> {
        match q.get(name) {
            Some(o) => o
                .parse()
                .map_err(|_| ApiError::bad(name, format!("{name} {o:?} is not a byte count"))),
            None => Ok(default),
        }
    };
    let offset = count("offset", 0)?;
    let max = count("max", shadow::MAX_OUTPUT_READ)?.min(shadow::MAX_OUTPUT_READ);
    let owner = home
        .queue()
        .get(id)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such job {id}")))?
        .owner;
    if !may_act_on(&caller, &owner) {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("job {id} belongs to {owner}"),
        ));
    }
    let (data, size) = shadow::read_stream(&home, id, stream, offset, max).await?;
    // The whole length, so that a reader knows what is left (and sees a
    // new run's output start again from zero).
    Ok(([(OUTPUT_SIZE_HEADER, size.to_string())], data))
}
