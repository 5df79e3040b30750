//! Helpers shared by the fuzz targets.

use serde::{Serialize, de::DeserializeOwned};
use std::fmt::Debug;
use std::sync::OnceLock;

/// Reads `json` as a `T`; where that works, writes it back and reads it
/// again, and panics unless the second reading equals the first. A message
/// that does not survive its own encoding would change meaning between two
/// daemons.
pub fn round_trip<T>(json: &[u8]) -> Option<T>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let first: T = match serde_json::from_slice(json) {
        Ok(v) => v,
        Err(e) if seed_check() => panic!("seed is no {}: {e}", type_name::<T>()),
        Err(_) => return None,
    };
    let text = match serde_json::to_string(&first) {
        Ok(t) => t,
        Err(e) => panic!(
            "{} read but cannot be written: {e}: {first:?}",
            type_name::<T>()
        ),
    };
    let second: T = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => panic!(
            "{} written as {text} cannot be read back: {e}",
            type_name::<T>()
        ),
    };
    assert_eq!(
        first,
        second,
        "{} changed on a round trip through {text}",
        type_name::<T>()
    );
    Some(first)
}

/// Whether `GLEANER_FUZZ_SEED_CHECK` is set: then a message that does not
/// read is a failure, so that `scripts/fuzz.sh --check-seeds` catches seeds
/// the formats have left behind.
fn seed_check() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("GLEANER_FUZZ_SEED_CHECK").is_some())
}

fn type_name<T>() -> &'static str {
    std::any::type_name::<T>()
}

/// The input as text, or `None` when it is not UTF-8 (every parser here
/// takes `&str`; its callers reject other bytes first).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
