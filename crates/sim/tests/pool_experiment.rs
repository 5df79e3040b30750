//! `glean sim pool`: the Up-Down study of Mutka 1988 §4.4.3 through the
//! production coordinator (`gleaner_coordinator::Pool`), quick mode.

use gleaner_core::alloc::AllocatorKind;
use gleaner_core::time::Time;
use gleaner_sim::availability::{Model, Source};
use gleaner_sim::experiments::pool::{coordinator_template, sweep_config};
use gleaner_sim::experiments::updown::{CoordinatorKind, PoolConfig, sweep};
use gleaner_sim::experiments::{self, ExperimentOpts, NoProgress};
use gleaner_sim::workstations::simulate;

/// The experiment runs `glean sim updown`'s claims on the
/// production coordinator, and it writes its files with the bare allocator
/// beside it.
#[test]
fn quick_pool_experiment_judges_the_updown_claims() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ExperimentOpts {
        quick: true,
        ..ExperimentOpts::new(dir.path(), 2, 1)
    };
    let r = experiments::run("pool", &opts).unwrap();
    for c in &r.checks {
        eprintln!(
            "{} {}: {}",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    // `glean sim updown`'s claims, judged on the production runs.
    assert_eq!(r.checks.len(), 15);
    for f in ["pool.csv", "pool_runs.csv", "bare.csv", "summary.md"] {
        assert!(dir.path().join(f).exists(), "{f}");
    }
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.contains("## Side by side"), "{summary}");
    assert!(summary.contains("| Check | Production coordinator | Bare allocator |"));
}

/// Results do not depend on the number of worker threads.
#[test]
fn the_production_sweep_is_reproducible() {
    let opts = ExperimentOpts {
        quick: true,
        ..ExperimentOpts::new("unused", 1, 3)
    };
    let mut cfg = sweep_config(&opts).unwrap();
    cfg.ks = vec![4, 10];
    cfg.horizon = Time::from_secs(40 * 86_400);
    let one = sweep(
        &gleaner_sim::experiments::updown::SweepConfig {
            threads: 1,
            ..cfg.clone()
        },
        &NoProgress,
    )
    .unwrap();
    let many = sweep(
        &gleaner_sim::experiments::updown::SweepConfig { threads: 3, ..cfg },
        &NoProgress,
    )
    .unwrap();
    let key = |pts: &[gleaner_sim::experiments::updown::SweepPoint]| {
        gleaner_sim::experiments::updown::csv_means(pts)
    };
    assert_eq!(key(&one), key(&many));
}

/// Up-Down through the production coordinator preempts the heavy station
/// for light ones; Random and Round-Robin never preempt, also not through
/// DMW's progress guarantee.
#[test]
fn only_updown_preempts_through_the_production_coordinator() {
    for kind in [
        AllocatorKind::UpDown,
        AllocatorKind::Random,
        AllocatorKind::RoundRobin,
    ] {
        let mut c = PoolConfig::table_4_4(
            kind,
            10,
            Time::from_secs(60 * 86_400),
            Source::Model(Model::default()),
        );
        c.coordinator = CoordinatorKind::Production(Box::new(coordinator_template()));
        let r = simulate(&c, 7).unwrap();
        if kind == AllocatorKind::UpDown {
            assert!(r.preemptions > 0, "{kind:?}");
        } else {
            assert_eq!(r.preemptions, 0, "{kind:?}");
        }
        assert!(r.completed > 0);
        assert!(r.allocation_passes > 0);
    }
}
