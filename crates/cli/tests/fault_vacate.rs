//! Migration with real processes: the host is asked to vacate the job in
//! the middle of a checkpoint interval. The job gets the checkpoint signal,
//! saves and exits with 85; its state goes home; the job is requeued and
//! placed on the other station (the evicting one is avoided), which
//! restores it. Nothing is redone: the vacate itself checkpointed.

mod common;
mod fault_pool;
use fault_pool::*;
use gleaner_proto::job::JobEventKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vacate_checkpoints_requeues_and_restores_elsewhere() {
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
    // The job's own checkpoints, plus the one taken on the way out.
    assert!(Pool::count_events(&d, JobEventKind::Checkpointed) >= 2);
}
