//! Helpers shared by the station's real-process test files. Each test file
//! that says `mod common;` compiles its own copy and uses only part of it.
#![allow(dead_code)]

pub mod shadow;

use gleaner_coordinator::CoordinatorConfig;
use gleaner_proto::api::SubmitBody;
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::{PROTOCOL_VERSION, PlacementRequest, PlacementResponse, SubmitResponse};
use gleaner_station::client::StationClient;
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::isolation::{CgroupMode, CgroupSettings};
use gleaner_testkit::{TestKeys, TestOwner};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Real-process tests run one at a time, also across test processes
/// (nextest runs each test in its own process): they measure CPU shares, and
/// our own busy loops would be the noisiest neighbour. `flock` on a shared
/// file; released when the file closes, even if the test process dies.
pub fn serial_lock() -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/gleaner-station-real-tests.lock")
        .unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    f
}

/// A temporary directory guests can traverse: under root they run as slot
/// accounts of their own and must reach their sandboxes below it.
pub fn shared_tempdir() -> tempfile::TempDir {
    shared_tempdir_in(std::env::temp_dir())
}

/// The same below `parent`.
pub fn shared_tempdir_in(parent: impl AsRef<std::path::Path>) -> tempfile::TempDir {
    let dir = tempfile::tempdir_in(parent).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Files removed on drop, whether or not they exist.
pub struct RemoveFiles(pub Vec<std::path::PathBuf>);

impl Drop for RemoveFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The test pool's keys: the signing key in the coordinator's state
/// directory `root/coord` (a coordinator started there keeps it), and
/// `pool.pub` beside it.
pub fn pool_keys(root: &Path) -> TestKeys {
    TestKeys::in_dir(&root.join("coord")).unwrap()
}

/// Points `config` at the pool's public key and a token of its own
/// (station `config.name`, in `root/tokens/`).
pub fn give_credentials(config: &mut StationConfig, keys: &TestKeys, root: &Path) {
    config.public_key = keys.public_key();
    config.token_file = keys
        .station_token_file(
            &config.name,
            &root.join("tokens").join(format!("{}.token", config.name)),
        )
        .unwrap();
}

/// A coordinator that schedules often and starts at once, state (and the
/// keys of [`pool_keys`]) under `root/coord`.
pub fn coordinator_config(root: &Path) -> CoordinatorConfig {
    CoordinatorConfig {
        state_dir: root.join("coord"),
        scheduling_interval_secs: 0.2,
        advertise_period_secs: 1,
        startup_grace_secs: Some(0.0),
        ..Default::default()
    }
}

/// The `[isolation]` of a test station: slot accounts of its own (a
/// prefix of this test process's, removed when it exits, see
/// `gleaner_testkit::slot_prefix`), so that stations of parallel tests
/// never share slots; no cgroups, since every station of a test process
/// would otherwise share one cgroup parent (tests about cgroups set a
/// parent of their own).
pub fn test_isolation() -> CgroupSettings {
    CgroupSettings {
        cgroups: CgroupMode::Off,
        slot_prefix: gleaner_testkit::slot_prefix(),
        ..Default::default()
    }
}

/// A station of the test pool on loopback, state under `root/<name>`, that
/// advertises every second and places at once.
pub fn pool_station(
    root: &Path,
    keys: &TestKeys,
    coordinator: &str,
    name: &str,
    role: StationRole,
) -> StationConfig {
    let mut config = StationConfig {
        name: name.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        state_dir: root.join(name),
        coordinator: coordinator.into(),
        role,
        advertise_secs: 1,
        placement_interval_secs: 0.0,
        isolation: test_isolation(),
        ..Default::default()
    };
    give_credentials(&mut config, keys, root);
    config
}

/// The owner of a test's jobs (a real account under root, see
/// [`TestOwner`]) and its submit directory `root/work` (owned by it,
/// reachable by it).
pub fn job_owner(root: &Path) -> (TestOwner, PathBuf) {
    let owner = TestOwner::new("alice").unwrap();
    let work = root.join("work");
    owner.dir(&work).unwrap();
    (owner, work)
}

/// Submits a submit file's text from the submit directory `work` (the
/// owner is whoever the client's token names).
pub async fn submit(client: &StationClient, text: &str, work: &Path) -> SubmitResponse {
    let sub = parse_submit(text, &SubmitContext::new("job.sub", "owner")).unwrap();
    client
        .submit(&SubmitBody {
            protocol: PROTOCOL_VERSION,
            submission: sub,
            submit_dir: Some(work.to_string_lossy().into_owned()),
        })
        .await
        .unwrap()
}

/// Seconds since the Unix epoch, for claim tickets.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Posts a placement to a station's `/v1/place` with a station token (the
/// placing home's).
pub async fn place(
    http: &reqwest::Client,
    station: SocketAddr,
    token: &str,
    req: &PlacementRequest,
) -> PlacementResponse {
    http.post(format!("http://{station}/v1/place"))
        .bearer_auth(token)
        .json(req)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Serves `app` on a free loopback port; its base URL.
pub async fn serve(app: axum::Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

/// (utime + stime ticks, scheduling policy, state letter) of a process.
pub fn proc_stat(pid: i32) -> Option<(u64, u32, char)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields counted from 3 (state): utime 14, stime 15, policy 41.
    let state = f.first()?.chars().next()?;
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((ticks, f.get(38)?.parse().ok()?, state))
}

/// A zombie still has /proc; state Z counts as gone.
pub fn alive(pid: i32) -> bool {
    proc_stat(pid).is_some_and(|(_, _, s)| s != 'Z')
}

/// The run of job `job` (of home `home`) that station `host` runs now, as
/// its id (`home/job/rN/nonce`), read back from the guest's sandbox name
/// (`home-job-rN-nonce`) in the host's guest listing. Waits up to 30 s.
pub async fn run_on(host: SocketAddr, admin: &str, home: &str, job: &str) -> String {
    let client =
        gleaner_station::client::StationClient::new(format!("http://{host}"), admin).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let guests: Vec<gleaner_station::host::starter::GuestListing> =
            client.get_json("/v1/guests").await.unwrap_or_default();
        if let Some(g) = guests.iter().find(|g| g.info.job.to_string() == job)
            && let Some(rest) = g.guest_id.strip_prefix(&format!("{home}-{job}-r"))
            && let Some((n, nonce)) = rest.split_once('-')
        {
            return format!("{home}/{job}/r{n}/{nonce}");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no guest for {job} on {host}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Writes `text` at `path` as a file of `owner` (uid, gid): a job owner's
/// script, input or staged output.
pub fn write_owned(path: &Path, text: &str, owner: (u32, u32)) {
    std::fs::write(path, text).unwrap();
    std::os::unix::fs::chown(path, Some(owner.0), Some(owner.1)).unwrap();
}
