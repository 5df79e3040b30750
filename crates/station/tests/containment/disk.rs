//! Disk (issue 30, finding 2): `request_disk` bounds the sandbox; a guest
//! that floods it is held at its request and its sandbox freed; after the
//! home removes a job the host stops it, deletes its sandbox at once and
//! never sends its output again, whether the removal reaches it or only
//! the home's 409.

use crate::harness::{Opts, Pool, mounts_below, runnable, wait, zombie_children};
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

/// Writes its sandbox full and keeps trying.
const FLOOD: &str = r#"#!/usr/bin/python3 -I
import os, time
chunk = b"x" * (1 << 20)
with open("flood", "wb", buffering=0) as f:
    while True:
        try:
            f.write(chunk)
        except OSError:
            time.sleep(0.01)
"#;

/// Prints 64 KiB every 10 ms until killed.
const CHATTY: &str = r#"#!/usr/bin/python3 -I
import sys, time
line = ("y" * 1023 + "\n") * 64
while True:
    sys.stdout.write(line)
    sys.stdout.flush()
    time.sleep(0.01)
"#;

/// Sleeps until killed.
const IDLE: &str = "#!/usr/bin/python3 -I\nimport time\nwhile True:\n    time.sleep(1)\n";

const MIB: u64 = 1 << 20;

/// Bytes the host's disk holds for `path` (a sparse image takes what was
/// written to it).
fn allocated(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.blocks() * 512)
}

/// Waits until `job`'s sandbox, its image and its mount are gone; how long
/// that took from `since`.
async fn sandbox_gone(pool: &Pool, guest_id: &str, since: Instant) -> Duration {
    let sandbox = pool.execute.join(guest_id);
    let image = pool.execute.join(format!("{guest_id}.disk"));
    wait("sandbox removed", async || {
        (!sandbox.exists() && !image.exists() && mounts_below(&sandbox).is_empty()).then_some(())
    })
    .await;
    since.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_is_held_at_its_request_disk_and_its_sandbox_freed() {
    if !runnable("runs guests as slot accounts") {
        return;
    }
    let _l = crate::common::serial_lock();
    let pool = Pool::start(
        "disk",
        Opts {
            slots: 3,
            default_disk_mb: 24,
            ..Default::default()
        },
    )
    .await;
    let (file_flood, stdout_flood, quiet) = (JobId::new(1, 0), JobId::new(2, 0), JobId::new(3, 0));
    let request_kib = 16 * 1024;
    pool.place(file_flood, "alice", FLOOD, &[], |d| {
        d.request_disk_kb = Some(request_kib)
    })
    .await;
    // `yes` on stdout: the capture file lives in the sandbox too.
    pool.place(stdout_flood, "alice", IDLE, &[], |d| {
        d.executable = "/usr/bin/yes".into();
        d.transfer_executable = false;
        d.request_disk_kb = Some(request_kib);
    })
    .await;
    // No request_disk: the station's default bound.
    pool.place(quiet, "bob", IDLE, &[], |_| {}).await;
    let g_quiet = pool.running(quiet).await;
    let bounded = crate::harness::mounts_below(&pool.execute.join(&g_quiet.guest_id));
    if bounded.is_empty() {
        println!("skipped the loop-mount checks: sandboxes are not loop-mounted here");
    } else {
        let image = pool.execute.join(format!("{}.disk", g_quiet.guest_id));
        let len = std::fs::metadata(&image).unwrap().len();
        assert!(
            (24 * MIB..=24 * MIB + 24 * MIB / 8 + 8 * MIB).contains(&len),
            "default image {len} bytes"
        );
    }
    let mut max_alloc = [0u64; 2];
    for (i, job) in [file_flood, stdout_flood].into_iter().enumerate() {
        // The flood may be over before the listing shows its pid: watch
        // its image from its first listing on.
        let mut image = None;
        let held = loop {
            if image.is_none() {
                image = pool
                    .guests()
                    .await
                    .into_iter()
                    .find(|g| g.info.job == job)
                    .map(|g| pool.execute.join(format!("{}.disk", g.guest_id)));
            }
            if let Some(p) = &image {
                max_alloc[i] = max_alloc[i].max(allocated(p));
            }
            if let Some(r) = pool.shadow.report(job, JobEventKind::Held) {
                break r;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let at = Instant::now();
        let run = held.run.clone().expect("the report names its run");
        let guest_id = format!("{}-{}-r{}-{}", run.home, run.job, run.run, run.nonce);
        println!(
            "{job}: {held:?}; image peaked at {} KiB",
            max_alloc[i] / 1024
        );
        assert_eq!(held.hold_code, Some(34), "JobOutOfResources");
        assert!(
            held.detail.contains("DiskUsage exceeded request_disk"),
            "{}",
            held.detail
        );
        assert!(matches!(held.state, JobState::Held { .. }));
        // Held at its request: the host's disk never gave it much more.
        if !bounded.is_empty() {
            let cap = request_kib * 1024 + request_kib * 1024 / 16 + 8 * MIB;
            assert!(max_alloc[i] <= cap, "{job}: {} > {cap}", max_alloc[i]);
        }
        assert!(pool.shadow.report(job, JobEventKind::Completed).is_none());
        let took = sandbox_gone(&pool, &guest_id, at).await;
        println!(
            "{job}: sandbox gone {} ms after the hold report",
            took.as_millis()
        );
        pool.gone(job).await;
    }
    // The stdout flood: what went home is bounded by the sandbox too.
    let sent = pool.shadow.output(stdout_flood, "stdout").len() as u64;
    println!("stdout sent home: {} KiB", sent / 1024);
    assert!(sent <= request_kib * 1024 + request_kib * 1024 / 16 + 8 * MIB);
    pool.vacate(quiet, "remove").await;
    pool.gone(quiet).await;
    assert!(mounts_below(&pool.execute).is_empty());
    assert_eq!(zombie_children(), vec![]);
    pool.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_rm_the_sandbox_goes_at_once_and_no_output_is_sent_again() {
    if !runnable("runs guests as slot accounts") {
        return;
    }
    let _l = crate::common::serial_lock();
    let pool = Pool::start("rm", Opts::default()).await;
    // 1. The home removes the job and tells the host (`glean rm`); from
    //    then on it answers 409 to the run's data, as a home does.
    // 2. The home removes the job, the vacate is lost: the 409 alone
    //    must stop the run.
    for (job, tell) in [(JobId::new(1, 0), true), (JobId::new(2, 0), false)] {
        pool.place(job, "alice", CHATTY, &[], |d| {
            d.request_disk_kb = Some(512 * 1024)
        })
        .await;
        let g = pool.running(job).await;
        wait("output flowing", async || {
            (pool.shadow.output(job, "stdout").len() > 256 * 1024).then_some(())
        })
        .await;
        let at = Instant::now();
        pool.shadow.refuse(job);
        if tell {
            pool.vacate(job, "remove").await;
        }
        let took = sandbox_gone(&pool, &g.guest_id, at).await;
        pool.gone(job).await;
        let gone_ms = at.elapsed().as_millis();
        println!(
            "{job} (vacate sent: {tell}): sandbox gone after {} ms, guest gone after {gone_ms} ms",
            took.as_millis()
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
        // Nothing is sent again: the refusals stop.
        let n = pool.shadow.refusals(job);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let later = pool.shadow.refusals(job);
        println!("{job}: {n} requests refused, {later} three seconds later");
        assert_eq!(n, later, "the host went on sending after the 409");
        assert!(n <= 8, "{n} requests after the removal");
        assert!(pool.shadow.report(job, JobEventKind::Completed).is_none());
    }
    assert!(mounts_below(&pool.execute).is_empty());
    assert_eq!(zombie_children(), vec![]);
    pool.stop().await;
}
