//! A pool of real `glean` processes for the fault-injection tests: a
//! coordinator, a submit-only home station and two execute-only stations
//! (or more: [`Pool::start_hosts`]).
//! The hosts reach the home's shadow through a TCP proxy the test controls
//! (per host: connections are told apart by the starter's user agent), so
//! the network between home and one host can be cut and restored.
//!
//! The job is the repository's self-checkpointing example
//! (`examples/jobs/selfckpt.sh`); its progress log (outside the sandbox)
//! shows every step executed, so the work redone after a failure can be
//! measured.
#![allow(dead_code)]

use crate::common::{TestKeys, TestOwner, free_port, glean_bin, kill9, socket_line, stop_term};
use gleaner_proto::api::SubmitBody;
use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::client::StationClient;
use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Steps of the test job, steps between its own checkpoints, seconds a step.
pub const STEPS: u32 = 80;
pub const EVERY: u32 = 10;
pub const STEP_SECS: &str = "0.05";
/// Lease between home and hosts, seconds.
pub const LEASE: u64 = 3;

/// Fault tests run one at a time (real processes on a small machine).
pub fn serial_lock() -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/gleaner-fault-tests.lock")
        .unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc_flock(f.as_raw_fd()) }, 0);
    f
}

unsafe extern "C" {
    fn flock(fd: i32, op: i32) -> i32;
}
unsafe fn libc_flock(fd: i32) -> i32 {
    // LOCK_EX = 2
    unsafe { flock(fd, 2) }
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// A TCP proxy in front of the home station; `cut(tag)` drops every
/// connection whose first request carries `gleaner-starter/<tag>` and
/// refuses new ones until `heal(tag)`.
#[derive(Clone, Default)]
pub struct Proxy {
    cut: Arc<Mutex<HashSet<String>>>,
    conns: Arc<Mutex<Vec<(String, tokio::task::AbortHandle)>>>,
}

impl Proxy {
    pub async fn start(target: u16) -> (Self, u16) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let p = Proxy::default();
        let me = p.clone();
        tokio::spawn(async move {
            loop {
                let Ok((inbound, _)) = l.accept().await else {
                    continue;
                };
                let me2 = me.clone();
                tokio::spawn(async move { me2.serve(inbound, target).await });
            }
        });
        (p, port)
    }

    async fn serve(&self, mut inbound: TcpStream, target: u16) {
        // Read the first request's headers to learn who is calling.
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
            match inbound.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let tag = text
            .split("gleaner-starter/")
            .nth(1)
            .and_then(|r| r.split(['\r', '\n']).next())
            .unwrap_or("")
            .trim()
            .to_string();
        if self.cut.lock().unwrap().contains(&tag) {
            return;
        }
        let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
            return;
        };
        if outbound.write_all(&head).await.is_err() {
            return;
        }
        let task = tokio::spawn(async move {
            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
        });
        self.conns.lock().unwrap().push((tag, task.abort_handle()));
        let _ = task.await;
    }

    pub fn cut(&self, tag: &str) {
        self.cut.lock().unwrap().insert(tag.to_string());
        let mut c = self.conns.lock().unwrap();
        c.retain(|(t, h)| {
            if t == tag {
                h.abort();
                false
            } else {
                !h.is_finished()
            }
        });
    }

    pub fn heal(&self, tag: &str) {
        self.cut.lock().unwrap().remove(tag);
    }
}

pub struct Daemon {
    pub name: String,
    /// Base URL (stations).
    pub url: String,
    pub config: PathBuf,
    pub log: PathBuf,
    child: Option<Child>,
    is_coordinator: bool,
}

impl Daemon {
    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let sub = if self.is_coordinator {
            "coordinator"
        } else {
            "station"
        };
        let child = Command::new(glean_bin())
            .args([sub, "--config"])
            .arg(&self.config)
            .env("GLEAN_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// SIGKILL, no chance to clean up.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            kill9(&mut c);
        }
    }

    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_term(&mut c);
        }
    }
}

pub struct Pool {
    pub dir: tempfile::TempDir,
    pub coord: Daemon,
    pub home: Daemon,
    pub hosts: HashMap<String, Daemon>,
    pub proxy: Proxy,
    pub home_url: String,
    pub client: StationClient,
    pub work: PathBuf,
    pub keys: TestKeys,
    /// The account the jobs belong to.
    pub owner: TestOwner,
    _lock: std::fs::File,
}

impl Pool {
    pub async fn start() -> Pool {
        Pool::start_with("").await
    }

    /// A pool whose execute stations get `host_extra` in their config;
    /// `{root}` in it stands for the pool's directory, `{name}` for the
    /// station's name. An `[isolation]` table in it must come last.
    pub async fn start_with(host_extra: &str) -> Pool {
        Pool::start_opts(host_extra, false).await
    }

    /// [`Pool::start_with`]; with `shared_slots` both execute stations use
    /// the same slot accounts, as stations that move CRIU jobs between them
    /// must (a restore keeps the uid of the dump; on separate machines they
    /// would share `slot_first_uid`). The slot locks keep them from leasing
    /// one account at once.
    pub async fn start_opts(host_extra: &str, shared_slots: bool) -> Pool {
        Pool::start_hosts(host_extra, shared_slots, &["x1", "x2"]).await
    }

    /// [`Pool::start_opts`] with the execute stations `names`.
    pub async fn start_hosts(host_extra: &str, shared_slots: bool, names: &[&str]) -> Pool {
        let lock = serial_lock();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let keys = TestKeys::in_dir(&root.join("keys")).unwrap();
        let cport = free_port();
        let hport = free_port();
        let (proxy, pport) = Proxy::start(hport).await;
        let coord_cfg = root.join("coord.toml");
        std::fs::write(
            &coord_cfg,
            format!(
                "listen = \"127.0.0.1:{cport}\"\nstate_dir = \"{}\"\n{}\
                 scheduling_interval_secs = 0.3\nadvertise_period_secs = 1\nstartup_grace_secs = 0.0\n",
                root.join("coord").display(),
                crate::common::coordinator_key(&keys)
            ),
        )
        .unwrap();
        let station_cfg = |name: &str, port: u16, role: &str, extra: &str| {
            let p = root.join(format!("{name}.toml"));
            std::fs::write(
                &p,
                format!(
                    "name = \"{name}\"\nlisten = \"127.0.0.1:{port}\"\nstate_dir = \"{}\"\n\
                     {}coordinator = \"http://127.0.0.1:{cport}\"\nrole = \"{role}\"\n\
                     advertise_secs = 1\nplacement_interval_secs = 0.0\nlease_secs = {LEASE}.0\n\
                     avoid_host_secs = 120.0\ncheckpoint_grace_secs = 5.0\ncpus = 1\n{}{extra}",
                    root.join(name).display(),
                    crate::common::station_creds(&keys, name, &root.join(format!("{name}-creds"))),
                    socket_line(&root.join(name)),
                ),
            )
            .unwrap();
            p
        };
        let mk = |name: &str, config: PathBuf, coordinator: bool, port: u16| Daemon {
            name: name.into(),
            url: format!("http://127.0.0.1:{port}"),
            log: root.join(format!("{name}.log")),
            config,
            child: None,
            is_coordinator: coordinator,
        };
        let mut coord = mk("coord", coord_cfg, true, cport);
        coord.spawn();
        let mut home = mk(
            "home",
            station_cfg(
                "home",
                hport,
                "submit_only",
                &format!("address = \"http://127.0.0.1:{pport}\"\n"),
            ),
            false,
            hport,
        );
        home.spawn();
        let mut hosts = HashMap::new();
        let shared_prefix = gleaner_testkit::slot_prefix();
        for &h in names {
            let port = free_port();
            let extra = host_extra
                .replace("{root}", &root.display().to_string())
                .replace("{name}", h);
            let prefix = if shared_slots {
                shared_prefix.clone()
            } else {
                gleaner_testkit::slot_prefix()
            };
            let (extra, iso_keys) = match extra.split_once("[isolation]\n") {
                Some((before, keys)) => (before.to_string(), keys.to_string()),
                None => (extra, String::new()),
            };
            let extra = extra + &crate::common::isolation_toml_with(&prefix, &iso_keys);
            let mut d = mk(h, station_cfg(h, port, "execute_only", &extra), false, port);
            d.spawn();
            hosts.insert(h.to_string(), d);
        }
        let home_url = format!("http://127.0.0.1:{hport}");
        // The jobs' owner is a real account (under root); its work
        // directory is its own, and open to the guests (which write their
        // progress there).
        let owner = TestOwner::new("alice").unwrap();
        let token = keys.user(owner.name());
        let client = StationClient::new(home_url.clone(), token).unwrap();
        let work = root.join("work");
        owner.dir(&work).unwrap();
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
        // Every run of the job appends to the progress log, on either host,
        // as a slot account of that host (umask 077): made writable for all
        // beforehand.
        let progress = work.join("progress.log");
        std::fs::write(&progress, "").unwrap();
        std::fs::set_permissions(&progress, std::fs::Permissions::from_mode(0o666)).unwrap();
        std::fs::copy(
            repo_root().join("examples/jobs/selfckpt.sh"),
            work.join("selfckpt.sh"),
        )
        .unwrap();
        // Wait until the home answers.
        let deadline = Instant::now() + Duration::from_secs(30);
        while client.jobs(&Default::default()).await.is_err() {
            assert!(Instant::now() < deadline, "home station did not come up");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Pool {
            dir,
            coord,
            home,
            hosts,
            proxy,
            home_url,
            client,
            work,
            keys,
            owner,
            _lock: lock,
        }
    }

    pub fn progress_path(&self) -> PathBuf {
        self.work.join("progress.log")
    }

    /// Submits the example job; returns its id.
    pub async fn submit(&self) -> String {
        self.submit_with(EVERY, "").await
    }

    /// The example job checkpointing by itself every `every` steps, with
    /// more submit lines.
    pub async fn submit_with(&self, every: u32, extra: &str) -> String {
        let text = format!(
            "executable = selfckpt.sh\narguments = {STEPS} {every} {STEP_SECS}\n{extra}\
             checkpoint_exit_code = 85\ntransfer_checkpoint_files = selfckpt.state\n\
             transfer_output_files = selfckpt.result\noutput = out.txt\nerror = err.txt\n\
             log = job.log\nenvironment = \"SELFCKPT_PROGRESS={}\"\nqueue\n",
            self.progress_path().display()
        );
        self.submit_text(&text).await
    }

    /// Submits a submit file's text from the work directory; returns the
    /// job's id.
    pub async fn submit_text(&self, text: &str) -> String {
        let sub = parse_submit(text, &SubmitContext::new("job.sub", "alice")).unwrap();
        let resp = self
            .client
            .submit(&SubmitBody {
                protocol: PROTOCOL_VERSION,
                submission: sub,
                submit_dir: Some(self.work.to_string_lossy().into_owned()),
            })
            .await
            .unwrap();
        resp.jobs[0].to_string()
    }

    /// Steps executed so far (lines of the progress log).
    pub fn progress(&self) -> Vec<(u32, u32)> {
        progress_of(&self.progress_path())
    }

    pub async fn wait_progress(&self, steps: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.progress().len() < steps {
            assert!(
                Instant::now() < deadline,
                "job made no progress: {:?}\n{}",
                self.progress().len(),
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The host the job runs on now (waits until it runs).
    pub async fn running_host(&self, id: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(d) = self.client.job(id).await
                && d.job.state == JobState::Running
                && let Some(h) = d.job.host
            {
                return h;
            }
            assert!(Instant::now() < deadline, "job never ran\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn wait_done(&self, id: &str) -> gleaner_proto::api::JobDetail {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if let Ok(d) = self.client.job(id).await
                && (d.job.state.is_terminal() || matches!(d.job.state, JobState::Held { .. }))
            {
                return d;
            }
            assert!(
                Instant::now() < deadline,
                "job never finished: {:?}\n{}",
                self.client.job(id).await.map(|d| d.events),
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Tails of the daemons' logs, for failure messages.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        let mut hosts: Vec<&str> = self.hosts.keys().map(String::as_str).collect();
        hosts.sort_unstable();
        for n in ["coord", "home"].into_iter().chain(hosts) {
            let t = std::fs::read_to_string(self.dir.path().join(format!("{n}.log")))
                .unwrap_or_default();
            let lines: Vec<&str> = t.lines().collect();
            let from = lines.len().saturating_sub(40);
            s.push_str(&format!("--- {n}.log\n{}\n", lines[from..].join("\n")));
        }
        s
    }

    /// The job completed with output identical to an undisturbed run, and
    /// no failure cost more than one checkpoint interval of work.
    pub fn assert_outcome(&self, d: &gleaner_proto::api::JobDetail) {
        self.assert_outcome_within(d, EVERY);
    }

    /// As [`Pool::assert_outcome`], with at most `max_lost` steps redone per
    /// failure.
    pub fn assert_outcome_within(&self, d: &gleaner_proto::api::JobDetail, max_lost: u32) {
        self.assert_completed(d);
        let (out, result) = reference_run();
        let got = std::fs::read_to_string(self.work.join("out.txt")).unwrap();
        assert_eq!(
            got,
            out,
            "stdout differs from an undisturbed run\nprogress: {:?}\n{:#?}\n{}",
            self.progress(),
            d.events,
            self.logs()
        );
        assert_eq!(
            std::fs::read_to_string(self.work.join("selfckpt.result")).unwrap(),
            result
        );
        let lost = redone_steps(&self.progress());
        for l in &lost {
            assert!(
                *l <= max_lost,
                "a failure cost {l} steps, more than one checkpoint interval ({max_lost}): {lost:?}"
            );
        }
    }

    /// The job completed with exit code 0 (else the events and logs).
    pub fn assert_completed(&self, d: &gleaner_proto::api::JobDetail) {
        assert_eq!(
            d.job.state,
            JobState::Completed { exit_code: 0 },
            "{:#?}\n{}",
            d.events,
            self.logs()
        );
    }

    pub fn count_events(d: &gleaner_proto::api::JobDetail, k: JobEventKind) -> usize {
        d.events.iter().filter(|e| e.kind == k).count()
    }

    /// The job rode out the fault: the expected output, on the same host,
    /// never evicted, no step redone.
    pub fn assert_stayed_on(&self, d: &gleaner_proto::api::JobDetail, host: &str) {
        self.assert_outcome(d);
        assert_eq!(d.job.host.as_deref(), Some(host));
        assert_eq!(
            Pool::count_events(d, JobEventKind::Evicted),
            0,
            "{:#?}",
            d.events
        );
        assert!(redone_steps(&self.progress()).is_empty());
    }

    /// The job lost its host `host` (the lease expired) and finished on
    /// the other execute station with the expected output.
    pub fn assert_moved_after_lease(&self, d: &gleaner_proto::api::JobDetail, host: &str) {
        self.assert_outcome(d);
        Pool::assert_left_after_lease(d, host);
    }

    /// The job ended on the other execute station than `host`, after
    /// `host`'s lease expired.
    pub fn assert_left_after_lease(d: &gleaner_proto::api::JobDetail, host: &str) {
        let other = if host == "x1" { "x2" } else { "x1" };
        assert_eq!(d.job.host.as_deref(), Some(other), "{:#?}", d.events);
        assert!(
            d.events
                .iter()
                .any(|e| e.kind == JobEventKind::Evicted && e.detail.contains("lease expired")),
            "{:#?}",
            d.events
        );
    }
}

/// The (pid, step) lines of the example job's progress log at `path`.
pub fn progress_of(path: &Path) -> Vec<(u32, u32)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect()
}

/// For each restart that redid work: how many steps were redone. A run
/// starts where the pid changes or the step does not grow (in a PID
/// namespace of its own every run of the job is PID 1).
pub fn redone_steps(p: &[(u32, u32)]) -> Vec<u32> {
    let mut max_seen = 0u32;
    let mut out = Vec::new();
    let mut last: Option<(u32, u32)> = None;
    for &(pid, step) in p {
        let new_run = last.is_none_or(|(lp, ls)| lp != pid || step <= ls);
        if new_run && step <= max_seen {
            out.push(max_seen - (step - 1));
        }
        last = Some((pid, step));
        max_seen = max_seen.max(step);
    }
    out
}

/// The example job run to completion locally, restarting on code 85.
pub fn reference_run() -> (String, String) {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo_root().join("examples/jobs/selfckpt.sh"),
        d.path().join("selfckpt.sh"),
    )
    .unwrap();
    let mut out = Vec::new();
    for _ in 0..1000 {
        let o = Command::new("./selfckpt.sh")
            .args([STEPS.to_string(), EVERY.to_string(), "0".to_string()])
            .current_dir(d.path())
            .output()
            .unwrap();
        out.extend_from_slice(&o.stdout);
        match o.status.code() {
            Some(85) => continue,
            Some(0) => break,
            other => panic!("reference run failed: {other:?}"),
        }
    }
    let result = std::fs::read_to_string(d.path().join("selfckpt.result")).unwrap();
    (String::from_utf8(out).unwrap(), result)
}

impl Pool {
    /// Asks `host` to vacate the job (as an administrator would), over a
    /// raw HTTP/1.1 request. Returns the status line.
    pub async fn vacate(&self, host: &str, id: &str) -> String {
        let admin = self.keys.admin("admin");
        let url = &self.hosts[host].url;
        let addr = url.trim_start_matches("http://").to_string();
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let req = format!(
            "POST /v1/guests/{id}/vacate HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {admin}\r\n\
             Content-Length: 0\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut resp = Vec::new();
        s.read_to_end(&mut resp).await.unwrap();
        String::from_utf8_lossy(&resp)
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    }
}

impl Pool {
    /// A client of `host`'s HTTP API as an administrator (for its
    /// `GET /v1/guests` listing).
    pub fn host_client(&self, host: &str) -> StationClient {
        let admin = self.keys.admin("admin");
        StationClient::new(self.hosts[host].url.clone(), admin).unwrap()
    }
}

/// The guests `host` lists now (empty when it does not answer).
pub async fn guests(host: &StationClient) -> Vec<gleaner_station::host::starter::GuestListing> {
    host.get_json("/v1/guests").await.unwrap_or_default()
}

impl Daemon {
    /// Whether the test has it running (not killed and not yet restarted).
    pub fn is_up(&self) -> bool {
        self.child.is_some()
    }
}

impl Pool {
    /// Submits a submit file's text from the work directory; returns the
    /// ids of all its jobs.
    pub async fn submit_all(&self, text: &str) -> Vec<String> {
        let sub = parse_submit(text, &SubmitContext::new("job.sub", "alice")).unwrap();
        let resp = self
            .client
            .submit(&SubmitBody {
                protocol: PROTOCOL_VERSION,
                submission: sub,
                submit_dir: Some(self.work.to_string_lossy().into_owned()),
            })
            .await
            .unwrap();
        resp.jobs.iter().map(ToString::to_string).collect()
    }

    /// The state directory of daemon `name` ("coord", "home", a host).
    pub fn state_dir(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The daemons by name: the coordinator, the home, the hosts.
    pub fn daemon_mut(&mut self, name: &str) -> &mut Daemon {
        match name {
            "coord" => &mut self.coord,
            "home" => &mut self.home,
            h => self.hosts.get_mut(h).unwrap(),
        }
    }

    /// What is wrong with the daemons' durable state, after crashes:
    /// every SQLite file of every station (the job queue) passes
    /// `PRAGMA integrity_check`, the coordinator's fairness and claims
    /// files load, and every JSON file any daemon keeps parses. Empty when
    /// all is sound.
    pub fn integrity_problems(&self) -> Vec<String> {
        let mut bad = Vec::new();
        let mut names: Vec<&str> = self.hosts.keys().map(String::as_str).collect();
        names.sort_unstable();
        for name in ["coord", "home"].into_iter().chain(names) {
            let mut files = Vec::new();
            walk_files(&self.state_dir(name), &mut files);
            for f in files {
                let fname = f.file_name().map(|n| n.to_string_lossy().into_owned());
                let fname = fname.unwrap_or_default();
                if fname.ends_with(".db") {
                    match gleaner_station::queue::JobQueue::open_read_only(&f)
                        .and_then(|q| q.integrity_check())
                    {
                        Ok(Ok(())) => {}
                        Ok(Err(rows)) => bad.push(format!("{}: {rows:?}", f.display())),
                        Err(e) => bad.push(format!("{}: {e}", f.display())),
                    }
                } else if fname.ends_with(".json") {
                    let text = std::fs::read(&f).unwrap_or_default();
                    if let Err(e) = serde_json::from_slice::<serde_json::Value>(&text) {
                        bad.push(format!("{}: {e}", f.display()));
                    }
                }
            }
        }
        let coord = self.state_dir("coord");
        if let Err(e) = gleaner_coordinator::FairnessState::load(&coord) {
            bad.push(format!("coordinator fairness state: {e}"));
        }
        if let Err(e) = gleaner_coordinator::ClaimsState::load(&coord) {
            bad.push(format!("coordinator claims: {e}"));
        }
        bad
    }

    /// Copies every daemon's whole log to `to` (kept for a report after
    /// the pool's directory is gone).
    pub fn copy_logs(&self, to: &Path) {
        let _ = std::fs::create_dir_all(to);
        let mut names: Vec<&str> = self.hosts.keys().map(String::as_str).collect();
        names.sort_unstable();
        for n in ["coord", "home"].into_iter().chain(names) {
            let from = self.dir.path().join(format!("{n}.log"));
            let _ = std::fs::copy(from, to.join(format!("{n}.log")));
        }
    }
}

/// Every regular file under `dir` (not following links).
fn walk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            walk_files(&e.path(), out);
        } else if t.is_file() {
            out.push(e.path());
        }
    }
}
