//! Real cgroups and real processes on this machine (root needed; skipped
//! with a message otherwise). Each test uses its own parent subtree
//! `gleaner-test-<pid>-<name>` and removes it on drop, even on failure.
//!
//! What is measured (ticks = USER_HZ clock ticks from /proc/PID/stat):
//! - freeze: a busy guest accrues no CPU while frozen, and resumes on thaw;
//! - idle priority: a guest in an idle group and a normal busy loop pinned
//!   to the same CPU: the normal loop gets ≥ 95 % (platform.md §1.2 measured
//!   394 vs 1 ticks);
//! - SCHED_IDLE from the launcher alone, same measurement;
//! - kill: every process of a frozen, forking guest is gone, the group
//!   removed;
//! - launcher: uid/gid, session, PID namespace, cgroup, policy, cwd, env.

use gleaner_station::isolation::{
    CgroupConfig, CgroupLayout, CgroupManager, GuestCgroup, GuestLauncher, GuestProcess, GuestSpec,
    GuestUser, KillMethod, MemoryBounds, RemoveOnDrop,
};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::serial_lock;

fn layout_or_skip(name: &str) -> Option<CgroupLayout> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIP {name}: needs root");
        return None;
    }
    match CgroupLayout::detect() {
        Ok(l) => Some(l),
        Err(e) => {
            eprintln!("SKIP {name}: no cgroup hierarchy: {e}");
            None
        }
    }
}

/// Remove test parents left by test processes that died (SIGKILL, power
/// loss) before their guards ran.
fn sweep_stale(layout: &CgroupLayout) {
    let Ok(m) = CgroupManager::new(CgroupConfig::new(layout.clone())) else {
        return;
    };
    for root in m.roots() {
        let Ok(rd) = fs::read_dir(root) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(rest) = name.strip_prefix("gleaner-test-") else {
                continue;
            };
            let pid = rest.split('-').next().unwrap_or("");
            if Path::new("/proc").join(pid).exists() {
                continue;
            }
            let mut c = CgroupConfig::new(layout.clone());
            c.parent = name.clone();
            if let Ok(stale) = CgroupManager::new(c) {
                eprintln!("removing stale {name}");
                drop(Parent(stale, None));
            }
        }
    }
}

/// Skip (return `None`, printing why) unless root with cgroups mounted.
fn setup(name: &str, parent_idle: bool) -> Option<Parent> {
    let layout = layout_or_skip(name)?;
    let lock = serial_lock();
    sweep_stale(&layout);
    let mut c = CgroupConfig::new(layout);
    c.parent = format!("gleaner-test-{}-{name}", std::process::id());
    // An idle guest starves whenever anything else wants the CPU (other
    // builds on this machine, say): exactly the point, but tests that need
    // the guest to make progress run it at normal priority.
    c.parent_idle = parent_idle;
    match CgroupManager::new(c) {
        Ok(m) => Some(Parent(m, Some(lock))),
        Err(e) => {
            eprintln!("SKIP {name}: {e}");
            None
        }
    }
}

/// Removes every guest group and the parent subtree on drop (then releases
/// the serial lock).
struct Parent(CgroupManager, #[allow(dead_code)] Option<std::fs::File>);

impl Drop for Parent {
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

/// Kills a plain child on drop.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn nobody() -> GuestUser {
    GuestUser::lookup("nobody").unwrap()
}

fn sandbox(name: &str) -> tempfile::TempDir {
    let t = tempfile::Builder::new().prefix(name).tempdir().unwrap();
    fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
    t
}

fn busy_spec(dir: &Path) -> GuestSpec {
    GuestSpec::new("/bin/sh", dir.join("sandbox"))
        .arg("-c")
        .arg("while :; do :; done")
        .env("PATH", "/usr/bin:/bin")
}

fn ticks(pid: u32) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split(' ').collect();
    // After ")": state is field 3, utime 14, stime 15.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn pin(pid: u32, cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).unwrap();
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(pid as i32), &set).unwrap();
}

fn last_cpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) - 1
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(5), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct Guard {
    g: RemoveOnDrop,
    p: GuestProcess,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.g.kill();
        let _ = self.p.child.kill();
        let _ = self.p.wait();
    }
}

fn start_busy(m: &CgroupManager, job: &str, dir: &Path) -> Guard {
    let g = m.create(job).unwrap();
    let mut spec = busy_spec(dir);
    spec.user = Some(nobody());
    let p = GuestLauncher::new().spawn(spec, Some(&g)).unwrap();
    Guard {
        g: RemoveOnDrop(g),
        p,
    }
}

#[test]
fn real_freeze_stops_cpu_and_thaw_resumes() {
    let Some(parent) = setup("freeze", false) else {
        return;
    };
    let m = &parent.0;
    let dir = sandbox("glfreeze");
    let guest = start_busy(m, "busy", dir.path());
    let pid = guest.p.pid();
    assert_eq!(guest.g.pids().unwrap(), vec![pid as i32]);
    std::thread::sleep(Duration::from_millis(300));
    let running = ticks(pid);
    assert!(running > 0, "guest never ran");
    guest.g.freeze().unwrap();
    assert!(guest.g.is_frozen().unwrap());
    let (t1, u1) = (ticks(pid), guest.g.cpu_usage().unwrap());
    std::thread::sleep(Duration::from_secs(1));
    let (t2, u2) = (ticks(pid), guest.g.cpu_usage().unwrap());
    eprintln!(
        "frozen 1 s: {} ticks, cgroup usage +{:?}",
        t2 - t1,
        u2.saturating_sub(u1)
    );
    assert!(t2 - t1 <= 1, "frozen guest ran {} ticks", t2 - t1);
    assert!(u2.saturating_sub(u1) < Duration::from_millis(20));
    guest.g.thaw().unwrap();
    assert!(!guest.g.is_frozen().unwrap());
    let t3 = ticks(pid);
    wait_until("guest resumes", || ticks(pid) > t3);
    eprintln!("after thaw: ran again ({} → {} ticks)", t3, ticks(pid));
}

/// Competitor and guest pinned to one CPU for 2 s; returns (owner, guest)
/// ticks.
fn contend(guest_pid: u32) -> (u64, u64) {
    let cpu = last_cpu();
    let owner = Reap(
        Command::new("/bin/sh")
            .args(["-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    pin(owner.0.id(), cpu);
    pin(guest_pid, cpu);
    std::thread::sleep(Duration::from_millis(200));
    let (o1, g1) = (ticks(owner.0.id()), ticks(guest_pid));
    std::thread::sleep(Duration::from_secs(2));
    let (o2, g2) = (ticks(owner.0.id()), ticks(guest_pid));
    (o2 - o1, g2 - g1)
}

#[test]
fn real_idle_group_yields_to_owner() {
    let Some(parent) = setup("idle", true) else {
        return;
    };
    let m = &parent.0;
    let dir = sandbox("glidle");
    let guest = start_busy(m, "lingering", dir.path());
    let outcome = guest.g.set_idle(true).unwrap();
    guest
        .g
        .set_memory(MemoryBounds {
            high: Some(256 << 20),
            max: Some(512 << 20),
        })
        .unwrap();
    let (owner, g) = contend(guest.p.pid());
    let share = owner as f64 / (owner + g).max(1) as f64;
    eprintln!(
        "idle group ({outcome:?}): owner {owner} ticks, guest {g} ticks, owner share {share:.4}"
    );
    assert!(
        owner > 20,
        "owner barely ran ({owner} ticks): machine too busy?"
    );
    assert!(share >= 0.95, "owner share {share:.4}");
}

#[test]
fn real_sched_idle_task_yields_to_owner() {
    let Some(_parent) = setup("schedidle", false) else {
        return;
    };
    let dir = sandbox("glsched");
    // No cgroup: the guest shares the test's group with the competitor, so
    // only the per-task SCHED_IDLE set in pre_exec protects the owner.
    let mut spec = busy_spec(dir.path());
    spec.user = Some(nobody());
    spec.sched_idle = true;
    let mut p = GuestLauncher::new().spawn(spec, None).unwrap();
    let pid = p.pid();
    // SAFETY: plain query of another process's policy.
    let policy = unsafe { libc::sched_getscheduler(pid as i32) };
    let (owner, g) = contend(pid);
    let _ = p.child.kill();
    let _ = p.wait();
    assert_eq!(policy, libc::SCHED_IDLE);
    let share = owner as f64 / (owner + g).max(1) as f64;
    eprintln!("SCHED_IDLE task: owner {owner} ticks, guest {g} ticks, owner share {share:.4}");
    assert!(
        owner > 20,
        "owner barely ran ({owner} ticks): machine too busy?"
    );
    assert!(share >= 0.95, "owner share {share:.4}");
}

fn alive(pid: i32) -> bool {
    // A zombie has no cgroup and no CPU; it is gone for our purposes.
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s[s.rfind(')').unwrap() + 2..].starts_with('Z'),
        Err(_) => false,
    }
}

#[test]
fn real_kill_frozen_forking_guest_and_remove() {
    let Some(parent) = setup("kill", false) else {
        return;
    };
    let m = &parent.0;
    let dir = sandbox("glkill");
    let g = m.create("forker").unwrap();
    let mut spec = GuestSpec::new("/bin/sh", dir.path().join("sandbox"))
        .arg("-c")
        .arg("sleep 1000 & sleep 1000 & (while :; do :; done) & wait")
        .env("PATH", "/usr/bin:/bin");
    spec.user = Some(nobody());
    spec.pid_namespace = true;
    let mut p = GuestLauncher::new().spawn(spec, Some(&g)).unwrap();
    // The waiter, the namespace init (sh) and its three children.
    wait_until("five processes", || g.pids().unwrap().len() >= 5);
    let pids = g.pids().unwrap();
    g.freeze().unwrap();
    let method = g.kill().unwrap();
    assert_eq!(g.pids().unwrap(), Vec::<i32>::new());
    let status = p.wait().unwrap();
    for &pid in &pids {
        assert!(!alive(pid), "pid {pid} survived");
    }
    eprintln!(
        "killed {} processes via {method:?}; waiter exit {status:?}",
        pids.len()
    );
    assert_eq!(method, KillMethod::CgroupKill);
    let dirs = g.dirs();
    g.remove().unwrap();
    for d in dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    // Killing an empty group is a no-op.
    assert_eq!(m.open("forker").unwrap().kill().unwrap(), KillMethod::Empty);
}

fn guest_cgroup_line(g: &GuestCgroup, m: &CgroupManager) -> String {
    let _ = m;
    format!(
        "/{}",
        g.dirs()[0].strip_prefix(&m.roots()[0]).unwrap().display()
    )
}

#[test]
fn real_launcher_sets_identity_namespace_policy_and_env() {
    let Some(parent) = setup("launch", true) else {
        return;
    };
    let m = &parent.0;
    let dir = sandbox("gllaunch");
    let g = RemoveOnDrop(m.create("launch").unwrap());
    let sb = dir.path().join("sandbox");
    let user = nobody();
    let mut spec = GuestSpec::new("/bin/sh", &sb)
        .arg("-c")
        .arg("id -u; id -g; id -G; pwd; echo $$; chrt -p $$; cat /proc/self/cgroup; env; exit 7")
        .env("PATH", "/usr/bin:/bin")
        .env("GLEANER_JOB", "launch");
    spec.user = Some(user);
    spec.sched_idle = true;
    spec.pid_namespace = true;
    spec.stdout = Stdio::piped();
    let p = GuestLauncher::new().spawn(spec, Some(&g)).unwrap();
    let out = p.child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(7), "exit status relayed");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], user.uid.to_string());
    assert_eq!(lines[1], user.gid.to_string());
    assert_eq!(
        lines[2],
        user.gid.to_string(),
        "supplementary groups dropped"
    );
    assert_eq!(Path::new(lines[3]), sb.as_path());
    assert_eq!(lines[4], "1", "PID 1 of its own namespace");
    assert!(lines[5].contains("SCHED_IDLE"), "{}", lines[5]);
    let cg = guest_cgroup_line(&g, m);
    assert!(text.lines().any(|l| l.ends_with(&cg)), "not in {cg}");
    assert!(text.contains("GLEANER_JOB=launch"));
    assert!(!text.contains("HOME="), "environment not cleared");
    let meta = fs::metadata(&sb).unwrap();
    assert_eq!(meta.uid(), user.uid);
    assert_eq!(meta.mode() & 0o777, 0o700);
}

#[test]
fn real_launcher_reports_exec_failure_without_hanging() {
    let Some(_parent) = setup("execfail", false) else {
        return;
    };
    let dir = sandbox("glexec");
    for ns in [false, true] {
        let mut spec = GuestSpec::new(dir.path().join("no-such-program"), dir.path().join("sb"));
        spec.user = Some(nobody());
        spec.pid_namespace = ns;
        let t0 = Instant::now();
        let e = GuestLauncher::new().spawn(spec, None).unwrap_err();
        assert!(e.to_string().contains("no-such-program"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
}

#[test]
fn real_memory_bounds_and_guest_usage() {
    let Some(parent) = setup("memory", false) else {
        return;
    };
    let m = &parent.0;
    let Some((mroot, v2)) = m.controller_root(gleaner_station::isolation::Controller::Memory)
    else {
        eprintln!("SKIP memory bounds: no memory controller");
        return;
    };
    let g = RemoveOnDrop(m.create("mem").unwrap());
    g.set_memory(MemoryBounds {
        high: Some(64 << 20),
        max: Some(128 << 20),
    })
    .unwrap();
    let d = g.dir(&mroot);
    let rd = |f: &str| fs::read_to_string(d.join(f)).unwrap().trim().to_string();
    if v2 {
        assert_eq!(rd("memory.high"), (64u64 << 20).to_string());
        assert_eq!(rd("memory.max"), (128u64 << 20).to_string());
    } else {
        assert_eq!(rd("memory.soft_limit_in_bytes"), (64u64 << 20).to_string());
        assert_eq!(rd("memory.limit_in_bytes"), (128u64 << 20).to_string());
    }
    g.set_memory(MemoryBounds::default()).unwrap();
    if !v2 {
        assert!(rd("memory.limit_in_bytes").parse::<u64>().unwrap() > 1 << 60);
    }
    // Guest CPU usage shows up in the parent total the owner meter reads.
    let dir = sandbox("glusage");
    let guest = start_busy(m, "burn", dir.path());
    // Wait until the guest has visibly worked; a loaded machine (parallel
    // tests, builds) may give it only a small share, so poll with a deadline.
    let start = Instant::now();
    let mut used = guest.g.cpu_usage().unwrap();
    while used < Duration::from_millis(100) && start.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
        used = guest.g.cpu_usage().unwrap();
    }
    let total = m.total_guest_usage().unwrap();
    eprintln!(
        "guest used {used:?} in {:?}; parent total {total:?}",
        start.elapsed()
    );
    assert!(used >= Duration::from_millis(100));
    assert!(total >= used);
}

#[test]
fn real_busy_guest_is_subtracted_from_owner_load() {
    use gleaner_station::owner::{CpuMeter, NoGuests};
    let Some(parent) = setup("ownerload", false) else {
        return;
    };
    let m = &parent.0;
    let dir = sandbox("glload");
    let guest = start_busy(m, "burn", dir.path());
    std::thread::sleep(Duration::from_millis(100));
    // Two meters over the same interval: one blind to guests, one reading
    // the guests' parent group (Mutka 1988 L351: owner load only).
    let mut blind = CpuMeter::new("/proc", Box::new(NoGuests));
    let mut aware = CpuMeter::new("/proc", Box::new(m.clone()));
    let t0 = Instant::now();
    blind.sample_at(t0).unwrap();
    aware.sample_at(t0).unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let t1 = Instant::now();
    let b = blind.sample_at(t1).unwrap().unwrap();
    let a = aware.sample_at(t1).unwrap().unwrap();
    eprintln!(
        "blind owner {:.3}, aware owner {:.3}, guest {:.3} of {} CPUs",
        b.owner,
        a.owner,
        a.guest,
        aware.ncpu()
    );
    drop(guest);
    // The guest runs at normal priority, but other tests and builds may
    // share the machine: require only that it was seen working, and that
    // what the aware meter attributes to it is exactly what it hides from
    // the owner's share.
    assert!(a.guest > 0.02, "guest share {:.3}", a.guest);
    assert!(
        (b.owner - a.owner - a.guest).abs() < 0.1,
        "blind {:.3} - aware {:.3} != guest {:.3}",
        b.owner,
        a.owner,
        a.guest
    );
}
