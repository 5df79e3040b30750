//! The whole station daemon protecting its owner: activity comes from the
//! FILE source (`activity = { source = "file" }`, the test plays the owner
//! by writing `active`/`idle`), guests are real processes placed over HTTP,
//! and, when running as root, they live in real cgroups built from
//! `[isolation] cgroups = "auto"` (on the development machines: the hybrid
//! v1+v2 layout). The ladder must suspend, lower, resume and vacate exactly
//! as the station's policy says, and a guest must never run at normal
//! priority, whether the owner is active or not (issue 12: a lingering
//! guest is still `SCHED_IDLE` after the owner leaves).
//!
//! One more test runs the real owner watch (`activity = { source = "linux" }`
//! with the `file` activity source) so that the detector, not the test,
//! decides when the owner is back.
//!
//! A tiny in-test shadow serves the job's executable and records reports.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use gleaner_proto::job::{JobDescription, JobEventKind, JobId};
use gleaner_proto::wire::{JobStatusReport, PlacementRequest, PlacementResponse};
use gleaner_station::config::{ActivitySource, StationConfig, StationRole};
use gleaner_station::host::starter::GuestListing;
use gleaner_station::isolation::{
    CgroupConfig, CgroupLayout, CgroupManager, CgroupMode, CgroupSettings,
};
use gleaner_station::node::{Running, spawn_for_test};
use gleaner_testkit::TestKeys;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
use common::{
    alive, give_credentials, place, pool_keys, proc_stat as stat, serial_lock, serve,
    shared_tempdir,
};

const BUSY: &str = "#!/bin/sh\nwhile :; do :; done\n";
const HOST: &str = "owned-host";

#[derive(Default)]
struct Rec {
    reports: Vec<JobStatusReport>,
}
type Shared = Arc<Mutex<Rec>>;

async fn input(Path((_j, name)): Path<(String, String)>) -> (StatusCode, Vec<u8>) {
    if name == "job.sh" {
        (StatusCode::OK, BUSY.as_bytes().to_vec())
    } else {
        (StatusCode::NOT_FOUND, Vec::new())
    }
}

async fn output(_b: Bytes) -> StatusCode {
    StatusCode::OK
}

async fn file(_b: Bytes) -> StatusCode {
    StatusCode::NO_CONTENT
}

async fn status(State(s): State<Shared>, Json(r): Json<JobStatusReport>) -> StatusCode {
    s.lock().unwrap().reports.push(r);
    StatusCode::NO_CONTENT
}

async fn shadow(rec: Shared) -> String {
    let app = Router::new()
        .route("/v1/shadow/{job}/input/{name}", get(input))
        .route("/v1/shadow/{job}/output/{stream}", post(output))
        .route("/v1/shadow/{job}/files/{name}", put(file))
        .route("/v1/jobs/{job}/status", post(status))
        .with_state(rec);
    serve(app).await
}

struct Env {
    _dir: tempfile::TempDir,
    activity: PathBuf,
    keys: TestKeys,
    addr: SocketAddr,
    daemon: Option<Running>,
    rec: Shared,
    shadow: String,
    http: reqwest::Client,
    /// The guests' cgroups as the daemon made them (root only).
    cgroups: Option<CgroupManager>,
}

impl Env {
    async fn start(test: &str, policy: &str) -> Env {
        Self::start_with(test, policy, |_| {}).await
    }

    async fn start_with(test: &str, policy: &str, tweak: impl FnOnce(&mut StationConfig)) -> Env {
        // Guests run as slot accounts under root: let them reach their
        // sandbox.
        let dir = shared_tempdir();
        let keys = pool_keys(dir.path());
        let activity = dir.path().join("activity");
        let root = nix::unistd::geteuid().is_root();
        let parent = format!("gleaner-test-{}-daemon-{test}", std::process::id());
        let isolation = CgroupSettings {
            cgroups: if root {
                CgroupMode::Auto
            } else {
                CgroupMode::Off
            },
            parent: parent.clone(),
            // The machine may be busy with builds: an idle-class guest
            // subtree would get no CPU at all and hide whether a resume
            // worked. Owner protection is then per guest (cpu.idle on the
            // leaf plus SCHED_IDLE on its tasks), which is what we check.
            parent_idle: false,
            slot_prefix: gleaner_testkit::slot_prefix(),
            ..Default::default()
        };
        let mut cfg = StationConfig {
            name: HOST.into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            state_dir: dir.path().join("station"),
            role: StationRole::ExecuteOnly,
            placement_interval_secs: 0.0,
            cpus: Some(2),
            memory_mb: Some(2048),
            activity: ActivitySource::File {
                path: activity.clone(),
            },
            eviction_policy: policy.into(),
            isolation,
            ..Default::default()
        };
        give_credentials(&mut cfg, &keys, dir.path());
        // The real owner watch reads the same file through its FileSource.
        tweak(&mut cfg);
        if cfg.activity == ActivitySource::Linux {
            cfg.owner.activity_file = Some(activity.clone());
        }
        let (addr, daemon) = spawn_for_test(cfg).await.unwrap();
        let cgroups = root.then(|| {
            let mut c = CgroupConfig::new(CgroupLayout::detect().unwrap());
            c.parent = parent;
            c.parent_idle = false;
            CgroupManager::new(c).unwrap()
        });
        let rec: Shared = Arc::default();
        let shadow = shadow(rec.clone()).await;
        Env {
            _dir: dir,
            activity,
            keys,
            addr,
            daemon: Some(daemon),
            rec,
            shadow,
            http: reqwest::Client::new(),
            cgroups,
        }
    }

    fn token(&self) -> String {
        self.keys.station("home")
    }

    async fn place(&self, job: JobId) {
        let start = Instant::now();
        loop {
            match self.try_place(job).await {
                PlacementResponse::Accepted { .. } => return,
                r => assert!(start.elapsed() < Duration::from_secs(20), "{r:?}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn try_place(&self, job: JobId) -> PlacementResponse {
        let claim = self.keys.claim(HOST, "home", &self.shadow);
        let mut d = JobDescription::new("alice", "job.sh");
        d.transfer_output_files = None;
        d.request_memory_mb = Some(64);
        let req = PlacementRequest {
            protocol: gleaner_proto::wire::PROTOCOL_VERSION,
            job_id: job,
            home: "home".into(),
            claim_id: claim,
            description: d,
            shadow: self.shadow.clone(),
            checkpoint: None,
            run_count: 0,
            lease_secs: None,
            run: None,
            claim_seq: 0,
        };
        place(&self.http, self.addr, &self.token(), &req).await
    }

    async fn guests(&self) -> Vec<GuestListing> {
        self.http
            .get(format!("http://{}/v1/guests", self.addr))
            .bearer_auth(self.token())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Waits for the guest's pid and cgroup name.
    async fn guest(&self) -> (i32, String) {
        let start = Instant::now();
        loop {
            if let Some(g) = self.guests().await.into_iter().next()
                && let Some(pid) = g.pid
            {
                return (pid as i32, g.guest_id);
            }
            assert!(start.elapsed() < Duration::from_secs(20), "no guest pid");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the (only) guest's ladder is in `state`.
    async fn wait_state(&self, state: &str) {
        let start = Instant::now();
        loop {
            let now = self.guests().await.first().map(|g| g.state.clone());
            if now.as_deref() == Some(state) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "guest never {state}: {now:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The owner sits down (or leaves): rewrite the FILE source.
    fn owner(&self, active: bool) {
        let tmp = self.activity.with_extension("tmp");
        std::fs::write(&tmp, if active { "active\n" } else { "idle\n" }).unwrap();
        std::fs::rename(&tmp, &self.activity).unwrap();
    }

    fn event(&self, kind: JobEventKind) -> bool {
        self.rec
            .lock()
            .unwrap()
            .reports
            .iter()
            .any(|r| r.event == kind)
    }

    fn frozen(&self, guest: &str) -> Option<bool> {
        let m = self.cgroups.as_ref()?;
        m.open(guest).ok()?.is_frozen().ok()
    }

    /// Vacates every guest (the daemon's stop leaves guests to the
    /// runtime's teardown), stops the daemon and removes the test's cgroups.
    async fn stop(mut self) {
        for g in self.guests().await {
            let _ = self
                .http
                .post(format!(
                    "http://{}/v1/guests/{}/vacate",
                    self.addr, g.info.job
                ))
                .bearer_auth(self.token())
                .send()
                .await;
        }
        let start = Instant::now();
        while !self.guests().await.is_empty() && start.elapsed() < Duration::from_secs(15) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(d) = self.daemon.take() {
            d.stop().await;
        }
        if let Some(m) = &self.cgroups {
            // Guests are gone by now; the parent is the test's to remove.
            for _ in 0..100 {
                if m.list().unwrap_or_default().is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let _ = m.remove_parent();
        }
    }
}

async fn until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// While the owner is active the guest may be stopped/frozen or at idle
/// priority, never running at normal priority. Checked for `dur`.
async fn never_normal_while_active(env: &Env, pid: i32, guest: &str, dur: Duration) {
    let start = Instant::now();
    while start.elapsed() < dur {
        let Some((_, policy, state)) = stat(pid) else {
            return; // gone: evicted
        };
        let stopped = state == 'T' || env.frozen(guest) == Some(true);
        assert!(
            stopped || policy == libc::SCHED_IDLE as u32,
            "guest {pid} at policy {policy}, state {state} while the owner is active"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Guest CPU ticks gained over `d`.
async fn progress(pid: i32, d: Duration) -> u64 {
    let a = stat(pid).map_or(0, |s| s.0);
    tokio::time::sleep(d).await;
    stat(pid).map_or(0, |s| s.0).saturating_sub(a)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn condor1988_suspends_on_activity_and_resumes_when_idle() {
    let _l = serial_lock();
    let env = Env::start("condor", "condor1988").await;
    env.place(JobId::new(1, 0)).await;
    let (pid, guest) = env.guest().await;
    if let Some(m) = &env.cgroups {
        // The guest lives in its cgroup on every hierarchy.
        let g = m.open(&guest).unwrap();
        assert!(g.pids().unwrap().contains(&pid), "guest not in its cgroup");
    }
    until("guest running", Duration::from_secs(10), || {
        stat(pid).is_some_and(|s| s.0 > 0)
    })
    .await;

    let t0 = Instant::now();
    env.owner(true);
    until("guest suspended", Duration::from_secs(10), || {
        env.frozen(&guest) == Some(true) || stat(pid).is_some_and(|s| s.2 == 'T')
    })
    .await;
    eprintln!("activity file → guest stopped: {:?}", t0.elapsed());
    until("suspended report", Duration::from_secs(10), || {
        env.event(JobEventKind::Suspended)
    })
    .await;
    never_normal_while_active(&env, pid, &guest, Duration::from_millis(500)).await;
    assert_eq!(progress(pid, Duration::from_millis(500)).await, 0);
    assert!(alive(pid), "suspension must not kill (grace is 5 min)");

    env.owner(false);
    until("resumed report", Duration::from_secs(10), || {
        env.event(JobEventKind::Resumed)
    })
    .await;
    assert_ne!(env.frozen(&guest), Some(true));
    let start = Instant::now();
    while progress(pid, Duration::from_millis(300)).await == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "guest made no progress after resume"
        );
    }
    env.stop().await;
    assert!(!alive(pid), "vacated guest left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linger_longer_lowers_priority_never_normal_while_active() {
    let _l = serial_lock();
    let env = Env::start("ll", "linger_longer").await;
    env.place(JobId::new(2, 0)).await;
    let (pid, guest) = env.guest().await;
    // Idle priority from the start, the owner away or not (issue 12).
    until("guest running", Duration::from_secs(10), || alive(pid)).await;
    assert_eq!(stat(pid).map(|s| s.1), Some(libc::SCHED_IDLE as u32));

    env.owner(true);
    env.wait_state("lingering").await;
    // Lingering: still running (not frozen), at SCHED_IDLE, for as long as
    // we look (T_lingr is minutes with the default migration cost).
    never_normal_while_active(&env, pid, &guest, Duration::from_secs(1)).await;
    assert_ne!(
        env.frozen(&guest),
        Some(true),
        "lingering guests keep running"
    );
    assert!(alive(pid));
    if let Some(m) = &env.cgroups
        && let Some((root, v2)) = m.controller_root(gleaner_station::isolation::Controller::Cpu)
    {
        let dir = root.join(format!("gleaner-test-{}-daemon-ll", std::process::id()));
        let leaf = dir.join(&guest);
        let idle = std::fs::read_to_string(leaf.join("cpu.idle")).unwrap_or_default();
        assert_eq!(idle.trim(), "1", "cpu.idle on the guest's group (v2 {v2})");
        // The station's memory bound on the guests' subtree, and the job's
        // own bound on its group.
        if let Some((mroot, false)) =
            m.controller_root(gleaner_station::isolation::Controller::Memory)
        {
            let p = mroot.join(dir.file_name().unwrap());
            let lim: u64 = std::fs::read_to_string(p.join("memory.limit_in_bytes"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(lim, 2560 << 20);
            let lim: u64 = std::fs::read_to_string(p.join(&guest).join("memory.limit_in_bytes"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(lim, 80 << 20);
        }
    }

    // The owner leaves: the lingering guest runs on, never at normal
    // priority (issue 12: idle at all times, not only while the owner is
    // active).
    env.owner(false);
    env.wait_state("running").await;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        assert_eq!(
            stat(pid).map(|s| s.1),
            Some(libc::SCHED_IDLE as u32),
            "a guest at normal priority after the owner left"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if let Some(m) = &env.cgroups {
        let g = m.open(&guest).unwrap();
        assert!(g.pids().unwrap().contains(&pid));
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immediate_eviction_vacates_and_kills_the_whole_guest() {
    let _l = serial_lock();
    let env = Env::start("ie", "immediate_eviction").await;
    env.place(JobId::new(3, 0)).await;
    let (pid, guest) = env.guest().await;
    until("guest running", Duration::from_secs(10), || alive(pid)).await;
    let t0 = Instant::now();
    env.owner(true);
    until("guest killed", Duration::from_secs(10), || !alive(pid)).await;
    eprintln!("activity file → guest killed: {:?}", t0.elapsed());
    until("evicted report", Duration::from_secs(10), || {
        env.event(JobEventKind::Evicted)
    })
    .await;
    let start = Instant::now();
    while !env.guests().await.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "guest still listed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if let Some(m) = &env.cgroups {
        let start = Instant::now();
        while m.list().unwrap().contains(&guest) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "guest cgroup left behind"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linux_owner_watch_detector_drives_the_ladder() {
    use gleaner_station::host::owner_watch::SourceKind;
    let _l = serial_lock();
    let env = Env::start_with("linux", "condor1988", |c| {
        c.activity = ActivitySource::Linux;
        c.owner.sources = vec![SourceKind::File];
        // Short periods so the detector's idle wait passes in the test.
        c.owner.idle_wait_secs = Some(0.5);
        c.owner.sample_period_na_secs = Some(0.2);
        c.owner.sample_period_av_secs = Some(0.2);
    })
    .await;
    // The detector starts NA (Mutka 1988 L353): placement waits for AV.
    env.place(JobId::new(4, 0)).await;
    let (pid, guest) = env.guest().await;
    until("guest running", Duration::from_secs(10), || {
        stat(pid).is_some_and(|s| s.0 > 0)
    })
    .await;
    // One `active` line: the FileSource wakes the watch, the detector's
    // on_activity makes the station NA, the ladder suspends.
    std::fs::write(&env.activity, "active\n").unwrap();
    until("guest suspended", Duration::from_secs(10), || {
        env.frozen(&guest) == Some(true) || stat(pid).is_some_and(|s| s.2 == 'T')
    })
    .await;
    never_normal_while_active(&env, pid, &guest, Duration::from_millis(200)).await;
    // No more input: after the idle wait the detector says AV again.
    until("resumed report", Duration::from_secs(15), || {
        env.event(JobEventKind::Resumed)
    })
    .await;
    env.stop().await;
    assert!(!alive(pid), "vacated guest left behind");
}
