//! The administrator's actions on the pool (HTCondor's `condor_drain`,
//! `condor_vacate`, `condor_token_*`), on the token API and, through the
//! same [`Admin`] implementation, on the dashboard:
//!
//! - `POST /v1/stations/NAME/drain`, `…/undrain`: the coordinator grants
//!   no new guests on NAME (its running guests finish); kept in
//!   `drained.json` before the answer, so a restart keeps it
//!   ([`crate::pool`]'s `drain`; `glean drain [--cancel] NAME`);
//! - `POST /v1/stations/NAME/vacate`: every guest on NAME is preempted now
//!   by the normal path (its home vacates it, checkpointing when it can,
//!   and queues it again; `glean vacate NAME`);
//! - `POST /v1/tokens/ID/revoke`: the token registry's revocation (as
//!   `glean token revoke ID` on the coordinator's machine);
//! - `GET /v1/tokens`: the tokens issued and not yet expired.
//!
//! Administrators only: the role is checked before anything else, and no
//! action reads a body (its target is in the path).

use crate::dashboard::actions::Admin;
use crate::server::{Shared, now};
use crate::tokens::{RevokeOutcome, TokenRegistry, TokenRegistryError};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gleaner_edge::{ApiError, Caller, require_admin};
use gleaner_proto::wire::ErrorCode;
use serde_json::{Value, json};
use std::sync::Arc;

/// Longest station name (a DNS name's) and token id accepted in a path.
const MAX_NAME: usize = 253;
const MAX_TOKEN_ID: usize = 128;
/// Tokens listed at most (newest first).
const MAX_LISTED: usize = 500;

fn check_station(name: &str) -> Result<(), ApiError> {
    if name.is_empty()
        || name.len() > MAX_NAME
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(ApiError::bad(
            "station",
            "a station name is 1–253 characters without spaces",
        ));
    }
    Ok(())
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::Internal, e.to_string())
}

fn unknown_station(name: &str) -> ApiError {
    ApiError::field(
        ErrorCode::NotFound,
        "station",
        format!("no station {name:?} in the pool (see `glean status`)"),
    )
}

impl Shared {
    fn knows(&self, station: &str) -> bool {
        self.pool()
            .status(now())
            .stations
            .iter()
            .any(|s| s.name == station)
    }
}

impl Admin for Shared {
    fn drain(&self, station: &str, on: bool, by: &str) -> Result<Value, ApiError> {
        check_station(station)?;
        // One change at a time, so the file and the pool agree.
        let _one = self.drain_change.lock().unwrap_or_else(|p| p.into_inner());
        let mut hosts = self.pool().drained();
        if !hosts.contains(station) && !self.knows(station) {
            return Err(unknown_station(station));
        }
        let changed = if on {
            hosts.insert(station.to_string())
        } else {
            hosts.remove(station)
        };
        if changed {
            // On disk before it takes effect: an answered drain survives
            // a crash.
            crate::drain_state::save(&self.state_dir, &hosts).map_err(internal)?;
            self.pool().set_drained(station, on);
            tracing::info!(admin = by, station, drained = on, "drain changed");
        }
        Ok(json!({ "station": station, "drained": on, "changed": changed }))
    }

    fn vacate(&self, station: &str, by: &str) -> Result<Value, ApiError> {
        check_station(station)?;
        if !self.knows(station) {
            return Err(unknown_station(station));
        }
        let reason = format!("vacated by administrator {by}");
        let asked = self.pool().vacate(station, &reason);
        tracing::info!(admin = by, station, asked, "vacate");
        Ok(json!({ "station": station, "preempted": asked }))
    }

    fn revoke(&self, token_id: &str, by: &str) -> Result<Value, ApiError> {
        if token_id.is_empty()
            || token_id.len() > MAX_TOKEN_ID
            || !token_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(ApiError::bad("token_id", "a token id is hexadecimal"));
        }
        let registry = TokenRegistry::in_state_dir(&self.state_dir);
        let (record, changed) = match registry.revoke(token_id, gleaner_edge::wall_secs()) {
            Ok(RevokeOutcome::Revoked(r)) => (r, true),
            Ok(RevokeOutcome::AlreadyRevoked(r)) => (r, false),
            Err(e @ TokenRegistryError::UnknownToken { .. }) => {
                return Err(ApiError::field(
                    ErrorCode::NotFound,
                    "token_id",
                    e.to_string(),
                ));
            }
            Err(e) => return Err(internal(e)),
        };
        tracing::info!(admin = by, token_id, subject = %record.subject, changed, "token revoked");
        Ok(
            json!({ "token_id": token_id, "subject": record.subject, "revoked": true, "changed": changed }),
        )
    }

    fn tokens(&self) -> Result<Value, ApiError> {
        let now = gleaner_edge::wall_secs();
        let mut list = TokenRegistry::in_state_dir(&self.state_dir)
            .list()
            .map_err(internal)?;
        list.retain(|t| t.expires_at.is_none_or(|e| e > now));
        list.sort_by_key(|t| std::cmp::Reverse(t.issued_at));
        list.truncate(MAX_LISTED);
        let rows: Vec<Value> = list
            .iter()
            .map(|t| {
                json!({
                    "token_id": t.token_id,
                    "subject": t.subject,
                    "role": t.role.as_str(),
                    "issued_at": t.issued_at,
                    "expires_at": t.expires_at,
                    "revoked": t.revoked,
                    "join": t.join.is_some(),
                })
            })
            .collect();
        Ok(json!({ "tokens": rows }))
    }
}

const ADMINS_ONLY: &str = "only an administrator's token may do this";

/// Runs `f` on the pool's [`Admin`] for an administrator.
async fn admin_do(
    shared: Arc<Shared>,
    caller: &Caller,
    f: impl FnOnce(&Shared, &str) -> Result<Value, ApiError> + Send + 'static,
) -> Result<Response, ApiError> {
    require_admin(caller, ADMINS_ONLY)?;
    let by = caller.name.clone();
    let done = tokio::task::spawn_blocking(move || f(&shared, &by))
        .await
        .map_err(internal)??;
    Ok(Json(done).into_response())
}

async fn drain(
    State(s): State<Arc<Shared>>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    admin_do(s, &c, move |s, by| s.drain(&name, true, by)).await
}

async fn undrain(
    State(s): State<Arc<Shared>>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    admin_do(s, &c, move |s, by| s.drain(&name, false, by)).await
}

async fn vacate(
    State(s): State<Arc<Shared>>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    admin_do(s, &c, move |s, by| s.vacate(&name, by)).await
}

async fn revoke(
    State(s): State<Arc<Shared>>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    admin_do(s, &c, move |s, by| s.revoke(&id, by)).await
}

async fn tokens(
    State(s): State<Arc<Shared>>,
    Extension(c): Extension<Caller>,
) -> Result<Response, ApiError> {
    admin_do(s, &c, |s, _| s.tokens()).await
}

/// The routes (behind the token authentication).
pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/v1/stations/{name}/drain", post(drain))
        .route("/v1/stations/{name}/undrain", post(undrain))
        .route("/v1/stations/{name}/vacate", post(vacate))
        .route("/v1/tokens/{id}/revoke", post(revoke))
        .route("/v1/tokens", get(tokens))
}
