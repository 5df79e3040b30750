//! `glean`: the one user-facing binary of Gleaner.
//!
//! Subcommands are thin: each parses its arguments, calls into a library
//! crate and prints the result. Errors reach the user through `anyhow` with
//! the file, line or field that caused them.

mod admin;
mod classad;
mod condor;
mod daemon_memory;
mod daemons;
mod dag;
mod demo;
mod demo_users;
mod generate;
mod job_select;
mod jobs;
mod join;
mod output;
mod pool;
mod reserve;
mod sim;
mod station_check;
mod supervise;
mod tail;
mod token;
mod up;
mod user;
mod watch;
mod web;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "glean",
    version,
    about = "Gleaner: harvest idle cycles of privately owned workstations for batch jobs",
    propagate_version = true
)]
struct Cli {
    /// Print one JSON document instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the papers' experiments in the discrete-event simulator.
    Sim(sim::SimArgs),
    /// Work with ClassAd expressions (requirements, rank, station policies).
    #[command(name = "classad")]
    ClassAd(classad::ClassAdArgs),
    /// Run the pool's coordinator (collects station ads, runs the allocator,
    /// grants and preempts nodes).
    Coordinator(daemons::CoordinatorArgs),
    /// Run a station daemon (owner monitor, job queue, shadow, starter).
    Station(daemons::StationArgs),
    /// Queue the jobs of a submit description (condor_submit).
    Submit(jobs::SubmitArgs),
    /// Job DAGs: submit, status, rm (condor_submit_dag; docs/dag-format.md).
    Dag(dag::DagArgs),
    /// Show the job queue (condor_q).
    Q(jobs::QArgs),
    /// Show the pool's stations (condor_status).
    Status(jobs::StatusArgs),
    /// Remove jobs (condor_rm).
    Rm(jobs::ActionArgs),
    /// Hold jobs (condor_hold).
    Hold(jobs::ActionArgs),
    /// Release held jobs (condor_release).
    Release(jobs::ActionArgs),
    /// Show finished jobs (condor_history).
    History(jobs::HistoryArgs),
    /// Print a job's output as its home has it; -f follows it (condor_tail).
    Tail(tail::TailArgs),
    /// Follow your clusters' progress as jobs move (condor_watch_q).
    Watch(watch::WatchArgs),
    /// Show the coordinator's Up-Down table (condor_userprio).
    Userprio(jobs::StatusArgs),
    /// Show this station's users: jobs, nodes held, usage, output kept,
    /// and its per-user limits.
    Users(jobs::UsersArgs),
    /// Drain a station: no new guests, running ones finish (condor_drain;
    /// --cancel ends it). Administrators only.
    Drain(admin::DrainArgs),
    /// Vacate a station's guests now: they checkpoint and move
    /// (condor_vacate). Administrators only.
    Vacate(admin::VacateArgs),
    /// Start a personal pool on this machine (a coordinator and N stations).
    Up(up::UpArgs),
    /// Create, list and revoke the pool's tokens (where the coordinator's
    /// signing key is).
    Token(token::TokenArgs),
    /// Manual pages, shell completions and slot account names for the
    /// Debian package (scripts/build-deb.sh).
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
    /// Open the pool's web dashboard (prints a single-use login link).
    Dashboard(web::DashboardArgs),
    /// This machine's lending: the owner's page and controls (stop, resume,
    /// schedule, policy, memory).
    Owner(web::OwnerArgs),
    /// Set up a pool: its keys, CA and the coordinator's configuration.
    Pool(pool::PoolArgs),
    /// Users of the pool from other machines: a token and a client file.
    User(user::UserArgs),
    /// Reserve machines by the hour (Mutka 1988 ch. 6): display, check,
    /// reserve, unreserve, sync, close.
    Reserve(reserve::ReserveArgs),
    /// Link HTCondor's command names (condor_submit, condor_q, …) to glean
    /// in DIR (default ~/bin): glean then answers to them (docs/condor.md).
    #[command(name = "condor-links")]
    CondorLinks(condor::LinksArgs),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GLEAN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person: a daemon's stderr goes to the journal
        // (the packaged units) or a log file (`glean up`).
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // Run as `condor_q` (a link to glean) or `glean condor_q …`: HTCondor's
    // command, options and output.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some((tool, args)) = condor::invoked(&argv) {
        return condor::run(tool, args);
    }
    // `glean q -constraint EXPR -af ATTR…` as HTCondor users type it.
    let cli = Cli::parse_from(job_select::htcondor_spellings(argv));
    let out = output::for_mode(cli.json);
    let out = out.as_ref();
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
        Command::ClassAd(args) => classad::run(args, out),
        Command::Coordinator(args) => daemons::coordinator(args),
        Command::Station(args) => daemons::station(args),
        Command::Submit(args) => jobs::submit(args, out),
        Command::Dag(args) => dag::run(args, out),
        Command::Q(args) => jobs::q(args, out),
        Command::Status(args) => jobs::status(args, out),
        Command::Rm(args) => jobs::rm(args, out),
        Command::Hold(args) => jobs::hold(args, out),
        Command::Release(args) => jobs::release(args, out),
        Command::History(args) => jobs::history(args, out),
        Command::Tail(args) => tail::tail(args),
        Command::Watch(args) => watch::watch(args, out),
        Command::Up(args) => up::up(args),
        Command::Userprio(args) => jobs::userprio(args, out),
        Command::Users(args) => jobs::users(args, out),
        Command::Drain(args) => admin::drain(args, cli.json),
        Command::Vacate(args) => admin::vacate(args, cli.json),
        Command::Token(args) => token::run(args, out),
        Command::Generate(args) => generate::run(args, Cli::command()),
        Command::Dashboard(args) => web::dashboard(args),
        Command::Owner(args) => web::owner(args, cli.json),
        Command::Pool(args) => pool::run(args),
        Command::User(args) => user::run(args),
        Command::Reserve(args) => reserve::run(args, out),
        Command::CondorLinks(args) => condor::links(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("glean: error: {}", output::escape::term(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}
