//! Delivery of a completed job's outputs into its owner's directories, in
//! two steps around the durable completion (issue 14):
//!
//! 1. [`stage`], before the completion is committed: each spooled
//!    stdout/stderr and output file is copied, as the owner, to a hidden
//!    file beside its destination and synced ([`crate::userfs::Staged`]).
//!    Problems (a directory the owner cannot write, a full disk) go into
//!    the completion's history entry; those outputs stay in the spool.
//! 2. [`publish`], after the commit: one rename per file puts it in place.
//!    So a user never sees part of an output, nor an output of a job the
//!    queue does not hold completed; if the completion cannot be
//!    committed, [`discard`] removes what was staged.
//!
//! The queue keeps a log of each staged file (its destination and tag,
//! [`Pending`]): written before any file is staged, replaced by the list
//! of staged files in the completion's commit, cleared once all are in
//! place. A home killed in between cleans up when it starts again
//! ([`finish_pending`]): the outputs of a committed completion are put in
//! place (it is acknowledged: they must not be lost), files staged for one
//! never committed are removed (the host reports the end again, and the
//! outputs are staged anew), so no hidden file is left behind.

use super::Home;
use super::as_owner::{OwnerFsError, io_error, with_fs};
use super::user_log::{UserEvent, user_log};
use crate::queue::JobRecord;
use crate::userfs::{Op, PathErrorKind, Staged, UserFs, UserFsError};
use gleaner_core::time::Time;
use gleaner_edge::ApiError;
use gleaner_proto::job::{JobId, JobState};
use gleaner_proto::wire::ErrorCode;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// Completes `r` (its host reported `state`, a completion): stages the
/// outputs, commits the completion with `detail` (plus any staging
/// problems), then publishes them, or discards them if the commit fails.
/// A destination on a full disk requeues the job instead.
/// One completion of a job at a time: a second report while one is under
/// way is told to come back (503), and then finds it applied. Returns the
/// updated record and the detail recorded.
pub(crate) async fn complete(
    home: Arc<Home>,
    r: JobRecord,
    state: JobState,
    mut detail: String,
    at: Time,
) -> Result<(JobRecord, String), ApiError> {
    let Some(_busy) = Completing::enter(&home, r.id) else {
        return Err(ApiError::new(
            ErrorCode::Unavailable,
            format!("job {} is being completed; try again", r.id),
        ));
    };
    let (staged, problems) = stage(&home, &r, true).await;
    // A full disk is not the job's fault: rather than completing without
    // its outputs, the job goes back to the queue (an eviction, which
    // does not keep it off its host) and runs again when there is room.
    if let Some(full) = problems.iter().find(|p| crate::disk::says_full(p)) {
        discard(&home, staged).await;
        tracing::warn!(job = %r.id, problem = %full, "outputs not delivered: disk full; requeued");
        let why = format!("{detail}: outputs not delivered, {full}; requeued");
        let new = home.queue().transition(r.id, JobState::Idle, &why, at)?;
        return Ok((new, why));
    }
    if !problems.is_empty() {
        detail.push_str(&format!(" (output delivery: {})", problems.join("; ")));
    }
    let record = pending_record(&staged);
    let moved = home
        .queue()
        .transition_exited(r.id, state, &detail, at, Some(&record));
    let new = match moved {
        Ok(n) => n,
        Err(e) => {
            discard(&home, staged).await;
            return Err(e.into());
        }
    };
    let problems = publish(staged).await;
    published(&home, r.id, &r.owner, at, problems).await;
    Ok((new, detail))
}

/// Completes `r`, a member of a reconfigurable parallel job that the run
/// which ended the job (rank 0 exited with `exit_code`) did not use, from
/// the queue (`JobQueue::complete_unused_member`): its `output` and
/// `error` files are put in place empty, as for any proc that wrote
/// nothing, so that every proc of the job ends with its files. Whatever an
/// earlier, vacated run of it left in the spool is no output of the job.
pub(crate) async fn complete_unused(
    home: Arc<Home>,
    r: JobRecord,
    exit_code: i32,
    mut detail: String,
    at: Time,
) -> Result<String, ApiError> {
    let Some(_busy) = Completing::enter(&home, r.id) else {
        return Err(ApiError::new(
            ErrorCode::Unavailable,
            format!("job {} is being completed; try again", r.id),
        ));
    };
    let (staged, problems) = stage(&home, &r, false).await;
    if !problems.is_empty() {
        detail.push_str(&format!(" (output delivery: {})", problems.join("; ")));
    }
    let record = pending_record(&staged);
    let done = home
        .queue()
        .complete_unused_member(r.id, exit_code, &detail, at, Some(&record));
    if let Err(e) = done {
        discard(&home, staged).await;
        return Err(e.into());
    }
    let problems = publish(staged).await;
    published(&home, r.id, &r.owner, at, problems).await;
    Ok(detail)
}

/// Where one staged output is: recorded before it is written (not
/// committed: a restart removes it), then with the completion's commit
/// (committed: a restart puts it in place).
#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    what: String,
    path: PathBuf,
    tag: String,
    #[serde(default = "committed_by_default")]
    committed: bool,
}

fn committed_by_default() -> bool {
    true
}

fn to_record(list: &[Pending]) -> String {
    serde_json::to_string(list).unwrap_or_else(|_| "[]".to_string())
}

/// The record of what `s` staged, for the completion's commit.
fn pending_record(s: &StagedOutputs) -> String {
    let list: Vec<Pending> = s
        .files
        .iter()
        .map(|(what, f)| Pending {
            what: what.clone(),
            path: f.path().to_path_buf(),
            tag: f.tag().to_string(),
            committed: true,
        })
        .collect();
    to_record(&list)
}

/// The outputs of `job` (of `owner`) are in place, but for `problems`:
/// forgets its record, tells the user about the problems, and hands the
/// spool of a completed job to the spool's books (a copy kept a while, or
/// the only copy of what could not be delivered).
async fn published(home: &Home, job: JobId, owner: &str, at: Time, problems: Vec<String>) {
    if let Err(e) = home.queue().published(job) {
        tracing::warn!(%job, error = %e, "cannot clear the record of delivered outputs");
    }
    let completed = home
        .queue()
        .get(job)
        .ok()
        .flatten()
        .is_some_and(|r| r.state.kind() == gleaner_proto::job::JobStateKind::Completed);
    if completed {
        super::spool::delivered(home, job, owner, problems.is_empty());
    }
    if !problems.is_empty() {
        let text = format!("Output delivery failed: {}", problems.join("; "));
        user_log(home, job, at, UserEvent::Generic { text }).await;
    }
}

/// Finishes what an earlier process left between staging outputs and
/// putting them in place (see the module docs): the outputs of a committed
/// completion are put in place, those staged for a completion that was
/// never committed are removed (the host reports it again, and it is
/// staged anew). Returns how many files it put in place.
pub(crate) async fn finish_pending(home: &Home, at: Time) -> usize {
    let pending = match home.queue().publishing() {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "cannot read the outputs left to deliver");
            return 0;
        }
    };
    let mut done = 0;
    for (job, owner, _) in pending {
        // A completion of this job under way now writes its own record.
        let Some(_busy) = Completing::enter(home, job) else {
            continue;
        };
        let Ok(Some(record)) = home.queue().publishing_of(job) else {
            continue;
        };
        let list: Vec<Pending> = match serde_json::from_str(&record) {
            Ok(l) => l,
            Err(e) => {
                let p = format!("unreadable record of staged outputs: {e}");
                published(home, job, &owner, at, vec![p]).await;
                continue;
            }
        };
        let problems = match UserFs::for_user(&owner) {
            Ok(fs) => {
                let res = with_fs(&fs, move |u| {
                    let mut problems = Vec::new();
                    let mut n = 0;
                    for p in list {
                        if !p.committed {
                            if let Err(e) = u.discard_tagged(&p.path, &p.tag) {
                                tracing::warn!(path = %p.path.display(), error = %e, "cannot remove an output staged before a crash");
                            }
                            continue;
                        }
                        match u.publish_tagged(&p.path, &p.tag) {
                            Ok(true) => n += 1,
                            Ok(false) => {}
                            Err(e) => problems.push(format!("{}: {e} (kept in the spool)", p.what)),
                        }
                    }
                    Ok((n, problems))
                })
                .await;
                match res {
                    Ok((n, problems)) => {
                        done += n;
                        problems
                    }
                    Err(e) => vec![format!("outputs kept in the spool: {e}")],
                }
            }
            Err(e) => vec![format!("outputs kept in the spool: {e}")],
        };
        for p in &problems {
            tracing::warn!(%job, problem = %p, "output delivery after restart");
        }
        published(home, job, &owner, at, problems).await;
    }
    if done > 0 {
        tracing::info!(
            files = done,
            "outputs of completions before the restart put in place"
        );
    }
    done
}

/// Removes, as `owner`, whatever `job` staged beside its destinations for
/// a completion that was never committed (a removed job: its outputs are
/// not delivered), and the record of it.
pub(crate) async fn discard_staged(home: &Home, job: JobId, owner: &str) {
    let Ok(Some(record)) = home.queue().publishing_of(job) else {
        return;
    };
    let list: Vec<Pending> = serde_json::from_str::<Vec<Pending>>(&record)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !p.committed)
        .collect();
    if !list.is_empty() {
        match UserFs::for_user(owner) {
            Ok(fs) => {
                let _ = with_fs(&fs, move |u| {
                    for p in list {
                        if let Err(e) = u.discard_tagged(&p.path, &p.tag) {
                            tracing::warn!(path = %p.path.display(), error = %e, "cannot remove a staged output of a removed job");
                        }
                    }
                    Ok(())
                })
                .await;
            }
            Err(e) => tracing::warn!(%job, error = %e, "cannot remove staged outputs"),
        }
    }
    if let Err(e) = home.queue().published(job) {
        tracing::warn!(%job, error = %e, "cannot clear the record of staged outputs");
    }
}

/// Marks a job as being completed while it lives.
struct Completing<'h> {
    home: &'h Home,
    job: JobId,
}

impl<'h> Completing<'h> {
    fn enter(home: &'h Home, job: JobId) -> Option<Self> {
        let mut set = home
            .completing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Not `then_some`: it builds its argument eagerly, and a
        // `Completing` dropped here, under the lock, would lock it again
        // (the home hung when a host's report of a completion met the
        // delivery left from before a restart) and take the job out of the
        // set of the completion under way.
        if set.insert(job) {
            Some(Completing { home, job })
        } else {
            None
        }
    }
}

impl Drop for Completing<'_> {
    fn drop(&mut self) {
        self.home
            .completing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.job);
    }
}

/// Outputs written aside, waiting for the completion to be durable.
pub(crate) struct StagedOutputs {
    fs: Option<UserFs>,
    files: Vec<(String, Staged)>,
    job: JobId,
}

/// Copies the spooled outputs of `r` beside their destinations (see the
/// module docs); without `spooled`, its `output` and `error` empty and
/// nothing else. Returns what was staged and the problems, as text.
async fn stage(home: &Home, r: &JobRecord, spooled: bool) -> (StagedOutputs, Vec<String>) {
    let mut staged = StagedOutputs {
        fs: None,
        files: Vec::new(),
        job: r.id,
    };
    let spool = home.spool_for(r.id);
    let Some(iwd) = r.description.iwd.as_deref().map(PathBuf::from) else {
        let p = format!(
            "no initial directory: outputs stay in the spool ({})",
            spool.display()
        );
        return (staged, vec![p]);
    };
    let fs = match UserFs::for_user(&r.owner) {
        Ok(fs) => fs,
        Err(e) => {
            let p = format!("outputs stay in the spool ({}): {e}", spool.display());
            tracing::warn!(job = %r.id, problem = %p, "output delivery");
            return (staged, vec![p]);
        }
    };
    // (what, spooled file, destination); no file, or one that is not
    // there, gives an empty destination.
    let from = |name: &str| spooled.then(|| spool.join(name));
    let mut copies: Vec<(String, Option<PathBuf>, PathBuf)> = Vec::new();
    // `transfer_output = false` / `transfer_error = false`: not brought
    // home.
    let skip = r.description.untransferred;
    if let Some(o) = r.description.output.as_ref().filter(|_| !skip.output) {
        copies.push((format!("output = {o}"), from("stdout"), iwd.join(o)));
    }
    if let Some(e) = r.description.error.as_ref().filter(|_| !skip.error) {
        copies.push((format!("error = {e}"), from("stderr"), iwd.join(e)));
    }
    let files = if spooled {
        std::fs::read_dir(spool.join("files")).ok()
    } else {
        None
    };
    if let Some(entries) = files {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".part") {
                continue;
            }
            copies.push((name.clone(), Some(e.path()), iwd.join(&name)));
        }
    }
    // Files an earlier process staged for this job and never committed
    // (it died; the host reported the end again before the restart's
    // clean-up got to them) go before their log is replaced.
    let earlier: Vec<Pending> = home
        .queue()
        .publishing_of(r.id)
        .ok()
        .flatten()
        .and_then(|rec| serde_json::from_str::<Vec<Pending>>(&rec).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !p.committed)
        .collect();
    if !earlier.is_empty() {
        let _ = with_fs(&fs, move |u| {
            for p in earlier {
                let _ = u.discard_tagged(&p.path, &p.tag);
            }
            Ok(())
        })
        .await;
    }
    // Each file's tag is recorded before the file exists: a crash from
    // here to the commit leaves files a restart finds and removes.
    let mut plan = Vec::with_capacity(copies.len());
    let mut problems = Vec::new();
    for (what, from, to) in copies {
        match crate::userfs::new_tag() {
            Ok(tag) => plan.push((what, from, to, tag)),
            Err(e) => problems.push(format!("{what}: {e} (kept in the spool)")),
        }
    }
    let log: Vec<Pending> = plan
        .iter()
        .map(|(what, _, to, tag)| Pending {
            what: what.clone(),
            path: to.clone(),
            tag: tag.clone(),
            committed: false,
        })
        .collect();
    if let Err(e) = home.queue().set_publishing(r.id, &to_record(&log)) {
        let p = format!("outputs stay in the spool ({}): {e}", spool.display());
        tracing::warn!(job = %r.id, problem = %p, "output delivery");
        return (staged, vec![p]);
    }
    for (what, from, to, tag) in plan {
        match stage_one(&fs, from.as_deref(), to, tag).await {
            Ok(s) => staged.files.push((what, s)),
            Err(e) => match full_disk(&e) {
                Some(full) => problems.push(format!("{what}: {full}")),
                None => problems.push(format!("{what}: {e} (kept in the spool)")),
            },
        }
    }
    for p in &problems {
        tracing::warn!(job = %r.id, problem = %p, "output delivery");
    }
    staged.fs = Some(fs);
    (staged, problems)
}

/// Copies the spooled file `from` (none, or absent: nothing was written,
/// so the destination will be empty, as HTCondor does) beside `to`, as
/// `fs`'s user.
async fn stage_one(
    fs: &UserFs,
    from: Option<&std::path::Path>,
    to: PathBuf,
    tag: String,
) -> Result<Staged, OwnerFsError> {
    let Some(from) = from else {
        return with_fs(fs, move |u| u.stage_tagged(&to, &tag, 0o666, |_| Ok(()))).await;
    };
    // Opened by the daemon: the spool is its own, private directory.
    let source = match std::fs::File::open(from) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(OwnerFsError::Fs(io_error(
                Op::Read,
                from,
                &fs.user().name,
                e,
            )));
        }
    };
    with_fs(fs, move |u| {
        u.stage_tagged(&to, &tag, 0o666, |out| {
            if let Some(mut src) = source {
                std::io::copy(&mut src, out)?;
            }
            Ok(())
        })
    })
    .await
}

/// "disk full at PATH" when `e` is a full file system or quota.
fn full_disk(e: &OwnerFsError) -> Option<String> {
    let OwnerFsError::Fs(UserFsError::Path(p)) = e else {
        return None;
    };
    match &p.kind {
        PathErrorKind::Io(io) if crate::disk::is_full(io) => {
            Some(crate::disk::describe(&p.path, io))
        }
        _ => None,
    }
}

/// Puts the staged outputs in place, now that the completion is durable.
/// Returns the problems (the data then stays in the spool).
async fn publish(s: StagedOutputs) -> Vec<String> {
    let Some(fs) = s.fs else {
        return Vec::new();
    };
    let job = s.job;
    let files = s.files;
    let res = with_fs(&fs, move |u| {
        let mut problems = Vec::new();
        for (what, f) in files {
            if let Err(e) = u.publish(f) {
                problems.push(format!("{what}: {e} (kept in the spool)"));
            }
        }
        Ok(problems)
    })
    .await;
    let problems = res.unwrap_or_else(|e| vec![format!("outputs kept in the spool: {e}")]);
    for p in &problems {
        tracing::warn!(%job, problem = %p, "output delivery");
    }
    problems
}

/// Removes the staged outputs of a completion that was not committed,
/// and their record.
async fn discard(home: &Home, s: StagedOutputs) {
    let job = s.job;
    if let Some(fs) = s.fs {
        let files = s.files;
        let _ = with_fs(&fs, move |u| {
            for (_, f) in files {
                u.discard(f);
            }
            Ok(())
        })
        .await;
    }
    if let Err(e) = home.queue().published(job) {
        tracing::warn!(%job, error = %e, "cannot clear the record of staged outputs");
    }
}
