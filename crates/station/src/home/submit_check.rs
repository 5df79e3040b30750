//! Submissions checked as their owner before anything is queued.
//!
//! Each expanded job description's paths are validated with
//! [`validate_job`], as the owner, with the same code the home later uses
//! to open them (issue 12). The checks run outside the queue lock: the
//! next cluster id is read first, the cluster is expanded with it and
//! checked, then queued only if that id is still the next one (else the
//! whole thing is done again), so `$(Cluster)` in a path is checked as it
//! will be used and a slow file system never holds the queue.

use super::Home;
use super::as_owner::USER_FS_TIMEOUT;
use crate::queue::QueueError;
use crate::userfs::{PathErrorKind, PathProblem, UserFs, validate_job};
use gleaner_core::time::Time;
use gleaner_edge::ApiError;
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::submit::{ClusterSubmission, ExpandError};
use gleaner_proto::wire::ErrorCode;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Times a submission is expanded and checked again when other
/// submissions took its cluster id meanwhile.
const ATTEMPTS: usize = 8;

/// Problems listed in one refusal (the rest are counted).
const MAX_LISTED: usize = 20;

/// Which problems refuse a submission.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strictness {
    /// Every problem (a plain submission: its files must be there now).
    All,
    /// All but missing files and directories: a DAG node's inputs are
    /// often its parents' outputs, made only later. Those are checked when
    /// used, as the owner, like everything else.
    MissingAllowed,
}

/// The next cluster id the queue will hand out.
fn peek_cluster(home: &Home) -> Result<u64, ApiError> {
    let mut q = home.queue();
    let next: i64 = q
        .conn_mut()
        .query_row(
            "SELECT value FROM meta WHERE key = 'next_cluster'",
            [],
            |r| r.get(0),
        )
        .map_err(QueueError::from)?;
    u64::try_from(next).map_err(|_| QueueError::Range("cluster id").into())
}

/// The cluster's descriptions with `cluster` as its id, owned by `owner`,
/// initial directories resolved against `submit_dir`.
pub(crate) fn expand(
    sub: &ClusterSubmission,
    cluster: u64,
    owner: &str,
    submit_dir: Option<&str>,
) -> Result<Vec<JobDescription>, QueueError> {
    let mut descs = sub.expand(cluster)?;
    for d in &mut descs {
        d.owner = owner.to_string();
        gleaner_proto::job::resolve_submit_paths(d, submit_dir);
    }
    Ok(descs)
}

/// Checks every description's paths as `fs`'s user; a 400 listing each
/// problem (submit key, path, why) if any refuses the submission. `what`
/// names the submission in messages (e.g. `node b`).
pub(crate) async fn check_paths(
    fs: &UserFs,
    descs: &[JobDescription],
    strictness: Strictness,
    what: &str,
) -> Result<(), ApiError> {
    // Procs of a cluster usually share most paths: check each distinct
    // set of paths once.
    let mut seen = BTreeSet::new();
    let unique: Vec<JobDescription> = descs
        .iter()
        .filter(|d| seen.insert(path_key(d)))
        .cloned()
        .collect();
    let fs = fs.clone();
    let work = tokio::task::spawn_blocking(move || {
        let mut all: Vec<PathProblem> = Vec::new();
        for d in &unique {
            all.extend(validate_job(&fs, d)?);
        }
        Ok::<_, crate::userfs::UserFsError>(all)
    });
    let problems = match tokio::time::timeout(USER_FS_TIMEOUT, work).await {
        Ok(Ok(Ok(p))) => p,
        Ok(Ok(Err(e))) => return Err(super::identity::owner_refusal(&e)),
        Ok(Err(e)) => return Err(ApiError::internal("cannot check the job's files", e)),
        Err(_) => {
            return Err(ApiError::new(
                ErrorCode::Unavailable,
                format!(
                    "{what}: checking the job's files took more than {} s; nothing was queued",
                    USER_FS_TIMEOUT.as_secs()
                ),
            ));
        }
    };
    let problems: Vec<PathProblem> = problems
        .into_iter()
        .filter(|p| {
            strictness == Strictness::All
                || !matches!(
                    p.error.kind(),
                    Some(PathErrorKind::NotFound | PathErrorKind::NotADirectory)
                )
        })
        .collect();
    let Some(first) = problems.first() else {
        return Ok(());
    };
    let field = first.key;
    let mut lines: Vec<String> = Vec::new();
    for p in &problems {
        let line = p.to_string();
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let more = lines.len().saturating_sub(MAX_LISTED);
    lines.truncate(MAX_LISTED);
    if more > 0 {
        lines.push(format!("… and {more} more"));
    }
    tracing::warn!(%what, user = %fs_name(&problems), problems = lines.len(), "submission refused: paths");
    Err(ApiError::bad(
        field,
        format!(
            "{what}: nothing was queued; the job's owner cannot use these paths:\n{}",
            lines.join("\n")
        ),
    ))
}

fn fs_name(problems: &[PathProblem]) -> String {
    problems
        .iter()
        .find_map(|p| match &p.error {
            crate::userfs::UserFsError::Path(e) => Some(e.user.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The paths of a description that validation looks at.
fn path_key(d: &JobDescription) -> String {
    serde_json::json!([
        d.iwd,
        d.transfer_executable.then_some(&d.executable),
        d.input,
        d.transfer_input_files,
        d.output,
        d.error,
        d.log,
        d.transfer_output_files,
        d.untransferred,
    ])
    .to_string()
}

/// A queued cluster.
pub(crate) struct Queued {
    pub(crate) ids: Vec<JobId>,
    /// Some job of it has a user log.
    pub(crate) logged: bool,
}

/// Expands `sub` as cluster `cluster` of `owner`, handing each description
/// to `each` (initial directories resolved against `submit_dir`).
fn expand_each(
    sub: &ClusterSubmission,
    cluster: u64,
    owner: &str,
    submit_dir: Option<&str>,
    mut each: impl FnMut(JobDescription) -> Result<(), QueueError>,
) -> Result<(), QueueError> {
    sub.expand_each(cluster, |mut d| {
        d.owner = owner.to_string();
        gleaner_proto::job::resolve_submit_paths(&mut d, submit_dir);
        each(d)
    })
    .map_err(|e| match e {
        ExpandError::Submit(e) => QueueError::Submit(e),
        ExpandError::Sink(e) => e,
    })
}

/// Expands, checks and queues a cluster as `fs`'s user; nothing is queued
/// if any path is refused. Streamed (issue 15, item 5): the cluster is
/// expanded twice, once to check each distinct set of paths and once into
/// the queue's transaction, and neither pass holds all its descriptions.
pub(crate) async fn queue_checked(
    home: &Arc<Home>,
    fs: &UserFs,
    sub: &ClusterSubmission,
    submit_dir: Option<&str>,
    at: Time,
) -> Result<Queued, ApiError> {
    let owner = fs.user().name.clone();
    let sub = Arc::new(sub.clone());
    let dir = submit_dir.map(str::to_string);
    for _ in 0..ATTEMPTS {
        let cluster = peek_cluster(home)?;
        // Expansion is CPU work: off the async workers.
        let (s, o, d) = (sub.clone(), owner.clone(), dir.clone());
        let (unique, logged) = tokio::task::spawn_blocking(move || {
            let mut seen = BTreeSet::new();
            let mut unique = Vec::new();
            let mut logged = false;
            expand_each(&s, cluster, &o, d.as_deref(), |d| {
                logged |= d.log.is_some();
                if seen.insert(path_key(&d)) {
                    unique.push(d);
                }
                Ok(())
            })
            .map(|()| (unique, logged))
        })
        .await
        .map_err(|e| ApiError::internal("submission expansion failed", e))??;
        check_paths(fs, &unique, Strictness::All, "submission").await?;
        drop(unique);
        let (h, s, o, d) = (home.clone(), sub.clone(), owner.clone(), dir.clone());
        let queued = tokio::task::spawn_blocking(move || {
            h.queue().submit_streamed(at, cluster, |sink| {
                expand_each(&s, cluster, &o, d.as_deref(), sink)
            })
        })
        .await
        .map_err(|e| ApiError::internal("submission failed", e))??;
        // `None`: another submission took the cluster id meanwhile.
        if let Some(ids) = queued {
            return Ok(Queued { ids, logged });
        }
    }
    Err(ApiError::new(
        ErrorCode::Unavailable,
        "the queue was busy with other submissions; nothing was queued, try again",
    ))
}
