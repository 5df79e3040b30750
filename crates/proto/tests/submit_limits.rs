//! Limits on what a submit file may make the parser and expander do
//! (issue 14, item 2): macro bombs are refused in milliseconds with bounded
//! memory, values no host can run are refused with the field and proc, and
//! a submission as received (`ClusterSubmission::check`) is held to the
//! parser's rules.

use gleaner_proto::limits::{MAX_ARG_BYTES, MAX_PROCS, MAX_SUBMIT_FILE_BYTES, MAX_VALUE_BYTES};
use gleaner_proto::submit::{
    ClusterSubmission, SubmitContext, SubmitErrorKind, SubmitErrors, parse_submit,
};
use std::time::{Duration, Instant};

fn parse(text: &str) -> Result<ClusterSubmission, SubmitErrors> {
    parse_submit(text, &SubmitContext::new("bomb.sub", "alice"))
}

fn errors(text: &str) -> SubmitErrors {
    match parse(text) {
        Ok(_) => panic!("expected errors"),
        Err(e) => e,
    }
}

/// `m1 = seed`, `m(i+1) = $(m i)$(m i)` up to `m levels`, `arguments =
/// $(m levels)`: 2^(levels-1) copies of the seed.
fn doubling(levels: usize, seed: &str) -> String {
    let mut t = format!("executable = /bin/echo\nm1 = {seed}\n");
    for i in 1..levels {
        t.push_str(&format!("m{} = $(m{i})$(m{i})\n", i + 1));
    }
    t.push_str(&format!("arguments = $(m{levels})\nqueue\n"));
    t
}

/// Peak resident memory of this process so far, KiB (`VmHWM`).
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn the_doubling_bomb_is_refused_quickly_naming_its_line() {
    for levels in [30, 40] {
        let text = doubling(levels, "xx");
        let before = peak_kib();
        let t0 = Instant::now();
        let e = errors(&text);
        let took = t0.elapsed();
        let grew = peak_kib().saturating_sub(before);
        println!(
            "doubling bomb, {levels} levels ({} bytes of file): refused in {:?}; peak memory \
             (VmHWM) {} KiB, grew {} KiB",
            text.len(),
            took,
            peak_kib(),
            grew
        );
        // Generous for a loaded machine; it takes milliseconds.
        assert!(took < Duration::from_secs(2), "took {took:?}");
        assert!(grew < 256 * 1024, "peak memory grew {grew} KiB");
        let args_line = levels + 2;
        let hit =
            e.0.iter()
                .find(|e| e.line == args_line)
                .unwrap_or_else(|| panic!("no error on line {args_line}: {e}"));
        assert!(
            matches!(&hit.kind, SubmitErrorKind::ValueTooLarge { key, .. } if key == "arguments")
                || matches!(&hit.kind, SubmitErrorKind::TooDeep(32)),
            "{hit}"
        );
        assert!(
            e.to_string()
                .contains(&format!("bomb.sub:{args_line}: arguments (through $(m"))
                || levels > 33,
            "{e}"
        );
    }
}

#[test]
fn a_chain_of_empty_macros_costs_one_expansion_per_macro() {
    // Two to the 30 references if each were expanded every time.
    let text = doubling(30, "");
    let t0 = Instant::now();
    let sub = parse(&text).expect("an empty value is fine");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(sub.expand(1).unwrap()[0].arguments.is_empty());
}

#[test]
fn a_value_just_within_the_limit_is_kept_whole() {
    // 2^19 copies of "xx" is exactly 1 MiB.
    let text = doubling(20, "xx").replace("arguments = ", "batch_name = ");
    let sub = parse(&text).unwrap();
    let d = &sub.expand(1).unwrap()[0];
    assert_eq!(
        d.batch_name.as_ref().map(String::len),
        Some(MAX_VALUE_BYTES)
    );
    let e = errors(&doubling(21, "xx").replace("arguments = ", "batch_name = "));
    assert!(
        e.to_string()
            .contains("bomb.sub:23: batch_name (through $(m21)) expands to more than 1 MiB"),
        "{e}"
    );
}

#[test]
fn impossible_values_are_refused_naming_field_and_proc() {
    let e = errors("executable = /bin/ec\0ho\nqueue\n");
    assert_eq!(
        e.to_string(),
        "bomb.sub:1: executable of proc 0: the path contains a NUL byte, which no program can receive"
    );

    let big = "y".repeat(MAX_ARG_BYTES + 1);
    let text = format!("executable = /bin/echo\narguments = $(x)\nqueue x in (a, b, c, {big})\n");
    let e = errors(&text);
    assert_eq!(e.0.len(), 1, "{e}");
    assert_eq!(e.0[0].line, 2);
    assert_eq!(
        e.0[0].kind.to_string(),
        "arguments of proc 3: argument 1 is 131072 bytes, more than the 131071-byte limit for one argument (MAX_ARG_STRLEN)"
    );

    let e = errors("executable = /bin/echo\nenvironment = \"A=1 B=x\0y\"\nqueue 3\n");
    assert_eq!(e.0.len(), 1, "reported once, not per proc: {e}");
    assert!(
        e.to_string()
            .starts_with("bomb.sub:2: environment of proc 0: variable \"B\" contains a NUL byte"),
        "{e}"
    );

    // Many arguments, each fine, too many together.
    let e = errors(&format!(
        "executable = /bin/echo\na = {}\narguments = $(a) $(a) $(a) $(a) $(a) $(a) $(a)\n\
         environment = \"B=$(a) C=$(a)\"\nqueue\n",
        "z".repeat(130_000)
    ));
    assert!(
        e.to_string().contains(
            "bomb.sub:3: arguments of proc 0: arguments and environment together are 1.1 MiB, more than the 1 MiB limit"
        ),
        "{e}"
    );
}

#[test]
fn whole_file_and_submission_limits() {
    let huge = format!(
        "executable = /bin/echo\n# {}\nqueue\n",
        "c".repeat(MAX_SUBMIT_FILE_BYTES as usize)
    );
    let e = errors(&huge);
    assert_eq!(
        e.to_string(),
        format!(
            "bomb.sub: the file is {} bytes, more than the {MAX_SUBMIT_FILE_BYTES}-byte limit for a submit file",
            huge.len()
        )
    );

    // One 500 KB item, queued 100 000 times: refused before it is copied.
    let t0 = Instant::now();
    let e = errors(&format!(
        "executable = /bin/echo\narguments = $(x)\nqueue 100000 x in ({})\n",
        "i".repeat(500_000)
    ));
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(
        e.to_string()
            .contains("bomb.sub:3: the submission takes more than 32 MiB"),
        "{e}"
    );

    let e = errors(&format!(
        "executable = /bin/echo\nqueue {}\n",
        MAX_PROCS + 1
    ));
    assert!(e.to_string().contains("more than 100000 jobs"), "{e}");
}

/// A parsed submission as JSON, to be tampered with as a raw client could.
fn raw(text: &str) -> serde_json::Value {
    serde_json::to_value(parse(text).unwrap()).unwrap()
}

fn from_raw(v: serde_json::Value) -> ClusterSubmission {
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_received_submission_is_held_to_the_parsers_rules() {
    // A command the CLI would have refused is refused when the station
    // expands the submission: one table of commands for both.
    let mut v = raw("executable = /bin/echo\nqueue\n");
    v["batches"][0]["vars"]["grid_resource"] =
        serde_json::json!({"name": "grid_resource", "value": "batch slurm", "line": 2});
    let e = from_raw(v).expand(7).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("bomb.sub:2: grid_resource is not supported: a grid-universe command"),
        "{e}"
    );

    // A key filed under another name.
    let mut v = raw("executable = /bin/echo\nqueue\n");
    v["batches"][0]["vars"]["executable"]["name"] = serde_json::json!("+Evil");
    assert!(from_raw(v).check().is_err());

    // More procs than one submission may have.
    let mut v = raw("executable = /bin/echo\nqueue\n");
    let one = v["batches"][0]["procs"][0].clone();
    v["batches"][0]["procs"] = serde_json::Value::Array(vec![one; MAX_PROCS as usize + 1]);
    let sub = from_raw(v);
    let e = sub.expand(1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "bomb.sub: invalid queue statement: more than 100000 jobs in one submission"
    );

    // A value larger than any value may be, as written.
    let mut v = raw("executable = /bin/echo\narguments = a\nqueue\n");
    v["batches"][0]["vars"]["arguments"]["value"] = serde_json::json!("a ".repeat(MAX_VALUE_BYTES));
    let e = from_raw(v).check().unwrap_err();
    assert!(
        e.to_string()
            .starts_with("bomb.sub:2: the value of arguments is 2 MiB, more than the 1 MiB limit"),
        "{e}"
    );

    // `queue $(n)`: n is referenced by the statement, not unknown.
    let sub = from_raw(raw("executable = /bin/echo\nn = 2\nqueue $(n)\n"));
    assert!(sub.check().is_ok());
    assert_eq!(sub.expand(1).unwrap().len(), 2);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// A doubling chain is kept whole when it fits and refused (never
        /// truncated, never slow) when it does not.
        #[test]
        fn doubling_fits_or_is_refused(levels in 1usize..=36, seed in "[a-z]{0,40}") {
            let text = doubling(levels, &seed);
            let t0 = Instant::now();
            let r = parse(&text);
            prop_assert!(t0.elapsed() < Duration::from_secs(3));
            let want = (seed.len() as u128) << (levels - 1);
            match r {
                Ok(sub) => {
                    prop_assert!(want <= MAX_VALUE_BYTES as u128);
                    let d = &sub.expand(1).unwrap()[0];
                    let got: usize = d.arguments.iter().map(String::len).sum();
                    prop_assert_eq!(got as u128, want);
                }
                Err(e) => prop_assert!(
                    want > MAX_ARG_BYTES as u128 || levels > 32,
                    "refused {} bytes: {}", want, e
                ),
            }
        }

        /// Whatever the references, no expanded value exceeds its limit.
        #[test]
        fn no_value_exceeds_its_limit(
            refs in prop::collection::vec((0usize..4, 0usize..6), 1..12),
            sizes in prop::collection::vec(0usize..400_000, 4),
        ) {
            let mut text = String::from("executable = /bin/echo\n");
            for (i, n) in sizes.iter().enumerate() {
                text.push_str(&format!("v{i} = {}\n", "q".repeat(*n)));
            }
            let mut b = String::new();
            for (v, times) in &refs {
                for _ in 0..*times {
                    b.push_str(&format!("$(v{v})"));
                }
            }
            text.push_str(&format!("batch_name = {b}x\nqueue 2\n"));
            if let Ok(sub) = parse(&text) {
                for d in sub.expand(7).unwrap() {
                    let n = d.batch_name.as_ref().map_or(0, String::len);
                    prop_assert!(n <= MAX_VALUE_BYTES);
                }
            }
        }
    }
}

#[test]
fn a_large_plain_cluster_is_within_every_limit() {
    // 100 000 procs with 12 keys, 10 of about 100 bytes: 100 MB of macro
    // text (of the 512 MiB the expander allows one submission), about
    // 190 MB of descriptions (of 256 MiB).
    let mut text = String::from("executable = /bin/echo\narguments = $(Process) $(pad)\n");
    text.push_str(&format!("pad = {}\n", "p".repeat(100)));
    for i in 0..9 {
        text.push_str(&format!("+Attr{i} = \"$(pad)\"\n"));
    }
    text.push_str("queue 100000\n");
    let t0 = Instant::now();
    let sub = parse(&text).unwrap();
    let parsed = t0.elapsed();
    let t1 = Instant::now();
    let jobs = sub.expand(3).unwrap();
    println!(
        "100 000 procs x 12 keys: parsed (with a trial expansion) in {parsed:?}, expanded in {:?}",
        t1.elapsed()
    );
    assert_eq!(jobs.len(), 100_000);
    assert_eq!(jobs[99_999].arguments[0], "99999");
}
