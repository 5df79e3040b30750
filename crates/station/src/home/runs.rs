//! Which run of a job the home listens to (issue 14: a job's outputs are
//! those of exactly one run).
//!
//! Each placement names a new run ([`RunId`]); it becomes the job's current
//! run in the table of remote jobs as the request goes out, and in the
//! queue (`jobs.run_id`) once the host accepts, so a restarted home still
//! knows it. Every output chunk, output file, checkpoint, status report and
//! lease renewal names its run; data of any other run is refused with 409
//! (field `run`) and nothing is stored: such a run was presumed dead (its
//! lease ran out, it was vacated or held), and the refusal of its renewal
//! makes its host kill it.
//!
//! A run the home gives up on without placing the job again (held,
//! removed, lease expired) is retired: then no run is heard at all.
//!
//! When a run starts, the spool is made ready for it under the spool lock
//! (so no chunk of the old run lands after the reset): output files of
//! earlier runs go; stdout/stderr are emptied when the run starts from
//! scratch, and kept when a checkpoint may be restored (fetching it cuts
//! them to the lengths it recorded, `ckpt_store::fetch_checkpoint`).

use super::Home;
use super::ckpt_store::{LATEST, PREVIOUS, ckpt_dir};
use gleaner_edge::ApiError;
use gleaner_proto::job::JobId;
use gleaner_proto::run::RunId;
use gleaner_proto::wire::ErrorCode;
use std::collections::HashMap;

/// The query parameter that names a run on the shadow's transfer
/// endpoints (`?run=home/1.0/r2/ab12…`).
pub(crate) const RUN_PARAM: &str = "run";

/// The job's current run: the one being placed or running per the table
/// of remote jobs, else the one the queue last recorded. `None`: no run
/// was ever named (a job placed by an older home).
pub(crate) fn current_run(home: &Home, id: JobId) -> Result<Option<String>, ApiError> {
    if let Some(run) = home.remote.placement(id).and_then(|p| p.run) {
        return Ok(Some(run));
    }
    Ok(home.queue().current_run(id)?)
}

/// Refuses (409, field `run`) anything from a run of `id` other than its
/// current one. A request that names no run is heard only for a job with
/// no named run (an older host's job placed by an older home).
pub(crate) fn require_current_run(
    home: &Home,
    id: JobId,
    given: Option<&str>,
) -> Result<(), ApiError> {
    let Some(current) = current_run(home, id)? else {
        return Ok(());
    };
    // An empty current run is a retired one: no run is heard.
    if !current.is_empty() && given == Some(current.as_str()) {
        return Ok(());
    }
    tracing::warn!(job = %id, run = ?given, %current, "data from a stale run refused");
    Err(ApiError::field(
        ErrorCode::Conflict,
        RUN_PARAM,
        format!(
            "run {} is not job {id}'s current run: stop it, its data is discarded",
            given.unwrap_or("(none)")
        ),
    ))
}

/// Ends the current run of `id` without a successor: the user held or
/// removed the job, or its host's lease ran out. From now on no run is
/// heard until the next placement names one (the retired run's host is
/// refused and kills it). Failures are logged: the job's state already
/// keeps the run's data out (`RemoteJobs::is_remote`), except a report.
pub(crate) fn retire_run(home: &Home, id: JobId) {
    home.remote.retire_run(id);
    // Its claim ends with the run on the host (claim reuse).
    super::claim_reuse::after_departure(home, id);
    if let Err(e) = home.queue().retire_run(id) {
        tracing::warn!(job = %id, error = %e, "cannot record the end of the job's run");
    }
}

/// The run a transfer's query names.
pub(crate) fn run_param(q: &HashMap<String, String>) -> Option<&str> {
    q.get(RUN_PARAM).map(String::as_str)
}

/// Makes `run` the current run of `id` (placing it on `host`) and the
/// spool ready for it; see the module docs. Under the spool lock, so that
/// a chunk of the old run is either stored before the reset or refused.
pub(crate) async fn begin_run(
    home: &Home,
    id: JobId,
    host: &str,
    address: &str,
    claim: &str,
    run: &RunId,
) {
    let _guard = home.spool_lock.lock().await;
    let run_s = run.to_string();
    home.remote
        .begin_placing(id, host, address, claim, Some(&run_s));
    // On disk before the request goes out: a home killed after the host
    // accepted and before it heard so finds the placement at start and
    // waits for that run instead of placing the job again (`recover`).
    if let Err(e) = home.queue().record_placement_run(
        id,
        host,
        address,
        claim,
        Some(&run_s),
        crate::clock::now(),
    ) {
        tracing::error!(job = %id, error = %e, "cannot record the placement");
    }
    reset_spool(home, id);
    super::spool::remeasure(home, id);
}

/// Clears what earlier runs left in the spool of `id` (see the module
/// docs). Failures are logged: a stale byte kept is less harm than a job
/// that cannot start.
fn reset_spool(home: &Home, id: JobId) {
    let spool = home.spool_for(id);
    let files = spool.join("files");
    if let Err(e) = std::fs::remove_dir_all(&files)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(job = %id, path = %files.display(), error = %e, "cannot clear earlier output files");
    }
    let dir = ckpt_dir(home, id);
    let resumable = [LATEST, PREVIOUS].iter().any(|n| dir.join(n).exists());
    if resumable {
        return;
    }
    for name in ["stdout", "stderr"] {
        let p = spool.join(name);
        match std::fs::OpenOptions::new().write(true).open(&p) {
            Ok(f) => {
                if let Err(e) = f.set_len(0) {
                    tracing::warn!(job = %id, path = %p.display(), error = %e, "cannot empty earlier output");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(job = %id, path = %p.display(), error = %e, "cannot empty earlier output")
            }
        }
    }
}
