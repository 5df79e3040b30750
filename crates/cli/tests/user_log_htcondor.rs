//! HTCondor's own reader follows a Gleaner job: a job with `log = job.log`
//! is submitted, runs, checkpoints by itself, is vacated (checkpointing on
//! the way out), resumes from its checkpoint on the other station and
//! exits; `htcondor2.JobEventLog` (PyPI `htcondor`) then reads job.log and
//! must see submit → execute → checkpointed → evicted (checkpointed) →
//! execute → terminated, with the job's id and exit code. Skipped (with a
//! message) when python3 cannot import `htcondor2`, unless
//! `GLEANER_REQUIRE_ORACLE=1`.

mod common;
mod fault_pool;
use fault_pool::*;
use gleaner_proto::job::{JobEventKind, JobState};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn htcondor_reads_the_log_of_an_evicted_checkpointed_resumed_job() {
    let pool = Pool::start().await;
    let id = pool.submit().await;
    let host = pool.running_host(&id).await;
    pool.wait_progress((EVERY + EVERY / 2) as usize).await;
    let status = pool.vacate(&host, &id).await;
    assert!(status.contains("202"), "{status}");
    let d = pool.wait_done(&id).await;
    pool.assert_outcome_within(&d, 0);
    let other = if host == "x1" { "x2" } else { "x1" };
    assert_eq!(d.job.host.as_deref(), Some(other), "{:#?}", d.events);
    assert_eq!(Pool::count_events(&d, JobEventKind::Evicted), 1);
    let JobState::Completed { exit_code } = d.job.state else {
        panic!("not completed: {:?}", d.job.state);
    };

    let log = pool.work.join("job.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let Some(events) = gleaner_testkit::htcondor_user_log(&log) else {
        return;
    };
    let ctx = format!("{events:#?}\n--- job.log ---\n{text}");
    // Every event is this job's.
    for e in &events {
        assert_eq!(e["cluster"], d.job.id.cluster, "{ctx}");
        assert_eq!(e["proc"], d.job.id.proc, "{ctx}");
    }
    let types: Vec<u64> = events.iter().map(|e| e["type"].as_u64().unwrap()).collect();
    // HTCondor's numbers: 0 submit, 1 execute, 3 checkpointed, 4 evicted,
    // 5 terminated.
    assert_eq!(types.first(), Some(&0), "{ctx}");
    assert_eq!(types.get(1), Some(&1), "{ctx}");
    assert_eq!(events[1]["ad"]["ExecuteHost"], host.as_str(), "{ctx}");
    let evicted: Vec<usize> = (0..types.len()).filter(|&i| types[i] == 4).collect();
    assert_eq!(evicted.len(), 1, "one eviction: {ctx}");
    let ev = evicted[0];
    assert!(
        types[2..ev].iter().all(|&t| t == 3) && ev > 2,
        "checkpoints between execute and eviction: {ctx}"
    );
    assert_eq!(events[ev]["ad"]["Checkpointed"], true, "{ctx}");
    // Resumed on the other station, from the checkpoint.
    let resumed = ev + 1;
    assert_eq!(types.get(resumed), Some(&1), "{ctx}");
    assert_eq!(events[resumed]["ad"]["ExecuteHost"], other, "{ctx}");
    assert!(
        types[resumed + 1..types.len() - 1].iter().all(|&t| t == 3),
        "only checkpoints until the end: {ctx}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], 5, "{ctx}");
    assert_eq!(last["ad"]["TerminatedNormally"], true, "{ctx}");
    assert_eq!(last["ad"]["ReturnValue"], exit_code, "{ctx}");
    // Times never go backwards.
    let times: Vec<u64> = events
        .iter()
        .map(|e| e["timestamp"].as_u64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{ctx}");
}
