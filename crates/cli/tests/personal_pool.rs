//! `glean up` end to end with real processes on loopback: a personal pool of
//! a coordinator and three stations; jobs submitted with `glean submit` run
//! on the pool's stations and their output files arrive back in the submit
//! directory; Ctrl-C (SIGINT) stops every daemon.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn glean_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("glean")
}

/// A base port with its neighbours free (the pool uses P and P+2..P+4).
fn free_base_port() -> u16 {
    for _ in 0..50 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        drop(l);
        if p > 60000 {
            continue;
        }
        let ok = (0..5).all(|i| std::net::TcpListener::bind(("127.0.0.1", p + i)).is_ok());
        if ok {
            return p;
        }
    }
    panic!("no free port range");
}

struct Pool(Child);
impl Drop for Pool {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn glean(home: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(glean_bin())
        .args(args)
        .env("GLEAN_HOME", home)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn personal_pool_runs_jobs_and_stops_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let port = free_base_port();
    let pool = Pool(
        Command::new(glean_bin())
            .args([
                "up",
                "--stations",
                "3",
                "--interval",
                "1",
                "--port",
                &port.to_string(),
            ])
            .env("GLEAN_HOME", &home)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    // Wait for pool.toml (written once every daemon listens).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !home.join("pool.toml").exists() {
        assert!(Instant::now() < deadline, "pool did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }

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
    let out = glean(&home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("4 job(s) submitted to cluster 1"));

    // Every job completes with exit code 0 and its output arrives.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = glean(&home, &work, &["history", "--json"]);
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
