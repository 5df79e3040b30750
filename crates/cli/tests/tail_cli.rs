//! `glean tail` (condor_tail) and `glean watch` (condor_watch_q) on a
//! real personal pool: `tail -f` prints a running job's output as it
//! arrives and stops when the job is done; without `-f`, the last
//! `--maxbytes` of what the home has. `watch --exit-when-done` follows
//! two clusters as they run and returns when both are done.

mod common;

use common::{TestOwner, free_base_port, glean_as, glean_bin, up, wait_pool_up};
use std::process::Stdio;
use std::time::Instant;

#[test]
fn tail_and_watch_follow_running_jobs_to_their_end() {
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let owner = TestOwner::new("tailer").unwrap();
    owner.dir(&work).unwrap();
    let _pool = up(&home, 1, free_base_port(3), None);
    wait_pool_up(&home);
    std::fs::write(
        work.join("job.sh"),
        "#!/bin/sh\nfor i in 1 2 3 4 5 6; do echo \"line $i\"; sleep 0.5; done\n",
    )
    .unwrap();
    std::os::unix::fs::chown(work.join("job.sh"), Some(owner.uid()), Some(owner.gid())).unwrap();
    std::fs::write(work.join("job.sub"), "executable = job.sh\nqueue\n").unwrap();
    let out = glean_as(&owner, &home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "{out:?}");
    std::fs::write(work.join("three.sub"), "executable = /bin/true\nqueue 3\n").unwrap();
    let out = glean_as(&owner, &home, &work, &["submit", "three.sub"]);
    assert!(out.status.success(), "{out:?}");
    let watch = owner
        .command(glean_bin())
        .args(["watch", "--json", "--exit-when-done", "--interval", "0.2"])
        .env("GLEAN_HOME", &home)
        .current_dir(&work)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Follow from the start (the job has written nothing or little yet).
    let started = Instant::now();
    let f = glean_as(
        &owner,
        &home,
        &work,
        &["tail", "-f", "--interval", "0.2", "1.0"],
    );
    let text = String::from_utf8_lossy(&f.stdout);
    eprintln!(
        "glean tail -f returned after {:.1} s:\n{text}{}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&f.stderr)
    );
    assert!(f.status.success(), "{f:?}");
    let want: String = (1..=6).map(|i| format!("line {i}\n")).collect();
    assert_eq!(text, want, "every line once, in order");
    assert!(
        String::from_utf8_lossy(&f.stderr).contains("is completed"),
        "{f:?}"
    );

    // watch: both clusters followed from the start, both done at the end.
    let w = watch.wait_with_output().unwrap();
    assert!(w.status.success(), "{w:?}");
    let updates: Vec<serde_json::Value> = String::from_utf8_lossy(&w.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    eprintln!("glean watch printed {} updates", updates.len());
    assert!(updates.len() >= 2, "{updates:?}");
    let last = updates.last().unwrap().as_array().unwrap().clone();
    let done: Vec<(u64, u64, u64)> = last
        .iter()
        .map(|c| {
            (
                c["cluster"].as_u64().unwrap(),
                c["total"].as_u64().unwrap(),
                c["completed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(done, [(1, 1, 1), (2, 3, 3)]);

    // The last bytes only.
    let t = glean_as(&owner, &home, &work, &["tail", "--maxbytes", "7", "1.0"]);
    assert!(t.status.success(), "{t:?}");
    assert_eq!(String::from_utf8_lossy(&t.stdout), "line 6\n");
    let e = glean_as(&owner, &home, &work, &["tail", "--stderr", "1.0"]);
    assert!(e.status.success() && e.stdout.is_empty(), "{e:?}");

    // Not a job id; no such job.
    let bad = glean_as(&owner, &home, &work, &["tail", "x"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a job id"));
    let none = glean_as(&owner, &home, &work, &["tail", "9.9"]);
    assert!(!none.status.success(), "{none:?}");
}
