//! `glean q|history -constraint EXPR`, `-af ATTR…` and `-l` against
//! HTCondor's own ClassAd library: the ads `glean q -l` prints are parsed
//! by `classad2` (PyPI `htcondor`), which evaluates the same constraints
//! and autoformat expressions over them; glean must select the same jobs
//! and print the same values. Skipped (with a message) when python3
//! cannot import `classad2`, unless `GLEANER_REQUIRE_ORACLE=1`.

mod common;

use assert_cmd::Command;
use common::{TestKeys, TestOwner};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::node::spawn_for_test;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

fn glean(home: &Path) -> Command {
    let mut c = Command::cargo_bin("glean").unwrap();
    c.env("GLEAN_HOME", home).env_remove("GLEAN_LOG");
    c
}

fn ok(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        c,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// HTCondor's answer for `ads` (the text of `-l`); `None` when the oracle
/// is missing.
fn oracle(ads: &str, constraints: &[&str], af: &[&str]) -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/condor_oracle.py");
    let missing = |why: String| {
        gleaner_testkit::oracle_missing(
            "HTCondor's classad2 module",
            "python3 -m pip install htcondor",
            &why,
        );
        None
    };
    let child = std::process::Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return missing(format!("cannot run python3: {e}")),
    };
    let req = json!({ "ads": ads, "constraints": constraints, "af": af });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.code() == Some(3) {
        return missing(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    assert!(
        out.status.success(),
        "oracle failed: {}\n--- ads ---\n{ads}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The (cluster, proc) pairs of `-af ClusterId ProcId` output.
fn ids(af: &str) -> BTreeSet<(u64, u64)> {
    af.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split_whitespace().map(|w| w.parse::<u64>().unwrap());
            (it.next().unwrap(), it.next().unwrap())
        })
        .collect()
}

fn pairs(v: &Value) -> BTreeSet<(u64, u64)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect()
}

/// Checks `-l`, `-constraint` and `-af` of one listing (`q` or
/// `history`) against the oracle. Returns false when it was skipped.
fn check(home: &Path, cmd: &str, constraints: &[&str], af: &[&str]) -> bool {
    let long = ok(glean(home).args([cmd, "-l"]));
    let Some(truth) = oracle(&long, constraints, af) else {
        return false;
    };
    // -l: one ad per listed job, with the listing's id, owner, status, date.
    let listed: Value = serde_json::from_str(&ok(glean(home).args([cmd, "--json"]))).unwrap();
    let listed = listed.as_array().unwrap();
    let ads = truth["ads"].as_array().unwrap();
    assert_eq!(ads.len(), listed.len(), "{long}");
    assert!(!ads.is_empty(), "nothing to check for {cmd}");
    let by_id: BTreeMap<String, &Value> = listed
        .iter()
        .map(|j| (j["id"].as_str().unwrap().to_string(), j))
        .collect();
    for ad in ads {
        let id = format!("{}.{}", ad["ClusterId"], ad["ProcId"]);
        let j = by_id.get(&id).unwrap_or_else(|| panic!("{id} not listed"));
        assert_eq!(ad["Owner"], j["owner"], "{id}");
        assert_eq!(
            ad["QDate"].as_u64().unwrap(),
            j["submitted_at"].as_u64().unwrap() / 1_000_000,
            "{id}"
        );
        let code = match j["state"]["state"].as_str().unwrap() {
            "idle" => 1,
            "running" => 2,
            "removed" => 3,
            "completed" => 4,
            "held" => 5,
            "suspended" => 7,
            other => panic!("state {other}"),
        };
        assert_eq!(ad["JobStatus"], code, "{id}");
    }
    // -constraint: the same jobs as HTCondor selects (single-dash
    // spellings, as users type them).
    for c in constraints {
        let got = ids(&ok(glean(home).args([
            cmd,
            "-constraint",
            c,
            "-af",
            "ClusterId",
            "ProcId",
        ])));
        assert_eq!(
            got,
            pairs(&truth["constraint"][*c]),
            "{cmd} -constraint {c}"
        );
    }
    // Two constraints: both must hold, as HTCondor's (A) && (B).
    let (a, b) = ("RequestMemory > 100", "isUndefined(RemoteHost)");
    let both = format!("({a}) && ({b})");
    let Some(t2) = oracle(&long, &[both.as_str()], &[]) else {
        return false;
    };
    let got = ids(&ok(glean(home).args([
        cmd,
        "-constraint",
        a,
        "-constraint",
        b,
        "-af",
        "ClusterId",
        "ProcId",
    ])));
    assert_eq!(got, pairs(&t2["constraint"][&both]), "{cmd}: {both}");
    // -af: the same values, job by job (JSON keeps the types).
    let mut args = vec![cmd, "--json", "-af"];
    args.extend_from_slice(af);
    let rows: Value = serde_json::from_str(&ok(glean(home).args(&args))).unwrap();
    let rows = rows.as_array().unwrap();
    let want = truth["af"].as_array().unwrap();
    assert_eq!(rows.len(), want.len());
    for (row, want) in rows.iter().zip(want) {
        for (i, a) in af.iter().enumerate() {
            let (g, w) = (&row[*a], &want[i]);
            let same = match (g.as_f64(), w.as_f64()) {
                (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * y.abs().max(1.0),
                _ => g == w,
            };
            assert!(same, "{cmd} -af {a}: glean {g}, HTCondor {w} (row {row})");
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread")]
async fn constraint_af_and_long_agree_with_htcondor_classad() {
    let dir = tempfile::tempdir().unwrap();
    let keys = TestKeys::in_dir(&dir.path().join("keys")).unwrap();
    let cfg = StationConfig {
        name: "home".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        state_dir: dir.path().join("state"),
        public_key: keys.public_key(),
        token_file: keys
            .station_token_file("home", &dir.path().join("home.token"))
            .unwrap(),
        // No hosts: the jobs stay in the queue, in the states set below.
        role: StationRole::SubmitOnly,
        ..Default::default()
    };
    let (addr, running) = spawn_for_test(cfg).await.unwrap();
    let alice = TestOwner::new("alice").unwrap();
    let home = dir.path().join("glean");
    let work = dir.path().join("work");
    alice.dir(&work).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("pool.toml"),
        format!("station = \"http://{addr}\"\n"),
    )
    .unwrap();
    std::fs::write(home.join("token"), keys.user(alice.name())).unwrap();
    let a = work.join("a.sub");
    std::fs::write(
        &a,
        "executable = /bin/sleep\narguments = 60\nrequest_memory = 512\npriority = 5\n\
         +Project = \"blue\"\nqueue 2\n",
    )
    .unwrap();
    let b = work.join("b.sub");
    std::fs::write(
        &b,
        "executable = /bin/echo\narguments = hello world\nrequest_memory = 64\n\
         +Project = \"red\"\n+Weight = 2.5\nqueue 3\n",
    )
    .unwrap();
    let owner = alice.name().to_string();
    let home2 = home.clone();
    tokio::task::spawn_blocking(move || {
        let home = home2.as_path();
        ok(glean(home).arg("submit").arg(&a));
        ok(glean(home).arg("submit").arg(&b));
        ok(glean(home).args(["hold", "2.1", "--reason", "disk quota exceeded"]));
        ok(glean(home).args(["rm", "2.2"]));
        ok(glean(home).args(["rm", "1.1"]));

        // A broken expression is named, and nothing is printed.
        let bad = glean(home)
            .args(["q", "-constraint", "JobStatus =="])
            .output()
            .unwrap();
        assert_eq!(bad.status.code(), Some(2));
        assert!(bad.stdout.is_empty());
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(
            err.contains("invalid -constraint expression \"JobStatus ==\""),
            "{err}"
        );

        // The table form of -af, as HTCondor prints it.
        let out = ok(glean(home).args(["q", "-af", "ClusterId", "ProcId", "Owner", "Cmd"]));
        assert!(out.contains(&format!("1 0 {owner} /bin/sleep")), "{out}");

        let owner_is = format!("Owner == \"{}\"", owner.to_uppercase());
        let constraints = [
            "JobStatus == 1",
            "JobStatus == 5 && HoldReason =!= undefined",
            "regexp(\"quota\", HoldReason)",
            owner_is.as_str(),
            "RequestMemory > 100",
            "JobPrio >= 5 || Project == \"red\"",
            "ClusterId == 2 && ProcId > 0",
            "isUndefined(RemoteHost)",
            "Weight * 2 > 4",
            "QDate > 0 && QDate <= time()",
            "Args == \"hello world\"",
            "NumJobStarts",
            "Project",
            "JobStatus == 3",
        ];
        let af = [
            "ClusterId",
            "ProcId",
            "Owner",
            "JobStatus",
            "QDate",
            "EnteredCurrentStatus",
            "RequestMemory",
            "RequestCpus",
            "JobPrio",
            "Project",
            "Weight",
            "HoldReason",
            "RemoteHost",
            "Cmd",
            "Args",
            "Requirements",
            "RequestMemory * 2",
            "strcat(Owner, \"-\", ClusterId)",
            "JobStatus == 5 ? HoldReason : \"none\"",
            "NumJobStarts",
        ];
        if check(home, "q", &constraints, &af) {
            check(home, "history", &constraints, &af);
        }
    })
    .await
    .unwrap();
    running.stop().await;
}
