//! Real submit files against HTCondor's own submit code (issue 19).
//!
//! The corpus (`tests/data/htcondor_submit/`, sources in its README) is
//! HTCondor's test suite's submit files and the manual's examples,
//! verbatim. Each is parsed by Gleaner and by HTCondor's `SubmitHash`
//! (`htcondor_submit_oracle.py`, PyPI `htcondor`), with the same
//! environment, command-line definitions and appended `queue`, and:
//!
//! - refused by Gleaner with the documented error (`refuse` in
//!   `corpus.json`), or
//! - accepted, and every job ad attribute Gleaner writes that HTCondor
//!   writes too is equal (ClassAd values compared after parsing; paths
//!   resolved against `Iwd`; `Args`, `Arguments`, `Env` and `Environment`
//!   as the strings they are), and every attribute the file makes
//!   HTCondor write (one that differs from HTCondor's ad of a bare
//!   `executable` + `queue`) is in Gleaner's ad too, unless it is one of
//!   the [`DIVERGENCES`], each with its reason.
//!
//! The test prints the counts: accepted identical, accepted with warnings,
//! refused by both, refused where HTCondor accepts (each a design choice
//! its message names), and the failures: mismatches, refusals the
//! manifest does not expect, files accepted that HTCondor refuses.
//!
//! One Python process answers for the whole corpus (the oracle takes a
//! list), so the test costs one interpreter start, not one per file.

use gleaner_classad::{Ad, Expr, parse_expr, unparse_expr};
use gleaner_core::time::Time;
use gleaner_proto::job_ad::submission_ads;
use gleaner_proto::submit::{SubmitContext, parse_submit};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The submission time both sides use.
const QDATE: u64 = 1_700_000_000;

/// Defaults Gleaner writes differently from HTCondor by design:
/// (attribute, reason). A difference in one of them is allowed only where
/// the file leaves the default (HTCondor's value is the one of its ad of a
/// bare `executable` + `queue`); a value the file sets must be the same.
const DIVERGENCES: &[(&str, &str)] = &[
    (
        "ShouldTransferFiles",
        "Gleaner's default is YES (stations share no file system); HTCondor's IF_NEEDED",
    ),
    (
        "Requirements",
        "HTCondor adds its own clauses (Arch, OpSys, Disk, Memory, file system) that Gleaner's \
         matchmaker checks itself: only the job's own clause is compared",
    ),
];

/// Attributes not compared at all, and why: set by the schedd when the job
/// is queued (not by submit), or Gleaner's own.
const NOT_COMPARED: &[(&str, &str)] = &[
    (
        "JobRequiresSandbox",
        "HTCondor's parallel universe sets it for its own starter; every Gleaner guest has a sandbox",
    ),
    (
        "WantIOProxy",
        "HTCondor's parallel universe sets it for its chirp proxy, which Gleaner does not have",
    ),
    (
        "KillSig",
        "HTCondor's parallel universe writes its default SIGTERM; Gleaner's default is the same \
         signal, written only when the file sets it",
    ),
    (
        "Owner",
        "set by the schedd from the submitting user, not by submit",
    ),
    ("User", "set by the schedd"),
    ("NumStartFailures", "Gleaner's own"),
];

/// Attributes HTCondor's submit adds that say nothing about the submit
/// file's commands, and why Gleaner has none.
const HTCONDOR_ONLY: &[(&str, &str)] = &[
    ("DiskUsage", "sizes condor_submit measures on disk"),
    ("ExecutableSize", "sizes condor_submit measures on disk"),
    ("ImageSize", "sizes condor_submit measures on disk"),
    (
        "TransferInputSizeMB",
        "sizes condor_submit measures on disk",
    ),
    (
        "StreamIn",
        "HTCondor's streaming defaults; Gleaner always streams stdout and stderr home",
    ),
    (
        "StreamOut",
        "HTCondor's streaming defaults; Gleaner always streams stdout and stderr home",
    ),
    (
        "StreamErr",
        "HTCondor's streaming defaults; Gleaner always streams stdout and stderr home",
    ),
    (
        "ScheddInterval",
        "a schedd setting HTCondor copies into deferred jobs' requirements",
    ),
];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/htcondor_submit")
}

/// The environment both sides see (the submitter's, for `getenv` and
/// `$ENV()`): fixed, so that the comparison does not depend on the shell.
fn environment() -> BTreeMap<String, String> {
    [
        ("HOME", "/home/alice"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C.UTF-8"),
        ("USER", "alice"),
        ("GLEANER_CORPUS", "1"),
        // htcondor2 sets it when it is missing.
        ("CONDOR_CONFIG", "/dev/null"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The Python interpreter itself (not a wrapper such as pyenv's shim,
/// which would add variables to the environment `getenv` copies).
fn python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())?;
    let out = Command::new(&found)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let real = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Some(if real.is_empty() {
        found
    } else {
        PathBuf::from(real)
    })
}

/// HTCondor's answer for one corpus entry: its procs' ads, or its refusal.
type OracleAnswer = Result<Vec<BTreeMap<String, String>>, String>;

/// HTCondor's answers for `reqs`, in order, from one run of the oracle, or
/// `None` when the oracle is missing.
fn oracle(python: &Path, reqs: &[Value]) -> Option<Vec<OracleAnswer>> {
    use std::io::Write;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/htcondor_submit_oracle.py");
    let mut child = Command::new(python)
        .arg(&script)
        .env_clear()
        .envs(environment())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()?
        .write_all(Value::Array(reqs.to_vec()).to_string().as_bytes())
        .ok()?;
    let out = child.wait_with_output().ok()?;
    if out.status.code() == Some(3) {
        gleaner_testkit::oracle_missing(
            "HTCondor's htcondor2 submit code",
            "python3 -m pip install -r scripts/requirements-test.txt",
            String::from_utf8_lossy(&out.stderr).trim(),
        );
        return None;
    }
    assert!(
        out.status.success(),
        "oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = serde_json::from_slice(&out.stdout).expect("oracle output is JSON");
    assert_eq!(answers.len(), reqs.len(), "one answer per request");
    Some(answers.iter().map(answer).collect())
}

fn answer(v: &Value) -> OracleAnswer {
    if let Some(e) = v.get("error") {
        return Err(e.as_str().unwrap_or_default().to_string());
    }
    Ok(v["procs"]
        .as_array()
        .expect("procs")
        .iter()
        .map(|p| {
            p.as_object()
                .expect("an ad")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .collect())
}

/// A ClassAd value in one canonical text (parsed and printed by Gleaner's
/// ClassAd code).
fn canon(text: &str) -> String {
    match parse_expr(text) {
        Ok(e) => unparse_expr(&e),
        Err(_) => text.to_string(),
    }
}

/// The string of a ClassAd string literal.
fn string_of(text: &str) -> Option<String> {
    let e = parse_expr(text).ok()?;
    gleaner_classad::EvalContext::new(0)
        .eval(&e)
        .as_str()
        .map(str::to_string)
}

fn normalize_path(p: &str) -> String {
    let mut s = p.replace("/./", "/");
    while s.ends_with("/.") {
        s.truncate(s.len() - 2);
    }
    s
}

/// Gleaner's ad as name → canonical text, names in HTCondor's case when
/// HTCondor has them.
fn gleaner_map(ad: &Ad) -> BTreeMap<String, String> {
    ad.iter()
        .map(|(k, e): (&str, &Expr)| (k.to_string(), unparse_expr(e)))
        .collect()
}

fn get_ci<'a>(m: &'a BTreeMap<String, String>, name: &str) -> Option<(&'a String, &'a String)> {
    m.iter().find(|(k, _)| k.eq_ignore_ascii_case(name))
}

/// The first clause of a `&&` chain (HTCondor puts the job's own first).
fn first_clause(text: &str) -> String {
    // HTCondor writes `(job's) && (TARGET.Arch …) && …`.
    let t = text.trim();
    if let Some(rest) = t.strip_prefix('(') {
        let mut depth = 1usize;
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return canon(&rest[..i]);
                    }
                }
                _ => {}
            }
        }
    }
    canon(t)
}

#[derive(Default)]
struct Outcome {
    differences: Vec<String>,
}

/// Compares one proc's ads.
fn compare(
    proc: usize,
    gleaner: &Ad,
    htc: &BTreeMap<String, String>,
    baseline: &BTreeMap<String, String>,
    user_requirements: bool,
    out: &mut Outcome,
) {
    let g = gleaner_map(gleaner);
    let skip = |name: &str| {
        NOT_COMPARED
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let documented = |name: &str| {
        DIVERGENCES
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let iwd = g
        .get("Iwd")
        .and_then(|v| string_of(v))
        .map(|s| normalize_path(&s))
        .unwrap_or_default();
    let as_path = |v: &str| -> String {
        match string_of(v) {
            Some(p) if !p.starts_with('/') => normalize_path(&format!("{iwd}/{p}")),
            Some(p) => normalize_path(&p),
            None => v.to_string(),
        }
    };
    // Attributes both write.
    for (name, gv) in &g {
        if skip(name) {
            continue;
        }
        let Some((_, hv)) = get_ci(htc, name) else {
            continue;
        };
        let (gv, hv) = match name.as_str() {
            "Cmd" | "UserLog" | "Iwd" | "DAGManNodesLog" => (as_path(gv), as_path(hv)),
            "Requirements" if user_requirements => (canon(gv), first_clause(hv)),
            _ => (canon(gv), canon(hv)),
        };
        if name == "Requirements" && !user_requirements {
            continue;
        }
        if gv != hv {
            let default = get_ci(baseline, name).is_some_and(|(_, b)| canon(b) == hv);
            if documented(name) && default {
                continue;
            } else {
                out.differences
                    .push(format!("proc {proc}: {name}: Gleaner {gv}, HTCondor {hv}"));
            }
        }
    }
    // What the file made HTCondor write must be in Gleaner's ad.
    for (name, hv) in htc {
        if skip(name)
            || get_ci(&g, name).is_some()
            || HTCONDOR_ONLY
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            continue;
        }
        if baseline.get(name).is_some_and(|b| canon(b) == canon(hv)) {
            continue;
        }
        out.differences.push(format!(
            "proc {proc}: {name} = {hv} in HTCondor's ad, not in Gleaner's"
        ));
    }
}

/// One corpus entry as the manifest gives it.
struct Entry<'a> {
    file: &'a str,
    name: String,
    defines: Vec<String>,
    queue: Option<&'a str>,
    refuse: Option<&'a str>,
}

impl<'a> Entry<'a> {
    fn of(v: &'a Value) -> Self {
        let file = v["file"].as_str().expect("file");
        Entry {
            file,
            name: v["name"].as_str().unwrap_or(file).to_string(),
            defines: v["defines"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|d| d.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            queue: v["queue"].as_str(),
            refuse: v["refuse"].as_str(),
        }
    }

    /// The oracle's request for this entry.
    fn request(&self, dir: &Path) -> Value {
        json!({"file": dir.join(self.file), "defines": self.defines, "queue": self.queue,
               "qdate": QDATE, "owner": "alice", "cluster": 1})
    }
}

/// HTCondor's parallel universe queues one proc of `MachineCount` nodes
/// whose `$(Node)` its schedd fills in per node; Gleaner queues one proc
/// per member (proc id = rank, docs/jobs.md). Each member's ad is compared
/// with HTCondor's one ad as its schedd would fill it for that node.
fn per_member(
    gleaner: &[Ad],
    theirs: Vec<BTreeMap<String, String>>,
) -> Vec<BTreeMap<String, String>> {
    let members = gleaner
        .first()
        .and_then(|a| a.get("MachineCount"))
        .and_then(|e| unparse_expr(e).parse::<usize>().ok());
    match members {
        Some(k) if theirs.len() == 1 && gleaner.len() == k => (0..k)
            .map(|rank| {
                theirs[0]
                    .iter()
                    .map(|(n, v)| (n.clone(), v.replace("#pArAlLeLnOdE#", &rank.to_string())))
                    .chain([("ProcId".to_string(), rank.to_string())])
                    .collect()
            })
            .collect(),
        _ => theirs,
    }
}

#[test]
fn htcondor_corpus_matches_htcondor_submit() {
    let dir = data_dir();
    let manifest: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("corpus.json")).expect("corpus.json"),
    )
    .expect("corpus.json is JSON");
    let entries: Vec<Entry<'_>> = manifest.iter().map(Entry::of).collect();
    let Some(python) = python3() else {
        gleaner_testkit::oracle_missing("python3", "apt-get install python3", "no python3 on PATH");
        return;
    };
    // HTCondor's ad of the simplest file (what it writes anyway) first,
    // then every entry's.
    let base_file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(base_file.path(), "executable = /bin/echo\nqueue\n").expect("write");
    let mut reqs =
        vec![json!({"file": base_file.path(), "qdate": QDATE, "owner": "alice", "cluster": 1})];
    reqs.extend(entries.iter().map(|e| e.request(&dir)));
    let Some(mut answers) = oracle(&python, &reqs) else {
        return;
    };
    let baseline = answers
        .remove(0)
        .expect("HTCondor accepts the baseline")
        .remove(0);

    let mut identical = Vec::new();
    let mut with_warnings = Vec::new();
    let mut refused_by_both = Vec::new();
    let mut refused_by_design = Vec::new();
    let mut failures = Vec::new();
    for (entry, theirs) in entries.iter().zip(answers) {
        let name = &entry.name;
        let path = dir.join(entry.file);
        // Gleaner.
        let mut text = std::fs::read_to_string(&path).expect("corpus file");
        if let Some(q) = entry.queue {
            text.push_str(&format!("\nqueue {q}\n"));
        }
        let file_dir = path.parent().expect("a directory").to_path_buf();
        let ctx = SubmitContext::new(entry.file, "alice")
            .with_env(environment())
            .with_dir(file_dir.clone())
            .with_defines(
                entry
                    .defines
                    .iter()
                    .filter_map(|d| d.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
            .with_seed(1);
        let ours = parse_submit(&text, &ctx);
        if let Some(expected) = entry.refuse {
            match &ours {
                Err(e) if e.to_string().contains(expected) => {
                    let first = e.0[0].to_string();
                    match &theirs {
                        Err(h) => refused_by_both.push(format!(
                            "{name}: {first} (HTCondor: {})",
                            h.lines().next().unwrap_or("")
                        )),
                        Ok(_) => refused_by_design.push(format!("{name}: {first}")),
                    }
                }
                Err(e) => failures.push(format!("{name}: refused, but not for {expected:?}: {e}")),
                Ok(_) => failures.push(format!("{name}: accepted, expected refused ({expected})")),
            }
            continue;
        }
        let sub = match ours {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{name}: Gleaner refuses it:\n{e}"));
                continue;
            }
        };
        let theirs = match theirs {
            Ok(t) => t,
            Err(h) => {
                failures.push(format!(
                    "{name}: HTCondor refuses it ({h}) but Gleaner accepts it"
                ));
                continue;
            }
        };
        let ads = submission_ads(
            &sub,
            1,
            Time::from_secs(QDATE),
            Some(&file_dir.to_string_lossy()),
        )
        .expect("expands");
        let theirs = per_member(&ads, theirs);
        if ads.len() != theirs.len() {
            failures.push(format!(
                "{name}: Gleaner queues {} procs, HTCondor {}",
                ads.len(),
                theirs.len()
            ));
            continue;
        }
        // The file sets requirements (a line of its own, not a comment).
        let user_requirements = text.lines().any(|l| {
            let l = l.trim_start().to_ascii_lowercase();
            l.strip_prefix("requirements")
                .is_some_and(|r| r.trim_start().starts_with('='))
        });
        let mut out = Outcome::default();
        for (i, (g, h)) in ads.iter().zip(&theirs).enumerate() {
            compare(i, g, h, &baseline, user_requirements, &mut out);
        }
        if !out.differences.is_empty() {
            failures.push(format!("{name}:\n  {}", out.differences.join("\n  ")));
            continue;
        }
        let jobs = format!(
            "{} {}",
            ads.len(),
            if ads.len() == 1 { "job" } else { "jobs" }
        );
        if sub.warnings().is_empty() {
            identical.push(format!("{name}: {jobs}"));
        } else {
            let why: Vec<String> = sub.warnings().iter().map(|w| w.message.clone()).collect();
            with_warnings.push(format!("{name}: {jobs}; {}", why.join("; ")));
        }
    }
    println!(
        "corpus: {} files: {} accepted identical, {} accepted with warnings, {} refused by both, \
         {} refused that HTCondor accepts (design choices), {} failures",
        entries.len(),
        identical.len(),
        with_warnings.len(),
        refused_by_both.len(),
        refused_by_design.len(),
        failures.len()
    );
    println!("accepted identical:\n  {}", identical.join("\n  "));
    println!("accepted with warnings:\n  {}", with_warnings.join("\n  "));
    println!("refused by both:\n  {}", refused_by_both.join("\n  "));
    println!(
        "refused that HTCondor accepts (design choices):\n  {}",
        refused_by_design.join("\n  ")
    );
    println!("defaults that differ by design:");
    for (n, why) in DIVERGENCES {
        println!("  {n}: {why}");
    }
    println!("not compared:");
    for (n, why) in NOT_COMPARED.iter().chain(HTCONDOR_ONLY) {
        println!("  {n}: {why}");
    }
    assert!(
        failures.is_empty(),
        "{} corpus file(s) differ from HTCondor:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
