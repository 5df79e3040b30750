//! The submit-description parser and macro expander (`glean submit FILE`,
//! and the station's expansion of what it receives).
//!
//! Invariants: no panic, no unbounded time or memory (the limits of
//! `gleaner_proto::limits` hold); what the parser accepts the station's own
//! check accepts too; a parsed submission survives its JSON encoding (the
//! CLI sends it so) and expands to the same jobs after it.

#![no_main]

use gleaner_proto::submit::{ClusterSubmission, SubmitContext, parse_submit};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

fuzz_target!(|data: &[u8]| {
    let Some(text) = gleaner_fuzz::text(data) else {
        return;
    };
    let env: BTreeMap<String, String> = [
        ("HOME", "/home/alice"),
        ("USER", "alice"),
        ("PATH", "/usr/bin:/bin"),
        ("N", "3"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let ctx = SubmitContext::new("fuzz.sub", "alice").with_env(env);
    let Ok(sub) = parse_submit(text, &ctx) else {
        return;
    };
    if let Err(e) = sub.check() {
        panic!("the parser accepted what the station refuses: {e}");
    }
    let jobs = match sub.expand(7) {
        Ok(jobs) => jobs,
        // The doc allows contrived failures with another cluster id than
        // the probe's (a number built from it that overflows).
        Err(_) => return,
    };
    assert_eq!(jobs.len(), sub.proc_count() as usize);
    let json = serde_json::to_vec(&sub).expect("a submission is always JSON");
    let again: ClusterSubmission =
        gleaner_fuzz::round_trip(&json).expect("a submission reads back");
    assert_eq!(again.expand(7).ok().as_ref(), Some(&jobs));
});
