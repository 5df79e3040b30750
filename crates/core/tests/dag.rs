//! Job DAGs: dependence kinds, eligibility order, retries, the DAG file
//! parser and rescue records (spec dmw-neeracher.md §1.1, §1.6, §2.3,
//! R1–R3, R9, R18; Neeracher 1998 L391, L998–1008, L1016, L2796).

use gleaner_core::dag::{
    Dag, DagBuilder, DagError, Dependence, NodeState, Order, ParseErrorKind, Rescue, RescueRetries,
    must_start_regardless_of_load, parse_dag,
};
use proptest::prelude::*;

const GOOD: &str = r#"
# A small experiment: one process simulation feeding two device runs.
JOB p1 dios.sub
JOB d1 dessis.sub
job d2 dessis.sub
JOB x  extract.sub

PARENT p1 CHILD d1 d2
Parent d1 d2 CHILD x
PRIORITY_PARENT d1 CHILD d2
RETRY d1 2
VARS d1 vb="0.5" label="say \"hi\" \\ bye"
VARS d2 vb="1.0"
"#;

#[test]
fn parses_a_good_file() {
    let dag = parse_dag(GOOD).unwrap();
    assert_eq!(dag.len(), 4);
    let d1 = dag.id("d1").unwrap();
    let d2 = dag.id("d2").unwrap();
    let p1 = dag.id("p1").unwrap();
    let x = dag.id("x").unwrap();
    let n = dag.node(d1).unwrap();
    assert_eq!(n.payload.submit, "dessis.sub");
    assert_eq!(n.retries, 2);
    assert_eq!(n.payload.vars["vb"], "0.5");
    assert_eq!(n.payload.vars["label"], r#"say "hi" \ bye"#);
    assert_eq!(dag.data_parents(d2), &[p1]);
    assert_eq!(dag.priority_parents(d2), &[d1]);
    assert_eq!(dag.data_parents(x), &[d1, d2]);
    assert_eq!(dag.eligible(), vec![p1]);
}

fn errors(text: &str) -> Vec<(usize, ParseErrorKind)> {
    match parse_dag(text) {
        Ok(_) => panic!("expected errors"),
        Err(e) => e.0.into_iter().map(|e| (e.line, e.kind)).collect(),
    }
}

#[test]
fn reports_every_error_with_its_line() {
    let text = "\
JOB a a.sub
JOB a b.sub
JOB b
PARENT a CHILD zz
FOO bar
RETRY a many
RETRY b 1
VARS a 9x=\"1\"
VARS a k=\"unterminated
PARENT a b
JOB c c.sub
RETRY c 1
RETRY c 2
";
    let errs = errors(text);
    let lines: Vec<usize> = errs.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 6, 7, 8, 9, 10, 13]);
    assert_eq!(
        errs[0].1,
        ParseErrorKind::DuplicateNode {
            name: "a".into(),
            first_line: 1
        }
    );
    assert_eq!(errs[2].1, ParseErrorKind::UnknownNode("zz".into()));
    assert_eq!(errs[3].1, ParseErrorKind::UnknownKeyword("FOO".into()));
    assert_eq!(errs[5].1, ParseErrorKind::UnknownNode("b".into()));
    assert!(matches!(
        errs[9].1,
        ParseErrorKind::Duplicate { first_line: 12, .. }
    ));
    // The message carries the line number.
    let msg = parse_dag(text).unwrap_err().to_string();
    assert!(
        msg.starts_with("line 2: node \"a\" already declared on line 1"),
        "{msg}"
    );
}

#[test]
fn reserved_names_and_empty_files() {
    let errs = errors("JOB child x.sub\n");
    assert_eq!(errs, vec![(1, ParseErrorKind::InvalidName("child".into()))]);
    let dag = parse_dag("# nothing\n\n").unwrap();
    assert!(dag.is_empty());
    assert!(dag.is_complete());
    assert!(!dag.is_stuck());
}

#[test]
fn cycle_is_rejected_and_named() {
    let text = "JOB a x\nJOB b x\nJOB c x\nPARENT a CHILD b\nPARENT b CHILD c\nPARENT c CHILD a\n";
    let errs = errors(text);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].0, 6, "reported at the line closing the cycle");
    assert_eq!(errs[0].1, ParseErrorKind::Cycle("a -> b -> c -> a".into()));
    let msg = parse_dag(text).unwrap_err().to_string();
    assert_eq!(msg, "line 6: dependency cycle: a -> b -> c -> a");
}

#[test]
fn cycle_through_priority_edges_is_rejected() {
    // Data a->b, priority b->a: neither alone is cyclic, together they are
    // (δ = δ^d ∪ δ^p, L1006–1008).
    let text = "JOB a x\nJOB b x\nPARENT a CHILD b\nPRIORITY_PARENT b CHILD a\n";
    let errs = errors(text);
    assert_eq!(errs, vec![(4, ParseErrorKind::Cycle("a -> b -> a".into()))]);

    let mut b = DagBuilder::new();
    let a = b.add_node("a", (), 0).unwrap();
    assert!(matches!(
        b.add_node("a", (), 0),
        Err(DagError::DuplicateNode(_))
    ));
    b.add_edge(a, a, Dependence::Priority).unwrap();
    let err = b.build().unwrap_err();
    assert_eq!(err, DagError::Cycle(vec!["a".into(), "a".into()]));
    assert_eq!(err.to_string(), "dependency cycle: a -> a");
}

#[test]
fn priority_dependence_waits_for_start_only() {
    let mut b = DagBuilder::new();
    let p = b.add_node("p", (), 0).unwrap();
    let c = b.add_node("c", (), 0).unwrap();
    b.add_edge(p, c, Dependence::Priority).unwrap();
    let mut dag = b.build().unwrap();
    assert_eq!(dag.state(c), Some(NodeState::Waiting));
    assert_eq!(dag.eligible(), vec![p]);
    dag.on_started(p).unwrap();
    assert_eq!(dag.eligible(), vec![c], "started is enough");
    // Even a permanent failure of the parent keeps c eligible: it did start.
    assert_eq!(
        dag.on_finished(p, false).unwrap(),
        NodeState::Failed { attempts: 1 }
    );
    assert_eq!(dag.eligible(), vec![c]);
}

#[test]
fn data_dependence_needs_success() {
    let mut b = DagBuilder::new();
    let p = b.add_node("p", (), 0).unwrap();
    let c = b.add_node("c", (), 0).unwrap();
    let d = b.add_node("d", (), 0).unwrap();
    b.add_edge(p, c, Dependence::Data).unwrap();
    b.add_edge(c, d, Dependence::Priority).unwrap();
    let mut dag = b.build().unwrap();
    dag.on_started(p).unwrap();
    assert!(dag.eligible().is_empty());
    assert!(!dag.is_stuck());
    dag.on_finished(p, false).unwrap();
    assert!(dag.eligible().is_empty());
    assert!(dag.is_stuck());
    assert_eq!(dag.blocked(), vec![c, d]);
    assert!(!dag.is_complete());
}

#[test]
fn state_errors() {
    let mut dag = parse_dag("JOB a x\nJOB b x\nPARENT a CHILD b\n").unwrap();
    assert!(matches!(dag.on_started(1), Err(DagError::NotReady { .. })));
    assert!(matches!(
        dag.on_finished(0, true),
        Err(DagError::NotRunning { .. })
    ));
    assert!(matches!(dag.on_started(7), Err(DagError::UnknownNodeId(7))));
    dag.on_started(0).unwrap();
    assert!(matches!(dag.on_started(0), Err(DagError::NotReady { .. })));
}

#[test]
fn retries_send_failed_nodes_back_to_ready() {
    let mut dag = parse_dag("JOB a x\nJOB b x\nPARENT a CHILD b\nRETRY a 2\n").unwrap();
    let (a, b) = (0, 1);
    for attempt in 1..=2 {
        dag.on_started(a).unwrap();
        assert_eq!(dag.on_finished(a, false).unwrap(), NodeState::Ready);
        assert_eq!(dag.failures(a), Some(attempt));
        assert_eq!(dag.eligible(), vec![a]);
    }
    dag.on_started(a).unwrap();
    assert_eq!(
        dag.on_finished(a, false).unwrap(),
        NodeState::Failed { attempts: 3 }
    );
    assert!(dag.is_stuck());
    assert_eq!(dag.blocked(), vec![b]);

    // A success on the last attempt releases the child.
    let mut dag = parse_dag("JOB a x\nJOB b x\nPARENT a CHILD b\nRETRY a 1\n").unwrap();
    dag.on_started(a).unwrap();
    dag.on_finished(a, false).unwrap();
    dag.on_started(a).unwrap();
    assert_eq!(dag.on_finished(a, true).unwrap(), NodeState::Done);
    assert_eq!(dag.eligible(), vec![b]);
}

/// LargeParallel in miniature: P jobs each feeding two D jobs (L2616).
fn fan(order: Order) -> Dag<()> {
    let mut b = DagBuilder::new();
    for i in 0..3 {
        b.add_node(format!("p{i}"), (), 0).unwrap();
    }
    for i in 0..3 {
        for v in 0..2 {
            let d = b.add_node(format!("d{i}_{v}"), (), 0).unwrap();
            b.add_edge(i, d, Dependence::Data).unwrap();
        }
    }
    let mut dag = b.build().unwrap();
    dag.set_order(order);
    dag
}

#[test]
fn depth_first_prefers_downstream_jobs() {
    let mut dag = fan(Order::DepthFirst);
    assert_eq!(dag.order(), Order::DepthFirst);
    assert_eq!(dag.eligible(), vec![0, 1, 2]);
    dag.on_started(0).unwrap();
    dag.on_finished(0, true).unwrap();
    // The device runs of p0 come before the remaining process runs.
    let names: Vec<&str> = dag
        .eligible()
        .into_iter()
        .map(|i| dag.node(i).unwrap().name.as_str())
        .collect();
    assert_eq!(names, vec!["d0_0", "d0_1", "p1", "p2"]);

    let mut dag = fan(Order::BreadthFirst);
    dag.on_started(0).unwrap();
    dag.on_finished(0, true).unwrap();
    let names: Vec<&str> = dag
        .eligible()
        .into_iter()
        .map(|i| dag.node(i).unwrap().name.as_str())
        .collect();
    assert_eq!(names, vec!["p1", "p2", "d0_0", "d0_1"]);
}

#[test]
fn rescue_round_trip_resumes_where_it_stopped() {
    let text =
        "JOB a x\nJOB b x\nJOB c x\nJOB d x\nPARENT a CHILD b c\nPARENT b c CHILD d\nRETRY c 3\n";
    let mut dag = parse_dag(text).unwrap();
    let (a, b, c, d) = (0, 1, 2, 3);
    dag.on_started(a).unwrap();
    dag.on_finished(a, true).unwrap();
    dag.on_started(b).unwrap();
    dag.on_finished(b, true).unwrap();
    dag.on_started(c).unwrap();
    dag.on_finished(c, false).unwrap();
    dag.on_started(c).unwrap(); // running when the DAG is stopped
    let rescue = dag.rescue();
    let textual = rescue.to_text();
    assert_eq!(
        textual,
        "# Gleaner DAG rescue file, format 1\nDONE a\nDONE b\nATTEMPTS c 1\n"
    );
    let back = Rescue::parse(&textual).unwrap();
    assert_eq!(back, rescue);
    let json = serde_json::to_string(&rescue).unwrap();
    assert_eq!(serde_json::from_str::<Rescue>(&json).unwrap(), rescue);

    let mut resumed = parse_dag(text).unwrap();
    resumed.apply_rescue(&back, RescueRetries::Keep).unwrap();
    assert_eq!(resumed.state(a), Some(NodeState::Done));
    assert_eq!(resumed.state(b), Some(NodeState::Done));
    assert_eq!(resumed.failures(c), Some(1));
    assert_eq!(resumed.eligible(), vec![c]);
    // c has 2 retries left: fail twice more, then it is final.
    for _ in 0..2 {
        resumed.on_started(c).unwrap();
        assert_eq!(resumed.on_finished(c, false).unwrap(), NodeState::Ready);
    }
    resumed.on_started(c).unwrap();
    assert_eq!(
        resumed.on_finished(c, false).unwrap(),
        NodeState::Failed { attempts: 4 }
    );
    assert_eq!(resumed.blocked(), vec![d]);

    // Resetting retries gives c a fresh budget.
    let mut fresh = parse_dag(text).unwrap();
    fresh.apply_rescue(&back, RescueRetries::Reset).unwrap();
    assert_eq!(fresh.failures(c), Some(0));
    // Resuming a completed node set finishes the DAG.
    fresh.on_started(c).unwrap();
    fresh.on_finished(c, true).unwrap();
    fresh.on_started(d).unwrap();
    fresh.on_finished(d, true).unwrap();
    assert!(fresh.is_complete());
}

#[test]
fn rescue_errors() {
    let text = "JOB a x\nJOB b x\nPARENT a CHILD b\n";
    let errs = Rescue::parse("DONE a\nDONE\nATTEMPTS a x\nBOGUS\nDONE a\n").unwrap_err();
    let lines: Vec<usize> = errs.0.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![2, 3, 4, 5]);

    let mut dag = parse_dag(text).unwrap();
    let r = Rescue::parse("DONE zz\n").unwrap();
    assert_eq!(
        dag.apply_rescue(&r, RescueRetries::Keep),
        Err(DagError::UnknownNode("zz".into()))
    );
    let r = Rescue::parse("DONE b\n").unwrap();
    assert!(matches!(
        dag.apply_rescue(&r, RescueRetries::Keep),
        Err(DagError::RescueInconsistent { .. })
    ));
    assert_eq!(dag.state(1), Some(NodeState::Waiting), "unchanged on error");
    dag.on_started(0).unwrap();
    let r = Rescue::parse("DONE a\n").unwrap();
    assert_eq!(
        dag.apply_rescue(&r, RescueRetries::Keep),
        Err(DagError::RescueAfterStart)
    );
}

#[test]
fn progress_guarantee_helper() {
    assert!(must_start_regardless_of_load(1, 0));
    assert!(must_start_regardless_of_load(10, 0));
    assert!(!must_start_regardless_of_load(0, 0));
    assert!(!must_start_regardless_of_load(3, 1));
}

/// A random DAG: edges only go from lower to higher index, so it is acyclic.
fn random_dag() -> impl Strategy<Value = (usize, Vec<(usize, usize, bool)>, Vec<u32>)> {
    (1usize..14).prop_flat_map(|n| {
        (
            Just(n),
            proptest::collection::vec((0..n, 0..n, any::<bool>()), 0..n * 2),
            proptest::collection::vec(0u32..3, n),
        )
    })
}

proptest! {
    /// For random DAGs and random completion orders, a node is never
    /// eligible before its data parents are Done or its priority parents
    /// started (R1, R2); with no failures every node eventually runs (the
    /// completion guarantee, R3); with failures the run ends complete or stuck.
    #[test]
    fn eligibility_respects_both_dependence_kinds(
        (n, raw_edges, retries) in random_dag(),
        steps in proptest::collection::vec((any::<u8>(), any::<u16>(), 0u8..10), 0..300),
        failures_allowed in any::<bool>(),
        breadth in any::<bool>(),
    ) {
        let mut b = DagBuilder::new();
        for (i, &r) in retries.iter().enumerate() {
            b.add_node(format!("n{i}"), (), r).unwrap();
        }
        for &(x, y, data) in &raw_edges {
            if x < y {
                let dep = if data { Dependence::Data } else { Dependence::Priority };
                b.add_edge(x, y, dep).unwrap();
            }
        }
        let mut dag = b.build().unwrap();
        dag.set_order(if breadth { Order::BreadthFirst } else { Order::DepthFirst });

        let check = |dag: &Dag<()>| -> Result<(), TestCaseError> {
            for e in dag.eligible() {
                for &p in dag.data_parents(e) {
                    prop_assert_eq!(dag.state(p), Some(NodeState::Done));
                }
                for &p in dag.priority_parents(e) {
                    prop_assert_eq!(dag.started(p), Some(true));
                }
            }
            Ok(())
        };

        let mut running: Vec<usize> = Vec::new();
        let mut steps = steps.into_iter();
        loop {
            check(&dag)?;
            let eligible = dag.eligible();
            if eligible.is_empty() && running.is_empty() {
                break;
            }
            let (action, pick, fail) = steps.next().unwrap_or((0, 0, 9));
            let start = running.is_empty() || (!eligible.is_empty() && action % 2 == 0);
            if start {
                let id = eligible[pick as usize % eligible.len()];
                dag.on_started(id).unwrap();
                running.push(id);
            } else {
                let k = pick as usize % running.len();
                let id = running.swap_remove(k);
                let ok = !(failures_allowed && fail == 0);
                dag.on_finished(id, ok).unwrap();
            }
        }
        if failures_allowed {
            prop_assert!(dag.is_complete() || dag.is_stuck());
        } else {
            prop_assert!(dag.is_complete());
        }
        prop_assert_eq!(n, dag.len());
    }

    /// A back edge added to a random DAG is always reported as a cycle whose
    /// consecutive names are real edges.
    #[test]
    fn cycles_are_always_found((n, raw_edges, _r) in random_dag(), back in any::<(u8, u8)>()) {
        prop_assume!(n >= 1);
        let mut b: DagBuilder<()> = DagBuilder::new();
        for i in 0..n {
            b.add_node(format!("n{i}"), (), 0).unwrap();
        }
        let mut edges: Vec<(usize, usize)> = raw_edges.iter().filter(|e| e.0 < e.1).map(|e| (e.0, e.1)).collect();
        // Chain lo..=hi forward, then hi -> lo closes a cycle.
        let (lo, hi) = {
            let x = back.0 as usize % n;
            let y = back.1 as usize % n;
            (x.min(y), x.max(y))
        };
        for i in lo..hi {
            edges.push((i, i + 1));
        }
        edges.push((hi, lo));
        for &(x, y) in &edges {
            b.add_edge(x, y, Dependence::Data).unwrap();
        }
        match b.build() {
            Err(DagError::Cycle(path)) => {
                prop_assert!(path.len() >= 2);
                prop_assert_eq!(path.first(), path.last());
                for w in path.windows(2) {
                    let x: usize = w[0][1..].parse().unwrap();
                    let y: usize = w[1][1..].parse().unwrap();
                    prop_assert!(edges.contains(&(x, y)), "{} -> {} is not an edge", x, y);
                }
            }
            other => prop_assert!(false, "expected a cycle, got {:?}", other.map(|d| d.len())),
        }
    }
}

/// Lines built from the format's own vocabulary, to reach deep parser paths.
fn dagish_line() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        Just("JOB".to_string()),
        Just("PARENT".to_string()),
        Just("PRIORITY_PARENT".to_string()),
        Just("CHILD".to_string()),
        Just("RETRY".to_string()),
        Just("VARS".to_string()),
        Just("DONE".to_string()),
        Just("ATTEMPTS".to_string()),
        Just("#".to_string()),
        Just("k=\"v\"".to_string()),
        Just("k=\"v".to_string()),
        Just("\\\"".to_string()),
        "[a-c]",
        "[0-9]{1,3}",
        ".{0,4}",
    ];
    proptest::collection::vec(word, 0..7).prop_map(|w| w.join(" "))
}

proptest! {
    /// Neither parser panics on any input, and every error has a line number
    /// inside the file (0 is never used for text errors).
    #[test]
    fn parsers_never_panic(lines in proptest::collection::vec(dagish_line(), 0..20), raw in ".{0,200}") {
        let text = lines.join("\n");
        let n = text.lines().count();
        if let Err(e) = parse_dag(&text) {
            prop_assert!(!e.0.is_empty());
            for err in &e.0 {
                prop_assert!(err.line >= 1 && err.line <= n, "line {} of {}", err.line, n);
            }
        }
        if let Err(e) = Rescue::parse(&text) {
            prop_assert!(!e.0.is_empty());
        }
        let _ = parse_dag(&raw);
        let _ = Rescue::parse(&raw);
    }
}

/// A rescue record names its DAG file (`DAG path`, the rest of the line),
/// and is told apart from a DAG file by its first statement.
#[test]
fn rescue_names_its_dag_file() {
    let r = Rescue {
        dag: Some("/home/me/my runs/big.dag".into()),
        done: ["a".to_string()].into(),
        ..Rescue::default()
    };
    let text = r.to_text();
    assert_eq!(
        text,
        "# Gleaner DAG rescue file, format 1\nDAG /home/me/my runs/big.dag\nDONE a\n"
    );
    assert_eq!(Rescue::parse(&text).unwrap(), r);
    assert!(Rescue::looks_like(&text));
    assert!(Rescue::looks_like("DONE a\n"));
    assert!(!Rescue::looks_like("# c\nJOB a a.sub\n"));
    assert!(!Rescue::looks_like(""));
    let errs = Rescue::parse("DAG a.dag\nDAG b.dag\nDAG\n").unwrap_err();
    let lines: Vec<usize> = errs.0.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![2, 3]);
    // Without a DAG line the JSON form stays as it was.
    let plain = Rescue::default();
    assert_eq!(
        serde_json::to_string(&plain).unwrap(),
        r#"{"done":[],"attempts":{}}"#
    );
}
