//! Fault injection with real processes: the executing station is killed
//! with SIGKILL in the middle of a self-checkpointing job. After the lease
//! the home requeues the job, places it on the other station (never the one
//! that failed it, DMW resource feedback), which restores the last
//! checkpoint: the output is identical to an undisturbed run and at most
//! one checkpoint interval of work is redone.

mod common;
mod fault_pool;
use fault_pool::*;
use gleaner_proto::job::JobEventKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_of_the_executing_station_loses_at_most_one_interval() {
    let mut pool = Pool::start().await;
    let id = pool.submit().await;
    let host = pool.running_host(&id).await;
    // Past at least two checkpoints, in the middle of an interval.
    pool.wait_progress((2 * EVERY + EVERY / 2) as usize).await;
    pool.hosts.get_mut(&host).unwrap().kill9();
    let d = pool.wait_done(&id).await;
    pool.assert_moved_after_lease(&d, &host);
    assert!(Pool::count_events(&d, JobEventKind::Checkpointed) >= 2);
    // Work was redone once, by at most one interval (checked above).
    assert!(!redone_steps(&pool.progress()).is_empty());
}
