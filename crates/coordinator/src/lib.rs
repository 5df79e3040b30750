//! Gleaner's central coordinator (Mutka 1988 §4.3, §5; thesis spec §1.1).
//!
//! The coordinator only knows, per station, its availability (AV/NA), its
//! demand and its Up-Down schedule index; it grants free nodes to home
//! stations or asks holders to give nodes back. Which job runs, and all job
//! state, stay on the home stations (L579–585).
//!
//! - [`CoordinatorConfig`]: the TOML configuration.
//! - [`run`]: the daemon behind `glean coordinator`; [`spawn`] and
//!   [`spawn_for_test`] start it in the background.
//! - [`pool`]: the pool's state and rules, free of I/O: one injected clock,
//!   effects returned as data ([`Outbox`]), claim ids from a [`ClaimMinter`];
//!   the daemon and `gleaner-sim` drive the same [`Pool`].
//! - [`matchmaker`]: which host takes which class of jobs (the fit check of
//!   `gleaner_proto::fit`; rank, then DMW's σ).
//! - HTTP API: `POST /v1/advertise`, `GET /v1/pool`, `GET /v1/ads`,
//!   `GET /v1/userprio`, `GET /v1/health`, each with
//!   `Authorization: Bearer <token>` checked by the HTTP edge
//!   ([`gleaner_edge`]) with the pool's public key and the revocations of
//!   [`tokens`]. Only a station's own token advertises it.
//! - Reservations (`[reservations]`, Mutka 1988 ch. 6): the role is
//!   [`pool::partition`] (market tables, slot binding, replacement) and the
//!   partition rule in placing; [`reserve_api`] serves
//!   `/v1/reservations` and `/v1/reservations/sync`; `reservations.json`
//!   keeps it across restarts.
//! - [`enrol`]: the pool CA, join tokens and `POST /v1/join` (TLS and
//!   enrolment, issue 13).
//! - [`tokens`]: the token registry behind `glean token`; the coordinator
//!   alone holds the signing key (`signing.key`) and writes `pool.pub`.
//! - `admin_api`: an administrator's drain, undrain, vacate and token
//!   revocation (`/v1/stations/NAME/…`, `/v1/tokens…`), the same actions
//!   the [`dashboard`] offers an administrator's session; drains kept in
//!   `drained.json` (`drain_state`).
//!
//! Stations advertise every `advertise_period_secs` (told in each reply),
//! and a station daemon should also advertise at once when its owner state
//! changes, a guest finishes or leaves, or new jobs are queued: grants and
//! preemptions are delivered only in replies to advertisements.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]

mod admin_api;
mod config;
pub mod dashboard;
mod drain_state;
pub mod enrol;
mod mailbox;
pub mod matchmaker;
mod metrics;
mod persist;
mod persist_reservations;
pub mod pool;
pub mod reserve_api;
pub mod reserve_config;
mod server;
pub mod tokens;
mod transfer_rate;

pub use config::{CoordinatorConfig, CoordinatorTls, TlsPaths};
pub use persist::{ClaimsState, FairnessState, SavedClaim, StationEntry};
pub use pool::{ClaimMinter, Outbox, Pool, UnsignedClaims};
pub use server::{RunningCoordinator, run, spawn, spawn_for_test};

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the coordinator could not start or keep running.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("fairness state {path}: {why}")]
    State { path: PathBuf, why: String },
    #[error(transparent)]
    Key(#[from] gleaner_proto::creds::KeyFileError),
    #[error(transparent)]
    Tokens(#[from] tokens::TokenRegistryError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server: {0}")]
    Server(String),
    #[error("TLS: {0}")]
    Tls(String),
}
