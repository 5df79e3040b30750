//! The station's owner watch: turns the owner-activity sources
//! ([`crate::owner`]) into the AV/NA state the starter's eviction ladder
//! follows.
//!
//! Two activity kinds run here:
//!
//! - `activity = { source = "linux" }` with an `[owner]` section: the real
//!   sources (evdev, tty atime, logind, a file/FIFO, `/proc/interrupts`,
//!   battery, other users' sessions, owner CPU from `/proc/stat` minus the
//!   guests' cgroups) feed gleaner-core's [`Detector`] on the wall clock.
//!   Samples come at the detector's period (Mutka 1988 L353: 60 s NA, 30 s
//!   AV by default); between samples the thread blocks on the sources'
//!   descriptors (evdev devices, inotify on the activity file, FIFOs) and
//!   re-reads the poll-only ones (tty atime, logind) every `poll_ms`. Fresh
//!   input calls [`Detector::on_activity`] at once, so a keystroke reaches
//!   the ladder (freeze or lower) in milliseconds, not at the next sample.
//! - `activity = { source = "file", path = ... }`: a state file whose first
//!   word is `active` or `idle` (tests, `glean up --demo`). Watched with
//!   inotify on its directory, with a 250 ms poll as a safety net.
//!
//! Both publish on the station's `watch` channel, which the starter's
//! supervisors await: a change there runs the ladder immediately.
//!
//! ```toml
//! activity = { source = "linux" }
//! [owner]
//! sources = ["evdev", "tty", "logind", "power", "load"]
//! profile = "mutka1988"          # or linger_longer, load_avg03
//! idle_wait_secs = 300           # optional overrides of the profile
//! poll_ms = 1000
//! ```

mod config;
mod state_file;
mod watch_loop;

pub use config::{OwnerWatchConfig, SourceKind};
pub use state_file::{read_state_file, spawn_state_file};
pub use watch_loop::{WallClock, WatchLoop, spawn_linux};

use crate::config::{ActivitySource, StationConfig};
use crate::isolation::CgroupManager;
use gleaner_core::detector::OwnerState;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Publishes `s` if it differs from the current state (receivers wake
/// only on changes).
pub(crate) fn publish(tx: &watch::Sender<OwnerState>, s: OwnerState) {
    tx.send_if_modified(|cur| {
        let changed = *cur != s;
        *cur = s;
        changed
    });
}

/// Starts the configured activity source feeding `tx`; `None` for an
/// owner who is never active.
pub fn spawn_activity(
    config: &StationConfig,
    cgroups: Option<CgroupManager>,
    tx: watch::Sender<OwnerState>,
    shutdown: watch::Receiver<bool>,
) -> Option<JoinHandle<()>> {
    match &config.activity {
        ActivitySource::AlwaysIdle => None,
        ActivitySource::File { path } => Some(spawn_state_file(path.clone(), tx, shutdown)),
        ActivitySource::Linux => Some(spawn_linux(&config.owner, cgroups, tx, shutdown)),
    }
}
