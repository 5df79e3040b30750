//! `glean dag submit|status|rm`: HTCondor DAGMan workflows
//! (`condor_submit_dag`; the language in `docs/dag-format.md`).
//!
//! `glean dag submit` takes condor_submit_dag's options in HTCondor's
//! spelling (`-maxidle 5`, `-f`, `-no_submit` …; `--` works too) and one
//! or more DAG files ([`parse_args`]). The station reads the DAG files,
//! the files they name and every node's submit description as the
//! submitting user, refuses the DAG whole on any problem (each named by
//! file and line), and runs it. With `--dry-run` or `-no_submit` nothing
//! is submitted: the DAG is loaded here, as the invoking user, with the
//! same code, and its plan printed ([`dry_run`]).
//!
//! [`submit_dag_main`] is `condor_submit_dag` itself: the same, called
//! with the program's own arguments.

mod args;
mod plan;

use args::{Parsed, parse_args};
use plan::dry_run;

use anyhow::Context;
use clap::{Args, Subcommand};
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::home::dagman::DagSubmitBody;
use std::ffi::OsString;
use std::process::ExitCode;

use crate::jobs::ConnectArgs;
use crate::output::Output;
use crate::output::escape::shout;

#[derive(Args, Debug)]
pub struct DagArgs {
    #[command(subcommand)]
    pub command: DagCommand,
}

#[derive(Subcommand, Debug)]
pub enum DagCommand {
    /// Submit DAG files (condor_submit_dag's options, e.g. -maxidle 5 -f;
    /// --dry-run or -no_submit prints the plan without submitting).
    Submit(SubmitArgs),
    /// Show DAGs (all of yours, or one with its nodes).
    Status(StatusArgs),
    /// Remove a running DAG: its jobs are removed, a rescue DAG written.
    Rm(RmArgs),
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// condor_submit_dag's options and the DAG file(s).
    #[arg(allow_hyphen_values = true, trailing_var_arg = true, num_args = 1..)]
    pub args: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// A DAG id; without it, all your DAGs.
    pub id: Option<u64>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    pub id: u64,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn run(args: DagArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    match args.command {
        DagCommand::Submit(a) => {
            let parsed = match parse_args(&a.args) {
                Ok(p) => p,
                Err(e) => {
                    shout!("glean dag submit: {e}");
                    return Ok(ExitCode::from(1));
                }
            };
            submit(parsed, Some(&a.connect), out)
        }
        DagCommand::Status(a) => status(a, out),
        DagCommand::Rm(a) => rm(a, out),
    }
}

/// `condor_submit_dag ARGS…` (the program's arguments after its name):
/// what `glean dag submit` does with HTCondor's options.
pub fn submit_dag_main(args: Vec<OsString>) -> ExitCode {
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let parsed = match parse_args(&args) {
        Ok(p) => p,
        Err(e) => {
            shout!("condor_submit_dag: {e}");
            return ExitCode::from(1);
        }
    };
    let out = crate::output::for_mode(false);
    match submit(parsed, None, out.as_ref()) {
        Ok(c) => c,
        Err(e) => {
            shout!("condor_submit_dag: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn cwd() -> anyhow::Result<String> {
    let d = std::env::current_dir().context("cannot tell the working directory")?;
    Ok(d.display().to_string())
}

fn submit(p: Parsed, connect: Option<&ConnectArgs>, out: &dyn Output) -> anyhow::Result<ExitCode> {
    if p.dry_run {
        return dry_run(&p, &cwd()?);
    }
    let settings = match connect {
        Some(c) => c.settings()?,
        None => ConnectArgs::default().settings()?,
    };
    let client = gleaner_station::client::StationClient::from_settings(&settings)?;
    let rt = runtime()?;
    let body = DagSubmitBody {
        protocol: PROTOCOL_VERSION,
        files: p.files.clone(),
        cwd: cwd()?,
        options: p.options.clone(),
        env: std::env::vars().collect(),
    };
    match rt.block_on(client.submit_dag(&body)) {
        Ok(resp) => {
            for n in &resp.notes {
                shout!("{n}");
            }
            out.dag_submitted(&resp);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            shout!("{e:#}");
            shout!("glean dag submit: nothing was submitted");
            Ok(ExitCode::from(1))
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn status(args: StatusArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    let client = gleaner_station::client::StationClient::from_settings(&settings)?;
    let rt = runtime()?;
    if let Some(id) = args.id {
        out.dag(&rt.block_on(client.dag(id))?);
        return Ok(ExitCode::SUCCESS);
    }
    let owner = rt.block_on(client.whoami())?.name;
    out.dags(&rt.block_on(client.dags(Some(&owner)))?);
    Ok(ExitCode::SUCCESS)
}

fn rm(args: RmArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    let client = gleaner_station::client::StationClient::from_settings(&settings)?;
    out.dag_removed(&runtime()?.block_on(client.rm_dag(args.id))?);
    Ok(ExitCode::SUCCESS)
}
