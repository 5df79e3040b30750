//! The user log (`log =` in the submit file): every event of a job in
//! HTCondor's event format ([`event`]), so that tools that read user logs
//! keep working.

mod event;

pub use event::{UserEvent, format_event};

use super::Home;
use super::as_owner::{as_owner, io_error};
use crate::queue::JobRecord;
use crate::userfs::Op;
use gleaner_core::time::Time;
use gleaner_proto::job::{JobEventKind, JobId};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Appends one HTCondor-style event to the job's user log, if it has one,
/// as the job's owner (created 0644 and owned by them if new; a symlink
/// not theirs or root's is refused). Failures are logged, never fatal: the
/// queue's history is authoritative.
pub async fn user_log(home: &Home, id: JobId, at: Time, event: UserEvent) {
    let Ok(Some(r)) = home.queue().get(id) else {
        return;
    };
    user_log_records(&[&r], at, &event).await;
}

/// [`user_log`] of one event for each of `jobs` (a user's action on a
/// whole cluster), from records already read: the entries bound for one
/// file are appended in one write, in the order given.
pub async fn user_log_records(jobs: &[&JobRecord], at: Time, event: &UserEvent) {
    // (owner, file) → entries, in first-seen order.
    let mut files: Vec<((String, PathBuf), String)> = Vec::new();
    let mut at_file: HashMap<(String, PathBuf), usize> = HashMap::new();
    for r in jobs {
        let Some(path) = log_path(r) else {
            continue;
        };
        let key = (r.owner.clone(), path);
        let entry = format_event(r.id, at, event);
        match at_file.get(&key) {
            Some(&i) => files[i].1.push_str(&entry),
            None => {
                at_file.insert(key.clone(), files.len());
                files.push((key, entry));
            }
        }
    }
    for ((owner, path), text) in files {
        let target = path.clone();
        let res = as_owner(&owner, move |u| {
            let mut f = u.open_append_create(&target, 0o644)?;
            f.write_all(text.as_bytes())
                .map_err(|e| io_error(Op::Append, &target, &u.user().name, e))
        })
        .await;
        if let Err(e) = res {
            tracing::warn!(path = %path.display(), error = %e, "cannot write user log");
        }
    }
}

/// Where a job's user log is: `log` from the submit file, relative to its
/// initial directory.
fn log_path(r: &JobRecord) -> Option<PathBuf> {
    let log = r.description.log.as_deref()?;
    match (log.starts_with('/'), r.description.iwd.as_deref()) {
        (true, _) => Some(PathBuf::from(log)),
        (false, Some(iwd)) => Some(PathBuf::from(iwd).join(log)),
        (false, None) => None,
    }
}

/// [`user_log`] in a task of its own, for the home's loops (lease
/// monitor, DAG manager): one user's slow file system must not hold them
/// up. Entries written this way may land after a later event's.
pub fn spawn_user_log(home: &Arc<Home>, id: JobId, at: Time, event: UserEvent) {
    let home = Arc::clone(home);
    tokio::spawn(async move { user_log(&home, id, at, event).await });
}

/// Whether the job's current run left a checkpoint at home (a stored one
/// since it last started running): what an eviction event reports as
/// "Job was checkpointed".
pub fn checkpointed_this_run(home: &Home, id: JobId) -> bool {
    let Ok(events) = home.queue().events(id) else {
        return false;
    };
    events
        .iter()
        .rev()
        .take_while(|e| !matches!(e.kind, JobEventKind::Placed | JobEventKind::Started))
        .any(|e| {
            e.kind == JobEventKind::Checkpointed && !e.detail.starts_with("checkpoint rejected")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(
            gleaner_proto::api::utc_datetime(Time::from_secs(0)),
            "1970-01-01 00:00:00"
        );
        assert_eq!(
            gleaner_proto::api::utc_datetime(Time::from_secs(1_763_707_800)),
            "2025-11-21 06:50:00"
        );
    }
}
