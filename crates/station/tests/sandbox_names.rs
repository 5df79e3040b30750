//! Unique, durable sandbox names (issue 14, item 4), with real guests: a
//! sandbox is named after its run (home, job, run number, nonce), so two
//! homes' job 1.4 never share one, also after a restart of the station
//! (which used to restart a counter and collide with `File exists`); and
//! what dead runs left in the execute directory goes at start and after
//! each run.

use gleaner_core::detector::OwnerState;
use gleaner_proto::job::{JobDescription, JobEventKind, JobId, JobState};
use gleaner_proto::run::RunId;
use gleaner_proto::wire::{PlacementRequest, PlacementResponse};
use gleaner_station::host::starter::{AnyNonEmptyClaim, Starter, StarterConfig};
use gleaner_station::isolation::SlotConfig;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

mod common;
use common::shadow::Shadow;

fn starter(exec: &Path, keep: bool) -> (Arc<Starter>, watch::Sender<OwnerState>) {
    let (tx, rx) = watch::channel(OwnerState::Av);
    let mut cfg = StarterConfig::new("host1", exec);
    cfg.output_poll = Duration::from_millis(100);
    cfg.slots = SlotConfig::new(gleaner_testkit::slot_prefix(), 2);
    cfg.keep_sandboxes = keep;
    let s = Starter::new(cfg, Box::new(AnyNonEmptyClaim), rx, None).unwrap();
    (Arc::new(s), tx)
}

/// Job 1.4 of `home`, its first run, printing its working directory.
fn placement(shadow: &Shadow, home: &str, job: JobId) -> PlacementRequest {
    let mut d = JobDescription::new("alice", "job.sh");
    d.transfer_output_files = None;
    PlacementRequest {
        protocol: gleaner_proto::wire::PROTOCOL_VERSION,
        job_id: job,
        home: home.into(),
        claim_id: "claim".into(),
        description: d,
        shadow: shadow.url.clone(),
        checkpoint: None,
        run_count: 0,
        lease_secs: None,
        run: Some(RunId::new(home, job, 1).unwrap()),
        claim_seq: 0,
    }
}

/// Runs one placement to its completion report; returns the guest's
/// working directory (its sandbox) as it printed it.
async fn run_once(starter: &Arc<Starter>, shadow: &Shadow, req: PlacementRequest) -> String {
    let job = req.job_id;
    let seen = shadow.reports(job).len();
    let r = starter.place(req);
    assert!(matches!(r, PlacementResponse::Accepted { .. }), "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let reps = shadow.reports(job);
        if let Some(d) = reps[seen.min(reps.len())..].iter().find(|r| {
            matches!(
                r.event,
                JobEventKind::Completed | JobEventKind::Held | JobEventKind::Evicted
            )
        }) {
            break d.clone();
        }
        assert!(Instant::now() < deadline, "no end reported: {reps:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        done.state,
        JobState::Completed { exit_code: 0 },
        "{done:#?}"
    );
    // The slot (and the sandbox) are freed after the report.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !starter.listing().is_empty() {
        assert!(Instant::now() < deadline, "guest never left");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    String::from_utf8(shadow.output(job, "stdout"))
        .unwrap()
        .trim()
        .to_string()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_homes_job_1_4_after_a_restart_get_their_own_sandboxes() {
    let _l = common::serial_lock();
    let dir = common::shared_tempdir();
    let exec = dir.path().join("execute");
    let shadow = Shadow::start().await;
    let job = JobId::new(1, 4);
    shadow.put_input(job, "job.sh", b"#!/bin/sh\npwd\n");

    // A station's first life keeps its sandboxes, as a crash mid-run
    // leaves them: home a's job 1.4 runs.
    let (first, _o1) = starter(&exec, true);
    let a_dir = run_once(&first, &shadow, placement(&shadow, "a", job)).await;
    let a_name = Path::new(&a_dir)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(a_name.starts_with("a-1.4-r1-"), "{a_name}");
    assert!(exec.join(&a_name).is_dir(), "kept, as after a crash");
    drop(first);
    // Also what an older station left under the old names.
    std::fs::create_dir_all(exec.join("1.4-r0-0")).unwrap();
    std::fs::write(exec.join("1.4-r0-0").join("stdout"), b"old").unwrap();
    std::fs::write(exec.join("1.4-r0-1.bundle"), b"old").unwrap();

    // Restarted: every leftover goes at start; home b's job 1.4 (same id,
    // same run number) runs in a sandbox of its own and completes.
    let (second, _o2) = starter(&exec, false);
    assert_eq!(
        entries(&exec),
        Vec::<String>::new(),
        "stale sandboxes left at start"
    );
    let b_dir = run_once(&second, &shadow, placement(&shadow, "b", job)).await;
    let b_name = Path::new(&b_dir)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(b_name.starts_with("b-1.4-r1-"), "{b_name}");
    assert_ne!(a_name, b_name);
    // Two runs of one home's job differ by their nonce.
    let again = run_once(&second, &shadow, placement(&shadow, "b", job)).await;
    assert_ne!(again, b_dir);

    // After each run its sandbox, and any a dead run left meanwhile, go.
    std::fs::create_dir_all(exec.join("a-1.4-r7-dead")).unwrap();
    run_once(&second, &shadow, placement(&shadow, "a", job)).await;
    assert_eq!(entries(&exec), Vec::<String>::new());
}
