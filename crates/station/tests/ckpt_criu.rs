//! The CRIU backend end to end below the daemon: a guest started by the
//! launcher as its slot account (as a station runs it: confined, idle at
//! all times) is dumped by CRIU (running as that account with only
//! CAP_CHECKPOINT_RESTORE), its images and sandbox go through a bundle
//! file, everything local is deleted as if on a new host, and the launcher
//! restores it as a child subreaper, as the uid the bundle's manifest
//! records (the slot leased by that uid): the job continues from where it
//! was dumped, still idle, and its exit status reaches the caller.
//!
//! Runs only where a working CRIU exists (`criu --version` ≥ 4.1 and
//! `criu check` passing, as root); elsewhere it prints why it is skipped.

use gleaner_station::checkpoint::{Criu, CriuStatus, Manifest, PackOptions, criu_status, pack};
use gleaner_station::isolation::{
    Confinement, GuestLauncher, GuestSpec, GuestUser, REAP_TIMEOUT, SlotConfig, SlotPool,
};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;

const STEPS: u32 = 40;

fn available() -> bool {
    match criu_status() {
        CriuStatus::Unavailable { reason } => {
            println!("skipped: no working CRIU on this machine: {reason}");
            false
        }
        CriuStatus::Available { version } => {
            println!("CRIU {version}");
            true
        }
    }
}

fn capture(path: &Path, user: GuestUser) -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(path)
        .unwrap();
    std::os::unix::fs::fchown(&f, Some(user.uid), Some(user.gid)).unwrap();
    f
}

fn steps_in(text: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|l| l.strip_prefix("step ")?.parse().ok())
        .collect()
}

#[test]
fn criu_moves_an_unprivileged_guest_through_a_bundle() {
    if !available() {
        return;
    }
    if gleaner_testkit::skip_unless_root("CRIU restores as a slot account") {
        return;
    }
    // Two slots: the job is dumped as the second and restored by its uid.
    let pool = SlotPool::for_daemon(&SlotConfig::new(gleaner_testkit::slot_prefix(), 2)).unwrap();
    let _first = pool.lease("another-job").unwrap();
    let lease = pool.lease("criu-job").unwrap();
    let user = lease.user().unwrap();
    assert_ne!(user.uid, 65534, "never nobody");
    // Guests (slot accounts) must reach their sandboxes below it.
    let root = common::shared_tempdir();
    let sandbox = root.path().join("sandbox");
    let images = root.path().join("images");
    gleaner_station::isolation::prepare_sandbox(&sandbox, Some(user)).unwrap();
    gleaner_station::isolation::prepare_sandbox(&images, Some(user)).unwrap();
    // State lives only in the shell's memory, plus a data file the job
    // keeps open (CRIU reopens it by path and checks its size).
    std::fs::write(
        sandbox.join("job.sh"),
        format!(
            "exec 3>>data\ni=0\nwhile [ $i -lt {STEPS} ]; do i=$((i+1)); echo \"step $i\"; \
             echo $i >&3; sleep 0.05; done\nexit 3\n"
        ),
    )
    .unwrap();
    let out1 = sandbox.join("_out");
    let spec = GuestSpec {
        user: Some(user),
        stdout: Stdio::from(capture(&out1, user)),
        reaper: true,
        sched_idle: true,
        ..GuestSpec::new("/bin/sh", &sandbox).arg("job.sh")
    };
    let confined = Confinement::new();
    let mut job = GuestLauncher::new()
        .spawn_confined(spec, None, &confined)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while steps_in(&std::fs::read_to_string(&out1).unwrap()).len() < 8 {
        assert!(Instant::now() < deadline, "job did not start");
        std::thread::sleep(Duration::from_millis(20));
    }

    let criu = Criu {
        images: images.clone(),
        user: Some(user),
    };
    let job_pid = job.job_pid().expect("the reaper's child is the job");
    assert_ne!(job_pid, job.pid());
    criu.dump(job_pid).unwrap();
    // The dump ended the job.
    let st = job.wait().unwrap();
    assert!(!st.success(), "{st:?}");
    let before = steps_in(&std::fs::read_to_string(&out1).unwrap());
    assert_eq!(before, (1..=before.len() as u32).collect::<Vec<_>>());

    // Images and sandbox into one bundle; the capture file stays out.
    let bundle = root.path().join("ckpt.bundle");
    let sources = criu.bundle_sources(&sandbox, &["_out"]).unwrap();
    assert!(sources.iter().any(|s| s.name == "criu-image:inventory.img"));
    assert!(sources.iter().any(|s| s.name == "data"));
    assert!(
        !sources
            .iter()
            .any(|s| s.name == "_out" || s.name.ends_with(".log"))
    );
    let mut w = std::io::BufWriter::new(std::fs::File::create(&bundle).unwrap());
    let m = pack(
        Manifest {
            backend: "criu".into(),
            uid: Some(user.uid),
            ..Default::default()
        },
        &sources,
        &PackOptions::default(),
        &mut w,
    )
    .unwrap()
    .manifest;
    drop(w);
    let f = std::fs::File::open(&bundle).unwrap();
    let checked = gleaner_station::checkpoint::verify(&mut std::io::BufReader::new(f), 2).unwrap();
    assert_eq!(checked.manifest, m);
    // The slot is given back; the "new host" leases by the recorded uid.
    lease.release(REAP_TIMEOUT).unwrap();

    // A "new host": nothing local survives but the bundle.
    std::fs::remove_dir_all(&sandbox).unwrap();
    std::fs::remove_dir_all(&images).unwrap();
    gleaner_station::isolation::prepare_sandbox(&sandbox, Some(user)).unwrap();
    gleaner_station::isolation::prepare_sandbox(&images, Some(user)).unwrap();
    let got = criu.unpack(&bundle, &sandbox).unwrap();
    assert_eq!(got.files.len(), m.files.len());
    assert_eq!(got.uid, Some(user.uid));
    let relet = pool.lease_uid("criu-job", got.uid.unwrap()).unwrap();
    assert_eq!(relet.user(), Some(user));
    for e in std::fs::read_dir(&sandbox)
        .unwrap()
        .chain(std::fs::read_dir(&images).unwrap())
    {
        let md = e.unwrap().metadata().unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            (md.uid(), md.gid()),
            (user.uid, user.gid),
            "unpacked files belong to the guest user"
        );
    }

    let out2 = sandbox.join("_out");
    let spec = GuestSpec {
        stdout: Stdio::from(capture(&out2, user)),
        ..criu.restore_spec(&sandbox, &[(1, &out2)])
    };
    let mut restored = GuestLauncher::new()
        .spawn_confined(spec, None, &confined)
        .unwrap();
    // Restored as the slot's uid, idle as it was dumped.
    let t0 = Instant::now();
    let root_pid = loop {
        if let Some(p) = std::fs::read_to_string(criu.pidfile())
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            .filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
        {
            break Some(p);
        }
        if t0.elapsed() > Duration::from_secs(30) || restored.try_wait().unwrap().is_some() {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if let Some(p) = root_pid {
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("Uid:")) {
            assert!(line.contains(&user.uid.to_string()), "{line}");
        }
        if let Some((_, policy, _)) = common::proc_stat(p as i32) {
            assert_eq!(policy, libc::SCHED_IDLE as u32, "restored job not idle");
        }
    }
    let st = restored.wait().unwrap();
    assert!(
        criu.pidfile().exists(),
        "restore failed: {}",
        criu.restore_errors()
    );
    // The job's own exit status, through the subreaper.
    assert_eq!(st.code(), Some(3), "{st:?}");
    let after = steps_in(&std::fs::read_to_string(&out2).unwrap());
    let all: Vec<u32> = before.iter().chain(after.iter()).copied().collect();
    assert_eq!(
        all,
        (1..=STEPS).collect::<Vec<_>>(),
        "the restored job must go on from the dump: before {before:?}, after {after:?}"
    );
    // The data file the job kept open grew on, without a gap.
    let data: Vec<u32> = std::fs::read_to_string(sandbox.join("data"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(data, (1..=STEPS).collect::<Vec<_>>());
    relet.release(REAP_TIMEOUT).unwrap();
}
