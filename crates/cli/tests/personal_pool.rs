//! `glean up` end to end with real processes on loopback: a personal pool of
//! a coordinator and three stations; jobs submitted with `glean submit` run
//! on the pool's stations and their output files arrive back in the submit
//! directory; Ctrl-C (SIGINT) stops every daemon.

mod common;

use common::{
    TestOwner, UpProcess, free_base_port, glean_as, glean_in as glean, spawn_up, wait_pool_up,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn personal_pool_runs_jobs_and_stops_cleanly() {
    // `glean up` writes its stations' configuration: as root they make
    // and share the default slot accounts, removed by the last user.
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    // Jobs run as their owner (never root): a real account under root,
    // submitting on station0's user socket with no token.
    let owner = TestOwner::new("personal").unwrap();
    owner.dir(&work).unwrap();
    let port = free_base_port(5);
    let pool = UpProcess(spawn_up(&home, 3, port, Stdio::piped()));
    // Wait for pool.toml (written once every daemon listens).
    wait_pool_up(&home);

    std::fs::write(
        work.join("job.sub"),
        "executable = /bin/sh\n\
         arguments = \"-c 'echo result $(Process) > answer.txt; echo done $(Process)'\"\n\
         output = out.$(Process)\n\
         error = err.$(Process)\n\
         transfer_output_files = answer.txt\n\
         queue 4\n",
    )
    .unwrap();
    let out = glean_as(&owner, &home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("4 job(s) submitted to cluster 1"));

    // Every job completes with exit code 0 and its output arrives.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = glean_as(&owner, &home, &work, &["history", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let done = v.as_array().map_or(0, |a| a.len());
        if done == 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {done} of 4 jobs finished: {v}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    for p in 0..4 {
        let stdout = std::fs::read_to_string(work.join(format!("out.{p}"))).unwrap();
        assert_eq!(stdout.trim(), format!("done {p}"));
    }
    // All four wrote answer.txt; the last to finish wins, as with HTCondor.
    let answer = std::fs::read_to_string(work.join("answer.txt")).unwrap();
    assert!(answer.starts_with("result "), "{answer}");

    let status = glean(&home, &work, &["status"]);
    assert!(status.status.success());
    let s = String::from_utf8_lossy(&status.stdout);
    assert!(s.contains("station0") && s.contains("station2"), "{s}");

    // The coordinator's Up-Down table lists the submitting station.
    let up = glean(&home, &work, &["userprio", "--json"]);
    assert!(up.status.success(), "{up:?}");
    let v: serde_json::Value = serde_json::from_slice(&up.stdout).unwrap();
    let rows = v["stations"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["station"] == "station0"), "{v}");

    drop(pool);
    // No daemon of this pool survives.
    let ps = Command::new("pgrep")
        .args(["-f", &home.display().to_string()])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ps.stdout).trim().is_empty(),
        "daemons left running: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}
