//! The CRIU backend end to end below the daemon: a guest started by the
//! launcher as the unprivileged guest user is dumped by CRIU (running as
//! that user with only CAP_CHECKPOINT_RESTORE), its images and sandbox go
//! through a bundle file, everything local is deleted as if on a new host,
//! and the launcher restores it as a child subreaper: the job continues
//! from where it was dumped and its exit status reaches the caller.
//!
//! Runs only where a working CRIU exists (`criu --version` ≥ 4.1 and
//! `criu check` passing, as root); elsewhere it prints why it is skipped.

use gleaner_station::checkpoint::{
    Criu, CriuStatus, Manifest, criu_status, verify_bundle_file, write_bundle_file,
};
use gleaner_station::isolation::{GuestLauncher, GuestSpec, GuestUser};
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
    let user = GuestUser::lookup("nobody").unwrap();
    // Guests (nobody) must reach their sandboxes below it.
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
        ..GuestSpec::new("/bin/sh", &sandbox).arg("job.sh")
    };
    let mut job = GuestLauncher::new().spawn(spec, None).unwrap();
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
    let m = write_bundle_file(
        Manifest {
            backend: "criu".into(),
            ..Default::default()
        },
        &sources,
        &bundle,
    )
    .unwrap();
    assert_eq!(verify_bundle_file(&bundle).unwrap(), m);

    // A "new host": nothing local survives but the bundle.
    std::fs::remove_dir_all(&sandbox).unwrap();
    std::fs::remove_dir_all(&images).unwrap();
    gleaner_station::isolation::prepare_sandbox(&sandbox, Some(user)).unwrap();
    gleaner_station::isolation::prepare_sandbox(&images, Some(user)).unwrap();
    let got = criu.unpack(&bundle, &sandbox).unwrap();
    assert_eq!(got.files.len(), m.files.len());
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
    let mut restored = GuestLauncher::new().spawn(spec, None).unwrap();
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
}
