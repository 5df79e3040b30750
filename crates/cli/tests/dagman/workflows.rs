//! HTCondor's DAGMan test workflows (`job_dagman_*.run` and their files,
//! from `tests/data/dagman/`) run unchanged on one personal pool, each
//! judged by its own driver: the `.run` script runs under Perl with a
//! small stand-in for HTCondor's test library (`tests/dagman/shim/`), so
//! it submits its DAG with `glean dag submit` (condor_submit_dag's
//! options), follows the DAG job in its `FILE.dagman.log`, and checks
//! exactly what it checks under HTCondor: exit status, node outputs,
//! script arguments, the node status file, the rescue DAG, dagman.out.
//!
//! [`RUN`] lists the workflows expected to pass; [`NOT_RUN`] those left
//! out on purpose, with why. The test prints the tally and fails on any
//! listed workflow whose driver does not pass. With `GLEANER_DAGMAN_ALL=1`
//! it runs every `.run` of the corpus (127) and prints how many pass: on
//! 2026-12-08, on one 3-station pool, 55 of the 122 started within the 30
//! minutes; the others failed their drivers' checks or never ended, and
//! once stuck workflows' jobs held the pool some that pass alone (such as
//! `job_dagman_basic`) timed out too. Only those in [`RUN`] fail the test.

use crate::common::{TestOwner, glean_bin};
use crate::pool::Pool;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Workflows whose drivers pass on Gleaner.
const RUN: &[&str] = &[
    "job_dagman_abort-B",
    "job_dagman_always_run_post-A",
    "job_dagman_always_run_post-B",
    "job_dagman_always_run_post-C",
    "job_dagman_always_run_post-D",
    "job_dagman_basic",
    "job_dagman_depth_first",
    "job_dagman_event_log",
    "job_dagman_final-A",
    "job_dagman_final-B",
    "job_dagman_final-C",
    "job_dagman_final-D",
    "job_dagman_final-F",
    "job_dagman_final-G",
    "job_dagman_final-H",
    "job_dagman_global_event_log-B",
    "job_dagman_gt1957",
    "job_dagman_lazy_submit_file",
    "job_dagman_local",
    "job_dagman_log_path",
    "job_dagman_loglink",
    "job_dagman_multi_dag",
    "job_dagman_node_dir",
    "job_dagman_node_prio",
    "job_dagman_node_status",
    "job_dagman_nonexistent_subdag",
    "job_dagman_parallel-A",
    "job_dagman_pre_skip-A",
    "job_dagman_pre_skip-B",
    "job_dagman_pre_subdag-A",
    "job_dagman_reject",
    "job_dagman_rescue-A",
    "job_dagman_retry-B",
    "job_dagman_script_args",
    "job_dagman_splice-A",
    "job_dagman_splice-B",
    "job_dagman_splice-C",
    "job_dagman_splice-D",
    "job_dagman_splice-E",
    "job_dagman_splice-F",
    "job_dagman_splice-G",
    "job_dagman_splice-H",
    "job_dagman_splice-I",
    "job_dagman_splice-J",
    "job_dagman_splice-K",
    "job_dagman_splice-L",
    "job_dagman_splice-M",
    "job_dagman_splice-N",
    "job_dagman_splice-O",
    "job_dagman_splice-P",
    "job_dagman_splice-Q",
    "job_dagman_splice_connect-G",
    "job_dagman_subdag_in_splice-A",
    "job_dagman_subdag_multi_prohibit-A",
    "job_dagman_submit_fails_post",
    "job_dagman_submit_glob-B",
];

/// Workflows not run, and why.
const NOT_RUN: &[(&str, &str)] = &[];

/// Drivers running at once.
const PARALLEL: usize = 12;

fn corpus() -> PathBuf {
    crate::census::corpus()
}

fn shim() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dagman/shim")
}

/// Copies `from` into `to` (a directory tree), as `owner`'s.
fn copy_tree(from: &Path, to: &Path, owner: &TestOwner) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            copy_tree(&e.path(), &to.join(e.file_name()), owner);
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
    owner.give(to).unwrap();
}

/// A directory for workflow `test`, owned by the DAGs' owner, with the
/// files it needs: its own (named after it), HTCondor's helper scripts
/// (`x_*`, `job_dagman_monitor.pl` …: every file not named after a test)
/// and the test library stand-in.
fn stage(pool: &Pool, test: &str) -> PathBuf {
    let dir = pool.work().join(test);
    pool.owner.dir(&dir).unwrap();
    for e in std::fs::read_dir(corpus()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // Named after the test (`job_dagman_local2.cmd` is
        // job_dagman_local's): a few files of a test with a longer name
        // come along, which is harmless.
        let own = name.starts_with(test);
        let helper = (!name.starts_with("job_") && !name.starts_with("test_"))
            || name == "job_dagman_monitor.pl";
        if own || helper {
            copy_tree(&e.path(), &dir.join(&name), &pool.owner);
        }
    }
    for e in std::fs::read_dir(shim()).unwrap().flatten() {
        copy_tree(&e.path(), &dir.join(e.file_name()), &pool.owner);
    }
    dir
}

/// Every workflow of the corpus: its `.run` drivers, by name.
fn all_workflows() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_suffix(".run").map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

struct Driver {
    test: String,
    child: Child,
    dir: PathBuf,
    started: Instant,
}

fn start(pool: &Pool, test: &str) -> Driver {
    let dir = stage(pool, test);
    let run = format!("{test}.run");
    std::fs::set_permissions(dir.join(&run), std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = std::fs::File::create(dir.join("driver.log")).unwrap();
    let child = pool
        .owner
        .command("perl")
        .args(["-I", ".", &run])
        .env("GLEAN_HOME", pool.home())
        .env("GLEAN", glean_bin())
        // HTCondor's test harness puts its Perl library on PERL5LIB, which
        // the drivers and their DAGs' scripts (`use CondorUtils`) rely on.
        .env("PERL5LIB", &dir)
        .env("GLEAN_SHIM_VERBOSE", "1")
        .env("GLEAN_SHIM_TIMEOUT", "600")
        .env_remove("GLEAN_LOG")
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    Driver {
        test: test.to_string(),
        child,
        dir,
        started: Instant::now(),
    }
}

#[test]
fn htcondors_dagman_test_workflows() {
    for (t, _) in NOT_RUN {
        assert!(!RUN.contains(t), "{t} is both run and not run");
    }
    // GLEANER_DAGMAN_ALL=1: every workflow of the corpus, for the tally;
    // only those in RUN fail the test.
    let every = std::env::var_os("GLEANER_DAGMAN_ALL").is_some();
    let names = if every { all_workflows() } else { Vec::new() };
    let pool = Pool::up(3);
    let mut queue: Vec<&str> = if every {
        names.iter().map(String::as_str).collect()
    } else {
        RUN.to_vec()
    };
    queue.reverse();
    let mut running: Vec<Driver> = Vec::new();
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(1800);
    while !(queue.is_empty() && running.is_empty()) {
        while running.len() < PARALLEL
            && let Some(t) = queue.pop()
        {
            running.push(start(&pool, t));
        }
        let mut i = 0;
        while i < running.len() {
            match running[i].child.try_wait() {
                Ok(Some(status)) => {
                    let d = running.remove(i);
                    let secs = d.started.elapsed().as_secs();
                    if status.success() {
                        println!("PASS {} ({secs} s)", d.test);
                        passed.push(d.test);
                    } else {
                        let log =
                            std::fs::read_to_string(d.dir.join("driver.log")).unwrap_or_default();
                        let tail: Vec<&str> = log.lines().rev().take(25).collect();
                        let tail: Vec<&str> = tail.into_iter().rev().collect();
                        println!(
                            "FAIL {} ({status}, {secs} s):\n    {}",
                            d.test,
                            tail.join("\n    ")
                        );
                        failed.push(d.test);
                    }
                }
                _ => i += 1,
            }
        }
        if Instant::now() > deadline {
            for d in &mut running {
                let _ = d.child.kill();
                let _ = d.child.wait();
                println!("TIMEOUT {}", d.test);
                failed.push(d.test.clone());
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    if every {
        println!(
            "every workflow: {} of {} passed; failed: {}",
            passed.len(),
            passed.len() + failed.len(),
            failed.join(" ")
        );
        failed.retain(|t| RUN.contains(&t.as_str()));
        passed.retain(|t| RUN.contains(&t.as_str()));
    }
    println!(
        "HTCondor DAGMan workflows run with the outcome their drivers expect: {} / {} \
         ({} more not run: {})",
        passed.len(),
        RUN.len(),
        NOT_RUN.len(),
        NOT_RUN
            .iter()
            .map(|(t, _)| *t)
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(failed.is_empty(), "drivers failed: {failed:?}");
}
