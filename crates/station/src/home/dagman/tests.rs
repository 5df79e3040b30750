//! The manager against a real queue: eligibility, retries, restarts,
//! removal and rescue files.

use super::*;
use crate::queue::{JobFilter, JobQueue};
use gleaner_core::dag::{Rescue, RescueRetries, parse_dag};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobId, JobState};
use gleaner_proto::submit::ClusterSubmission;
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use std::collections::{BTreeMap, BTreeSet};

fn sub(text: &str) -> ClusterSubmission {
    parse_submit(text, &SubmitContext::new("n.sub", "alice")).unwrap()
}

fn body(dag_text: &str, dir: &std::path::Path) -> DagSubmitBody {
    let dag = parse_dag(dag_text).unwrap();
    DagSubmitBody {
        protocol: PROTOCOL_VERSION,
        dag_file: dir.join("x.dag").display().to_string(),
        dag_text: dag_text.to_string(),
        nodes: dag
            .nodes()
            .iter()
            .map(|n| DagNodeSubmit {
                name: n.name.clone(),
                submission: sub(&format!(
                    "executable = /bin/true\narguments = {}\nqueue\n",
                    n.name
                )),
                submit_dir: Some("/tmp".into()),
            })
            .collect(),
        rescue: None,
        rescue_retries: RescueRetries::Reset,
    }
}

fn t(s: u64) -> Time {
    Time::from_secs(1_700_000_000 + s)
}

fn open(dir: &std::path::Path) -> JobQueue {
    let mut q = JobQueue::open(dir.join("queue.db")).unwrap();
    init(&mut q).unwrap();
    q
}

/// Node name → its current cluster's job.
fn job_of(q: &mut JobQueue, dag: u64, node: &str) -> Option<JobId> {
    let s = status_one(q, dag).unwrap().unwrap();
    let n = s.nodes.iter().find(|n| n.name == node)?;
    n.clusters.last().map(|&c| JobId::new(c, 0))
}

fn statuses(q: &mut JobQueue, dag: u64) -> BTreeMap<String, String> {
    status_one(q, dag)
        .unwrap()
        .unwrap()
        .nodes
        .into_iter()
        .map(|n| (n.name, n.status))
        .collect()
}

fn run(q: &mut JobQueue, j: JobId, at: Time) {
    q.transition(j, JobState::Running, "test", at).unwrap();
}

fn complete(q: &mut JobQueue, j: JobId, code: i32, at: Time) {
    q.transition(j, JobState::Completed { exit_code: code }, "test", at)
        .unwrap();
}

/// Submits DIAMOND as alice at t(0); the DAG's id.
fn submit_diamond(q: &mut JobQueue, dir: &std::path::Path) -> u64 {
    submit(q, "alice", body(DIAMOND, dir), t(0)).unwrap().id
}

/// Runs `node`'s current job at t(`at`) and completes it one second
/// later with `code`.
fn run_to_exit(q: &mut JobQueue, dag: u64, node: &str, code: i32, at: u64) {
    let j = job_of(q, dag, node).unwrap();
    run(q, j, t(at));
    complete(q, j, code, t(at + 1));
}

const DIAMOND: &str = "JOB a a.sub\nJOB b b.sub\nJOB c c.sub\nJOB d d.sub\n\
                       PARENT a CHILD b\nPRIORITY_PARENT b CHILD c\nPARENT b c CHILD d\nRETRY b 1\n";

#[test]
fn data_and_priority_eligibility_against_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let mut q = open(dir.path());
    let id = submit_diamond(&mut q, dir.path());
    // Only the root is submitted.
    let r = tick(&mut q, t(1)).unwrap();
    assert_eq!(r.submitted.len(), 1);
    assert_eq!(r.submitted[0].1, "a");
    assert_eq!(statuses(&mut q, id)["b"], "waiting");
    let a = job_of(&mut q, id, "a").unwrap();
    // a running is not enough for its data child b.
    run(&mut q, a, t(2));
    assert!(tick(&mut q, t(3)).unwrap().submitted.is_empty());
    assert_eq!(statuses(&mut q, id)["a"], "running");
    // a completed: b goes.
    complete(&mut q, a, 0, t(4));
    let r = tick(&mut q, t(5)).unwrap();
    assert_eq!(r.submitted.len(), 1);
    assert_eq!(r.submitted[0].1, "b");
    // c has a priority parent b: submitted b is not started b.
    assert!(tick(&mut q, t(6)).unwrap().submitted.is_empty());
    let b = job_of(&mut q, id, "b").unwrap();
    run(&mut q, b, t(7));
    let r = tick(&mut q, t(8)).unwrap();
    assert_eq!(r.submitted.len(), 1);
    assert_eq!(r.submitted[0].1, "c");
    // b fails once: RETRY 1 resubmits it; d waits for both.
    complete(&mut q, b, 3, t(9));
    let r = tick(&mut q, t(10)).unwrap();
    assert_eq!(r.submitted.len(), 1);
    assert_eq!(r.submitted[0].1, "b");
    let b2 = job_of(&mut q, id, "b").unwrap();
    assert_ne!(b, b2);
    run(&mut q, b2, t(11));
    complete(&mut q, b2, 0, t(12));
    let c = job_of(&mut q, id, "c").unwrap();
    run(&mut q, c, t(12));
    assert!(tick(&mut q, t(13)).unwrap().submitted.is_empty());
    complete(&mut q, c, 0, t(14));
    let r = tick(&mut q, t(15)).unwrap();
    assert_eq!(r.submitted[0].1, "d");
    run_to_exit(&mut q, id, "d", 0, 16);
    let r = tick(&mut q, t(18)).unwrap();
    assert_eq!(r.finished, vec![(id, DagState::Done)]);
    let s = status_one(&mut q, id).unwrap().unwrap();
    assert_eq!(s.state, DagState::Done);
    let b = s.nodes.iter().find(|n| n.name == "b").unwrap();
    assert_eq!((b.failures, b.clusters.len()), (1, 2));
}

#[test]
fn failure_without_retries_fails_the_dag_and_makes_a_rescue() {
    let dir = tempfile::tempdir().unwrap();
    let mut q = open(dir.path());
    let id = submit_diamond(&mut q, dir.path());
    tick(&mut q, t(1)).unwrap();
    run_to_exit(&mut q, id, "a", 1, 2);
    let r = tick(&mut q, t(4)).unwrap();
    assert_eq!(r.finished, vec![(id, DagState::Failed)]);
    // The manager's step only makes the record; the service writes it (as
    // the owner) and records where.
    assert_eq!(r.rescues.len(), 1);
    let rf = &r.rescues[0];
    assert_eq!((rf.dag, rf.owner.as_str()), (id, "alice"));
    assert_eq!(rf.path, dir.path().join("x.dag.rescue"));
    record_rescue(&mut q, id, &rf.path.display().to_string()).unwrap();
    let s = status_one(&mut q, id).unwrap().unwrap();
    assert!(s.message.contains("a after 1 attempt"), "{}", s.message);
    assert_eq!(s.rescue_file, Some(rf.path.display().to_string()));
    let text = rf.text.clone();
    let r = Rescue::parse(&text).unwrap();
    assert_eq!(r.dag.as_deref(), Some(s.dag_file.as_str()));
    assert!(r.done.is_empty());
    assert_eq!(r.attempts.get("a"), Some(&1));
    // Nothing else was ever submitted.
    assert_eq!(q.list(&JobFilter::default()).unwrap().len(), 1);
}

#[test]
fn a_restarted_manager_continues_without_resubmitting() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let mut q = open(dir.path());
        let id = submit_diamond(&mut q, dir.path());
        tick(&mut q, t(1)).unwrap();
        run_to_exit(&mut q, id, "a", 0, 2);
        tick(&mut q, t(4)).unwrap();
        let b = job_of(&mut q, id, "b").unwrap();
        run(&mut q, b, t(5));
        id
    };
    // A new process: same database, fresh state.
    let mut q = open(dir.path());
    let r = tick(&mut q, t(6)).unwrap();
    // b's start is noticed now and releases its priority child c only.
    assert_eq!(r.submitted.len(), 1);
    assert_eq!(r.submitted[0].1, "c");
    assert!(tick(&mut q, t(7)).unwrap().submitted.is_empty());
    assert_eq!(q.list(&JobFilter::default()).unwrap().len(), 3);
    let st = statuses(&mut q, id);
    assert_eq!((st["a"].as_str(), st["b"].as_str()), ("done", "running"));
    assert_eq!(
        (st["c"].as_str(), st["d"].as_str()),
        ("submitted", "waiting")
    );
}

#[test]
fn remove_then_resubmit_the_rescue_skips_done_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut q = open(dir.path());
    let id = submit_diamond(&mut q, dir.path());
    tick(&mut q, t(1)).unwrap();
    run_to_exit(&mut q, id, "a", 0, 2);
    tick(&mut q, t(4)).unwrap();
    let b = job_of(&mut q, id, "b").unwrap();
    let (removed, rescue) = remove(&mut q, id, "alice", t(5)).unwrap();
    let rescue = rescue.unwrap();
    assert_eq!(rescue.path, dir.path().join("x.dag.rescue"));
    assert_eq!(removed, vec![(b, false)]);
    assert_eq!(
        q.get(b).unwrap().unwrap().state,
        JobState::Removed,
        "the unfinished job went with the DAG"
    );
    assert_eq!(
        status_one(&mut q, id).unwrap().unwrap().state,
        DagState::Removed
    );
    // The removed DAG is not ticked any more.
    assert!(tick(&mut q, t(6)).unwrap().submitted.is_empty());
    let text = rescue.text;
    let r = Rescue::parse(&text).unwrap();
    assert_eq!(r.done, BTreeSet::from(["a".to_string()]));
    let mut b2 = body(DIAMOND, dir.path());
    b2.rescue = Some(r);
    let resp = submit(&mut q, "alice", b2, t(7)).unwrap();
    assert_eq!(resp.done, 1);
    let r = tick(&mut q, t(8)).unwrap();
    assert_eq!(r.submitted.len(), 1);
    assert_eq!(r.submitted[0].1, "b", "a is not run again");
}

#[test]
fn bad_submissions_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut q = open(dir.path());
    let mut b = body(DIAMOND, dir.path());
    b.dag_text.push_str("PARENT d CHILD a\n");
    let e = submit(&mut q, "alice", b, t(0)).unwrap_err();
    let msg = e.message().to_string();
    assert!(msg.contains("x.dag:9: dependency cycle"), "{msg}");
    let mut b = body(DIAMOND, dir.path());
    b.nodes.pop();
    assert!(submit(&mut q, "alice", b, t(0)).is_err());
    let mut b = body(DIAMOND, dir.path());
    b.rescue = Some(Rescue::parse("DONE nope\n").unwrap());
    assert!(submit(&mut q, "alice", b, t(0)).is_err());
    assert!(status(&mut q, None).unwrap().is_empty());
    assert!(tick(&mut q, t(1)).unwrap().submitted.is_empty());
}
