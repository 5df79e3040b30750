//! `condor_watch_q [-clusters C…] [-exit GROUPER,STATUS[,CODE]]`: the
//! caller's clusters' progress as jobs move (`glean watch`), and HTCondor's
//! exit conditions: `-exit all,done` (every job completed or removed) and
//! `-exit any,held` (a job held), each with an optional exit status.

use super::args::{Cursor, Usage, is_opt};
use std::ffi::OsString;
use std::process::ExitCode;

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let mut clusters = Vec::new();
    let (mut exit_done, mut exit_held) = (None::<u8>, None::<u8>);
    let mut interval = 2.0;
    while let Some(a) = c.next() {
        if is_opt(&a, "clusters", 1) {
            for w in c.words() {
                for part in w.split(',').filter(|p| !p.is_empty()) {
                    clusters.push(part.parse::<u64>().map_err(|_| {
                        Usage::new(format!("{tool}: -clusters {part}: not a cluster id"))
                    })?);
                }
            }
        } else if is_opt(&a, "exit", 1) {
            let v = c.value(&a, true)?;
            let parts: Vec<&str> = v.split(',').map(str::trim).collect();
            let code = |i: usize| -> Result<Option<u8>, Usage> {
                parts
                    .get(i)
                    .map(|s| {
                        s.parse::<u8>()
                            .map_err(|_| Usage::new(format!("{tool}: -exit {v}: bad exit status")))
                    })
                    .transpose()
            };
            match (parts.first().copied(), parts.get(1).copied()) {
                (Some("all"), Some("done")) => exit_done = Some(code(2)?.unwrap_or(0)),
                (Some("any"), Some("held")) => exit_held = Some(code(2)?.unwrap_or(1)),
                _ => {
                    return Err(Usage::new(format!(
                        "{tool}: -exit {v}: Gleaner knows all,done[,N] and any,held[,N]"
                    ))
                    .into());
                }
            }
        } else if is_opt(&a, "refresh", 1) || is_opt(&a, "no-refresh", 4) {
        } else if is_opt(&a, "interval", 1) {
            let v = c.value(&a, true)?;
            interval = v
                .parse()
                .map_err(|_| Usage::new(format!("{tool}: -interval {v}")))?;
        } else if is_opt(&a, "help", 1) {
            println!("Usage: {tool} [-clusters C…] [-exit all,done[,N]] [-exit any,held[,N]]");
            return Ok(ExitCode::SUCCESS);
        } else if is_opt(&a, "users", 1) || is_opt(&a, "files", 1) || is_opt(&a, "batches", 1) {
            c.words();
        } else if a.starts_with('-') {
            return Err(Usage::new(format!("{tool}: unknown option {a}")).into());
        } else {
            return Err(Usage::new(format!("{tool}: unexpected argument {a}")).into());
        }
    }
    let args = crate::watch::WatchArgs {
        clusters,
        exit_when_done: exit_done.is_some(),
        exit_on_hold: exit_held.is_some(),
        interval,
        connect: Default::default(),
    };
    let out = crate::output::for_mode(false);
    let code = crate::watch::watch(args, out.as_ref())?;
    // glean watch returns 1 for a hold, 0 when done.
    Ok(if code == ExitCode::from(1) {
        ExitCode::from(exit_held.unwrap_or(1))
    } else {
        ExitCode::from(exit_done.unwrap_or(0))
    })
}
