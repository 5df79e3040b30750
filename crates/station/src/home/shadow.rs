//! The shadow: the home station's side of each of its jobs that runs on
//! another station (HTCondor's condor_shadow; Mutka 1988 §5 keeps job
//! state at the submitting station).
//!
//! The host's starter calls these endpoints with its station token, and
//! only the station the job is placed on (or an administrator) is heard
//! ([`super::host_caller`]):
//! - `GET /v1/shadow/{job}/input/{name}`: one sandbox file, read from the
//!   job's initial directory. Only the executable, `input` and
//!   `transfer_input_files` are served; anything else, and any other path
//!   with `..` or a leading `/`, is refused.
//! - `POST /v1/shadow/{job}/output/{stream}?offset=N&run=R`: appends
//!   stdout or stderr to the spool (`spool/<job>/stdout`, private to the
//!   daemon). Idempotent: a retried chunk that is already stored is
//!   accepted again; a chunk that would leave a gap is 409 (field
//!   `offset`), so that the starter resends from the stored length.
//! - `PUT /v1/shadow/{job}/files/{name}?run=R`: an output file after exit.
//! - `POST /v1/jobs/{job}/status`: a [`JobStatusReport`]; state changes go
//!   through the queue's transition table. On completion the spooled
//!   stdout/stderr and output files are staged beside the paths named in
//!   the submit description (relative to the initial directory), as the
//!   job's owner, and renamed into place once the completion is committed
//!   ([`super::deliver`]); what cannot be delivered stays in the spool,
//!   and the problem goes into the job's history and user log.
//!
//! Every request names its run (`run=R`, or the report's `run`): only the
//! job's current run is heard; any other gets 409 (field `run`) and nothing
//! is stored ([`super::runs`]).
//!
//! Inputs are read and outputs written with the owner's rights
//! ([`super::as_owner`]), never root's.
//!
//! Every event also goes to the user log ([`super::user_log`]).

use super::as_owner::{api_error, as_owner, io_error};
use super::host_caller::require_host_of;
use super::http::{job_record, remote_job_record};
use super::private;
use super::runs::{require_current_run, run_param};
use super::user_log::{UserEvent, user_log};
use super::{Home, deliver, job_policy, parse_job_id, start_failures};
use crate::clock::now;
use crate::queue::JobRecord;
use crate::userfs::Op;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::routing::{get, post, put};
use axum::{Extension, Json, Router};
use gleaner_edge::{ApiError, Caller, body_bytes, parse_json, require_station};
use gleaner_proto::api::{AppendResponse, StoredResponse};
use gleaner_proto::job::{JobEventKind, JobId, JobState, JobStateKind};
use gleaner_proto::wire::{ErrorCode, JobStatusReport, check_version, hold_code};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Component, PathBuf};
use std::sync::Arc;

/// What a user token hears on a shadow endpoint: they are for stations
/// (and administrators debugging).
pub(crate) const STATIONS_ONLY: &str = "shadow endpoints need a station token";

pub(crate) fn router() -> Router<Arc<Home>> {
    Router::new()
        .route("/v1/shadow/{job}/input/{name}", get(input))
        .route("/v1/shadow/{job}/output/{stream}", post(append))
        .route("/v1/shadow/{job}/files/{name}", put(store_file))
        .route("/v1/jobs/{job}/status", post(status))
}

/// A job's captured output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        match s {
            "stdout" => Ok(Stream::Stdout),
            "stderr" => Ok(Stream::Stderr),
            _ => Err(ApiError::bad(
                "stream",
                format!("unknown stream {s:?}: expected stdout or stderr"),
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

fn iwd(r: &JobRecord) -> Result<PathBuf, ApiError> {
    r.description
        .iwd
        .as_deref()
        .map(PathBuf::from)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::Conflict,
                format!("job {} has no initial directory", r.id),
            )
        })
}

fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

fn basename(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().unwrap_or(p)
}

/// Maps a requested input name to the file to serve. The name must be one
/// of the job's declared inputs, as written or by its base name; anything
/// else is refused before the file system is touched.
fn input_path(r: &JobRecord, name: &str) -> Result<PathBuf, ApiError> {
    let d = &r.description;
    let mut declared: Vec<&str> = vec![d.executable.as_str()];
    declared.extend(d.input.as_deref().filter(|_| !d.untransferred.input));
    declared.extend(d.transfer_input_files.iter().map(String::as_str));
    let entry = if let Some(e) = declared.iter().find(|e| **e == name) {
        *e
    } else {
        let traversal = name.starts_with('/')
            || PathBuf::from(name)
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::RootDir));
        if traversal || name.contains('\0') {
            tracing::warn!(job = %r.id, name, "input path traversal refused");
            return Err(ApiError::field(
                ErrorCode::Forbidden,
                "name",
                format!("{name:?} is not a declared input file"),
            ));
        }
        let mut hits = declared.iter().filter(|e| basename(e) == name);
        match (hits.next(), hits.next()) {
            (Some(e), None) => *e,
            _ => {
                return Err(ApiError::field(
                    ErrorCode::Forbidden,
                    "name",
                    format!("{name:?} is not a declared input file of job {}", r.id),
                ));
            }
        }
    };
    if entry.starts_with('/') {
        Ok(PathBuf::from(entry))
    } else {
        Ok(iwd(r)?.join(entry))
    }
}

async fn input(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path((id, name)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Vec<u8>, ApiError> {
    require_station(&caller, STATIONS_ONLY)?;
    let id = parse_job_id(&id)?;
    let r = job_record(&home, id)?;
    // Users' files go to the job's host only, for its current run.
    require_host_of(&home, &caller, &r, None)?;
    require_current_run(&home, id, run_param(&q))?;
    if r.state.is_terminal() || r.state.kind() == JobStateKind::Held {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} is {}: no sandbox to transfer", r.state),
        ));
    }
    let path = input_path(&r, &name)?;
    // Read as the job's owner: what they could not read, no host gets.
    let target = path.clone();
    as_owner(&r.owner, move |u| {
        let mut data = Vec::new();
        u.open_read(&target)?
            .read_to_end(&mut data)
            .map_err(|e| io_error(Op::Read, &target, &u.user().name, e))?;
        Ok(data)
    })
    .await
    .map_err(|e| {
        tracing::warn!(job = %id, path = %path.display(), error = %e, "input not served");
        api_error("name", &e)
    })
}

fn stream_path(home: &Home, id: JobId, s: Stream) -> PathBuf {
    home.spool_for(id).join(s.name())
}

/// Most bytes one read of a job's output returns: a longer output is read
/// in pieces (by `offset`), so the home never holds more of it in memory
/// for one request, however much the job wrote.
pub(crate) const MAX_OUTPUT_READ: u64 = 4 << 20;

/// Output received so far from `offset`, at most `max` bytes of it, and
/// the stream's whole length (0 when nothing was received).
pub(crate) async fn read_stream(
    home: &Home,
    id: JobId,
    s: Stream,
    offset: u64,
    max: u64,
) -> Result<(Vec<u8>, u64), ApiError> {
    let path = stream_path(home, id, s);
    let read = tokio::task::spawn_blocking(move || read_range(&path, offset, max)).await;
    match read {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => {
            tracing::error!(job = %id, error = %e, "cannot read spooled output");
            Err(ApiError::new(
                ErrorCode::Internal,
                "cannot read spooled output",
            ))
        }
        Err(e) => {
            tracing::error!(job = %id, error = %e, "spooled output reader failed");
            Err(ApiError::new(
                ErrorCode::Internal,
                "cannot read spooled output",
            ))
        }
    }
}

/// Up to `max` bytes of the file at `path` from `offset`, and its length.
fn read_range(path: &std::path::Path, offset: u64, max: u64) -> std::io::Result<(Vec<u8>, u64)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len();
    let start = offset.min(len);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    f.take(max.min(len - start)).read_to_end(&mut buf)?;
    Ok((buf, len))
}

async fn append(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path((id, stream)): Path<(String, String)>,
    q: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<AppendResponse>, ApiError> {
    require_station(&caller, STATIONS_ONLY)?;
    let id = parse_job_id(&id)?;
    let s = Stream::parse(&stream)?;
    let Query(q) = q.map_err(|e| ApiError::bad("offset", e.to_string()))?;
    let offset: u64 = q
        .get("offset")
        .ok_or_else(|| ApiError::bad("offset", "offset is required"))?
        .parse()
        .map_err(|_| ApiError::bad("offset", "offset is not a byte count"))?;
    let data = body_bytes(raw)?;
    let (r, remote) = remote_job_record(&home, id)?;
    require_host_of(&home, &caller, &r, None)?;
    if !remote {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} is {}: not accepting output", r.state),
        ));
    }
    let _guard = home.spool_lock.lock().await;
    // Under the spool lock: a run's start resets the spool under it too.
    require_current_run(&home, id, run_param(&q))?;
    let dir = home.spool_for(id);
    private::create_dir(&dir)
        .map_err(|e| private::spool_error("cannot create spool directory", &dir, e))?;
    let path = stream_path(&home, id, s);
    let len = std::fs::metadata(&path).map_or(0, |m| m.len());
    if offset > len {
        return Err(ApiError::field(
            ErrorCode::Conflict,
            "offset",
            format!(
                "offset {offset} leaves a gap: {len} bytes of {} are stored",
                s.name()
            ),
        ));
    }
    let end = offset.saturating_add(data.len() as u64);
    if end > len {
        // Within the spool's bounds, or the job is held (`spool`).
        super::spool::admit(&home, &r, end - len)?;
        // Only the part past what is stored is new; the rest is a retry.
        let skip = usize::try_from(len - offset).unwrap_or(usize::MAX);
        let mut f = private::options()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| private::spool_error("cannot open spooled output", &path, e))?;
        if let Err(e) = f.write_all(data.get(skip..).unwrap_or_default()) {
            // No part of a chunk stays: the retry finds the old length
            // (and a full disk gets back what the part took).
            let _ = f.set_len(len);
            return Err(private::spool_error(
                "cannot write spooled output",
                &path,
                e,
            ));
        }
        super::spool::stored(&home, id, &r.owner, end - len);
    }
    Ok(Json(AppendResponse {
        length: end.max(len),
    }))
}

async fn store_file(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path((id, name)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<StoredResponse>, ApiError> {
    require_station(&caller, STATIONS_ONLY)?;
    let id = parse_job_id(&id)?;
    if !is_plain_name(&name) {
        tracing::warn!(job = %id, name, "output file name refused");
        return Err(ApiError::bad(
            "name",
            format!("{name:?} is not a plain file name"),
        ));
    }
    let data = body_bytes(raw)?;
    let (r, remote) = remote_job_record(&home, id)?;
    require_host_of(&home, &caller, &r, None)?;
    if !remote {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} is {}: not accepting output files", r.state),
        ));
    }
    if let Some(list) = &r.description.transfer_output_files
        && !list.iter().any(|e| basename(e) == name)
    {
        return Err(ApiError::field(
            ErrorCode::Forbidden,
            "name",
            format!("{name:?} is not in transfer_output_files"),
        ));
    }
    let _guard = home.spool_lock.lock().await;
    require_current_run(&home, id, run_param(&q))?;
    let dir = home.spool_for(id).join("files");
    // Within the spool's bounds, or the job is held (`spool`): what the
    // file adds over one of the same name stored before.
    let before = std::fs::symlink_metadata(dir.join(&name)).map_or(0, |m| m.len());
    super::spool::admit(&home, &r, (data.len() as u64).saturating_sub(before))?;
    private::create_dir(&dir)
        .map_err(|e| private::spool_error("cannot create spool directory", &dir, e))?;
    // Write then rename, so that a retried upload never leaves half a file.
    let tmp = dir.join(format!(".{name}.part"));
    if let Err(e) = private::write(&tmp, &data) {
        let _ = std::fs::remove_file(&tmp);
        return Err(private::spool_error("cannot store output file", &tmp, e));
    }
    std::fs::rename(&tmp, dir.join(&name))
        .map_err(|e| ApiError::internal("cannot store output file", e))?;
    super::spool::measure(&home, id, &r.owner);
    Ok(Json(StoredResponse {
        ok: true,
        detail: format!("{} bytes", data.len()),
    }))
}

async fn status(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<StoredResponse>, ApiError> {
    require_station(&caller, STATIONS_ONLY)?;
    let id = parse_job_id(&id)?;
    let raw = body_bytes(raw)?;
    let rep: JobStatusReport = parse_json(&raw)?;
    check_version(rep.protocol).map_err(ApiError::from)?;
    if rep.job_id != id {
        return Err(ApiError::bad(
            "job_id",
            format!("report is for {} but was sent to {id}", rep.job_id),
        ));
    }
    let r = job_record(&home, id)?;
    require_host_of(&home, &caller, &r, Some(&rep.host))?;
    if !home.remote.speaks_for(id, r.host.as_deref(), &rep.host) {
        tracing::warn!(job = %id, host = %rep.host, "status report from a former host refused");
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} no longer runs on {}", rep.host),
        ));
    }
    let run = rep.run.as_ref().map(ToString::to_string);
    require_current_run(&home, id, run.as_deref())?;
    home.remote.touch(id);
    let at = now();
    if matches!(rep.event, JobEventKind::Checkpointed | JobEventKind::Placed) {
        home.queue().annotate(id, rep.event, &rep.detail, at)?;
        return Ok(Json(StoredResponse {
            ok: true,
            detail: "recorded".into(),
        }));
    }
    if let Some(failure) = &rep.start_failure {
        // The program could not start: counted, and back to the queue or
        // on hold (poison jobs, `start_failures`).
        let done = start_failures::failed_start(&home, id, &rep.host, failure, at).await?;
        home.remote.reported(id, false);
        tracing::info!(job = %id, host = %rep.host, state = %done.record.state, "failed start applied");
        return Ok(Json(StoredResponse {
            ok: true,
            detail: done.record.state.to_string(),
        }));
    }
    if rep.event == JobEventKind::Started {
        // The program runs: a series of failed starts is over.
        start_failures::started(&home, id);
    }
    if r.state.kind() == rep.state.kind() {
        // A retried report: already applied.
        return Ok(Json(StoredResponse {
            ok: true,
            detail: "already applied".into(),
        }));
    }
    let mut detail = if rep.detail.is_empty() {
        format!("on {}", rep.host)
    } else {
        format!("on {}: {}", rep.host, rep.detail)
    };
    let mut requeued: Option<(i32, String)> = None;
    let new = if let JobState::Completed { exit_code } = rep.state {
        // The job's on_exit_hold may keep it in the queue, held, and its
        // on_exit_remove (max_retries, a cron job) send it back to the
        // queue; its outputs are delivered all the same, as in HTCondor.
        let decision = job_policy::on_exit(&r, exit_code, at);
        let policy_hold = match &decision {
            job_policy::OnExit::Hold(h) => Some(h.clone()),
            _ => None,
        };
        let target = match &decision {
            job_policy::OnExit::Hold(h) => {
                detail.push_str(&format!(" (exit code {exit_code}; held by on_exit_hold)"));
                JobState::Held {
                    reason: h.reason.clone(),
                }
            }
            job_policy::OnExit::Requeue(why) => {
                detail.push_str(&format!(" (exit code {exit_code}; requeued: {why})"));
                requeued = Some((exit_code, why.clone()));
                JobState::Idle
            }
            job_policy::OnExit::Complete => rep.state.clone(),
        };
        // Outputs are written aside first and put in place only once the
        // completion is durable; in a task of its own, so that a request
        // dropped halfway never leaves it half done (deliver.rs).
        let task = tokio::spawn(deliver::complete(
            home.clone(),
            r.clone(),
            target,
            detail,
            at,
        ));
        let (new, full) = task
            .await
            .map_err(|e| ApiError::internal("completion failed", e))??;
        detail = full;
        if let Some(h) = &policy_hold
            && matches!(new.state, JobState::Held { .. })
        {
            home.queue()
                .set_hold_code(id, hold_code::JOB_POLICY, h.subcode)?;
            super::runs::retire_run(&home, id);
        }
        if requeued.is_some() && new.state == JobState::Idle {
            // This run is over; the next placement is a new one.
            super::runs::retire_run(&home, id);
        }
        new
    } else {
        let new = home
            .queue()
            .transition(id, rep.state.clone(), &detail, at)?;
        // A hold by the host with a code of its own (a deferred job that
        // missed its start: 20).
        if let (Some(code), JobState::Held { .. }) = (rep.hold_code, &new.state) {
            home.queue().set_hold_code(id, code, 0)?;
        }
        let new = home.queue().get(id)?.unwrap_or(new);
        if r.state == JobState::Idle && new.state.kind() == JobStateKind::Running {
            home.meters.job_started(&r, at);
        }
        new
    };
    // A full disk (the home's spool, the host's sandbox) is no reason to
    // keep the job off the host for long: it stays queued and may return
    // there as soon as space does (issue 14).
    // A gang member leaves with its gang, which is placed again whole: no
    // member avoids its host (its class would split from the others').
    if rep.event == JobEventKind::Evicted
        && !crate::disk::says_full(&rep.detail)
        && r.description.gang.is_none()
    {
        // Resource feedback (Neeracher 1998 §4): not this host again soon.
        home.remote.avoid_host(id, &rep.host);
    }
    let still_remote = matches!(new.state, JobState::Running | JobState::Suspended);
    home.remote.reported(id, still_remote);
    let event = match &new.state {
        JobState::Running if r.state.kind() == JobStateKind::Suspended => UserEvent::Unsuspended,
        JobState::Running => UserEvent::Executing {
            host: rep.host.clone(),
        },
        JobState::Suspended => UserEvent::Suspended,
        JobState::Idle => match requeued {
            Some((exit_code, reason)) => UserEvent::Requeued { exit_code, reason },
            None => UserEvent::Evicted {
                checkpointed: super::user_log::checkpointed_this_run(&home, id),
                reason: detail.clone(),
            },
        },
        JobState::Held { reason } => UserEvent::Held {
            reason: reason.clone(),
            code: new.hold_code.unwrap_or(0),
            subcode: new.hold_subcode.unwrap_or(0),
        },
        JobState::Completed { exit_code } => UserEvent::Terminated {
            exit_code: *exit_code,
            detail: detail.clone(),
        },
        JobState::Removed => UserEvent::Aborted {
            reason: detail.clone(),
        },
    };
    user_log(&home, id, at, event).await;
    // A parallel job's member: what the report means for its gang.
    super::gang::after_report(&home, &r, &new);
    if !still_remote {
        // A completion leaves its claim to the next job of its class (claim
        // reuse); any other end of the run ended the claim on the host.
        let reused = if matches!(rep.state, JobState::Completed { .. }) {
            super::claim_reuse::after_completion(&home, id)
        } else {
            super::claim_reuse::after_departure(&home, id);
            false
        };
        // A host came free or a job came back: tell the coordinator now
        // (a reused claim tells it when it goes back).
        if !reused {
            home.news.notify_one();
        }
    }
    tracing::info!(job = %id, host = %rep.host, state = %new.state, "status report applied");
    Ok(Json(StoredResponse { ok: true, detail }))
}
