//! `condor_tail [-f] [-stderr] [-no-stdout] [-maxbytes N] JOB`: a running
//! job's output as its home has it (`glean tail`).

use super::args::{Cursor, Usage, is_opt};
use std::ffi::OsString;
use std::process::ExitCode;

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let (mut follow, mut stderr, mut no_stdout) = (false, false, false);
    let mut maxbytes = 1024u64;
    let mut job = None;
    let mut station = None;
    while let Some(a) = c.next() {
        if is_opt(&a, "follow", 1) {
            follow = true;
        } else if is_opt(&a, "stderr", 2) {
            stderr = true;
        } else if is_opt(&a, "no-stdout", 2) {
            no_stdout = true;
        } else if is_opt(&a, "maxbytes", 1) {
            let v = c.value(&a, true)?;
            maxbytes = v
                .parse()
                .map_err(|_| Usage::new(format!("{tool}: -maxbytes {v}: not a number")))?;
        } else if is_opt(&a, "name", 1) {
            station = Some(c.value(&a, true)?);
        } else if is_opt(&a, "auto-retry", 1) || a.starts_with("-debug") || is_opt(&a, "pool", 1) {
            if is_opt(&a, "pool", 1) {
                c.value(&a, true)?;
            }
        } else if is_opt(&a, "help", 1) {
            println!("Usage: {tool} [-f] [-stderr] [-no-stdout] [-maxbytes N] CLUSTER.PROC");
            return Ok(ExitCode::SUCCESS);
        } else if a.starts_with('-') {
            return Err(Usage::new(format!("{tool}: unknown option {a}")).into());
        } else if job.is_none() {
            job = Some(a);
        } else {
            return Err(Usage::new(format!(
                "{tool}: only the job's standard output and error can be followed, not {a}"
            ))
            .into());
        }
    }
    let Some(id) = job else {
        return Err(Usage::new(format!("{tool}: no job id given")).into());
    };
    if no_stdout && !stderr {
        return Err(Usage::new(format!(
            "{tool}: -no-stdout leaves nothing to show without -stderr"
        ))
        .into());
    }
    let id = if id.contains('.') {
        id
    } else {
        format!("{id}.0")
    };
    crate::tail::tail(crate::tail::TailArgs {
        id,
        stderr,
        follow,
        maxbytes,
        interval: 1.0,
        connect: crate::jobs::ConnectArgs {
            station,
            token: None,
        },
    })
}
