//! The home's spool (issue 30, finding 2): bounded, and cleaned up as soon
//! as a job no longer needs it.
//!
//! **Bounds.** Before a chunk of stdout/stderr or an output file is stored,
//! its bytes are checked against `max_job_spool_mb` and
//! `max_owner_spool_mb` (`[limits]`, [`admit`]); a job that would pass
//! either is held at once with `HoldReasonCode` 33 (HTCondor's
//! `MaxTransferOutputSizeExceeded`) and a reason naming the bound, its run
//! retired (its host hears 409 and stops it) and its guest vacated; the
//! chunk is refused and nothing of it is stored. A completed job's outputs,
//! once in place in its owner's directories, stay in the spool for
//! `keep_delivered_output_secs` (for `glean tail`) and go first when their
//! owner's jobs need the room ([`meter`]).
//!
//! **Clean-up.** Every commit that holds or removes a job is noted by the
//! queue (`JobQueue::take_departed`) and handed here when the home's lock
//! on the queue is released ([`QueueGuard`]), whatever code path made the
//! change. The clean-up task ([`run_loop`]) then looks at the job's state
//! *now*, under the spool lock, and removes what it no longer needs: a
//! removed job's whole spool (checkpoints too) and any output it had staged
//! beside its destinations (removed as its owner, `deliver`); a held job's
//! output files, and its stdout/stderr and spool unless it has a checkpoint
//! that its release resumes from (which cuts them to the lengths it
//! recorded). A job released and placed again meanwhile is left alone.
//!
//! **Crash safety.** Nothing is needed on disk between the queue's commit
//! and the deletion: at start the task sweeps the spool and applies the
//! same rules to every job directory by the queue's state, so a kill in
//! between leaves nothing behind once the home is back. The spool is the
//! daemon's own private directory (`private`); it is removed with
//! `std::fs::remove_dir_all`, which never follows a symbolic link.

mod meter;

use super::Home;
use super::ckpt_store::{LATEST, PREVIOUS};
use super::limits::LimitsConfig;
use crate::queue::{JobQueue, JobRecord};
use gleaner_core::time::Dur;
use gleaner_core::user_limits::{SpoolExceeded, SpoolLimits};
use gleaner_edge::ApiError;
use gleaner_proto::job::{JobId, JobState, JobStateKind};
use gleaner_proto::wire::{ErrorCode, hold_code};
pub(crate) use meter::Kind;
use meter::SpoolMeter;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// The marker a completed job's spool gets when some of its outputs could
/// not be delivered: they are the only copy and are kept.
const UNDELIVERED: &str = "undelivered";

/// How often delivered copies past their time are removed.
const EXPIRY_PASS: Duration = Duration::from_secs(30);

/// The spool's books and the jobs waiting for their clean-up.
pub struct Spool {
    meter: Mutex<SpoolMeter>,
    departed: Mutex<Vec<JobId>>,
    wake: Notify,
    limits: SpoolLimits,
    keep_delivered: Dur,
}

impl Spool {
    pub fn new(limits: &LimitsConfig) -> Self {
        Spool {
            meter: Mutex::new(SpoolMeter::default()),
            departed: Mutex::new(Vec::new()),
            wake: Notify::new(),
            limits: limits.spool(),
            keep_delivered: Dur::from_secs(limits.keep_delivered_output_secs),
        }
    }

    fn meter(&self) -> MutexGuard<'_, SpoolMeter> {
        self.meter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Jobs held or removed by a commit: cleaned up by [`run_loop`].
    fn departed(&self, ids: Vec<JobId>) {
        self.departed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(ids);
        self.wake.notify_one();
    }

    fn take_departed(&self) -> Vec<JobId> {
        std::mem::take(
            &mut *self
                .departed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Bytes of output each user's jobs keep in the spool.
    pub fn usage(&self) -> Vec<(String, u64)> {
        self.meter().owners()
    }

    /// Bytes of output `id` keeps in the spool.
    pub fn job_bytes(&self, id: JobId) -> u64 {
        self.meter().job_bytes(id)
    }

    /// The bounds, bytes.
    pub fn limits(&self) -> SpoolLimits {
        self.limits
    }
}

/// The home's lock on its queue. Derefs to the queue; when released, the
/// jobs its commits held or removed go to the spool's clean-up, so no path
/// that changes a job's state can forget it.
pub struct QueueGuard<'a> {
    q: MutexGuard<'a, JobQueue>,
    spool: &'a Spool,
}

impl<'a> QueueGuard<'a> {
    pub(crate) fn new(q: MutexGuard<'a, JobQueue>, spool: &'a Spool) -> Self {
        QueueGuard { q, spool }
    }
}

impl Deref for QueueGuard<'_> {
    type Target = JobQueue;
    fn deref(&self) -> &JobQueue {
        &self.q
    }
}

impl DerefMut for QueueGuard<'_> {
    fn deref_mut(&mut self) -> &mut JobQueue {
        &mut self.q
    }
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        let gone = self.q.take_departed();
        if !gone.is_empty() {
            self.spool.departed(gone);
        }
    }
}

// ----- bounds ---------------------------------------------------------------

/// Called under the spool lock before `add` more bytes of `r`'s output are
/// stored: `Ok` when they fit (delivered copies of its owner's may be
/// removed to make room), else the job is held (see the module docs) and
/// the error refuses the chunk.
pub(crate) fn admit(home: &Arc<Home>, r: &JobRecord, add: u64) -> Result<(), ApiError> {
    let checked = home
        .spooled
        .meter()
        .check(&home.spooled.limits, r.id, &r.owner, add);
    match checked {
        Ok(evicted) => {
            for id in evicted {
                remove_all(home, id);
            }
            Ok(())
        }
        Err(why) => {
            over_bound(home, r, &why);
            Err(ApiError::field(
                ErrorCode::Conflict,
                super::runs::RUN_PARAM,
                format!("job {} is held: {why}; its run is over", r.id),
            ))
        }
    }
}

/// `add` bytes of `id`'s output were stored.
pub(crate) fn stored(home: &Home, id: JobId, owner: &str, add: u64) {
    if add > 0 {
        home.spooled.meter().add(id, owner, add);
    }
}

/// Counts `id`'s output in the spool again from disk (after a run's reset
/// of it, a checkpoint's cut, a replaced output file).
pub(crate) fn measure(home: &Home, id: JobId, owner: &str) {
    let dir = home.spool_for(id);
    let kind = if dir.join(UNDELIVERED).exists() {
        Kind::Kept
    } else {
        Kind::Active
    };
    match output_bytes(&dir) {
        Some(b) => home.spooled.meter().set(id, owner, b, kind),
        None => home.spooled.meter().forget(id),
    }
}

/// [`measure`] of a job whose owner the books know (nothing to do for
/// one they do not: its spool only shrank).
pub(crate) fn remeasure(home: &Home, id: JobId) {
    let owner = home.spooled.meter().owner_of(id);
    if let Some(owner) = owner {
        measure(home, id, &owner);
    }
}

/// Holds `r`, whose output would pass a bound of the spool.
fn over_bound(home: &Arc<Home>, r: &JobRecord, why: &SpoolExceeded) {
    let reason = why.to_string();
    let at = crate::clock::now();
    let moved = {
        let mut q = home.queue();
        let held = JobState::Held {
            reason: reason.clone(),
        };
        q.transition(r.id, held, &reason, at)
            .and_then(|_| q.set_hold_code(r.id, hold_code::MAX_TRANSFER_OUTPUT_SIZE_EXCEEDED, 0))
    };
    match moved {
        Ok(_) => {
            tracing::warn!(job = %r.id, owner = %r.owner, %reason, "job held: output over the spool's bound");
            super::schedd::spawn_vacate_as(home, r.id, &reason, "hold");
            super::runs::retire_run(home, r.id);
            let event = super::user_log::UserEvent::Held {
                reason,
                code: hold_code::MAX_TRANSFER_OUTPUT_SIZE_EXCEEDED,
                subcode: 0,
            };
            super::user_log::spawn_user_log(home, r.id, at, event);
            home.news.notify_one();
        }
        // Held or removed meanwhile: its run is over anyway.
        Err(e) => tracing::debug!(job = %r.id, error = %e, "spool bound: job not held"),
    }
}

// ----- completion -----------------------------------------------------------

/// `id` completed and its outputs were put in place (`all`: every one of
/// them; else some stay in the spool as the only copy, kept).
pub(crate) fn delivered(home: &Home, id: JobId, owner: &str, all: bool) {
    let dir = home.spool_for(id);
    if !all
        && dir.exists()
        && let Err(e) = super::private::write(&dir.join(UNDELIVERED), b"")
    {
        tracing::warn!(job = %id, error = %e, "cannot mark undelivered outputs");
    }
    let Some(bytes) = output_bytes(&dir) else {
        home.spooled.meter().forget(id);
        return;
    };
    let kind = if all {
        Kind::Delivered(crate::clock::now())
    } else {
        Kind::Kept
    };
    home.spooled.meter().set(id, owner, bytes, kind);
}

// ----- clean-up -------------------------------------------------------------

/// Sweeps the spool at start, then cleans up after every hold and removal,
/// and removes delivered copies past their time, until shutdown.
pub async fn run_loop(home: Arc<Home>, mut shutdown: watch::Receiver<bool>) {
    sweep(&home).await;
    let mut tick = tokio::time::interval(EXPIRY_PASS);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = home.spooled.wake.notified() => {}
            _ = tick.tick() => expire(&home),
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
        }
        for id in home.spooled.take_departed() {
            clean(&home, id).await;
        }
    }
}

/// Applies the rules to every job directory of the spool (at start: what
/// a killed home left between a commit and its clean-up), and counts what
/// stays.
async fn sweep(home: &Arc<Home>) {
    let spool = home.spool_for(JobId::new(0, 0));
    let Some(root) = spool.parent().map(Path::to_path_buf) else {
        return;
    };
    let entries = match std::fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            tracing::error!(path = %root.display(), error = %e, "cannot read the spool");
            return;
        }
    };
    let mut cleaned = 0usize;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.parse::<JobId>().ok()) else {
            continue;
        };
        if clean(home, id).await {
            cleaned += 1;
        }
        let record = home.queue().get(id).ok().flatten();
        if let Some(r) = record {
            let dir = home.spool_for(id);
            let bytes = output_bytes(&dir);
            let kind = match r.state.kind() {
                _ if dir.join(UNDELIVERED).exists() => Kind::Kept,
                JobStateKind::Completed => Kind::Delivered(crate::clock::now()),
                _ => Kind::Active,
            };
            if let Some(b) = bytes {
                home.spooled.meter().set(id, &r.owner, b, kind);
            }
        }
    }
    if cleaned > 0 {
        tracing::info!(
            jobs = cleaned,
            "spools of held or removed jobs cleaned up at start"
        );
    }
}

/// Removes what `id`'s state no longer needs (see the module docs). True
/// when something was removed.
async fn clean(home: &Arc<Home>, id: JobId) -> bool {
    let _guard = home.spool_lock.lock().await;
    let record = match home.queue().get(id) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(job = %id, error = %e, "spool clean-up: cannot read the job");
            return false;
        }
    };
    let dir = home.spool_for(id);
    match record {
        None => remove_all(home, id),
        Some(r) if r.state.kind() == JobStateKind::Removed => {
            let removed = remove_all(home, id);
            super::deliver::discard_staged(home, id, &r.owner).await;
            removed
        }
        Some(r) if r.state.kind() == JobStateKind::Held => {
            let ckpt = super::ckpt_store::ckpt_dir(home, id);
            let resumable = [LATEST, PREVIOUS].iter().any(|n| ckpt.join(n).exists());
            let removed = if resumable {
                remove_path(&dir.join("files"))
            } else {
                remove_all(home, id)
            };
            measure(home, id, &r.owner);
            removed
        }
        Some(_) => false,
    }
}

/// Removes delivered copies past their time (of jobs still completed).
fn expire(home: &Arc<Home>) {
    let old = home
        .spooled
        .meter()
        .expired(crate::clock::now(), home.spooled.keep_delivered);
    for id in old {
        let done = home
            .queue()
            .get(id)
            .ok()
            .flatten()
            .is_some_and(|r| r.state.kind() == JobStateKind::Completed);
        if done {
            remove_all(home, id);
        } else {
            home.spooled.meter().mark(id, Kind::Active);
        }
    }
}

/// Removes `id`'s whole spool directory and forgets it. True when there
/// was one.
fn remove_all(home: &Home, id: JobId) -> bool {
    home.spooled.meter().forget(id);
    remove_path(&home.spool_for(id))
}

/// Removes a directory tree of the daemon's own spool (no link followed).
fn remove_path(p: &Path) -> bool {
    match std::fs::remove_dir_all(p) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => {
            tracing::warn!(path = %p.display(), error = %e, "cannot remove from the spool");
            false
        }
    }
}

/// Bytes of stdout, stderr and output files in a job's spool directory;
/// `None` when there is no directory.
fn output_bytes(dir: &Path) -> Option<u64> {
    // A link where the directory should be is not followed.
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    let size = |p: &Path| std::fs::symlink_metadata(p).map_or(0, |m| m.len());
    let mut n = size(&dir.join("stdout")) + size(&dir.join("stderr"));
    if let Ok(files) = std::fs::read_dir(dir.join("files")) {
        for f in files.flatten() {
            // Entry metadata: a link counts as itself, not its target.
            n += f.metadata().map_or(0, |m| m.len());
        }
    }
    Some(n)
}
