//! The coordinator's configuration loader (`glean coordinator --config
//! FILE`): TOML into `CoordinatorConfig`, including its timing checks.
//!
//! Invariants: no panic; an accepted configuration gives a usable one (key
//! paths; the timing checks ran inside).

#![no_main]

use gleaner_coordinator::CoordinatorConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = gleaner_fuzz::text(data) else {
        return;
    };
    let Ok(cfg) = CoordinatorConfig::from_toml_str(text) else {
        return;
    };
    let _ = cfg.signing_key_path();
    let _ = cfg.public_key_path();
});
