//! The station daemon and the records of its guests (host/guest_records.rs):
//! at start it kills the recorded guests that still run and survives a torn
//! record; at a graceful stop it kills whatever is still recorded.

use gleaner_proto::job::JobId;
use gleaner_station::config::StationRole;
use gleaner_station::host::guest_records::{self, GuestRecord, GuestRecords};
use gleaner_station::host::procs;
use gleaner_station::node::spawn_for_test;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

mod common;
use common::{pool_keys, pool_station, shared_tempdir};

/// A stand-in for an orphaned guest: a session of its own, with a child.
fn orphan() -> Child {
    Command::new("sh")
        .args(["-c", "sleep 60 & wait"])
        .process_group(0)
        .spawn()
        .unwrap()
}

fn gone(c: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if matches!(c.try_wait(), Ok(Some(_))) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_kills_recorded_guests_and_survives_a_torn_record() {
    let dir = shared_tempdir();
    let root = dir.path();
    let keys = pool_keys(root);
    let cfg = pool_station(root, &keys, "", "x", StationRole::ExecuteOnly);
    let records = GuestRecords::new(guest_records::dir(&cfg.state_dir));

    let mut c = orphan();
    let rec = GuestRecord::of_process("1.0-r0-0", JobId::new(1, 0), c.id() as i32).unwrap();
    records.write(&rec).unwrap();
    // A record torn by the crash, and one of a process long gone.
    std::fs::write(records.path_of("2.0-r0-0"), b"{\"guest_id\": \"2.0-r").unwrap();
    let mut old = rec.clone();
    old.guest_id = "3.0-r0-0".into();
    old.start_time = old.start_time.saturating_sub(1);
    records.write(&old).unwrap();

    let (_, running) = spawn_for_test(cfg.clone()).await.unwrap();
    assert!(gone(&mut c), "the recorded guest survived the start");
    assert!(records.load().unwrap().is_empty(), "records not cleared");

    // A graceful stop kills what is still recorded.
    let mut c2 = orphan();
    let rec = GuestRecord::of_process("4.0-r0-0", JobId::new(4, 0), c2.id() as i32).unwrap();
    records.write(&rec).unwrap();
    running.stop().await;
    assert!(gone(&mut c2), "the recorded guest survived the stop");
    assert!(records.load().unwrap().is_empty());
}

/// Live processes whose parent is `ppid` (from /proc).
fn children_of(ppid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(s) = procs::proc_stat(pid as i32)
            && s.ppid == ppid as i32
        {
            out.push(pid);
        }
    }
    out
}

/// Without cgroups, a guest in its own PID namespace is found through the
/// waiter the record names: the namespace's init is the waiter's child in
/// a session of its own, and takes the namespace with it.
#[test]
fn a_pid_namespace_guest_is_killed_through_its_waiter() {
    use gleaner_station::isolation::{GuestLauncher, GuestSpec};
    let dir = tempfile::tempdir().unwrap();
    let mut spec = GuestSpec::new("/bin/sh", dir.path().join("sandbox"))
        .arg("-c")
        .arg("sleep 60 & sleep 60 & wait")
        .env("PATH", "/usr/bin:/bin");
    spec.pid_namespace = true;
    let mut p = match GuestLauncher::new().spawn(spec, None) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("SKIPPED: no PID namespace here ({e})");
            return;
        }
    };
    let waiter = p.pid();
    // The namespace init (sh) and its two sleeps.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (init, sleeps) = loop {
        if let Some(&init) = children_of(waiter).first() {
            let s = children_of(init);
            if s.len() >= 2 {
                break (init, s);
            }
        }
        assert!(Instant::now() < deadline, "the guest did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    let records = GuestRecords::new(dir.path().join("guests"));
    let rec = GuestRecord::of_process("5.0-r0-0", JobId::new(5, 0), waiter as i32).unwrap();
    assert_eq!(rec.pgid, waiter as i32);
    assert_ne!(
        procs::proc_stat(init as i32).unwrap().pgrp,
        rec.pgid,
        "the init has a session of its own"
    );
    records.write(&rec).unwrap();
    assert_eq!(records.kill_leftovers(), 1);
    let _ = p.wait();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::iter::once(init)
        .chain(sleeps.iter().copied())
        .any(|q| procs::proc_stat(q as i32).is_some())
    {
        assert!(
            Instant::now() < deadline,
            "a process of the namespace survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
