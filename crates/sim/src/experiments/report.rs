//! What the experiments of issue 17 share when writing their results:
//! files under the output directory, checks, and a `summary.md` that ends
//! with the checks and the measured run time.

use super::{Check, ExperimentOpts, ExperimentReport};
use crate::SimError;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// An experiment's output in the making.
pub struct Report<'a> {
    opts: &'a ExperimentOpts,
    started: Instant,
    pub files: Vec<PathBuf>,
    pub checks: Vec<Check>,
    /// The summary's body (markdown).
    pub md: String,
    pub events: u64,
}

impl<'a> Report<'a> {
    pub fn new(opts: &'a ExperimentOpts) -> Self {
        Report {
            opts,
            started: Instant::now(),
            files: Vec::new(),
            checks: Vec::new(),
            md: String::new(),
            events: 0,
        }
    }

    /// Path of output file `name`, recorded as written.
    pub fn path(&mut self, name: &str) -> PathBuf {
        self.files.push(PathBuf::from(name));
        self.opts.out.join(name)
    }

    pub fn write(&mut self, name: &str, text: &str) -> Result<(), SimError> {
        let p = self.path(name);
        std::fs::write(&p, text).map_err(|e| SimError::io(&p, e))
    }

    pub fn check(&mut self, name: impl Into<String>, passed: bool, detail: impl Into<String>) {
        self.checks.push(Check {
            name: name.into(),
            passed,
            detail: detail.into(),
        });
    }

    /// Appends the checks and the run time to the summary, writes it.
    pub fn finish(mut self, name: &'static str) -> Result<ExperimentReport, SimError> {
        let elapsed = self.started.elapsed();
        let _ = writeln!(
            self.md,
            "\n## Checks (`--strict` fails on any unchecked box)\n"
        );
        for c in &self.checks {
            let _ = writeln!(
                self.md,
                "- [{}] {}: {}",
                if c.passed { "x" } else { " " },
                c.name,
                c.detail
            );
        }
        let _ = writeln!(
            self.md,
            "\nRun: `glean sim {name} --seeds {} --seed {}{}`, {:.2} s wall clock on this \
             machine, {} simulated events.",
            self.opts.seeds,
            self.opts.seed,
            if self.opts.quick { " --quick" } else { "" },
            elapsed.as_secs_f64(),
            self.events
        );
        let md = std::mem::take(&mut self.md);
        self.write("summary.md", &md)?;
        Ok(ExperimentReport {
            name,
            files: self.files,
            events: self.events,
            elapsed,
            checks: self.checks,
        })
    }
}

/// `x` with `d` decimals, "–" for NaN.
pub fn f(x: f64, d: usize) -> String {
    if x.is_finite() {
        format!("{x:.d$}")
    } else {
        "–".into()
    }
}
