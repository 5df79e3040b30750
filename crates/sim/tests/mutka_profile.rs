//! The `profile` experiment: every availability claim of the 1987 papers
//! and the thesis's 23-station month, tabulated for M2–M5 with seeds
//! file and line; reproducible; and a recorded trace profiled the same
//! way (`--trace`).

use gleaner_sim::experiments::{ExperimentOpts, run};

fn opts(dir: &std::path::Path, model: Option<&str>) -> ExperimentOpts {
    ExperimentOpts {
        quick: true,
        model: model.map(str::to_string),
        ..ExperimentOpts::new(dir, 2, 3)
    }
}

#[test]
fn profile_tabulates_every_claim_and_is_reproducible() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let ra = run("profile", &opts(a.path(), None)).unwrap();
    // The default judges m5 on the 1987 claims and m5-23 on the month's.
    assert!(ra.checks.len() > 80, "{}", ra.checks.len());
    assert!(ra.checks.iter().any(|c| c.name.starts_with("m5: ")));
    assert!(ra.checks.iter().any(|c| c.name.starts_with("m5-23: ")));
    let summary = std::fs::read_to_string(a.path().join("summary.md")).unwrap();
    for m in ["| m2 |", "| m3 |", "| m4 |", "| m5 |", "| m5-23 |"] {
        assert!(summary.contains(m), "{m}");
    }
    let rb = run("profile", &opts(b.path(), None)).unwrap();
    assert_eq!(ra.files, rb.files);
    for f in &ra.files {
        if f.to_str() == Some("summary.md") {
            continue;
        }
        assert_eq!(
            std::fs::read(a.path().join(f)).unwrap(),
            std::fs::read(b.path().join(f)).unwrap(),
            "{f:?}"
        );
    }
    let t3 = std::fs::read_to_string(a.path().join("table3_m2.csv")).unwrap();
    assert_eq!(t3.lines().count(), 11);
    let claims = std::fs::read_to_string(a.path().join("claims.csv")).unwrap();
    assert!(
        claims
            .lines()
            .any(|l| l.starts_with("month23,fig61_min,m5-23,"))
    );
}

#[test]
fn profile_of_a_recorded_trace() {
    let dir = tempfile::tempdir().unwrap();
    let t = gleaner_sim::availability::Trace::generate(
        &gleaner_sim::availability::Model::parse("m1").unwrap(),
        1,
        4,
        gleaner_core::time::Time(40 * 86_400_000_000),
    );
    let p = dir.path().join("rec.csv");
    t.write_csv(&p).unwrap();
    let mut o = opts(dir.path(), None);
    o.trace = Some(p);
    let r = run("profile", &o).unwrap();
    assert!(
        r.files
            .iter()
            .any(|f| f.to_str() == Some("table1_trace.csv"))
    );
    // A recorded pool is profiled, not judged.
    assert!(r.checks.is_empty());
}
