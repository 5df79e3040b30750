//! Gleaner's station daemon (`glean station`): the parts that run on every
//! workstation. A station is both sides of HTCondor's split: the home of
//! its users' jobs (the access point) and, while its owner is away, a host
//! for other stations' guests (the execute point).
//!
//! - [`node`]: the daemon: start and stop, the advertise loop that builds
//!   the station's ad from both sides and hands the coordinator's reply to
//!   each.
//! - [`home`]: the submit side: queue, user API, local scheduler, shadow,
//!   remote jobs, checkpoint store and leases, DAG manager, user log.
//! - [`host`]: the execute side: owner watch, policy and admission, machine
//!   ad, guest records, transfer rate, and the starter that runs guests.
//! - [`config`]: the configuration file, `station.toml`.
//! - Shared by both: [`owner`] (owner-activity sources), [`isolation`]
//!   (cgroups, launcher), [`queue`] (the durable SQLite job queue),
//!   [`checkpoint`] (bundles, backends, throttling), [`lease`] (the
//!   home/host lease message), [`clock`], [`disk`] (full disks named);
//!   and [`client`], the CLI's client.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod checkpoint;
pub mod client;
pub mod clock;
pub mod config;
pub mod disk;
pub mod home;
pub mod host;
pub mod isolation;
pub mod lease;
pub mod metrics;
pub mod node;
pub mod owner;
pub mod queue;
pub mod schedule;
pub mod userfs;
