//! The issue-17 experiments run in their quick configuration and put a
//! paper-vs-model table in their summary, every check citing a seed file;
//! same seed, same output. Which claims hold is each summary's business
//! (results/*/summary.md); that checks can fail, checks_can_fail.rs's.

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
    if !r.checks.is_empty() {
        assert!(summary.contains("## Paper vs model"), "{name}");
    }
    for c in &r.checks {
        assert!(
            c.name.contains("seeds/0"),
            "{name}: {} cites no seed",
            c.name
        );
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

#[test]
fn condor_month_quick() {
    let r = quick("condor_month");
    assert_eq!(r.checks.len(), 3, "quick mode: the waiting claims only");
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
