//! Gleaner's own DAG tests on one personal pool: a 20-node DAG with DMW's
//! priority dependences runs in dependency order with a retried node; a
//! removed DAG writes DAGMan's rescue DAG and its resubmission skips what
//! was done; bad DAGs are refused with their file and line.

use crate::pool::{Pool, TWENTY_NODE_EDGES, assert_dependency_order, dag_status, glean, wait_dag};
use std::time::{Duration, Instant};

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

/// The cluster `glean dag submit` reports (condor_submit_dag's line).
pub fn submitted_cluster(stdout: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("1 job(s) submitted to cluster ")
                .and_then(|r| r.trim_end_matches('.').parse().ok())
        })
        .unwrap_or_else(|| panic!("no cluster in {text}"))
}

#[test]
fn dags_on_a_pool() {
    let pool = Pool::up(3);
    twenty_node_dag_completes_in_dependency_order(&pool);
}

#[test]
fn removed_dag_on_a_pool() {
    let pool = Pool::up(3);
    removed_dag_resumes_from_its_rescue_dag(&pool);
}

fn twenty_node_dag_completes_in_dependency_order(pool: &Pool) {
    let work = pool.work();
    std::fs::write(
        work.join("node.sub"),
        "executable = /bin/sh\narguments = \"-c 'echo $(node)'\"\noutput = out.$(node)\nqueue\n",
    )
    .unwrap();
    std::fs::write(
        work.join("flaky.sub"),
        "executable = /bin/sh\n\
         arguments = \"-c 'test $(try) -gt 0'\"\n\
         error = c2.$(Cluster).err\nqueue\n",
    )
    .unwrap();

    // A cycle through both dependence kinds is refused, naming it, when
    // the DAG's configuration asks for DAGMan's startup check.
    std::fs::write(
        work.join("strict.config"),
        "DAGMAN_STARTUP_CYCLE_DETECT = True\n",
    )
    .unwrap();
    std::fs::write(
        work.join("cycle.dag"),
        "CONFIG strict.config\nJOB x node.sub\nJOB y node.sub\nPARENT x CHILD y\nPRIORITY_PARENT y CHILD x\n",
    )
    .unwrap();
    let out = glean(pool, &["dag", "submit", "cycle.dag"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "cycle.dag:2: dependency cycle: x -> y -> x (DAGMAN_STARTUP_CYCLE_DETECT is set)"
        ),
        "{err}"
    );
    // A broken submit description is refused with its file and line.
    std::fs::write(
        work.join("broken.sub"),
        "executable = /bin/true\nbogus line\nqueue\n",
    )
    .unwrap();
    std::fs::write(work.join("broken.dag"), "JOB x broken.sub\n").unwrap();
    let out = glean(pool, &["dag", "submit", "broken.dag"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken.sub:2"), "{err}");
    let out = glean(pool, &["dag", "status", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v.as_array().map(Vec::len),
        Some(0),
        "nothing was submitted: {v}"
    );

    std::fs::write(
        work.join("big.dag"),
        // c2 fails its first try only: DAGMan's $(RETRY) is 0 then.
        format!(
            "{JOBS}{TWENTY_NODE_EDGES}RETRY c2 2\nVARS c2 try=\"$(RETRY)\"\n{}",
            vars()
        ),
    )
    .unwrap();
    let out = glean(pool, &["dag", "submit", "big.dag"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("20 nodes"), "{said}");
    let id = submitted_cluster(&out.stdout);
    let s = wait_dag(pool, id, "done", 150);
    assert_eq!(s["exit_code"], 0, "{s}");
    let nodes = assert_dependency_order(&s, 20, |_| {});
    assert_eq!(nodes["c2"]["failures"], 1);
    assert_eq!(nodes["c2"]["clusters"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        std::fs::read_to_string(work.join("out.z")).unwrap().trim(),
        "z"
    );
    // DAGMan's files beside the DAG.
    let out_log = std::fs::read_to_string(work.join("big.dag.dagman.out")).unwrap();
    assert!(
        out_log.contains("Retrying node c2 (retry #1 of 2)"),
        "{out_log}"
    );
    assert!(out_log.contains("EXITING WITH STATUS 0"), "{out_log}");
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("big.dag.metrics")).unwrap())
            .unwrap();
    assert_eq!(metrics["nodes_succeeded"], 20, "{metrics}");
    assert_eq!(metrics["exitcode"], 0);
    assert!(work.join("big.dag.nodes.log").exists());
    // In `glean q -l`: the node jobs name their DAG.
    let out = glean(pool, &["history", "--json"]);
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        h.as_array().map(Vec::len),
        Some(22),
        "20 nodes, one retry, the DAG's job: {h}"
    );
    let text = glean(pool, &["dag", "status", &id.to_string()]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("done"));
}

fn removed_dag_resumes_from_its_rescue_dag(pool: &Pool) {
    let work = pool.work();
    let shared = pool.shared();
    let log = shared.join("ran.log");
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    std::fs::write(
        work.join("step.sub"),
        format!(
            "executable = /bin/sh\n\
             arguments = \"-c 'echo $(node) >> {}; exec /bin/sleep 1'\"\nqueue\n",
            log.display()
        ),
    )
    .unwrap();
    let names = ["s1", "s2", "s3", "s4", "s5", "s6"];
    let mut dag = String::new();
    for n in names {
        dag.push_str(&format!("JOB {n} step.sub\nVARS {n} node=\"{n}\"\n"));
    }
    dag.push_str("PARENT s1 CHILD s2\nPARENT s2 CHILD s3\nPARENT s3 CHILD s4\n");
    dag.push_str("PARENT s4 CHILD s5\nPRIORITY_PARENT s5 CHILD s6\n");
    std::fs::write(work.join("chain.dag"), dag).unwrap();
    let out = glean(pool, &["dag", "submit", "chain.dag"]);
    assert!(out.status.success(), "{out:?}");
    let id = submitted_cluster(&out.stdout);

    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let s = dag_status(pool, id);
        let done = s["nodes"]
            .as_array()
            .map_or(0, |a| a.iter().filter(|n| n["status"] == "done").count());
        if done >= 2 {
            break;
        }
        assert_eq!(s["state"], "running", "{s}");
        assert!(Instant::now() < deadline, "DAG made no progress: {s}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = glean(pool, &["dag", "rm", &id.to_string()]);
    assert!(out.status.success(), "{out:?}");
    let s = dag_status(pool, id);
    assert_eq!(s["state"], "removed", "{s}");
    // DAGMan's rescue DAG: FILE.rescue001 with DONE lines.
    let rescue = work.join("chain.dag.rescue001");
    assert_eq!(
        s["rescue_file"].as_str(),
        Some(rescue.to_str().unwrap()),
        "{s}"
    );
    let text = std::fs::read_to_string(&rescue).unwrap();
    assert!(
        text.starts_with("# Rescue DAG file, created after running"),
        "{text}"
    );
    let done_before: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("DONE "))
        .map(str::to_string)
        .collect();
    assert!(done_before.len() >= 2, "{text}");

    // Submitting the DAG again runs from its newest rescue DAG.
    let out = glean(pool, &["dag", "submit", "chain.dag"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("{} already done", done_before.len())),
        "{said}"
    );
    let id2 = submitted_cluster(&out.stdout);
    let s = wait_dag(pool, id2, "done", 90);
    assert_eq!(s["nodes"].as_array().map(Vec::len), Some(6));
    let ran = std::fs::read_to_string(&log).unwrap();
    for n in names {
        let times = ran.lines().filter(|l| *l == n).count();
        if done_before.iter().any(|d| d == n) {
            assert_eq!(times, 1, "{n} ran again after the rescue: {ran}");
        } else {
            assert!(times >= 1, "{n} never ran: {ran}");
        }
    }
    // -f: the rescue DAGs are set aside, everything runs again.
    let out = glean(pool, &["dag", "submit", "-f", "chain.dag"]);
    assert!(out.status.success(), "{out:?}");
    let id3 = submitted_cluster(&out.stdout);
    wait_dag(pool, id3, "done", 90);
    assert!(work.join("chain.dag.rescue001.old").exists());
}
