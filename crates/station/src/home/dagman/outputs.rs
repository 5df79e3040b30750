//! DAGMan's files, written as the DAG's owner ([`crate::home::as_owner`]):
//! `FILE.dagman.out` (appended, one line per message with DAGMan's
//! timestamp), `FILE.nodes.log` (every node job's events in HTCondor's
//! user-log format), the jobstate log (appended), and whole files replaced
//! atomically (node status file, dot file, metrics, rescue DAG, save
//! points). A failure is logged and the DAG goes on: the queue's database
//! is what the run depends on.

use crate::home::as_owner::{as_owner, io_error};
use crate::userfs::Op;
use gleaner_core::dag::rescue::utc;
use gleaner_core::time::Time;
use std::io::Write;
use std::path::PathBuf;

/// DAGMan's line prefix: `MM/DD/YY HH:MM:SS ` (UTC).
pub fn stamp(at: Time) -> String {
    let (y, mo, d, h, mi, s) = utc(at.as_micros() / 1_000_000);
    format!(
        "{mo:02}/{d:02}/{:02} {h:02}:{mi:02}:{s:02} ",
        y.rem_euclid(100)
    )
}

/// `lines` prefixed with the time, one per line.
pub fn stamped(at: Time, lines: &[String]) -> String {
    let p = stamp(at);
    let mut out = String::new();
    for l in lines {
        out.push_str(&p);
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Appends `text` to `path` as `owner`.
pub async fn append(owner: &str, path: &str, text: String) {
    if text.is_empty() {
        return;
    }
    let target = PathBuf::from(path);
    let res = as_owner(owner, move |u| {
        let mut f = u.open_append_create(&target, 0o644)?;
        f.write_all(text.as_bytes())
            .map_err(|e| io_error(Op::Append, &target, &u.user().name, e))
    })
    .await;
    if let Err(e) = res {
        tracing::warn!(path, error = %e, "cannot append to a DAG file");
    }
}

/// Whether `owner` may create or append to `path` (the file is created,
/// empty, if it was not there): a DAG whose `dagman.out` cannot be written
/// is refused at submission, as condor_submit_dag refuses a DAG beside
/// which it cannot write its files.
pub async fn writable(owner: &str, path: &str) -> Result<(), String> {
    let target = PathBuf::from(path);
    as_owner(owner, move |u| {
        u.open_append_create(&target, 0o644).map(drop)
    })
    .await
    .map_err(|e| e.to_string())
}

/// Whether `path` exists, as `owner` sees it.
pub async fn exists(owner: &str, path: &str) -> bool {
    let target = PathBuf::from(path);
    as_owner(owner, move |_u| {
        Ok(std::fs::symlink_metadata(&target).is_ok())
    })
    .await
    .unwrap_or(false)
}

/// Replaces `path` with `text` as `owner`, atomically (a new file renamed
/// into place). Returns whether it was written.
pub async fn replace(owner: &str, path: &str, text: String) -> bool {
    let target = PathBuf::from(path);
    let res = as_owner(owner, move |u| {
        let staged = u.stage(&target, 0o644, |f| f.write_all(text.as_bytes()))?;
        u.publish(staged)
    })
    .await;
    match res {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(path, error = %e, "cannot write a DAG file");
            false
        }
    }
}

/// The names in directory `dir`, as `owner` sees them.
pub async fn list(owner: &str, dir: &str) -> Vec<String> {
    let d = PathBuf::from(dir);
    let res = as_owner(owner, move |u| {
        u.check_dir(&d)?;
        let rd = std::fs::read_dir(&d).map_err(|e| io_error(Op::Read, &d, &u.user().name, e))?;
        Ok(rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect::<Vec<_>>())
    })
    .await;
    res.unwrap_or_default()
}

/// Renames `from` to `to` as `owner` (rescue and save files made `.old`).
pub async fn rename(owner: &str, from: &str, to: &str) {
    let (f, t) = (PathBuf::from(from), PathBuf::from(to));
    let res = as_owner(owner, move |u| {
        u.check_writable(&f)?;
        std::fs::rename(&f, &t).map_err(|e| io_error(Op::Write, &f, &u.user().name, e))
    })
    .await;
    if let Err(e) = res {
        tracing::warn!(from, to, error = %e, "cannot rename a DAG file");
    }
}
