//! `glean classad eval EXPR [--my FILE] [--target FILE]`: evaluate a ClassAd
//! expression the way a policy would, for users debugging `requirements`,
//! `rank` and station policies.

use anyhow::Context;
use clap::{Args, Subcommand};
use gleaner_classad::{Ad, eval_command};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ClassAdArgs {
    #[command(subcommand)]
    pub command: ClassAdCommand,
}

#[derive(Subcommand, Debug)]
pub enum ClassAdCommand {
    /// Evaluate EXPR and print the result in ClassAd syntax.
    Eval {
        /// The expression, e.g. 'TARGET.Memory >= 1024 && Arch == "X86_64"'.
        expr: String,
        /// Ad file bound to MY (old `Attr = expr` lines or new `[ ... ]` syntax).
        #[arg(long)]
        my: Option<PathBuf>,
        /// Ad file bound to TARGET.
        #[arg(long)]
        target: Option<PathBuf>,
        /// Value of time() as UNIX seconds (default: now).
        #[arg(long)]
        now: Option<i64>,
    },
}

fn read_ad(path: &Path) -> anyhow::Result<Ad> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ad::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

pub fn run(args: ClassAdArgs, out: &dyn crate::output::Output) -> anyhow::Result<ExitCode> {
    match args.command {
        ClassAdCommand::Eval {
            expr,
            my,
            target,
            now,
        } => {
            let my = my.as_deref().map(read_ad).transpose()?;
            let target = target.as_deref().map(read_ad).transpose()?;
            let now = now.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() as i64)
                    .unwrap_or(0)
            });
            let value = eval_command(&expr, my.as_ref(), target.as_ref(), now)
                .map_err(|e| anyhow::anyhow!("expression: {e}"))?;
            out.classad_value(&value);
            Ok(ExitCode::SUCCESS)
        }
    }
}
