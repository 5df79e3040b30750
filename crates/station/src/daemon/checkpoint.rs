//! The home station's side of checkpoints, leases and migration feedback.
//!
//! Endpoints (Daemon token), next to the shadow's:
//! - `PUT /v1/shadow/{job}/checkpoint`: a checkpoint bundle
//!   ([`crate::checkpoint`]). Received through the station-wide token
//!   bucket (`checkpoint_bytes_per_sec`) so that a storm of checkpoints
//!   never saturates the owner's disk or network (Mutka 1988 §2.6 on
//!   throttling), written to a temporary file, verified (sizes and SHA-256),
//!   then rotated in: `latest.ckpt` becomes `previous.ckpt`. A corrupt or
//!   partial bundle is refused (422-style `bad_request`), the last good one
//!   stays, and the refusal goes to the job's history and user log.
//! - `GET /v1/shadow/{job}/checkpoint`: the latest checkpoint that still
//!   verifies (else the previous one; 404 if none). Serving it also cuts
//!   the spooled stdout/stderr back to the lengths recorded in it, so the
//!   restored run's output continues exactly where the checkpoint was.
//! - `POST /v1/shadow/{job}/lease`: the starter's lease renewal
//!   ([`LeaseRenewal`]); 409 tells a host that the job is no longer its to
//!   run (the home gave up on it), and the host kills the guest.
//!
//! The lease monitor requeues a running job whose host has not been heard
//! from for `lease_secs` plus one renewal period (the host itself gives up
//! at `lease_secs`, so the old run is dead before the new one starts). A
//! restarted home gives every running job a fresh lease: hosts that are
//! still running its jobs re-attach with their next renewal.
//!
//! Hosts that evicted a job, or lost its lease, are remembered for
//! `avoid_host_secs` and the local scheduler does not place the job there
//! again meanwhile (Neeracher 1998 §4, resource feedback).

use super::{ApiError, Station, now, parse_job_id, parse_json};
use crate::checkpoint::{CheckpointError, Manifest, RateMeter, SharedBucket, verify_bundle_file};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::routing::{post, put};
use axum::{Extension, Json, Router};
use futures_util::StreamExt;
use gleaner_proto::api::StoredResponse;
use gleaner_proto::auth::{Claims, Role};
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use gleaner_proto::wire::ErrorCode;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Name of the newest good checkpoint in `spool/<job>/ckpt/`.
pub const LATEST: &str = "latest.ckpt";
/// The one before it, kept for roll-back.
pub const PREVIOUS: &str = "previous.ckpt";

/// Starter → home: "I still run this job".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRenewal {
    pub host: String,
    /// Base URL of the host (restores the home's map after a restart, so
    /// that it can vacate the job again).
    #[serde(default)]
    pub host_address: String,
    #[serde(default)]
    pub guest_id: String,
}

/// Home-side state for checkpoints, leases and eviction feedback.
#[derive(Debug)]
pub struct HomeCkpt {
    lease: Duration,
    avoid_for: Duration,
    max_bytes: u64,
    pub bucket: SharedBucket,
    /// Measured receive rate of checkpoints (bytes/s).
    pub rate: RateMeter,
    last_contact: Mutex<HashMap<JobId, Instant>>,
    avoid: Mutex<HashMap<JobId, Vec<(String, Instant)>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl HomeCkpt {
    pub fn new(lease: Duration, avoid_for: Duration, rate: u64, max_bytes: u64) -> Self {
        HomeCkpt {
            lease,
            avoid_for,
            max_bytes,
            bucket: SharedBucket::new(rate),
            rate: RateMeter::default(),
            last_contact: Mutex::new(HashMap::new()),
            avoid: Mutex::new(HashMap::new()),
        }
    }

    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The host of `job` was heard from.
    pub fn touch(&self, job: JobId) {
        lock(&self.last_contact).insert(job, Instant::now());
    }

    /// Remember that `host` evicted (or lost) `job`.
    pub fn avoid_host(&self, job: JobId, host: &str) {
        if self.avoid_for.is_zero() || host.is_empty() {
            return;
        }
        let mut m = lock(&self.avoid);
        let v = m.entry(job).or_default();
        v.retain(|(h, _)| h != host);
        v.push((host.to_string(), Instant::now()));
    }

    /// The hosts `job` stays away from for now.
    pub fn avoided_hosts(&self, job: JobId) -> Vec<String> {
        let mut m = lock(&self.avoid);
        let Some(v) = m.get_mut(&job) else {
            return Vec::new();
        };
        let limit = self.avoid_for;
        v.retain(|(_, t)| t.elapsed() < limit);
        v.iter().map(|(h, _)| h.clone()).collect()
    }

    /// Should `job` stay away from `host` for now?
    pub fn avoids(&self, job: JobId, host: &str) -> bool {
        let mut m = lock(&self.avoid);
        let Some(v) = m.get_mut(&job) else {
            return false;
        };
        let limit = self.avoid_for;
        v.retain(|(_, t)| t.elapsed() < limit);
        v.iter().any(|(h, _)| h == host)
    }
}

pub(crate) fn router() -> Router<Arc<Station>> {
    Router::new()
        .route(
            "/v1/shadow/{job}/checkpoint",
            put(store_checkpoint).get(fetch_checkpoint),
        )
        .route("/v1/shadow/{job}/lease", post(renew_lease))
}

fn require_daemon(c: &Claims) -> Result<(), ApiError> {
    if matches!(c.role, Role::Daemon | Role::Admin) {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::Forbidden,
            "shadow endpoints need a daemon token",
        ))
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "{what}");
    ApiError::new(ErrorCode::Internal, what.to_string())
}

pub(crate) fn ckpt_dir(st: &Station, id: JobId) -> PathBuf {
    st.spool_for(id).join("ckpt")
}

fn running_here(st: &Station, r: &crate::queue::JobRecord) -> bool {
    matches!(r.state, JobState::Running | JobState::Suspended) || st.placing().contains(&r.id)
}

/// The job a checkpoint upload or fetch names, for a daemon token and a job
/// that runs here; otherwise the refusal ends with `refused`. Counts as a
/// sign of life for the job's checkpoint lease.
fn checkpoint_job(
    st: &Station,
    claims: &Claims,
    id: &str,
    refused: &str,
) -> Result<JobId, ApiError> {
    require_daemon(claims)?;
    let id = parse_job_id(id)?;
    let r = st
        .queue()
        .get(id)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such job {id}")))?;
    if !running_here(st, &r) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} is {}: {refused}", r.state),
        ));
    }
    st.ckpt.touch(id);
    Ok(id)
}

/// Records a refused checkpoint in the history and the user log.
fn record_rejection(st: &Station, id: JobId, why: &str) {
    let at = now();
    let detail = format!("checkpoint rejected, previous kept: {why}");
    let res = st
        .queue()
        .annotate(id, JobEventKind::Checkpointed, &detail, at);
    if let Err(e) = res {
        tracing::warn!(job = %id, error = %e, "cannot record checkpoint rejection");
    }
    super::shadow::user_log(st, id, at, "008", "Checkpoint rejected", &detail);
    tracing::warn!(job = %id, why, "checkpoint rejected");
}

async fn store_checkpoint(
    State(st): State<Arc<Station>>,
    Extension(claims): Extension<Claims>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<StoredResponse>, ApiError> {
    let id = checkpoint_job(&st, &claims, &id, "not accepting checkpoints")?;
    let dir = ckpt_dir(&st, id);
    std::fs::create_dir_all(&dir).map_err(|e| internal("cannot create checkpoint dir", e))?;
    let tmp = dir.join(format!(
        ".incoming-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let started = Instant::now();
    let received = receive(&st, body, &tmp).await;
    let bytes = match received {
        Ok(n) => n,
        Err(why) => {
            let _ = std::fs::remove_file(&tmp);
            record_rejection(&st, id, &why);
            return Err(ApiError::bad("body", format!("checkpoint rejected: {why}")));
        }
    };
    let elapsed = started.elapsed();
    let t = tmp.clone();
    let verified = tokio::task::spawn_blocking(move || verify_bundle_file(&t))
        .await
        .map_err(|e| internal("verifier failed", e))?;
    let manifest = match verified {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            record_rejection(&st, id, &e.to_string());
            return Err(ApiError::bad("body", format!("checkpoint rejected: {e}")));
        }
    };
    {
        let _guard = st.spool_lock.lock().await;
        let latest = dir.join(LATEST);
        if latest.exists() {
            std::fs::rename(&latest, dir.join(PREVIOUS))
                .map_err(|e| internal("cannot rotate checkpoints", e))?;
        }
        std::fs::rename(&tmp, &latest).map_err(|e| internal("cannot store checkpoint", e))?;
        // A readable copy of the manifest, for people and tools.
        if let Ok(j) = serde_json::to_vec_pretty(&manifest) {
            let _ = std::fs::write(dir.join("latest.manifest.json"), j);
        }
    }
    st.ckpt.rate.record(bytes, elapsed);
    let detail = format!(
        "{} checkpoint #{}: {} file(s), {bytes} bytes in {:.3} s",
        manifest.backend,
        manifest.seq,
        manifest.files.len(),
        elapsed.as_secs_f64()
    );
    let at = now();
    st.queue()
        .annotate(id, JobEventKind::Checkpointed, &detail, at)?;
    super::shadow::user_log(&st, id, at, "003", "Job was checkpointed.", &detail);
    tracing::info!(job = %id, %detail, "checkpoint stored");
    Ok(Json(StoredResponse { ok: true, detail }))
}

/// Streams the body into `path` through the station's token bucket.
async fn receive(st: &Station, body: Body, path: &std::path::Path) -> Result<u64, String> {
    let mut f = std::fs::File::create(path).map_err(|e| format!("cannot store: {e}"))?;
    let mut stream = body.into_data_stream();
    let mut total = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("partial upload: {e}"))?;
        total += chunk.len() as u64;
        if total > st.ckpt.max_bytes {
            return Err(format!(
                "larger than max_checkpoint_bytes ({})",
                st.ckpt.max_bytes
            ));
        }
        st.ckpt.bucket.take(chunk.len() as u64).await;
        f.write_all(&chunk)
            .map_err(|e| format!("cannot store: {e}"))?;
    }
    f.sync_all().map_err(|e| format!("cannot store: {e}"))?;
    Ok(total)
}

/// The newest checkpoint that verifies, with its manifest.
pub(crate) fn best_checkpoint(st: &Station, id: JobId) -> Option<(PathBuf, Manifest)> {
    let dir = ckpt_dir(st, id);
    for name in [LATEST, PREVIOUS] {
        let p = dir.join(name);
        if !p.exists() {
            continue;
        }
        match verify_bundle_file(&p) {
            Ok(m) => return Some((p, m)),
            Err(CheckpointError::Io { .. }) => continue,
            Err(e) => {
                tracing::warn!(job = %id, file = name, error = %e, "stored checkpoint fails verification; rolling back");
            }
        }
    }
    None
}

async fn fetch_checkpoint(
    State(st): State<Arc<Station>>,
    Extension(claims): Extension<Claims>,
    Path(id): Path<String>,
) -> Result<axum::response::Response, ApiError> {
    let id = checkpoint_job(&st, &claims, &id, "no checkpoint to restore")?;
    let st2 = st.clone();
    let best = tokio::task::spawn_blocking(move || best_checkpoint(&st2, id))
        .await
        .map_err(|e| internal("verifier failed", e))?;
    let Some((path, m)) = best else {
        // Restart from scratch: the spooled output of earlier runs goes.
        truncate_streams(&st, id, 0, 0).await;
        return Err(ApiError::new(
            ErrorCode::NotFound,
            format!("job {id} has no checkpoint"),
        ));
    };
    truncate_streams(&st, id, m.stdout_len, m.stderr_len).await;
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(|e| internal("cannot open checkpoint", e))?;
    let len = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    // Throttled stream: the owner's disk and network stay usable.
    let st3 = st.clone();
    let stream = crate::checkpoint::throttled_stream(file, move |n| {
        let st = st3.clone();
        async move { st.ckpt.bucket.take(n).await }
    });
    axum::response::Response::builder()
        .header("content-type", "application/octet-stream")
        .header("content-length", len)
        .body(Body::from_stream(stream))
        .map_err(|e| internal("cannot build response", e))
}

/// Cuts the spooled stdout/stderr back to what the restored state wrote.
async fn truncate_streams(st: &Station, id: JobId, out: u64, err: u64) {
    let _guard = st.spool_lock.lock().await;
    for (name, len) in [("stdout", out), ("stderr", err)] {
        let p = st.spool_for(id).join(name);
        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&p)
            && f.metadata().is_ok_and(|m| m.len() > len)
            && let Err(e) = f.set_len(len)
        {
            tracing::warn!(job = %id, file = %p.display(), error = %e, "cannot cut spooled output");
        }
    }
}

async fn renew_lease(
    State(st): State<Arc<Station>>,
    Extension(claims): Extension<Claims>,
    Path(id): Path<String>,
    raw: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<StoredResponse>, ApiError> {
    require_daemon(&claims)?;
    let id = parse_job_id(&id)?;
    let raw = super::body(raw)?;
    let ren: LeaseRenewal = parse_json(&raw)?;
    let r = st
        .queue()
        .get(id)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such job {id}")))?;
    let placing = st.placing().contains(&id);
    let ours = placing
        || (matches!(r.state, JobState::Running | JobState::Suspended)
            && r.host.as_deref().is_none_or(|h| h == ren.host));
    if !ours {
        tracing::warn!(job = %id, host = %ren.host, state = %r.state, "lease renewal from a host that no longer runs the job");
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} is {} and not running on {}", r.state, ren.host),
        ));
    }
    st.ckpt.touch(id);
    if !ren.host_address.is_empty() {
        st.hosts().entry(id).or_insert(ren.host_address);
    }
    Ok(Json(StoredResponse {
        ok: true,
        detail: "lease renewed".into(),
    }))
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
pub(crate) async fn lease_monitor(st: Arc<Station>, mut shutdown: watch::Receiver<bool>) {
    let lease = st.ckpt.lease;
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
        let running = st.queue().running_jobs();
        let running = match running {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "lease monitor cannot read the running jobs");
                Vec::new()
            }
        };
        let (expired, next) = lease_pass(&st, &running, limit, placing_recheck);
        for (id, host) in expired {
            requeue_expired(&st, id, host.unwrap_or_default(), limit);
        }
        let wake = Instant::now() + max_sleep;
        let wake = next.map_or(wake, |n| n.min(wake));
        tokio::select! {
            _ = tokio::time::sleep_until(wake.into()) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// One pass of the lease monitor over the running jobs: the jobs whose lease
/// ran out (their entries are dropped) and the next instant a lease can run
/// out.
fn lease_pass(
    st: &Station,
    running: &[(JobId, Option<String>)],
    limit: Duration,
    placing_recheck: Duration,
) -> (Vec<(JobId, Option<String>)>, Option<Instant>) {
    let mut lc = lock(&st.ckpt.last_contact);
    let now = Instant::now();
    // Jobs that are no longer running need no lease (`running` is in
    // job-id order).
    lc.retain(|id, _| running.binary_search_by(|(r, _)| r.cmp(id)).is_ok());
    let mut expired = Vec::new();
    let mut next: Option<Instant> = None;
    for (id, host) in running {
        // First sight (e.g. after a restart of this home): a full lease.
        let t = *lc.entry(*id).or_insert(now);
        let due = t + limit;
        if due > now {
            next = Some(next.map_or(due, |n| n.min(due)));
        } else if st.placing().contains(id) {
            // Its new placement decides; look again shortly.
            let again = now + placing_recheck;
            next = Some(next.map_or(again, |n| n.min(again)));
        } else {
            expired.push((*id, host.clone()));
        }
    }
    for (id, _) in &expired {
        lc.remove(id);
    }
    (expired, next)
}

/// Requeues `id` after its lease ran out on `host`.
fn requeue_expired(st: &Arc<Station>, id: JobId, host: String, limit: Duration) {
    let detail = format!(
        "lease expired: no report from {host} for {:.0} s; requeued",
        limit.as_secs_f64()
    );
    let at = now();
    // Bound first: the queue lock must be released before the user log
    // (which reads the queue) is written.
    let moved = st.queue().transition(id, JobState::Idle, &detail, at);
    match moved {
        Ok(_) => {
            tracing::warn!(job = %id, %host, "lease expired; job requeued");
            st.ckpt.avoid_host(id, &host);
            st.hosts().remove(&id);
            super::shadow::user_log(st, id, at, "004", "Job was evicted", &detail);
            st.wake.notify_one();
        }
        Err(e) => {
            tracing::warn!(job = %id, error = %e, "cannot requeue after lease expiry")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avoid_list_expires() {
        let h = HomeCkpt::new(
            Duration::from_secs(1),
            Duration::from_millis(50),
            0,
            1 << 20,
        );
        let j: JobId = "1.0".parse().unwrap();
        assert!(!h.avoids(j, "b"));
        h.avoid_host(j, "b");
        assert!(h.avoids(j, "b"));
        assert!(!h.avoids(j, "c"));
        std::thread::sleep(Duration::from_millis(80));
        assert!(!h.avoids(j, "b"));
    }
}
