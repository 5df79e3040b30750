//! Differential test against HTCondor's own ClassAd library (Python module `classad2`, or
//! `classad` in older wheels; `pip install htcondor`).
//!
//! Generates a seeded corpus (see `corpus/mod.rs`), evaluates every expression both here and in
//! `tests/oracle.py`, and compares the printed results. Skipped (with a message) when the
//! module cannot be imported, unless `GLEANER_REQUIRE_ORACLE=1`, in which case it fails.
//!
//! Known, deliberate deviations are excluded from the corpus; see the crate docs.

mod corpus;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use gleaner_classad::{Ad, EvalContext, parse_expr};

const SEED: u64 = 0x6C65_616E_6572; // "leaner"
const N_RANDOM: usize = 2500;

fn oracle_available() -> Result<(), String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "try:\n import classad2\nexcept ImportError:\n import classad",
        ])
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        // The last line of the traceback says what is missing.
        let err = String::from_utf8_lossy(&out.stderr);
        Err(err
            .trim()
            .lines()
            .last()
            .unwrap_or("import failed")
            .to_string())
    }
}

fn rust_result(expr: &str, ctx: &EvalContext) -> Result<String, String> {
    match parse_expr(expr) {
        Ok(e) => Ok(ctx.eval(&e).unparse()),
        Err(_) => Err("parse".into()),
    }
}

#[test]
fn differential_against_htcondor() {
    if let Err(why) = oracle_available() {
        let required = std::env::var("GLEANER_REQUIRE_ORACLE").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "GLEANER_REQUIRE_ORACLE=1 but HTCondor's classad module is not importable ({why}); \
             install it with `python3 -m pip install htcondor`"
        );
        println!(
            "SKIPPED differential test: python3 cannot import HTCondor's classad module ({why}). \
             Install it with `python3 -m pip install htcondor`."
        );
        return;
    }

    // GLEANER_DIFF_SEED / GLEANER_DIFF_N explore other corpora; the defaults are what CI runs.
    let seed = std::env::var("GLEANER_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let n_random = std::env::var("GLEANER_DIFF_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(N_RANDOM);
    // Every corpus expression against the fixed MY/TARGET ads, plus the hand-picked cases
    // with no ads at all.
    let mut cases: Vec<(String, bool)> = corpus::corpus(seed, n_random)
        .into_iter()
        .map(|e| (e, true))
        .collect();
    cases.extend(corpus::FIXED.iter().map(|e| (e.to_string(), false)));
    assert!(cases.len() >= 2000);

    let (answers, crashed) = run_oracle(&cases);
    {
        let my = Ad::parse(corpus::MY_AD).expect("MY ad parses");
        let target = Ad::parse(corpus::TARGET_AD).expect("TARGET ad parses");
        let ctx = EvalContext::new(corpus::NOW)
            .with_my(&my)
            .with_target(&target)
            .with_target_fallback(false);
        let bare = EvalContext::new(corpus::NOW).with_target_fallback(false);

        let (mut agree, mut parse_errors, mut undefined, mut error) = (0usize, 0usize, 0, 0);
        let mut mismatches = Vec::new();
        for ((expr, with_ads), answer) in cases.iter().zip(&answers) {
            let Some(answer) = answer else {
                continue; // HTCondor itself crashed on this one (listed below).
            };
            let v: serde_json::Value = serde_json::from_str(answer).expect("oracle JSON");
            let theirs: Result<String, String> = if v["ok"].as_bool() == Some(true) {
                Ok(v["result"].as_str().unwrap_or_default().to_string())
            } else {
                Err(v["error"].as_str().unwrap_or_default().to_string())
            };
            let ours = rust_result(expr, if *with_ads { &ctx } else { &bare });
            if normalize(&ours) == normalize(&theirs) {
                agree += 1;
                match &ours {
                    Err(_) => parse_errors += 1,
                    Ok(s) if s == "undefined" => undefined += 1,
                    Ok(s) if s == "error" => error += 1,
                    _ => {}
                }
            } else {
                let ads = if *with_ads { "with ads" } else { "no ads" };
                mismatches.push(format!(
                    "{expr} ({ads})\n    htcondor: {theirs:?}\n    gleaner:  {ours:?}"
                ));
            }
        }
        println!(
            "differential: {} expressions, {} compared, {} agree ({} both parse errors, {} undefined, {} error), {} differ, {} excluded (oracle crash)",
            cases.len(),
            cases.len() - crashed.len(),
            agree,
            parse_errors,
            undefined,
            error,
            mismatches.len(),
            crashed.len()
        );
        for c in &crashed {
            println!("EXCLUDED (HTCondor's library crashed on it): {c}");
        }
        assert!(
            crashed.len() <= 5,
            "the oracle crashed {} times",
            crashed.len()
        );
        for m in mismatches.iter().take(40) {
            println!("MISMATCH {m}");
        }
        assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
    }
}

/// Runs the oracle over all cases. If HTCondor's library crashes on an expression (it
/// overflows its stack on some self-references through subscripts), that expression is
/// recorded, and the oracle is restarted after it.
fn run_oracle(cases: &[(String, bool)]) -> (Vec<Option<String>>, Vec<String>) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oracle.py");
    let mut answers: Vec<Option<String>> = Vec::with_capacity(cases.len());
    let mut crashed = Vec::new();
    while answers.len() < cases.len() {
        let rest = &cases[answers.len()..];
        let mut input = String::new();
        for (e, with_ads) in rest {
            let line = serde_json::json!({
                "expr": e,
                "my": with_ads.then_some(corpus::MY_AD),
                "target": with_ads.then_some(corpus::TARGET_AD),
            });
            input.push_str(&line.to_string());
            input.push('\n');
        }
        let mut child = Command::new("python3")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn python3 oracle");
        let mut stdin = child.stdin.take().expect("oracle stdin");
        // A write error means the oracle died; that is handled below from its exit status.
        let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()).is_ok());
        let out = child.wait_with_output().expect("oracle output");
        let _ = feeder.join();
        let stdout = String::from_utf8(out.stdout).expect("oracle output is UTF-8");
        let got: Vec<&str> = stdout.lines().collect();
        if out.status.success() {
            assert_eq!(
                got.len(),
                rest.len(),
                "oracle answered a different number of lines"
            );
            answers.extend(got.iter().map(|l| Some(l.to_string())));
        } else {
            let killed_by_signal = out.status.code().is_none();
            assert!(
                killed_by_signal && crashed.len() < 20,
                "oracle failed ({}) after {} answers:\n{}",
                out.status,
                got.len(),
                String::from_utf8_lossy(&out.stderr)
            );
            answers.extend(got.iter().map(|l| Some(l.to_string())));
            crashed.push(cases[answers.len()].0.clone());
            answers.push(None);
        }
    }
    (answers, crashed)
}

fn normalize(r: &Result<String, String>) -> Result<String, String> {
    match r {
        Ok(s) => Ok(s.trim().to_string()),
        Err(_) => Err("parse".into()),
    }
}
