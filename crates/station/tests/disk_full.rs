//! A full disk is reported, not hidden (issue 14, item 5), with real
//! processes: the home's spool is a small tmpfs (root only; skipped
//! otherwise) and the job writes more to stdout than it holds.
//!
//! The run is not completed with part of its output: the host sends the
//! job back to its queue with "disk full at <spool path>", which the job's
//! history shows; nothing reaches the user's directory; the only host is
//! not avoided for it (the home's `avoid_host_secs` stays at its default
//! of 30 minutes), so once space returns the job runs again there and
//! delivers its whole output.

use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_station::client::StationClient;
use gleaner_station::config::StationRole;
use gleaner_station::node::spawn_for_test;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{coordinator_config, pool_keys, pool_station, shared_tempdir, submit};

/// Bytes of `x` the job prints (then a newline and "end").
const BYTES: usize = 800_000;

/// A tmpfs mounted for the test; unmounted on drop, even on failure.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot mount a tmpfs at {}", at.display());
        Tmpfs(at.to_path_buf())
    }

    fn resize(&self, size: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot resize the tmpfs");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_spool_keeps_the_job_queued_and_delivers_nothing_partial() {
    if gleaner_testkit::skip_unless_root("disk_full: mounts a tmpfs") {
        return;
    }
    let _serial = common::serial_lock();
    let dir = shared_tempdir();
    let root = dir.path();
    let keys = pool_keys(root);
    let coord = gleaner_coordinator::spawn_for_test(coordinator_config(root))
        .await
        .unwrap();
    let coord_url = format!("http://{}", coord.addr());
    let mut a_cfg = pool_station(root, &keys, &coord_url, "a", StationRole::SubmitOnly);
    a_cfg.lease_secs = 3.0;
    let spool = Tmpfs::mount(&a_cfg.spool_dir(), "512k");
    let (a_addr, a) = spawn_for_test(a_cfg).await.unwrap();
    let b_cfg = pool_station(root, &keys, &coord_url, "b", StationRole::ExecuteOnly);
    let (_b_addr, b) = spawn_for_test(b_cfg).await.unwrap();

    let (alice, work) = common::job_owner(root);
    std::fs::write(
        work.join("big.sh"),
        format!("#!/bin/sh\nhead -c {BYTES} /dev/zero | tr '\\0' x\necho\necho end\n"),
    )
    .unwrap();
    let text = "executable = big.sh\noutput = out.txt\nlog = job.log\nqueue\n";
    let client = StationClient::new(format!("http://{a_addr}"), keys.user(alice.name())).unwrap();
    let id = submit(&client, text, &work).await.jobs[0].to_string();

    // The run ends for the full spool: back in the queue, said plainly.
    let deadline = Instant::now() + Duration::from_secs(120);
    let evicted = loop {
        let d = client.job(&id).await.unwrap();
        if let Some(e) = d.events.iter().find(|e| e.kind == JobEventKind::Evicted) {
            break (e.detail.clone(), d);
        }
        assert!(
            !d.job.state.is_terminal() && !matches!(d.job.state, JobState::Held { .. }),
            "{d:#?}"
        );
        assert!(Instant::now() < deadline, "never evicted: {d:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let want = format!("disk full at {}", spool.0.display());
    assert!(evicted.0.contains(&want), "{:#?}", evicted.1.events);
    let d = client.job(&id).await.unwrap();
    assert!(
        matches!(d.job.state, JobState::Idle | JobState::Running),
        "{d:#?}"
    );
    assert!(
        !work.join("out.txt").exists(),
        "part of the output delivered"
    );

    // Space returns: the job runs again on the same host and delivers all.
    spool.resize("8m");
    let deadline = Instant::now() + Duration::from_secs(120);
    let d = loop {
        let d = client.job(&id).await.unwrap();
        if d.job.state.is_terminal() || matches!(d.job.state, JobState::Held { .. }) {
            break d;
        }
        assert!(Instant::now() < deadline, "never completed: {d:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(d.job.state, JobState::Completed { exit_code: 0 }, "{d:#?}");
    assert_eq!(d.job.host.as_deref(), Some("b"));
    let out = std::fs::read(work.join("out.txt")).unwrap();
    assert_eq!(out.len(), BYTES + 5, "whole output");
    assert!(out.ends_with(b"x\nend\n"));

    a.stop().await;
    b.stop().await;
    coord.stop().await.unwrap();
    drop(spool);
}
