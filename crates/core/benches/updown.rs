//! One Up-Down allocation round at 1 000, 10 000 and 100 000 stations with
//! 10 % of them wanting nodes (issue #2). Half the stations hold a remote
//! node for some other station, 5 % offer a free node, and indices are
//! spread over [-20, 20] so both phases of Table 4.2 do real work.
//!
//! Run: `cargo bench -p gleaner-core --bench updown`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gleaner_core::alloc::{Allocator, PoolView, StationDemand, UpDown, UpDownConfig};
use gleaner_core::rng::{Rng, seeded};
use std::hint::black_box;

struct Pool {
    stations: Vec<StationDemand>,
    free: Vec<u32>,
    held: Vec<(u32, u32)>,
    si: Vec<f64>,
}

fn pool(n: u32) -> Pool {
    let mut rng = seeded(42);
    let mut stations: Vec<StationDemand> = (0..n)
        .map(|s| StationDemand {
            station: s,
            waiting: 0,
            remote: 0,
        })
        .collect();
    for s in stations.iter_mut() {
        if rng.random_bool(0.10) {
            s.waiting = rng.random_range(1..=5);
        }
    }
    let mut free = vec![];
    let mut held = vec![];
    for node in 0..n {
        let r: f64 = rng.random();
        if r < 0.05 {
            free.push(node);
        } else if r < 0.55 {
            let holder = rng.random_range(0..n);
            if holder != node {
                held.push((node, holder));
                stations[holder as usize].remote += 1;
            }
        }
    }
    let si = (0..n).map(|_| rng.random_range(-20..=20) as f64).collect();
    Pool {
        stations,
        free,
        held,
        si,
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("updown_round");
    for n in [1_000u32, 10_000, 100_000] {
        let p = pool(n);
        let mut ud = UpDown::new(UpDownConfig::default());
        for (s, v) in p.si.iter().enumerate() {
            ud.set_index(s as u32, *v);
        }
        let view = PoolView {
            stations: &p.stations,
            free_nodes: &p.free,
            held: &p.held,
        };
        let mut rng = seeded(7);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("allocate", n), &n, |b, _| {
            b.iter(|| black_box(ud.allocate(black_box(&view), &mut rng)))
        });
        g.bench_with_input(BenchmarkId::new("index_update", n), &n, |b, _| {
            b.iter(|| ud.update_indices(black_box(&view)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
