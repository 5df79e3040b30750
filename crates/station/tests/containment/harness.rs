//! A station daemon in process with real cgroups and slot accounts, a tiny
//! home shadow that can refuse a job's data as a home does after `glean
//! rm` (409), and helpers to place guests and watch them.

use gleaner_proto::job::{JobDescription, JobEventKind, JobId};
use gleaner_proto::wire::{JobStatusReport, PlacementRequest, PlacementResponse};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::host::starter::GuestListing;
use gleaner_station::isolation::{
    CgroupConfig, CgroupLayout, CgroupManager, CgroupMode, CgroupSettings, DiskMode, Exposed,
    NamespaceMode, NetworkMode,
};
use gleaner_station::node::{Running, spawn_for_test};
use gleaner_testkit::TestKeys;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common;

pub const HOST: &str = "contain-host";
pub const PYTHON: &str = "/usr/bin/python3";
/// Idle guests on a machine busy with builds start slowly.
pub const PATIENCE: Duration = Duration::from_secs(300);

/// Whether this test can run here; prints why not.
pub fn runnable(what: &str) -> bool {
    if gleaner_testkit::skip_unless_root(what) {
        return false;
    }
    if !Path::new(PYTHON).exists() {
        println!("skipped: no {PYTHON} (the guests are Python scripts)");
        return false;
    }
    true
}

/// The station's `[isolation]` for one test.
pub struct Opts {
    pub slots: u32,
    pub namespaces: NamespaceMode,
    pub network: NetworkMode,
    pub expose: Vec<Exposed>,
    pub volumes: BTreeMap<String, Exposed>,
    pub default_disk_mb: u64,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            slots: 2,
            namespaces: NamespaceMode::Auto,
            network: NetworkMode::Auto,
            expose: Vec::new(),
            volumes: BTreeMap::new(),
            default_disk_mb: 64,
        }
    }
}

/// What the shadow saw, by job id (`"1.0"`).
#[derive(Default)]
pub struct Seen {
    pub inputs: HashMap<(String, String), Vec<u8>>,
    pub outputs: HashMap<(String, String), Vec<u8>>,
    pub files: HashMap<(String, String), Vec<u8>>,
    pub reports: Vec<JobStatusReport>,
    /// Jobs the home no longer runs (removed): their data gets 409.
    pub refused: HashSet<String>,
    /// Requests refused so, by job.
    pub refusals: HashMap<String, usize>,
}

#[derive(Clone, Default)]
pub struct Shadow {
    pub seen: Arc<Mutex<Seen>>,
    pub url: String,
}

mod shadow_routes {
    use super::*;
    use axum::Json;
    use axum::body::Bytes;
    use axum::extract::{Path, Query, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use gleaner_proto::wire::{ErrorBody, ErrorCode};

    /// What a home answers for a job it no longer runs.
    fn removed(s: &Shadow, job: &str) -> Option<Response> {
        let mut seen = s.seen.lock().unwrap();
        if !seen.refused.contains(job) {
            return None;
        }
        *seen.refusals.entry(job.to_string()).or_default() += 1;
        let body = ErrorBody::new(
            ErrorCode::Conflict,
            format!("job {job} is removed: not accepting output"),
        );
        Some((StatusCode::CONFLICT, Json(body)).into_response())
    }

    pub async fn input(
        State(s): State<Shadow>,
        Path((job, name)): Path<(String, String)>,
    ) -> (StatusCode, Vec<u8>) {
        match s.seen.lock().unwrap().inputs.get(&(job, name)) {
            Some(b) => (StatusCode::OK, b.clone()),
            None => (StatusCode::NOT_FOUND, Vec::new()),
        }
    }

    pub async fn output(
        State(s): State<Shadow>,
        Path((job, stream)): Path<(String, String)>,
        Query(q): Query<BTreeMap<String, String>>,
        body: Bytes,
    ) -> Response {
        if let Some(r) = removed(&s, &job) {
            return r;
        }
        let off: usize = q.get("offset").and_then(|o| o.parse().ok()).unwrap_or(0);
        let mut seen = s.seen.lock().unwrap();
        let buf = seen.outputs.entry((job, stream)).or_default();
        if off > buf.len() {
            let body = ErrorBody::new(ErrorCode::Conflict, "gap").with_field("offset");
            return (StatusCode::CONFLICT, Json(body)).into_response();
        }
        let end = off + body.len();
        if end > buf.len() {
            buf.resize(end, 0);
        }
        buf[off..end].copy_from_slice(&body);
        StatusCode::OK.into_response()
    }

    pub async fn file(
        State(s): State<Shadow>,
        Path((job, name)): Path<(String, String)>,
        body: Bytes,
    ) -> Response {
        if let Some(r) = removed(&s, &job) {
            return r;
        }
        s.seen
            .lock()
            .unwrap()
            .files
            .insert((job, name), body.to_vec());
        StatusCode::NO_CONTENT.into_response()
    }

    pub async fn status(
        State(s): State<Shadow>,
        Path(job): Path<String>,
        Json(r): Json<JobStatusReport>,
    ) -> Response {
        if let Some(r) = removed(&s, &job) {
            return r;
        }
        s.seen.lock().unwrap().reports.push(r);
        StatusCode::NO_CONTENT.into_response()
    }
}

impl Shadow {
    pub async fn start() -> Shadow {
        use axum::routing::{get, post, put};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let s = Shadow {
            url: format!("http://{}", l.local_addr().unwrap()),
            ..Default::default()
        };
        let app = axum::Router::new()
            .route("/v1/shadow/{job}/input/{name}", get(shadow_routes::input))
            .route(
                "/v1/shadow/{job}/output/{stream}",
                post(shadow_routes::output),
            )
            .route("/v1/shadow/{job}/files/{name}", put(shadow_routes::file))
            .route("/v1/jobs/{job}/status", post(shadow_routes::status))
            .with_state(s.clone());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        s
    }

    pub fn put_input(&self, job: JobId, name: &str, bytes: &[u8]) {
        self.seen
            .lock()
            .unwrap()
            .inputs
            .insert((job.to_string(), name.to_string()), bytes.to_vec());
    }

    /// From now on the job's data is refused as a home refuses a removed
    /// job's.
    pub fn refuse(&self, job: JobId) {
        self.seen.lock().unwrap().refused.insert(job.to_string());
    }

    pub fn refusals(&self, job: JobId) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.refusals.get(&job.to_string()).copied().unwrap_or(0)
    }

    pub fn report(&self, job: JobId, kind: JobEventKind) -> Option<JobStatusReport> {
        self.seen
            .lock()
            .unwrap()
            .reports
            .iter()
            .find(|r| r.job_id == job && r.event == kind)
            .cloned()
    }

    pub fn output(&self, job: JobId, stream: &str) -> Vec<u8> {
        self.seen
            .lock()
            .unwrap()
            .outputs
            .get(&(job.to_string(), stream.to_string()))
            .cloned()
            .unwrap_or_default()
    }
}

/// Removes the test's cgroup subtree (groups first) when dropped.
struct CgParent(Option<CgroupManager>);

impl Drop for CgParent {
    fn drop(&mut self) {
        let Some(m) = &self.0 else { return };
        for g in m.list().unwrap_or_default() {
            if let Ok(g) = m.open(&g) {
                let _ = g.kill();
                let _ = g.remove();
            }
        }
        let _ = m.remove_parent();
    }
}

/// A running station and its home's shadow.
pub struct Pool {
    pub addr: SocketAddr,
    pub keys: TestKeys,
    running: Option<Running>,
    pub http: reqwest::Client,
    pub state: PathBuf,
    pub execute: PathBuf,
    pub shadow: Shadow,
    cgroups: CgParent,
    _dir: tempfile::TempDir,
}

impl Pool {
    pub async fn start(name: &str, opts: Opts) -> Pool {
        // Outside /tmp: the host's own scratch places are not the test's.
        let dir = common::shared_tempdir_in("/var/lib");
        let root = dir.path().to_path_buf();
        let state = root.join("station");
        let keys = TestKeys::in_dir(&root.join("coord")).unwrap();
        let token_file = keys
            .station_token_file(HOST, &state.join("station.token"))
            .unwrap();
        let parent = format!("gleaner-test-{}-{name}", std::process::id());
        let cfg = StationConfig {
            name: HOST.into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            state_dir: state.clone(),
            public_key: keys.public_key(),
            token_file,
            role: StationRole::ExecuteOnly,
            placement_interval_secs: 0.0,
            cpus: Some(4),
            memory_mb: Some(2048),
            isolation: CgroupSettings {
                cgroups: CgroupMode::Auto,
                parent: parent.clone(),
                // A machine busy with builds would starve an idle subtree.
                parent_idle: false,
                slot_prefix: gleaner_testkit::slot_prefix(),
                slot_count: Some(opts.slots),
                namespaces: opts.namespaces,
                network: opts.network,
                expose: opts.expose,
                volumes: opts.volumes,
                disk: DiskMode::Auto,
                default_disk_mb: opts.default_disk_mb,
                ..Default::default()
            },
            ..Default::default()
        };
        let (addr, running) = spawn_for_test(cfg).await.unwrap();
        let cgroups = CgParent(CgroupLayout::detect().ok().and_then(|l| {
            let mut c = CgroupConfig::new(l);
            c.parent = parent.clone();
            CgroupManager::new(c).ok()
        }));
        Pool {
            addr,
            keys,
            running: Some(running),
            http: reqwest::Client::new(),
            execute: state.join("execute"),
            state,
            shadow: Shadow::start().await,
            cgroups,
            _dir: dir,
        }
    }

    pub fn token(&self) -> String {
        self.keys.station("home")
    }

    /// The cgroup manager of the test's subtree, if cgroups are on.
    pub fn cgroups(&self) -> Option<&CgroupManager> {
        self.cgroups.0.as_ref()
    }

    /// Places `script` (a Python program, the job's executable) for
    /// `owner`; `tweak` changes the description first.
    pub async fn place(
        &self,
        job: JobId,
        owner: &str,
        script: &str,
        args: &[&str],
        tweak: impl FnOnce(&mut JobDescription),
    ) -> PlacementResponse {
        let claim = self.keys.claim(HOST, "home", &self.shadow.url);
        let mut d = JobDescription::new(owner, "job.py");
        d.arguments = args.iter().map(|a| a.to_string()).collect();
        tweak(&mut d);
        self.shadow.put_input(job, "job.py", script.as_bytes());
        let req = PlacementRequest {
            protocol: gleaner_proto::wire::PROTOCOL_VERSION,
            job_id: job,
            home: "home".into(),
            claim_id: claim,
            description: d,
            shadow: self.shadow.url.clone(),
            checkpoint: None,
            run_count: 0,
            lease_secs: None,
            run: None,
            claim_seq: 0,
        };
        let r = common::place(&self.http, self.addr, &self.token(), &req).await;
        assert!(matches!(r, PlacementResponse::Accepted { .. }), "{r:?}");
        r
    }

    pub async fn guests(&self) -> Vec<GuestListing> {
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

    /// The guest of `job` once it runs (pid and uid known).
    pub async fn running(&self, job: JobId) -> GuestListing {
        wait(&format!("{job} running"), async || {
            self.guests()
                .await
                .into_iter()
                .find(|g| g.info.job == job && g.pid.is_some() && g.uid.is_some())
        })
        .await
    }

    /// Until no guest of `job` is listed and its report of `kind` came.
    pub async fn gone(&self, job: JobId) {
        wait(&format!("{job} gone"), async || {
            (!self.guests().await.iter().any(|g| g.info.job == job)).then_some(())
        })
        .await
    }

    /// `POST /v1/guests/{job}/vacate?kind=…` as the job's home.
    pub async fn vacate(&self, job: JobId, kind: &str) {
        let r = self
            .http
            .post(format!(
                "http://{}/v1/guests/{job}/vacate?kind={kind}",
                self.addr
            ))
            .bearer_auth(self.token())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
    }

    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
    }
}

/// Polls `f` until it gives a value, at most [`PATIENCE`].
pub async fn wait<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(t0.elapsed() < PATIENCE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits for `path` to exist.
pub async fn file(path: &Path) {
    wait(&format!("{}", path.display()), async || {
        path.exists().then_some(())
    })
    .await
}

/// The JSON a guest wrote to `path`.
pub async fn json_of(path: &Path) -> serde_json::Value {
    file(path).await;
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Zombie children of this process (the in-process station is its
/// guests' subreaper): pid and command.
pub fn zombie_children() -> Vec<(i32, String)> {
    let me = std::process::id() as i32;
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((name, rest)) = stat.split_once(") ") else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.first() == Some(&"Z") && f.get(1).and_then(|p| p.parse::<i32>().ok()) == Some(me) {
            v.push((pid, name.rsplit('(').next().unwrap_or("").to_string()));
        }
    }
    v
}

/// Mount points below `dir` in this process's mount namespace.
pub fn mounts_below(dir: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4).map(str::to_string))
        .filter(|m| Path::new(m).starts_with(dir))
        .collect()
}

/// The station's non-loopback IPv4 address (its "routable" address), if
/// it has one.
pub fn routable_address() -> Option<std::net::Ipv4Addr> {
    let out = std::process::Command::new("ip")
        .args(["-o", "-4", "addr", "show", "scope", "global"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let cidr = l.split_whitespace().skip_while(|w| *w != "inet").nth(1)?;
            cidr.split('/').next()?.parse().ok()
        })
        .next()
}
