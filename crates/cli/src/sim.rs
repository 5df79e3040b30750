//! `glean sim NAME --out DIR [--seeds N] [--seed S]`.

use anyhow::Context;
use clap::Args;
use comfy_table::{Cell, Table, presets::UTF8_FULL_CONDENSED};
use gleaner_sim::experiments::{self, EXPERIMENTS, ExperimentOpts, Progress};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// Experiment to run (`glean sim list` shows them all).
    pub name: String,
    /// Output directory for CSV files, SVG plots and summary.md.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Number of replications (seeds S, S+1, …).
    #[arg(long, default_value_t = 5)]
    pub seeds: u32,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A smaller, faster configuration (for smoke tests).
    #[arg(long)]
    pub quick: bool,
    /// Replay this availability trace (CSV, see docs/trace-format.md).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Availability model: m1, m2, m2-35, m3, m4, m5 (the 1987 paper's 13
    /// stations) or m5-23 (the thesis's 23-station month).
    #[arg(long)]
    pub model: Option<String>,
    /// A deliberately different configuration that shows which checks a
    /// design choice carries (`glean sim variants` lists them).
    #[arg(long)]
    pub variant: Option<String>,
    /// Exit with status 1 if any of the experiment's checks fails.
    #[arg(long)]
    pub strict: bool,
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn set_length(&self, total: u64) {
        self.0.set_length(total);
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
    fn message(&self, msg: &str) {
        self.0.set_message(msg.to_string());
    }
}

pub fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    if args.name == "list" {
        for (name, what) in EXPERIMENTS {
            println!("{name:<13} {what}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.name == "variants" {
        for (name, variant, what) in experiments::VARIANTS {
            println!("{name:<13} {variant:<24} {what}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.seeds == 0 {
        anyhow::bail!("--seeds must be at least 1");
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let opts = ExperimentOpts {
        out: args.out.join(&args.name),
        seeds: args.seeds,
        seed: args.seed,
        quick: args.quick,
        trace: args.trace.clone(),
        model: args.model.clone(),
        variant: args.variant.clone(),
        progress: Arc::new(Bar(bar.clone())),
    };
    let report =
        experiments::run(&args.name, &opts).with_context(|| format!("experiment {}", args.name))?;
    bar.finish_and_clear();

    println!(
        "{}: {} simulated events in {:.2} s ({:.0} events/s)",
        report.name,
        report.events,
        report.elapsed.as_secs_f64(),
        report.events_per_second()
    );
    println!("wrote:");
    for f in &report.files {
        println!("  {}", opts.out.join(f).display());
    }
    if !report.checks.is_empty() {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(vec!["check", "result", "detail"]);
        for c in &report.checks {
            t.add_row(vec![
                Cell::new(&c.name),
                Cell::new(if c.passed { "pass" } else { "FAIL" }),
                Cell::new(&c.detail),
            ]);
        }
        println!("{t}");
    }
    if args.strict && !report.all_passed() {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
