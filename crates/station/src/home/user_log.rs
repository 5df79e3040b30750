//! The user log (`log =` in the submit file): every event of a job in
//! HTCondor's event format, so that tools that read user logs keep working.

use super::Home;
use super::as_owner::{as_owner, io_error};
use crate::userfs::Op;
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Appends one HTCondor-style event to the job's user log, if it has one,
/// as the job's owner (created 0644 and owned by them if new; a symlink
/// not theirs or root's is refused). Failures are logged, never fatal: the
/// queue's history is authoritative.
pub async fn user_log(home: &Home, id: JobId, at: Time, code: &str, text: &str, detail: &str) {
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
    let entry = format!(
        "{code} ({:03}.{:03}.000) {} {text}\n\t{detail}\n...\n",
        id.cluster,
        id.proc,
        gleaner_proto::api::utc_datetime(at)
    );
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
pub fn spawn_user_log(
    home: &Arc<Home>,
    id: JobId,
    at: Time,
    code: &'static str,
    text: &str,
    detail: &str,
) {
    let home = Arc::clone(home);
    let (text, detail) = (text.to_string(), detail.to_string());
    tokio::spawn(async move { user_log(&home, id, at, code, &text, &detail).await });
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
