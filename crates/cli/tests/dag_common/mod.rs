//! A personal pool for the `glean dag` tests.
#![allow(dead_code)]

use crate::common::{TestOwner, UpProcess, free_base_port, glean_as, spawn_up_with, wait_pool_up};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// `glean up` in a temporary directory; stopped with SIGINT on drop. The
/// DAGs' owner is a real account (under root) using the user socket, with
/// its own work directory.
pub struct Pool {
    // Declared first so the pool stops before its directory goes.
    up: UpProcess,
    pub tmp: tempfile::TempDir,
    pub owner: TestOwner,
    /// `glean up` stations use the default slot accounts; removed by the
    /// last test that holds them, after the pool stopped.
    _slots: gleaner_testkit::DefaultSlots,
}

impl Pool {
    pub fn up(stations: u16) -> Pool {
        let slots = gleaner_testkit::DefaultSlots::hold();
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let owner = TestOwner::new("dagowner").unwrap();
        owner.dir(&tmp.path().join("work")).unwrap();
        // Where node jobs leave what the tests read: guests see it only
        // because the pool exposes it (each guest has a root of its own).
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let expose = format!("{}:rw", shared.display());
        let port = free_base_port(stations + 2);
        let up = UpProcess(spawn_up_with(
            &home,
            stations,
            port,
            Stdio::null(),
            &["--expose", &expose],
        ));
        let pool = Pool {
            up,
            tmp,
            owner,
            _slots: slots,
        };
        wait_pool_up(&home);
        pool
    }

    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    pub fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    /// A directory every guest of the pool may write to.
    pub fn shared(&self) -> PathBuf {
        self.tmp.path().join("shared")
    }
}

/// `glean ARGS` as the pool's DAG owner.
pub fn glean(pool: &Pool, args: &[&str]) -> Output {
    glean_as(&pool.owner, &pool.home(), &pool.work(), args)
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

/// Checks a finished DAG's `glean dag status --json` report `s`: `count`
/// nodes, every one done (and passing `extra`), none started before a data
/// parent finished or a priority parent started. Returns the nodes by name.
pub fn assert_dependency_order(
    s: &serde_json::Value,
    count: usize,
    extra: impl Fn(&serde_json::Value),
) -> BTreeMap<String, serde_json::Value> {
    let nodes: BTreeMap<String, serde_json::Value> = s["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["name"].as_str().unwrap().to_string(), n.clone()))
        .collect();
    assert_eq!(nodes.len(), count);
    let t = |n: &serde_json::Value, k: &str| -> u64 {
        n[k].as_u64()
            .unwrap_or_else(|| panic!("{} has no {k}: {n}", n["name"]))
    };
    for (name, n) in &nodes {
        assert_eq!(n["status"], "done", "{name}: {n}");
        extra(n);
        for p in n["data_parents"].as_array().unwrap() {
            let p = &nodes[p.as_str().unwrap()];
            assert!(
                t(n, "started_at") >= t(p, "finished_at"),
                "{name} started before its data parent {} finished",
                p["name"]
            );
        }
        for p in n["priority_parents"].as_array().unwrap() {
            let p = &nodes[p.as_str().unwrap()];
            assert!(
                t(n, "started_at") >= t(p, "started_at"),
                "{name} started before its priority parent {} started",
                p["name"]
            );
        }
    }
    nodes
}

/// The edges of the 20-node test DAG: r → a1..a4 → b1..b8 → c1..c4 → s1,
/// s2 → z, with priority chains a1 ⇢ a2 ⇢ a3 and b1 ⇢ b3, b5, b7.
pub const TWENTY_NODE_EDGES: &str = "\
PARENT r CHILD a1 a2 a3 a4
PRIORITY_PARENT a1 CHILD a2
PRIORITY_PARENT a2 CHILD a3
PARENT a1 CHILD b1 b2
PARENT a2 CHILD b3 b4
PARENT a3 CHILD b5 b6
PARENT a4 CHILD b7 b8
PRIORITY_PARENT b1 CHILD b3 b5 b7
PARENT b1 b2 CHILD c1
PARENT b3 b4 CHILD c2
PARENT b5 b6 CHILD c3
PARENT b7 b8 CHILD c4
PARENT c1 c2 CHILD s1
PARENT c3 c4 CHILD s2
PARENT s1 s2 CHILD z
";
