//! `glean dag submit --dry-run` over every DAG file of HTCondor's test
//! suite (the committed corpus, `tests/data/dagman/`): each is loaded as
//! HTCondor's tests submit it (from the corpus directory; a splice file
//! in a subdirectory that only works from there, from its own), with
//! every file it names and every node's submit description parsed. The test
//! prints how many load and, for the others, why; it fails if fewer load
//! than this build is known to load, or if a refusal is not one of the
//! expected ones (each explained below).

use crate::common::glean_bin;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The corpus (HTCondor's `src/condor_tests`, DAGMan's files).
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dagman/condor_tests")
}

/// Refusals HTCondor makes too, or that are the test's point: (file,
/// part of the message, why).
const EXPECTED: &[(&str, &str, &str)] = &[
    (
        "job_dagman_gt4727-upper.dag",
        "SUBDAG EXTERNAL",
        "not supported: a JOB submitting a DAG's .condor.sub (the old nesting); SUBDAG EXTERNAL works",
    ),
    (
        "job_dagman_jobstate_log.dag",
        "no executable",
        "the test's point: node E's submit file must fail (its driver expects SUBMIT_FAILURE); the dry run parses every submit file",
    ),
    (
        "job_dagman_node_name_illegal_chars.dag",
        "reserves for splice names",
        "HTCondor refuses it too; its driver expects the failure",
    ),
    (
        "job_dagman_reject-0.dag",
        "REJECT",
        "HTCondor refuses a DAG with REJECT too; its driver expects the failure",
    ),
    (
        "job_dagman_reject-1.dag",
        "REJECT",
        "HTCondor refuses a DAG with REJECT too; its driver expects the failure",
    ),
    (
        "job_dagman_splice-R-upper.dag",
        "unknown node A+A",
        "not supported: VARS naming a node inside a splice from the splicing DAG",
    ),
    (
        "job_dagman_splice_connect-A-inc1.dag",
        "is not a splice",
        "an INCLUDE fragment, not a DAG of its own (its includer loads)",
    ),
    (
        "job_dagman_splice_connect-A-inc2.dag",
        "unknown node",
        "an INCLUDE fragment, not a DAG of its own (its includer loads)",
    ),
    (
        "job_dagman_splice_connect-D.dag",
        "has no PIN_OUT",
        "HTCondor refuses it too; its driver expects the failure",
    ),
    (
        "job_dagman_splice_connect-E.dag",
        "has no parent after the pins",
        "HTCondor refuses it too; its driver expects the failure",
    ),
    (
        "job_dagman_splice_connect-F.dag",
        "pin_outs",
        "HTCondor refuses it too; its driver expects the failure",
    ),
];

/// Fewest DAG files that must load.
const AT_LEAST: usize = 215;

/// Every `.dag` file under `dir`, as paths relative to it.
fn dag_files(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir.join(rel)) else {
        return;
    };
    for e in entries.flatten() {
        let r = rel.join(e.file_name());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            dag_files(dir, &r, out);
        } else if r.extension().is_some_and(|x| x == "dag") {
            out.push(r);
        }
    }
}

#[test]
fn census_of_htcondors_dag_files() {
    let dir = corpus();
    let mut files = Vec::new();
    dag_files(&dir, Path::new(""), &mut files);
    files.sort();
    assert_eq!(files.len(), 226, "the corpus has HTCondor's 226 DAG files");
    let mut ok = 0;
    let mut refused: BTreeMap<String, String> = BTreeMap::new();
    for f in &files {
        // As HTCondor's tests name it, from the corpus directory; a splice
        // in a subdirectory written for `SPLICE … DIR` from its own.
        let own = match (f.parent(), f.file_name()) {
            (Some(p), Some(n)) if !p.as_os_str().is_empty() => {
                Some((dir.join(p), PathBuf::from(n)))
            }
            _ => None,
        };
        let mut first_refusal = None;
        for (cwd, name) in std::iter::once((dir.clone(), f.clone())).chain(own) {
            let out = Command::new(glean_bin())
                .args(["dag", "submit", "--dry-run"])
                .arg(&name)
                .current_dir(&cwd)
                .env("USER", "census")
                .output()
                .unwrap();
            if out.status.success() {
                first_refusal = None;
                break;
            }
            let err = String::from_utf8_lossy(&out.stderr);
            let first = err
                .lines()
                .find(|l| !l.trim().is_empty() && !l.contains("warning"))
                .unwrap_or("")
                .replace(&format!("{}/", dir.display()), "");
            first_refusal.get_or_insert(first);
        }
        match first_refusal {
            None => ok += 1,
            Some(why) => {
                refused.insert(f.display().to_string(), why);
            }
        }
    }
    println!(
        "DAG files loaded by glean dag submit --dry-run: {ok} / {}",
        files.len()
    );
    for (f, why) in &refused {
        let known = EXPECTED.iter().find(|(e, _, _)| e == f);
        let note = known.map_or("UNEXPECTED", |k| k.2);
        println!("  refused {f}: {why}\n      ({note})");
    }
    let unexpected: Vec<&String> = refused
        .iter()
        .filter(|(f, why)| !EXPECTED.iter().any(|(e, m, _)| e == f && why.contains(m)))
        .map(|(f, _)| f)
        .collect();
    assert!(ok >= AT_LEAST, "only {ok} DAG files loaded");
    assert!(unexpected.is_empty(), "unexpected refusals: {unexpected:?}");
}
