//! Issue 12, item 4, on a real station: two users' guests run at once on
//! one station daemon (in process, placed straight through `/v1/place` as
//! a home would), each as its own slot account, and each tries to harm
//! the other and to read the daemon's state. Needs root and
//! `/usr/bin/python3` (skipped with a printed reason otherwise).
//!
//! Each guest (a Python script, the job's transferred executable) writes a
//! world-readable secret in its sandbox, and once the test has told it the
//! other's host PID and sandbox it tries to: read, list and write the
//! other's sandbox; list the execute directory and the state directory;
//! `kill -9` and `ptrace(PTRACE_ATTACH)` the other, read its
//! `/proc/PID/mem` and `environ`; read `queue.db`, the station's token, the guest
//! records and a spooled output file (created 0644, as a home would have
//! left it), and list the spool. Every attempt must be refused (the errno
//! is asserted), the victim must still run, and both jobs must complete
//! normally with their own exit codes and outputs (not "completed, exit
//! 137"). Asserted about each guest: a slot uid of its own (never
//! `nobody`, root or the daemon's), `SCHED_IDLE` and nice 19 that it cannot
//! leave, no supplementary groups, its own cgroup (cgroups are on by
//! default) and, where the kernel allows, its own PID namespace (it is
//! PID 1 there, sees a handful of processes, and the other's PID not at
//! all). A third guest is refused while both slots are taken. Afterwards
//! no process of either slot is left and the sandboxes are gone.

use gleaner_proto::job::{JobDescription, JobEventKind, JobId, JobState};
use gleaner_proto::wire::{PlacementRequest, PlacementResponse, RejectReason};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::host::starter::GuestListing;
use gleaner_station::isolation::{
    CgroupConfig, CgroupLayout, CgroupManager, CgroupMode, CgroupSettings, processes_of_uid,
};
use gleaner_station::node::{Running, spawn_for_test};
use gleaner_testkit::TestKeys;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;
use common::shadow::Shadow;
use common::{RemoveFiles, place, serial_lock, shared_tempdir_in};

const HOST: &str = "shared-host";
const PYTHON: &str = "/usr/bin/python3";
/// Idle guests on a machine busy with builds start slowly.
const PATIENCE: Duration = Duration::from_secs(300);

/// The attacking guest: `job.py NAME STATE_DIR EXECUTE_DIR EXIT_CODE`.
const GUEST_PY: &str = r#"#!/usr/bin/python3 -I
import ctypes, errno, json, os, sys, time
name, state, execute, code = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def wait_for(path, secs=600):
    t = time.time()
    while not os.path.exists(path):
        if time.time() - t > secs:
            sys.exit(99)
        time.sleep(0.02)

def attempt(f):
    try:
        r = f()
        return sorted(r) if isinstance(r, list) else "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))

SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
tag = os.path.basename(state.rstrip("/"))

def scratch(d, who):
    return os.path.join(d, "gleaner-%s-%s-%s" % (os.path.basename(os.path.dirname(state)), tag, who))

with open("secret.txt", "w") as f:
    f.write("secret of " + name)
os.chmod("secret.txt", 0o644)
# The same, left readable in the shared scratch directories.
for d in SCRATCH:
    with open(scratch(d, name), "w") as f:
        f.write("scratch secret of " + name)
    os.chmod(scratch(d, name), 0o644)
open("ready", "w").close()
wait_for("go")
go = json.load(open("go"))
pid, sandbox, other = go["pid"], go["sandbox"], go["name"]
libc = ctypes.CDLL(None, use_errno=True)

def ptrace_attach():
    if libc.ptrace(ctypes.c_long(16), ctypes.c_long(pid), None, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    libc.ptrace(ctypes.c_long(17), ctypes.c_long(pid), None, None)

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return line.split()[1]

def read(*p):
    return lambda: open(os.path.join(*p), "rb").read()

pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
r = {
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "my_pid": os.getpid(), "proc_pids": pids, "sees_other": pid in pids,
    "read_other_secret": attempt(read(sandbox, "secret.txt")),
    "list_other_sandbox": attempt(lambda: os.listdir(sandbox)),
    "write_other_sandbox": attempt(lambda: open(os.path.join(sandbox, "planted"), "w").close()),
    "list_execute_dir": attempt(lambda: os.listdir(execute)),
    "list_state_dir": attempt(lambda: os.listdir(state)),
    "kill_other": attempt(lambda: os.kill(pid, 9)),
    "ptrace_other": attempt(ptrace_attach),
    "read_other_mem": attempt(lambda: open("/proc/%d/mem" % pid, "rb").read(1)),
    "read_other_environ": attempt(read("/proc/%d/environ" % pid)),
    "read_queue_db": attempt(read(state, "queue.db")),
    "read_station_token": attempt(read(state, "station.token")),
    "list_guest_records": attempt(lambda: os.listdir(os.path.join(state, "guests"))),
    "list_spool": attempt(lambda: os.listdir(os.path.join(state, "spool"))),
    "read_spool_file": attempt(read(state, "spool", "9.0", "out.txt")),
    "sched": os.sched_getscheduler(0),
    "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "leave_idle": attempt(lambda: os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))),
    "lower_nice": attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, 0)),
    "no_new_privs": status("NoNewPrivs"),
    "cgroup": open("/proc/self/cgroup").read(),
    "read_other_scratch": {d: attempt(read(scratch(d, other))) for d in SCRATCH},
}
with open("result.tmp", "w") as f:
    json.dump(r, f)
os.rename("result.tmp", "result.json")
wait_for("end")
with open("output.txt", "w") as f:
    f.write(name + " finished")
print("done", name)
sys.exit(code)
"#;

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

struct Station {
    addr: SocketAddr,
    keys: TestKeys,
    running: Option<Running>,
    http: reqwest::Client,
    state: PathBuf,
    execute: PathBuf,
}

impl Station {
    fn token(&self) -> String {
        self.keys.station("home")
    }

    async fn place(
        &self,
        shadow: &Shadow,
        job: JobId,
        owner: &str,
        args: &[&str],
    ) -> PlacementResponse {
        let claim = self.keys.claim(HOST, "home", &shadow.url);
        let mut d = JobDescription::new(owner, "job.py");
        d.arguments = args.iter().map(|a| a.to_string()).collect();
        d.transfer_output_files = Some(vec!["output.txt".into()]);
        shadow.put_input(job, "job.py", GUEST_PY.as_bytes());
        let req = PlacementRequest {
            protocol: gleaner_proto::wire::PROTOCOL_VERSION,
            job_id: job,
            home: "home".into(),
            claim_id: claim,
            description: d,
            shadow: shadow.url.clone(),
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
}

async fn wait<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(t0.elapsed() < PATIENCE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn alive(pid: i32) -> bool {
    common::alive(pid)
}

fn ns_of(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()
}

/// Stand-ins for what a home would have in the state directory before
/// the station starts: another user's spooled output, created 0644.
fn seed_state(state: &Path) {
    let job = state.join("spool/9.0");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("out.txt"), "another user's output").unwrap();
    for p in [state.to_path_buf(), state.join("spool"), job.clone()] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(job.join("out.txt"), std::fs::Permissions::from_mode(0o644)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_users_guests_run_at_once_and_cannot_touch_each_other_or_the_daemon() {
    if gleaner_testkit::skip_unless_root("runs guests as slot accounts") {
        return;
    }
    if !Path::new(PYTHON).exists() {
        println!("skipped: no {PYTHON} (the guests are Python scripts)");
        return;
    }
    let _l = serial_lock();
    // Outside /tmp: a sandbox below one of the scratch directories keeps
    // that one shared (mounting over it would hide the sandbox).
    let dir = shared_tempdir_in("/var/lib");
    let root = dir.path();
    let state = root.join("station");
    let scratch_files: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .flat_map(|d| {
            let base = root.file_name().unwrap().to_string_lossy().into_owned();
            ["a", "b"].map(|n| Path::new(d).join(format!("gleaner-{base}-station-{n}")))
        })
        .collect();
    let _scratch_cleanup = RemoveFiles(scratch_files.clone());
    seed_state(&state);
    // The pool's keys stay with the coordinator; the station's own token
    // is in its state directory, where no guest may read it.
    let keys = TestKeys::in_dir(&root.join("coord")).unwrap();
    let token_file = keys
        .station_token_file(HOST, &state.join("station.token"))
        .unwrap();
    let parent = format!("gleaner-test-{}-isolated", std::process::id());
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
            // The station's default: cgroups wherever it may create them.
            cgroups: CgroupMode::Auto,
            parent: parent.clone(),
            // A machine busy with builds would starve an idle subtree;
            // each guest's own group is idle all the same (asserted).
            parent_idle: false,
            slot_prefix: gleaner_testkit::slot_prefix(),
            slot_count: Some(2),
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
    let st = Station {
        addr,
        keys,
        running: Some(running),
        http: reqwest::Client::new(),
        execute: state.join("execute"),
        state: state.clone(),
    };
    let shadow = Shadow::start().await;
    let (state_s, exec_s) = (
        st.state.display().to_string(),
        st.execute.display().to_string(),
    );
    let jobs = [
        (JobId::new(1, 0), "alice", "a", 3),
        (JobId::new(2, 0), "bob", "b", 4),
    ];
    for (job, owner, name, code) in jobs {
        let r = st
            .place(
                &shadow,
                job,
                owner,
                &[name, &state_s, &exec_s, &code.to_string()],
            )
            .await;
        assert!(matches!(r, PlacementResponse::Accepted { .. }), "{r:?}");
    }
    // Both slots are taken: a third guest waits for one (the CPUs would
    // allow it).
    match st
        .place(
            &shadow,
            JobId::new(3, 0),
            "carol",
            &["c", &state_s, &exec_s, "0"],
        )
        .await
    {
        PlacementResponse::Rejected { reason, message } => {
            assert_eq!(reason, RejectReason::NoResources);
            // The host offers no more CPUs than it has free slot accounts
            // (admission.rs), so the fit check refuses before a slot lease
            // is tried.
            assert!(
                message.contains("0 free") || message.contains("no free slot"),
                "{message}"
            );
        }
        r => panic!("a third guest with two slots: {r:?}"),
    }

    // Both running, each with its pid and slot.
    let listing = wait("both guests started", async || {
        let l = st.guests().await;
        (l.len() == 2 && l.iter().all(|g| g.pid.is_some() && g.uid.is_some())).then_some(l)
    })
    .await;
    let by_job = |j: JobId| listing.iter().find(|g| g.info.job == j).unwrap().clone();
    let (ga, gb) = (by_job(jobs[0].0), by_job(jobs[1].0));
    let sandboxes = [st.execute.join(&ga.guest_id), st.execute.join(&gb.guest_id)];
    let guests = [&ga, &gb];
    let uids = [ga.uid.unwrap(), gb.uid.unwrap()];
    assert_ne!(uids[0], uids[1], "two guests share a uid");
    for (g, sb) in guests.iter().zip(&sandboxes) {
        let uid = g.uid.unwrap();
        assert!(uid != 0 && uid != 65534, "guest as uid {uid}");
        assert!(
            g.slot
                .as_deref()
                .is_some_and(|s| s.starts_with(gleaner_testkit::TEST_SLOT_PREFIX)),
            "{:?}",
            g.slot
        );
        let md = std::fs::metadata(sb).unwrap();
        assert_eq!((md.uid(), md.mode() & 0o7777), (uid, 0o700), "sandbox");
    }
    let md = std::fs::metadata(&st.execute).unwrap();
    assert_eq!((md.uid(), md.mode() & 0o7777), (0, 0o711), "execute dir");
    assert_eq!(
        std::fs::metadata(&st.state).unwrap().mode() & 0o7777,
        0o711,
        "state dir: searchable, not listable"
    );
    for sb in &sandboxes {
        wait("guest ready", async || {
            sb.join("ready").exists().then_some(())
        })
        .await;
    }
    let pids = [ga.pid.unwrap(), gb.pid.unwrap()];
    for i in 0..2 {
        let go = serde_json::json!({
            "pid": pids[1 - i],
            "sandbox": sandboxes[1 - i],
            "name": jobs[1 - i].2,
        });
        std::fs::write(sandboxes[i].join("go"), go.to_string()).unwrap();
    }
    for sb in &sandboxes {
        wait("attacks done", async || {
            sb.join("result.json").exists().then_some(())
        })
        .await;
    }
    for &pid in &pids {
        assert!(alive(pid as i32), "guest {pid} did not survive the attacks");
    }
    // Seen from outside: separate PID namespaces where the kernel allows,
    // idle scheduling, separate cgroups.
    let own_ns = ns_of(std::process::id());
    let ns = [ns_of(pids[0]), ns_of(pids[1])];
    let namespaces = ns[0] != own_ns;
    println!("guests in their own PID namespaces: {namespaces}");
    if namespaces {
        assert_ne!(ns[0], ns[1], "one PID namespace for two guests");
        assert_ne!(ns[1], own_ns);
    }
    for &pid in &pids {
        let (_, policy, _) = common::proc_stat(pid as i32).unwrap();
        assert_eq!(
            policy,
            libc::SCHED_IDLE as u32,
            "guest {pid} not SCHED_IDLE"
        );
    }

    let results: Vec<serde_json::Value> = sandboxes
        .iter()
        .map(|sb| {
            serde_json::from_str(&std::fs::read_to_string(sb.join("result.json")).unwrap()).unwrap()
        })
        .collect();
    for (i, r) in results.iter().enumerate() {
        println!("guest {} (uid {}): {r}", guests[i].guest_id, uids[i]);
        let s = |k: &str| r[k].as_str().unwrap_or("?").to_string();
        assert_eq!(r["uid"], uids[i]);
        assert_eq!(r["groups"], serde_json::json!([]), "supplementary groups");
        let daemon_files = [
            "read_other_secret",
            "list_other_sandbox",
            "write_other_sandbox",
            "read_queue_db",
            "read_station_token",
            "list_guest_records",
            "list_spool",
            "read_spool_file",
        ];
        if namespaces {
            // Its own root (`isolation::view`): none of it exists there;
            // the state directory is only the way to its sandbox, the
            // execute directory holds its sandbox alone.
            for k in daemon_files {
                assert_eq!(s(k), "ENOENT", "{k}");
            }
            assert_eq!(r["list_state_dir"], serde_json::json!(["execute"]));
            assert_eq!(
                r["list_execute_dir"],
                serde_json::json!([guests[i].guest_id])
            );
        } else {
            for k in daemon_files
                .into_iter()
                .chain(["list_execute_dir", "list_state_dir"])
            {
                assert_eq!(s(k), "EACCES", "{k}");
            }
        }
        // Out of sight in its own PID namespace, else untouchable.
        let (signal, procfile) = if namespaces {
            ("ESRCH", "ENOENT")
        } else {
            ("EPERM", "EACCES")
        };
        assert_eq!(s("kill_other"), signal, "kill -9 the other guest");
        assert_eq!(s("ptrace_other"), signal, "ptrace the other guest");
        assert_eq!(s("read_other_mem"), procfile, "/proc/PID/mem");
        assert_eq!(s("read_other_environ"), procfile, "/proc/PID/environ");
        if namespaces {
            // Its own tmpfs on /tmp, /var/tmp and /dev/shm: the other's
            // files there do not exist for it.
            for d in ["/tmp", "/var/tmp", "/dev/shm"] {
                assert_eq!(r["read_other_scratch"][d], "ENOENT", "other's file in {d}");
            }
            assert_eq!(r["my_pid"], 1, "PID 1 of its own namespace");
            assert_eq!(r["sees_other"], false);
            assert!(
                r["proc_pids"].as_array().unwrap().len() <= 3,
                "{}",
                r["proc_pids"]
            );
        }
        assert_eq!(r["sched"], libc::SCHED_IDLE, "SCHED_IDLE");
        assert_eq!(r["nice"], 19);
        assert_eq!(s("leave_idle"), "EPERM", "left SCHED_IDLE");
        assert_eq!(s("lower_nice"), "EACCES", "lowered its nice value");
        assert_eq!(s("no_new_privs"), "1");
        if cgroups.0.is_some() {
            let cg = s("cgroup");
            let own = format!("/{parent}/{}", guests[i].guest_id);
            assert!(cg.lines().any(|l| l.ends_with(&own)), "not in {own}: {cg}");
            assert!(!cg.contains(&guests[1 - i].guest_id));
        }
    }
    if namespaces {
        // What the guests left in their scratch directories is in their
        // own tmpfs, never in the host's.
        let on_host: Vec<&PathBuf> = scratch_files.iter().filter(|p| p.exists()).collect();
        assert!(on_host.is_empty(), "{on_host:?}");
    }
    // The victims are untouched: nothing planted, their secrets intact.
    for (i, sb) in sandboxes.iter().enumerate() {
        assert!(!sb.join("planted").exists());
        assert_eq!(
            std::fs::read_to_string(sb.join("secret.txt")).unwrap(),
            format!("secret of {}", jobs[i].2)
        );
    }

    // Both jobs end normally, with their own exit codes and outputs.
    for sb in &sandboxes {
        std::fs::write(sb.join("end"), "").unwrap();
    }
    for (job, _, name, code) in jobs {
        let done = wait("completed", async || {
            shadow.report(job, JobEventKind::Completed)
        })
        .await;
        assert_eq!(
            done.state,
            JobState::Completed { exit_code: code },
            "{:#?}",
            shadow.reports(job)
        );
        assert!(shadow.report(job, JobEventKind::Evicted).is_none());
        assert_eq!(
            shadow.output(job, "stdout"),
            format!("done {name}\n").as_bytes()
        );
        assert_eq!(
            shadow.file(job, "output.txt").as_deref(),
            Some(format!("{name} finished").as_bytes())
        );
    }
    // Nothing of either slot is left; the sandboxes are gone.
    wait("guests gone", async || {
        st.guests().await.is_empty().then_some(())
    })
    .await;
    for (uid, sb) in uids.iter().zip(&sandboxes) {
        assert!(
            processes_of_uid(*uid).is_empty(),
            "uid {uid} left processes"
        );
        assert!(!sb.exists(), "{} left behind", sb.display());
    }
    // Untouched by the guests. (The home may have removed it as the spool
    // of no job in its queue: it cleans such spools at start.)
    if let Ok(text) = std::fs::read_to_string(st.state.join("spool/9.0/out.txt")) {
        assert_eq!(text, "another user's output");
    }
    let mut st = st;
    if let Some(r) = st.running.take() {
        r.stop().await;
    }
    drop(cgroups);
}
