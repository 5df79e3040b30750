//! The host's part of the station ad as a machine: architecture and
//! system, measured speed β, free disk of the execute directory, the local
//! zone, custom attributes and the checkpoint backends.

use crate::config::StationConfig;
use gleaner_core::time::Time;
use gleaner_proto::wire::{Demand, PROTOCOL_VERSION, StationAd};
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The parts of the ad that do not change while the daemon runs; the
/// starter checks placements against it (with the occupancy of the moment,
/// `starter::Starter::current_ad`), and the advertise loop starts every ad
/// from it.
pub fn template(cfg: &StationConfig, name: &str) -> StationAd {
    // Built-in attributes (checkpoint backends) first; the owner's `[attrs]`
    // may override them.
    let mut attrs = crate::checkpoint::ad_attrs();
    attrs.extend(cfg.attrs.clone());
    StationAd {
        cpus: cfg.cpus.unwrap_or(1),
        memory_mb: cfg.memory_mb.unwrap_or(1024),
        arch: cfg
            .arch
            .clone()
            .unwrap_or_else(|| std::env::consts::ARCH.to_uppercase()),
        opsys: cfg.opsys.clone().unwrap_or_else(|| "LINUX".into()),
        speed: match cfg.speed {
            Some(s) => s,
            None if cfg.role.executes() => measured_speed(),
            None => 0.0,
        },
        attrs,
        submit_only: !cfg.role.executes(),
        execute_only: !cfg.role.submits(),
        ..bare(name)
    }
}

/// A machine named `name` with nothing measured or configured: this
/// architecture, Linux, one CPU, 1 GiB, no attributes (a starter made
/// without a station, as in tests, describes itself so).
pub fn bare(name: &str) -> StationAd {
    StationAd {
        protocol: PROTOCOL_VERSION,
        name: name.to_string(),
        address: String::new(),
        state: gleaner_core::detector::OwnerState::Av,
        cpus: 1,
        memory_mb: 1024,
        disk_free_kb: 0,
        arch: std::env::consts::ARCH.to_uppercase(),
        opsys: "LINUX".into(),
        speed: 0.0,
        running_guests: Vec::new(),
        attrs: Default::default(),
        demand: Demand::default(),
        policy: Default::default(),
        classes: Vec::new(),
        submit_only: false,
        execute_only: false,
        sequence: 0,
        sent_at: Time::ZERO,
        claims_used: Vec::new(),
        claims_held: Vec::new(),
        summary: None,
    }
}

/// Benchmark iterations per second of the reference machine (β = 1). Set
/// so that one core of a 2020s x86-64 desktop measures a β of a few units;
/// only ratios between stations matter.
const REFERENCE_RATE: f64 = 50.0e6;
/// How long the benchmark runs (once per process).
const BENCH_TIME: Duration = Duration::from_millis(150);

/// One step of the benchmark: integer mixing and a float multiply-add,
/// kept data-dependent so the compiler cannot fold the loop.
#[inline(never)]
fn bench_block(state: &mut (u64, f64), n: u32) {
    let (mut x, mut f) = *state;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        f = f * 0.999_999 + (x & 0xff) as f64 * 1e-3;
    }
    *state = (x, f);
}

/// β: this machine's single-core speed relative to the reference,
/// measured once per process with a ~150 ms CPU-bound loop (DMW's speed
/// weight w_h / β, Neeracher 1998, seeds/001_c7470f9b5ea54797.txt L1313;
/// HTCondor measures `Mips` and `KFlops` the same way at start-up).
pub fn measured_speed() -> f64 {
    static SPEED: OnceLock<f64> = OnceLock::new();
    *SPEED.get_or_init(|| {
        let mut state = (0x9e37_79b9_7f4a_7c15u64, 1.0f64);
        let start = Instant::now();
        let mut iters: u64 = 0;
        while start.elapsed() < BENCH_TIME {
            bench_block(&mut state, 100_000);
            iters += 100_000;
        }
        std::hint::black_box(state);
        let rate = iters as f64 / start.elapsed().as_secs_f64().max(1e-9);
        let beta = (rate / REFERENCE_RATE * 100.0).round() / 100.0;
        tracing::info!(beta, "speed benchmark");
        beta.max(0.01)
    })
}

/// Free space for guests in `dir` (the execute directory), KiB; 0 when it
/// cannot be read, so that no disk-hungry job is matched.
pub fn disk_free_kb(dir: &Path) -> u64 {
    // The directory may not exist before the first guest: measure the
    // nearest existing ancestor.
    let mut d = dir;
    loop {
        if d.exists() {
            break;
        }
        match d.parent() {
            Some(p) => d = p,
            None => return 0,
        }
    }
    match nix::sys::statvfs::statvfs(d) {
        Ok(s) => s.blocks_available().saturating_mul(s.fragment_size()) / 1024,
        Err(e) => {
            tracing::debug!(dir = %d.display(), error = %e, "statvfs failed");
            0
        }
    }
}

/// Seconds east of UTC of the local zone at UNIX second `unix`.
pub fn utc_offset_secs(unix: i64) -> i32 {
    let t: libc::time_t = unix as libc::time_t;
    // SAFETY: localtime_r writes only into the `tm` we own and reads `t`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        i32::try_from(tm.tm_gmtoff).unwrap_or(0)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_is_positive_and_cached() {
        let a = measured_speed();
        assert!(a > 0.0);
        assert_eq!(a, measured_speed());
    }

    #[test]
    fn disk_of_a_missing_dir_is_its_parents() {
        let d = tempfile::tempdir().unwrap();
        assert!(disk_free_kb(&d.path().join("not/yet")) > 0);
    }

    #[test]
    fn utc_offset_is_plausible() {
        assert!(utc_offset_secs(0).abs() <= 14 * 3600);
    }
}
