//! `glean dag rm` mid-DAG writes a rescue file; `glean dag submit` of it
//! resumes the DAG without rerunning the nodes that were done (real
//! processes: `glean up --stations 2`).

mod common;
mod dag_common;

use common::shared_dir;
use dag_common::{Pool, dag_status, glean, wait_dag};
use std::time::{Duration, Instant};

#[test]
fn removed_dag_resumes_from_its_rescue_file() {
    let pool = Pool::up(2);
    let work = pool.work();
    let shared = shared_dir();
    let log = shared.path().join("ran.log");
    // Every node appends to it, each as the slot account it runs as (umask
    // 077): writable for all beforehand.
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
    let out = glean(&pool, &["dag", "submit", "chain.dag"]);
    assert!(out.status.success(), "{out:?}");

    // Remove it once two nodes are done.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let s = dag_status(&pool, 1);
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
    let out = glean(&pool, &["dag", "rm", "1"]);
    assert!(out.status.success(), "{out:?}");
    let s = dag_status(&pool, 1);
    assert_eq!(s["state"], "removed");
    let rescue = work.join("chain.dag.rescue");
    assert_eq!(
        s["rescue_file"].as_str(),
        Some(rescue.canonicalize().unwrap().to_str().unwrap())
    );
    let text = std::fs::read_to_string(&rescue).unwrap();
    let done_before: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("DONE "))
        .map(str::to_string)
        .collect();
    assert!(done_before.len() >= 2, "{text}");
    assert!(text.contains("DAG "), "{text}");

    // Resume: the done nodes are not run again.
    let out = glean(&pool, &["dag", "submit", "chain.dag.rescue"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("{} already done", done_before.len())),
        "{said}"
    );
    let s = wait_dag(&pool, 2, "done", 90);
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
    for d in &done_before {
        let node = s["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == d.as_str())
            .unwrap();
        assert_eq!(node["status"], "done");
        assert_eq!(node["clusters"].as_array().map(Vec::len), Some(0), "{node}");
    }
}
