//! The home killed under a DAG: a pool of real processes (coordinator,
//! submit-only home, two execute stations; `fault_pool`) runs a 12-node
//! DAG whose every node has a PRE and a POST script (each a second or two
//! long) and a job that records its run outside its sandbox; one node
//! fails once and is retried. A seeded driver SIGKILLs the home whenever a
//! script is running, keeps it down a moment and starts it again, several
//! times. DAGMan's rule applies: a node whose script was running is taken
//! up again from that script; a submitted job is followed, never
//! submitted again.
//!
//! At the end the DAG has succeeded as an undisturbed run would (every
//! node done, the flaky node after one retry, every POST script's last run
//! saw its job's exit code 0) and no node's job ran more often than its
//! retries call for. The figures go to stdout: kills, nodes, scripts
//! started again, node jobs run twice (0). `DAG_CHAOS_SEED` picks the
//! driver's moments (default 28).

use crate::fault_pool::Pool;
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::home::dagman::{DagOptions, DagSubmitBody};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

const KILLS: usize = 5;
const NODES: [&str; 12] = [
    "a", "b1", "b2", "b3", "c1", "c2", "c3", "flaky", "d1", "d2", "e", "z",
];

fn dag_text() -> String {
    let mut d = String::new();
    for n in NODES {
        let sub = if n == "flaky" {
            "flaky.sub"
        } else {
            "node.sub"
        };
        d.push_str(&format!(
            "JOB {n} {sub}\nVARS {n} node=\"$(JOB)\"\n\
             SCRIPT PRE {n} script.sh pre $JOB $RETRY\n\
             SCRIPT POST {n} script.sh post $JOB $RETURN\n"
        ));
    }
    d.push_str(
        "RETRY flaky 2\n\
         PARENT a CHILD b1 b2 b3\nPARENT b1 CHILD c1 flaky\nPARENT b2 CHILD c2\n\
         PARENT b3 CHILD c3\nPARENT c1 c2 CHILD d1\nPARENT c3 flaky CHILD d2\n\
         PARENT d1 d2 CHILD e\nPARENT e CHILD z\n",
    );
    d
}

/// A script: a start and an end line in scripts.log, a second or so
/// between; a POST script exits with the job's exit code.
const SCRIPT: &str = "#!/bin/sh
echo \"$1 $2 start $3\" >> scripts.log
sleep 1.2
echo \"$1 $2 end $3\" >> scripts.log
if [ \"$1\" = post ]; then exit $3; fi
exit 0
";

fn write_exec(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Scripts started and not ended yet (per scripts.log).
fn scripts_running(log: &str) -> usize {
    let starts = log.lines().filter(|l| l.contains(" start ")).count();
    let ends = log.lines().filter(|l| l.contains(" end ")).count();
    starts.saturating_sub(ends)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn home_killed_under_running_scripts_runs_each_node_once() {
    if gleaner_testkit::skip_unless_root("dag chaos: creates Unix users and slot accounts") {
        return;
    }
    let seed: u64 = std::env::var("DAG_CHAOS_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(28);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut pool = Pool::start_hosts("", false, &["x1", "x2"]).await;
    let work = pool.work.clone();
    // Node jobs run as slot accounts: their record is open to all.
    let runs = work.join("runs.log");
    std::fs::write(&runs, "").unwrap();
    std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o666)).unwrap();
    let marks = work.join("marks");
    std::fs::create_dir(&marks).unwrap();
    std::fs::set_permissions(&marks, std::fs::Permissions::from_mode(0o777)).unwrap();
    // The mark is the test's file, written by the guest: what a guest's
    // slot account creates in a world-writable directory is scrubbed when
    // its slot is released, before the retry could see it.
    std::fs::write(marks.join("flaky"), "").unwrap();
    std::fs::set_permissions(marks.join("flaky"), std::fs::Permissions::from_mode(0o666)).unwrap();
    write_exec(&work.join("script.sh"), SCRIPT);
    for (f, body) in [
        (
            "node.sub",
            format!("echo $(node) >> {}; sleep 1", runs.display()),
        ),
        (
            "flaky.sub",
            format!(
                "echo $(node) >> {r}; sleep 1; if [ -s {m}/flaky ]; then exit 0; fi; echo x > {m}/flaky; exit 1",
                r = runs.display(),
                m = marks.display()
            ),
        ),
    ] {
        pool.owner
            .write(
                &work.join(f),
                format!(
                    "executable = /bin/sh\narguments = \"-c '{body}'\"\nlog = chaos.log\nqueue\n"
                ),
            )
            .unwrap();
    }
    pool.owner
        .write(&work.join("chaos.dag"), dag_text())
        .unwrap();
    pool.owner.give(&work.join("script.sh")).unwrap();
    let body = DagSubmitBody {
        protocol: PROTOCOL_VERSION,
        files: vec!["chaos.dag".into()],
        cwd: work.display().to_string(),
        options: DagOptions::default(),
        env: [("PATH".to_string(), "/usr/bin:/bin".to_string())].into(),
    };
    let resp = pool.client.submit_dag(&body).await.unwrap();
    let id = resp.id;

    let script_log = work.join("scripts.log");
    let mut kills = 0;
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(400);
    let status = loop {
        assert!(Instant::now() < deadline, "DAG not done\n{}", pool.logs());
        if let Ok(s) = pool.client.dag(id).await
            && s.state != gleaner_station::home::dagman::DagState::Running
        {
            break s;
        }
        let log = std::fs::read_to_string(&script_log).unwrap_or_default();
        if kills < KILLS && scripts_running(&log) > 0 {
            // Somewhere inside the script's second.
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..800))).await;
            pool.home.kill9();
            kills += 1;
            tokio::time::sleep(Duration::from_millis(rng.random_range(200..2500))).await;
            pool.home.restart();
            // Let the home take the DAG up again before the next kill.
            let up = Instant::now() + Duration::from_secs(30);
            while pool.client.dag(id).await.is_err() {
                assert!(
                    Instant::now() < up,
                    "home did not come back\n{}",
                    pool.logs()
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            tokio::time::sleep(Duration::from_millis(rng.random_range(500..3000))).await;
            continue;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let log = std::fs::read_to_string(&script_log).unwrap_or_default();
    assert_eq!(
        status.state,
        gleaner_station::home::dagman::DagState::Done,
        "{status:?}\n{log}\n{}",
        pool.logs()
    );
    // Each node's job ran once, the flaky node's twice (one retry).
    let mut job_runs: BTreeMap<String, usize> = BTreeMap::new();
    for l in std::fs::read_to_string(&runs).unwrap().lines() {
        *job_runs.entry(l.trim().to_string()).or_default() += 1;
    }
    let mut twice = Vec::new();
    for n in NODES {
        let want = if n == "flaky" { 2 } else { 1 };
        let got = job_runs.get(n).copied().unwrap_or(0);
        assert!(got >= want, "node {n}'s job ran {got} times\n{log}");
        if got > want {
            twice.push(n);
        }
    }
    // The DAG's ending is an undisturbed run's.
    for n in &status.nodes {
        assert_eq!(n.status, "done", "{n:?}");
        let want = u32::from(n.name == "flaky");
        assert_eq!(n.retries, want, "{n:?}");
        let last_post = log
            .lines()
            .rfind(|l| l.starts_with(&format!("post {} end", n.name)));
        assert_eq!(
            last_post,
            Some(format!("post {} end 0", n.name)).as_deref(),
            "{log}"
        );
    }
    let script_starts = log.lines().filter(|l| l.contains(" start ")).count();
    // Every node's PRE and POST, the flaky node's twice.
    let reruns = script_starts.saturating_sub(2 * NODES.len() + 2);
    println!(
        "DAG chaos (seed {seed}): {kills} SIGKILLs of the home with scripts running, {} nodes, \
         {reruns} script runs started again, node jobs run twice: {} ({} s)",
        NODES.len(),
        twice.len(),
        t0.elapsed().as_secs()
    );
    assert!(kills >= 3, "only {kills} kills landed on a running script");
    assert!(
        twice.is_empty(),
        "node jobs run more than once: {twice:?}\n{log}"
    );
}
