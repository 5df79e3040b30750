//! One run's outputs with real daemons (issue 14): the self-checkpointing
//! example job is held in the middle of a checkpoint interval and
//! released. The held run is over at once (its later output, and the
//! checkpoint it may take on the way out, are refused as a stale run's);
//! the next run resumes from the last stored checkpoint, and its stdout
//! continues from that checkpoint's length: the delivered output is
//! byte for byte an undisturbed run's, nothing doubled, nothing missing.
//! No staging file is left beside the outputs.

mod common;
mod fault_pool;
use fault_pool::*;
use gleaner_proto::job::JobState;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn held_mid_interval_and_released_resumes_without_duplicated_output() {
    let pool = Pool::start().await;
    let id = pool.submit().await;
    pool.running_host(&id).await;
    pool.wait_progress((EVERY + EVERY / 2) as usize).await;
    pool.client.hold(&id, Some("test")).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !matches!(
        pool.client.job(&id).await.unwrap().job.state,
        JobState::Held { .. }
    ) {
        assert!(Instant::now() < deadline, "never held\n{}", pool.logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let the held run's host stop it (and try to send more).
    tokio::time::sleep(Duration::from_secs(2)).await;
    pool.client.release(&id, None).await.unwrap();
    let d = pool.wait_done(&id).await;
    // Redone at most one interval; stdout exactly an undisturbed run's.
    pool.assert_outcome_within(&d, EVERY);
    assert!(d.job.run_count >= 2, "{:#?}", d.events);
    let staged: Vec<String> = std::fs::read_dir(&pool.work)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".gleaner-"))
        .collect();
    assert!(staged.is_empty(), "{staged:?}");
}
