//! The guest's view of the machine (issue 30, findings 6 and 7): a root of
//! its own. Two guests of two owners run at once, one asking for the
//! owner's volume `refdata`; each reports what it can see and do, and the
//! test checks the host around them.

use crate::harness::{Opts, Pool, json_of, runnable, wait};
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use gleaner_station::isolation::{Controller, Exposed};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// `job.py TAG STATE EXECUTE EXPOSED VOLUME OWNER_NOTE NR_IOPRIO_GET
/// NR_KEYCTL` (the system call numbers of this architecture).
const GUEST: &str = r#"#!/usr/bin/python3 -I
import ctypes, errno, json, os, subprocess, sys, time
tag, state, execute, exposed, volume, note = sys.argv[1:7]
nr_ioprio_get, nr_keyctl = int(sys.argv[7]), int(sys.argv[8])

def attempt(f):
    try:
        r = f()
        return r if r is not None else "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))

def write(p):
    def w():
        with open(p, "w") as f:
            f.write("planted by " + tag)
    return w

def ls(p):
    return lambda: sorted(os.listdir(p))

def read(p):
    return lambda: open(p).read()

libc = ctypes.CDLL(None, use_errno=True)
def syscall_errno(*args):
    r = libc.syscall(*[ctypes.c_long(a) for a in args])
    return r if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")

# Walk up from the sandbox as far as it goes: the root is the guest's.
os.chdir("/")
for _ in range(10):
    os.chdir("..")
top = sorted(os.listdir("."))
os.chdir(os.path.dirname(os.path.abspath(sys.argv[0])))

ionice_self = subprocess.run(["ionice", "-c2", "-n0", "-p", str(os.getpid())],
                             capture_output=True, text=True)
ionice_run = subprocess.run(["ionice", "-c2", "-n0", "true"], capture_output=True, text=True)
# ioprio_get(IOPRIO_WHO_PROCESS, 0): class in the top bits.
prio = syscall_errno(nr_ioprio_get, 1, 0)
r = {
    "cwd": os.getcwd(),
    "top": top,
    "home": attempt(ls("/home")),
    "root": attempt(ls("/root")),
    "owner_note": attempt(read(note)),
    "state": attempt(ls(state)),
    "queue_db": attempt(read(os.path.join(state, "queue.db"))),
    "execute": attempt(ls(execute)),
    "write_root": attempt(write("/planted")),
    "write_usr": attempt(write("/usr/planted")),
    "write_etc": attempt(write("/etc/planted")),
    "passwd": attempt(lambda: len(open("/etc/passwd").read()) > 0),
    "tmp": attempt(write("/tmp/gl-view-" + tag)),
    "var_tmp": attempt(write("/var/tmp/gl-view-" + tag)),
    "dev_shm": attempt(write("/dev/shm/gl-view-" + tag)),
    "run_lock": attempt(write("/run/lock/gl-view-" + tag)),
    "var": attempt(ls("/var")),
    "run": attempt(ls("/run")),
    "dev": attempt(ls("/dev")),
    "dev_null": attempt(write("/dev/null")),
    "sys": attempt(ls("/sys")),
    "sys_cgroup": os.path.exists("/sys/fs/cgroup"),
    "sys_cpu_online": attempt(read("/sys/devices/system/cpu/online")),
    "proc_pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "exposed_read": attempt(read(os.path.join(exposed, "shared.txt"))),
    "exposed_write": attempt(write(os.path.join(exposed, "planted"))),
    "volume_read": attempt(read(os.path.join(volume, "ref.txt"))),
    "oldroot": os.path.exists("/oldroot") or os.path.exists("/newroot"),
    "ionice_self_rc": ionice_self.returncode,
    "ionice_self_err": ionice_self.stderr.strip(),
    "ionice_run_rc": ionice_run.returncode,
    "ioprio_class": (prio >> 13) if isinstance(prio, int) else prio,
    # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, create)
    "keyctl": syscall_errno(nr_keyctl, 0, -4, 1),
    "root_mount": [l for l in open("/proc/self/mountinfo") if l.split()[4] == "/"],
}
with open("result.tmp", "w") as f:
    json.dump(r, f)
os.rename("result.tmp", "result.json")
t = time.time()
while not os.path.exists("end") and time.time() - t < 600:
    time.sleep(0.02)
print("done", tag)
"#;

/// A 0644 file in a home directory of the host (an owner's note).
struct OwnerNote(PathBuf);

impl OwnerNote {
    fn new() -> Self {
        let dir = PathBuf::from(format!("/home/gltest-view-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let note = dir.join("note.txt");
        std::fs::write(&note, "the owner's note").unwrap();
        std::fs::set_permissions(&note, std::fs::Permissions::from_mode(0o644)).unwrap();
        OwnerNote(note)
    }
}

impl Drop for OwnerNote {
    fn drop(&mut self) {
        if let Some(d) = self.0.parent() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn as_str(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_guest_sees_a_root_of_its_own_and_cannot_leave_idle_io() {
    if !runnable("runs guests as slot accounts in namespaces") {
        return;
    }
    let _l = crate::common::serial_lock();
    let note = OwnerNote::new();
    // The owner's choices: one directory for every guest, one volume for
    // the jobs that ask.
    let offered = crate::common::shared_tempdir_in("/var/lib");
    let (exposed, volume) = (
        offered.path().join("exposed"),
        offered.path().join("refdata"),
    );
    for (d, f, text) in [
        (&exposed, "shared.txt", "shared data"),
        (&volume, "ref.txt", "reference data"),
    ] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join(f), text).unwrap();
        std::fs::set_permissions(d.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let pool = Pool::start(
        "view",
        Opts {
            expose: vec![Exposed::parse(exposed.to_str().unwrap()).unwrap()],
            volumes: [(
                "refdata".to_string(),
                Exposed::parse(volume.to_str().unwrap()).unwrap(),
            )]
            .into(),
            ..Default::default()
        },
    )
    .await;
    let (state, execute) = (
        pool.state.display().to_string(),
        pool.execute.display().to_string(),
    );
    let jobs = [
        (JobId::new(1, 0), "alice", "a", true),
        (JobId::new(2, 0), "bob", "b", false),
    ];
    let (nr_ioprio_get, nr_keyctl) = (
        libc::SYS_ioprio_get.to_string(),
        libc::SYS_keyctl.to_string(),
    );
    for (job, owner, tag, wants) in jobs {
        pool.place(
            job,
            owner,
            GUEST,
            &[
                tag,
                &state,
                &execute,
                exposed.to_str().unwrap(),
                volume.to_str().unwrap(),
                note.0.to_str().unwrap(),
                &nr_ioprio_get,
                &nr_keyctl,
            ],
            |d| {
                if wants {
                    d.custom_attrs
                        .insert("WantVolumes".into(), "\"refdata\"".into());
                }
            },
        )
        .await;
    }
    let mut guests = Vec::new();
    for (job, ..) in jobs {
        guests.push(pool.running(job).await);
    }
    let mut results = Vec::new();
    for g in &guests {
        results.push(json_of(&pool.execute.join(&g.guest_id).join("result.json")).await);
    }
    // Seen from outside: the lowest I/O weight where the kernel has one.
    if let Some(m) = pool.cgroups()
        && let Some((root, v2)) = m.controller_root(Controller::Io)
    {
        for g in &guests {
            let dir = m.open(&g.guest_id).unwrap().dir(&root);
            let file = if v2 {
                "io.bfq.weight"
            } else {
                "blkio.bfq.weight"
            };
            if let Ok(w) = std::fs::read_to_string(dir.join(file)) {
                println!("{}: {file} = {}", g.guest_id, w.trim());
                assert!(w.split_whitespace().any(|x| x == "1"), "{file}: {w}");
            }
        }
    }
    for (i, r) in results.iter().enumerate() {
        let (job, _, tag, wants) = jobs[i];
        let g = &guests[i];
        println!("guest {tag}: {r:#}");
        let s = |k: &str| as_str(&r[k]);
        let sandbox = pool.execute.join(&g.guest_id);
        assert_eq!(s("cwd"), sandbox.display().to_string());
        assert_eq!(r["oldroot"], false, "the old root is gone");
        // Empty homes; the owner's note does not exist for it.
        assert_eq!(r["home"], serde_json::json!([]));
        assert!(
            r["root"] == serde_json::json!([]) || s("root") == "EACCES",
            "/root: {}",
            r["root"]
        );
        assert_eq!(s("owner_note"), "ENOENT");
        // No daemon state: the state directory is only the way to the
        // sandbox, the execute directory holds its own sandbox only.
        assert_eq!(r["state"], serde_json::json!(["execute"]));
        assert_eq!(s("queue_db"), "ENOENT");
        assert_eq!(r["execute"], serde_json::json!([g.guest_id]));
        // The system read-only.
        for k in ["write_root", "write_usr", "write_etc"] {
            assert!(
                ["EROFS", "EACCES"].contains(&s(k).as_str()),
                "{k}: {}",
                s(k)
            );
        }
        assert_eq!(r["passwd"], true);
        assert!(
            r["root_mount"][0].as_str().unwrap().contains(" ro,")
                || r["root_mount"][0].as_str().unwrap().contains(" ro "),
            "{}",
            r["root_mount"]
        );
        // Its own scratch places, writable.
        for k in ["tmp", "var_tmp", "dev_shm", "run_lock", "dev_null"] {
            assert_eq!(s(k), "ok", "{k}");
        }
        let top: Vec<String> = serde_json::from_value(r["top"].clone()).unwrap();
        for never in ["srv", "mnt", "media", "work", "boot"] {
            assert!(!top.contains(&never.to_string()), "/{never} in {top:?}");
        }
        assert!(top.contains(&"usr".to_string()) && top.contains(&"proc".to_string()));
        let dev: Vec<String> = serde_json::from_value(r["dev"].clone()).unwrap();
        for d in &dev {
            assert!(
                [
                    "null", "zero", "full", "random", "urandom", "tty", "fd", "stdin", "stdout",
                    "stderr", "ptmx", "pts", "shm"
                ]
                .contains(&d.as_str()),
                "/dev/{d}"
            );
        }
        assert!(!dev.contains(&"vda".to_string()) && !dev.contains(&"mem".to_string()));
        let sys: Vec<String> = serde_json::from_value(r["sys"].clone()).unwrap();
        assert!(
            sys.iter().all(|d| d == "devices" || d == "kernel"),
            "{sys:?}"
        );
        assert_eq!(r["sys_cgroup"], false);
        assert!(
            s("sys_cpu_online").starts_with('0'),
            "{}",
            s("sys_cpu_online")
        );
        assert!(
            r["proc_pids"].as_array().unwrap().len() <= 4,
            "{}",
            r["proc_pids"]
        );
        // What the owner shows: read, not written; the volume for the job
        // that asked only.
        assert_eq!(s("exposed_read"), "shared data");
        assert!(["EROFS", "EACCES"].contains(&s("exposed_write").as_str()));
        if wants {
            assert_eq!(s("volume_read"), "reference data", "{job}");
        } else {
            assert_eq!(s("volume_read"), "ENOENT", "{job}");
        }
        // Idle I/O it cannot leave; no keyrings.
        assert_ne!(r["ionice_self_rc"], 0, "ionice -c2 -n0 -p succeeded");
        assert_ne!(r["ionice_run_rc"], 0, "ionice -c2 -n0 true succeeded");
        assert_eq!(r["ioprio_class"], 3, "IOPRIO_CLASS_IDLE");
        assert_eq!(s("keyctl"), "EPERM");
        // What it wrote in its scratch places is not the host's.
        for d in ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"] {
            let p = Path::new(d).join(format!("gl-view-{tag}"));
            assert!(!p.exists(), "{} on the host", p.display());
        }
    }
    // Nothing changed on the host's side.
    assert!(!exposed.join("planted").exists());
    assert_eq!(
        std::fs::read_to_string(&note.0).unwrap(),
        "the owner's note"
    );
    for (i, (job, _, tag, _)) in jobs.iter().enumerate() {
        std::fs::write(pool.execute.join(&guests[i].guest_id).join("end"), "").unwrap();
        let done = wait("completed", async || {
            pool.shadow.report(*job, JobEventKind::Completed)
        })
        .await;
        assert_eq!(done.state, JobState::Completed { exit_code: 0 });
        assert_eq!(
            pool.shadow.output(*job, "stdout"),
            format!("done {tag}\n").as_bytes()
        );
    }
    pool.stop().await;
}
