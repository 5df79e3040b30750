//! A personal pool for the `glean dag` tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn glean_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("glean")
}

/// A base port with its neighbours free (the pool uses P and P+2..P+N+1).
fn free_base_port(n: u16) -> u16 {
    for _ in 0..50 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        drop(l);
        if p > 60000 {
            continue;
        }
        let ok = (0..n + 2).all(|i| std::net::TcpListener::bind(("127.0.0.1", p + i)).is_ok());
        if ok {
            return p;
        }
    }
    panic!("no free port range");
}

/// `glean up` in a temporary directory; stopped with SIGINT on drop.
pub struct Pool {
    child: Child,
    pub tmp: tempfile::TempDir,
}

impl Pool {
    pub fn up(stations: u16) -> Pool {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(tmp.path().join("work")).unwrap();
        let port = free_base_port(stations);
        let child = Command::new(glean_bin())
            .args([
                "up",
                "--stations",
                &stations.to_string(),
                "--interval",
                "1",
                "--port",
                &port.to_string(),
            ])
            .env("GLEAN_HOME", &home)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let pool = Pool { child, tmp };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !home.join("pool.toml").exists() {
            assert!(Instant::now() < deadline, "pool did not come up");
            std::thread::sleep(Duration::from_millis(100));
        }
        pool
    }

    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    pub fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn glean(pool: &Pool, args: &[&str]) -> Output {
    glean_in(&pool.home(), &pool.work(), args)
}

pub fn glean_in(home: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new(glean_bin())
        .args(args)
        .env("GLEAN_HOME", home)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A directory every guest may write to: guests run as another user and
/// cannot enter the test's private temporary directory.
pub fn shared_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// `glean dag status ID --json`.
pub fn dag_status(pool: &Pool, id: u64) -> serde_json::Value {
    let out = glean(pool, &["dag", "status", &id.to_string(), "--json"]);
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

/// Polls until DAG `id` is in `state`; panics after `secs` or if it ends in
/// another state.
pub fn wait_dag(pool: &Pool, id: u64, state: &str, secs: u64) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let s = dag_status(pool, id);
        let now = s["state"].as_str().unwrap_or("");
        if now == state {
            return s;
        }
        if !(now.is_empty() || now == "running") {
            // Show what the jobs said, to diagnose a failed node.
            for e in std::fs::read_dir(pool.work()).unwrap().flatten() {
                if e.path().extension().is_some_and(|x| x == "err") {
                    let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                    eprintln!("{}: {text}", e.path().display());
                }
            }
            panic!("DAG {id} ended {now}, expected {state}: {s}");
        }
        assert!(
            Instant::now() < deadline,
            "DAG {id} not {state} in {secs} s: {s}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}
