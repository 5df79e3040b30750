//! Periodic checkpoints on the station's timer (`checkpoint_interval`):
//! the example job never checkpoints by itself here; every second the
//! station sends the checkpoint signal, the job saves and exits with 85, its
//! state goes home and it is restarted in place. Its output is that of an
//! undisturbed run, and a vacate (preemption of the host) costs at most the
//! work since the last checkpoint because the vacate itself checkpoints.

mod common;
mod fault_pool;
use fault_pool::*;
use gleaner_proto::job::JobEventKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn station_timer_checkpoints_and_restarts_in_place() {
    let pool = Pool::start().await;
    let id = pool.submit_with(10_000, "checkpoint_interval = 1\n").await;
    let host = pool.running_host(&id).await;
    let d = pool.wait_done(&id).await;
    // No failure happened: nothing may be redone at all.
    pool.assert_outcome_within(&d, 0);
    assert_eq!(d.job.host.as_deref(), Some(host.as_str()));
    let n = Pool::count_events(&d, JobEventKind::Checkpointed);
    assert!(n >= 2, "only {n} checkpoints: {:#?}", d.events);
    assert_eq!(Pool::count_events(&d, JobEventKind::Evicted), 0);
}
