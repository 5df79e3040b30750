//! The user log (`log =` in the submit file): every event of a job in
//! HTCondor's event format ([`event`]), so that tools that read user logs
//! keep working.

mod event;

pub use event::{UserEvent, format_event};

use super::Home;
use super::as_owner::{as_owner, io_error};
use crate::userfs::Op;
use gleaner_core::time::Time;
use gleaner_proto::job::{JobEventKind, JobId};
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
    let Some(log) = r.description.log.as_deref() else {
        return;
    };
    let path = match (log.starts_with('/'), r.description.iwd.as_deref()) {
        (true, _) => PathBuf::from(log),
        (false, Some(iwd)) => PathBuf::from(iwd).join(log),
        (false, None) => return,
    };
    let entry = format_event(id, at, &event);
    let owner = r.owner.clone();
    let target = path.clone();
    let res = as_owner(&owner, move |u| {
        let mut f = u.open_append_create(&target, 0o644)?;
        f.write_all(entry.as_bytes())
            .map_err(|e| io_error(Op::Append, &target, &u.user().name, e))
    })
    .await;
    if let Err(e) = res {
        tracing::warn!(job = %id, path = %path.display(), error = %e, "cannot write user log");
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
