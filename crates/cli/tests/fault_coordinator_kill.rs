//! Fault injection with real processes: the coordinator is killed with
//! SIGKILL mid-job and restarted. It rebuilds its view from the stations'
//! advertisements; the running job is not disturbed (no eviction, same
//! host) and completes with the output of an undisturbed run.

mod common;
mod fault_pool;
use fault_pool::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn coordinator_restart_does_not_disturb_running_jobs() {
    let mut pool = Pool::start().await;
    let id = pool.submit().await;
    let host = pool.running_host(&id).await;
    pool.wait_progress(EVERY as usize + 3).await;
    pool.coord.kill9();
    tokio::time::sleep(Duration::from_secs(2)).await;
    pool.coord.restart();
    let d = pool.wait_done(&id).await;
    pool.assert_stayed_on(&d, &host);
}
