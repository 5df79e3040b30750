//! Slot release scrubbing (issue 30, finding 1). The station runs guests
//! without namespaces (as it must for CRIU jobs, and does where the
//! kernel refuses them), so a guest reaches the host's shared places. A
//! guest of alice plants a file and a directory tree in every
//! world-writable directory it can find, a SysV shared memory segment and
//! a POSIX message queue; the next guest, bob's, gets the same slot
//! account (one slot) and tries to read all of it.

use crate::harness::{Opts, Pool, runnable, wait};
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use gleaner_station::isolation::NamespaceMode;
use std::path::PathBuf;

/// `job.py plant|look TAG [PLANTED_JSON]`: prints JSON on stdout.
const GUEST: &str = r#"#!/usr/bin/python3 -I
import ctypes, errno, json, os, sys
mode, tag = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
KEY = 0x676c7430
MQ = b"/gl-plant-" + tag.encode()

def err():
    return errno.errorcode.get(ctypes.get_errno(), "?")

def writable_dirs():
    out = []
    def walk(d, depth):
        try:
            st = os.lstat(d)
        except OSError:
            return
        if not os.path.isdir(d) or os.path.islink(d):
            return
        if st.st_mode & 0o002:
            out.append(d)
        if depth >= 4:
            return
        try:
            names = os.listdir(d)
        except OSError:
            return
        for n in names:
            p = os.path.join(d, n)
            if p in ("/proc", "/sys", "/dev"):
                continue
            walk(p, depth + 1)
    walk("/", 0)
    walk("/dev/shm", 0)
    return sorted(set(out))

if mode == "plant":
    planted, failed = [], []
    for d in writable_dirs():
        f = os.path.join(d, "gl-plant-%s-file" % tag)
        t = os.path.join(d, "gl-plant-%s-dir" % tag)
        try:
            with open(f, "w") as h:
                h.write("secret of " + tag)
            os.chmod(f, 0o644)
            os.makedirs(os.path.join(t, "inner"))
            with open(os.path.join(t, "inner", "deep"), "w") as h:
                h.write("deep secret of " + tag)
            os.chmod(t, 0o755)
            os.chmod(os.path.join(t, "inner"), 0o755)
            os.chmod(os.path.join(t, "inner", "deep"), 0o644)
            planted += [f, os.path.join(t, "inner", "deep")]
        except OSError as e:
            failed.append((d, e.errno))
    shm = libc.shmget(KEY, 4096, 0o1000 | 0o644)
    if shm >= 0:
        libc.shmat.restype = ctypes.c_void_p
        addr = libc.shmat(shm, None, 0)
        ctypes.memmove(addr, b"shm secret", 10)
    rt.mq_open.restype = ctypes.c_int
    mq = rt.mq_open(MQ, os.O_CREAT | os.O_RDWR, 0o644, None)
    if mq >= 0:
        rt.mq_send(mq, b"mq secret", 9, 0)
    print(json.dumps({"uid": os.getuid(), "planted": planted, "failed": failed,
                      "dirs": writable_dirs(), "shm": shm if shm >= 0 else err(),
                      "mq": mq if mq >= 0 else err()}))
else:
    planted = json.loads(sys.argv[3])
    def read(p):
        try:
            return open(p).read()
        except OSError as e:
            return errno.errorcode.get(e.errno, "?")
    shm = libc.shmget(KEY, 0, 0)
    rt.mq_open.restype = ctypes.c_int
    mq = rt.mq_open(b"/gl-plant-" + sys.argv[4].encode(), os.O_RDONLY, 0, None)
    print(json.dumps({"uid": os.getuid(), "read": {p: read(p) for p in planted},
                      "shm": shm if shm >= 0 else err(), "mq": mq if mq >= 0 else err()}))
"#;

/// Removes what the planting guest left, should the station not have.
struct Planted(Vec<PathBuf>);

impl Drop for Planted {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
            if let Some(top) = p.ancestors().find(|a| {
                a.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with("-dir"))
            }) {
                let _ = std::fs::remove_dir_all(top);
            }
        }
    }
}

/// SysV shared memory segments of `uid`, from `/proc/sysvipc/shm`.
fn shm_of(uid: u32) -> Vec<String> {
    let t = std::fs::read_to_string("/proc/sysvipc/shm").unwrap_or_default();
    let mut lines = t.lines();
    let cols: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let at = cols.iter().position(|c| *c == "uid").unwrap_or(7);
    lines
        .filter(|l| l.split_whitespace().nth(at) == Some(&uid.to_string()))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_a_guest_plants_anywhere_writable_is_gone_before_the_next_guest_of_its_uid() {
    if !runnable("runs guests as slot accounts") {
        return;
    }
    let _l = crate::common::serial_lock();
    let pool = Pool::start(
        "scrub",
        Opts {
            slots: 1,
            namespaces: NamespaceMode::Off,
            ..Default::default()
        },
    )
    .await;
    let tag = format!("{}", std::process::id());
    let (a, b) = (JobId::new(1, 0), JobId::new(2, 0));
    pool.place(a, "alice", GUEST, &["plant", &tag], |_| {})
        .await;
    let done = wait("planting done", async || {
        pool.shadow.report(a, JobEventKind::Completed)
    })
    .await;
    assert_eq!(done.state, JobState::Completed { exit_code: 0 });
    let out: serde_json::Value = serde_json::from_slice(&pool.shadow.output(a, "stdout")).unwrap();
    println!("planted: {out:#}");
    let planted: Vec<PathBuf> = serde_json::from_value(out["planted"].clone()).unwrap();
    let _cleanup = Planted(planted.clone());
    let dirs: Vec<String> = serde_json::from_value(out["dirs"].clone()).unwrap();
    for d in ["/tmp", "/var/tmp", "/dev/shm"] {
        assert!(
            dirs.contains(&d.to_string()),
            "{d} not found writable: {dirs:?}"
        );
    }
    assert!(
        planted.len() >= 2 * 3,
        "planted only {planted:?}, failed {}",
        out["failed"]
    );
    assert!(out["shm"].is_i64(), "shmget: {}", out["shm"]);
    assert!(out["mq"].is_i64(), "mq_open: {}", out["mq"]);
    let uid = out["uid"].as_u64().unwrap() as u32;
    // The guest leaves the listing before its slot is released; the
    // release scrubs the uid, then frees the slot.
    pool.gone(a).await;
    wait("the slot's uid scrubbed", async || {
        (planted.iter().all(|p| !p.exists()) && shm_of(uid).is_empty()).then_some(())
    })
    .await;

    // The next guest of the same uid finds nothing.
    let list = serde_json::to_string(&planted).unwrap();
    pool.place(b, "bob", GUEST, &["look", &tag, &list, &tag], |_| {})
        .await;
    wait("look done", async || {
        pool.shadow.report(b, JobEventKind::Completed)
    })
    .await;
    let seen: serde_json::Value = serde_json::from_slice(&pool.shadow.output(b, "stdout")).unwrap();
    println!("the next guest: {seen:#}");
    assert_eq!(
        seen["uid"].as_u64(),
        Some(uid as u64),
        "the same slot account"
    );
    for (p, r) in seen["read"].as_object().unwrap() {
        assert_eq!(r, "ENOENT", "{p}");
    }
    assert_eq!(seen["shm"], "ENOENT");
    assert_eq!(seen["mq"], "ENOENT");
    pool.stop().await;
}
