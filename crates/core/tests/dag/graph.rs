//! DMW's dependence graph: dependence kinds, eligibility order, retries
//! and progress records (spec dmw-neeracher.md §1.1, §1.6, §2.3, R1–R3,
//! R9, R18; Neeracher 1998 L391, L998–1008, L1016, L2796).

use gleaner_core::dag::{
    Dag, DagBuilder, DagError, Dependence, NodeState, Order, Progress, RescueRetries,
    must_start_regardless_of_load,
};
use proptest::prelude::*;

/// A graph from node names, (parent, child, kind) edges and retries.
fn build(nodes: &[&str], edges: &[(&str, &str, Dependence)], retries: &[(&str, u32)]) -> Dag<()> {
    let mut b = DagBuilder::new();
    for n in nodes {
        let r = retries.iter().find(|x| x.0 == *n).map_or(0, |x| x.1);
        b.add_node(*n, (), r).unwrap();
    }
    for (p, c, k) in edges {
        b.add_edge_by_name(p, c, *k).unwrap();
    }
    b.build().unwrap()
}

#[test]
fn cycle_through_priority_edges_is_rejected() {
    // Data a->b, priority b->a: neither alone is cyclic, together they are
    // (δ = δ^d ∪ δ^p, L1006–1008).
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
    let mut dag = build(&["a", "b"], &[("a", "b", Dependence::Data)], &[]);
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
    let mut dag = build(&["a", "b"], &[("a", "b", Dependence::Data)], &[("a", 2)]);
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
    let mut dag = build(&["a", "b"], &[("a", "b", Dependence::Data)], &[("a", 1)]);
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

fn diamond() -> Dag<()> {
    use Dependence::Data;
    build(
        &["a", "b", "c", "d"],
        &[
            ("a", "b", Data),
            ("a", "c", Data),
            ("b", "d", Data),
            ("c", "d", Data),
        ],
        &[("c", 3)],
    )
}

#[test]
fn progress_round_trip_resumes_where_it_stopped() {
    let mut dag = diamond();
    let (a, b, c, d) = (0, 1, 2, 3);
    dag.on_started(a).unwrap();
    dag.on_finished(a, true).unwrap();
    dag.on_started(b).unwrap();
    dag.on_finished(b, true).unwrap();
    dag.on_started(c).unwrap();
    dag.on_finished(c, false).unwrap();
    dag.on_started(c).unwrap(); // running when the DAG is stopped
    let progress = dag.progress();
    assert_eq!(progress.done, ["a".to_string(), "b".to_string()].into());
    assert_eq!(progress.attempts.get("c"), Some(&1));
    let json = serde_json::to_string(&progress).unwrap();
    let back: Progress = serde_json::from_str(&json).unwrap();
    assert_eq!(back, progress);

    let mut resumed = diamond();
    resumed.apply_progress(&back, RescueRetries::Keep).unwrap();
    assert_eq!(resumed.state(a), Some(NodeState::Done));
    assert_eq!(resumed.state(b), Some(NodeState::Done));
    assert_eq!(resumed.failures(c), Some(1));
    assert_eq!(resumed.eligible(), vec![c]);
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

    let mut fresh = diamond();
    fresh.apply_progress(&back, RescueRetries::Reset).unwrap();
    assert_eq!(fresh.failures(c), Some(0));
    fresh.on_started(c).unwrap();
    fresh.on_finished(c, true).unwrap();
    fresh.on_started(d).unwrap();
    fresh.on_finished(d, true).unwrap();
    assert!(fresh.is_complete());
}

#[test]
fn progress_errors() {
    let mut dag = build(&["a", "b"], &[("a", "b", Dependence::Data)], &[]);
    let r = |done: &[&str]| Progress {
        done: done.iter().map(|s| s.to_string()).collect(),
        ..Progress::default()
    };
    assert_eq!(
        dag.apply_progress(&r(&["zz"]), RescueRetries::Keep),
        Err(DagError::UnknownNode("zz".into()))
    );
    assert!(matches!(
        dag.apply_progress(&r(&["b"]), RescueRetries::Keep),
        Err(DagError::RescueInconsistent { .. })
    ));
    assert_eq!(dag.state(1), Some(NodeState::Waiting), "unchanged on error");
    dag.on_started(0).unwrap();
    assert_eq!(
        dag.apply_progress(&r(&["a"]), RescueRetries::Keep),
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
