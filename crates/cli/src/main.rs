//! `glean`: the one user-facing binary of Gleaner.
//!
//! Subcommands are thin: each parses its arguments, calls into a library
//! crate and prints the result. Errors reach the user through `anyhow` with
//! the file, line or field that caused them.

mod classad;
mod sim;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "glean",
    version,
    about = "Gleaner: harvest idle cycles of privately owned workstations for batch jobs",
    propagate_version = true
)]
struct Cli {
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
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GLEAN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
        Command::ClassAd(args) => classad::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("glean: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
