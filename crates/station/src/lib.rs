//! Gleaner's station daemon (`glean station`): the parts that run on every
//! workstation.
//!
//! - [`owner`]: owner-activity sources (input devices, tty/pty atime, logind,
//!   file/FIFO) and owner CPU load excluding guests; they feed the core
//!   detector.
//! - [`isolation`]: guest isolation through cgroups (v2 and the hybrid
//!   v1+v2 layout) behind one small interface: idle priority, memory bounds,
//!   freeze, kill.
//! - [`queue`]: the durable local job queue in SQLite with its event history.
//! - [`checkpoint`]: checkpoint backends, bundles with SHA-256 manifests,
//!   transfer throttling, CRIU detection.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod checkpoint;
pub mod client;
pub mod daemon;
pub mod isolation;
pub mod owner;
pub mod queue;
pub mod userfs;
