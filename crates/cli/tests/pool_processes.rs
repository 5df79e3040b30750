//! The pool as users run it: a coordinator and four stations as separate
//! `glean coordinator` / `glean station` processes on loopback, driven
//! through the `glean` CLI (issue #4, "What it must show"):
//!
//! - 50 jobs of two users across 4 stations all complete, with the right
//!   output files and exit codes;
//! - a light user is not starved by a heavy one holding every node, and
//!   a job's stdout reaches the submitter while it runs;
//! - SIGKILL of the coordinator, then of a home station, loses no job and
//!   keeps the Up-Down table.
//!
//! Intervals are short (scheduling 0.5–1 s, advertising 1 s) so each test
//! takes seconds; deadlines are generous for a loaded 2-core machine. The
//! tests share one lock: four pools at once would only slow each other.

mod common;

use common::{
    TestKeys, TestOwner, free_port, glean_in, kill9, socket_line, start_daemon, stop_term,
};
use gleaner_proto::api::JobInfo;
use gleaner_proto::job::JobState;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// One daemon process that the test can SIGKILL and start again.
struct Daemon {
    what: &'static str,
    config: PathBuf,
    log: PathBuf,
    addr: SocketAddr,
    child: Option<Child>,
    starts: u32,
}

impl Daemon {
    fn start(&mut self) {
        assert!(self.child.is_none(), "{} already running", self.what);
        self.starts += 1;
        let child = start_daemon(self.what, &self.config, &self.log, self.addr);
        self.child = Some(child);
    }

    /// SIGKILL: no chance to flush anything.
    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            kill9(&mut c);
        }
    }

    /// SIGTERM, as an operator stops a daemon; SIGKILL if it lingers.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_term(&mut c);
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How a test pool is timed.
struct Timing {
    /// Coordinator scheduling interval, seconds.
    interval: f64,
    /// Up-Down grants per station and pass (resolution A3): the thesis's
    /// `one`, or `until_satisfied` to move many short jobs quickly.
    per_pass: &'static str,
    /// Claim lifetime, seconds (`None`: the coordinator's default, three
    /// advertise periods); a claim is reused for at most that long.
    claim_lifetime: Option<u64>,
}

/// A coordinator and `n` one-CPU stations, each its own process, plus one
/// `$GLEAN_HOME` per user pointing at that user's home station.
struct TestPool {
    dir: PathBuf,
    keys: TestKeys,
    coordinator: Daemon,
    stations: Vec<Daemon>,
    _tmp: tempfile::TempDir,
}

impl TestPool {
    fn new(n: usize, timing: Timing) -> TestPool {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let keys = TestKeys::in_dir(&dir.join("keys")).unwrap();
        let q = |p: &Path| format!("{:?}", p.display().to_string());

        let cdir = dir.join("coordinator");
        std::fs::create_dir_all(&cdir).unwrap();
        let caddr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let ccfg = cdir.join("coordinator.toml");
        std::fs::write(
            &ccfg,
            format!(
                "listen = \"{caddr}\"\nstate_dir = {}\n{}\
                 scheduling_interval_secs = {}\nadvertise_period_secs = 1\nseed = 7\n{}\
                 [allocator]\nkind = \"updown\"\nper_pass = \"{}\"\n",
                q(&cdir.join("state")),
                common::coordinator_key(&keys),
                timing.interval,
                timing
                    .claim_lifetime
                    .map(|s| format!("claim_lifetime_secs = {s}\n"))
                    .unwrap_or_default(),
                timing.per_pass,
            ),
        )
        .unwrap();
        let coordinator = Daemon {
            what: "coordinator",
            config: ccfg,
            log: cdir.join("coordinator.log"),
            addr: caddr,
            child: None,
            starts: 0,
        };
        let mut stations = Vec::new();
        for k in 0..n {
            let sdir = dir.join(format!("station{k}"));
            std::fs::create_dir_all(&sdir).unwrap();
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            let owner = sdir.join("owner");
            std::fs::write(&owner, "idle\n").unwrap();
            let cfg = sdir.join("station.toml");
            // A short lease: a job placed while its home is being killed is
            // given up by its host (it cannot fetch the input), and only the
            // lease brings it back once the home restarts.
            std::fs::write(
                &cfg,
                format!(
                    "name = \"station{k}\"\nlisten = \"{addr}\"\nstate_dir = {}\n\
                     coordinator = \"http://{caddr}\"\n{}advertise_secs = 1\n\
                     placement_interval_secs = 0\ncpus = 1\nlease_secs = 6\n\
                     activity = {{ source = \"file\", path = {} }}\n{}{}",
                    q(&sdir.join("state")),
                    common::station_creds(&keys, &format!("station{k}"), &sdir),
                    q(&owner),
                    socket_line(&sdir.join("state")),
                    common::isolation_toml(),
                ),
            )
            .unwrap();
            stations.push(Daemon {
                what: "station",
                config: cfg,
                log: sdir.join("station.log"),
                addr,
                child: None,
                starts: 0,
            });
        }
        let mut pool = TestPool {
            dir,
            keys,
            coordinator,
            stations,
            _tmp: tmp,
        };
        pool.coordinator.start();
        for s in &mut pool.stations {
            s.start();
        }
        pool
    }

    /// A user whose jobs live at station `home` (a real account under
    /// root, named after `name`), with a work dir of its own.
    fn user(&self, name: &str, home: usize) -> User {
        let ghome = self.dir.join(format!("home-{name}"));
        let work = self.dir.join(format!("work-{name}"));
        let owner = TestOwner::new(name).unwrap();
        std::fs::create_dir_all(&ghome).unwrap();
        owner.dir(&work).unwrap();
        std::fs::write(
            ghome.join("pool.toml"),
            format!(
                "station = \"http://{}\"\ncoordinator = \"http://{}\"\n",
                self.stations[home].addr, self.coordinator.addr
            ),
        )
        .unwrap();
        let token = self.keys.user(owner.name());
        std::fs::write(ghome.join("token"), token).unwrap();
        User {
            name: name.to_string(),
            home: ghome,
            work,
            owner,
        }
    }

    /// Every daemon's log, for a failure message.
    fn logs(&self) -> String {
        let mut s = String::new();
        for d in std::iter::once(&self.coordinator).chain(&self.stations) {
            s += &format!(
                "==== {} ====\n{}\n",
                d.log.display(),
                std::fs::read_to_string(&d.log).unwrap_or_default()
            );
        }
        s
    }
}

struct User {
    name: String,
    home: PathBuf,
    work: PathBuf,
    /// The Unix account the jobs run as.
    owner: TestOwner,
}

impl User {
    fn glean(&self, args: &[&str]) -> Output {
        glean_in(&self.home, &self.work, args)
    }

    fn submit(&self, file: &str, text: &str) {
        std::fs::write(self.work.join(file), text).unwrap();
        let out = self.glean(&["submit", file]);
        assert!(
            out.status.success(),
            "{} submit failed: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `glean q --json` or `glean history --json`; `None` while the home
    /// station is unreachable (it may be restarting).
    fn jobs(&self, cmd: &str) -> Option<Vec<JobInfo>> {
        let out = self.glean(&[cmd, "--json"]);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }

    fn queue(&self) -> Vec<JobInfo> {
        self.jobs("q").unwrap_or_default()
    }

    fn history(&self) -> Vec<JobInfo> {
        self.jobs("history").unwrap_or_default()
    }

    /// The coordinator's Up-Down index per station.
    fn userprio(&self) -> Option<BTreeMap<String, f64>> {
        let out = self.glean(&["userprio", "--json"]);
        if !out.status.success() {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(
            v["stations"]
                .as_array()?
                .iter()
                .filter_map(|r| Some((r["station"].as_str()?.to_string(), r["si"].as_f64()?)))
                .collect(),
        )
    }

    /// The job's stdout as its home station has received it so far
    /// (`GET /v1/jobs/{id}/output/stdout`).
    fn stdout_so_far(&self, station: SocketAddr, id: &str) -> Option<String> {
        let token = std::fs::read_to_string(self.home.join("token")).ok()?;
        let client =
            gleaner_station::client::StationClient::new(format!("http://{station}"), token).ok()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        let bytes = rt.block_on(client.output(id, "stdout", 0)).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn read(&self, file: &str) -> Option<String> {
        std::fs::read_to_string(self.work.join(file)).ok()
    }
}

/// `text` without the terminal colour codes the daemons' logs carry.
fn without_colours(text: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in text.chars() {
        match (esc, c) {
            (false, '\u{1b}') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

/// Polls `f` every 200 ms until it yields, or fails with `what` and the logs.
fn wait_for<T>(pool: &TestPool, secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {secs} s waiting for {what}\n{}",
                pool.logs()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn secs(t: gleaner_core::time::Time) -> f64 {
    t.as_micros() as f64 / 1e6
}

/// A job that writes a result file and exits with `proc % 3`, so exit
/// codes differ between jobs and each is checked against its own.
fn varied_jobs(tag: &str, n: u32, sleep: &str) -> String {
    format!(
        "executable = /bin/sh\n\
         arguments = \"-c 'sleep {sleep}; echo {tag} $(Process) > result.$(Process); \
         echo out {tag} $(Process); exit `expr $(Process) % 3`'\"\n\
         output = out.$(Process)\n\
         error = err.$(Process)\n\
         transfer_output_files = result.$(Process)\n\
         queue {n}\n"
    )
}

/// Every job of `user` is completed with exit code `proc % 3` and its
/// stdout and result file arrived in the work directory.
fn check_outputs(user: &User, tag: &str, done: &[JobInfo]) {
    for j in done {
        let p = j.id.proc;
        assert_eq!(
            j.state,
            JobState::Completed {
                exit_code: (p % 3) as i32
            },
            "{} job {}",
            user.name,
            j.id
        );
        assert_eq!(
            user.read(&format!("out.{p}")).as_deref().map(str::trim),
            Some(format!("out {tag} {p}").as_str()),
            "{} stdout of {}",
            user.name,
            j.id
        );
        assert_eq!(
            user.read(&format!("result.{p}")).as_deref().map(str::trim),
            Some(format!("{tag} {p}").as_str()),
            "{} result file of {}",
            user.name,
            j.id
        );
    }
}

#[test]
fn fifty_jobs_of_two_users_complete_across_four_stations() {
    let _g = serial();
    let pool = TestPool::new(
        4,
        Timing {
            interval: 0.5,
            per_pass: "until_satisfied",
            claim_lifetime: None,
        },
    );
    let alice = pool.user("alice", 0);
    let bob = pool.user("bob", 1);
    alice.submit("a.sub", &varied_jobs("alice", 25, "0.1"));
    bob.submit("b.sub", &varied_jobs("bob", 25, "0.1"));

    let (a, b) = wait_for(&pool, 120, "50 jobs to finish", || {
        let a = alice.history();
        let b = bob.history();
        (a.len() == 25 && b.len() == 25).then_some((a, b))
    });
    check_outputs(&alice, "alice", &a);
    check_outputs(&bob, "bob", &b);
    // The queues are empty and the work was spread over the pool.
    assert!(alice.queue().is_empty() && bob.queue().is_empty());
    let hosts: BTreeSet<String> = a.iter().chain(&b).filter_map(|j| j.host.clone()).collect();
    assert!(hosts.len() >= 3, "jobs ran only on {hosts:?}");
    let ids: BTreeSet<u32> = a.iter().map(|j| j.id.proc).collect();
    assert_eq!(ids, (0..25).collect(), "alice's procs");
}

#[test]
fn light_user_gets_a_node_from_a_heavy_user_within_an_interval() {
    let _g = serial();
    let interval = 1.0;
    let pool = TestPool::new(
        4,
        Timing {
            interval,
            per_pass: "one",
            claim_lifetime: None,
        },
    );
    let heavy = pool.user("heavy", 0);
    let light = pool.user("light", 1);
    // Long jobs: no node frees by itself while the test looks.
    heavy.submit(
        "h.sub",
        "executable = /bin/sh\n\
         arguments = \"-c 'echo started $(Process); sleep 40'\"\n\
         output = out.$(Process)\n\
         queue 8\n",
    );
    let running = wait_for(&pool, 60, "heavy jobs on all 4 nodes", || {
        let r: Vec<JobInfo> = heavy
            .queue()
            .into_iter()
            .filter(|j| j.state == JobState::Running)
            .collect();
        (r.len() == 4).then_some(r)
    });
    // A running job's stdout is already at the submitter.
    let j = &running[0];
    let home = pool.stations[0].addr;
    wait_for(&pool, 30, "stdout streamed while running", || {
        heavy
            .stdout_so_far(home, &j.id.to_string())
            .filter(|s| s.trim() == format!("started {}", j.id.proc))
    });
    assert!(
        heavy
            .queue()
            .iter()
            .any(|q| q.id == j.id && q.state == JobState::Running),
        "job {} should still be running",
        j.id
    );

    light.submit(
        "l.sub",
        "executable = /bin/sh\narguments = \"-c 'echo light'\"\noutput = out.light\nqueue\n",
    );
    // Up-Down (Mutka 1988 Table 4.2, seeds L649–651): the light station
    // holds nothing and has the smaller index, so the next pass preempts
    // one heavy guest and the freed node goes to the light station.
    let lj = wait_for(&pool, 60, "the light job to start", || {
        light
            .queue()
            .into_iter()
            .chain(light.history())
            .find(|j| j.started_at.is_some())
    });
    let started = secs(lj.started_at.unwrap_or_default());
    let submitted = secs(lj.submitted_at);
    // The node freed when the heavy guest was evicted and requeued.
    let hq = heavy.queue();
    let evicted: Vec<&JobInfo> = hq
        .iter()
        .filter(|j| j.state == JobState::Idle && j.run_count > 0)
        .collect();
    assert_eq!(evicted.len(), 1, "one heavy job preempted: {hq:#?}");
    let freed = secs(evicted[0].updated_at);
    // One scheduling interval plus an advertise period for the grant to
    // reach the light station; the rest is slack for a loaded machine.
    let slack = 8.0;
    assert!(
        started - freed <= interval + 1.0 + slack,
        "light job started {:.1} s after the node freed",
        started - freed
    );
    assert!(
        started - submitted <= 3.0 * interval + 1.0 + slack,
        "light job waited {:.1} s",
        started - submitted
    );
    // No node freed by itself: every other heavy job still runs (and the
    // light job's node, once it ended, is heavy's again at once).
    let heavy_running = hq.iter().filter(|j| j.state == JobState::Running).count();
    assert!((3..=4).contains(&heavy_running), "{hq:#?}");
    wait_for(&pool, 30, "the light job's output", || {
        light.read("out.light").filter(|s| s.trim() == "light")
    });
    eprintln!(
        "light job: waited {:.2} s after submit, {:.2} s after the node freed",
        started - submitted,
        started - freed
    );
}

/// Claim reuse (issue 15) keeps Up-Down in charge: a heavy user's short
/// jobs run one after another on claims their hosts hold for them (claims
/// live 10 minutes here, so no node would come free by itself), and a
/// light user's job still gets a node within a pass or two: the
/// coordinator preempts a held claim, the heavy home gives it up and
/// vacates the job on it, and the node goes to the light station.
#[test]
fn light_user_preempts_a_heavy_users_reused_claim_within_a_pass() {
    let _g = serial();
    let interval = 1.0;
    let pool = TestPool::new(
        4,
        Timing {
            interval,
            per_pass: "one",
            claim_lifetime: Some(600),
        },
    );
    let heavy = pool.user("heavyr", 0);
    let light = pool.user("lightr", 1);
    heavy.submit(
        "h.sub",
        "executable = /bin/sleep\narguments = 2\nqueue 400\n",
    );
    // Heavy's claims reused: its home placed jobs under the later numbers
    // of at least three claims.
    let home_log = pool.stations[0].log.clone();
    wait_for(&pool, 90, "heavy's claims reused", || {
        let log = without_colours(&std::fs::read_to_string(&home_log).unwrap_or_default());
        (log.matches("seq=2\n").count() >= 3).then_some(())
    });
    light.submit(
        "l.sub",
        "executable = /bin/sh\narguments = \"-c 'echo light'\"\noutput = out.light\nqueue\n",
    );
    let lj = wait_for(&pool, 60, "the light job to start", || {
        light
            .queue()
            .into_iter()
            .chain(light.history())
            .find(|j| j.started_at.is_some())
    });
    let waited = secs(lj.started_at.unwrap_or_default()) - secs(lj.submitted_at);
    // Up-Down preempted a held claim: a heavy job was vacated from it.
    let log = without_colours(&std::fs::read_to_string(&home_log).unwrap_or_default());
    assert!(
        log.contains("preempted"),
        "no preemption reached the heavy home:\n{}",
        pool.logs()
    );
    // A pass (1 s) and the ad that shows the node free; the rest is slack
    // for a loaded machine. Without the preemption the light job would
    // wait for a claim to expire (600 s).
    let slack = 8.0;
    assert!(
        waited <= 3.0 * interval + 1.0 + slack,
        "light job waited {waited:.1} s for a node held by reused claims"
    );
    wait_for(&pool, 30, "the light job's output", || {
        light.read("out.light").filter(|s| s.trim() == "light")
    });
    eprintln!("light job: waited {waited:.2} s after submit (heavy's claims reused)");
}

/// A drain (issue 18) also ends claim reuse on the drained host: the host
/// hears of the drain in its next advertise reply, and the job that was
/// running on a held claim is the last one there; the home's next jobs wait
/// for a grant elsewhere. Claims live 10 minutes here, so without that the
/// host would take one job after another on its claim.
#[test]
fn a_drained_host_takes_no_next_job_on_a_claim_it_holds() {
    let _g = serial();
    let pool = TestPool::new(
        2,
        Timing {
            interval: 1.0,
            per_pass: "until_satisfied",
            claim_lifetime: Some(600),
        },
    );
    let user = pool.user("drainr", 0);
    user.submit(
        "d.sub",
        "executable = /bin/sleep\narguments = 2\nqueue 10\n",
    );
    let all = |u: &User| u.queue().into_iter().chain(u.history()).collect::<Vec<_>>();
    let on_s1 = |jobs: &[JobInfo]| {
        jobs.iter()
            .filter(|j| j.host.as_deref() == Some("station1") && j.started_at.is_some())
            .map(|j| j.id)
            .collect::<BTreeSet<_>>()
    };
    wait_for(&pool, 60, "a job on station1", || {
        (!on_s1(&all(&user)).is_empty()).then_some(())
    });
    let admin = pool.dir.join("admin.token");
    std::fs::write(&admin, pool.keys.admin("root")).unwrap();
    let admin = admin.display().to_string();
    let out = user.glean(&["drain", "station1", "--token", &admin]);
    assert!(out.status.success(), "{out:?}");
    // The host hears of it within an advertise period (1 s); the job
    // running then ends within 2 s more.
    std::thread::sleep(Duration::from_secs(4));
    let settled = on_s1(&all(&user));
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(8) {
        let now = on_s1(&all(&user));
        let new: Vec<_> = now.difference(&settled).collect();
        assert!(
            new.is_empty(),
            "jobs {new:?} started on the drained station1\n{}",
            pool.logs()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    // Station0 kept working meanwhile; after the drain's end station1
    // takes jobs again, and every job completes.
    let out = user.glean(&["drain", "--cancel", "station1", "--token", &admin]);
    assert!(out.status.success(), "{out:?}");
    wait_for(&pool, 90, "every job to complete", || {
        let h = user.history();
        (h.len() == 10 && user.queue().is_empty()).then_some(())
    });
    eprintln!(
        "jobs on station1 before the drain settled: {}, after it: none in 8 s",
        settled.len()
    );
}

#[test]
fn coordinator_sigkill_loses_no_job_and_keeps_the_updown_table() {
    let _g = serial();
    let interval = 1.0;
    let mut pool = TestPool::new(
        4,
        Timing {
            interval,
            per_pass: "one",
            claim_lifetime: None,
        },
    );
    let alice = pool.user("alice", 0);
    // One submitting station, so no preemption is legitimate: any
    // disturbance of a running job would be the restart's fault.
    alice.submit("a.sub", &varied_jobs("alice", 16, "3"));

    // Wait until the index is far from a fresh table's 0.
    wait_for(&pool, 60, "station0's index to grow", || {
        alice
            .userprio()
            .and_then(|t| t.get("station0").copied())
            .filter(|&si| si >= 16.0)
    });
    let t_before = Instant::now();
    let before = alice.userprio().unwrap_or_default();
    pool.coordinator.kill9();
    let t_kill = Instant::now();
    let running: Vec<JobInfo> = alice
        .queue()
        .into_iter()
        .filter(|j| j.state == JobState::Running)
        .collect();
    assert!(!running.is_empty(), "jobs should be running at the kill");
    std::thread::sleep(Duration::from_millis(500));
    pool.coordinator.start();
    let t_up = Instant::now();
    let after = wait_for(&pool, 30, "userprio after restart", || alice.userprio());
    let t_after = Instant::now();
    // The table is saved after every pass and indices move only in passes:
    // at most one pass between reading `before` and the kill, and the
    // passes since the restart, each changing an index by at most 4 (the
    // nodes held, Table 4.5's f = 1 per node).
    let passes = |d: Duration| (d.as_secs_f64() / interval).ceil() + 1.0;
    let tol = 4.0 * (passes(t_kill - t_before) + passes(t_after - t_up));
    let (b, a) = (before["station0"], after.get("station0").copied());
    let a = a.unwrap_or_else(|| panic!("station0 missing after restart: {after:?}"));
    assert!(
        (a - b).abs() <= tol,
        "station0 index {b} before the kill, {a} after (tolerance {tol})"
    );
    // While station0 holds nodes its index only grows; a lost table would
    // restart from 0.
    assert!(a >= b - 4.0, "index reset: {b} → {a}");
    eprintln!("station0 index: {b} before the SIGKILL, {a} after the restart (tolerance {tol})");

    let done = wait_for(&pool, 120, "all 16 jobs to finish", || {
        let h = alice.history();
        (h.len() == 16).then_some(h)
    });
    check_outputs(&alice, "alice", &done);
    for j in &done {
        assert_eq!(j.run_count, 1, "job {} ran more than once", j.id);
    }
    // The jobs running at the kill finished where and when they started.
    for r in &running {
        let d = done.iter().find(|j| j.id == r.id).unwrap();
        assert_eq!((&d.host, d.started_at), (&r.host, r.started_at), "{}", r.id);
    }
    assert_eq!(pool.coordinator.starts, 2);
}

#[test]
fn home_station_sigkill_loses_no_job_and_keeps_finished_output() {
    let _g = serial();
    let mut pool = TestPool::new(
        4,
        Timing {
            interval: 0.5,
            per_pass: "until_satisfied",
            claim_lifetime: None,
        },
    );
    let alice = pool.user("alice", 0);
    alice.submit("a.sub", &varied_jobs("alice", 10, "2"));
    // Kill it while it hosts one of its own jobs (the starter inside the
    // daemon dies with it) and others run elsewhere.
    let finished = wait_for(
        &pool,
        60,
        "2 jobs finished and one running on station0",
        || {
            let h = alice.history();
            let here = alice
                .queue()
                .iter()
                .any(|j| j.state == JobState::Running && j.host.as_deref() == Some("station0"));
            (h.len() >= 2 && here).then_some(h)
        },
    );
    // Jobs accepted just before the crash are durable too.
    alice.owner.dir(&alice.work.join("late")).unwrap();
    alice.submit(
        "late/b.sub",
        "executable = /bin/sh\narguments = \"-c 'echo late $(Process)'\"\n\
         output = out.$(Process)\nqueue 3\n",
    );
    let queued = alice.queue();
    pool.stations[0].kill9();
    // Finished output stays where it was delivered.
    check_outputs(&alice, "alice", &finished);
    std::thread::sleep(Duration::from_millis(500));
    pool.stations[0].start();

    // The queue before the history: a job that finishes between the two
    // reads is then in one of them (the other order could miss it).
    let (h, q) = wait_for(&pool, 30, "the restarted station's queue", || {
        let q = alice.jobs("q")?;
        Some((alice.jobs("history")?, q))
    });
    let mut ids: BTreeSet<String> = h.iter().map(|j| j.id.to_string()).collect();
    ids.extend(q.iter().map(|j| j.id.to_string()));
    for j in queued.iter().chain(&finished) {
        assert!(
            ids.contains(&j.id.to_string()),
            "job {} lost: history {:?}, queue {:?}",
            j.id,
            h.iter()
                .map(|j| (j.id.to_string(), j.state.clone()))
                .collect::<Vec<_>>(),
            q.iter()
                .map(|j| (j.id.to_string(), j.state.clone()))
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(ids.len(), 13, "{ids:?}");
    assert!(h.len() >= finished.len(), "history shrank");

    let done = wait_for(&pool, 120, "all 13 jobs to finish", || {
        let h = alice.history();
        (h.len() == 13).then_some(h)
    });
    let (first, late): (Vec<JobInfo>, Vec<JobInfo>) =
        done.into_iter().partition(|j| j.id.cluster == 1);
    check_outputs(&alice, "alice", &first);
    for j in &late {
        assert_eq!(j.state, JobState::Completed { exit_code: 0 }, "{}", j.id);
        let out = std::fs::read_to_string(alice.work.join(format!("late/out.{}", j.id.proc)));
        assert_eq!(
            out.ok().as_deref().map(str::trim),
            Some(format!("late {}", j.id.proc).as_str())
        );
    }
    assert_eq!(pool.stations[0].starts, 2);
}

/// Issue 15: SIGKILL of the home in the middle of a burst of short jobs
/// (placements, starts and completions in flight) loses no acknowledged
/// job and runs none twice. Each job appends its id to one file as its
/// side effect; the home (station0, its owner at the desk so it hosts
/// nothing) is killed once a fifth of them finished and started again.
/// `GLEAN_BURST_JOBS` sets the burst (default 200; the 1000 takes
/// about ten minutes on two loaded cores).
#[test]
fn home_sigkill_in_a_burst_loses_no_job_and_runs_none_twice() {
    let _g = serial();
    let n: usize = std::env::var("GLEAN_BURST_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let mut pool = TestPool::new(
        4,
        Timing {
            interval: 0.5,
            per_pass: "until_satisfied",
            claim_lifetime: None,
        },
    );
    std::fs::write(pool.dir.join("station0/owner"), "active\n").unwrap();
    // One file every guest (each its own slot account) appends to.
    let runs_dir = pool.dir.join("runs");
    std::fs::create_dir_all(&runs_dir).unwrap();
    let runs = runs_dir.join("runs.log");
    std::fs::write(&runs, "").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runs_dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o666)).unwrap();
    // The pool's directory (a tempdir, 0700) must be searchable by the
    // slot accounts; its parent is /tmp, already 1777 and left alone.
    std::fs::set_permissions(&pool.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let alice = pool.user("burst", 0);
    alice.submit(
        "b.sub",
        &format!(
            "executable = /bin/sh\narguments = \"-c 'echo $(Cluster).$(Process) >> {}'\"\n\
             queue {n}\n",
            runs.display()
        ),
    );
    let submitted: BTreeSet<String> = alice.queue().iter().map(|j| j.id.to_string()).collect();
    assert_eq!(submitted.len(), n, "the burst was acknowledged whole");
    wait_for(&pool, 600, "a fifth of the burst finished", || {
        (alice.history().len() >= n / 5).then_some(())
    });
    pool.stations[0].kill9();
    std::thread::sleep(Duration::from_millis(500));
    pool.stations[0].start();
    let done = wait_for(
        &pool,
        60 + 3 * n as u64,
        "the whole burst to finish",
        || {
            let h = alice.jobs("history")?;
            (h.len() >= n).then_some(h)
        },
    );
    let ids: BTreeSet<String> = done.iter().map(|j| j.id.to_string()).collect();
    assert_eq!(ids, submitted, "every acknowledged job finished");
    for j in &done {
        assert_eq!(j.state, JobState::Completed { exit_code: 0 }, "{}", j.id);
    }
    // Each job's side effect exactly once.
    let text = std::fs::read_to_string(&runs).unwrap();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for l in text.lines() {
        *count.entry(l.trim()).or_default() += 1;
    }
    let twice: Vec<(&&str, &usize)> = count.iter().filter(|(_, c)| **c > 1).collect();
    if !twice.is_empty() {
        // What the daemons said about those jobs.
        let logs = pool.logs();
        if let Ok(p) = std::env::var("GLEAN_TEST_KEEP_LOGS") {
            let _ = std::fs::write(p, &logs);
        }
        let about: Vec<String> = logs
            .lines()
            .map(without_colours)
            .filter(|l| {
                twice
                    .iter()
                    .any(|(id, _)| l.contains(&format!("={id} ")) || l.contains(&format!("-{id}-")))
            })
            .collect();
        panic!("jobs ran twice: {twice:?}\n{}", about.join("\n"));
    }
    let ran: BTreeSet<String> = count.keys().map(|k| k.to_string()).collect();
    assert_eq!(ran, submitted, "every job ran");
    assert_eq!(pool.stations[0].starts, 2);
}

/// Two homes' jobs of the same ids on one host at once: every home numbers
/// its clusters from 1, so home A's job 1.0 and home B's job 1.0 are two
/// guests, and the host runs both (it keyed its guests by job id alone and
/// refused the second as "already runs here"). Stations 0 and 1 are the
/// homes, their owners at the desk; station 2, with 4 CPUs, is the only
/// host. Each job appends "TAG ID" to one file, marks itself started and
/// waits (up to 2 minutes) for its twin of the other home: its stdout says
/// whether they met, so a job that ran while its twin could not says
/// "alone". Every job must complete exactly once, on station 2, having met
/// its twin, with its own home's output.
#[test]
fn two_homes_jobs_of_the_same_ids_run_on_one_host_at_once() {
    let _g = serial();
    let mut pool = TestPool::new(
        3,
        Timing {
            interval: 0.5,
            per_pass: "until_satisfied",
            claim_lifetime: None,
        },
    );
    for k in [0, 1] {
        std::fs::write(pool.dir.join(format!("station{k}/owner")), "active\n").unwrap();
    }
    // The host takes 4 guests: with 3 jobs a home, a job waiting for its
    // twin never keeps the twin out.
    let host = &mut pool.stations[2];
    host.stop();
    let cfg = std::fs::read_to_string(&host.config).unwrap();
    std::fs::write(&host.config, cfg.replace("cpus = 1\n", "cpus = 4\n")).unwrap();
    host.start();
    // The guests' shared directory (each guest is its own slot account).
    use std::os::unix::fs::PermissionsExt;
    let runs_dir = pool.dir.join("runs");
    std::fs::create_dir_all(&runs_dir).unwrap();
    std::fs::set_permissions(&runs_dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let runs = runs_dir.join("runs.log");
    std::fs::write(&runs, "").unwrap();
    std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(&pool.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    const JOBS: u32 = 3;
    let script = "#!/bin/sh\n# twin.sh TAG TWIN ID DIR\n\
        echo \"$1 $3\" >> \"$4/runs.log\"\necho x > \"$4/$1-$3\"\ni=0\n\
        while [ ! -s \"$4/$2-$3\" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n\
        if [ -s \"$4/$2-$3\" ]; then echo \"$1 $3 met $2\"; else echo \"$1 $3 alone\"; fi\n";
    // The marks are the test's files, which guests write: what a slot
    // account creates in a world-writable directory is scrubbed when its
    // slot is released (a preempted twin would lose its mark).
    for t in ["a", "b"] {
        for p in 0..JOBS {
            let m = runs_dir.join(format!("{t}-1.{p}"));
            std::fs::write(&m, "").unwrap();
            std::fs::set_permissions(&m, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
    }
    let users = [
        (pool.user("twina", 0), "a", "b"),
        (pool.user("twinb", 1), "b", "a"),
    ];
    for (u, tag, twin) in &users {
        std::fs::write(u.work.join("twin.sh"), script).unwrap();
        std::fs::set_permissions(
            u.work.join("twin.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        u.submit(
            "twin.sub",
            &format!(
                "executable = twin.sh\n\
                 arguments = {tag} {twin} $(Cluster).$(Process) {}\n\
                 output = out.$(Process)\nerror = err.$(Process)\nqueue {JOBS}\n",
                runs_dir.display()
            ),
        );
    }
    // Both homes number their first cluster 1: the same ids.
    let ids: Vec<BTreeSet<String>> = users
        .iter()
        .map(|(u, _, _)| u.queue().iter().map(|j| j.id.to_string()).collect())
        .collect();
    assert_eq!(ids[0], ids[1], "both homes' jobs have the same ids");
    assert_eq!(ids[0].len(), JOBS as usize);
    let t0 = Instant::now();
    let done: Vec<Vec<JobInfo>> = users
        .iter()
        .map(|(u, _, _)| {
            wait_for(&pool, 240, "both homes' jobs to finish", || {
                let h = u.jobs("history")?;
                (h.len() == JOBS as usize).then_some(h)
            })
        })
        .collect();
    let secs_taken = t0.elapsed().as_secs_f64();
    for ((u, tag, twin), jobs) in users.iter().zip(&done) {
        for j in jobs {
            assert_eq!(j.state, JobState::Completed { exit_code: 0 }, "{}", j.id);
            assert_eq!(j.host.as_deref(), Some("station2"), "{}", j.id);
            assert_eq!(
                u.read(&format!("out.{}", j.id.proc))
                    .as_deref()
                    .map(str::trim),
                Some(format!("{tag} {} met {twin}", j.id).as_str()),
                "{} stdout of {}\n{}",
                u.name,
                j.id,
                pool.logs()
            );
        }
    }
    // Each job of each home ran exactly once.
    let text = std::fs::read_to_string(&runs).unwrap();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for l in text.lines() {
        *count.entry(l.trim()).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = ["a", "b"]
        .iter()
        .flat_map(|t| ids[0].iter().map(move |id| (format!("{t} {id}"), 1)))
        .collect();
    let got: BTreeMap<String, usize> = count.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(got, expected, "each job once\n{}", pool.logs());
    println!(
        "two homes x {JOBS} jobs with the same ids, on one host at once: done in {secs_taken:.1} s"
    );
}
