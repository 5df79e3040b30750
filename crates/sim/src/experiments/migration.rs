//! `migration`: the node-level migration-timing experiment of Ryu &
//! Hollingsworth Fig. 8 (seeds/002_34f613b0a80e1e58.txt L189–L200): one
//! 50-CPU-s foreign job; its node's owner returns at 20 % utilisation for an
//! episode of length D (swept); Linger-Longer vs Immediate-Eviction, both
//! driven by the core's ladder inside the cluster simulator (two nodes: the
//! job's node and one idle destination).
//!
//! Expected (spec §4.2, derived from Eq. 4, L83): LL finishes first while
//! D < T_lingr, IE beyond; LL's worst case is one migration cost behind IE.
//!
//! The paper's 30 s linger time (footnote 5, L195) does not follow from its
//! stated 8 MB at 3 Mbit/s (that gives T_migr = 21.3 s and T_lingr = 107 s
//! with h = 0.2, l = 0; spec §3, §8). We therefore run three cases:
//! - `paper30`: T_migr = 6 s, the value Eq. 4 needs for the paper's 30 s
//!   (one consistent reading: 8 MB at 3 *MB*/s = 2.67 s plus 3.33 s of
//!   suspend/resume, split evenly);
//! - `8mb_3mbit`: 8 MB at 3 Mbit/s, no fixed terms (T_migr = 21.3 s) with
//!   the paper's 50-s job, which finishes before the linger time so LL
//!   always wins;
//! - `8mb_3mbit_300s`: the same cost with a 300-s job, long enough to show
//!   the crossover at 107 s.
//!
//! The fine-grained level is fluid here (the job gets exactly 80 % of the
//! CPU during the episode and no context-switch cost), so the curves are
//! exact and the crossover can be checked against Eq. 4. The owner returns
//! 10 s after the job starts; D is swept on the 2-s trace grid.
//!
//! Outputs: `migration.csv`, `migration_<case>.svg`, `summary.md`.

use super::{Check, ExperimentOpts, ExperimentReport};
use crate::SimError;
use crate::cluster::{Cluster, ClusterConfig, FineModel, JobMode, NodeLoad, PolicyKind};
use crate::local_load::{CoarseSample, CoarseTrace, WINDOW_SECS};
use crate::plot::{Series, line_chart};
use gleaner_core::linger::{MigrationCost, linger_time};
use gleaner_core::time::{Dur, Time};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Owner utilisation during the episode (L191).
pub const H: f64 = 0.2;
/// When the owner returns, seconds after the job starts.
pub const RETURN_AT: f64 = 10.0;

/// One swept case.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub name: &'static str,
    pub cost: MigrationCost,
    pub job_secs: f64,
    pub max_episode: u64,
}

/// The three cases of the module docs.
pub fn cases() -> [Case; 3] {
    let eight_mb = MigrationCost::default(); // 8 MB at 3 Mbit/s (L189), Eq. 5
    let paper30 = MigrationCost {
        // 8 MB at 3 MB/s = 2.667 s, plus 3.333 s fixed: T_migr = 6 s, which
        // Eq. 4 turns into the paper's 30 s at h = 0.2 (footnote 5, L195).
        suspend: Dur::from_micros(1_666_667),
        image_bytes: 8_000_000,
        bandwidth_bytes_per_s: 3_000_000.0,
        resume: Dur::from_micros(1_666_666),
    };
    [
        Case {
            name: "paper30",
            cost: paper30,
            job_secs: 50.0,
            max_episode: 80,
        },
        Case {
            name: "8mb_3mbit",
            cost: eight_mb,
            job_secs: 50.0,
            max_episode: 160,
        },
        Case {
            name: "8mb_3mbit_300s",
            cost: eight_mb,
            job_secs: 300.0,
            max_episode: 240,
        },
    ]
}

/// Completion time (s) of the job under `kind` for episode length `d` s.
pub fn completion(case: &Case, kind: PolicyKind, d: u64) -> Result<(f64, u64), SimError> {
    let w = WINDOW_SECS as u64;
    let start = (RETURN_AT as u64) / w;
    let busy = d.div_ceil(w);
    let total = ((case.job_secs as u64 + d + 200) / w) as usize + 8;
    let busy_node: Vec<CoarseSample> = (0..total as u64)
        .map(|k| CoarseSample {
            cpu: if k >= start && k < start + busy {
                H
            } else {
                0.0
            },
            keyboard: false,
        })
        .collect();
    let idle_node = vec![
        CoarseSample {
            cpu: 0.0,
            keyboard: false,
        };
        total
    ];
    let mk = |name: &str, samples| NodeLoad {
        trace: Arc::new(CoarseTrace {
            machine: name.to_string(),
            samples,
        }),
        offset: 0,
    };
    let mut cfg = ClusterConfig::paper(kind);
    cfg.migration = case.cost;
    cfg.policy = kind.policy(case.cost.t_migr());
    cfg.fine = FineModel::Fluid;
    cfg.warmup = Dur::ZERO;
    cfg.horizon = Time::from_secs(total as u64 * w * 4);
    // Node 0 (the job's node: both are idle at t = 0 and ties go to the
    // lower index) has the episode; node 1 stays idle as the destination.
    let r = Cluster::new(
        cfg,
        vec![mk("owner", busy_node), mk("spare", idle_node)],
        JobMode::Family {
            count: 1,
            work: case.job_secs,
        },
        0,
    )?
    .run()?;
    Ok((r.avg_completion(), r.events))
}

/// One row of `migration.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub case: &'static str,
    pub episode: u64,
    pub ll: f64,
    pub ie: f64,
}

/// The crossover: smallest swept D at which IE finishes strictly first.
pub fn crossover(points: &[Point], case: &str) -> Option<u64> {
    points
        .iter()
        .filter(|p| p.case == case)
        .find(|p| p.ie + 1e-6 < p.ll)
        .map(|p| p.episode)
}

pub fn run(opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    let started = Instant::now();
    let step = if opts.quick { 4 } else { 2 };
    // Variant: the Linger-Longer arm evicts at once (its checks must fail).
    let ll_kind = if super::variant("migration", opts)? == Some("ie-as-ll") {
        PolicyKind::ImmediateEviction
    } else {
        PolicyKind::LingerLonger
    };
    let cs = cases();
    let total: u64 = cs.iter().map(|c| c.max_episode / step + 1).sum();
    opts.progress.set_length(total);
    opts.progress.message("migration: sweeping episode lengths");
    let mut points = Vec::new();
    let mut events = 0;
    for c in &cs {
        let mut d = 0;
        while d <= c.max_episode {
            let (ll, e1) = completion(c, ll_kind, d)?;
            let (ie, e2) = completion(c, PolicyKind::ImmediateEviction, d)?;
            events += e1 + e2;
            points.push(Point {
                case: c.name,
                episode: d,
                ll,
                ie,
            });
            opts.progress.advance(1);
            d += step;
        }
    }
    let mut files = Vec::new();
    let mut csv = String::from("case,t_migr,t_lingr,job_secs,episode,ll_time,ie_time\n");
    for p in &points {
        let Some(c) = cs.iter().find(|c| c.name == p.case) else {
            continue;
        };
        let tm = c.cost.t_migr();
        let _ = writeln!(
            csv,
            "{},{:.3},{:.3},{:.0},{},{:.3},{:.3}",
            p.case,
            tm.as_secs_f64(),
            linger_time(H, 0.0, tm).as_secs_f64(),
            c.job_secs,
            p.episode,
            p.ll,
            p.ie
        );
    }
    let path = opts.out.join("migration.csv");
    std::fs::write(&path, csv).map_err(|e| SimError::io(&path, e))?;
    files.push(PathBuf::from("migration.csv"));

    let mut checks = Vec::new();
    let mut md = String::from(
        "# migration: when to migrate (Ryu & Hollingsworth Fig. 8)\n\n\
         One foreign job on a node whose owner returns 10 s after it starts, at 20 % \
         utilisation, for an episode of D seconds (L191); LL vs IE, both driven by the core \
         ladder; fluid fine-grained model; destination always idle; l = 0.\n\n\
         | case | job (CPU-s) | T_migr (Eq. 5) | T_lingr (Eq. 4) | crossover D* (IE first from) | LL − IE above D* |\n\
         |---|---|---|---|---|---|\n",
    );
    for c in &cs {
        let tm = c.cost.t_migr();
        let tl = linger_time(H, 0.0, tm).as_secs_f64();
        let x = crossover(&points, c.name);
        let mine: Vec<&Point> = points.iter().filter(|p| p.case == c.name).collect();
        let worst = mine
            .iter()
            .map(|p| p.ll - p.ie)
            .fold(f64::NEG_INFINITY, f64::max);
        let _ = writeln!(
            md,
            "| {} | {:.0} | {:.2} s | {:.1} s | {} | max {:.2} s |",
            c.name,
            c.job_secs,
            tm.as_secs_f64(),
            tl,
            x.map(|v| format!("{v} s"))
                .unwrap_or_else(|| "none (LL always first)".into()),
            worst
        );
        // Does the job outlast the linger time? (Eq. 4's premise t_f1 > t4, L67.)
        let progress_at_deadline = RETURN_AT + (1.0 - H) * tl;
        if progress_at_deadline < c.job_secs {
            let below_ok = mine
                .iter()
                .filter(|p| (p.episode as f64) < tl && p.episode > 0)
                .all(|p| p.ll < p.ie);
            let above_ok = mine
                .iter()
                .filter(|p| (p.episode as f64) >= tl + WINDOW_SECS)
                .all(|p| p.ie < p.ll);
            let cross_ok = x.is_some_and(|v| (v as f64 - tl).abs() <= WINDOW_SECS + 1e-9);
            checks.push(Check {
                name: format!("{}: LL first below T_lingr, IE above, crossing at Eq. 4 (Fig. 8, seeds/002_34f613b0a80e1e58.txt L189–200, Eq. 4 L69–83)", c.name),
                passed: below_ok && above_ok && cross_ok,
                detail: format!(
                    "T_lingr = {tl:.1} s; crossover at {} (grid {} s); LL first below: {below_ok}, IE first above: {above_ok}",
                    x.map(|v| format!("{v} s")).unwrap_or_else(|| "none".into()),
                    step
                ),
            });
            checks.push(Check {
                name: format!("{}: LL at most one T_migr behind IE (Eq. 4's choice of T_lingr, L69–83; spec linger-longer.md §1.4)", c.name),
                passed: worst <= tm.as_secs_f64() + 1e-3,
                detail: format!(
                    "worst LL − IE = {worst:.2} s, T_migr = {:.2} s (spec §1.4 ski-rental bound)",
                    tm.as_secs_f64()
                ),
            });
        } else {
            let ok = mine.iter().all(|p| p.ll <= p.ie + 1e-6);
            checks.push(Check {
                name: format!(
                    "{}: job shorter than the linger time, LL never behind",
                    c.name
                ),
                passed: ok && x.is_none(),
                detail: format!(
                    "T_lingr = {tl:.1} s but the job ends within {:.0} s of lingering",
                    (c.job_secs - RETURN_AT) / (1.0 - H)
                ),
            });
        }
        let series = vec![
            Series::new(
                "LL",
                mine.iter().map(|p| (p.episode as f64, p.ll)).collect(),
            ),
            Series::new(
                "IE",
                mine.iter().map(|p| (p.episode as f64, p.ie)).collect(),
            ),
        ];
        let file = format!("migration_{}.svg", c.name);
        line_chart(
            &opts.out.join(&file),
            &format!(
                "Fig. 8: {}-s job, T_migr {:.1} s, T_lingr {:.0} s",
                c.job_secs,
                tm.as_secs_f64(),
                tl
            ),
            "owner episode length D (s)",
            "job completion time (s)",
            &series,
        )?;
        files.push(PathBuf::from(file));
    }
    let _ = writeln!(md, "\n## Checks\n");
    for c in &checks {
        let _ = writeln!(
            md,
            "- [{}] {}: {}",
            if c.passed { "x" } else { " " },
            c.name,
            c.detail
        );
    }
    let _ = writeln!(
        md,
        "\nThe paper reports a 30 s crossover (L193, footnote 5 L195) but its stated 8 MB at \
         3 Mbit/s gives T_migr = 21.3 s and T_lingr = 107 s; `paper30` uses T_migr = 6 s, the \
         value Eq. 4 needs for 30 s. With a 50-s job and T_lingr = 107 s LL is never behind IE, \
         because the job finishes before the linger time expires. {} simulated events.",
        events
    );
    let path = opts.out.join("summary.md");
    std::fs::write(&path, md).map_err(|e| SimError::io(&path, e))?;
    files.push(PathBuf::from("summary.md"));
    Ok(ExperimentReport {
        name: "migration",
        files,
        events,
        elapsed: started.elapsed(),
        checks,
    })
}
