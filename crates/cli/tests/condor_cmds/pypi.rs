//! An unmodified PyPI tool that drives HTCondor through its commands:
//! condorpy (`Job.submit` parses `N job(s) submitted to cluster C.`,
//! `Job.wait` runs `condor_wait` on the job's log, `Job.status` reads
//! `condor_q C -format "%d" JobStatus && condor_history C -format …`,
//! `Job.remove` runs `condor_rm C`) on a personal pool: four jobs run as
//! the test user and their outputs arrive; a long job is removed. The tool
//! runs as another process holding the user's token (`glean user add`), as
//! a remote user would.

use crate::common::TestOwner;
use crate::pool::{Pool, path_with};
use std::process::Command;

const SCRIPT: &str = r#"
import json, os, sys
from condorpy import Job
os.chdir(sys.argv[1])
job = Job('sq', executable='/bin/echo', arguments='job $(Process)', num_jobs=4)
job.output = 'sq.$(Process).out'
job.error = 'sq.$(Process).err'
job.log = 'sq.log'
cluster = job.submit()
job.wait()
result = {
    "cluster": cluster,
    "status": job.status,
    "outputs": [open('sq.%d.out' % i).read().strip() for i in range(4)],
}
long = Job('long', executable='/bin/sleep', arguments='300')
long.log = 'long.log'
result["long_cluster"] = long.submit()
result["before"] = long.status
out, err = long.remove()
result["removed"] = out.strip()
result["after"] = long.status
print(json.dumps(result))
"#;

#[test]
fn condorpy_runs_jobs_through_the_condor_commands() {
    if gleaner_testkit::skip_unless_root("runs jobs as a test user on a personal pool") {
        return;
    }
    let probe = Command::new("python3")
        .args(["-c", "import condorpy"])
        .output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        gleaner_testkit::oracle_missing(
            "condorpy (PyPI)",
            "python3 -m pip install -r scripts/requirements-test.txt",
            &probe.map_or_else(
                |e| e.to_string(),
                |o| String::from_utf8_lossy(&o.stderr).into_owned(),
            ),
        );
        return;
    }
    let pool = Pool::start(2);
    let alice = TestOwner::new("ccpy").unwrap();
    let work = pool.root.join("condorpy");
    alice.dir(&work).unwrap();
    let client = pool.client_dir(&alice);
    let out = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(&work)
        .env("GLEAN_HOME", &client)
        .env("PATH", path_with(&pool.bin))
        .env_remove("GLEAN_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "condorpy failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["cluster"], 1, "{r}");
    assert_eq!(r["status"], "Completed", "{r}");
    assert_eq!(
        r["outputs"],
        serde_json::json!(["job 0", "job 1", "job 2", "job 3"]),
        "{r}"
    );
    assert_eq!(r["long_cluster"], 2, "{r}");
    assert!(r["before"] == "Idle" || r["before"] == "Running", "{r}");
    assert_eq!(
        r["removed"], "All jobs in cluster 2 have been marked for removal",
        "{r}"
    );
    assert_eq!(r["after"], "Removed", "{r}");
    // The jobs ran as the user, not as the tool's process.
    let owners = crate::pool::ok(pool.condor(&alice, &work, "condor_history", &["-af", "Owner"]));
    assert!(owners.lines().all(|o| o == alice.name()), "{owners}");
}
