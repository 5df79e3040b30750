//! The DAG parser and rescue files (`glean dag submit`, and the station's
//! DAG manager, which parses both again on every restart).
//!
//! Invariants: no panic; a parsed rescue record prints and reads back to
//! itself; a parsed DAG can be run to its end (every node started and
//! finished in turn, some failing) without an engine error, ends complete
//! or stuck, and its rescue record applies to a fresh copy of the DAG and
//! gives the same record back.

#![no_main]

use gleaner_core::dag::{Rescue, RescueRetries, parse_dag};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = gleaner_fuzz::text(data) else {
        return;
    };
    if Rescue::looks_like(text) {
        if let Ok(r) = Rescue::parse(text) {
            let printed = r.to_text();
            match Rescue::parse(&printed) {
                Ok(again) => assert_eq!(r, again, "rescue record changed through {printed:?}"),
                Err(e) => panic!("rescue record printed as {printed:?} does not parse: {e}"),
            }
        }
        return;
    }
    let Ok(mut dag) = parse_dag(text) else {
        return;
    };
    // Which attempts fail: a pattern taken from the input, so that the
    // fuzzer steers it too.
    let pattern = data
        .iter()
        .fold(0u64, |h, &b| h.rotate_left(5) ^ u64::from(b))
        | 1;
    let mut step = 0u32;
    let limit = 8 * dag.len() + 16;
    while (step as usize) < limit {
        let Some(&id) = dag.eligible().first() else {
            break;
        };
        dag.on_started(id).expect("an eligible node starts");
        let ok = (pattern >> (step % 64)) & 1 == 1;
        dag.on_finished(id, ok).expect("a started node finishes");
        step += 1;
    }
    if dag.eligible().is_empty() {
        assert!(
            dag.is_complete() || dag.is_stuck(),
            "nothing eligible or running, yet neither complete nor stuck"
        );
    }
    let rescue = dag.rescue();
    let printed = rescue.to_text();
    assert_eq!(Rescue::parse(&printed).ok().as_ref(), Some(&rescue));
    let mut fresh = parse_dag(text).expect("the same text parses again");
    if let Err(e) = fresh.apply_rescue(&rescue, RescueRetries::Keep) {
        panic!("the DAG's own rescue record does not apply to it: {e}");
    }
    assert_eq!(fresh.rescue(), rescue);
    let _ = fresh.blocked();
});
