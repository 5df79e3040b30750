//! `condor_submit_dag [OPTIONS] FILE.dag …`: DAGMan's submission with
//! HTCondor's option spellings (`-f`, `-maxjobs N`, `-batch-name NAME`,
//! `-no_submit`, …). Reading and applying them is DAGMan's business
//! (`crate::dag::submit_dag_main`); this is only the command's name.

use std::ffi::OsString;
use std::process::ExitCode;

pub fn run(_tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    Ok(crate::dag::submit_dag_main(args))
}
