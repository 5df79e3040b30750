//! The station's configuration loader (`glean station --config FILE`):
//! TOML into `StationConfig`, then its validation.
//!
//! Invariants: no panic; a configuration that validates can be used: the
//! durations the daemon derives from it at start exist (`Duration` panics
//! on a number of seconds it cannot hold), and the derived settings
//! (owner detector, signal, paths) can be computed.

#![no_main]

use gleaner_station::config::StationConfig;
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let Some(text) = gleaner_fuzz::text(data) else {
        return;
    };
    let Ok(cfg) = StationConfig::parse(text, Path::new("fuzz.toml")) else {
        return;
    };
    let _ = cfg.placement_interval();
    let _ = cfg.lease();
    assert!(cfg.checkpoint_signal_number().is_some());
    // What the home and host do with the other periods at start
    // (home/mod.rs, home/start_failures.rs, host/mod.rs).
    for (field, secs) in [
        ("avoid_host_secs", cfg.avoid_host_secs),
        ("start_retry_secs", cfg.start_retry_secs),
        ("checkpoint_grace_secs", cfg.checkpoint_grace_secs),
    ] {
        assert!(
            Duration::try_from_secs_f64(secs.max(0.0)).is_ok(),
            "{field} = {secs} validates but is no duration"
        );
    }
    let _ = cfg.owner.detector_config();
    let _ = cfg.queue_path();
    let _ = cfg.execute_dir();
    let _ = cfg.station_name();
});
