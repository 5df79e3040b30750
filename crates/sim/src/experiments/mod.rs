//! The papers' experiments, each runnable as `glean sim NAME --out DIR
//! [--seeds N] [--seed S]`. Every experiment writes CSV files, SVG plots and a
//! `summary.md` that puts our numbers beside the paper's, and reports its
//! pass/fail checks (the acceptance criteria) and its speed.

pub mod condor_month;
pub mod dmw;
pub mod gang;
pub mod linger;
pub mod m5_fit;
pub mod market;
pub mod migration;
pub mod owner;
pub mod pool;
pub mod profile;
pub mod ps_toy;
mod report;
pub mod reservations;
mod reserve_role;
pub mod throttle;
pub mod updown;

use crate::SimError;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Progress reporting hook; the CLI draws a progress bar with it.
pub trait Progress: Send + Sync {
    /// Total units of work (for example runs = seeds × parameter points × policies).
    fn set_length(&self, total: u64);
    /// `n` more units done.
    fn advance(&self, n: u64);
    /// A short status line.
    fn message(&self, msg: &str);
}

/// A progress sink that ignores everything (tests, benchmarks).
#[derive(Debug, Default)]
pub struct NoProgress;
impl Progress for NoProgress {
    fn set_length(&self, _: u64) {}
    fn advance(&self, _: u64) {}
    fn message(&self, _: &str) {}
}

/// Options shared by every experiment.
#[derive(Clone)]
pub struct ExperimentOpts {
    /// Output directory (created if missing).
    pub out: PathBuf,
    /// Number of replications (seeds `seed, seed+1, …`).
    pub seeds: u32,
    /// First seed.
    pub seed: u64,
    /// Smaller, faster configuration for tests (documented per experiment).
    pub quick: bool,
    /// Replay this availability trace (the CSV format of
    /// [`crate::availability`]) instead of a generated model, where the
    /// experiment uses station availability.
    pub trace: Option<PathBuf>,
    /// Availability model name (`m1`, `m2`, `m3`, `m4`, `m5`, `m5-23`)
    /// overriding the experiment's default, where it uses one.
    pub model: Option<String>,
    /// A deliberately different configuration, named by the experiment
    /// ([`variants`] lists them): the same run with one design choice
    /// changed (Random instead of Up-Down, no detector wait, …), to show
    /// which checks the choice carries and that they can fail.
    pub variant: Option<String>,
    pub progress: Arc<dyn Progress>,
}

impl ExperimentOpts {
    /// `seeds` replications from `seed`, writing to `out`: the full
    /// configuration, the experiment's default availability, no progress
    /// display. Adjust fields with struct update syntax.
    pub fn new(out: impl Into<PathBuf>, seeds: u32, seed: u64) -> Self {
        ExperimentOpts {
            out: out.into(),
            seeds,
            seed,
            quick: false,
            trace: None,
            model: None,
            variant: None,
            progress: Arc::new(NoProgress),
        }
    }
}

impl std::fmt::Debug for ExperimentOpts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExperimentOpts")
            .field("out", &self.out)
            .field("seeds", &self.seeds)
            .field("seed", &self.seed)
            .field("quick", &self.quick)
            .field("trace", &self.trace)
            .field("model", &self.model)
            .field("variant", &self.variant)
            .finish()
    }
}

/// One acceptance check of an experiment (e.g. "light RCWR flat under Up-Down").
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// What an experiment produced.
#[derive(Clone, Debug)]
pub struct ExperimentReport {
    pub name: &'static str,
    /// Files written, relative to `opts.out`.
    pub files: Vec<PathBuf>,
    /// Simulated events delivered over all runs.
    pub events: u64,
    /// Wall-clock time of the whole experiment.
    pub elapsed: Duration,
    pub checks: Vec<Check>,
}

impl ExperimentReport {
    pub fn events_per_second(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 { self.events as f64 / s } else { 0.0 }
    }
    pub fn all_passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

/// Every experiment: name and one-line description.
pub const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "updown",
        "Up-Down vs Random vs Round-Robin on the thesis's Table 4.4 pool (Mutka 1988 §4.4)",
    ),
    (
        "pool",
        "The updown study through the production coordinator (claims, matching, DMW's rules), beside the bare allocator",
    ),
    (
        "profile",
        "13 stations over 5 months: Tables 3.1–3.3 and fitted AV/NA mixtures (Mutka & Livny 1987)",
    ),
    (
        "m5_fit",
        "Fits availability model M5's free numbers to every availability claim of the 1987 papers and the thesis (13 stations and the 23-station month)",
    ),
    (
        "linger",
        "64-node cluster, Workload-1/2, LL vs LF vs IE vs PM (Ryu & Hollingsworth Table 1)",
    ),
    (
        "dmw",
        "Three users on four limit-1 hosts: umpire vs least-loaded herd; β-aware vs β-blind σ (Neeracher 1998 §7.7, §4.5.3)",
    ),
    (
        "migration",
        "One 50 s foreign job, owner returns at 20 %: LL vs IE across episode lengths (Fig. 8)",
    ),
    (
        "condor_month",
        "B6: Table 5.1's heavy and light users on 23 hosts for a month under Up-Down (Mutka 1988 Ch. 5)",
    ),
    (
        "owner",
        "B2 and B9: the detector's 5-minute wait (NA >= 7 min, ~4 points of availability) and Condor-1988 vs immediate vs checkpoint-and-kill vacating (Mutka 1988 L353-361, L841)",
    ),
    (
        "throttle",
        "B8: placing on 20 idle hosts at once vs one placement per 10 s, 30 s, 2 min: the owner's freeze against idle host time (Mutka 1988 L839)",
    ),
    (
        "ps_toy",
        "B5: the processor-sharing counter-example, RCWR 3 vs 1, and Up-Down, Random, Round-Robin on the same toy pool (Mutka 1988 L637)",
    ),
    (
        "gang",
        "Parallel jobs on 32 nodes: LL-8/16/32 vs reconfiguration by idle nodes at 20 % and 40 % local utilisation (Ryu & Hollingsworth Fig. 13)",
    ),
    (
        "market",
        "B11: one heavy and six light reservers under the free market, FCFS and Pre-Allocated Capacity (Mutka 1988 §6.3.1)",
    ),
    (
        "reservations",
        "B10: reserved partitions of 0–40 % of 23 stations, Longest-Free vs Random replacement (Mutka 1988 Figs 6.3–6.5)",
    ),
];

/// The deliberately different configurations each experiment accepts
/// (`--variant`): (experiment, variant, what it changes).
pub const VARIANTS: &[(&str, &str, &str)] = &[
    (
        "updown",
        "random-as-updown",
        "the Up-Down arm allocates at random",
    ),
    (
        "pool",
        "random-as-updown",
        "the Up-Down arm allocates at random",
    ),
    (
        "ps_toy",
        "random-as-updown",
        "the Up-Down arm allocates at random",
    ),
    (
        "condor_month",
        "random",
        "Random allocation instead of Up-Down",
    ),
    (
        "condor_month",
        "busy-pool",
        "hosts AV half the time (M1, 60/60 min)",
    ),
    (
        "reservations",
        "random-as-longest-free",
        "the Longest-Free arm replaces at random",
    ),
    (
        "reservations",
        "busy-pool",
        "hosts AV half the time (M1, 60/60 min)",
    ),
    (
        "gang",
        "idle-owners",
        "nonidle owners never run (lingering costs nothing)",
    ),
    (
        "owner",
        "no-detector-wait",
        "the detector's 5-minute idle wait removed in both arms",
    ),
    (
        "owner",
        "immediate-for-condor",
        "the Condor-1988 arm moves at once instead of suspending",
    ),
    (
        "market",
        "fcfs-as-market",
        "the free-market arm admits first come, first served",
    ),
    ("linger", "ie-as-ll", "the Linger-Longer arm evicts at once"),
    (
        "migration",
        "ie-as-ll",
        "the Linger-Longer arm evicts at once",
    ),
    (
        "dmw",
        "blind-as-aware",
        "the umpire's arm places like the herd; the speed-aware arm ignores speeds",
    ),
];

/// The variants of experiment `name`.
pub fn variants(name: &str) -> Vec<&'static str> {
    VARIANTS
        .iter()
        .filter(|(e, _, _)| *e == name)
        .map(|(_, v, _)| *v)
        .collect()
}

/// Checks that `opts.variant` is one of `name`'s; returns it.
pub fn variant<'a>(name: &str, opts: &'a ExperimentOpts) -> Result<Option<&'a str>, SimError> {
    match opts.variant.as_deref() {
        None => Ok(None),
        Some(v) if variants(name).contains(&v) => Ok(Some(v)),
        Some(v) => Err(SimError::Param {
            name: "variant".into(),
            msg: format!(
                "{name} has no variant {v:?} (known: {})",
                match variants(name).join(", ") {
                    s if s.is_empty() => "none".to_string(),
                    s => s,
                }
            ),
        }),
    }
}

/// Runs experiment `name`.
pub fn run(name: &str, opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    std::fs::create_dir_all(&opts.out).map_err(|e| SimError::io(&opts.out, e))?;
    variant(name, opts)?;
    match name {
        "updown" => updown::run(opts),
        "pool" => pool::run(opts),
        "profile" => profile::run(opts),
        "m5_fit" => m5_fit::run(opts),
        "linger" => linger::run(opts),
        "migration" => migration::run(opts),
        "dmw" => dmw::run(opts),
        "reservations" => reservations::run(opts),
        "market" => market::run(opts),
        "gang" => gang::run(opts),
        "condor_month" => condor_month::run(opts),
        "ps_toy" => ps_toy::run(opts),
        "owner" => owner::run(opts),
        "throttle" => throttle::run(opts),
        other => Err(SimError::UnknownExperiment(
            other.to_string(),
            EXPERIMENTS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        )),
    }
}
