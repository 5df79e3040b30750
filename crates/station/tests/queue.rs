//! The durable job queue: submit, lookups, transitions, history, FIFO,
//! concurrent readers.

use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobEventKind, JobId, JobState, JobStateKind};
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_station::queue::{JobFilter, JobQueue, QueueError, SCHEMA_VERSION};
use std::path::PathBuf;

fn t(s: u64) -> Time {
    Time::from_secs(s)
}

fn temp_queue() -> (tempfile::TempDir, PathBuf, JobQueue) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("queue.db");
    let q = JobQueue::open(&path).unwrap();
    (dir, path, q)
}

fn submit_n(q: &mut JobQueue, owner: &str, n: usize, at: Time) -> Vec<JobId> {
    q.submit_with(at, |cluster| {
        Ok((0..n)
            .map(|i| {
                let mut d = JobDescription::new(owner, "/bin/work");
                d.arguments = vec![cluster.to_string(), i.to_string()];
                d
            })
            .collect())
    })
    .unwrap()
}

#[test]
fn submit_parsed_file_assigns_clusters_and_expands() {
    let (_d, _p, mut q) = temp_queue();
    let sub = parse_submit(
        "executable = /bin/sim\narguments = $(Cluster) $(Process)\nqueue 3\n",
        &SubmitContext::new("sim.sub", "alice"),
    )
    .unwrap();
    let ids = q.submit(&sub, t(10)).unwrap();
    assert_eq!(
        ids,
        vec![JobId::new(1, 0), JobId::new(1, 1), JobId::new(1, 2)]
    );
    let ids2 = q.submit(&sub, t(11)).unwrap();
    assert_eq!(ids2[0], JobId::new(2, 0));

    let j = q.get(JobId::new(2, 1)).unwrap().unwrap();
    assert_eq!(j.owner, "alice");
    assert_eq!(j.description.arguments, vec!["2", "1"]);
    assert_eq!(j.state, JobState::Idle);
    assert_eq!(j.submitted_at, t(11));
    assert_eq!(j.run_count, 0);
    assert!(q.get(JobId::new(9, 0)).unwrap().is_none());

    let ev = q.events(JobId::new(1, 0)).unwrap();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].kind, JobEventKind::Submitted);
    assert_eq!(ev[0].at, t(10));
}

#[test]
fn failed_build_consumes_nothing() {
    let (_d, _p, mut q) = temp_queue();
    let err = q
        .submit_with(t(1), |_| Err(QueueError::EmptySubmission))
        .unwrap_err();
    assert!(matches!(err, QueueError::EmptySubmission));
    assert!(matches!(
        q.submit_with(t(1), |_| Ok(vec![])),
        Err(QueueError::EmptySubmission)
    ));
    // The cluster id was not used up.
    assert_eq!(submit_n(&mut q, "a", 1, t(2)), vec![JobId::new(1, 0)]);
    assert_eq!(q.list(&JobFilter::default()).unwrap().len(), 1);
}

#[test]
fn cluster_ids_survive_reopen_and_removal() {
    let (_d, path, mut q) = temp_queue();
    let ids = submit_n(&mut q, "a", 1, t(1));
    q.transition(ids[0], JobState::Removed, "rm", t(2)).unwrap();
    drop(q);
    let mut q = JobQueue::open(&path).unwrap();
    assert_eq!(submit_n(&mut q, "a", 1, t(3)), vec![JobId::new(2, 0)]);
    assert_eq!(q.integrity_check().unwrap(), Ok(()));
}

#[test]
fn full_lifecycle_records_history() {
    let (_d, _p, mut q) = temp_queue();
    let id = submit_n(&mut q, "bob", 1, t(0))[0];
    q.annotate(id, JobEventKind::Placed, "ws3", t(1)).unwrap();
    let r = q.transition(id, JobState::Running, "", t(2)).unwrap();
    assert_eq!(r.run_count, 1);
    assert_eq!(r.started_at, Some(t(2)));
    assert_eq!(r.host.as_deref(), Some("ws3"));
    q.transition(id, JobState::Suspended, "owner active", t(3))
        .unwrap();
    q.transition(id, JobState::Running, "", t(4)).unwrap();
    q.annotate(id, JobEventKind::Checkpointed, "ckpt 1", t(5))
        .unwrap();
    q.transition(id, JobState::Idle, "vacated after 5 min NA", t(6))
        .unwrap();
    q.annotate(id, JobEventKind::Placed, "ws4", t(7)).unwrap();
    let r = q.transition(id, JobState::Running, "", t(8)).unwrap();
    assert_eq!(r.run_count, 2);
    q.transition(
        id,
        JobState::Held {
            reason: "input missing".into(),
        },
        "",
        t(9),
    )
    .unwrap();
    let held = q.get(id).unwrap().unwrap();
    assert_eq!(
        held.state,
        JobState::Held {
            reason: "input missing".into()
        }
    );
    q.transition(id, JobState::Idle, "released by bob", t(10))
        .unwrap();
    q.transition(id, JobState::Running, "", t(11)).unwrap();
    let done = q
        .transition(id, JobState::Completed { exit_code: 3 }, "", t(12))
        .unwrap();
    assert_eq!(done.state, JobState::Completed { exit_code: 3 });
    assert_eq!(done.finished_at, Some(t(12)));
    assert_eq!(done.host.as_deref(), Some("ws4"));

    let kinds: Vec<JobEventKind> = q.events(id).unwrap().iter().map(|e| e.kind).collect();
    use JobEventKind::*;
    assert_eq!(
        kinds,
        vec![
            Submitted,
            Placed,
            Started,
            Suspended,
            Resumed,
            Checkpointed,
            Evicted,
            Placed,
            Started,
            Held,
            Released,
            Started,
            Completed
        ]
    );
    let ev = q.events(id).unwrap();
    assert!(ev.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(ev[6].detail, "vacated after 5 min NA");
}

#[test]
fn illegal_transitions_change_nothing() {
    let (_d, _p, mut q) = temp_queue();
    let id = submit_n(&mut q, "a", 1, t(0))[0];
    q.transition(id, JobState::Running, "", t(1)).unwrap();
    q.transition(id, JobState::Completed { exit_code: 0 }, "", t(2))
        .unwrap();
    let before = q.get(id).unwrap().unwrap();
    let events_before = q.events(id).unwrap();
    for to in [
        JobState::Removed,
        JobState::Idle,
        JobState::Running,
        JobState::Held { reason: "x".into() },
        JobState::Completed { exit_code: 1 },
    ] {
        let err = q.transition(id, to, "nope", t(99)).unwrap_err();
        assert!(
            matches!(err, QueueError::IllegalTransition { job, .. } if job == id),
            "{err}"
        );
    }
    assert_eq!(q.get(id).unwrap().unwrap(), before);
    assert_eq!(q.events(id).unwrap(), events_before);

    // Idle -> Completed and Held -> Running are not allowed either.
    let id2 = submit_n(&mut q, "a", 1, t(0))[0];
    assert!(
        q.transition(id2, JobState::Completed { exit_code: 0 }, "", t(1))
            .is_err()
    );
    q.transition(id2, JobState::Held { reason: "r".into() }, "", t(1))
        .unwrap();
    assert!(q.transition(id2, JobState::Running, "", t(2)).is_err());
    assert!(
        q.transition(
            id2,
            JobState::Held {
                reason: "again".into()
            },
            "",
            t(2)
        )
        .is_err()
    );
    assert_eq!(
        q.get(id2).unwrap().unwrap().state.kind(),
        JobStateKind::Held
    );

    assert!(matches!(
        q.transition(JobId::new(77, 0), JobState::Removed, "", t(1)),
        Err(QueueError::NotFound(_))
    ));
    assert!(matches!(
        q.annotate(id2, JobEventKind::Started, "", t(1)),
        Err(QueueError::NotAnAnnotation(_))
    ));
    assert!(matches!(
        q.annotate(JobId::new(77, 0), JobEventKind::Placed, "h", t(1)),
        Err(QueueError::NotFound(_))
    ));
}

#[test]
fn a_batch_transition_changes_the_legal_ones_and_leaves_the_rest_untouched() {
    let (_d, _p, mut q) = temp_queue();
    let ids = submit_n(&mut q, "a", 4, t(0));
    q.transition(ids[1], JobState::Running, "", t(1)).unwrap();
    q.transition(ids[2], JobState::Running, "", t(1)).unwrap();
    q.transition(ids[2], JobState::Completed { exit_code: 0 }, "", t(2))
        .unwrap();
    let done_before = q.get(ids[2]).unwrap().unwrap();
    let done_events = q.events(ids[2]).unwrap();
    let mut asked = ids.clone();
    asked.push(JobId::new(77, 0));
    let out = q
        .transition_many(&asked, &JobState::Removed, "removed by a", t(5))
        .unwrap();
    assert_eq!(out.len(), 5);
    // Each outcome names the state the job left.
    assert_eq!(out[0].as_ref().unwrap(), &JobState::Idle);
    assert_eq!(out[1].as_ref().unwrap(), &JobState::Running);
    assert!(matches!(out[2], Err(QueueError::IllegalTransition { job, .. }) if job == ids[2]));
    assert_eq!(out[3].as_ref().unwrap(), &JobState::Idle);
    assert!(matches!(out[4], Err(QueueError::NotFound(_))));
    for &i in [ids[0], ids[1], ids[3]].iter() {
        let r = q.get(i).unwrap().unwrap();
        assert_eq!(r.state, JobState::Removed);
        assert_eq!(r.finished_at, Some(t(5)));
        let last = q.events(i).unwrap().pop().unwrap();
        assert_eq!(last.kind, JobEventKind::Removed);
        assert_eq!(last.detail, "removed by a");
    }
    assert_eq!(q.get(ids[2]).unwrap().unwrap(), done_before);
    assert_eq!(q.events(ids[2]).unwrap(), done_events);
}

#[test]
fn list_filters_history_and_fifo() {
    let (_d, _p, mut q) = temp_queue();
    let a = submit_n(&mut q, "alice", 3, t(1));
    let b = submit_n(&mut q, "bob", 2, t(2));
    let c = submit_n(&mut q, "alice", 1, t(3));

    assert_eq!(q.list(&JobFilter::default()).unwrap().len(), 6);
    assert_eq!(q.list(&JobFilter::owner("alice")).unwrap().len(), 4);
    let filter = JobFilter {
        cluster: Some(b[0].cluster),
        ..Default::default()
    };
    assert_eq!(q.list(&filter).unwrap().len(), 2);

    q.transition(a[0], JobState::Running, "", t(4)).unwrap();
    q.transition(a[0], JobState::Completed { exit_code: 0 }, "", t(5))
        .unwrap();
    q.transition(b[1], JobState::Removed, "by bob", t(6))
        .unwrap();
    q.transition(a[1], JobState::Running, "", t(7)).unwrap();

    let running = q.list(&JobFilter::state(JobStateKind::Running)).unwrap();
    assert_eq!(running.iter().map(|j| j.id).collect::<Vec<_>>(), vec![a[1]]);

    let idle: Vec<JobId> = q.next_idle_jobs(10).unwrap().iter().map(|j| j.id).collect();
    assert_eq!(idle, vec![a[2], b[0], c[0]]);
    let two: Vec<JobId> = q.next_idle_jobs(2).unwrap().iter().map(|j| j.id).collect();
    assert_eq!(two, vec![a[2], b[0]]);

    let hist: Vec<JobId> = q.history(None).unwrap().iter().map(|j| j.id).collect();
    assert_eq!(hist, vec![b[1], a[0]]);
    let hist_alice: Vec<JobId> = q
        .history(Some("alice"))
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(hist_alice, vec![a[0]]);

    let counts = q.count_by_state().unwrap();
    assert!(counts.contains(&(JobStateKind::Idle, 3)));
    assert!(counts.contains(&(JobStateKind::Running, 1)));
}

#[test]
fn higher_priority_jobs_go_first() {
    let (_d, _p, mut q) = temp_queue();
    let low = submit_n(&mut q, "a", 1, t(1));
    let high = q
        .submit_with(t(2), |_| {
            let mut d = JobDescription::new("a", "/bin/urgent");
            d.priority = 10;
            Ok(vec![d])
        })
        .unwrap();
    let order: Vec<JobId> = q.next_idle_jobs(5).unwrap().iter().map(|j| j.id).collect();
    assert_eq!(order, vec![high[0], low[0]]);
}

#[test]
fn events_are_append_only_at_the_sql_level() {
    let (_d, path, mut q) = temp_queue();
    submit_n(&mut q, "a", 1, t(1));
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert!(conn.execute("UPDATE events SET detail = 'x'", []).is_err());
    assert!(conn.execute("DELETE FROM events", []).is_err());
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn concurrent_readers_see_whole_clusters() {
    const PROCS: usize = 4;
    const CLUSTERS: usize = 60;
    let (_d, path, mut q) = temp_queue();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let path = path.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let r = JobQueue::open_read_only(&path).unwrap();
                let mut seen = 0;
                let mut max = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let jobs = r.list(&JobFilter::default()).unwrap();
                    // A cluster is inserted in one transaction: never partial.
                    assert_eq!(jobs.len() % PROCS, 0, "saw a partial cluster");
                    assert!(jobs.len() >= max, "a reader went back in time");
                    max = jobs.len();
                    seen += 1;
                }
                seen
            })
        })
        .collect();
    for i in 0..CLUSTERS {
        submit_n(&mut q, "w", PROCS, t(i as u64));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(
        q.list(&JobFilter::default()).unwrap().len(),
        PROCS * CLUSTERS
    );
}

#[test]
fn two_writers_get_distinct_clusters() {
    let (_d, path, _q) = temp_queue();
    let handles: Vec<_> = (0..2)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut q = JobQueue::open(&path).unwrap();
                (0..25)
                    .map(|i| submit_n(&mut q, &format!("w{w}"), 2, t(i))[0].cluster)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (1..=50).collect::<Vec<u64>>());
}

#[test]
fn expansion_failure_at_submit_stores_nothing() {
    let (_d, _p, mut q) = temp_queue();
    // Valid for the probe cluster id used during parsing (exit code 21) but
    // not once the real id reaches 60 (exit code 260).
    let sub = parse_submit(
        "executable = x\ncheckpoint_exit_code = 2$(Cluster)\nqueue 2\n",
        &SubmitContext::new("odd.sub", "alice"),
    )
    .unwrap();
    for _ in 1..60 {
        submit_n(&mut q, "filler", 1, t(1));
    }
    let before = q.list(&JobFilter::default()).unwrap().len();
    let err = q.submit(&sub, t(2)).unwrap_err();
    assert!(matches!(err, QueueError::Submit(_)), "{err}");
    assert!(err.to_string().starts_with("odd.sub:2: "), "{err}");
    assert_eq!(q.list(&JobFilter::default()).unwrap().len(), before);
    // The id was not consumed.
    assert_eq!(submit_n(&mut q, "a", 1, t(3))[0], JobId::new(60, 0));
}

#[test]
fn running_jobs_lists_only_jobs_holding_a_host() {
    let (_d, _p, mut q) = temp_queue();
    let ids = submit_n(&mut q, "a", 4, t(1));
    assert!(q.running_jobs().unwrap().is_empty());
    q.transition(ids[0], JobState::Running, "", t(2)).unwrap();
    q.annotate(ids[0], JobEventKind::Placed, "hostA", t(2))
        .unwrap();
    q.transition(ids[2], JobState::Running, "", t(2)).unwrap();
    q.transition(ids[2], JobState::Suspended, "owner active", t(3))
        .unwrap();
    q.transition(ids[3], JobState::Running, "", t(2)).unwrap();
    q.transition(ids[3], JobState::Completed { exit_code: 0 }, "", t(4))
        .unwrap();
    assert_eq!(
        q.running_jobs().unwrap(),
        vec![(ids[0], Some("hostA".to_string())), (ids[2], None)]
    );
}

#[test]
fn placements_keep_the_host_address_across_a_reopen() {
    let (_d, path, mut q) = temp_queue();
    let ids = submit_n(&mut q, "a", 2, t(1));
    q.transition(ids[0], JobState::Running, "", t(2)).unwrap();
    q.record_placement(ids[0], "hostA", "http://a:9620", "claim-a", t(2))
        .unwrap();
    q.transition(ids[1], JobState::Running, "", t(2)).unwrap();
    q.annotate(ids[1], JobEventKind::Placed, "hostB", t(2))
        .unwrap();
    drop(q);
    let q = JobQueue::open(&path).unwrap();
    let running = q.running_placements().unwrap();
    assert_eq!(running.len(), 2);
    assert_eq!(
        (
            running[0].host.as_deref(),
            running[0].host_address.as_deref()
        ),
        (Some("hostA"), Some("http://a:9620"))
    );
    assert_eq!(running[0].host_claim.as_deref(), Some("claim-a"));
    // A placement recorded without an address has none.
    assert_eq!(running[1].host.as_deref(), Some("hostB"));
    assert_eq!(running[1].host_address, None);
    let events = q.events(ids[0]).unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.kind == JobEventKind::Placed && e.detail == "hostA")
    );
}

#[test]
fn a_schema_1_queue_is_migrated_and_keeps_its_jobs() {
    let (_d, path, mut q) = temp_queue();
    let ids = submit_n(&mut q, "a", 1, t(1));
    q.transition(ids[0], JobState::Running, "", t(2)).unwrap();
    q.annotate(ids[0], JobEventKind::Placed, "hostA", t(2))
        .unwrap();
    drop(q);
    // Turn the file back into what a schema-1 daemon wrote.
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "ALTER TABLE jobs DROP COLUMN host_address; ALTER TABLE jobs DROP COLUMN host_claim; \
             ALTER TABLE jobs DROP COLUMN run_id; ALTER TABLE jobs DROP COLUMN publishing; \
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    // Readers that never write still read it as it is.
    let ro = JobQueue::open_read_only(&path).unwrap();
    assert_eq!(
        ro.get(ids[0]).unwrap().unwrap().host.as_deref(),
        Some("hostA")
    );
    drop(ro);
    let mut q = JobQueue::open(&path).unwrap();
    let running = q.running_placements().unwrap();
    assert_eq!(running[0].host.as_deref(), Some("hostA"));
    assert_eq!(running[0].host_address, None);
    q.record_placement(ids[0], "hostB", "http://b", "claim-b", t(3))
        .unwrap();
    assert_eq!(
        q.running_placements().unwrap()[0].host_address.as_deref(),
        Some("http://b")
    );
    assert_eq!(
        q.running_placements().unwrap()[0].host_claim.as_deref(),
        Some("claim-b")
    );
    drop(q);
    let c = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = c
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
    // A newer schema is refused, not misread.
    let newer = SCHEMA_VERSION + 1;
    c.execute_batch(&format!("PRAGMA user_version = {newer};"))
        .unwrap();
    drop(c);
    assert!(matches!(
        JobQueue::open(&path),
        Err(QueueError::SchemaTooNew { found }) if found == newer
    ));
}

/// Schema 4: the job's current run survives a reopen, a schema-3 queue
/// gains the column (its jobs have no named run), and a retired run is
/// an empty one.
#[test]
fn a_schema_3_queue_gains_the_current_run() {
    let (_d, path, mut q) = temp_queue();
    let ids = submit_n(&mut q, "a", 2, t(1));
    q.transition(ids[0], JobState::Running, "", t(2)).unwrap();
    q.record_placement(ids[0], "hostA", "http://a", "claim-a", t(2))
        .unwrap();
    drop(q);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("ALTER TABLE jobs DROP COLUMN run_id; PRAGMA user_version = 3;")
            .unwrap();
    }
    let mut q = JobQueue::open(&path).unwrap();
    assert_eq!(q.current_run(ids[0]).unwrap(), None);
    assert_eq!(q.running_placements().unwrap()[0].run_id, None);
    q.record_placement_run(
        ids[0],
        "hostB",
        "http://b",
        "claim-b",
        Some("h/1.0/r2/ab"),
        t(3),
    )
    .unwrap();
    drop(q);
    let mut q = JobQueue::open(&path).unwrap();
    assert_eq!(
        q.current_run(ids[0]).unwrap().as_deref(),
        Some("h/1.0/r2/ab")
    );
    assert_eq!(
        q.running_placements().unwrap()[0].run_id.as_deref(),
        Some("h/1.0/r2/ab")
    );
    q.retire_run(ids[0]).unwrap();
    assert_eq!(q.current_run(ids[0]).unwrap().as_deref(), Some(""));
    assert_eq!(q.current_run(ids[1]).unwrap(), None);
    assert!(matches!(
        q.current_run(JobId::new(99, 0)),
        Err(QueueError::NotFound(_))
    ));
}

#[test]
fn a_schema_7_queue_gains_class_keys_for_the_jobs_that_can_still_run() {
    use gleaner_proto::matchmaking::JobClass;
    let (_d, path, mut q) = temp_queue();
    let ids = submit_n(&mut q, "a", 3, t(1));
    q.transition(ids[0], JobState::Removed, "", t(2)).unwrap();
    drop(q);
    let key_of = |c: &rusqlite::Connection, id: JobId| -> Option<String> {
        c.query_row(
            "SELECT class_key FROM jobs WHERE cluster = ?1 AND proc = ?2",
            rusqlite::params![id.cluster as i64, id.proc],
            |r| r.get(0),
        )
        .unwrap()
    };
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        let stored = key_of(&c, ids[1]).unwrap();
        let d = JobQueue::open(&path).unwrap().get(ids[1]).unwrap().unwrap();
        assert_eq!(stored, JobClass::of(&d.description).key, "stored at submit");
        c.execute_batch(
            "DROP INDEX jobs_by_class; DROP INDEX jobs_in_order; \
             DROP INDEX jobs_by_owner_class; \
             CREATE INDEX jobs_by_owner ON jobs (owner, state); \
             ALTER TABLE jobs DROP COLUMN class_key; \
             DELETE FROM meta WHERE key = 'class_key_version'; \
             CREATE INDEX jobs_by_state ON jobs (state, priority, cluster, proc); \
             PRAGMA user_version = 7;",
        )
        .unwrap();
    }
    let q = JobQueue::open(&path).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        key_of(&c, ids[0]),
        None,
        "a removed job is never matched again"
    );
    let key = key_of(&c, ids[1]).unwrap();
    assert_eq!(key_of(&c, ids[2]).as_deref(), Some(key.as_str()));
    assert_eq!(
        q.matchable_idle_ids_of_class(&key, 0, 10, t(5)).unwrap(),
        vec![ids[1], ids[2]]
    );
    assert_eq!(
        q.matchable_idle_ids_of_class(&key, 1, 10, t(5)).unwrap(),
        vec![ids[2]]
    );
    assert!(
        q.matchable_idle_ids_of_class("other", 0, 10, t(5))
            .unwrap()
            .is_empty()
    );
    let old: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'jobs_by_state'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old, 0, "the unordered index is gone");
}

#[test]
fn newest_events_of_a_job_are_its_last_ones_oldest_first_with_the_count() {
    let (_d, _p, mut q) = temp_queue();
    let ids = submit_n(&mut q, "alice", 2, t(1));
    for k in 0..20u64 {
        q.annotate(
            ids[0],
            JobEventKind::Checkpointed,
            &format!("ck {k}"),
            t(10 + k),
        )
        .unwrap();
    }
    q.annotate(ids[1], JobEventKind::Placed, "ws9", t(50))
        .unwrap();
    let (ev, total) = q.newest_events_of(ids[0], 8).unwrap();
    // Submitted plus 20 checkpoints; the newest 8, oldest first.
    assert_eq!(total, 21);
    let details: Vec<&str> = ev.iter().map(|e| e.detail.as_str()).collect();
    assert_eq!(
        details,
        (12..20).map(|k| format!("ck {k}")).collect::<Vec<_>>()
    );
    assert!(ev.iter().all(|e| e.owner == "alice" && e.job == ids[0]));
    let (ev, total) = q.newest_events_of(ids[1], 8).unwrap();
    assert_eq!(total, 2);
    let kinds: Vec<JobEventKind> = ev.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [JobEventKind::Submitted, JobEventKind::Placed]);
    assert_eq!(q.newest_events_of(JobId::new(99, 0), 8).unwrap().1, 0);
}
