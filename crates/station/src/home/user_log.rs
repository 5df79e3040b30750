//! The user log (`log =` in the submit file): every event of a job in
//! HTCondor's event format, so that tools that read user logs keep working.

use super::Home;
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use std::io::Write;
use std::path::PathBuf;

/// Appends one HTCondor-style event to the job's user log, if it has one.
/// Failures are logged, never fatal: the queue's history is authoritative.
pub fn user_log(home: &Home, id: JobId, at: Time, code: &str, text: &str, detail: &str) {
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
    let res = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(entry.as_bytes()));
    if let Err(e) = res {
        tracing::warn!(job = %id, path = %path.display(), error = %e, "cannot write user log");
    }
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
