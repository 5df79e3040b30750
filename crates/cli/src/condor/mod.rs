//! `glean` answering to HTCondor's command names, as busybox does: run as
//! `condor_q` (a link to `glean`, or `glean condor_q …`) it parses
//! HTCondor's options and prints HTCondor's output, byte for byte where
//! scripts parse it (`N job(s) submitted to cluster C.`, `-terse`, `-af`,
//! `-format`, the totals lines, `condor_rm`'s sentences, `condor_version`).
//!
//! Each command has a file of its own; they share the option rules
//! (`args`), the station connection (`connect`), job selection by ids,
//! owners and constraints (`select`) and the job table layouts
//! (`crate::output::condor`). Links for the Debian package and for a
//! user's `~/bin` come from [`TOOLS`] (`links`).

mod args;
mod config_val;
mod connect;
mod history;
mod links;
mod q;
mod qedit;
mod rm;
mod select;
mod status;
mod submit;
mod submit_dag;
mod tail;
mod userprio;
mod version;
mod wait;
mod watch_q;

pub use links::{LinksArgs, links, make_links};

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

/// The HTCondor commands `glean` answers to.
pub const TOOLS: &[&str] = &[
    "condor_submit",
    "condor_q",
    "condor_rm",
    "condor_hold",
    "condor_release",
    "condor_history",
    "condor_status",
    "condor_submit_dag",
    "condor_wait",
    "condor_userprio",
    "condor_tail",
    "condor_watch_q",
    "condor_qedit",
    "condor_version",
    "condor_config_val",
];

/// The command this invocation is, from the name it was run under
/// (`argv[0]`'s file name) or, for `glean condor_q ARGS…`, its first
/// argument. Returns the tool's name and its arguments.
pub fn invoked(argv: &[OsString]) -> Option<(&'static str, Vec<OsString>)> {
    let by_name = |a: &OsString| {
        let name = Path::new(a).file_name()?.to_str()?;
        TOOLS.iter().find(|t| **t == name).copied()
    };
    let first = argv.first()?;
    if let Some(t) = by_name(first) {
        return Some((t, argv[1..].to_vec()));
    }
    let second = argv.get(1)?;
    // `glean condor_q …`: only the bare name, never a path.
    if second.to_str().is_some_and(|s| !s.contains('/'))
        && let Some(t) = by_name(second)
    {
        return Some((t, argv[2..].to_vec()));
    }
    None
}

/// Runs HTCondor command `tool` with `args`. A usage problem prints its
/// message and exits with its status (1, as HTCondor's tools do); any
/// other failure prints `tool: error` and exits 1.
pub fn run(tool: &'static str, args: Vec<OsString>) -> ExitCode {
    let result = match tool {
        "condor_submit" => submit::run(tool, args),
        "condor_q" => q::run(tool, args),
        "condor_rm" | "condor_hold" | "condor_release" => rm::run(tool, args),
        "condor_history" => history::run(tool, args),
        "condor_status" => status::run(tool, args),
        "condor_submit_dag" => submit_dag::run(tool, args),
        "condor_wait" => wait::run(tool, args),
        "condor_userprio" => userprio::run(tool, args),
        "condor_tail" => tail::run(tool, args),
        "condor_watch_q" => watch_q::run(tool, args),
        "condor_qedit" => qedit::run(tool, args),
        "condor_version" => version::run(tool, args),
        "condor_config_val" => config_val::run(tool, args),
        other => Err(anyhow::anyhow!(
            "{other}: not an HTCondor command glean knows"
        )),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if let Some(u) = e.downcast_ref::<args::Usage>() {
                crate::output::escape::emit_err(&u.message);
                return ExitCode::from(u.status);
            }
            crate::output::escape::emit_err(&format!("{tool}: {e:#}"));
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn names_choose_the_command() {
        let (t, a) = invoked(&argv(&["/usr/bin/condor_q", "-af", "Owner"])).unwrap();
        assert_eq!((t, a), ("condor_q", argv(&["-af", "Owner"])));
        let (t, a) = invoked(&argv(&["glean", "condor_rm", "12"])).unwrap();
        assert_eq!((t, a), ("condor_rm", argv(&["12"])));
        assert!(invoked(&argv(&["glean", "q"])).is_none());
        assert!(invoked(&argv(&["glean", "./condor_q"])).is_none());
        assert!(invoked(&argv(&["condor_qq"])).is_none());
        assert!(invoked(&argv(&["glean"])).is_none());
    }
}
