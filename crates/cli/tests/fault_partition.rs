//! Fault injection with real processes: the network between the home and
//! the executing station is cut (a TCP proxy the test controls sits in
//! front of the home's shadow).
//! - For less than the lease: the job carries on where it is, and output
//!   streaming resumes without loss.
//! - For more than the lease: the host kills its guest, the home requeues
//!   the job and restarts it elsewhere from its last checkpoint; the old run
//!   cannot report any more. Output identical, at most one interval lost.

mod common;
mod fault_pool;
use fault_pool::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn short_partition_is_ridden_out() {
    let pool = Pool::start().await;
    let id = pool.submit().await;
    let host = pool.running_host(&id).await;
    pool.wait_progress(EVERY as usize + 3).await;
    pool.proxy.cut(&host);
    tokio::time::sleep(Duration::from_millis(LEASE * 1000 / 2)).await;
    pool.proxy.heal(&host);
    let d = pool.wait_done(&id).await;
    pool.assert_stayed_on(&d, &host);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn long_partition_moves_the_job_from_its_last_checkpoint() {
    let pool = Pool::start().await;
    let id = pool.submit().await;
    let host = pool.running_host(&id).await;
    pool.wait_progress((EVERY + EVERY / 2) as usize).await;
    pool.proxy.cut(&host);
    // Well past the lease on both sides.
    tokio::time::sleep(Duration::from_secs(2 * LEASE + 1)).await;
    pool.proxy.heal(&host);
    let d = pool.wait_done(&id).await;
    pool.assert_moved_after_lease(&d, &host);
}
