//! A home station killed with SIGKILL while its DAG is under way resumes the
//! DAG when it starts again, without submitting any node twice (separate
//! `glean coordinator` / `glean station` processes on loopback).

mod common;

use common::{Daemons, TestKeys, UserDirs, free_port, glean_in, shared_dir, socket_line, spawn};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn station_config(dir: &Path, name: &str, port: u16, coord: u16, keys: &TestKeys) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let owner = dir.join("owner");
    std::fs::write(&owner, "idle\n").unwrap();
    let cfg = dir.join("station.toml");
    std::fs::write(
        &cfg,
        format!(
            "name = \"{name}\"\nlisten = \"127.0.0.1:{port}\"\nstate_dir = \"{}\"\n\
             coordinator = \"http://127.0.0.1:{coord}\"\n{}\
             advertise_secs = 1\nplacement_interval_secs = 1\ncpus = 1\n\
             activity = {{ source = \"file\", path = \"{}\" }}\n{}{}",
            dir.join("state").display(),
            common::station_creds(keys, name, dir),
            owner.display(),
            socket_line(&dir.join("state")),
            common::isolation_toml(),
        ),
    )
    .unwrap();
    cfg
}

fn status(home: &Path, work: &Path) -> serde_json::Value {
    let out = glean_in(home, work, &["dag", "status", "1", "--json"]);
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

#[test]
fn killed_home_station_resumes_its_dag() {
    let tmp = tempfile::tempdir().unwrap();
    let user = UserDirs::new(tmp.path());
    let UserDirs {
        home, work, keys, ..
    } = &user;
    let (home, work) = (home.clone(), work.clone());
    let (pc, p0, p1) = (free_port(), free_port(), free_port());
    std::fs::write(
        home.join("pool.toml"),
        format!("station = \"http://127.0.0.1:{p0}\"\n"),
    )
    .unwrap();
    std::fs::write(home.join("token"), user.token()).unwrap();

    // The home station alone: no coordinator yet, so nothing can run and
    // the DAG's root waits in the queue.
    let s0 = station_config(&tmp.path().join("s0"), "home", p0, pc, keys);
    let mut daemons = Daemons(vec![spawn("station", &s0, &tmp.path().join("s0.log"), p0)]);

    let shared = shared_dir();
    let log = shared.path().join("ran.log");
    // Nodes may run on either station, each as a slot account of its own
    // (umask 077): the log is made writable for all beforehand.
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::write(
        work.join("step.sub"),
        format!(
            "executable = /bin/sh\narguments = \"-c 'echo $(node) >> {}'\"\nqueue\n",
            log.display()
        ),
    )
    .unwrap();
    let mut dag = String::new();
    for n in ["s1", "s2", "s3", "s4"] {
        dag.push_str(&format!("JOB {n} step.sub\nVARS {n} node=\"{n}\"\n"));
    }
    dag.push_str("PARENT s1 CHILD s2\nPRIORITY_PARENT s2 CHILD s3\nPARENT s3 CHILD s4\n");
    std::fs::write(work.join("chain.dag"), dag).unwrap();
    let out = glean_in(&home, &work, &["dag", "submit", "chain.dag"]);
    assert!(out.status.success(), "{out:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = status(&home, &work);
        if s["nodes"][0]["status"] == "submitted" {
            break;
        }
        assert!(Instant::now() < deadline, "root never submitted: {s}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // SIGKILL, then start the same station again.
    let mut dead = daemons.0.remove(0);
    dead.kill().unwrap();
    dead.wait().unwrap();
    daemons
        .0
        .push(spawn("station", &s0, &tmp.path().join("s0b.log"), p0));
    let s = status(&home, &work);
    assert_eq!(s["state"], "running", "{s}");
    assert_eq!(s["nodes"][0]["clusters"], serde_json::json!([1]), "{s}");

    // Now a coordinator and a second station: the DAG runs to the end.
    let cdir = tmp.path().join("coord");
    std::fs::create_dir_all(&cdir).unwrap();
    let ccfg = cdir.join("coordinator.toml");
    std::fs::write(
        &ccfg,
        format!(
            "listen = \"127.0.0.1:{pc}\"\nstate_dir = \"{}\"\n{}\
             scheduling_interval_secs = 1\nadvertise_period_secs = 1\n",
            cdir.join("state").display(),
            common::coordinator_key(keys)
        ),
    )
    .unwrap();
    daemons.0.push(spawn(
        "coordinator",
        &ccfg,
        &tmp.path().join("coord.log"),
        pc,
    ));
    let s1 = station_config(&tmp.path().join("s1"), "exec", p1, pc, keys);
    daemons
        .0
        .push(spawn("station", &s1, &tmp.path().join("s1.log"), p1));

    let deadline = Instant::now() + Duration::from_secs(90);
    let s = loop {
        let s = status(&home, &work);
        if s["state"] == "done" {
            break s;
        }
        assert!(
            s["state"] == "running" || s.is_null(),
            "DAG did not finish cleanly: {s}"
        );
        assert!(Instant::now() < deadline, "DAG not done: {s}");
        std::thread::sleep(Duration::from_millis(300));
    };
    // One cluster per node: nothing was submitted twice, each ran once.
    for n in s["nodes"].as_array().unwrap() {
        assert_eq!(n["clusters"].as_array().map(Vec::len), Some(1), "{n}");
    }
    let ran = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = ran.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["s1", "s2", "s3", "s4"], "{ran}");
    let out = glean_in(&home, &work, &["history", "--json"]);
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(h.as_array().map(Vec::len), Some(4), "{h}");
}
