//! `glean q --analyze` against a personal pool of real processes: an
//! unmatchable job is explained station by station, naming the clause.

mod common;

use common::{
    TestOwner, UpProcess, free_base_port, glean_as, glean_in as glean, spawn_up, wait_pool_up,
};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn analyze_explains_an_unmatchable_job_station_by_station() {
    // `glean up` stations use the default slot accounts (see
    // personal_pool.rs); dropped after the pool.
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    let owner = TestOwner::new("analyze").unwrap();
    owner.dir(&work).unwrap();
    let port = free_base_port(5);
    let _pool = UpProcess(spawn_up(&home, 2, port, Stdio::null()));
    wait_pool_up(&home);
    std::fs::write(
        work.join("job.sub"),
        "executable = /bin/true\n\
         requirements = Memory > 100000000 && OpSys == \"LINUX\"\n\
         request_disk = 1\n\
         queue\n",
    )
    .unwrap();
    // The owner submits on the user socket; the analysis (which needs the
    // coordinator's token) is asked by the pool's owner.
    let out = glean_as(&owner, &home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "{out:?}");

    // Wait until the coordinator has the execute stations' ads.
    let deadline = Instant::now() + Duration::from_secs(60);
    let v = loop {
        let out = glean(&home, &work, &["q", "--analyze", "1.0", "--json"]);
        if out.status.success() {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let n = v["stations"].as_array().map_or(0, |a| a.len());
            if n >= 2 {
                break v;
            }
        }
        assert!(Instant::now() < deadline, "no analysis: {out:?}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(v["state"], "idle", "{v}");
    for s in v["stations"].as_array().unwrap() {
        let rejects = s["rejects"].as_array().unwrap();
        let req = rejects
            .iter()
            .find(|r| r["reason"] == "requirements")
            .unwrap_or_else(|| panic!("{s}"));
        // Only the failing clause is named, not the OpSys one.
        let clauses = req["clauses"].as_array().unwrap();
        assert_eq!(clauses.len(), 1, "{s}");
        assert!(clauses[0]["expr"].as_str().unwrap().contains("Memory"));
    }
    // The table form names the clause too.
    let out = glean(&home, &work, &["q", "--analyze", "1.0"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Memory > 100000000"), "{text}");
    assert!(text.contains("0 of"), "{text}");
    // The machine ads, as ClassAds.
    let out = glean(&home, &work, &["status", "--long"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for attr in [
        "Arch = ",
        "OpSys = ",
        "Cpus = ",
        "Memory = ",
        "Disk = ",
        "Mips = ",
    ] {
        assert!(text.contains(attr), "{attr} missing in {text}");
    }
    // An unknown job is an error, not an empty analysis.
    let out = glean(&home, &work, &["q", "--analyze", "99.0"]);
    assert!(!out.status.success());
}
