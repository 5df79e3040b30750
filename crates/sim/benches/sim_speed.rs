//! Simulator speed, printed as simulated events per second (issue #3):
//! - the whole `updown` sweep: 5 seeds × 12 values of K × 3 policies, each
//!   over a simulated year (target: under 30 s on 2 cores);
//! - a 10 000-station pool over a simulated day, per policy (target: under 60 s).
//!
//! Run: `cargo bench -p gleaner-sim --bench sim_speed`.

use gleaner_core::alloc::AllocatorKind;
use gleaner_core::time::Time;
use gleaner_sim::experiments::{NoProgress, updown};
use std::time::Instant;

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut cfg = match updown::sweep_config(&gleaner_sim::experiments::ExperimentOpts::new(
        std::env::temp_dir(),
        5,
        1,
    )) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sweep config: {e}");
            std::process::exit(1);
        }
    };
    cfg.threads = threads;
    let t0 = Instant::now();
    let points = match updown::sweep(&cfg, &NoProgress) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sweep: {e}");
            std::process::exit(1);
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    // `mean.events` is the per-run mean over seeds.
    let events: f64 = points
        .iter()
        .map(|p| p.mean.events * cfg.seeds.len() as f64)
        .sum();
    println!(
        "updown sweep: {} runs ({} K × {} seeds × {} policies, {} simulated days each) \
         in {wall:.2} s on {threads} threads: {events:.0} events, {:.0} events/s",
        cfg.ks.len() * cfg.seeds.len() * cfg.allocators.len(),
        cfg.ks.len(),
        cfg.seeds.len(),
        cfg.allocators.len(),
        cfg.horizon.as_secs_f64() / 86_400.0,
        events / wall
    );

    let day = Time::from_secs(86_400);
    for kind in [
        AllocatorKind::UpDown,
        AllocatorKind::Random,
        AllocatorKind::RoundRobin,
    ] {
        match updown::large_pool(10_000, day, kind, 1) {
            Ok((r, wall)) => println!(
                "10 000 stations, 1 simulated day, {:<10}: {:.2} s, {} events ({:.0} events/s), \
                 {} allocation passes, {} jobs completed",
                kind.name(),
                wall.as_secs_f64(),
                r.events,
                r.events as f64 / wall.as_secs_f64(),
                r.allocation_passes,
                r.completed
            ),
            Err(e) => eprintln!("large pool {}: {e}", kind.name()),
        }
    }
}
