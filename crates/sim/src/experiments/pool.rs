//! `pool`: the Up-Down study of Mutka 1988 §4.4.3 (Table 4.4, Figs.
//! 4.3–4.6) run through the production coordinator.
//!
//! Every station of the Table 4.4 pool advertises to a real
//! `gleaner_coordinator::Pool` whenever its owner state, its own background
//! job, its guest, its queue or its remote jobs change, and carries out the
//! pool's grants and preemptions at once ([`crate::workstations`], the
//! production coordinator). The pool matches job classes, issues claims,
//! reserves preempted nodes, applies DMW's embargo, guest limits and
//! progress guarantee, and runs an allocation pass on every ad that is a
//! capacity event, as the daemon does. Availability is model M5 by default
//! (fitted to the 1987 paper's 13 stations, whose traces drove the thesis's
//! simulation), M1–M4 or `m5-23` with `--model`, or a recorded trace with
//! `--trace`. Variant `random-as-updown`: the Up-Down arm allocates at
//! random.
//!
//! The same sweep also runs with the bare allocator (`glean sim updown`'s
//! coordinator), so `summary.md` puts the two side by side; the checks are
//! `glean sim updown`'s, applied to the production runs. Up-Down keeps the
//! thesis's one grant per station per pass (resolution A3, `per_pass =
//! "one"`), the allocator default.
//!
//! Outputs: `pool.csv` (means), `pool_runs.csv` (every run), `bare.csv` (the
//! bare allocator's means), the Fig. 4.3–4.6 analogues and `summary.md`.
//! In the full configuration a short table compares models M1–M5 at K = 2
//! and K = 10.

use super::updown::{
    self, CoordinatorKind, POLICIES, RunSummary, SweepConfig, SweepPoint, point, write_file,
};
use super::{Check, ExperimentOpts, ExperimentReport};
use crate::SimError;
use crate::availability::{Model, Source};
use gleaner_coordinator::CoordinatorConfig;
use gleaner_core::alloc::AllocatorKind;
use std::fmt::Write as _;
use std::time::Instant;

/// The coordinator's configuration in the simulation: the daemon's
/// defaults (120 s advertise period, so claims and preemption reservations
/// last 6 min and the embargo 90 s; the progress guarantee on), except that
/// a restart grace is pointless at time 0, stations, which advertise only
/// when something changes, are never forgotten for silence, and passes run
/// when the thesis ran them: at intervals, NA→AV and remote completions
/// (resolution A4), each at once (no pass on new demand, no gap between
/// event passes). The allocator, with Up-Down's one node per station per
/// pass (A3), is the sweep's (`PoolConfig::allocator`).
pub fn coordinator_template() -> CoordinatorConfig {
    CoordinatorConfig {
        startup_grace_secs: Some(0.0),
        station_timeout_secs: Some(1e8),
        pass_on_demand: false,
        event_pass_gap_secs: 0.0,
        ..CoordinatorConfig::default()
    }
}

/// The sweep of `glean sim pool` for `opts` (the `updown` sweep, production
/// coordinator).
pub fn sweep_config(opts: &ExperimentOpts) -> Result<SweepConfig, SimError> {
    Ok(SweepConfig {
        coordinator: CoordinatorKind::Production(Box::new(coordinator_template())),
        ..updown::sweep_config(opts)?
    })
}

/// One row of the cross-model table.
struct ModelRow {
    model: String,
    policy: AllocatorKind,
    k2: RunSummary,
    k10: RunSummary,
}

/// The production sweep at K = 2 and 10 under M1–M5; the default is taken
/// from the main sweep `main`.
fn models_table(
    opts: &ExperimentOpts,
    base: &SweepConfig,
    main: &[SweepPoint],
) -> Result<Vec<ModelRow>, SimError> {
    let mut rows = Vec::new();
    for name in ["m1", "m2", "m3", "m4", "m5"] {
        let computed;
        let pts = if name == updown::DEFAULT_MODEL && opts.model.is_none() && opts.trace.is_none() {
            main
        } else {
            let cfg = SweepConfig {
                ks: vec![2, 10],
                availability: Source::Model(Model::parse(name)?),
                ..base.clone()
            };
            opts.progress.message(&format!("pool: model {name}"));
            computed = updown::sweep(&cfg, opts.progress.as_ref())?;
            &computed[..]
        };
        for p in POLICIES {
            let get = |k| point(pts, p, k).map(|x| x.mean).unwrap_or_default();
            rows.push(ModelRow {
                model: name.to_string(),
                policy: p,
                k2: get(2),
                k10: get(10),
            });
        }
    }
    Ok(rows)
}

fn pct_diff(a: f64, b: f64) -> String {
    if a.is_finite() && b.is_finite() && a != 0.0 {
        format!("{:+.0} %", 100.0 * (b / a - 1.0))
    } else {
        "–".into()
    }
}

#[allow(clippy::too_many_arguments)]
fn summary_md(
    cfg: &SweepConfig,
    pool: &[SweepPoint],
    bare: &[SweepPoint],
    checks: &[Check],
    bare_checks: &[Check],
    pool_secs: f64,
    bare_secs: f64,
    models: &[ModelRow],
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Up-Down through the production coordinator (Mutka 1988 §4.4.3)\n"
    );
    let _ = writeln!(
        s,
        "Setup: the Table 4.4 pool of `glean sim updown` (11 light stations, arrive 2000 min; 1 medium, 2 permanent jobs; 1 heavy, K permanent jobs; servemean 5 h; SchedInterval 10 min; JobTransferCost 1 min), with every station advertising to the real `gleaner_coordinator::Pool` (daemon defaults: 120 s advertise period, 90 s embargo, progress guarantee on; Up-Down with one grant per station per pass, A3). Availability: {}. Horizon {:.0} days per run, seeds {:?}, K = {:?}.\n",
        cfg.availability.describe(),
        cfg.horizon.as_secs_f64() / 86_400.0,
        cfg.seeds,
        cfg.ks
    );
    let runs = cfg.ks.len() * cfg.seeds.len() * cfg.allocators.len();
    let _ = writeln!(
        s,
        "Run time (wall clock on the machine that ran it, shared with other work): production coordinator {pool_secs:.1} s for {runs} simulated years ({:.2} s per run per thread, {} threads); bare allocator {bare_secs:.1} s for the same runs. The bare allocator's own report is `glean sim updown`'s (`../updown/summary.md`).\n",
        pool_secs * cfg.threads as f64 / runs.max(1) as f64,
        cfg.threads
    );
    let _ = writeln!(s, "## Checks (spec mutka-livny-1987.md §3.2, B6)\n");
    let _ = writeln!(s, "| Check | Production coordinator | Bare allocator |");
    let _ = writeln!(s, "|---|---|---|");
    for c in checks {
        let b = bare_checks.iter().find(|b| b.name == c.name);
        let mark = |c: &Check| format!("{} {}", if c.passed { "pass" } else { "FAIL" }, c.detail);
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            c.name,
            mark(c),
            b.map_or_else(|| "–".into(), mark)
        );
    }
    let _ = writeln!(s, "\n## Side by side (means over seeds)\n");
    let _ = writeln!(
        s,
        "| policy | K | light RCWR bare / pool | light RCP % bare / pool | light RRR bare / pool | medium RCWR bare / pool | heavy wait % bare / pool | jobs bare / pool | preemptions bare / pool | passes bare / pool |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for p in pool {
        let Some(b) = point(bare, p.policy, p.heavy_jobs) else {
            continue;
        };
        let (m, n) = (&b.mean, &p.mean);
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} / {:.3} | {:.1} / {:.1} | {:.2} / {:.2} | {:.3} / {:.3} | {:.2} / {:.2} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} / {:.0} |",
            p.policy.name(),
            p.heavy_jobs,
            m.light_rcwr,
            n.light_rcwr,
            m.light_rcp,
            n.light_rcp,
            m.light_rrr,
            n.light_rrr,
            m.medium_rcwr,
            n.medium_rcwr,
            100.0 * m.heavy_wait_frac,
            100.0 * n.heavy_wait_frac,
            m.jobs_completed,
            n.jobs_completed,
            m.preemptions,
            n.preemptions,
            m.passes,
            n.passes
        );
    }
    let kmax = cfg.ks.last().copied().unwrap_or(13);
    let kmin = cfg.ks.first().copied().unwrap_or(2);
    let g = |pts: &[SweepPoint], p, k, f: fn(&RunSummary) -> f64| {
        point(pts, p, k).map(|x| f(&x.mean)).unwrap_or(f64::NAN)
    };
    let unusable_per_run: f64 =
        pool.iter().map(|p| p.mean.unusable_grants).sum::<f64>() / pool.len().max(1) as f64;
    let passes = |pts: &[SweepPoint]| pts.iter().map(|p| p.mean.passes).sum::<f64>();
    let pass_ratio = passes(pool) / passes(bare).max(1.0);
    let naive_preemptions: f64 = pool
        .iter()
        .filter(|p| p.policy != AllocatorKind::UpDown)
        .map(|p| p.mean.preemptions)
        .sum();
    let _ = writeln!(s, "\n## Where they differ, and why\n");
    let _ = writeln!(
        s,
        "- **Allocation on every advertised capacity event.** The daemon runs a pass whenever an ad shows new capacity: a host turning AV, a guest gone from a host, a CPU freed, or a home with fewer jobs running elsewhere. The last includes a guest vacated by its returning owner or displaced by its host's own job, which the home re-advertises at once as idle, so the production pool re-places it in the same instant; the thesis's model allocates only when a remote job *completes* or a host turns AV, so such a job waits for the next capacity event or SchedInterval tick (up to 10 min). One change also makes two stations advertise (a finished guest: its host and its home), so the production pool runs {pass_ratio:.2} times as many passes. Stations wait less under every policy (light RCWR higher at small K), and Up-Down, given one grant per station per pass (A3), preempts for a light station at the first pass after it starts waiting: light RCWR under Up-Down is {} at K={kmax} (bare {:.3}, pool {:.3}), with {} the preemptions.",
        pct_diff(
            g(bare, AllocatorKind::UpDown, kmax, |r| r.light_rcwr),
            g(pool, AllocatorKind::UpDown, kmax, |r| r.light_rcwr)
        ),
        g(bare, AllocatorKind::UpDown, kmax, |r| r.light_rcwr),
        g(pool, AllocatorKind::UpDown, kmax, |r| r.light_rcwr),
        pct_diff(
            g(bare, AllocatorKind::UpDown, kmax, |r| r.preemptions),
            g(pool, AllocatorKind::UpDown, kmax, |r| r.preemptions)
        )
    );
    let _ = writeln!(
        s,
        "- **Claims and reservations.** A grant is a claim the home must use; a preempted node is reserved for the preempting station until the victim's host reports it gone, and only then granted. The model's stations act at once, so claims settle within the same instant; {unusable_per_run:.1} grants per simulated year (mean over all points) found their host taken meanwhile (its owner's job started there while the pool's messages were delivered) and lapsed, as they would in a real pool.",
    );
    let _ = writeln!(
        s,
        "- **Matching.** Each station's idle jobs are one job class; the matchmaker places a class on the free host that fits it (the typed fit check, `gleaner_proto::fit`) with the best rank, then DMW's σ, then name, where the bare model takes the allocator's node. All hosts are alike here, so this moves which host a job lands on, not how much capacity a station gets. Demand counts the jobs some host could take once its owner or guests let it, so Up-Down still sees the heavy station waiting while every host is busy."
    );
    let _ = writeln!(
        s,
        "- **DMW's rules.** The embargo (90 s after a placement, lifted by a guest leaving) and the guest limit (one per CPU) never bind with one-CPU hosts and one guest each; the progress guarantee gives a free host to a station with work and nothing running when the allocator gave it none, and never preempts. Random and Round-Robin stay non-preemptive through the production coordinator ({naive_preemptions:.0} preemptions over all their points), so their light stations still lose ground as K grows (light RCWR K={kmin} → K={kmax}: random {:.3} → {:.3}, roundrobin {:.3} → {:.3}).",
        g(pool, AllocatorKind::Random, kmin, |r| r.light_rcwr),
        g(pool, AllocatorKind::Random, kmax, |r| r.light_rcwr),
        g(pool, AllocatorKind::RoundRobin, kmin, |r| r.light_rcwr),
        g(pool, AllocatorKind::RoundRobin, kmax, |r| r.light_rcwr),
    );
    let _ = writeln!(
        s,
        "- **Local capacity.** A station running its own background job advertises one CPU less; when the job ends the CPU comes back, which the coordinator treats as a capacity event (as the bare model treats \"an owner's local job finishing and leaving its AV host idle\")."
    );
    if !models.is_empty() {
        let _ = writeln!(
            s,
            "\n## Availability models M1–M5 (production coordinator, K = 2 → 10)\n"
        );
        let _ = writeln!(
            s,
            "| model | policy | light RCWR K=2 → K=10 (ratio) | light RCP % K=2 → K=10 | heavy wait % K=10 |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|");
        for r in models {
            let _ = writeln!(
                s,
                "| {} | {} | {:.3} → {:.3} ({:.2}) | {:.1} → {:.1} | {:.2} |",
                r.model,
                r.policy.name(),
                r.k2.light_rcwr,
                r.k10.light_rcwr,
                r.k10.light_rcwr / r.k2.light_rcwr,
                r.k2.light_rcp,
                r.k10.light_rcp,
                100.0 * r.k10.heavy_wait_frac
            );
        }
    }
    let _ = writeln!(
        s,
        "\nConventions as in `glean sim updown`'s summary: RCWR = node time allocated (including transfer) / time with queued jobs and no node; group values are means of station values (T:L711); RCP counts executed CPU; RRR is the mean of (finish − arrival)/demand over jobs that finished remotely. Model rules: `gleaner_sim::workstations`."
    );
    s
}

/// `glean sim pool`.
pub fn run(opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    let t0 = Instant::now();
    let cfg = sweep_config(opts)?;
    opts.progress
        .message("pool: the Table 4.4 pool through the production coordinator");
    let pool = updown::sweep(&cfg, opts.progress.as_ref())?;
    let pool_secs = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    opts.progress
        .message("pool: the same sweep, bare allocator");
    let bare_cfg = SweepConfig {
        coordinator: CoordinatorKind::Bare,
        ..cfg.clone()
    };
    let bare = updown::sweep(&bare_cfg, opts.progress.as_ref())?;
    let bare_secs = t1.elapsed().as_secs_f64();
    // The cross-model table only for the generated default; a trace or a
    // chosen model is the whole study.
    let models = if opts.quick || opts.trace.is_some() || opts.model.is_some() {
        Vec::new()
    } else {
        models_table(opts, &cfg, &pool)?
    };
    let events: u64 = pool
        .iter()
        .flat_map(|p| p.runs.iter())
        .map(|r| r.events as u64)
        .sum();
    let checks = updown::checks(&pool);
    let bare_checks = updown::checks(&bare);
    let mut files = Vec::new();
    write_file(&opts.out, "pool.csv", &updown::csv_means(&pool), &mut files)?;
    write_file(
        &opts.out,
        "pool_runs.csv",
        &updown::csv_runs(&pool, &cfg.seeds),
        &mut files,
    )?;
    write_file(&opts.out, "bare.csv", &updown::csv_means(&bare), &mut files)?;
    updown::plots(&opts.out, &pool, &mut files)?;
    write_file(
        &opts.out,
        "summary.md",
        &summary_md(
            &cfg,
            &pool,
            &bare,
            &checks,
            &bare_checks,
            pool_secs,
            bare_secs,
            &models,
        ),
        &mut files,
    )?;
    Ok(ExperimentReport {
        name: "pool",
        files,
        events,
        elapsed: t0.elapsed(),
        checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_formatted() {
        assert_eq!(pct_diff(1.0, 1.5), "+50 %");
        assert_eq!(pct_diff(0.0, 1.0), "–");
    }
}
