//! Issue 15's fast path with real processes (`glean up`, the personal pool
//! a user starts, with its own defaults):
//!
//! - a job that ends frees its node for the next job at once: the host
//!   advertises when its guest's slot is free, that ad is a capacity event,
//!   and the grant reaches the home on its events stream, without waiting
//!   for a periodic advertisement or scheduling interval;
//! - 20 trivial jobs on 2 stations with `glean up`'s defaults (interval
//!   10 s, advertise 5 s) all finish in well under one scheduling interval
//!   per job.
//!
//! Both measure wall-clock times from the home's own job timestamps and
//! print them; the bounds are generous for a loaded 2-core machine.

mod common;

use common::{TestOwner, free_base_port, glean_as, up, wait_pool_up};
use std::path::Path;
use std::time::{Duration, Instant};

/// Times of one finished job, seconds since the UNIX epoch.
#[derive(Debug)]
struct Done {
    submitted: f64,
    started: f64,
    finished: f64,
}

/// Waits until `n` jobs are in the history; their times in job order.
fn wait_done(owner: &TestOwner, home: &Path, work: &Path, n: usize, limit: Duration) -> Vec<Done> {
    let deadline = Instant::now() + limit;
    loop {
        let out = glean_as(owner, home, work, &["history", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let jobs = v.as_array().cloned().unwrap_or_default();
        if jobs.len() >= n {
            let secs = |j: &serde_json::Value, k: &str| j[k].as_f64().unwrap_or(f64::NAN) / 1e6;
            let mut done: Vec<(String, Done)> = jobs
                .iter()
                .map(|j| {
                    (
                        j["id"].as_str().unwrap_or_default().to_string(),
                        Done {
                            submitted: secs(j, "submitted_at"),
                            started: secs(j, "started_at"),
                            finished: secs(j, "finished_at"),
                        },
                    )
                })
                .collect();
            done.sort_by_key(|(id, _)| {
                id.split('.')
                    .map(|p| p.parse::<u64>().unwrap_or(0))
                    .collect::<Vec<_>>()
            });
            return done.into_iter().map(|(_, d)| d).collect();
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {n} jobs finished: {v}",
            jobs.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One station, one CPU, two jobs of 3 s; the pool's periods are long
/// (interval 60 s, so ads every 30 s): the second job starts within a few
/// seconds of the first one's end only if the freed node is granted and
/// delivered on the event itself.
#[test]
fn a_job_ending_frees_its_node_for_the_next_grant_without_waiting_for_an_ad() {
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let owner = TestOwner::new("fastend").unwrap();
    owner.dir(&work).unwrap();
    let _pool = up(&home, 1, free_base_port(4), Some(60.0));
    wait_pool_up(&home);
    std::fs::write(
        work.join("job.sub"),
        "executable = /bin/sleep\narguments = 3\nqueue 2\n",
    )
    .unwrap();
    let out = glean_as(&owner, &home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "{out:?}");
    let done = wait_done(&owner, &home, &work, 2, Duration::from_secs(120));
    let gap = done[1].started - done[0].finished;
    let first = done[0].started - done[0].submitted;
    eprintln!(
        "first job: submit→running {first:.3} s; second job started {gap:.3} s after the first ended"
    );
    assert!(
        first < 10.0,
        "a submitted job waited {first:.1} s for a free node: {done:?}"
    );
    assert!(
        gap < 10.0,
        "the freed node waited {gap:.1} s for its next job (periods: ads 30 s, interval 60 s): {done:?}"
    );
}

/// 20 `/bin/true` jobs on `glean up --stations 2` with no flags but the
/// port: every job done within 20 × 10 s / 4, a quarter of a scheduling
/// interval per job (the old one-grant-per-interval pool took about one
/// interval per job).
#[test]
fn twenty_trivial_jobs_on_two_stations_finish_well_under_an_interval_each() {
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let owner = TestOwner::new("fast20").unwrap();
    owner.dir(&work).unwrap();
    let _pool = up(&home, 2, free_base_port(5), None);
    wait_pool_up(&home);
    std::fs::write(work.join("job.sub"), "executable = /bin/true\nqueue 20\n").unwrap();
    let out = glean_as(&owner, &home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "{out:?}");
    let done = wait_done(&owner, &home, &work, 20, Duration::from_secs(200));
    let first = done
        .iter()
        .map(|d| d.submitted)
        .fold(f64::INFINITY, f64::min);
    let last = done.iter().map(|d| d.finished).fold(0.0, f64::max);
    let span = last - first;
    let mut waits: Vec<f64> = done.iter().map(|d| d.started - d.submitted).collect();
    waits.sort_by(f64::total_cmp);
    eprintln!(
        "20 jobs on 2 stations: {span:.2} s ({:.2} jobs/s); submit→running p50 {:.2} s, max {:.2} s",
        20.0 / span,
        waits[waits.len() / 2],
        waits[waits.len() - 1]
    );
    assert!(
        span < 50.0,
        "20 jobs took {span:.1} s, not well under 10 s per job: {done:?}"
    );
}
