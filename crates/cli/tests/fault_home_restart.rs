//! Fault injection with real processes: the home station daemon is killed
//! with SIGKILL mid-job and restarted. The job keeps running on its host;
//! the restarted home does not requeue it but re-attaches when the host's
//! next lease renewal arrives, and the output streamed before and after
//! the restart is complete.

mod common;
mod fault_pool;
use fault_pool::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn home_restart_reattaches_to_its_running_job() {
    let mut pool = Pool::start().await;
    let id = pool.submit().await;
    let host = pool.running_host(&id).await;
    pool.wait_progress(EVERY as usize + 3).await;
    pool.home.kill9();
    // Down for less than the lease.
    tokio::time::sleep(Duration::from_secs(1)).await;
    pool.home.restart();
    let d = pool.wait_done(&id).await;
    pool.assert_stayed_on(&d, &host);
}
