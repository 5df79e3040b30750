//! A personal pool for the `glean dag` tests.
#![allow(dead_code)]

use crate::common::{UpProcess, free_base_port, glean_in, spawn_up, wait_pool_up};
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// `glean up` in a temporary directory; stopped with SIGINT on drop.
pub struct Pool {
    // Declared first so the pool stops before its directory goes.
    up: UpProcess,
    pub tmp: tempfile::TempDir,
}

impl Pool {
    pub fn up(stations: u16) -> Pool {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(tmp.path().join("work")).unwrap();
        let port = free_base_port(stations + 2);
        let up = UpProcess(spawn_up(&home, stations, port, Stdio::null()));
        let pool = Pool { up, tmp };
        wait_pool_up(&home);
        pool
    }

    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    pub fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }
}

pub fn glean(pool: &Pool, args: &[&str]) -> Output {
    glean_in(&pool.home(), &pool.work(), args)
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
