//! HTCondor's DAG language (`gleaner_core::dag::load`) and DAGMan's run of
//! it (`gleaner_core::dag::run`): what `glean dag submit` and the station's
//! DAG manager read, and the state machine the manager drives.
//!
//! The input is split at NUL bytes into files: the first is the DAG file
//! `/d/x.dag`, the others `/d/f1` … (for INCLUDE, SPLICE, rescue files).
//! Invariants: no panic; a loaded DAG runs to its end when every script
//! and job ends (failing in a pattern the input chooses) without getting
//! stuck; its rescue DAG loads over a fresh copy of the DAG, and that copy
//! runs to its end too.

#![no_main]

use gleaner_core::dag::config::DagConfig;
use gleaner_core::dag::run::{Action, Event, Exit, JobChange, Run};
use gleaner_core::dag::{LoadOptions, apply_rescue, load, rescue};
use gleaner_core::time::{Dur, Time};
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;

/// Runs `run` to its end; scripts and jobs fail where `pattern` says.
/// Returns the exit code, or `None` if it did not end in the allowed
/// number of steps.
fn drive(run: &mut Run, pattern: u64) -> Option<(i32, Option<String>)> {
    let mut now = Time::from_secs(1_000);
    let mut queue: Vec<Action> = run.step(now);
    let mut rescue_text = None;
    let mut k = 0u32;
    for _ in 0..20_000 {
        if let Some(x) = run.finished() {
            return Some((x, rescue_text));
        }
        let Some(a) = queue.pop() else {
            now += Dur::from_secs(70);
            queue = run.step(now);
            if queue.is_empty() && run.finished().is_none() {
                // Nothing to do and not over: deferrals wait; give time.
                now += Dur::from_secs(4000);
                queue = run.step(now);
                if queue.is_empty() {
                    return run.finished().map(|x| (x, rescue_text));
                }
            }
            continue;
        };
        k = k.wrapping_add(1);
        let fail = (pattern >> (k % 64)) & 1 == 1;
        let ev = match a {
            Action::RunScript { node, kind, .. } => vec![Event::ScriptExited {
                node,
                kind,
                exit: if fail { Exit::Code(1) } else { Exit::Code(0) },
            }],
            Action::Submit { node } => {
                let mut v = vec![Event::Submitted {
                    node,
                    cluster: u64::from(k),
                    procs: 1,
                }];
                v.push(Event::Job {
                    node,
                    proc: 0,
                    change: JobChange::Ended(if fail { Exit::Code(3) } else { Exit::Code(0) }),
                });
                v
            }
            Action::RemoveJobs { node, .. } => vec![Event::Job {
                node,
                proc: 0,
                change: JobChange::Aborted,
            }],
            Action::WriteRescue => {
                rescue_text = Some(rescue::rescue_text(run, "/d/x.dag", 0));
                vec![]
            }
            Action::KillScript { node, kind } => vec![Event::ScriptExited {
                node,
                kind,
                exit: Exit::Signal(9),
            }],
            Action::SavePoint { .. } | Action::Finished { .. } => vec![],
        };
        for e in ev {
            queue.extend(run.apply(e, now));
        }
        queue.extend(run.step(now));
    }
    None
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = gleaner_fuzz::text(data) else {
        return;
    };
    let mut files: HashMap<String, String> = HashMap::new();
    for (i, part) in text.split('\0').enumerate() {
        let name = if i == 0 {
            "/d/x.dag".to_string()
        } else {
            format!("/d/f{i}")
        };
        files.insert(name, part.to_string());
    }
    let mut read = |p: &str| files.get(p).cloned().ok_or_else(|| "no such file".to_string());
    let Ok(spec) = load(&["x.dag".to_string()], &LoadOptions::new("/d"), &mut read) else {
        return;
    };
    if spec.nodes.len() > 300 {
        return;
    }
    let pattern = data.iter().fold(0u64, |h, &b| h.rotate_left(5) ^ u64::from(b));
    let mut cfg = DagConfig::default();
    cfg.max_pre_scripts = 1 + (pattern % 3) as u32;
    cfg.max_jobs_submitted = (pattern % 4) as u32;
    let mut run = Run::new(spec.clone(), cfg.clone(), 1, Time::from_secs(1_000));
    let Some((exit, rescue_text)) = drive(&mut run, pattern) else {
        // Only scripts deferred forever may keep a run going.
        assert!(
            spec.nodes
                .iter()
                .any(|n| n.scripts.values().any(|s| s.defer.is_some())),
            "the run never ended"
        );
        return;
    };
    if exit != 0
        && let Some(r) = rescue_text
    {
        let mut again = spec.clone();
        if let Err(e) = apply_rescue(&mut again, "/d/x.dag.rescue001", &r) {
            panic!("the DAG's own rescue does not load over it: {e}\n{r}");
        }
        let mut run2 = Run::new(again, cfg, 2, Time::from_secs(1_000));
        let _ = drive(&mut run2, 0);
    }
});
