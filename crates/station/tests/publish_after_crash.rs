//! A completion acknowledged is never without its outputs (issue 14): the
//! home commits a completion with the list of its staged outputs, then
//! renames them into place. A home killed between the two leaves exactly
//! this on disk: the job Completed with its `publishing` record, and the
//! hidden staged files beside their destinations. The test builds that
//! state with the queue's own API and the owner's files, then starts the
//! real daemon on it: the outputs appear whole, the old content is
//! replaced, and the record is cleared. A job killed while staging,
//! before its commit, has its staged files removed instead (found by the
//! chaos suite: they stayed behind for good). (`pool_processes` kills a home at
//! random moments; this one aims at the window.)

use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobState};
use gleaner_station::config::StationRole;
use gleaner_station::node::spawn_for_test;
use gleaner_station::queue::JobQueue;
use std::time::{Duration, Instant};

mod common;
use common::{coordinator_config, pool_keys, pool_station, shared_tempdir, write_owned};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_home_killed_after_committing_a_completion_delivers_its_outputs_at_start() {
    if gleaner_testkit::skip_unless_root("publish_after_crash: creates a job owner") {
        return;
    }
    let _serial = common::serial_lock();
    let dir = shared_tempdir();
    let root = dir.path().to_path_buf();
    let keys = pool_keys(&root);
    let coord = gleaner_coordinator::spawn_for_test(coordinator_config(&root))
        .await
        .unwrap();
    let coord_url = format!("http://{}", coord.addr());
    let cfg = pool_station(&root, &keys, &coord_url, "a", StationRole::SubmitOnly);
    let (alice, work) = common::job_owner(&root);
    let owner = (alice.uid(), alice.gid());

    // The state the killed home left: a job completed with two staged
    // outputs, one over an older file of the same name.
    std::fs::create_dir_all(&cfg.state_dir).unwrap();
    let mut q = JobQueue::open(cfg.queue_path()).unwrap();
    let id = q
        .submit_with(Time::from_secs(1), |_| {
            let mut d = JobDescription::new(alice.name(), "/bin/true");
            d.iwd = Some(work.to_string_lossy().into_owned());
            d.output = Some("out.txt".into());
            Ok(vec![d])
        })
        .unwrap()[0];
    q.transition(id, JobState::Running, "started", Time::from_secs(2))
        .unwrap();
    let record = serde_json::json!([
        {"what": "output = out.txt", "path": work.join("out.txt"), "tag": "0123abcd"},
        {"what": "result.dat", "path": work.join("result.dat"), "tag": "89abcdef"},
    ])
    .to_string();
    q.transition_publishing(
        id,
        JobState::Completed { exit_code: 0 },
        "exited 0",
        Time::from_secs(3),
        Some(&record),
    )
    .unwrap();
    // And a job killed while staging, before its completion was
    // committed: its log names a file staged and one not yet written.
    let staging = q
        .submit_with(Time::from_secs(1), |_| {
            let mut d = JobDescription::new(alice.name(), "/bin/true");
            d.iwd = Some(work.to_string_lossy().into_owned());
            Ok(vec![d])
        })
        .unwrap()[0];
    q.transition(staging, JobState::Running, "started", Time::from_secs(2))
        .unwrap();
    let log = serde_json::json!([
        {"what": "output = err.txt", "path": work.join("err.txt"), "tag": "0badcafe", "committed": false},
        {"what": "b.dat", "path": work.join("b.dat"), "tag": "0000beef", "committed": false},
    ])
    .to_string();
    q.set_publishing(staging, &log).unwrap();
    drop(q);
    write_owned(&work.join(".err.txt.gleaner-0badcafe"), "half", owner);
    write_owned(&work.join("out.txt"), "an older run's output\n", owner);
    write_owned(
        &work.join(".out.txt.gleaner-0123abcd"),
        "the run's output\n",
        owner,
    );
    write_owned(&work.join(".result.dat.gleaner-89abcdef"), "42\n", owner);

    let (_addr, a) = spawn_for_test(cfg.clone()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(work.join("result.dat")).is_err()
        || work.join(".err.txt.gleaner-0badcafe").exists()
    {
        assert!(Instant::now() < deadline, "outputs never put in place");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.stop().await;
    coord.stop().await.unwrap();

    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "the run's output\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("result.dat")).unwrap(),
        "42\n"
    );
    let left: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".gleaner-"))
        .collect();
    assert!(left.is_empty(), "staged files left: {left:?}");
    assert!(
        !work.join("err.txt").exists(),
        "an uncommitted output published"
    );
    let q = JobQueue::open(cfg.queue_path()).unwrap();
    assert!(q.publishing().unwrap().is_empty(), "record not cleared");
    assert_eq!(
        q.get(id).unwrap().unwrap().state,
        JobState::Completed { exit_code: 0 }
    );
    // The job killed while staging still waits for its host's report.
    assert_eq!(q.get(staging).unwrap().unwrap().state, JobState::Running);
}

#[test]
fn the_publishing_record_commits_with_the_completion_and_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("queue.db");
    let mut q = JobQueue::open(&path).unwrap();
    let id = q
        .submit_with(Time::from_secs(1), |_| {
            Ok(vec![JobDescription::new("alice", "/bin/true")])
        })
        .unwrap()[0];
    q.transition_publishing(id, JobState::Running, "started", Time::from_secs(2), None)
        .unwrap();
    assert!(q.publishing().unwrap().is_empty());
    q.transition_publishing(
        id,
        JobState::Completed { exit_code: 0 },
        "done",
        Time::from_secs(3),
        Some("[]"),
    )
    .unwrap();
    // An illegal transition changes nothing, the record included.
    assert!(
        q.transition_publishing(id, JobState::Idle, "x", Time::from_secs(4), Some("[1]"))
            .is_err()
    );
    drop(q);
    let mut q = JobQueue::open(&path).unwrap();
    assert_eq!(
        q.publishing().unwrap(),
        vec![(id, "alice".to_string(), "[]".to_string())]
    );
    q.published(id).unwrap();
    assert!(q.publishing().unwrap().is_empty());
}
