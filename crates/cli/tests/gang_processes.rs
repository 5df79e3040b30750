//! Parallel jobs (issue 17, item 3) with real processes: a coordinator and
//! three one-CPU stations, each its own `glean` process on loopback, and a
//! `universe = parallel` job of `machine_count = 3`:
//!
//! - the gang's three members are granted in one grant and all run; each
//!   member's output names its rank and the peers (all three stations);
//! - an owner returns on one member's host: with `gang_on_eviction =
//!   suspend` all three members are frozen (their output stops), and all
//!   resume when the owner leaves; rank 0's exit ends the job and the
//!   others complete with its exit code; with `vacate` all three leave,
//!   the job goes back to idle and runs again as a gang;
//! - a job with `machine_count = 4`, more than the pool has, waits idle
//!   and holds no node;
//! - another home cannot hold or vacate this home's members;
//! - under LL-k, on hosts whose owners let guests linger, a member whose
//!   owner returns lingers and the gang runs on undisturbed;
//! - under reconfiguration (`machine_count = 3`), an owner's return
//!   restarts the gang on the two idle stations, each member told its two
//!   actual peers; the unused rank waits with the job and completes with
//!   it;
//! - a home SIGKILLed while its gang is held, and started again, releases
//!   the gang when the owner leaves (the holds are in its queue);
//! - `glean rm` of one member, or of the cluster, stops all three.
//!
//! Every member appends a line per second to one shared log (each member
//! runs as its own slot account), which is how the test sees it run.

mod common;

use common::{
    TestKeys, TestOwner, free_port, glean_in, kill9, socket_line, start_daemon, stop_term,
};
use gleaner_core::detector::OwnerState;
use gleaner_proto::api::JobInfo;
use gleaner_proto::job::JobState;
use gleaner_proto::wire::PoolStatus;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

struct Daemon {
    log: PathBuf,
    cfg: PathBuf,
    addr: SocketAddr,
    child: Option<Child>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_term(&mut c);
        }
    }
}

struct Pool {
    dir: PathBuf,
    keys: TestKeys,
    coordinator: Daemon,
    stations: Vec<Daemon>,
    _tmp: tempfile::TempDir,
}

impl Pool {
    fn new(n: usize) -> Pool {
        Pool::with_station_keys(n, "")
    }

    /// `n` stations, each with `keys` (top-level station settings) too.
    fn with_station_keys(n: usize, extra: &str) -> Pool {
        Pool::build(n, |_| extra.to_string())
    }

    /// `n` stations, station `k` with the settings `extra(k)` too.
    fn build(n: usize, extra: impl Fn(usize) -> String) -> Pool {
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
                "listen = \"{caddr}\"\nstate_dir = {}\n{}scheduling_interval_secs = 0.5\n\
                 advertise_period_secs = 1\nseed = 7\n\
                 [allocator]\nkind = \"updown\"\nper_pass = \"until_satisfied\"\n",
                q(&cdir.join("state")),
                common::coordinator_key(&keys),
            ),
        )
        .unwrap();
        let clog = cdir.join("coordinator.log");
        let coordinator = Daemon {
            child: Some(start_daemon("coordinator", &ccfg, &clog, caddr)),
            log: clog,
            cfg: ccfg,
            addr: caddr,
        };
        let mut stations = Vec::new();
        for k in 0..n {
            let sdir = dir.join(format!("station{k}"));
            std::fs::create_dir_all(&sdir).unwrap();
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            let owner = sdir.join("owner");
            std::fs::write(&owner, "idle\n").unwrap();
            let cfg = sdir.join("station.toml");
            let extra = extra(k);
            std::fs::write(
                &cfg,
                format!(
                    "name = \"station{k}\"\nlisten = \"{addr}\"\nstate_dir = {}\n\
                     coordinator = \"http://{caddr}\"\n{}advertise_secs = 1\n\
                     placement_interval_secs = 0\ncpus = 1\nlease_secs = 20\n{extra}\
                     activity = {{ source = \"file\", path = {} }}\n{}{}",
                    q(&sdir.join("state")),
                    common::station_creds(&keys, &format!("station{k}"), &sdir),
                    q(&owner),
                    socket_line(&sdir.join("state")),
                    common::isolation_toml(),
                ),
            )
            .unwrap();
            let log = sdir.join("station.log");
            stations.push(Daemon {
                child: Some(start_daemon("station", &cfg, &log, addr)),
                log,
                cfg,
                addr,
            });
        }
        Pool {
            dir,
            keys,
            coordinator,
            stations,
            _tmp: tmp,
        }
    }

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
        std::fs::write(ghome.join("token"), self.keys.user(owner.name())).unwrap();
        User {
            home: ghome,
            work,
            _owner: owner,
        }
    }

    /// SIGKILL station `k`: no chance to clean up or answer anyone.
    fn kill_station(&mut self, k: usize) {
        if let Some(mut c) = self.stations[k].child.take() {
            kill9(&mut c);
        }
    }

    /// Starts station `k` again with its state.
    fn start_station(&mut self, k: usize) {
        let d = &mut self.stations[k];
        d.child = Some(start_daemon("station", &d.cfg, &d.log, d.addr));
    }

    fn owner(&self, station: &str, state: &str) {
        std::fs::write(
            self.dir.join(format!("{station}/owner")),
            format!("{state}\n"),
        )
        .unwrap();
    }

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

    /// A shared log every member (each its own slot account) appends to.
    fn shared_log(&self) -> PathBuf {
        self.shared_log_named("members.log")
    }

    fn shared_log_named(&self, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let d = self.dir.join("runs");
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join(name);
        std::fs::write(&f, "").unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        f
    }
}

struct User {
    home: PathBuf,
    work: PathBuf,
    _owner: TestOwner,
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
            "submit failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn jobs(&self, cmd: &str) -> Vec<JobInfo> {
        let out = self.glean(&[cmd, "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    }

    /// The members of cluster `c` (queue and history), by rank.
    fn gang(&self, c: u64) -> Vec<JobInfo> {
        let mut v: Vec<JobInfo> = self
            .jobs("q")
            .into_iter()
            .chain(self.jobs("history"))
            .filter(|j| j.id.cluster == c)
            .collect();
        v.sort_by_key(|j| j.id.proc);
        v.dedup_by_key(|j| j.id.proc);
        v
    }
}

/// Waits until the coordinator knows `n` stations whose owners are away
/// and that run no guest (a reconfigurable gang takes the idle stations it
/// finds: the test must not submit before they are known).
fn wait_idle_stations(pool: &Pool, u: &User, n: usize) {
    wait_for(
        pool,
        60,
        "the coordinator to know every idle station",
        || {
            let out = u.glean(&["status", "--json"]);
            let status: PoolStatus = serde_json::from_slice(&out.stdout).ok()?;
            let idle = status
                .stations
                .iter()
                .filter(|s| s.state == OwnerState::Av && s.guests == 0)
                .count();
            (idle >= n).then_some(())
        },
    );
}

fn wait_for<T>(pool: &Pool, secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
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
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn all_in(g: &[JobInfo], k: usize, ok: impl Fn(&JobState) -> bool) -> bool {
    g.len() == k && g.iter().all(|j| ok(&j.state))
}

/// The member program: one line with its rank and peers, then a tick a
/// second into the shared log; rank 0 runs `$1` ticks and exits 7, the
/// others `$2` (they are stopped with the gang before that), rank 1 `$3`
/// if given (and exits 0).
fn member_script(work: &Path, log: &Path) -> String {
    member_script_named(work, log, "member.sh")
}

fn member_script_named(work: &Path, log: &Path, name: &str) -> String {
    let script = work.join(name);
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\
             echo \"rank=$GLEANER_RANK procno=$_CONDOR_PROCNO nprocs=$_CONDOR_NPROCS \
             stations=$GLEANER_PEER_STATIONS peers=$GLEANER_PEERS\"\n\
             n=$2; [ \"$GLEANER_RANK\" = 0 ] && n=$1\n\
             [ \"$GLEANER_RANK\" = 1 ] && [ -n \"$3\" ] && n=$3\n\
             i=0\n\
             while [ $i -lt $n ]; do echo \"$GLEANER_RANK $i\" >> {log}; i=$((i+1)); sleep 1; done\n\
             [ \"$GLEANER_RANK\" = 0 ] && exit 7\n\
             exit 0\n",
            log = log.display()
        ),
    )
    .unwrap();
    name.into()
}

/// Ticks of each rank in the shared log so far.
fn ticks(log: &Path) -> [usize; 3] {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut t = [0; 3];
    for l in text.lines() {
        if let Some(r) = l.split(' ').next().and_then(|r| r.parse::<usize>().ok())
            && r < 3
        {
            t[r] += 1;
        }
    }
    t
}

fn gang_submit(script: &str, on_eviction: &str, rank0: u32, others: u32) -> String {
    gang_submit_args(script, on_eviction, &format!("{rank0} {others}"))
}

/// `gang_submit` with the member program's `arguments`.
fn gang_submit_args(script: &str, on_eviction: &str, arguments: &str) -> String {
    format!(
        "universe = parallel\nexecutable = {script}\narguments = {arguments}\n\
         machine_count = 3\ngang_on_eviction = {on_eviction}\n\
         output = out.$(Node)\nerror = err.$(Node)\nqueue\n"
    )
}

/// Which station runs member `rank` of cluster `c`.
fn host_of(u: &User, c: u64, rank: u32) -> String {
    u.gang(c)
        .into_iter()
        .find(|j| j.id.proc == rank)
        .and_then(|j| j.host)
        .expect("member placed")
}

#[test]
fn a_three_node_job_starts_together_sees_its_peers_and_is_suspended_whole() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = Pool::new(3);
    let log = pool.shared_log();
    let alice = pool.user("glgang_a", 0);
    let script = member_script(&alice.work, &log);
    // First a job larger than the pool: it must wait and hold nothing,
    // while the 3-node job behind it runs.
    alice.submit(
        "big.sub",
        &format!(
            "universe = parallel\nexecutable = {script}\narguments = 1 1\nmachine_count = 4\nqueue\n"
        ),
    );
    alice.submit("gang.sub", &gang_submit(&script, "suspend", 40, 400));
    let started = Instant::now();
    wait_for(&pool, 90, "all three members running", || {
        all_in(&alice.gang(2), 3, |s| *s == JobState::Running).then_some(())
    });
    // One grant placed all three (the coordinator's log says how).
    let clog = std::fs::read_to_string(&pool.coordinator.log).unwrap_or_default();
    let grants: Vec<&str> = clog
        .lines()
        .filter(|l| l.contains("gang granted"))
        .collect();
    assert_eq!(grants.len(), 1, "one gang grant: {grants:?}");
    assert!(grants[0].contains("members=3"), "{}", grants[0]);
    let hosts: std::collections::BTreeSet<String> = (0..3).map(|r| host_of(&alice, 2, r)).collect();
    assert_eq!(hosts.len(), 3, "one member per station: {hosts:?}");
    eprintln!(
        "gang running {:.1} s after submit",
        started.elapsed().as_secs_f64()
    );
    // Every member is ticking.
    wait_for(&pool, 30, "every member ticking", || {
        ticks(&log).iter().all(|t| *t >= 2).then_some(())
    });
    // The 4-node job waits and no station holds a node for it.
    assert!(alice.gang(1).iter().all(|j| j.state == JobState::Idle));
    assert!(!clog.contains("members=4"));

    // Security: another home (station1's credential) can neither hold nor
    // vacate station0's member on its host.
    let target = host_of(&alice, 2, 1);
    let k: usize = target.trim_start_matches("station").parse().unwrap();
    let other = pool.keys.station("station1");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    for path in ["gang?hold=true", "vacate"] {
        let code = rt.block_on(async {
            http.post(format!(
                "http://{}/v1/guests/2.1/{path}",
                pool.stations[k].addr
            ))
            .bearer_auth(&other)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
        });
        if target == "station1" {
            // station1's own token names station1 as the home: no guest
            // of that home runs there.
            assert!(code == 403 || code == 404, "{path}: {code}");
        } else {
            assert_eq!(code, 403, "{path}: another home refused");
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        all_in(&alice.gang(2), 3, |s| *s == JobState::Running),
        "nothing changed"
    );

    // Member 1's owner returns: its ladder suspends it, and the home holds
    // the two others.
    let before = ticks(&log);
    pool.owner(&target, "active");
    wait_for(&pool, 60, "all three members suspended", || {
        all_in(&alice.gang(2), 3, |s| *s == JobState::Suspended).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    let frozen = ticks(&log);
    std::thread::sleep(Duration::from_secs(4));
    let now = ticks(&log);
    assert_eq!(
        now,
        frozen,
        "no member runs while the gang is suspended\n{}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default(),
        pool.logs()
    );
    assert!(frozen.iter().zip(before).all(|(a, b)| *a >= b));

    // Member 2's own owner returns too while the gang holds it; then
    // member 1's owner leaves. The home releases 0 and 2, but 2's own
    // owner keeps it suspended (its host says so): the gang is held again
    // for that owner, as for any member's owner.
    let other = host_of(&alice, 2, 2);
    pool.owner(&other, "active");
    std::thread::sleep(Duration::from_secs(2));
    pool.owner(&target, "idle");
    let released = Instant::now();
    let home_log = || std::fs::read_to_string(&pool.stations[0].log).unwrap_or_default();
    wait_for(
        &pool,
        60,
        "the home to hear that member 2's owner is back",
        || {
            home_log()
                .contains("released with its gang, but its own owner is back")
                .then_some(())
        },
    );
    wait_for(
        &pool,
        60,
        "the gang held again for member 2's owner",
        || {
            if !all_in(&alice.gang(2), 3, |s| *s == JobState::Suspended) {
                return None;
            }
            let a = ticks(&log);
            std::thread::sleep(Duration::from_secs(4));
            (ticks(&log) == a && all_in(&alice.gang(2), 3, |s| *s == JobState::Suspended))
                .then_some(())
        },
    );
    eprintln!(
        "gang held again for member 2's owner {:.1} s after member 1's owner left",
        released.elapsed().as_secs_f64()
    );

    // Member 2's owner leaves: all three resume and rank 0 ends the job.
    pool.owner(&other, "idle");
    wait_for(&pool, 90, "all three members running again", || {
        let g = alice.gang(2);
        (all_in(&g, 3, |s| {
            matches!(s, JobState::Running | JobState::Completed { .. })
        }))
        .then_some(())
    });
    let done = wait_for(&pool, 120, "the gang to complete", || {
        let g = alice.gang(2);
        all_in(&g, 3, |s| matches!(s, JobState::Completed { .. })).then_some(g)
    });
    for j in &done {
        assert_eq!(
            j.state,
            JobState::Completed { exit_code: 7 },
            "member {} completes with rank 0's exit code",
            j.id
        );
    }
    let after = ticks(&log);
    assert!(
        after[1] < 400 && after[2] < 400,
        "the others were stopped with the gang"
    );
    for rank in 0..3 {
        let out = wait_for(&pool, 30, "member output delivered", || {
            std::fs::read_to_string(alice.work.join(format!("out.{rank}"))).ok()
        });
        assert!(
            out.contains(&format!("rank={rank} procno={rank} nprocs=3")),
            "out.{rank}: {out}"
        );
        assert!(
            out.contains("stations=station0,station1,station2")
                || hosts.iter().all(|h| out.contains(h.as_str())),
            "out.{rank}: {out}"
        );
        assert!(
            out.contains("peers=127.0.0.1,127.0.0.1,127.0.0.1"),
            "out.{rank}: {out}"
        );
    }
    // The big job still waits.
    assert!(alice.gang(1).iter().all(|j| j.state == JobState::Idle));
    assert_eq!(alice.gang(1).len(), 4);
    let _ = alice.glean(&["rm", "1"]);
}

/// Member 1 exits (0) after 2 ticks, before rank 0; then member 2's owner
/// returns and the gang is vacated. As in HTCondor's parallel universe,
/// where a node evicted requeues the whole job, the job runs again whole
/// from the start: member 1 goes back to the queue with the others and
/// runs again in the second run.
#[test]
fn with_vacate_a_returning_owner_sends_the_whole_gang_back_to_idle() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = Pool::new(3);
    let log = pool.shared_log();
    let bob = pool.user("glgang_b", 0);
    let script = member_script(&bob.work, &log);
    bob.submit("gang.sub", &gang_submit_args(&script, "vacate", "16 400 2"));
    wait_for(&pool, 90, "all three members running", || {
        all_in(&bob.gang(1), 3, |s| *s == JobState::Running).then_some(())
    });
    wait_for(&pool, 30, "member 1 exited before rank 0", || {
        let g = bob.gang(1);
        (g.len() == 3 && g[1].state == JobState::Completed { exit_code: 0 }).then_some(())
    });
    let g = bob.gang(1);
    assert!(
        g[0].state == JobState::Running && g[2].state == JobState::Running,
        "the others run on: {:?}",
        g.iter().map(|j| (j.id, &j.state)).collect::<Vec<_>>()
    );
    let target = host_of(&bob, 1, 2);
    let vacated = Instant::now();
    pool.owner(&target, "active");
    // All three leave and the job is idle, member 1 too (only two
    // stations are free: it cannot start again until the owner leaves).
    wait_for(&pool, 60, "all three members back to idle", || {
        all_in(&bob.gang(1), 3, |s| *s == JobState::Idle).then_some(())
    });
    eprintln!(
        "gang vacated, member 1 back in the queue, {:.1} s after the owner's return",
        vacated.elapsed().as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(3));
    let idle = ticks(&log);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(ticks(&log), idle, "no member runs after the vacate");
    assert!(bob.gang(1).iter().all(|j| j.state == JobState::Idle));
    pool.owner(&target, "idle");
    let done = wait_for(&pool, 150, "the gang to run again and complete", || {
        let g = bob.gang(1);
        all_in(&g, 3, |s| matches!(s, JobState::Completed { .. })).then_some(g)
    });
    for j in &done {
        assert!(
            j.run_count >= 2,
            "member {} ran twice: {}",
            j.id,
            j.run_count
        );
        // Member 1 exited on its own again, before rank 0.
        let code = if j.id.proc == 1 { 0 } else { 7 };
        assert_eq!(j.state, JobState::Completed { exit_code: code });
    }
    for rank in 0..3 {
        let out = wait_for(&pool, 30, "member output delivered", || {
            std::fs::read_to_string(bob.work.join(format!("out.{rank}"))).ok()
        });
        // Exactly one run's output: one header line.
        assert_eq!(out.matches("rank=").count(), 1, "out.{rank}: {out}");
    }
}

#[test]
fn under_ll_k_a_member_lingers_where_its_owner_lets_guests_linger() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = Pool::with_station_keys(3, "eviction_policy = \"linger_longer\"\n");
    let log = pool.shared_log();
    let carol = pool.user("glgang_c", 0);
    let script = member_script(&carol.work, &log);
    carol.submit("gang.sub", &gang_submit(&script, "suspend", 16, 400));
    wait_for(&pool, 90, "all three members running", || {
        all_in(&carol.gang(1), 3, |s| *s == JobState::Running).then_some(())
    });
    wait_for(&pool, 30, "every member ticking", || {
        ticks(&log).iter().all(|t| *t >= 1).then_some(())
    });
    let target = host_of(&carol, 1, 1);
    pool.owner(&target, "active");
    std::thread::sleep(Duration::from_secs(2));
    let before = ticks(&log);
    std::thread::sleep(Duration::from_secs(4));
    let after = ticks(&log);
    assert!(
        after.iter().zip(before).all(|(a, b)| *a >= b + 2),
        "every member runs on, the lingering one too: {before:?} -> {after:?}\n{}",
        pool.logs()
    );
    let g = carol.gang(1);
    assert!(
        all_in(&g, 3, |s| *s == JobState::Running),
        "{:?}",
        g.iter().map(|j| (j.id, &j.state)).collect::<Vec<_>>()
    );
    let done = wait_for(&pool, 90, "the gang to complete", || {
        let g = carol.gang(1);
        all_in(&g, 3, |s| matches!(s, JobState::Completed { .. })).then_some(g)
    });
    for j in &done {
        assert_eq!(j.state, JobState::Completed { exit_code: 7 });
        assert_eq!(j.run_count, 1, "member {} ran once", j.id);
    }
    pool.owner(&target, "idle");
}

/// The submit file of a reconfigurable job of `k` members.
fn reconfigure_submit(script: &str, k: u32, min: u32, rank0: u32, others: u32) -> String {
    format!(
        "universe = parallel\nexecutable = {script}\narguments = {rank0} {others}\n\
         machine_count = {k}\ngang_policy = reconfigure\ngang_min = {min}\ngang_shape = any\n\
         output = out.$(Node)\nerror = err.$(Node)\nqueue\n"
    )
}

/// The coordinator's gang grants so far: the member count of each.
fn gang_grants(pool: &Pool) -> Vec<String> {
    std::fs::read_to_string(&pool.coordinator.log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("gang granted"))
        .map(|l| {
            l.split("members=")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

#[test]
fn under_reconfiguration_an_owner_back_restarts_the_gang_on_the_idle_stations() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = Pool::new(3);
    let log = pool.shared_log();
    let dana = pool.user("glgang_d", 0);
    let script = member_script(&dana.work, &log);
    wait_idle_stations(&pool, &dana, 3);
    dana.submit("gang.sub", &reconfigure_submit(&script, 3, 1, 20, 400));
    let started = Instant::now();
    wait_for(&pool, 90, "all three members running", || {
        all_in(&dana.gang(1), 3, |s| *s == JobState::Running).then_some(())
    });
    wait_for(&pool, 30, "every member ticking", || {
        ticks(&log).iter().all(|t| *t >= 1).then_some(())
    });
    assert_eq!(
        gang_grants(&pool),
        ["3"],
        "three idle stations: three nodes"
    );
    // Member 2's owner returns: the gang restarts on the two idle stations.
    let busy = host_of(&dana, 1, 2);
    pool.owner(&busy, "active");
    let shrunk = Instant::now();
    let g = wait_for(&pool, 90, "the gang running again on two stations", || {
        let g = dana.gang(1);
        (g.len() == 3
            && g[0].state == JobState::Running
            && g[1].state == JobState::Running
            && g[0].run_count == 2
            && g[1].run_count == 2
            && g[2].state == JobState::Idle)
            .then_some(g)
    });
    eprintln!(
        "gang restarted on 2 stations {:.1} s after the owner's return",
        shrunk.elapsed().as_secs_f64()
    );
    assert_eq!(
        gang_grants(&pool),
        ["3", "2"],
        "the second grant has two nodes"
    );
    let hosts: Vec<String> = g[..2].iter().map(|j| j.host.clone().unwrap()).collect();
    assert!(
        !hosts.contains(&busy),
        "never on the busy station: {hosts:?}"
    );
    assert_ne!(hosts[0], hosts[1]);
    // The unused member waits with the job: no demand, never placed alone.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(dana.gang(1)[2].state, JobState::Idle);
    assert_eq!(gang_grants(&pool), ["3", "2"]);
    let done = wait_for(&pool, 120, "the gang to complete", || {
        let g = dana.gang(1);
        all_in(&g, 3, |s| matches!(s, JobState::Completed { .. })).then_some(g)
    });
    eprintln!(
        "reconfigured gang done {:.1} s after submit",
        started.elapsed().as_secs_f64()
    );
    // The job is done, every proc of it: the unused rank too, with rank
    // 0's code; it ran only in the first run.
    for j in &done {
        assert_eq!(j.state, JobState::Completed { exit_code: 7 }, "{}", j.id);
    }
    assert_eq!(done[2].run_count, 1);
    // Every proc of the job ends with its files: the unused rank's are
    // there, empty (no output of its own from the run that ended the job).
    for name in ["out.2", "err.2"] {
        let text = std::fs::read_to_string(dana.work.join(name))
            .unwrap_or_else(|e| panic!("{name} of the unused rank: {e}"));
        assert_eq!(text, "", "{name} of the unused rank is empty");
    }
    // Each member of the second run knew its actual peers.
    for rank in 0..2 {
        let out = wait_for(&pool, 30, "member output delivered", || {
            std::fs::read_to_string(dana.work.join(format!("out.{rank}"))).ok()
        });
        assert_eq!(out.matches("rank=").count(), 1, "out.{rank}: {out}");
        assert!(
            out.contains(&format!("rank={rank} procno={rank} nprocs=2 ")),
            "out.{rank}: {out}"
        );
        assert!(
            out.contains(&format!("stations={},{} ", hosts[0], hosts[1])),
            "out.{rank} names the two stations it ran with ({hosts:?}): {out}"
        );
        assert!(
            out.contains("peers=127.0.0.1,127.0.0.1\n"),
            "out.{rank}: {out}"
        );
    }
    pool.owner(&busy, "idle");
}

#[test]
fn a_home_killed_while_its_gang_is_held_releases_it_when_the_owner_leaves() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // station0 is the home only: killing it kills no member.
    let mut pool = Pool::build(4, |k| {
        if k == 0 {
            "role = \"submit_only\"\n".to_string()
        } else {
            String::new()
        }
    });
    let log = pool.shared_log();
    let erin = pool.user("glgang_e", 0);
    let script = member_script(&erin.work, &log);
    erin.submit("gang.sub", &gang_submit(&script, "suspend", 30, 400));
    wait_for(&pool, 90, "all three members running", || {
        all_in(&erin.gang(1), 3, |s| *s == JobState::Running).then_some(())
    });
    wait_for(&pool, 30, "every member ticking", || {
        ticks(&log).iter().all(|t| *t >= 1).then_some(())
    });
    let target = host_of(&erin, 1, 1);
    pool.owner(&target, "active");
    wait_for(&pool, 60, "all three members suspended", || {
        all_in(&erin.gang(1), 3, |s| *s == JobState::Suspended).then_some(())
    });
    // The home dies without a word, and comes back.
    pool.kill_station(0);
    std::thread::sleep(Duration::from_secs(1));
    pool.start_station(0);
    let restarted = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let frozen = ticks(&log);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        ticks(&log),
        frozen,
        "still held after the restart\n{}",
        pool.logs()
    );
    assert!(all_in(&erin.gang(1), 3, |s| *s == JobState::Suspended));
    // The owner leaves: the restarted home releases the two it held.
    pool.owner(&target, "idle");
    wait_for(&pool, 60, "every member ticking again", || {
        let t = ticks(&log);
        t.iter().zip(frozen).all(|(a, b)| *a >= b + 2).then_some(())
    });
    eprintln!(
        "gang resumed {:.1} s after the home's restart",
        restarted.elapsed().as_secs_f64()
    );
    let done = wait_for(&pool, 120, "the gang to complete", || {
        let g = erin.gang(1);
        all_in(&g, 3, |s| matches!(s, JobState::Completed { .. })).then_some(g)
    });
    for j in &done {
        assert_eq!(j.state, JobState::Completed { exit_code: 7 });
        assert_eq!(j.run_count, 1, "member {} ran once", j.id);
    }
}

#[test]
fn rm_of_one_member_or_of_the_cluster_stops_every_member() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = Pool::new(3);
    let fred = pool.user("glgang_f", 0);
    for (cluster, what) in [(1u64, "1.2"), (2, "2")] {
        let log = pool.shared_log_named(&format!("job{cluster}.log"));
        let script = member_script_named(&fred.work, &log, &format!("member{cluster}.sh"));
        fred.submit(
            &format!("gang{cluster}.sub"),
            &gang_submit(&script, "suspend", 400, 400),
        );
        wait_for(&pool, 90, "all three members running", || {
            all_in(&fred.gang(cluster), 3, |s| *s == JobState::Running).then_some(())
        });
        wait_for(&pool, 30, "every member ticking", || {
            ticks(&log).iter().all(|t| *t >= 1).then_some(())
        });
        let out = fred.glean(&["rm", what]);
        assert!(
            out.status.success(),
            "rm {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let gone = Instant::now();
        wait_for(&pool, 30, "every member removed", || {
            all_in(&fred.gang(cluster), 3, |s| *s == JobState::Removed).then_some(())
        });
        // Every member's process stops on its host.
        wait_for(&pool, 30, "no member ticking", || {
            let a = ticks(&log);
            std::thread::sleep(Duration::from_secs(3));
            (ticks(&log) == a).then_some(())
        });
        eprintln!(
            "rm {what}: all three stopped within {:.1} s",
            gone.elapsed().as_secs_f64()
        );
        // And their stations are free for the next gang (the loop's next
        // job needs all three).
    }
}
