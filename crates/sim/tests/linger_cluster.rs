//! Tests of the Linger-Longer cluster experiment (`glean sim linger`).

use gleaner_sim::experiments::{self, ExperimentOpts, NoProgress};
use std::sync::Arc;

fn opts(out: &std::path::Path, seed: u64) -> ExperimentOpts {
    ExperimentOpts {
        out: out.to_path_buf(),
        seeds: 1,
        seed,
        quick: true,
        trace: None,
        model: None,
        progress: Arc::new(NoProgress),
    }
}

/// The acceptance criteria on the quick configuration: on
/// Workload-1 LL and LF cut the average job time by ≥ 25 % against IE and
/// PM, LL's throughput is ≥ 1.3 × PM's, local delay stays below 1 %, and on
/// Workload-2 all four policies are within 3 % on average job time.
#[test]
fn linger_acceptance_checks_pass() {
    let dir = tempfile::tempdir().unwrap();
    let rep = experiments::run("linger", &opts(dir.path(), 1)).unwrap();
    let csv = std::fs::read_to_string(dir.path().join("linger.csv")).unwrap();
    eprintln!("{csv}");
    eprintln!("{}", std::fs::read_to_string(dir.path().join("linger_states.csv")).unwrap());
    for c in &rep.checks {
        eprintln!("{} {}: {}", if c.passed { "PASS" } else { "FAIL" }, c.name, c.detail);
    }
    eprintln!("{} events, {:.0} events/s", rep.events, rep.events_per_second());
    assert!(csv.starts_with(
        "workload,policy,avg_job_time,variation,family_time,throughput,local_delay\n"
    ));
    assert_eq!(csv.lines().count(), 9);
    assert!(rep.all_passed(), "{:?}", rep.checks);
}
