//! Guests isolated from each other and from the daemons (issue 12, item
//! 4), with real slot accounts and real processes. Needs root (skipped
//! with a printed reason otherwise).
//!
//! Every account a test creates is named `gltest-slot<pid><tag>-<n>`
//! (never a real slot's name) and removed on drop, even on failure; a
//! later run also removes accounts whose test process died before its
//! guard ran. Tests hold the station's real-test lock (shared with
//! `isolation_real` and the others), so no CPU-share measurement runs
//! beside the fork loop below.
//!
//! What is asserted:
//! - two guests as two slot accounts at once, with and without
//!   namespaces: each tries to read, list and write the other's sandbox,
//!   list the execute directory, `kill -9` and `ptrace(PTRACE_ATTACH)` the
//!   other, open its `/proc/PID/mem` and `environ`, read a 0600 root file
//!   (`queue.db`) and a 0700 root directory (the spool): all refused (the
//!   errno is checked); with namespaces the other's PID is absent from its
//!   `/proc` and it sees at most a handful of processes. Both run
//!   `SCHED_IDLE` at nice 19 without asking and cannot leave it, have no
//!   supplementary groups and `no_new_privs`, and both complete with
//!   their own outputs, nothing of the other's planted;
//! - a double-fork + `setsid` escapee with cgroups off outlives its guest
//!   and is gone after kill-by-uid; a fork loop is killed completely too,
//!   and so is a guest in its own PID namespace, waiter included;
//! - slots are exclusive, also between two pools (stations) over the same
//!   accounts; a slot with a lingering process is not leased until it is
//!   reaped; fixed slot uids (`first_uid`) are created and
//!   checked, and a slot is leased by uid (CRIU restores);
//! - an existing account with a login shell is refused as a slot;
//! - CRIU-style (reaped) guests keep the host's namespaces, and a CRIU job
//!   as a slot account is dumped and restored and goes on, still idle;
//! - with namespaces each guest has its own tmpfs on `/tmp`, `/var/tmp`
//!   and `/dev/shm`: the other's files there do not exist for it, and none
//!   reach the host's;
//! - a fork bomb stops at `RLIMIT_NPROC` (EAGAIN) and dies with its slot.

use gleaner_station::isolation::{
    CgroupConfig, CgroupLayout, CgroupManager, Confinement, GuestCgroup, GuestLauncher,
    GuestProcess, GuestSpec, GuestUser, IsolationError, NamespaceMode, REAP_TIMEOUT, RemoveOnDrop,
    SlotAccounts, SlotConfig, SlotPool, kill_uid, prepare_execute_dir, processes_of_uid,
};
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const TEST_PREFIX: &str = "gltest-slot";

fn root_or_skip(name: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        true
    } else {
        eprintln!("SKIP {name}: needs root (creates Unix accounts)");
        false
    }
}

/// The station's real-process tests run one at a time (see
/// `tests/common`); released when the file closes.
fn serial_lock() -> fs::File {
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/gleaner-station-real-tests.lock")
        .unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    f
}

/// Run an account tool, retrying while the account files are locked.
fn account_tool(tool: &str, name: &str) -> bool {
    for attempt in 0..40u64 {
        let st = Command::new(tool)
            .arg(name)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        match st.map(|s| s.code()) {
            Ok(Some(0)) => return true,
            // userdel/groupdel: 1 passwd locked, 10 group locked.
            Ok(Some(1 | 10)) => {
                std::thread::sleep(Duration::from_millis(25 * (attempt + 1).min(8)))
            }
            _ => return false,
        }
    }
    false
}

fn exists_in(file: &str, name: &str) -> bool {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(':').next() == Some(name))
}

/// Remove a test account: its processes, the account, its group.
fn remove_account(name: &str) {
    assert!(name.starts_with(TEST_PREFIX), "not a test account: {name}");
    if let Ok(Some(u)) = nix::unistd::User::from_name(name) {
        let _ = kill_uid(u.uid.as_raw(), REAP_TIMEOUT);
    }
    if exists_in("/etc/passwd", name) && !account_tool("userdel", name) {
        eprintln!("cleanup: userdel {name} failed");
    }
    if exists_in("/etc/group", name) && !account_tool("groupdel", name) {
        eprintln!("cleanup: groupdel {name} failed");
    }
}

/// Remove test accounts left by test processes that died before their
/// guards ran.
fn sweep_stale() {
    let me = std::process::id().to_string();
    for line in fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
    {
        let Some(name) = line.split(':').next() else {
            continue;
        };
        let Some(rest) = name.strip_prefix(TEST_PREFIX) else {
            continue;
        };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if pid.is_empty() || pid == me || Path::new("/proc").join(&pid).exists() {
            continue;
        }
        eprintln!("removing stale test account {name}");
        remove_account(name);
    }
}

/// Slot accounts created for one test, removed on drop.
struct TestAccounts {
    cfg: SlotConfig,
    accounts: Option<SlotAccounts>,
}

impl TestAccounts {
    fn config(tag: char, count: u32) -> SlotConfig {
        SlotConfig::new(format!("{TEST_PREFIX}{}{tag}-", std::process::id()), count)
    }

    /// Create (through the library's own `ensure`) and check.
    fn create(tag: char, count: u32) -> Self {
        Self::create_with(Self::config(tag, count))
    }

    fn create_with(cfg: SlotConfig) -> Self {
        sweep_stale();
        let mut t = TestAccounts {
            cfg: cfg.clone(),
            accounts: None,
        };
        t.accounts = Some(SlotAccounts::ensure(&cfg).unwrap());
        t
    }

    fn accounts(&self) -> SlotAccounts {
        self.accounts.clone().unwrap()
    }
}

impl Drop for TestAccounts {
    fn drop(&mut self) {
        for name in self.cfg.names() {
            remove_account(&name);
            if exists_in("/etc/passwd", &name) || exists_in("/etc/group", &name) {
                eprintln!("cleanup: account {name} left behind");
            }
        }
    }
}

/// Reap children re-parented to this process (a child subreaper: the
/// development VMs' PID 1 does not reap, so orphans would stay zombies).
struct Subreaper;

impl Subreaper {
    fn new() -> Self {
        // SAFETY: plain prctl on ourselves.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
        Subreaper
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        let mut status = 0;
        // SAFETY: reaping our own (adopted) children, without blocking.
        while unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } > 0 {}
    }
}

/// Kills a guest on drop.
struct Guest(GuestProcess);

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = self.0.child.kill();
        let _ = self.0.wait();
    }
}

fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "timed out after {secs} s: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(g: &mut Guest, secs: u64) -> ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(st) = g.0.try_wait().unwrap() {
            return st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "guest did not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Live (not zombie) process?
fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| !r.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

fn children_of(pid: u32) -> Vec<u32> {
    fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// A 0755 temporary directory: guests must pass through it.
fn shared_tempdir(prefix: &str) -> tempfile::TempDir {
    shared_tempdir_in(std::env::temp_dir(), prefix)
}

/// The same below `dir`.
fn shared_tempdir_in(dir: impl AsRef<Path>, prefix: &str) -> tempfile::TempDir {
    let t = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(dir)
        .unwrap();
    fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
    t
}

/// The scratch files two guests of one test may leave in the host's
/// shared directories (named `gleaner-<tag>-<guest>`).
fn names_of(dir: &str, tag: &str) -> Vec<PathBuf> {
    ["a", "b"]
        .iter()
        .map(|n| Path::new(dir).join(format!("gleaner-{tag}-{n}")))
        .collect()
}

/// Those files, removed on drop (guests without a mount namespace write
/// them into the host's directories).
struct ScratchFiles(Vec<PathBuf>);

impl ScratchFiles {
    fn present(&self) -> Vec<PathBuf> {
        self.0
            .iter()
            .filter(|p| fs::symlink_metadata(p).is_ok())
            .cloned()
            .collect()
    }
}

impl Drop for ScratchFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = fs::remove_file(p);
        }
    }
}

/// A guest cgroup subtree of this test, removed on drop (groups first).
struct TestCgroups(CgroupManager);

impl TestCgroups {
    /// Cgroups as a station has them by default where it may, or `None`
    /// (printed) when this machine has none.
    fn new(tag: char) -> Option<Self> {
        let layout = match CgroupLayout::detect() {
            Ok(l) => l,
            Err(e) => {
                eprintln!("no cgroups here ({e}): guests run without");
                return None;
            }
        };
        let mut c = CgroupConfig::new(layout);
        c.parent = format!("gleaner-test-{}-slots{tag}", std::process::id());
        // An idle subtree starves whenever the machine is busy (parallel
        // builds): these guests must make progress, so normal weight here.
        c.parent_idle = false;
        let m = CgroupManager::new(c).ok()?;
        m.ensure_parent().ok()?;
        Some(TestCgroups(m))
    }
}

impl Drop for TestCgroups {
    fn drop(&mut self) {
        for job in self.0.list().unwrap_or_default() {
            if let Ok(g) = self.0.open(&job) {
                drop(RemoveOnDrop(g));
            }
        }
        if let Err(e) = self.0.remove_parent() {
            eprintln!("cleanup: {e}");
        }
    }
}

/// The attacking guest. Writes its own world-readable secret (only the
/// sandbox's mode protects it), waits for its target from the test, tries
/// every attack, reports errnos in `result.json`, waits for the end, then
/// writes its output and exits 0.
const GUEST_PY: &str = r#"
import ctypes, errno, json, os, sys, time
name, state, execute, tag = sys.argv[1:5]
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")

def wait_for(path, secs=400):
    t = time.time()
    while not os.path.exists(path):
        if time.time() - t > secs:
            sys.exit(3)
        time.sleep(0.02)

def attempt(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))

with open("secret.txt", "w") as f:
    f.write("secret of " + name)
os.chmod("secret.txt", 0o644)
# The same, left readable in the shared scratch directories.
for d in SCRATCH:
    p = os.path.join(d, "gleaner-%s-%s" % (tag, name))
    with open(p, "w") as f:
        f.write("scratch secret of " + name)
    os.chmod(p, 0o644)

# A SysV shared-memory segment under a key the other guest knows.
libc0 = ctypes.CDLL(None, use_errno=True)
SHM_KEY = {"a": 0x474c5401, "b": 0x474c5402}
my_shm = libc0.shmget(ctypes.c_int(SHM_KEY[name]), ctypes.c_size_t(4096), ctypes.c_int(0o1000 | 0o644))

def shm_other():
    if libc0.shmget(ctypes.c_int(SHM_KEY[other]), ctypes.c_size_t(0), ctypes.c_int(0)) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

def fstype(d):
    for line in open("/proc/self/mountinfo"):
        left, right = line.split(" - ", 1)
        if left.split()[4] == d:
            found = right.split()[0]
    return locals().get("found", "none")
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

pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
r = {
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "my_pid": os.getpid(), "proc_pids": pids, "sees_other": pid in pids,
    "read_other_secret": attempt(lambda: open(os.path.join(sandbox, "secret.txt")).read()),
    "list_other_sandbox": attempt(lambda: os.listdir(sandbox)),
    "write_other_sandbox": attempt(lambda: open(os.path.join(sandbox, "planted"), "w").close()),
    "list_execute_dir": attempt(lambda: os.listdir(execute)),
    "kill_other": attempt(lambda: os.kill(pid, 9)),
    "ptrace_other": attempt(ptrace_attach),
    "read_other_mem": attempt(lambda: open("/proc/%d/mem" % pid, "rb").read(1)),
    "read_other_environ": attempt(lambda: open("/proc/%d/environ" % pid, "rb").read()),
    "read_queue_db": attempt(lambda: open(os.path.join(state, "queue.db"), "rb").read()),
    "list_spool": attempt(lambda: os.listdir(os.path.join(state, "spool"))),
    "read_spool_file": attempt(lambda: open(os.path.join(state, "spool", "job", "out.txt")).read()),
    "sched": os.sched_getscheduler(0),
    "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "leave_idle": attempt(lambda: os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))),
    "lower_nice": attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, 0)),
    "no_new_privs": status("NoNewPrivs"),
    "cgroup": open("/proc/self/cgroup").read(),
    "read_other_scratch": {d: attempt(lambda d=d: open(os.path.join(d, "gleaner-%s-%s" % (tag, other))).read()) for d in SCRATCH},
    "scratch_fs": {d: fstype(d) for d in SCRATCH},
    "other_shm": attempt(shm_other),
}
with open("result.tmp", "w") as f:
    json.dump(r, f)
os.rename("result.tmp", "result.json")
wait_for("end")
# Without an IPC namespace the segment would outlive the guest.
libc0.shmctl(ctypes.c_int(my_shm), ctypes.c_int(0), None)
with open("output.txt", "w") as f:
    f.write(name + " finished")
print("done", name)
"#;

/// Stand-ins for the daemons' state: a 0600 `queue.db`, a 0700 spool with
/// a 0644 file in it, in a directory everyone may search.
fn daemon_state(root: &Path) -> PathBuf {
    let state = root.join("state");
    fs::create_dir(&state).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(state.join("queue.db"), b"SQLite format 3\0 jobs").unwrap();
    fs::set_permissions(state.join("queue.db"), fs::Permissions::from_mode(0o600)).unwrap();
    let job = state.join("spool/job");
    fs::create_dir_all(&job).unwrap();
    fs::set_permissions(state.join("spool"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(job.join("out.txt"), "another user's output").unwrap();
    fs::set_permissions(job.join("out.txt"), fs::Permissions::from_mode(0o644)).unwrap();
    state
}

fn proc_mounts_of_self() -> usize {
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" - proc "))
        .count()
}

fn two_guests_attack_each_other(tag: char, namespaces: bool) {
    let name = format!("two_guests(namespaces={namespaces})");
    if !root_or_skip(&name) {
        return;
    }
    let policy = if namespaces {
        match Confinement::for_station(NamespaceMode::Required) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("SKIP {name}: {e}");
                return;
            }
        }
    } else {
        Confinement::new()
    };
    let _lock = serial_lock();
    let accounts = TestAccounts::create(tag, 2);
    let _reaper = Subreaper::new();
    // With namespaces, also in cgroups (the default wherever a station may
    // create them): joining the group, unsharing, mounting /proc and
    // dropping root all happen in one child before exec.
    let cgroups = if namespaces {
        TestCgroups::new(tag)
    } else {
        None
    };
    let pool = SlotPool::new(accounts.accounts());
    // Outside /tmp: a guest whose sandbox lies under one of the scratch
    // directories keeps that one shared (mounting over it would hide the
    // sandbox), and this test checks all three.
    let tmp = shared_tempdir_in("/var/lib", "glslots");
    let root = tmp.path();
    let state = daemon_state(root);
    let tag = format!("t{}{tag}", std::process::id());
    let scratch_files = ScratchFiles(
        ["/tmp", "/var/tmp", "/dev/shm"]
            .iter()
            .flat_map(|d| names_of(d, &tag))
            .collect(),
    );
    let execute = root.join("execute");
    prepare_execute_dir(&execute).unwrap();
    let bin = root.join("bin");
    fs::create_dir(&bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(bin.join("guest.py"), GUEST_PY).unwrap();
    let proc_mounts_before = proc_mounts_of_self();

    let leases = [pool.lease("job-a").unwrap(), pool.lease("job-b").unwrap()];
    let users: Vec<GuestUser> = leases.iter().map(|l| l.user().unwrap()).collect();
    assert_ne!(users[0].uid, users[1].uid);
    let names = ["a", "b"];
    let sandboxes: Vec<PathBuf> = names
        .iter()
        .map(|n| execute.join(format!("job-{n}")))
        .collect();
    let groups: Vec<Option<GuestCgroup>> = names
        .iter()
        .map(|n| {
            cgroups
                .as_ref()
                .map(|c| c.0.create(&format!("job-{n}")).unwrap())
        })
        .collect();
    let mut guests = Vec::new();
    for i in 0..2 {
        let mut spec = GuestSpec::new("/usr/bin/python3", &sandboxes[i])
            .arg("-I")
            .arg(bin.join("guest.py"))
            .arg(names[i])
            .arg(&state)
            .arg(&execute)
            .arg(&tag)
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &sandboxes[i]);
        spec.user = Some(users[i]);
        // Not asked for: the policy makes every guest idle.
        spec.sched_idle = false;
        spec.stdout = Stdio::piped();
        let p = GuestLauncher::new()
            .spawn_confined(spec, groups[i].as_ref(), &policy)
            .unwrap();
        assert_eq!(p.has_namespaces(), namespaces);
        guests.push(Guest(p));
    }
    for sb in &sandboxes {
        let md = fs::metadata(sb).unwrap();
        assert_eq!(md.mode() & 0o7777, 0o700);
    }
    let md = fs::metadata(&execute).unwrap();
    assert_eq!((md.uid(), md.mode() & 0o7777), (0, 0o711));
    for sb in &sandboxes {
        // Idle guests on a busy machine start slowly: generous bounds.
        wait_until("guest ready", 180, || sb.join("ready").exists());
    }
    // The job's host PID: with namespaces, the waiter's only child.
    let job_pids: Vec<u32> = guests
        .iter()
        .map(|g| {
            if namespaces {
                children_of(g.0.pid())[0]
            } else {
                g.0.pid()
            }
        })
        .collect();
    for i in 0..2 {
        let other = 1 - i;
        let go = serde_json::json!({
            "pid": job_pids[other],
            "sandbox": sandboxes[other],
            "name": names[other],
        });
        fs::write(sandboxes[i].join("go"), go.to_string()).unwrap();
    }
    for sb in &sandboxes {
        wait_until("attacks done", 180, || sb.join("result.json").exists());
    }
    for &pid in &job_pids {
        assert!(alive(pid as i32), "guest {pid} did not survive the attacks");
    }
    for sb in &sandboxes {
        fs::write(sb.join("end"), "").unwrap();
    }
    for (i, g) in guests.iter_mut().enumerate() {
        let st = wait_exit(g, 180);
        let mut out = String::new();
        use std::io::Read;
        g.0.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(st.success(), "guest {} ended {st:?}", names[i]);
        assert_eq!(out.trim(), format!("done {}", names[i]));
    }

    let expect_signal = if namespaces { "ESRCH" } else { "EPERM" };
    let expect_proc = if namespaces { "ENOENT" } else { "EACCES" };
    for i in 0..2 {
        let sb = &sandboxes[i];
        let r: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(sb.join("result.json")).unwrap()).unwrap();
        eprintln!("guest {} (uid {}): {r}", names[i], users[i].uid);
        let s = |k: &str| r[k].as_str().unwrap_or("?").to_string();
        assert_eq!(r["uid"], users[i].uid);
        assert_eq!(r["gid"], users[i].gid);
        assert_eq!(r["groups"], serde_json::json!([]), "supplementary groups");
        for k in [
            "read_other_secret",
            "list_other_sandbox",
            "write_other_sandbox",
            "list_execute_dir",
            "read_queue_db",
            "list_spool",
            "read_spool_file",
        ] {
            assert_eq!(s(k), "EACCES", "{k}");
        }
        assert_eq!(s("kill_other"), expect_signal, "kill -9");
        assert_eq!(s("ptrace_other"), expect_signal, "ptrace attach");
        assert_eq!(s("read_other_mem"), expect_proc, "/proc/PID/mem");
        assert_eq!(s("read_other_environ"), expect_proc, "/proc/PID/environ");
        let pids: Vec<u64> = r["proc_pids"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.as_u64())
            .collect();
        if namespaces {
            assert_eq!(r["sees_other"], false);
            assert_eq!(r["my_pid"], 1, "PID 1 of its own namespace");
            assert!(pids.len() <= 3, "sees {pids:?}");
        } else {
            // Without a PID namespace the other's PID is visible (though
            // untouchable, as asserted above).
            assert_eq!(r["sees_other"], true);
        }
        assert_eq!(r["sched"], libc::SCHED_IDLE, "SCHED_IDLE");
        assert_eq!(r["nice"], 19);
        assert_eq!(s("leave_idle"), "EPERM", "left SCHED_IDLE");
        assert_eq!(s("lower_nice"), "EACCES", "lowered nice");
        assert_eq!(s("no_new_privs"), "1");
        if namespaces {
            // Its own tmpfs on each scratch directory: the other's file
            // there does not exist for it.
            for d in ["/tmp", "/var/tmp", "/dev/shm"] {
                assert_eq!(r["scratch_fs"][d], "tmpfs", "{d} not private");
                assert_eq!(r["read_other_scratch"][d], "ENOENT", "other's {d}");
            }
            // Its own IPC namespace: the other's SysV segment is not there.
            assert_eq!(r["other_shm"], "ENOENT", "other's SysV shm");
        }
        if let Some(g) = &groups[i] {
            let dir = g.dirs()[0].clone();
            let root = &cgroups.as_ref().unwrap().0.roots()[0];
            let path = format!("/{}", dir.strip_prefix(root).unwrap().display());
            assert!(
                s("cgroup").lines().any(|l| l.ends_with(&path)),
                "not in its group {path}: {}",
                s("cgroup")
            );
        }
        assert_eq!(
            fs::read_to_string(sb.join("output.txt")).unwrap(),
            format!("{} finished", names[i])
        );
        assert_eq!(
            fs::read_to_string(sb.join("secret.txt")).unwrap(),
            format!("secret of {}", names[i])
        );
        assert!(!sb.join("planted").exists());
        // umask 077: what the guest made is its own.
        assert_eq!(
            fs::metadata(sb.join("output.txt")).unwrap().mode() & 0o777,
            0o600
        );
    }
    assert_eq!(
        fs::read(state.join("queue.db")).unwrap(),
        b"SQLite format 3\0 jobs"
    );
    assert_eq!(
        fs::read_dir(state.join("spool/job")).unwrap().count(),
        1,
        "spool changed"
    );
    assert_eq!(
        proc_mounts_of_self(),
        proc_mounts_before,
        "a guest's /proc mount reached the host"
    );
    if namespaces {
        // What the guests left in their scratch directories went with
        // their tmpfs; the host's never saw it.
        assert_eq!(scratch_files.present(), Vec::<PathBuf>::new());
    }
    for l in leases {
        let rep = l.release(REAP_TIMEOUT).unwrap();
        assert!(rep.found.is_empty(), "left behind: {:?}", rep.found);
    }
}

#[test]
fn two_guests_without_namespaces_cannot_touch_each_other() {
    two_guests_attack_each_other('a', false);
}

#[test]
fn two_guests_in_namespaces_cannot_see_or_touch_each_other() {
    two_guests_attack_each_other('b', true);
}

#[test]
fn a_double_forking_setsid_escapee_dies_by_uid_without_cgroups() {
    if !root_or_skip("escapee") {
        return;
    }
    let _lock = serial_lock();
    let accounts = TestAccounts::create('c', 1);
    let _reaper = Subreaper::new();
    let pool = SlotPool::new(accounts.accounts());
    let lease = pool.lease("escaper").unwrap();
    let uid = lease.user().unwrap().uid;
    let tmp = shared_tempdir("glescape");
    let sb = tmp.path().join("sandbox");
    // Host PID namespace, no cgroup: the worst case. The guest leaves two
    // processes in sessions of their own and exits.
    let mut spec = GuestSpec::new("/bin/sh", &sb)
        .arg("-c")
        .arg(
            "( setsid sh -c 'echo $$ > pid1; exec sleep 1000' & ); \
             ( setsid sh -c 'echo $$ > pid2; while :; do sleep 1; done' & ); exit 0",
        )
        .env("PATH", "/usr/bin:/bin");
    spec.user = lease.user();
    let mut g = Guest(
        GuestLauncher::new()
            .spawn_confined(spec, None, &Confinement::new())
            .unwrap(),
    );
    let guest_pid = g.0.pid() as i32;
    let st = wait_exit(&mut g, 30);
    assert!(st.success(), "{st:?}");
    let read_pid = |f: &str| -> i32 {
        let p = sb.join(f);
        wait_until(f, 30, || {
            fs::read_to_string(&p).is_ok_and(|s| s.trim().parse::<i32>().is_ok())
        });
        fs::read_to_string(&p).unwrap().trim().parse().unwrap()
    };
    let escapees = [read_pid("pid1"), read_pid("pid2")];
    let sid = |pid: i32| nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(pid))).unwrap();
    for &e in &escapees {
        assert!(alive(e), "escapee {e} not running");
        assert_ne!(
            sid(e).as_raw(),
            guest_pid,
            "escapee kept the guest's session"
        );
    }
    let before = processes_of_uid(uid);
    for e in escapees {
        assert!(before.contains(&e), "{e} not found by uid in {before:?}");
    }
    // `glean rm`: kill the slot.
    let rep = lease.kill_all(REAP_TIMEOUT).unwrap();
    eprintln!(
        "escapees {escapees:?} (guest {guest_pid} gone): killed {:?} in {} round(s), {:?}",
        rep.found, rep.rounds, rep.elapsed
    );
    assert!(rep.rounds >= 1);
    for e in escapees {
        assert!(rep.found.contains(&e));
        assert!(!alive(e), "escapee {e} survived");
    }
    assert_eq!(processes_of_uid(uid), Vec::<i32>::new());
    lease.release(REAP_TIMEOUT).unwrap();
}

#[test]
fn kill_by_uid_wins_against_a_fork_loop() {
    if !root_or_skip("fork loop") {
        return;
    }
    let _lock = serial_lock();
    let accounts = TestAccounts::create('d', 1);
    let _reaper = Subreaper::new();
    let pool = SlotPool::new(accounts.accounts());
    let lease = pool.lease("forker").unwrap();
    let uid = lease.user().unwrap().uid;
    let tmp = shared_tempdir("glforkloop");
    // Orphans in new sessions, as fast as the shell can make them, capped
    // by RLIMIT_NPROC (per uid) so a failing kill cannot exhaust the PIDs.
    let mut spec = GuestSpec::new("/bin/bash", tmp.path().join("sandbox"))
        .arg("-c")
        .arg("ulimit -u 300; while :; do ( setsid sleep 1000 & ) 2>/dev/null; done")
        .env("PATH", "/usr/bin:/bin");
    spec.user = lease.user();
    let _g = Guest(
        GuestLauncher::new()
            .spawn_confined(spec, None, &Confinement::new())
            .unwrap(),
    );
    wait_until("50 processes", 30, || processes_of_uid(uid).len() >= 50);
    let rep = kill_uid(uid, REAP_TIMEOUT).unwrap();
    eprintln!(
        "fork loop: {} processes killed in {} round(s), {:?}",
        rep.found.len(),
        rep.rounds,
        rep.elapsed
    );
    assert!(rep.found.len() >= 50);
    assert_eq!(processes_of_uid(uid), Vec::<i32>::new());
    // Nothing comes back.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(processes_of_uid(uid), Vec::<i32>::new());
    lease.release(REAP_TIMEOUT).unwrap();
}

/// Forks sleeping children until the kernel refuses, then reports how many
/// it made and the errno.
const FORK_BOMB_PY: &str = r#"
import errno, json, os, time
made, err = 0, None
while made < 100000:
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    made += 1
with open("result.tmp", "w") as f:
    json.dump({"made": made, "error": err}, f)
os.rename("result.tmp", "result.json")
time.sleep(600)
"#;

#[test]
fn a_fork_bomb_stops_at_the_process_bound() {
    if !root_or_skip("a_fork_bomb_stops_at_the_process_bound") {
        return;
    }
    let _lock = serial_lock();
    let accounts = TestAccounts::create('n', 1);
    let _reaper = Subreaper::new();
    let pool = SlotPool::new(accounts.accounts());
    let tmp = shared_tempdir("glnproc");
    let execute = tmp.path().join("execute");
    prepare_execute_dir(&execute).unwrap();
    fs::write(tmp.path().join("bomb.py"), FORK_BOMB_PY).unwrap();
    let lease = pool.lease("job-bomb").unwrap();
    let user = lease.user().unwrap();
    const BOUND: u64 = 40;
    let policy = Confinement::new().with_max_processes(Some(BOUND));
    let sandbox = execute.join("job-bomb");
    let mut spec = GuestSpec::new("/usr/bin/python3", &sandbox)
        .arg("-I")
        .arg(tmp.path().join("bomb.py"))
        .env("PATH", "/usr/bin:/bin");
    spec.user = Some(user);
    let _guest = Guest(
        GuestLauncher::new()
            .spawn_confined(spec, None, &policy)
            .unwrap(),
    );
    wait_until("bomb result", 180, || sandbox.join("result.json").exists());
    let r: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(sandbox.join("result.json")).unwrap()).unwrap();
    eprintln!("fork bomb under RLIMIT_NPROC {BOUND}: {r}");
    assert_eq!(r["error"], "EAGAIN", "fork refused by the bound");
    let made = r["made"].as_u64().unwrap();
    assert!(made < BOUND, "made {made} processes past the bound {BOUND}");
    let running = processes_of_uid(user.uid).len() as u64;
    assert!(running <= BOUND, "{running} processes of the guest's uid");
    // Everyone else still forks: the bound is the guest uid's alone.
    assert!(Command::new("/bin/true").status().unwrap().success());
    let rep = lease.release(REAP_TIMEOUT).unwrap();
    eprintln!(
        "released: {} killed in {} rounds",
        rep.found.len(),
        rep.rounds
    );
    assert!(processes_of_uid(user.uid).is_empty());
}

#[test]
fn a_namespaced_guest_and_its_waiter_die_by_uid() {
    if !root_or_skip("namespaced kill") {
        return;
    }
    let policy = match Confinement::for_station(NamespaceMode::Required) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("SKIP namespaced kill: {e}");
            return;
        }
    };
    let _lock = serial_lock();
    let accounts = TestAccounts::create('g', 1);
    let _reaper = Subreaper::new();
    let pool = SlotPool::new(accounts.accounts());
    let lease = pool.lease("nsjob").unwrap();
    let uid = lease.user().unwrap().uid;
    let tmp = shared_tempdir("glnskill");
    let mut spec = GuestSpec::new("/bin/sh", tmp.path().join("sandbox"))
        .arg("-c")
        .arg("( setsid sleep 1000 & ); sleep 1000 & wait")
        .env("PATH", "/usr/bin:/bin");
    spec.user = lease.user();
    let mut g = Guest(
        GuestLauncher::new()
            .spawn_confined(spec, None, &policy)
            .unwrap(),
    );
    assert!(g.0.has_namespaces());
    // The waiter, the namespace's init (sh) and two sleeps.
    wait_until("four processes", 60, || processes_of_uid(uid).len() >= 4);
    assert!(processes_of_uid(uid).contains(&(g.0.pid() as i32)));
    let rep = lease.release(REAP_TIMEOUT).unwrap();
    eprintln!(
        "namespaced guest: killed {:?} in {} round(s), {:?}",
        rep.found, rep.rounds, rep.elapsed
    );
    assert_eq!(processes_of_uid(uid), Vec::<i32>::new());
    let st = wait_exit(&mut g, 30);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(st.signal(), Some(libc::SIGKILL), "{st:?}");
}

#[test]
fn slots_are_exclusive_and_a_busy_slot_is_not_leased() {
    if !root_or_skip("exclusive slots") {
        return;
    }
    let _lock = serial_lock();
    let accounts = TestAccounts::create('e', 2);
    let _reaper = Subreaper::new();
    let pool = SlotPool::new(accounts.accounts());
    let slots = pool.slots().to_vec();
    let a = pool.lease("a").unwrap();
    let b = pool.lease("b").unwrap();
    assert_eq!(a.slot().unwrap().name, slots[0].name);
    assert_eq!(b.slot().unwrap().name, slots[1].name);
    match pool.lease("c") {
        Err(IsolationError::NoFreeSlot {
            total: 2,
            leased: 2,
            busy: 0,
            ..
        }) => {}
        other => panic!("third lease of two slots: {other:?}"),
    }
    assert_eq!(
        pool.leases(),
        vec![
            (slots[0].name.clone(), "a".to_string()),
            (slots[1].name.clone(), "b".to_string())
        ]
    );
    a.release(REAP_TIMEOUT).unwrap();
    let c = pool.lease("c").unwrap();
    assert_eq!(c.slot().unwrap().name, slots[0].name, "freed slot reused");
    b.release(REAP_TIMEOUT).unwrap();

    // A process of slot 2 that outlived a lease of another station on this
    // machine (started here by hand). That station's lease rewrote the
    // slot's lock marker, so this pool's proof that the slot was left
    // empty no longer holds and the lease scans /proc.
    std::fs::write(
        format!("/run/gleaner-slots/{}.lock", slots[1].name),
        "leased by another station",
    )
    .unwrap();
    let tmp = shared_tempdir("glbusy");
    let mut spec = GuestSpec::new("/bin/sleep", tmp.path().join("sandbox")).arg("1000");
    spec.user = Some(slots[1].user);
    let _lingering = Guest(GuestLauncher::new().spawn(spec, None).unwrap());
    wait_until("lingering process", 10, || {
        !processes_of_uid(slots[1].user.uid).is_empty()
    });
    match pool.lease("d") {
        Err(IsolationError::NoFreeSlot {
            total: 2,
            leased: 1,
            busy: 1,
            ..
        }) => {}
        other => panic!("a busy slot was leased: {other:?}"),
    }
    let reaped = pool.reap_unleased(REAP_TIMEOUT);
    assert_eq!(reaped.len(), 1, "{reaped:?}");
    assert_eq!(reaped[0].0, slots[1].name);
    assert_eq!(reaped[0].1.as_ref().unwrap().found.len(), 1);
    let d = pool.lease("d").unwrap();
    assert_eq!(d.slot().unwrap().name, slots[1].name);
    // A dropped lease still kills and frees its slot.
    drop(d);
    c.release(REAP_TIMEOUT).unwrap();
    assert!(pool.leases().is_empty());
    // ensure() again finds the same accounts without creating any.
    let mut cfg = accounts.cfg.clone();
    cfg.create = false;
    assert_eq!(SlotAccounts::ensure(&cfg).unwrap(), accounts.accounts());
}

/// Two stations on one machine naming the same accounts (`glean up` as
/// root; a test pool whose hosts share slot uids for CRIU): the slot locks
/// keep them from leasing one slot at once, and one's start-up reap leaves
/// the other's guest alone.
#[test]
fn two_pools_over_the_same_accounts_never_share_a_slot() {
    if !root_or_skip("slot locks") {
        return;
    }
    let _lock = serial_lock();
    let accounts = TestAccounts::create('f', 2);
    let _reaper = Subreaper::new();
    let (one, two) = (
        SlotPool::new(accounts.accounts()),
        SlotPool::new(accounts.accounts()),
    );
    let slots = one.slots().to_vec();
    let a = one.lease("a").unwrap();
    assert_eq!(a.slot().unwrap().name, slots[0].name);
    let b = two.lease("b").unwrap();
    assert_eq!(
        b.slot().unwrap().name,
        slots[1].name,
        "slot held by the other pool"
    );
    match two.lease("c") {
        Err(IsolationError::NoFreeSlot { busy: 1, .. }) => {}
        other => panic!("a slot the other pool holds was leased: {other:?}"),
    }
    // The first pool's guest runs; the second's reap must spare it.
    let tmp = shared_tempdir("gllocks");
    let mut spec = GuestSpec::new("/bin/sleep", tmp.path().join("sandbox")).arg("1000");
    spec.user = Some(slots[0].user);
    let mut guest = Guest(GuestLauncher::new().spawn(spec, None).unwrap());
    wait_until("guest", 10, || {
        !processes_of_uid(slots[0].user.uid).is_empty()
    });
    assert!(two.reap_unleased(REAP_TIMEOUT).is_empty());
    assert!(
        guest.0.try_wait().unwrap().is_none(),
        "the other pool's guest was killed"
    );
    // Released (its guest killed), the slot is the other pool's to take.
    let rep = a.release(REAP_TIMEOUT).unwrap();
    assert_eq!(rep.found.len(), 1);
    wait_exit(&mut guest, 10);
    let c = two.lease("c").unwrap();
    assert_eq!(c.slot().unwrap().name, slots[0].name);
    c.release(REAP_TIMEOUT).unwrap();
    b.release(REAP_TIMEOUT).unwrap();
}

/// `count` consecutive ids from 62000 up that no account or group holds.
fn free_id_range(count: u32) -> u32 {
    let mut taken = std::collections::BTreeSet::new();
    for f in ["/etc/passwd", "/etc/group"] {
        for l in fs::read_to_string(f).unwrap_or_default().lines() {
            if let Some(id) = l.split(':').nth(2).and_then(|x| x.parse::<u32>().ok()) {
                taken.insert(id);
            }
        }
    }
    // Spread concurrent test processes apart.
    let mut base = 62000 + (std::process::id() % 500) * 4;
    while (base..base + count).any(|id| taken.contains(&id)) {
        base += count;
    }
    base
}

#[test]
fn fixed_slot_uids_and_a_lease_by_uid_for_criu() {
    if !root_or_skip("fixed uids") {
        return;
    }
    let _lock = serial_lock();
    let mut cfg = TestAccounts::config('h', 2);
    let base = free_id_range(2);
    cfg.first_uid = Some(base);
    let accounts = TestAccounts::create_with(cfg.clone());
    assert_eq!(accounts.accounts().uids(), vec![base, base + 1]);
    let pool = SlotPool::new(accounts.accounts());
    // A CRIU job dumped as base + 1 is restored as base + 1.
    let criu = pool.lease_uid("criu-job", base + 1).unwrap();
    assert_eq!(criu.user().unwrap().uid, base + 1);
    match pool.lease_uid("again", base + 1) {
        Err(IsolationError::NoFreeSlot {
            total: 1,
            leased: 1,
            ..
        }) => {}
        other => panic!("a leased uid was leased again: {other:?}"),
    }
    assert!(matches!(
        pool.lease_uid("stranger", base + 7),
        Err(IsolationError::NoFreeSlot { total: 0, .. })
    ));
    let other = pool.lease("other").unwrap();
    assert_eq!(other.user().unwrap().uid, base);
    drop((criu, other));
    // Accounts whose uids are not the configured ones are refused.
    let mut shifted = cfg.clone();
    shifted.create = false;
    shifted.first_uid = Some(base + 5);
    let e = SlotAccounts::ensure(&shifted).unwrap_err().to_string();
    assert!(e.contains("slot_first_uid"), "{e}");
}

#[test]
fn an_account_with_a_login_shell_is_refused_as_a_slot() {
    if !root_or_skip("refused account") {
        return;
    }
    let _lock = serial_lock();
    sweep_stale();
    let cfg = TestAccounts::config('f', 1);
    let guard = TestAccounts {
        cfg: cfg.clone(),
        accounts: None,
    };
    let name = &cfg.names()[0];
    let mut missing = cfg.clone();
    missing.create = false;
    let e = SlotAccounts::ensure(&missing).unwrap_err().to_string();
    assert!(e.contains("no such account"), "{e}");
    // An account someone could log in to, under a slot's name.
    let mut made = false;
    for attempt in 0..40u64 {
        let st = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/bin/bash", name])
            .status()
            .unwrap();
        if st.success() {
            made = true;
            break;
        }
        // 1 and 10: the account files are locked by someone else.
        assert!(matches!(st.code(), Some(1 | 10)), "useradd: {st:?}");
        std::thread::sleep(Duration::from_millis(25 * (attempt + 1).min(8)));
    }
    assert!(made, "useradd kept failing on the lock");
    let e = SlotAccounts::ensure(&cfg).unwrap_err().to_string();
    eprintln!("refused: {e}");
    assert!(
        e.contains(name.as_str()) && e.contains("login shell"),
        "{e}"
    );
    drop(guard);
    assert!(nix::unistd::User::from_name(name).unwrap().is_none());
}

#[test]
fn criu_style_reaped_guests_keep_the_host_namespaces() {
    if !root_or_skip("reaped guest") {
        return;
    }
    let policy = match Confinement::for_station(NamespaceMode::Required) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("SKIP reaped guest: {e}");
            return;
        }
    };
    let tmp = shared_tempdir("glreaped");
    let mut spec = GuestSpec::new("/bin/sh", tmp.path().join("sandbox"))
        .arg("-c")
        .arg("echo $$; ls /proc | grep -c '^[0-9]'")
        .env("PATH", "/usr/bin:/bin");
    spec.reaper = true;
    spec.stdout = Stdio::piped();
    let p = GuestLauncher::new()
        .spawn_confined(spec, None, &policy)
        .unwrap();
    assert!(!p.has_namespaces());
    let out = p.child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut l = text.lines();
    let pid: u32 = l.next().unwrap().parse().unwrap();
    let visible: usize = l.next().unwrap().trim().parse().unwrap();
    eprintln!("reaped guest: pid {pid}, sees {visible} processes");
    assert!(pid > 1, "a reaped (CRIU) guest has no PID namespace");
    assert!(visible > 3, "it sees the host's /proc");
}

/// The CRIU path under slots and the station policy: a reaped guest as a
/// slot account is dumped by CRIU running as that slot, restored in place,
/// goes on from where it was, and is still idle.
#[test]
fn a_criu_job_as_a_slot_account_is_dumped_and_restored() {
    use gleaner_station::checkpoint::{Criu, CriuStatus, criu_status};
    if !root_or_skip("CRIU with slots") {
        return;
    }
    if let CriuStatus::Unavailable { reason } = criu_status() {
        eprintln!("SKIP CRIU with slots: {reason}");
        return;
    }
    let policy = Confinement::for_station(NamespaceMode::Auto).unwrap();
    let _lock = serial_lock();
    let accounts = TestAccounts::create('i', 1);
    let _reaper = Subreaper::new();
    let pool = SlotPool::new(accounts.accounts());
    let lease = pool.lease("criu").unwrap();
    let user = lease.user().unwrap();
    let tmp = shared_tempdir("glcriuslot");
    let sandbox = tmp.path().join("sandbox");
    let images = tmp.path().join("images");
    gleaner_station::isolation::prepare_sandbox(&images, Some(user)).unwrap();
    gleaner_station::isolation::prepare_sandbox(&sandbox, Some(user)).unwrap();
    fs::write(
        sandbox.join("job.sh"),
        "exec 3>>data\ni=0\nwhile [ $i -lt 30 ]; do i=$((i+1)); echo $i >&3; \
         sleep 0.05; done\nexit 3\n",
    )
    .unwrap();
    let steps = || -> Vec<u32> {
        fs::read_to_string(sandbox.join("data"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.parse().ok())
            .collect()
    };
    let mut spec = GuestSpec::new("/bin/sh", &sandbox)
        .arg("job.sh")
        .env("PATH", "/usr/bin:/bin");
    spec.user = Some(user);
    spec.reaper = true;
    let mut job = Guest(
        GuestLauncher::new()
            .spawn_confined(spec, None, &policy)
            .unwrap(),
    );
    assert!(!job.0.has_namespaces(), "CRIU jobs keep the host's");
    wait_until("job running", 60, || steps().len() >= 5);
    let criu = Criu {
        images: images.clone(),
        user: Some(user),
    };
    let pid = job.0.job_pid().unwrap();
    criu.dump(pid).unwrap();
    assert!(!wait_exit(&mut job, 30).success());
    let before = steps().len();
    assert!((5..30).contains(&before), "{before} steps before the dump");
    let mut spec = criu.restore_spec(&sandbox, &[]);
    spec.stdout = Stdio::null();
    let mut restored = Guest(
        GuestLauncher::new()
            .spawn_confined(spec, None, &policy)
            .unwrap(),
    );
    wait_until("restored", 60, || {
        criu.pidfile().exists() || restored.0.child.try_wait().ok().flatten().is_some()
    });
    assert!(
        criu.pidfile().exists(),
        "restore failed: {}",
        criu.restore_errors()
    );
    let root: i32 = fs::read_to_string(criu.pidfile())
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let status = fs::read_to_string(format!("/proc/{root}/status")).unwrap_or_default();
    // SAFETY: plain queries of another process's scheduling.
    let (policy_now, nice) = unsafe {
        (
            libc::sched_getscheduler(root),
            libc::getpriority(libc::PRIO_PROCESS, root as libc::id_t),
        )
    };
    let st = wait_exit(&mut restored, 60);
    assert_eq!(st.code(), Some(3), "{st:?}");
    assert_eq!(
        steps(),
        (1..=30).collect::<Vec<_>>(),
        "went on from the dump"
    );
    eprintln!(
        "CRIU as slot uid {}: dumped after {before} steps, restored (policy {policy_now}, \
         nice {nice}, status read: {}), finished",
        user.uid,
        !status.is_empty()
    );
    if !status.is_empty() {
        assert!(
            status.contains(&format!("Uid:\t{}\t", user.uid)),
            "restored as the slot: {status}"
        );
        assert_eq!((policy_now, nice), (libc::SCHED_IDLE, 19), "still idle");
    }
    lease.release(REAP_TIMEOUT).unwrap();
}

#[test]
fn a_personal_pool_runs_guests_as_the_daemon_without_killing_it() {
    let pool = SlotPool::personal();
    assert!(pool.is_personal());
    let a = pool.lease("a").unwrap();
    let b = pool.lease("b").unwrap();
    assert_eq!((a.user(), b.user()), (None, None));
    assert!(a.processes().is_empty());
    // No uid to kill: the daemon's own must survive.
    let rep = a.release(REAP_TIMEOUT).unwrap();
    assert_eq!(rep.rounds, 0);
    drop(b);
    assert!(pool.leases().is_empty());
    let me = nix::unistd::geteuid().as_raw();
    assert!(matches!(
        kill_uid(me, REAP_TIMEOUT),
        Err(IsolationError::RefusedUid { .. })
    ));
}
