//! `glean q --analyze` against a personal pool of real processes: an
//! unmatchable job is explained station by station, naming the clause.

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
fn analyze_explains_an_unmatchable_job_station_by_station() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let port = free_base_port();
    let _pool = Pool(
        Command::new(glean_bin())
            .args([
                "up",
                "--stations",
                "2",
                "--interval",
                "1",
                "--port",
                &port.to_string(),
            ])
            .env("GLEAN_HOME", &home)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !home.join("pool.toml").exists() {
        assert!(Instant::now() < deadline, "pool did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::write(
        work.join("job.sub"),
        "executable = /bin/true\n\
         requirements = Memory > 100000000 && OpSys == \"LINUX\"\n\
         request_disk = 1\n\
         queue\n",
    )
    .unwrap();
    let out = glean(&home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "{out:?}");

    // Wait until the coordinator has the execute stations' ads.
    let deadline = Instant::now() + Duration::from_secs(60);
    let v = loop {
        let out = glean(&home, &work, &["q", "--analyze", "1.0", "--json"]);
        if out.status.success() {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let n = v["stations"].as_array().map_or(0, |a| a.len());
            if n >= 2 {
                break v;
            }
        }
        assert!(Instant::now() < deadline, "no analysis: {out:?}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(v["state"], "idle", "{v}");
    for s in v["stations"].as_array().unwrap() {
        let rejects = s["rejects"].as_array().unwrap();
        let req = rejects
            .iter()
            .find(|r| r["reason"] == "requirements")
            .unwrap_or_else(|| panic!("{s}"));
        // Only the failing clause is named, not the OpSys one.
        let clauses = req["clauses"].as_array().unwrap();
        assert_eq!(clauses.len(), 1, "{s}");
        assert!(clauses[0]["expr"].as_str().unwrap().contains("Memory"));
    }
    // The table form names the clause too.
    let out = glean(&home, &work, &["q", "--analyze", "1.0"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Memory > 100000000"), "{text}");
    assert!(text.contains("0 of"), "{text}");
    // The machine ads, as ClassAds.
    let out = glean(&home, &work, &["status", "--long"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for attr in [
        "Arch = ",
        "OpSys = ",
        "Cpus = ",
        "Memory = ",
        "Disk = ",
        "Mips = ",
    ] {
        assert!(text.contains(attr), "{attr} missing in {text}");
    }
    // An unknown job is an error, not an empty analysis.
    let out = glean(&home, &work, &["q", "--analyze", "99.0"]);
    assert!(!out.status.success());
}
