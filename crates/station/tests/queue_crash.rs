//! Crash safety of the job queue against a real SIGKILL.
//!
//! The test re-executes its own binary as a child (selected with an
//! environment variable) that submits clusters and moves jobs through states
//! in a loop, appending one line per acknowledged submit to a report file.
//! The parent kills it at a random moment, several rounds in a row on the
//! same database, then checks that every acknowledged cluster is present and
//! intact, that no cluster is partial, and that SQLite's integrity check
//! passes.

use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobEventKind, JobId, JobState, JobStateKind};
use gleaner_station::queue::{JobFilter, JobQueue};
use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const CHILD_DB: &str = "GLEANER_QUEUE_CRASH_DB";
const CHILD_REPORT: &str = "GLEANER_QUEUE_CRASH_REPORT";
const PROCS: u32 = 3;

fn description(cluster: u64, proc: u32) -> JobDescription {
    let mut d = JobDescription::new("crash", "/bin/payload");
    d.arguments = vec![cluster.to_string(), proc.to_string(), "x".repeat(200)];
    d
}

/// The child: runs only when re-executed by `sigkill_at_random_moments`.
#[test]
fn crash_child() {
    let (Ok(db), Ok(report)) = (std::env::var(CHILD_DB), std::env::var(CHILD_REPORT)) else {
        return; // Normal test run: nothing to do.
    };
    let mut q = JobQueue::open(&db).unwrap();
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&report)
        .unwrap();
    for step in 0u64.. {
        let ids = q
            .submit_with(Time::from_secs(step), |cluster| {
                Ok((0..PROCS).map(|p| description(cluster, p)).collect())
            })
            .unwrap();
        // Acknowledge only after submit returned, i.e. after the commit.
        writeln!(out, "{}", ids[0].cluster).unwrap();
        out.flush().unwrap();
        // Exercise single-row transactions too.
        let id = ids[0];
        q.annotate(id, JobEventKind::Placed, "host", Time::from_secs(step))
            .unwrap();
        q.transition(id, JobState::Running, "", Time::from_secs(step))
            .unwrap();
        if step % 2 == 0 {
            q.transition(
                id,
                JobState::Completed { exit_code: 0 },
                "",
                Time::from_secs(step),
            )
            .unwrap();
        }
    }
}

fn acked_count(report: &std::path::Path) -> usize {
    std::fs::read_to_string(report).map_or(0, |t| t.lines().filter(|l| !l.is_empty()).count())
}

fn random_below(n: u64) -> u64 {
    // RandomState is seeded from OS randomness; enough for a kill time.
    RandomState::new().hash_one(0u8) % n
}

#[test]
fn sigkill_at_random_moments() {
    let dir = tempfile::tempdir().unwrap();
    let db: PathBuf = dir.path().join("queue.db");
    let report: PathBuf = dir.path().join("acked.txt");
    let exe = std::env::current_exe().unwrap();

    for round in 0..8 {
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_DB, &db)
            .env(CHILD_REPORT, &report)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill at a random moment after the child made progress this round
        // (it has acknowledged one more submit), however loaded the machine.
        let before = acked_count(&report);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while acked_count(&report) == before && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(random_below(300)));
        // Child::kill sends SIGKILL on Unix: no destructors, no clean close.
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "round {round}: child exited by itself");
    }

    let acked: Vec<u64> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(
        acked.len() >= 6,
        "the child should have acknowledged some submits, got {}",
        acked.len()
    );

    let q = JobQueue::open(&db).unwrap();
    assert_eq!(q.integrity_check().unwrap(), Ok(()));

    let jobs = q.list(&JobFilter::default()).unwrap();
    let mut by_cluster: BTreeMap<u64, Vec<JobId>> = BTreeMap::new();
    for j in &jobs {
        by_cluster.entry(j.id.cluster).or_default().push(j.id);
        // Every stored record decodes and matches what was submitted.
        assert_eq!(j.description, description(j.id.cluster, j.id.proc));
    }
    // Clusters are whole: a killed submit leaves nothing behind.
    for (c, ids) in &by_cluster {
        assert_eq!(ids.len(), PROCS as usize, "cluster {c} is partial");
    }
    // Every acknowledged submit survived.
    for c in &acked {
        assert!(by_cluster.contains_key(c), "acknowledged cluster {c} lost");
        let events = q.events(JobId::new(*c, 0)).unwrap();
        assert!(!events.is_empty());
    }
    // Each state change and its event were committed together: replaying
    // a job's history gives its stored state.
    for j in &jobs {
        let mut state = JobStateKind::Idle;
        for e in q.events(j.id).unwrap() {
            state = match e.kind {
                JobEventKind::Submitted | JobEventKind::Evicted | JobEventKind::Released => {
                    JobStateKind::Idle
                }
                JobEventKind::Started | JobEventKind::Resumed => JobStateKind::Running,
                JobEventKind::Suspended => JobStateKind::Suspended,
                JobEventKind::Held => JobStateKind::Held,
                JobEventKind::Completed => JobStateKind::Completed,
                JobEventKind::Removed => JobStateKind::Removed,
                JobEventKind::Placed | JobEventKind::Checkpointed | JobEventKind::StartFailed => {
                    state
                }
            };
        }
        assert_eq!(state, j.state.kind(), "job {} history disagrees", j.id);
    }
    // Cluster ids were never reused across crashes.
    let mut sorted = acked.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), acked.len());
    assert!(acked.windows(2).all(|w| w[0] < w[1]));
}
