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
