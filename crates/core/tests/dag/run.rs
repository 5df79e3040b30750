//! A DAG's run: DAGMan's node lifecycle and DAG endings, driven through
//! events and actions only; property tests over random DAGs.

use crate::sim::{Rec, Sim, spec};
use gleaner_core::dag::command::ScriptKind;
use gleaner_core::dag::config::DagConfig;
use gleaner_core::dag::run::{DagStatus, Exit, Run, RunState, Status};
use gleaner_core::dag::{apply_rescue, rescue};
use proptest::prelude::*;

const DIAMOND: &str =
    "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nJOB D d.sub\nPARENT A CHILD B C\nPARENT B C CHILD D\n";

fn sim(text: &str) -> Sim {
    Sim::new(spec(&[("x.dag", text)]), DagConfig::default(), 7)
}

#[test]
fn a_diamond_runs_in_dependency_order() {
    let mut s = sim(DIAMOND);
    assert_eq!(s.run(1000), Some(0));
    let subs = s.submits();
    assert_eq!(subs.first().map(String::as_str), Some("A"));
    assert_eq!(subs.last().map(String::as_str), Some("D"));
    assert_eq!(subs.len(), 4);
    assert_eq!(s.recs.last(), Some(&Rec::Finished(0, DagStatus::Ok)));
    assert_eq!(s.rescue, None);
}

/// HTCondor's job_dagman_final-H: a cycle is found when nothing more can
/// run; the FINAL node sees DAG_STATUS 5, and its success is the DAG's.
#[test]
fn a_cycle_ends_the_dag_with_dag_status_cycle() {
    let mut s = sim("JOB A a.sub\nJOB B1 b.sub\nJOB B2 b.sub\nFINAL C c.sub\n\
         SCRIPT PRE C pre.pl $DAG_STATUS\n\
         PARENT A CHILD B1\nPARENT B1 CHILD B2\nPARENT B2 CHILD B1\n");
    assert_eq!(s.run(1000), Some(0));
    assert_eq!(s.submits(), ["A", "C"]);
    assert_eq!(
        s.scripts(ScriptKind::Pre),
        [vec!["pre.pl".to_string(), "5".to_string()]]
    );
    // Without a FINAL node the DAG fails.
    let mut s = sim("JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\nPARENT B CHILD A\n");
    assert_eq!(s.run(1000), Some(1));
    assert!(s.submits().is_empty());
}

/// A DAG without nodes (HTCondor's job_dagman_noop_node-dummy.dag, a
/// NOOP sub-DAG's file) succeeds at once, as DAGMan's does.
#[test]
fn an_empty_dag_succeeds() {
    let mut s = sim("# nothing\n");
    assert_eq!(s.run(10), Some(0));
    assert!(s.submits().is_empty());
}

/// HTCondor's job_dagman_retry-B: PRE, job and POST failures, each retried.
#[test]
fn retries_rerun_the_whole_node() {
    let mut s = sim(
        "JOB A a.sub\nSCRIPT PRE A pre.pl $RETRY\nSCRIPT POST A post.pl $RETRY $RETURN\nRETRY A 3\n\
         JOB E foobar NOOP\nSCRIPT POST E post.pl $RETRY\nRETRY E 1\nPARENT A CHILD E\n",
    );
    s.scripts
        .insert(("A".into(), ScriptKind::Pre, 0), Exit::Code(1));
    s.jobs.insert(("A".into(), 1), vec![Exit::Code(1)]);
    s.scripts
        .insert(("A".into(), ScriptKind::Post, 1), Exit::Code(1));
    s.scripts
        .insert(("A".into(), ScriptKind::Post, 2), Exit::Code(1));
    s.scripts
        .insert(("E".into(), ScriptKind::Post, 0), Exit::Code(1));
    assert_eq!(s.run(1000), Some(0));
    let pre: Vec<Vec<String>> = s.scripts(ScriptKind::Pre);
    assert_eq!(pre.len(), 4, "{pre:?}");
    assert_eq!(pre[3], ["pre.pl", "3"]);
    let post = s.scripts(ScriptKind::Post);
    // A's POST after retries 1, 2, 3 ($RETURN 1 when its job failed), E's twice.
    assert!(
        post.contains(&vec!["post.pl".into(), "1".into(), "1".into()]),
        "{post:?}"
    );
    assert_eq!(s.submits().iter().filter(|n| *n == "A").count(), 3);
    assert_eq!(s.status("E"), Status::Done);
    let log = s.run.take_log().join("\n");
    assert!(log.contains("Retrying node A (retry #3 of 3)"), "{log}");
}

#[test]
fn pre_skip_unless_exit_and_always_run_post() {
    let mut s = sim(
        "JOB A a\nSCRIPT PRE A pre\nSCRIPT POST A post\nPRE_SKIP A 5\nJOB B b\nPARENT A CHILD B\n",
    );
    s.scripts
        .insert(("A".into(), ScriptKind::Pre, 0), Exit::Code(5));
    assert_eq!(s.run(1000), Some(0));
    assert!(!s.submits().contains(&"A".to_string()));
    assert!(s.scripts(ScriptKind::Post).is_empty());

    let mut s = sim("JOB A a\nRETRY A 5 UNLESS-EXIT 3\n");
    s.jobs.insert(("A".into(), 0), vec![Exit::Code(3)]);
    assert_eq!(s.run(1000), Some(1));
    assert_eq!(s.submits().len(), 1);

    let cfg = DagConfig {
        always_run_post: true,
        ..Default::default()
    };
    let mut s = Sim::new(
        spec(&[(
            "x.dag",
            "JOB A a\nSCRIPT PRE A pre\nSCRIPT POST A post $RETURN $PRE_SCRIPT_RETURN\n",
        )]),
        cfg,
        1,
    );
    s.scripts
        .insert(("A".into(), ScriptKind::Pre, 0), Exit::Code(2));
    assert_eq!(s.run(1000), Some(0), "the POST script decides");
    assert_eq!(
        s.scripts(ScriptKind::Post),
        vec![vec!["post".to_string(), "-1004".into(), "2".into()]]
    );
}

#[test]
fn abort_dag_on_writes_a_rescue_and_runs_the_final_node() {
    let mut s = sim(
        "JOB A a\nJOB B b\nJOB C c\nPARENT A CHILD C\nABORT-DAG-ON A 10 RETURN 4\n\
         FINAL F f\nSCRIPT PRE F final.sh $DAG_STATUS $FAILED_COUNT\n",
    );
    s.jobs.insert(("A".into(), 0), vec![Exit::Code(10)]);
    s.forever.push("B".into());
    s.scripts
        .insert(("F".into(), ScriptKind::Pre, 0), Exit::Code(0));
    let exit = s.run(1000);
    assert!(s.recs.contains(&Rec::Rescue));
    assert!(s.recs.contains(&Rec::Removed("B".into())), "{:?}", s.recs);
    assert_eq!(s.scripts(ScriptKind::Pre)[0][1], "3", "$DAG_STATUS = abort");
    // The FINAL node succeeded, and decides the DAG's success (DAGMan).
    assert_eq!(exit, Some(0));
    assert!(!s.submits().contains(&"C".to_string()));

    let mut s = sim("JOB A a\nJOB B b\nABORT-DAG-ON A 10 RETURN 4\n");
    s.jobs.insert(("A".into(), 0), vec![Exit::Code(10)]);
    s.forever.push("B".into());
    assert_eq!(s.run(1000), Some(4));
    assert_eq!(s.run.status(), DagStatus::Abort);
}

#[test]
fn failed_nodes_make_descendants_futile_except_through_weak_edges() {
    let mut s = sim(
        "JOB A a\nJOB B b\nJOB C c\nJOB D d\nPARENT A CHILD B\nWEAK PARENT A CHILD C\nPARENT B CHILD D\n",
    );
    s.jobs.insert(("A".into(), 0), vec![Exit::Code(1)]);
    assert_eq!(s.run(1000), Some(1));
    assert_eq!(s.status("B"), Status::Futile);
    assert_eq!(s.status("D"), Status::Futile);
    assert_eq!(s.status("C"), Status::Done);
    assert_eq!(s.run.status(), DagStatus::NodeFailed);
    let text = s.rescue.clone().unwrap();
    assert!(text.contains("DONE C\n"), "{text}");
    assert!(!text.contains("DONE B"), "{text}");
    assert!(
        text.contains("# Nodes that failed: 1\n#   A,<ENDLIST>"),
        "{text}"
    );
}

#[test]
fn final_node_sees_the_failure_and_can_rescue_the_dag() {
    let mut s = sim("JOB A a\nFINAL F f\nVARS F st=\"$(DAG_STATUS)\"\n");
    s.jobs.insert(("A".into(), 0), vec![Exit::Code(2)]);
    assert_eq!(s.run(1000), Some(0));
    let f = s.run.spec().find("F").unwrap();
    let vars = s.run.submit_vars(f, &Default::default());
    let st = vars.iter().find(|v| v.key == "DAG_STATUS").unwrap();
    assert_eq!(st.value, "2");
    assert!(
        s.recs.contains(&Rec::Rescue),
        "the failure wrote a rescue first"
    );
}

#[test]
fn throttles_hold() {
    let mut text = String::new();
    for i in 0..12 {
        text.push_str(&format!("JOB n{i} x\nSCRIPT PRE n{i} pre\n"));
        if i % 2 == 0 {
            text.push_str(&format!("CATEGORY n{i} even\n"));
        }
    }
    text.push_str("MAXJOBS even 1\n");
    let cfg = DagConfig {
        max_jobs_submitted: 3,
        max_pre_scripts: 2,
        ..Default::default()
    };
    let mut s = Sim::new(spec(&[("x.dag", &text)]), cfg, 3);
    assert_eq!(s.run(10_000), Some(0));
    assert!(s.max_queued <= 3, "{}", s.max_queued);
    assert!(s.max_pre <= 2, "{}", s.max_pre);
}

#[test]
fn deferred_scripts_and_failed_submissions() {
    let mut s = sim("JOB A a\nSCRIPT DEFER 4 60 PRE A pre\n");
    s.scripts
        .insert(("A".into(), ScriptKind::Pre, 0), Exit::Code(4));
    // The sim cannot change an outcome between runs: a script that always
    // says "defer" keeps the node waiting.
    let _ = s.run(50);
    assert!(s.scripts(ScriptKind::Pre).len() >= 2);
    assert_eq!(s.status("A"), Status::PreRun);

    let mut s = sim("JOB A a\nSCRIPT POST A post $RETURN\n");
    s.submit_failures.insert(("A".into(), 0), 99);
    assert_eq!(s.run(10_000), Some(0), "POST succeeded");
    assert_eq!(
        s.scripts(ScriptKind::Post),
        vec![vec!["post".to_string(), "-1001".into()]]
    );
}

#[test]
fn a_restored_run_reruns_interrupted_scripts_and_finishes_alike() {
    let spec = spec(&[(
        "x.dag",
        "JOB A a\nSCRIPT POST A post\nJOB B b\nPARENT A CHILD B\n",
    )]);
    let mut s = Sim::new(spec.clone(), DagConfig::default(), 5);
    // Run until A's POST script has been asked for.
    let _ = s.run(3);
    let state: RunState =
        serde_json::from_str(&serde_json::to_string(s.run.state()).unwrap()).unwrap();
    let mut r = Run::restore(spec, DagConfig::default(), state, s.now).unwrap();
    let acts = r.step(s.now);
    // Whatever was in flight is asked for again, nothing twice.
    assert!(!acts.is_empty() || r.finished().is_some() || r.queued_count() > 0);
}

#[test]
fn rescue_then_resume_completes_the_rest() {
    let text = "JOB A a\nJOB B b\nJOB C c\nPARENT A CHILD B\nPARENT B CHILD C\nRETRY B 1\n";
    let mut s = sim(text);
    s.jobs.insert(("B".into(), 0), vec![Exit::Code(1)]);
    s.jobs.insert(("B".into(), 1), vec![Exit::Code(1)]);
    assert_eq!(s.run(1000), Some(1));
    let r = s.rescue.clone().unwrap();
    let mut again = spec(&[("x.dag", text)]);
    apply_rescue(&mut again, "/w/x.dag.rescue001", &r).unwrap();
    let mut s2 = Sim::new(again, DagConfig::default(), 9);
    assert_eq!(s2.run(1000), Some(0));
    assert_eq!(s2.submits(), ["B", "C"]);
    assert_eq!(
        rescue::rescue_name("/w/x.dag", false, 1),
        "/w/x.dag.rescue001"
    );
}

/// A random DAG as text: edges from lower to higher index (acyclic), some
/// PRE/POST scripts, retries, NOOPs.
fn random_dag() -> impl Strategy<Value = (String, usize)> {
    (2usize..12).prop_flat_map(|n| {
        (
            Just(n),
            proptest::collection::vec((0..n, 0..n, 0u8..3), 0..n * 2),
            proptest::collection::vec((0u8..3, 0u32..3, any::<bool>(), any::<bool>()), n),
        )
            .prop_map(|(n, edges, nodes)| {
                let mut t = String::new();
                for (i, (scripts, retries, noop, cat)) in nodes.iter().enumerate() {
                    t.push_str(&format!(
                        "JOB n{i} x.sub{}\n",
                        if *noop { " NOOP" } else { "" }
                    ));
                    if *scripts & 1 == 1 {
                        t.push_str(&format!("SCRIPT PRE n{i} pre $RETRY\n"));
                    }
                    if *scripts & 2 == 2 {
                        t.push_str(&format!("SCRIPT POST n{i} post $RETURN\n"));
                    }
                    if *retries > 0 {
                        t.push_str(&format!("RETRY n{i} {retries}\n"));
                    }
                    if *cat {
                        t.push_str(&format!("CATEGORY n{i} c\n"));
                    }
                }
                t.push_str("MAXJOBS c 2\n");
                for (a, b, k) in edges {
                    if a < b {
                        let kw = ["PARENT", "WEAK PARENT", "PRIORITY_PARENT"][k as usize];
                        t.push_str(&format!("{kw} n{a} CHILD n{b}\n"));
                    }
                }
                (t, n)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any DAG, any outcomes: no node starts before its strong parents are
    /// done; a node's jobs are submitted at most retries + 1 times; the run
    /// ends; throttles hold; a failed run's rescue, resubmitted with every
    /// outcome good, runs exactly the nodes that were not done.
    #[test]
    fn runs_keep_dagman_rules((text, n) in random_dag(), fails in proptest::collection::vec((0usize..12, 0u32..3, 0u8..3), 0..6), seed in any::<u64>()) {
        let spec0 = spec(&[("x.dag", &text)]);
        let cfg = DagConfig {
            max_jobs_submitted: 3,
            ..Default::default()
        };
        let mut s = Sim::new(spec0.clone(), cfg.clone(), seed);
        for (node, retry, what) in &fails {
            let name = format!("n{}", node % n);
            match what {
                0 => { s.jobs.insert((name, *retry), vec![Exit::Code(1)]); }
                1 => { s.scripts.insert((name, ScriptKind::Pre, *retry), Exit::Code(1)); }
                _ => { s.scripts.insert((name, ScriptKind::Post, *retry), Exit::Signal(9)); }
            }
        }
        let exit = s.run(100_000);
        prop_assert!(exit.is_some(), "the run did not end");
        prop_assert!(s.max_queued <= 3);
        // Order: a node's first start comes after its strong parents' Done.
        let mut done_at = std::collections::HashMap::new();
        for (k, r) in s.recs.iter().enumerate() {
            if let Rec::Done(name) = r { done_at.entry(name.clone()).or_insert(k); }
        }
        for (k, r) in s.recs.iter().enumerate() {
            let name = match r {
                Rec::Submit(name, _) => name,
                Rec::Script(name, ScriptKind::Pre, _) => name,
                _ => continue,
            };
            let i = spec0.find(name).unwrap();
            for p in &spec0.nodes[i].parents {
                if p.kind == gleaner_core::dag::EdgeKind::Strong {
                    let pn = &spec0.nodes[p.node as usize].name;
                    prop_assert!(done_at.get(pn).is_some_and(|&d| d < k), "{} started before {} was done", name, pn);
                }
            }
        }
        for (i, node) in spec0.nodes.iter().enumerate() {
            let subs = s.submits().iter().filter(|x| **x == node.name).count() as u32;
            prop_assert!(subs <= node.retries + 1, "{} submitted {} times", node.name, subs);
            let st = s.run.node(i).unwrap().status;
            prop_assert!(st.is_final() || st == Status::NotReady, "{} ended {:?}", node.name, st);
        }
        if exit == Some(0) {
            prop_assert!(s.rescue.is_none());
        } else if let Some(r) = s.rescue.clone() {
            let done: Vec<String> = (0..n).map(|i| format!("n{i}")).filter(|x| s.status(x) == Status::Done).collect();
            let mut again = spec0.clone();
            apply_rescue(&mut again, "r", &r).unwrap();
            let mut s2 = Sim::new(again, cfg, seed ^ 1);
            prop_assert_eq!(s2.run(100_000), Some(0));
            for name in s2.submits() {
                prop_assert!(!done.contains(&name), "{} ran again", name);
            }
            for i in 0..n {
                prop_assert_eq!(s2.status(&format!("n{i}")), Status::Done);
            }
        }
    }
}
