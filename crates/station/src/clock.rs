//! The wall clock as the station stores and compares times.

use gleaner_core::time::Time;
use std::time::{SystemTime, UNIX_EPOCH};

/// Current wall-clock time as the queue stores it (UNIX epoch).
pub fn now() -> Time {
    let us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    Time::from_micros(us)
}

/// Current wall-clock time in whole UNIX seconds (token expiry, operating
/// windows).
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
