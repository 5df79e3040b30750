//! Held or removed guests are reaped (issue 30, finding 7): the station
//! (in this process, its guests' subreaper) has no zombie child after a
//! guest in its own PID namespace is held or removed, which kills its
//! waiter and its first process at once.

use crate::harness::{Opts, Pool, runnable, wait, zombie_children};
use gleaner_proto::job::JobId;
use std::time::Duration;

/// A job with a child, so that its namespace holds more than one process.
const GUEST: &str = r#"#!/usr/bin/python3 -I
import subprocess, time
subprocess.Popen(["sleep", "600"])
open("ready", "w").close()
while True:
    time.sleep(1)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn held_and_removed_guests_leave_no_zombie() {
    if !runnable("runs guests as slot accounts in namespaces") {
        return;
    }
    let _l = crate::common::serial_lock();
    let pool = Pool::start("zombies", Opts::default()).await;
    for (n, kind) in [(1, "hold"), (2, "remove"), (3, "hold"), (4, "remove")] {
        let job = JobId::new(n, 0);
        pool.place(job, "alice", GUEST, &[], |_| {}).await;
        let g = pool.running(job).await;
        crate::harness::file(&pool.execute.join(&g.guest_id).join("ready")).await;
        pool.vacate(job, kind).await;
        pool.gone(job).await;
        // The kill is over when the guest leaves the listing; a zombie
        // would stay.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let z = zombie_children();
        println!("after {kind} of {job}: zombies {z:?}");
        assert_eq!(z, vec![], "{kind} left a zombie");
        assert!(
            wait("uid free", async || {
                gleaner_station::isolation::processes_of_uid(g.uid.unwrap())
                    .is_empty()
                    .then_some(true)
            })
            .await
        );
    }
    pool.stop().await;
}
