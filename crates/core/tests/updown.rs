//! Up-Down allocator tests: the schedule-index rules of Mutka 1988
//! Tables 4.2, 4.3 and 4.5 (seeds/000_14c1149197e96532.txt L649–679, L717–722)
//! and the narrative of Fig. 4.2 (L655).

use gleaner_core::alloc::{
    Allocator, Decision, PoolView, StationDemand, Table45, UpDown, UpDownConfig,
};
use gleaner_core::rng::seeded;

fn demand(station: u32, waiting: u32, remote: u32) -> StationDemand {
    StationDemand {
        station,
        waiting,
        remote,
    }
}

/// Runs one scheduling interval's index update.
fn tick(ud: &mut UpDown, stations: &[StationDemand], held: &[(u32, u32)]) {
    let view = PoolView {
        stations,
        free_nodes: &[],
        held,
    };
    ud.on_interval(&view);
}

#[test]
fn fig_4_2_trajectory() {
    // Station 0 follows the Fig. 4.2 story; station 1 exists and never wants
    // anything. Nodes 100, 101 are remote nodes held by station 0.
    let mut ud = UpDown::new(UpDownConfig::default());
    let mut trace = vec![ud.index(0)];
    let step = |ud: &mut UpDown, waiting: u32, remote: u32, held: &[(u32, u32)]| {
        tick(ud, &[demand(0, waiting, remote), demand(1, 0, 0)], held);
        ud.index(0)
    };
    // A job arrives and no node is free: SI goes down by g. Station 0 is the
    // minimum itself, so g = 1 each interval.
    trace.push(step(&mut ud, 1, 0, &[]));
    trace.push(step(&mut ud, 1, 0, &[]));
    // One node allocated: up by f = 1 per interval.
    trace.push(step(&mut ud, 1, 1, &[(100, 0)]));
    trace.push(step(&mut ud, 0, 1, &[(100, 0)]));
    // Two nodes: up twice as fast (2·f).
    trace.push(step(&mut ud, 0, 2, &[(100, 0), (101, 0)]));
    trace.push(step(&mut ud, 0, 2, &[(100, 0), (101, 0)]));
    // One job completes: back to f per interval.
    trace.push(step(&mut ud, 0, 1, &[(100, 0)]));
    // The last job completes: decays by h = 1 to zero, then stays there.
    for _ in 0..6 {
        trace.push(step(&mut ud, 0, 0, &[]));
    }
    assert_eq!(
        trace,
        vec![
            0.0, -1.0, -2.0, -1.0, 0.0, 2.0, 4.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 0.0
        ]
    );
}

#[test]
fn g_steps_at_distance_three_and_six_from_the_minimum() {
    let mut ud = UpDown::new(UpDownConfig::default());
    // Station 9 holds the minimum (-10) and wants nothing.
    ud.set_index(9, -10.0);
    let cases = [
        (0, -8.0, -9.0),             // distance 2: g = 1
        (1, -7.0, -9.0),             // distance 3: g = 2
        (2, -5.0, -7.0),             // distance 5: g = 2
        (3, -4.0, -7.0),             // distance 6: g = 3
        (4, 20.0, 17.0),             // far above: g = 3
        (5, -7.000_001, -8.000_001), // just under 3: g = 1
    ];
    let mut stations = vec![demand(9, 0, 0)];
    for &(id, si, _) in &cases {
        ud.set_index(id, si);
        stations.push(demand(id, 1, 0));
    }
    tick(&mut ud, &stations, &[]);
    for &(id, _, expect) in &cases {
        assert!(
            (ud.index(id) - expect).abs() < 1e-9,
            "station {id}: got {}, want {expect}",
            ud.index(id)
        );
    }
    // The non-wanting minimum rose by l = 1 (computed from the snapshot).
    assert_eq!(ud.index(9), -9.0);
}

#[test]
fn index_decays_to_exactly_zero_and_stays() {
    let mut ud = UpDown::new(UpDownConfig::default());
    ud.set_index(0, 5.0);
    ud.set_index(1, -3.0);
    let st = [demand(0, 0, 0), demand(1, 0, 0)];
    let mut seen0 = vec![];
    let mut seen1 = vec![];
    for _ in 0..10 {
        tick(&mut ud, &st, &[]);
        seen0.push(ud.index(0));
        seen1.push(ud.index(1));
    }
    assert_eq!(
        seen0,
        vec![4.0, 3.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        seen1,
        vec![-2.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
}

#[test]
fn non_integer_decay_is_clamped_at_zero() {
    let config = UpDownConfig {
        functions: Table45 {
            h: 2.5,
            l: 0.75,
            ..Table45::default()
        },
        ..UpDownConfig::default()
    };
    let mut ud = UpDown::new(config);
    ud.set_index(0, 4.0);
    ud.set_index(1, -1.0);
    let st = [demand(0, 0, 0), demand(1, 0, 0)];
    tick(&mut ud, &st, &[]);
    assert_eq!((ud.index(0), ud.index(1)), (1.5, -0.25));
    tick(&mut ud, &st, &[]);
    assert_eq!((ud.index(0), ud.index(1)), (0.0, 0.0));
    tick(&mut ud, &st, &[]);
    assert_eq!((ud.index(0), ud.index(1)), (0.0, 0.0));
}

fn allocate(
    ud: &mut UpDown,
    stations: &[StationDemand],
    free: &[u32],
    held: &[(u32, u32)],
    seed: u64,
) -> Vec<Decision> {
    let view = PoolView {
        stations,
        free_nodes: free,
        held,
    };
    ud.allocate(&view, &mut seeded(seed))
}

#[test]
fn preempts_only_on_strictly_smaller_index() {
    let st = [demand(0, 1, 0), demand(1, 0, 1)];
    let held = [(50, 1)];
    let mut ud = UpDown::new(UpDownConfig::default());
    // Equal indices: no preemption.
    assert!(allocate(&mut ud, &st, &[], &held, 1).is_empty());
    // Holder's index larger: preempt its node.
    ud.set_index(1, 1.0);
    assert_eq!(
        allocate(&mut ud, &st, &[], &held, 1),
        vec![Decision::Preempt {
            node: 50,
            from: 1,
            to: 0
        }]
    );
}

#[test]
fn free_nodes_go_to_the_lowest_index_first_one_per_station() {
    let mut ud = UpDown::new(UpDownConfig::default());
    ud.set_index(0, 3.0);
    ud.set_index(1, -2.0);
    ud.set_index(2, 0.0);
    let st = [demand(0, 4, 0), demand(1, 4, 0), demand(2, 4, 0)];
    let d = allocate(&mut ud, &st, &[7, 8], &[], 3);
    let to: Vec<u32> = d.iter().map(|d| d.to()).collect();
    assert_eq!(to, vec![1, 2]);
}

#[test]
fn a_station_that_holds_a_node_does_not_preempt() {
    let mut ud = UpDown::new(UpDownConfig::default());
    ud.set_index(0, -10.0); // waiting, but already holds node 60
    ud.set_index(1, 10.0);
    let st = [demand(0, 2, 1), demand(1, 0, 1)];
    let held = [(60, 0), (61, 1)];
    assert!(allocate(&mut ud, &st, &[], &held, 5).is_empty());
    // With the A2 alternative it may.
    let mut any = UpDown::new(UpDownConfig {
        preempt_with_nodes: true,
        ..UpDownConfig::default()
    });
    any.set_index(0, -10.0);
    any.set_index(1, 10.0);
    assert_eq!(
        allocate(&mut any, &st, &[], &held, 5),
        vec![Decision::Preempt {
            node: 61,
            from: 1,
            to: 0
        }]
    );
}

#[test]
fn victim_loses_one_node_per_preemption_and_largest_index_goes_first() {
    let mut ud = UpDown::new(UpDownConfig::default());
    // Three waiting stations with no node, two holders.
    for (s, si) in [(0, -9.0), (1, -8.0), (2, -7.0), (3, 5.0), (4, 2.0)] {
        ud.set_index(s, si);
    }
    let st = [
        demand(0, 1, 0),
        demand(1, 1, 0),
        demand(2, 1, 0),
        demand(3, 0, 2),
        demand(4, 0, 1),
    ];
    let held = [(30, 3), (31, 3), (40, 4)];
    let d = allocate(&mut ud, &st, &[], &held, 11);
    let from: Vec<(u32, u32)> = d
        .iter()
        .map(|d| match d {
            Decision::Preempt { from, to, .. } => (*from, *to),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    // Station 3 (largest index) gives up both of its nodes, then station 4.
    assert_eq!(from, vec![(3, 0), (3, 1), (4, 2)]);
    let mut nodes: Vec<u32> = d.iter().map(|d| d.node()).collect();
    nodes.sort();
    assert_eq!(nodes, vec![30, 31, 40]);
}

#[test]
fn index_table_persists_through_set_index() {
    let mut ud = UpDown::new(UpDownConfig::default());
    tick(&mut ud, &[demand(0, 1, 0), demand(3, 0, 0)], &[]);
    let table = ud.table();
    let mut restored = UpDown::new(UpDownConfig::default());
    for (s, v) in &table {
        restored.set_index(*s, *v);
    }
    assert_eq!(restored.table(), table);
    assert_eq!(restored.index(0), -1.0);
}
