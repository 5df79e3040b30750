//! A full disk is reported, not hidden (issue 14, item 5), with real
//! processes: a small tmpfs (root only; skipped otherwise) holds the
//! home's spool, or the user's directory, and the job writes more to
//! stdout than it holds.
//!
//! The run is not completed with part of its output: the job goes back to
//! its queue with "disk full at PATH", which its history shows; nothing
//! reaches the user's directory (not even a staging file); the only host
//! is not avoided for it (the home's `avoid_host_secs` stays at its
//! default of 30 minutes), so once space returns the job runs again there
//! and delivers its whole output.

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
    /// A tmpfs of `size` at `at`: the daemon's (0700), or `owner`'s (0755).
    fn mount(at: &Path, size: &str, owner: Option<(u32, u32)>) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let opts = match owner {
            None => format!("size={size},mode=0700"),
            Some((uid, gid)) => format!("size={size},mode=0755,uid={uid},gid={gid}"),
        };
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &opts, "tmpfs"])
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

/// A coordinator, a submit-only home `a` (lease 3 s) and a host `b`; the
/// job's owner and work directory; the client as the owner.
struct Env {
    _dir: tempfile::TempDir,
    coord: gleaner_coordinator::RunningCoordinator,
    a: gleaner_station::node::Running,
    b: gleaner_station::node::Running,
    client: StationClient,
    work: PathBuf,
    id: String,
    spool: PathBuf,
    /// The jobs' owner: removed with the environment.
    _alice: gleaner_testkit::TestOwner,
}

/// Starts the pool; `before` runs first with (the home's spool, the work
/// directory, the owner's uid and gid), to mount what it wants.
async fn start(before: impl FnOnce(&Path, &Path, (u32, u32)) -> Tmpfs) -> (Env, Tmpfs) {
    let dir = shared_tempdir();
    let root = dir.path().to_path_buf();
    let keys = pool_keys(&root);
    let coord = gleaner_coordinator::spawn_for_test(coordinator_config(&root))
        .await
        .unwrap();
    let coord_url = format!("http://{}", coord.addr());
    let mut a_cfg = pool_station(&root, &keys, &coord_url, "a", StationRole::SubmitOnly);
    a_cfg.lease_secs = 3.0;
    let spool = a_cfg.spool_dir();
    let (alice, work) = common::job_owner(&root);
    let owner = (alice.uid(), alice.gid());
    let fs = before(&spool, &work, owner);
    let (a_addr, a) = spawn_for_test(a_cfg).await.unwrap();
    let b_cfg = pool_station(&root, &keys, &coord_url, "b", StationRole::ExecuteOnly);
    let (_b_addr, b) = spawn_for_test(b_cfg).await.unwrap();
    std::fs::write(
        work.join("big.sh"),
        format!("#!/bin/sh\nhead -c {BYTES} /dev/zero | tr '\\0' x\necho\necho end\n"),
    )
    .unwrap();
    std::os::unix::fs::chown(work.join("big.sh"), Some(owner.0), Some(owner.1)).unwrap();
    let text = "executable = big.sh\noutput = out.txt\nqueue\n";
    let client = StationClient::new(format!("http://{a_addr}"), keys.user(alice.name())).unwrap();
    let id = submit(&client, text, &work).await.jobs[0].to_string();
    let env = Env {
        _dir: dir,
        coord,
        a,
        b,
        client,
        work,
        id,
        spool,
        _alice: alice,
    };
    (env, fs)
}

impl Env {
    /// Waits for the run to end for the full disk; returns the eviction's
    /// text. The job never completes or is held meanwhile.
    async fn wait_disk_full(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let d = self.client.job(&self.id).await.unwrap();
            if let Some(e) = d.events.iter().find(|e| e.kind == JobEventKind::Evicted) {
                return e.detail.clone();
            }
            assert!(
                !d.job.state.is_terminal() && !matches!(d.job.state, JobState::Held { .. }),
                "{d:#?}"
            );
            assert!(Instant::now() < deadline, "never evicted: {d:#?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The work directory's entries that are the output or staged for it.
    fn output_names(&self) -> Vec<String> {
        std::fs::read_dir(&self.work)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("out.txt"))
            .collect()
    }

    /// Nothing of the output in the work directory. A hidden staged file
    /// may be there for a moment: the requeued job runs again at once and
    /// its next completion stages again, then removes what it could not
    /// finish; none may be left at the end ([`Env::assert_completes_whole`]).
    fn assert_nothing_delivered(&self) {
        let names = self.output_names();
        assert!(
            names.iter().all(|n| n.starts_with(".out.txt.gleaner-")),
            "part of the output delivered: {names:?}"
        );
    }

    /// Waits for the job to complete on `b` with its whole output.
    async fn assert_completes_whole(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let d = loop {
            let d = self.client.job(&self.id).await.unwrap();
            if d.job.state.is_terminal() || matches!(d.job.state, JobState::Held { .. }) {
                break d;
            }
            assert!(Instant::now() < deadline, "never completed: {d:#?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(d.job.state, JobState::Completed { exit_code: 0 }, "{d:#?}");
        assert_eq!(d.job.host.as_deref(), Some("b"));
        let out = std::fs::read(self.work.join("out.txt")).unwrap();
        assert_eq!(out.len(), BYTES + 5, "whole output");
        assert!(out.ends_with(b"x\nend\n"));
        assert_eq!(self.output_names(), ["out.txt"], "nothing staged is left");
    }

    async fn stop(self) {
        self.a.stop().await;
        self.b.stop().await;
        self.coord.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_spool_keeps_the_job_queued_and_delivers_nothing_partial() {
    if gleaner_testkit::skip_unless_root("disk_full: mounts a tmpfs") {
        return;
    }
    let _serial = common::serial_lock();
    let (env, spool) = start(|spool, _, _| Tmpfs::mount(spool, "512k", None)).await;
    let why = env.wait_disk_full().await;
    assert!(
        why.contains(&format!("disk full at {}", env.spool.display())),
        "{why}"
    );
    env.assert_nothing_delivered();
    spool.resize("8m");
    env.assert_completes_whole().await;
    env.stop().await;
    drop(spool);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_output_directory_requeues_the_job_and_delivers_nothing() {
    if gleaner_testkit::skip_unless_root("disk_full: mounts a tmpfs") {
        return;
    }
    let _serial = common::serial_lock();
    let (env, work) = start(|_, work, owner| Tmpfs::mount(work, "512k", Some(owner))).await;
    let why = env.wait_disk_full().await;
    let want = format!("disk full at {}", env.work.join("out.txt").display());
    assert!(why.contains(&want), "{why}");
    env.assert_nothing_delivered();
    work.resize("8m");
    env.assert_completes_whole().await;
    env.stop().await;
    drop(work);
}
