//! `glean dag submit|status|rm`: job DAGs (HTCondor's `condor_submit_dag`,
//! with DMW's priority dependences; format in `docs/dag-format.md`).
//!
//! `glean dag submit FILE` reads the DAG file and every node's submit file
//! (a relative path is relative to the DAG file's directory), applies the
//! node's `VARS` as macros, and reports every problem with its file and
//! line; only a fully valid DAG reaches the station, whose DAG manager then
//! submits each node's jobs when its dependences allow. `FILE` may also be
//! a rescue file written when a DAG failed or was removed: the DAG it names
//! resumes where it stopped.

use crate::output::escape::shout;
use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use gleaner_core::dag::{JobSpec, Rescue, RescueRetries, parse_dag};
use gleaner_proto::submit::{SubmitContext, SubmitErrors, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::home::dagman::{DagNodeSubmit, DagSubmitBody};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::jobs::ConnectArgs;
use crate::output::Output;

#[derive(Args, Debug)]
pub struct DagArgs {
    #[command(subcommand)]
    pub command: DagCommand,
}

#[derive(Subcommand, Debug)]
pub enum DagCommand {
    /// Submit a DAG file, or resubmit a rescue file to resume a DAG.
    Submit(SubmitArgs),
    /// Show DAGs (all of yours, or one with its nodes).
    Status(StatusArgs),
    /// Remove a running DAG and its unfinished jobs; writes a rescue file.
    Rm(RmArgs),
}

/// How a rescue file's failed attempts count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RetriesArg {
    /// Every unfinished node gets its full RETRY budget again.
    Reset,
    /// Failed attempts count against the budget: resume exactly.
    Keep,
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// The DAG file (or a rescue file).
    pub file: PathBuf,
    /// With a rescue file: how its recorded failed attempts count.
    #[arg(long, value_enum, default_value_t = RetriesArg::Reset)]
    pub retries: RetriesArg,
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
        DagCommand::Submit(a) => submit(a, out),
        DagCommand::Status(a) => status(a, out),
        DagCommand::Rm(a) => rm(a, out),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Every problem found, as `file:line: message` lines.
type Problems = Vec<String>;

/// Reads and parses a node's submit file with the node's `VARS` defined
/// first. Only keys the file refers to as `$(key)` are defined, so unused
/// VARS are not "unknown commands"; line numbers are those of the file.
fn node_submission(
    dag_dir: &Path,
    node: &str,
    spec: &JobSpec,
    owner: &str,
    env: &std::collections::BTreeMap<String, String>,
    problems: &mut Problems,
) -> Option<DagNodeSubmit> {
    let path = dag_dir.join(&spec.submit);
    let shown = path.display().to_string();
    let text = match crate::jobs::read_submit_file(&path, &shown) {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            problems.push(format!("{e} (node {node})"));
            return None;
        }
        Err(e) => {
            problems.push(format!(
                "{shown}: cannot read (node {node}): {}",
                e.root_cause()
            ));
            return None;
        }
    };
    let lower = text.to_ascii_lowercase();
    let mut prefix = String::new();
    let mut added = 0usize;
    for (k, v) in &spec.vars {
        let k_l = k.to_ascii_lowercase();
        if lower.contains(&format!("$({k_l})")) || lower.contains(&format!("$({k_l}:")) {
            prefix.push_str(&format!("{k} = {v}\n"));
            added += 1;
        }
    }
    // Included files and `queue … from` lists are read beside the node's
    // submit file.
    let ctx = SubmitContext::new(shown.clone(), owner).with_env(env.clone());
    let ctx = match path.parent() {
        Some(d) => ctx.with_dir(d),
        None => ctx,
    };
    match parse_submit(&format!("{prefix}{text}"), &ctx) {
        Ok(submission) => {
            let submit_dir = std::fs::canonicalize(&path)
                .ok()
                .and_then(|p| p.parent().map(|d| d.to_string_lossy().into_owned()));
            Some(DagNodeSubmit {
                name: node.to_string(),
                submission,
                submit_dir,
            })
        }
        Err(SubmitErrors(errs)) => {
            for mut e in errs {
                if e.line > added {
                    e.line -= added;
                    problems.push(e.to_string());
                } else if e.line == 0 {
                    problems.push(e.to_string());
                } else {
                    problems.push(format!("{shown}: VARS of node {node}: {}", e.kind));
                }
            }
            None
        }
    }
}

fn submit(args: SubmitArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    let client = gleaner_station::client::StationClient::from_settings(&settings)?;
    let rt = runtime()?;
    // Who the station takes us for: the jobs' owner.
    let owner = rt.block_on(client.whoami())?.name;
    let given = std::fs::canonicalize(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let text = std::fs::read_to_string(&given)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let mut problems: Problems = Vec::new();

    // A rescue file names its DAG; resume that.
    let (dag_path, dag_text, rescue) = if Rescue::looks_like(&text) {
        let rescue = match Rescue::parse(&text) {
            Ok(r) => r,
            Err(errs) => {
                for e in &errs.0 {
                    shout!("{}:{}: {}", given.display(), e.line, e.kind);
                }
                shout!("glean dag submit: invalid rescue file; nothing was submitted");
                return Ok(ExitCode::from(1));
            }
        };
        let Some(dag) = rescue.dag.clone() else {
            bail!(
                "{}: rescue file without a DAG line: cannot tell which DAG to resume",
                given.display()
            );
        };
        let base = given.parent().unwrap_or(Path::new("/"));
        let path = std::fs::canonicalize(base.join(&dag))
            .with_context(|| format!("{}: DAG file {dag}", given.display()))?;
        let t = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read DAG file {}", path.display()))?;
        (path, t, Some(rescue))
    } else {
        (given.clone(), text, None)
    };
    let shown = dag_path.display().to_string();
    let dag = match parse_dag(&dag_text) {
        Ok(d) => d,
        Err(errs) => {
            for e in &errs.0 {
                shout!("{shown}:{}: {}", e.line, e.kind);
            }
            shout!(
                "glean dag submit: {} error(s); nothing was submitted",
                errs.0.len()
            );
            return Ok(ExitCode::from(1));
        }
    };
    let dag_dir = dag_path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let mut nodes = Vec::with_capacity(dag.len());
    for n in dag.nodes() {
        if let Some(s) = node_submission(&dag_dir, &n.name, &n.payload, &owner, &env, &mut problems)
        {
            nodes.push(s);
        }
    }
    if !problems.is_empty() {
        for p in &problems {
            shout!("{p}");
        }
        shout!(
            "glean dag submit: {} error(s); nothing was submitted",
            problems.len()
        );
        return Ok(ExitCode::from(1));
    }
    let body = DagSubmitBody {
        protocol: PROTOCOL_VERSION,
        dag_file: shown.clone(),
        dag_text,
        nodes,
        rescue,
        rescue_retries: match args.retries {
            RetriesArg::Reset => RescueRetries::Reset,
            RetriesArg::Keep => RescueRetries::Keep,
        },
    };
    let resp = rt.block_on(client.submit_dag(&body))?;
    out.dag_submitted(&resp);
    Ok(ExitCode::SUCCESS)
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
