//! Tests of the Fig. 8 migration-timing experiment (`glean sim migration`).

use gleaner_sim::cluster::PolicyKind;
use gleaner_sim::experiments::migration::{cases, completion};
use gleaner_sim::experiments::{self, ExperimentOpts};

/// The experiment's checks pass: with T_migr = 6 s LL finishes first below
/// the 30-s linger time and IE above it, crossing where Eq. 4 says; with
/// 8 MB at 3 Mbit/s (T_lingr = 107 s) the same holds for a 300-s job, and
/// LL is never more than one migration cost behind IE.
#[test]
fn migration_crossover_matches_eq4() {
    let dir = tempfile::tempdir().unwrap();
    let o = ExperimentOpts::new(dir.path(), 1, 1);
    let rep = experiments::run("migration", &o).unwrap();
    for c in &rep.checks {
        eprintln!(
            "{} {}: {}",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    assert!(rep.all_passed());
    assert!(dir.path().join("migration.csv").exists());
    assert!(dir.path().join("migration_paper30.svg").exists());
}

/// The fluid curves have the shape derived in spec §4.2: IE = 50 + T_migr
/// (flat), LL = 50 + 0.2·D below the linger time.
#[test]
fn fig8_curve_values() {
    let c = cases()[0];
    let tm = c.cost.t_migr().as_secs_f64();
    for d in [0u64, 10, 20, 28] {
        let (ll, _) = completion(&c, PolicyKind::LingerLonger, d).unwrap();
        assert!(
            (ll - (50.0 + 0.2 * d as f64)).abs() < 1e-3,
            "D={d}: LL {ll}"
        );
    }
    for d in [10u64, 40, 70] {
        let (ie, _) = completion(&c, PolicyKind::ImmediateEviction, d).unwrap();
        assert!((ie - (50.0 + tm)).abs() < 1e-3, "D={d}: IE {ie}");
    }
}
