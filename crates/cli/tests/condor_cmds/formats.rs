//! Every `condor_*` command against a personal pool, its output compared
//! with HTCondor's documented formats (`docs/man-pages/*.rst` and the
//! print formats in HTCondor's sources): the lines scripts parse byte for
//! byte, the tables by their headings and row shapes, `-long` and `-json`
//! read back by HTCondor's own `classad2`.

use crate::common::TestOwner;
use crate::pool::{Pool, ok, stderr, stdout};
use std::path::Path;
use std::process::{Command, Stdio};

/// HTCondor's ClassAd parser on `text` (`old` or `json`): the ads'
/// ClusterId.ProcId and Owner; `None` when `classad2` is missing.
fn oracle_ads(text: &str, kind: &str) -> Option<Vec<(String, String)>> {
    let script = r#"
import sys, json
try:
    import classad2
except Exception as e:
    print(e, file=sys.stderr); sys.exit(3)
text = sys.stdin.read()
if sys.argv[1] == "old":
    ads = list(classad2.parseAds(text, classad2.ParserType.Old))
else:
    # condor_q -json is a list of objects, one per "{" ... "}" block.
    blocks = text.split("\n{\n")[1:]
    ads = [classad2.parseOne("{\n" + b.split("\n}")[0] + "\n}", classad2.ParserType.JSON) for b in blocks]
print(json.dumps([["%d.%d" % (a["ClusterId"], a["ProcId"]), a["Owner"]] for a in ads]))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script, kind])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.code() == Some(3) {
        gleaner_testkit::oracle_missing(
            "HTCondor's classad2 module",
            "python3 -m pip install htcondor",
            &String::from_utf8_lossy(&out.stderr),
        );
        return None;
    }
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

/// Whether `line` is a totals line for `who` with `jobs` jobs.
fn totals_line(line: &str, who: &str, jobs: usize) -> bool {
    let rest = match line.strip_prefix(&format!("Total for {who}: {jobs} jobs; ")) {
        Some(r) => r,
        None => return false,
    };
    let words: Vec<&str> = rest.trim_end().split(", ").collect();
    let names = [
        "completed",
        "removed",
        "idle",
        "running",
        "held",
        "suspended",
    ];
    words.len() == 6
        && words.iter().zip(names).all(|(w, n)| {
            w.split_once(' ')
                .is_some_and(|(num, name)| num.parse::<u64>().is_ok() && name == n)
        })
}

fn write(owner: &TestOwner, dir: &Path, name: &str, text: &str) {
    owner.write(&dir.join(name), text).unwrap();
}

#[test]
fn condor_commands_print_htcondor_formats() {
    if gleaner_testkit::skip_unless_root("runs jobs as a test user on a personal pool") {
        return;
    }
    let pool = Pool::start(2);
    let alice = TestOwner::new("ccfmt").unwrap();
    let other = TestOwner::new("ccoth").unwrap();
    let work = pool.root.join("work");
    alice.dir(&work).unwrap();
    let me = alice.name().to_string();
    let q = |args: &[&str]| pool.condor(&alice, &work, "condor_q", args);

    // condor_version: the two lines tools parse.
    let v = ok(pool.condor(&alice, &work, "condor_version", &[]));
    let v = lines(&v);
    assert_eq!(v.len(), 2, "{v:?}");
    let ver = v[0].strip_prefix("$CondorVersion: ").unwrap();
    assert!(ver.ends_with(" $"), "{ver}");
    let num = ver.split(' ').next().unwrap();
    assert!(num.split('.').all(|p| p.parse::<u32>().is_ok()), "{num}");
    assert!(
        v[1].starts_with("$CondorPlatform: ") && v[1].ends_with(" $"),
        "{v:?}"
    );

    // condor_config_val: one value a line; an unknown name fails.
    let c = ok(pool.condor(
        &alice,
        &work,
        "condor_config_val",
        &["SCHEDD_HOST", "local_dir"],
    ));
    let c = lines(&c);
    assert!(c[0].starts_with("unix:/"), "{c:?}");
    assert_eq!(c[1], pool.home.display().to_string());
    let bad = pool.condor(&alice, &work, "condor_config_val", &["NO_SUCH_KNOB"]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(stderr(&bad), "Not defined: NO_SUCH_KNOB\n");

    // condor_submit: `Submitting job(s)`, a dot per job, the cluster line;
    // nothing on standard error (tools take any as a failure).
    write(
        &alice,
        &work,
        "long.sub",
        "executable = /bin/sleep\narguments = 300\nbatch_name = longs\nqueue 3\n",
    );
    let out = pool.condor(&alice, &work, "condor_submit", &["long.sub"]);
    assert_eq!(
        stdout(&out),
        "Submitting job(s)...\n3 job(s) submitted to cluster 1.\n"
    );
    assert_eq!(stderr(&out), "");
    assert!(out.status.success());
    // -terse: `C.P - C.P`.
    write(
        &alice,
        &work,
        "two.sub",
        "executable = /bin/sleep\narguments = 300\nqueue 2\n",
    );
    let out = ok(pool.condor(&alice, &work, "condor_submit", &["-terse", "two.sub"]));
    assert_eq!(out, "2.0 - 2.1\n");
    // Errors: named with file and line, exit status 1, nothing queued.
    write(
        &alice,
        &work,
        "bad.sub",
        "executable = /bin/true\nrequest_cpus = 1 +\nqueue\n",
    );
    let bad = pool.condor(&alice, &work, "condor_submit", &["bad.sub"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("bad.sub:2"), "{}", stderr(&bad));

    // condor_q: the batch view, then the totals lines.
    let out = ok(q(&[]));
    assert!(out.starts_with("\n\n-- Schedd: "), "{out}");
    let l = lines(&out);
    let head = l[3];
    let words: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(
        words,
        [
            "OWNER",
            "BATCH_NAME",
            "SUBMITTED",
            "DONE",
            "RUN",
            "IDLE",
            "TOTAL",
            "JOB_IDS"
        ],
        "{out}"
    );
    let longs = l.iter().find(|r| r.contains("longs")).unwrap();
    assert!(longs.starts_with(&format!("{me} longs ")), "{out}");
    assert!(longs.ends_with(" 3 1.0-2"), "{out}");
    let second = l.iter().find(|r| r.contains("ID: 2")).unwrap();
    assert!(second.ends_with(" 2 2.0-1"), "{out}");
    // Blank line, query, mine, all users (the first two end in a space),
    // blank line.
    let t = l
        .iter()
        .position(|x| x.starts_with("Total for query"))
        .unwrap();
    assert_eq!((l[t - 1], l.len()), ("", t + 4), "{out}");
    assert!(
        totals_line(l[t], "query", 5) && l[t].ends_with(' '),
        "{out}"
    );
    assert!(
        totals_line(l[t + 1], &me, 5) && l[t + 1].ends_with(' '),
        "{out}"
    );
    assert!(
        totals_line(l[t + 2], "all users", 5) && !l[t + 2].ends_with(' '),
        "{out}"
    );
    assert!(out.ends_with("suspended\n\n"), "{out:?}");

    // -nobatch: HTCondor's heading, a row per job.
    let out = ok(q(&["-nobatch"]));
    let l = lines(&out);
    assert_eq!(
        l[3],
        " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"
    );
    assert!(l[4].starts_with(&format!("   1.0   {me}")), "{out}");
    assert!(l[4].ends_with(" sleep 300"), "{out}");

    // -af:jr and -format, as parsl and condorpy read them.
    let out = ok(q(&["1.0", "2.1", "-af:jr", "JobStatus"]));
    let rows: Vec<(String, String)> = out
        .lines()
        .map(|l| {
            let (id, st) = l.split_once(' ').unwrap();
            (id.to_string(), st.to_string())
        })
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!((rows[0].0.as_str(), rows[1].0.as_str()), ("1.0", "2.1"));
    assert!(rows.iter().all(|(_, s)| s == "1" || s == "2"), "{out}");
    let out = ok(q(&[
        "-format",
        "%d.",
        "ClusterId",
        "-format",
        "%d\\n",
        "ProcId",
    ]));
    assert_eq!(out, "1.0\n1.1\n1.2\n2.0\n2.1\n");
    let out = ok(q(&[
        "1",
        "-af",
        "ClusterId",
        "Owner",
        "JobBatchName",
        "Missing",
    ]));
    assert_eq!(
        out.lines().next().unwrap(),
        format!("1 {me} longs undefined")
    );
    let out = ok(q(&[
        "-af:h",
        "ProcId",
        "Cmd",
        "-constraint",
        "ClusterId == 2",
    ]));
    assert_eq!(
        out,
        "ProcId Cmd       \n0      /bin/sleep\n1      /bin/sleep\n"
    );

    // -long and -json: HTCondor's parser reads the same five ads.
    let want: Vec<(String, String)> = ["1.0", "1.1", "1.2", "2.0", "2.1"]
        .iter()
        .map(|id| (id.to_string(), me.clone()))
        .collect();
    let long = ok(q(&["-long"]));
    if let Some(got) = oracle_ads(&long, "old") {
        assert_eq!(got, want, "{long}");
        let json = ok(q(&["-json"]));
        assert!(
            json.starts_with("[\n{\n  \"") && json.ends_with("}\n]\n"),
            "{json}"
        );
        assert_eq!(oracle_ads(&json, "json").unwrap(), want, "{json}");
    }

    // -totals alone.
    let out = ok(q(&["-totals"]));
    let l = lines(&out);
    assert!(l[2].starts_with("-- Schedd: "), "{out}");
    assert!(totals_line(l[3], "query", 5), "{out}");

    // condor_hold / condor_release: HTCondor's sentences and statuses.
    let hold = |args: &[&str]| pool.condor(&alice, &work, "condor_hold", args);
    assert_eq!(ok(hold(&["1.1", "-reason", "disk full"])), "Job 1.1 held\n");
    let again = hold(&["1.1"]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(stderr(&again), "Job 1.1 already held\n");
    let out = ok(q(&["-hold"]));
    let l = lines(&out);
    assert_eq!(
        l[3],
        " ID      OWNER          HELD_SINCE  CODE/SUB HOLD_REASON"
    );
    assert!(
        l[4].starts_with("   1.1   ") && l[4].ends_with("    1/0   disk full"),
        "{out}"
    );

    // condor_qedit: allowed attributes set, protected ones refused, and
    // another user's job untouched.
    let qedit = |who: &TestOwner, args: &[&str]| pool.condor(who, &work, "condor_qedit", args);
    assert_eq!(
        ok(qedit(
            &alice,
            &["1.1", "RequestMemory", "64", "Project=\"blue\""]
        )),
        "Set attribute \"RequestMemory\" for 1 matching jobs.\nSet attribute \"Project\" for 1 matching jobs.\n"
    );
    assert_eq!(
        ok(q(&["1.1", "-af", "RequestMemory", "Project"])),
        "64 blue\n"
    );
    let refused = qedit(&alice, &["1.1", "Owner", "\"root\""]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        stderr(&refused),
        "Update of immutable attribute \"Owner\" is not allowed.\nTransaction failed.  No attributes were set.\n"
    );
    let refused = qedit(&alice, &["1.1", "JobStatus", "1"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("protected attribute \"JobStatus\""));
    let foreign = qedit(&other, &["1.1", "JobPrio", "9"]);
    assert_eq!(foreign.status.code(), Some(1), "{foreign:?}");
    assert!(
        stderr(&foreign).contains("belongs to"),
        "{}",
        stderr(&foreign)
    );
    assert_eq!(
        ok(q(&["1.1", "-af", "JobPrio", "JobStatus", "Owner"])),
        format!("0 5 {me}\n")
    );
    let release = ok(pool.condor(&alice, &work, "condor_release", &["1.1"]));
    assert_eq!(release, "Job 1.1 released\n");
    let again = pool.condor(&alice, &work, "condor_release", &["1.1"]);
    assert_eq!(stderr(&again), "Job 1.1 not held to be released\n");

    // condor_rm: a cluster, a job, -forcex, nothing.
    let rm = |args: &[&str]| pool.condor(&alice, &work, "condor_rm", args);
    assert_eq!(
        ok(rm(&["2"])),
        "All jobs in cluster 2 have been marked for removal\n"
    );
    assert_eq!(ok(rm(&["1.0"])), "Job 1.0 marked for removal\n");
    assert_eq!(
        ok(rm(&["-forcex", "1.0"])),
        "Job 1.0 removed locally (remote state unknown)\n"
    );
    let none = rm(&["99"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        stderr(&none).ends_with("Couldn't find/remove all jobs in cluster 99\n"),
        "{}",
        stderr(&none)
    );
    assert_eq!(
        ok(rm(&["-constraint", "JobBatchName == \"longs\""])),
        "All jobs matching constraint (JobBatchName == \"longs\") have been marked for removal\n"
    );
    let out = ok(q(&["-totals"]));
    assert!(totals_line(lines(&out)[3], "query", 0), "{out}");

    // condor_history: HTCondor's heading; removed jobs marked X.
    let out = ok(pool.condor(&alice, &work, "condor_history", &[]));
    let l = lines(&out);
    assert_eq!(
        l[0],
        " ID          OWNER            SUBMITTED   RUN_TIME   ST   COMPLETED CMD"
    );
    assert_eq!(l.len(), 6, "{out}");
    assert!(
        l[1..]
            .iter()
            .all(|r| r.contains(" X ") && r.ends_with("sleep 300")),
        "{out}"
    );
    let out = ok(pool.condor(
        &alice,
        &work,
        "condor_history",
        &["-af", "ClusterId", "ProcId", "JobStatus", "-limit", "2"],
    ));
    assert_eq!(out.lines().count(), 2, "{out}");

    // condor_wait on a job's log, condor_tail on its output,
    // condor_watch_q until done.
    write(
        &alice,
        &work,
        "quick.sub",
        "executable = /bin/sh\narguments = \"-c 'echo started; sleep 4; echo finished'\"\n\
         output = quick.out\nlog = quick.log\nqueue\n",
    );
    let out = ok(pool.condor(&alice, &work, "condor_submit", &["quick.sub"]));
    assert_eq!(
        out,
        "Submitting job(s).\n1 job(s) submitted to cluster 3.\n"
    );
    let expired = pool.condor(
        &alice,
        &work,
        "condor_wait",
        &["-wait", "1", "quick.log", "3"],
    );
    assert_eq!(
        (stdout(&expired).as_str(), expired.status.code()),
        ("Time expired.\n", Some(1))
    );
    pool.wait_for("job 3.0 to run", || {
        ok(q(&["3.0", "-af", "JobStatus"])) == "2\n"
    });
    pool.wait_for("its first output", || {
        ok(pool.condor(&alice, &work, "condor_tail", &["3.0"])).contains("started")
    });
    let done = pool.condor(&alice, &work, "condor_wait", &["-wait", "60", "quick.log"]);
    assert_eq!(
        (stdout(&done).as_str(), done.status.code()),
        ("All jobs done.\n", Some(0))
    );
    let watched = pool.condor(
        &alice,
        &work,
        "condor_watch_q",
        &["-clusters", "3", "-exit", "all,done"],
    );
    assert!(watched.status.success(), "{watched:?}");

    // condor_status and condor_userprio ask the coordinator, with the
    // user's token.
    let client = pool.client_dir(&alice);
    let root_cmd = |tool: &str, args: &[&str]| {
        Command::new(pool.bin.join(tool))
            .args(args)
            .env("GLEAN_HOME", &client)
            .env_remove("GLEAN_LOG")
            .output()
            .unwrap()
    };
    let out = ok(root_cmd("condor_status", &[]));
    let l = lines(&out);
    let head: Vec<&str> = l[0].split_whitespace().collect();
    assert_eq!(
        head,
        [
            "Name",
            "OpSys",
            "Arch",
            "State",
            "Activity",
            "LoadAv",
            "Mem",
            "ActvtyTime"
        ]
    );
    assert_eq!(l[1], "");
    assert!(
        l[2].starts_with("station0 ") && l[3].starts_with("station1 "),
        "{out}"
    );
    assert!(out.contains("\n               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle\n"), "{out}");
    assert!(
        out.lines()
            .last()
            .unwrap()
            .starts_with("         Total     2 "),
        "{out}"
    );
    let out = ok(root_cmd("condor_status", &["-af", "Name", "OpSys"]));
    assert_eq!(out, "station0 LINUX\nstation1 LINUX\n");
    // condor_userprio: HTCondor's table of submitters; Up-Down's of
    // stations with -stations.
    let out = ok(root_cmd("condor_userprio", &[]));
    let l = lines(&out);
    assert!(l[0].starts_with("Last Priority Update: "), "{out}");
    assert!(l[2].starts_with("User Name "), "{out}");
    assert!(l[3].starts_with("-----"), "{out}");
    assert!(l[l.len() - 1].starts_with("Number of users: "), "{out}");
    let out = ok(root_cmd("condor_userprio", &["-stations"]));
    assert!(out.contains("\nStation Name "), "{out}");
    assert!(
        out.contains("\nstation0 ") && out.contains("\nstation1 "),
        "{out}"
    );
    // The same user by token: the same queue.
    let out = ok(root_cmd(
        "condor_history",
        &["-af", "ClusterId", "-limit", "1"],
    ));
    assert_eq!(out, "3\n");

    // condor_submit_dag: a two-node DAG through the station's DAG manager.
    write(&alice, &work, "n.sub", "executable = /bin/true\nqueue\n");
    write(
        &alice,
        &work,
        "d.dag",
        "JOB A n.sub\nJOB B n.sub\nPARENT A CHILD B\n",
    );
    let dag = pool.condor(&alice, &work, "condor_submit_dag", &["-f", "d.dag"]);
    assert!(dag.status.success(), "{dag:?}");

    // Unknown options and missing arguments: HTCondor's exit status 1.
    let bad = q(&["-nosuchoption"]);
    assert_eq!(bad.status.code(), Some(1));
    let bad = pool.condor(&alice, &work, "condor_rm", &[]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).starts_with("You did not specify any jobs"),
        "{}",
        stderr(&bad)
    );
}
