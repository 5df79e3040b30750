//! `condor_submit_dag [OPTIONS] FILE.dag`: submits a DAG through `glean
//! dag submit`. HTCondor's options are read here with their own
//! spellings (`-f`, `-maxjobs N`, `-batch-name NAME`, …) and handed on
//! with the file; what each of them does to a DAG is DAGMan's business
//! (`crate::dag`), not this command's.

use super::args::{Cursor, Usage};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// `condor_submit_dag`'s options that take a value.
const WITH_VALUE: &[&str] = &[
    "maxidle",
    "maxjobs",
    "maxpre",
    "maxpost",
    "notification",
    "batch-name",
    "config",
    "append",
    "insert_sub_file",
    "dagman",
    "outfile_dir",
    "autorescue",
    "dorescuefrom",
    "load_save",
    "priority",
    "schedd-daemon-ad-file",
    "schedd-address-file",
    "debug",
    "remote",
    "name",
];

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let mut files: Vec<String> = Vec::new();
    let mut options: Vec<(String, Option<String>)> = Vec::new();
    while let Some(a) = c.next() {
        let Some(name) = a.strip_prefix('-') else {
            files.push(a);
            continue;
        };
        let name = name.trim_start_matches('-').to_ascii_lowercase();
        let value = if WITH_VALUE.iter().any(|w| *w == name) {
            Some(c.value(&a, false)?)
        } else {
            None
        };
        options.push((name, value));
    }
    let [file] = files.as_slice() else {
        return Err(Usage::new(format!(
            "Usage: {tool} [options] dag_file\n{tool}: exactly one DAG file, please (got {})",
            files.len()
        ))
        .into());
    };
    submit_dag(PathBuf::from(file), &options)
}

/// The DAG submission behind `condor_submit_dag`.
///
/// CALL SITE FOR DAGMAN'S OPTION HANDLING: `options` are the command's
/// HTCondor options in order, by name without dashes (`("maxjobs",
/// Some("4"))`, `("force", None)`). Today the DAG goes through `glean dag
/// submit` and the options are not applied; DAGMan's own function in
/// `crate::dag` takes them here once it exists.
fn submit_dag(file: PathBuf, options: &[(String, Option<String>)]) -> anyhow::Result<ExitCode> {
    tracing::debug!(?options, "condor_submit_dag options");
    let args = crate::dag::DagArgs {
        command: crate::dag::DagCommand::Submit(crate::dag::SubmitArgs {
            file,
            retries: crate::dag::RetriesArg::Reset,
            connect: Default::default(),
        }),
    };
    let out = crate::output::for_mode(false);
    crate::dag::run(args, out.as_ref())
}
