//! What the experiments of issue 17 share when writing their results:
//! files under the output directory, checks, and a `summary.md` that ends
//! with the checks and the measured run time.

use super::{Check, ExperimentOpts, ExperimentReport};
use crate::SimError;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// One row of a paper-vs-model table: a claim of a paper, where it is,
/// what it says, what the model gives, the tolerance, met or not.
#[derive(Clone, Debug)]
pub struct ClaimRow {
    pub what: String,
    pub source: String,
    pub paper: String,
    pub model: String,
    pub tolerance: String,
    pub met: bool,
}

/// An experiment's output in the making.
pub struct Report<'a> {
    opts: &'a ExperimentOpts,
    started: Instant,
    pub files: Vec<PathBuf>,
    pub checks: Vec<Check>,
    /// The paper-vs-model rows (each is also a check).
    pub claims: Vec<ClaimRow>,
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
            claims: Vec::new(),
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

    /// A claim of a paper checked against the model: a row of the
    /// paper-vs-model table and a `--strict` check.
    pub fn claim(
        &mut self,
        what: impl Into<String>,
        source: impl Into<String>,
        paper: impl Into<String>,
        model: impl Into<String>,
        tolerance: impl Into<String>,
        met: bool,
    ) {
        let row = ClaimRow {
            what: what.into(),
            source: source.into(),
            paper: paper.into(),
            model: model.into(),
            tolerance: tolerance.into(),
            met,
        };
        self.checks.push(Check {
            name: format!("{} ({})", row.what, row.source),
            passed: met,
            detail: format!(
                "paper: {}; model: {}; tolerance: {}",
                row.paper, row.model, row.tolerance
            ),
        });
        self.claims.push(row);
    }

    /// The paper-vs-model table of the claims so far, appended to the
    /// summary, with the count of claims met.
    pub fn claims_table(&mut self) {
        let _ = writeln!(
            self.md,
            "\n## Paper vs model\n\n| claim | source | paper says | model | tolerance | |\n|---|---|---|---|---|---|"
        );
        for c in &self.claims {
            let _ = writeln!(
                self.md,
                "| {} | {} | {} | {} | {} | {} |",
                c.what,
                c.source,
                c.paper,
                c.model,
                c.tolerance,
                if c.met { "✓" } else { "✗" }
            );
        }
        let met = self.claims.iter().filter(|c| c.met).count();
        let _ = writeln!(self.md, "\n{met} of {} claims met.", self.claims.len());
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
            "\nRun: `glean sim {name} --seeds {} --seed {}{}{}{}`, {:.2} s wall clock on this \
             machine, {} simulated events.",
            self.opts.seeds,
            self.opts.seed,
            if self.opts.quick { " --quick" } else { "" },
            self.opts
                .model
                .as_deref()
                .map_or(String::new(), |m| format!(" --model {m}")),
            self.opts
                .variant
                .as_deref()
                .map_or(String::new(), |v| format!(" --variant {v}")),
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
