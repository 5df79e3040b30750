//! The home's checkpoint store: checkpoints of this station's jobs, sent
//! by their hosts.
//!
//! Endpoints (the job's host's station token, or an administrator's),
//! next to the shadow's:
//! - `PUT /v1/shadow/{job}/checkpoint`: a checkpoint bundle
//!   ([`crate::checkpoint`]), received through the station-wide token
//!   bucket (`checkpoint_bytes_per_sec`) so that a storm of checkpoints
//!   never saturates the owner's disk or network (Mutka 1988 §2.6 on
//!   throttling), and checked and written to a temporary file as it
//!   arrives (`checkpoint::store`: every chunk's digest, the root, synced),
//!   then rotated in: `latest.ckpt` becomes `previous.ckpt`. An upload may
//!   name the latest checkpoint as its base and send only the chunks that
//!   changed; the stored bundle is whole all the same. A base that is not
//!   the latest here is 409 (field `base`): the host sends it whole. A
//!   corrupt or partial bundle is refused (422-style `bad_request`), the
//!   last good one stays, and the refusal goes to the job's history and
//!   user log.
//! - `GET /v1/shadow/{job}/checkpoint`: the latest checkpoint that is
//!   whole (else the previous one; 404 if none), as stored: the host checks
//!   every digest as it restores. One that fails there is refused at
//!   restore: the host asks again with `?verify=1`, and the home checks
//!   its copies itself, sets aside any that fails (`*.ckpt.corrupt`),
//!   records it in the job's history and serves the newest good one.
//!   Serving a checkpoint also cuts the spooled stdout/stderr back to the
//!   lengths recorded in it, so the restored run's output continues
//!   exactly where the checkpoint was.
//!
//! Both take the run as `?run=R` and hear only the job's current run
//! (`super::runs`): 409 for any other, so a stale run never replaces the
//! current run's checkpoint. Both count as a sign of life for the job's
//! lease ([`super::lease`]).

use super::runs::{require_current_run, run_param};
use super::shadow::STATIONS_ONLY;
use super::user_log::{UserEvent, user_log};
use super::{Home, parse_job_id};
use crate::checkpoint::{
    CheckpointError, Manifest, RateMeter, SharedBucket, StoreError, Stored, check_stored,
};
use crate::clock::now;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::routing::put;
use axum::{Extension, Json, Router};
use futures_util::StreamExt;
use gleaner_edge::{ApiError, Caller, require_station};
use gleaner_proto::api::StoredResponse;
use gleaner_proto::job::{JobEventKind, JobId};
use gleaner_proto::wire::ErrorCode;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Name of the newest good checkpoint in `spool/<job>/ckpt/`.
pub const LATEST: &str = "latest.ckpt";
/// The one before it, kept for roll-back.
pub const PREVIOUS: &str = "previous.ckpt";

/// The store's limits and meters.
#[derive(Debug)]
pub struct CkptStore {
    max_bytes: u64,
    /// Throttles checkpoint transfers, summed over all jobs.
    pub bucket: SharedBucket,
    /// Measured receive rate of checkpoints (bytes/s).
    pub rate: RateMeter,
}

impl CkptStore {
    pub fn new(bytes_per_sec: u64, max_bytes: u64) -> Self {
        CkptStore {
            max_bytes,
            bucket: SharedBucket::new(bytes_per_sec),
            rate: RateMeter::default(),
        }
    }
}

pub(crate) fn router() -> Router<Arc<Home>> {
    Router::new().route(
        "/v1/shadow/{job}/checkpoint",
        put(store_checkpoint).get(fetch_checkpoint),
    )
}

pub(crate) fn ckpt_dir(home: &Home, id: JobId) -> PathBuf {
    home.spool_for(id).join("ckpt")
}

/// The job a checkpoint upload or fetch names, for a station and a job
/// that runs remotely; otherwise the refusal ends with `refused`. Counts as
/// a sign of life for the job's lease.
fn checkpoint_job(
    home: &Home,
    caller: &Caller,
    id: &str,
    run: Option<&str>,
    refused: &str,
) -> Result<JobId, ApiError> {
    require_station(caller, STATIONS_ONLY)?;
    let id = parse_job_id(id)?;
    let (r, remote) = super::http::remote_job_record(home, id)?;
    super::host_caller::require_host_of(home, caller, &r, None)?;
    if !remote {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} is {}: {refused}", r.state),
        ));
    }
    // Only the current run's checkpoints (issue 14): a stale run's would
    // roll the job back to a state the current run never had.
    require_current_run(home, id, run)?;
    home.remote.touch(id);
    Ok(id)
}

/// Records a refused checkpoint in the history and the user log.
async fn record_rejection(home: &Home, id: JobId, why: &str) {
    let at = now();
    let detail = format!("checkpoint rejected, previous kept: {why}");
    home.meters.checkpoints_rejected.inc();
    let res = home
        .queue()
        .annotate(id, JobEventKind::Checkpointed, &detail, at);
    if let Err(e) = res {
        tracing::warn!(job = %id, error = %e, "cannot record checkpoint rejection");
    }
    let text = format!("Checkpoint rejected, previous kept: {why}");
    user_log(home, id, at, UserEvent::Generic { text }).await;
    tracing::warn!(job = %id, why, "checkpoint rejected");
}

async fn store_checkpoint(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    body: Body,
) -> Result<Json<StoredResponse>, ApiError> {
    let run = run_param(&q);
    let id = checkpoint_job(&home, &caller, &id, run, "not accepting checkpoints")?;
    let dir = ckpt_dir(&home, id);
    super::private::create_dir(&dir)
        .map_err(|e| super::private::spool_error("cannot create checkpoint dir", &dir, e))?;
    let tmp = dir.join(format!(
        ".incoming-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let started = Instant::now();
    let (received, wire) = receive(&home, body, &tmp, dir.join(LATEST)).await;
    let stored = match received {
        Ok(s) => s,
        Err(StoreError::BaseMismatch(b)) => {
            // Not a fault: the host sends it whole next.
            let _ = std::fs::remove_file(&tmp);
            tracing::info!(job = %id, base = %b, "checkpoint based on one the home no longer holds");
            return Err(ApiError::field(
                ErrorCode::Conflict,
                "base",
                format!("checkpoint base {b} is not the latest here: send it whole"),
            ));
        }
        Err(StoreError::Bad(e)) => {
            let _ = std::fs::remove_file(&tmp);
            let why = e.to_string();
            record_rejection(&home, id, &why).await;
            return Err(ApiError::bad("body", format!("checkpoint rejected: {why}")));
        }
    };
    let elapsed = started.elapsed();
    let manifest = stored.manifest;
    {
        let _guard = home.spool_lock.lock().await;
        // Again under the lock: the run may have been replaced while the
        // bundle came in.
        if let Err(e) = require_current_run(&home, id, run) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        let latest = dir.join(LATEST);
        if latest.exists() {
            std::fs::rename(&latest, dir.join(PREVIOUS))
                .map_err(|e| ApiError::internal("cannot rotate checkpoints", e))?;
        }
        std::fs::rename(&tmp, &latest)
            .map_err(|e| ApiError::internal("cannot store checkpoint", e))?;
        // A readable copy of the manifest, for people and tools.
        if let Ok(j) = serde_json::to_vec_pretty(&manifest) {
            let _ = super::private::write(&dir.join("latest.manifest.json"), &j);
        }
    }
    // The rate a migration would see: the checkpoint's size over the time
    // it took to arrive (compression and unsent chunks make it faster).
    let bytes = manifest.payload_bytes();
    home.ckpt.rate.record(bytes, elapsed);
    home.meters.checkpoints_stored.inc();
    home.meters.checkpoint_bytes.inc_by(wire);
    home.meters.checkpoint_seconds.inc_by(elapsed.as_secs_f64());
    home.meters
        .checkpoint_duration
        .observe(elapsed.as_secs_f64());
    let mut detail = format!(
        "{} checkpoint #{}: {} file(s), {bytes} bytes in {:.3} s",
        manifest.backend,
        manifest.seq,
        manifest.files.len(),
        elapsed.as_secs_f64()
    );
    if wire != bytes {
        detail.push_str(&format!(" ({wire} bytes sent"));
        if stored.from_base > 0 {
            detail.push_str(&format!(", {} chunk(s) unchanged", stored.from_base));
        }
        detail.push(')');
    }
    let at = now();
    home.queue()
        .annotate(id, JobEventKind::Checkpointed, &detail, at)?;
    user_log(
        &home,
        id,
        at,
        UserEvent::Checkpointed {
            bytes,
            detail: detail.clone(),
        },
    )
    .await;
    tracing::info!(job = %id, %detail, "checkpoint stored");
    Ok(Json(StoredResponse { ok: true, detail }))
}

/// Streams the body through the station's token bucket into a checker on
/// a blocking thread, which stores it at `path` (against the latest
/// checkpoint as base) as it comes. Returns what was stored and the bytes
/// received.
async fn receive(
    home: &Home,
    body: Body,
    path: &std::path::Path,
    base: PathBuf,
) -> (Result<Stored, StoreError>, u64) {
    let file = match super::private::create(path) {
        Ok(f) => f,
        Err(e) => {
            let msg = format!("cannot store: {}", crate::disk::describe(path, &e));
            return (Err(StoreError::Bad(CheckpointError::Corrupt(msg))), 0);
        }
    };
    let (tx, mut reader) = crate::checkpoint::stream::channel();
    let max = home.ckpt.max_bytes;
    let p = path.to_path_buf();
    let checker = tokio::task::spawn_blocking(move || {
        crate::checkpoint::receive(&mut reader, &file, &p, Some(&base), max)
    });
    let mut stream = body.into_data_stream();
    let mut total = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                let _ = tx
                    .send(Err(std::io::Error::other(format!("partial upload: {e}"))))
                    .await;
                break;
            }
        };
        total += chunk.len() as u64;
        if total > max {
            let _ = tx
                .send(Err(std::io::Error::other(format!(
                    "larger than max_checkpoint_bytes ({max})"
                ))))
                .await;
            break;
        }
        home.ckpt.bucket.take(chunk.len() as u64).await;
        if tx.send(Ok(chunk)).await.is_err() {
            // The checker stopped: its error says why.
            break;
        }
    }
    drop(tx);
    let stored = match checker.await {
        Ok(r) => r,
        Err(e) => Err(StoreError::Bad(CheckpointError::Corrupt(format!(
            "checker failed: {e}"
        )))),
    };
    (stored, total)
}

/// A checkpoint to serve (path and manifest), and those set aside (name,
/// why).
pub(crate) type Best = (Option<(PathBuf, Manifest)>, Vec<(String, String)>);

/// The newest checkpoint that is whole, with its manifest, and the
/// stored checkpoints set aside on the way (name, why): a chunked one is
/// checked by its header and end frame (the host restoring it checks every
/// digest), one in the first format in full. With `verify` (a host found
/// one corrupt while restoring), every digest is checked here. One that
/// fails is renamed `*.corrupt`: it is never served again, nor rotated
/// into `previous.ckpt`.
pub(crate) fn best_checkpoint(home: &Home, id: JobId, verify: bool) -> Best {
    let dir = ckpt_dir(home, id);
    let mut set_aside = Vec::new();
    for name in [LATEST, PREVIOUS] {
        let p = dir.join(name);
        if !p.exists() {
            continue;
        }
        let checked = if verify {
            std::fs::File::open(&p)
                .map_err(|e| CheckpointError::Io {
                    path: p.clone(),
                    source: e,
                })
                .and_then(|f| {
                    crate::checkpoint::verify(
                        &mut std::io::BufReader::with_capacity(1 << 20, f),
                        crate::checkpoint::pack::default_threads(),
                    )
                })
                .map(|u| u.manifest)
        } else {
            check_stored(&p)
        };
        match checked {
            Ok(m) => return (Some((p, m)), set_aside),
            Err(CheckpointError::Io { .. }) => continue,
            Err(e) => {
                tracing::warn!(job = %id, file = name, error = %e, "stored checkpoint fails verification; set aside");
                if let Err(e) = std::fs::rename(&p, dir.join(format!("{name}.corrupt"))) {
                    tracing::warn!(job = %id, file = name, error = %e, "cannot set a corrupt checkpoint aside");
                }
                set_aside.push((name.to_string(), e.to_string()));
            }
        }
    }
    (None, set_aside)
}

async fn fetch_checkpoint(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<axum::response::Response, ApiError> {
    let id = checkpoint_job(
        &home,
        &caller,
        &id,
        run_param(&q),
        "no checkpoint to restore",
    )?;
    // The host found the checkpoint it was served corrupt: check them
    // here, set aside what fails, and serve the newest that passes.
    let verify = q.get("verify").is_some_and(|v| v == "1");
    let home2 = home.clone();
    let (best, set_aside) =
        tokio::task::spawn_blocking(move || best_checkpoint(&home2, id, verify))
            .await
            .map_err(|e| ApiError::internal("verifier failed", e))?;
    if verify || !set_aside.is_empty() {
        record_refusals(&home, id, verify, &set_aside, best.as_ref().map(|(p, _)| p));
    }
    let Some((path, m)) = best else {
        // Restart from scratch: the spooled output of earlier runs goes.
        truncate_streams(&home, id, 0, 0).await;
        return Err(ApiError::new(
            ErrorCode::NotFound,
            format!("job {id} has no checkpoint"),
        ));
    };
    truncate_streams(&home, id, m.stdout_len, m.stderr_len).await;
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(|e| ApiError::internal("cannot open checkpoint", e))?;
    let len = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    // Throttled stream: the owner's disk and network stay usable.
    let home3 = home.clone();
    let stream = crate::checkpoint::throttled_stream(file, move |n| {
        let home = home3.clone();
        async move { home.ckpt.bucket.take(n).await }
    });
    axum::response::Response::builder()
        .header("content-type", "application/octet-stream")
        .header("content-length", len)
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::internal("cannot build response", e))
}

/// Checkpoints set aside (or a host's report of one corrupt that verifies
/// here) go to the job's history, with what is served instead.
fn record_refusals(
    home: &Home,
    id: JobId,
    verify: bool,
    set_aside: &[(String, String)],
    now_served: Option<&PathBuf>,
) {
    let served = match now_served
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
    {
        Some(PREVIOUS) => "the previous one is restored",
        Some(_) => "the latest is served again",
        None => "none is left: the job restarts from the beginning",
    };
    let mut lines: Vec<String> = set_aside
        .iter()
        .map(|(name, why)| {
            format!("checkpoint {name} refused at restore ({why}), set aside; {served}")
        })
        .collect();
    if verify && set_aside.is_empty() {
        lines.push(format!(
            "a host found the checkpoint corrupt in transit; it verifies here: {served}"
        ));
    }
    let at = now();
    for detail in lines {
        home.meters.checkpoints_rejected.inc();
        let res = home
            .queue()
            .annotate(id, JobEventKind::Checkpointed, &detail, at);
        if let Err(e) = res {
            tracing::warn!(job = %id, error = %e, "cannot record a checkpoint refused at restore");
        }
        tracing::warn!(job = %id, %detail, "checkpoint refused at restore");
    }
}

/// Cuts the spooled stdout/stderr back to what the restored state wrote.
async fn truncate_streams(home: &Home, id: JobId, out: u64, err: u64) {
    let _guard = home.spool_lock.lock().await;
    for (name, len) in [("stdout", out), ("stderr", err)] {
        let p = home.spool_for(id).join(name);
        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&p)
            && f.metadata().is_ok_and(|m| m.len() > len)
            && let Err(e) = f.set_len(len)
        {
            tracing::warn!(job = %id, file = %p.display(), error = %e, "cannot cut spooled output");
        }
    }
    super::spool::remeasure(home, id);
}
