//! Gleaner's HTTP edge: what every daemon's HTTP server does before and
//! after its handlers, written once.
//!
//! - [`error`]: [`ApiError`], an HTTP status with the JSON [`ErrorBody`]
//!   every daemon answers errors with.
//! - [`body`]: request bodies: the body-limit and read errors mapped to
//!   [`ApiError`], JSON parsing that names the offending field, the
//!   fallback for unknown endpoints.
//! - [`auth`]: who is calling. A [`Verifier`] turns a bearer token or a
//!   Unix socket's peer credentials into a [`Caller`]; the
//!   [`authenticate`] middleware puts it in the request extensions, so a
//!   handler takes `Extension<Caller>`.
//! - [`peer`]: callers on a local Unix socket, known by `SO_PEERCRED`
//!   ([`PeerCred`] as axum connect info, [`LocalPeers`] mapping uids to
//!   accounts).
//! - [`tokens`]: the pool's Ed25519 bearer tokens ([`TokenVerifier`]:
//!   public key only, then revocations).
//! - [`metrics`]: `GET /metrics` shared parts (the daemon's own CPU and
//!   memory, the OpenMetrics response).
//! - [`tls`]: TLS with the pool's own CA: servers that refuse plain
//!   HTTP off loopback, clients that trust only the pool CA and check the
//!   name of the daemon they call.
//! - [`roles`]: what a caller may do: [`require_station`],
//!   [`require_station_named`] (a station speaks only for itself),
//!   [`require_admin`], [`may_act_on`].
//! - [`web`]: browser sessions for the daemons' pages: single-use login
//!   tickets, HttpOnly SameSite=Strict session cookies, CSRF tokens.
//!
//! [`ErrorBody`]: gleaner_proto::wire::ErrorBody
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod auth;
pub mod body;
pub mod error;
pub mod metrics;
pub mod peer;
pub mod roles;
pub mod tls;
pub mod tokens;
pub mod web;

pub use auth::{Caller, Credential, PeerCred, Role, Verifier, authenticate};
pub use body::{body_bytes, not_found, parse_json};
pub use error::ApiError;
pub use peer::{LocalPeers, peer_caller};
pub use roles::{
    may_act_on, require_admin, require_station, require_station_named, speaks_for_station,
};
pub use tokens::{RevocationCheck, SharedRevocations, TokenVerifier, wall_secs};
