//! The cgroup manager against fake hierarchies in temp dirs: which files it
//! writes and reads for v2, v1 and the hybrid layout. Control files are
//! pre-created (as the kernel would) because the manager never creates one.

use gleaner_station::isolation::{
    CgroupConfig, CgroupLayout, CgroupManager, Controller, FreezeMethod, IdleOutcome,
    IsolationError, KillMethod, MemoryBounds, V1Roots,
};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A pid above `pid_max` (4194304 at most on 64-bit): signals to it fail
/// with ESRCH, so fake tests never touch a real process.
const FAKE_PID: u32 = 999_999_999;

fn files(dir: &Path, list: &[(&str, &str)]) {
    fs::create_dir_all(dir).unwrap();
    for (f, v) in list {
        fs::write(dir.join(f), v).unwrap();
    }
}

fn read(p: PathBuf) -> String {
    fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .to_string()
}

fn quick(layout: CgroupLayout) -> CgroupConfig {
    let mut c = CgroupConfig::new(layout);
    c.timeout = Duration::from_millis(200);
    c
}

/// A pure-v2 fake with cpu and memory controllers and a pre-made job.
fn fake_v2(root: &Path, job: &str) {
    files(
        root,
        &[
            ("cgroup.controllers", "cpu memory pids\n"),
            ("cgroup.subtree_control", ""),
        ],
    );
    files(
        &root.join("gleaner"),
        &[
            ("cgroup.subtree_control", ""),
            ("cpu.idle", "0"),
            ("cpu.stat", "usage_usec 5000\n"),
        ],
    );
    files(
        &root.join("gleaner").join(job),
        &[
            ("cgroup.procs", ""),
            ("cpu.idle", "0"),
            ("cpu.weight", "100"),
            ("memory.high", "max"),
            ("memory.max", "max"),
            ("cgroup.freeze", "0"),
            ("cgroup.events", "populated 1\nfrozen 0\n"),
            ("cgroup.kill", ""),
            (
                "cpu.stat",
                "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
            ),
        ],
    );
}

#[test]
fn v2_writes_the_v2_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fake_v2(root, "j1");
    let m = CgroupManager::new(quick(CgroupLayout::V2 {
        root: root.to_path_buf(),
    }))
    .unwrap();
    assert_eq!(m.roots(), &[root.to_path_buf()]);
    assert_eq!(
        m.controller_root(Controller::Cpu),
        Some((root.to_path_buf(), true))
    );
    assert_eq!(
        m.controller_root(Controller::Freezer),
        Some((root.to_path_buf(), true))
    );
    let g = m.create("j1").unwrap();
    // Controllers enabled down to the parent; the parent itself idle.
    assert!(read(root.join("cgroup.subtree_control")).contains("memory"));
    assert!(read(root.join("gleaner/cgroup.subtree_control")).contains("memory"));
    assert_eq!(read(root.join("gleaner/cpu.idle")), "1");
    let job = root.join("gleaner/j1");

    g.add_pid(FAKE_PID).unwrap();
    assert_eq!(read(job.join("cgroup.procs")), FAKE_PID.to_string());
    assert_eq!(g.pids().unwrap(), vec![FAKE_PID as i32]);

    assert_eq!(g.set_idle(true).unwrap(), IdleOutcome::CpuIdle);
    assert_eq!(read(job.join("cpu.idle")), "1");
    assert_eq!(g.set_idle(false).unwrap(), IdleOutcome::CpuIdle);
    assert_eq!(read(job.join("cpu.idle")), "0");

    assert!(
        g.set_memory(MemoryBounds {
            high: Some(1 << 20),
            max: None
        })
        .unwrap()
    );
    assert_eq!(read(job.join("memory.high")), "1048576");
    assert_eq!(read(job.join("memory.max")), "max");

    assert_eq!(g.cpu_usage().unwrap(), Duration::from_micros(1500));
    assert_eq!(m.total_guest_usage().unwrap(), Duration::from_micros(5000));

    // Freeze waits for the kernel's `frozen 1`.
    let e = g.freeze().unwrap_err();
    assert!(matches!(e, IsolationError::Timeout { .. }), "{e}");
    assert!(e.to_string().contains("cgroup.events"), "{e}");
    assert_eq!(read(job.join("cgroup.freeze")), "1");
    fs::write(job.join("cgroup.events"), "populated 1\nfrozen 1\n").unwrap();
    g.freeze().unwrap();
    assert!(g.is_frozen().unwrap());
    fs::write(job.join("cgroup.events"), "populated 1\nfrozen 0\n").unwrap();
    g.thaw().unwrap();
    assert_eq!(read(job.join("cgroup.freeze")), "0");

    // Kill writes cgroup.kill, then waits for cgroup.procs to empty (the
    // "kernel" here is a thread).
    let procs = job.join("cgroup.procs");
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        fs::write(procs, "").unwrap();
    });
    assert_eq!(g.kill().unwrap(), KillMethod::CgroupKill);
    t.join().unwrap();
    assert_eq!(read(job.join("cgroup.kill")), "1");
    assert_eq!(g.kill().unwrap(), KillMethod::Empty);
    assert_eq!(m.list().unwrap(), vec!["j1".to_string()]);
}

#[test]
fn v2_falls_back_to_minimum_weight_without_cpu_idle() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fake_v2(root, "old");
    fs::remove_file(root.join("gleaner/old/cpu.idle")).unwrap();
    let m = CgroupManager::new(quick(CgroupLayout::V2 {
        root: root.to_path_buf(),
    }))
    .unwrap();
    let g = m.create("old").unwrap();
    assert_eq!(g.set_idle(true).unwrap(), IdleOutcome::MinimumWeight);
    assert_eq!(read(root.join("gleaner/old/cpu.weight")), "1");
    g.set_idle(false).unwrap();
    assert_eq!(read(root.join("gleaner/old/cpu.weight")), "100");
}

#[test]
fn v2_without_controllers_reports_unavailable() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    files(root, &[("cgroup.controllers", "hugetlb\n")]);
    let m = CgroupManager::new(quick(CgroupLayout::V2 {
        root: root.to_path_buf(),
    }))
    .unwrap();
    assert_eq!(m.controller_root(Controller::Cpu), None);
    assert_eq!(m.controller_root(Controller::Memory), None);
    let g = m.create("j").unwrap();
    assert!(root.join("gleaner/j").is_dir());
    assert_eq!(g.set_idle(true).unwrap(), IdleOutcome::Unavailable);
    assert!(!g.set_memory(MemoryBounds::default()).unwrap());
    // An empty fake group can be removed, then the parent.
    g.remove().unwrap();
    assert!(!root.join("gleaner/j").exists());
    m.remove_parent().unwrap();
    assert!(!root.join("gleaner").exists());
}

fn fake_v1(base: &Path, job: &str) -> V1Roots {
    let r = |n: &str| base.join(n);
    files(
        &r("cpu").join("gleaner"),
        &[("cpu.idle", "0"), ("cpu.shares", "1024")],
    );
    files(
        &r("cpu").join("gleaner").join(job),
        &[
            ("cgroup.procs", ""),
            ("cpu.idle", "0"),
            ("cpu.shares", "1024"),
        ],
    );
    files(
        &r("cpuacct").join("gleaner"),
        &[("cpuacct.usage", "7000000000\n")],
    );
    files(
        &r("cpuacct").join("gleaner").join(job),
        &[("cgroup.procs", ""), ("cpuacct.usage", "123456789\n")],
    );
    files(
        &r("memory").join("gleaner").join(job),
        &[
            ("cgroup.procs", ""),
            ("memory.limit_in_bytes", "9223372036854771712"),
            ("memory.soft_limit_in_bytes", "9223372036854771712"),
        ],
    );
    files(
        &r("freezer").join("gleaner").join(job),
        &[("cgroup.procs", ""), ("freezer.state", "THAWED")],
    );
    V1Roots {
        cpu: Some(r("cpu")),
        cpuacct: Some(r("cpuacct")),
        memory: Some(r("memory")),
        freezer: Some(r("freezer")),
        blkio: None,
    }
}

#[test]
fn v1_writes_the_v1_files() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    let v1 = fake_v1(base, "j");
    let m = CgroupManager::new(quick(CgroupLayout::Hybrid { unified: None, v1 })).unwrap();
    assert_eq!(m.roots().len(), 4);
    let g = m.create("j").unwrap();
    assert_eq!(read(base.join("cpu/gleaner/cpu.idle")), "1");
    g.add_pid(FAKE_PID).unwrap();
    for h in ["cpu", "cpuacct", "memory", "freezer"] {
        assert_eq!(
            read(base.join(h).join("gleaner/j/cgroup.procs")),
            FAKE_PID.to_string()
        );
    }
    assert_eq!(g.pids().unwrap(), vec![FAKE_PID as i32]);
    assert_eq!(g.set_idle(true).unwrap(), IdleOutcome::CpuIdle);
    assert_eq!(read(base.join("cpu/gleaner/j/cpu.idle")), "1");
    g.set_memory(MemoryBounds {
        high: Some(64 << 20),
        max: Some(128 << 20),
    })
    .unwrap();
    assert_eq!(
        read(base.join("memory/gleaner/j/memory.limit_in_bytes")),
        "134217728"
    );
    assert_eq!(
        read(base.join("memory/gleaner/j/memory.soft_limit_in_bytes")),
        "67108864"
    );
    assert_eq!(g.cpu_usage().unwrap(), Duration::from_nanos(123_456_789));
    assert_eq!(m.total_guest_usage().unwrap(), Duration::from_secs(7));
    g.freeze().unwrap();
    assert_eq!(read(base.join("freezer/gleaner/j/freezer.state")), "FROZEN");
    assert!(g.is_frozen().unwrap());
    g.thaw().unwrap();
    assert_eq!(read(base.join("freezer/gleaner/j/freezer.state")), "THAWED");
    // No cgroup.kill on v1: SIGKILL to every pid until the group is empty.
    let procs: Vec<PathBuf> = g.procs_files();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        for p in procs {
            fs::write(p, "").unwrap();
        }
    });
    assert_eq!(g.kill().unwrap(), KillMethod::Signals);
    t.join().unwrap();
    // A fresh (empty) group is removed from every hierarchy.
    let e = m.create("empty").unwrap();
    assert_eq!(e.dirs().len(), 4);
    e.remove().unwrap();
    assert!(e.dirs().iter().all(|d| !d.exists()));
}

#[test]
fn v1_minimum_shares_fallback() {
    let tmp = tempfile::tempdir().unwrap();
    let v1 = fake_v1(tmp.path(), "j");
    fs::remove_file(tmp.path().join("cpu/gleaner/j/cpu.idle")).unwrap();
    let m = CgroupManager::new(quick(CgroupLayout::Hybrid { unified: None, v1 })).unwrap();
    let g = m.create("j").unwrap();
    assert_eq!(g.set_idle(true).unwrap(), IdleOutcome::MinimumWeight);
    assert_eq!(read(tmp.path().join("cpu/gleaner/j/cpu.shares")), "2");
}

#[test]
fn hybrid_picks_v1_controllers_and_v2_core_files() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    let v1 = fake_v1(base, "j");
    let unified = base.join("unified");
    files(&unified, &[("cgroup.controllers", "hugetlb\n")]);
    files(
        &unified.join("gleaner/j"),
        &[
            ("cgroup.procs", ""),
            ("cgroup.freeze", "0"),
            ("cgroup.events", "populated 0\nfrozen 1\n"),
            ("cpu.stat", "usage_usec 42\n"),
        ],
    );
    let m = CgroupManager::new(quick(CgroupLayout::Hybrid {
        unified: Some(unified.clone()),
        v1: v1.clone(),
    }))
    .unwrap();
    // The development machines' resolution (platform.md §1.2).
    assert_eq!(
        m.controller_root(Controller::Cpu),
        Some((base.join("cpu"), false))
    );
    assert_eq!(
        m.controller_root(Controller::Memory),
        Some((base.join("memory"), false))
    );
    assert_eq!(
        m.controller_root(Controller::Freezer),
        Some((unified.clone(), true))
    );
    // CPU usage from v1's cpuacct: the v2 cpu.stat counts for sure only
    // with the v2 cpu controller, which this layout does not have.
    assert_eq!(
        m.controller_root(Controller::Usage),
        Some((base.join("cpuacct"), false))
    );
    assert_eq!(
        m.roots(),
        &[
            unified.clone(),
            base.join("cpu"),
            base.join("memory"),
            base.join("cpuacct")
        ]
    );
    let g = m.create("j").unwrap();
    g.add_pid(FAKE_PID).unwrap();
    assert_eq!(
        read(unified.join("gleaner/j/cgroup.procs")),
        FAKE_PID.to_string()
    );
    assert_eq!(
        read(base.join("cpu/gleaner/j/cgroup.procs")),
        FAKE_PID.to_string()
    );
    g.freeze().unwrap();
    assert_eq!(read(unified.join("gleaner/j/cgroup.freeze")), "1");
    // The v1 freezer is not touched.
    assert_eq!(read(base.join("freezer/gleaner/j/freezer.state")), "THAWED");
    assert_eq!(g.cpu_usage().unwrap(), Duration::from_nanos(123_456_789));

    // Forcing the v1 freezer on the same layout.
    let mut c = quick(CgroupLayout::Hybrid {
        unified: Some(unified),
        v1,
    });
    c.freeze = FreezeMethod::V1;
    let m1 = CgroupManager::new(c).unwrap();
    assert_eq!(
        m1.controller_root(Controller::Freezer),
        Some((base.join("freezer"), false))
    );
    m1.open("j").unwrap().freeze().unwrap();
    assert_eq!(read(base.join("freezer/gleaner/j/freezer.state")), "FROZEN");
}

#[test]
fn signal_freezer_stops_and_continues_real_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    files(root, &[("cgroup.controllers", "")]);
    let mut c = quick(CgroupLayout::V2 {
        root: root.to_path_buf(),
    });
    c.freeze = FreezeMethod::Signals;
    let m = CgroupManager::new(c).unwrap();
    assert_eq!(m.controller_root(Controller::Freezer), None);
    let g = m.create("sig").unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    // The fake procs file lists the real child.
    fs::write(
        root.join("gleaner/sig/cgroup.procs"),
        format!("{}\n", child.id()),
    )
    .unwrap();
    let state = |pid: u32| {
        let s = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        s[s.rfind(')').unwrap() + 2..].chars().next().unwrap()
    };
    g.freeze().unwrap();
    let mut st = state(child.id());
    for _ in 0..100 {
        if st == 'T' {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
        st = state(child.id());
    }
    assert_eq!(st, 'T');
    g.thaw().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_ne!(state(child.id()), 'T');
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn bad_job_names_and_missing_roots() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    files(root, &[("cgroup.controllers", "")]);
    let m = CgroupManager::new(quick(CgroupLayout::V2 {
        root: root.to_path_buf(),
    }))
    .unwrap();
    for bad in ["", "..", "a/b"] {
        assert!(matches!(m.create(bad), Err(IsolationError::BadJobName(_))));
    }
    let none = CgroupManager::new(quick(CgroupLayout::V2 {
        root: root.join("absent"),
    }));
    assert!(matches!(none, Err(IsolationError::NoHierarchy(_))));
    // Errors name the file that failed.
    let g = m.create("x").unwrap();
    let e = g.cpu_usage().unwrap_err().to_string();
    assert!(e.contains("gleaner/x/cpu.stat"), "{e}");
}

#[test]
fn layout_detection_from_a_mountinfo_file() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("mountinfo");
    fs::write(
        &p,
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
    )
    .unwrap();
    assert_eq!(
        CgroupLayout::detect_from(&p).unwrap(),
        CgroupLayout::V2 {
            root: PathBuf::from("/sys/fs/cgroup")
        }
    );
    fs::write(&p, "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n").unwrap();
    assert!(CgroupLayout::detect_from(&p).is_err());
    assert!(CgroupLayout::detect_from(&tmp.path().join("nope")).is_err());
}

#[test]
fn sandbox_is_private_and_refuses_symlinks() {
    use gleaner_station::isolation::prepare_sandbox;
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let sb = tmp.path().join("a/b/sandbox");
    prepare_sandbox(&sb, None).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sb), 0o700);
    // Ancestors keep the default mode so the guest can reach its sandbox.
    assert_ne!(mode(&tmp.path().join("a/b")), 0o700);
    fs::set_permissions(&sb, fs::Permissions::from_mode(0o755)).unwrap();
    prepare_sandbox(&sb, None).unwrap();
    assert_eq!(mode(&sb), 0o700);
    let target = tmp.path().join("target");
    fs::create_dir(&target).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = prepare_sandbox(&link, None).unwrap_err().to_string();
    assert!(e.contains("link"), "{e}");
    fs::write(tmp.path().join("file"), "").unwrap();
    assert!(prepare_sandbox(&tmp.path().join("file"), None).is_err());
}
