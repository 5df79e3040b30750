//! The administrator's actions on the dashboard: drain or undrain a
//! station, vacate its guests now, revoke a token (and list the tokens to
//! pick from). The same actions are on the token API
//! (`crate::admin_api`, `glean drain`, `glean vacate`); both call one
//! [`Admin`].
//!
//! Every action is a POST that is checked, before anything else, for a
//! live session, the page's own `Origin` and the session's CSRF token
//! ([`gleaner_edge::web::WebSessions::check_csrf`]), then for the
//! administrator's role, on every request: the page shows the buttons to
//! administrators only, but the server never trusts the page. No action
//! reads a body: what it acts on is in its path.

use super::Dashboard;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gleaner_edge::web::page_headers;
use gleaner_edge::{ApiError, require_admin};
use serde_json::Value;
use std::sync::Arc;

/// What an administrator may do to the pool, as the coordinator does it.
/// Blocking (writes files): call from a blocking task. `by` names the
/// administrator, for the log and the guests' eviction reason.
pub trait Admin: Send + Sync + 'static {
    /// Drains `station` (`on`) or ends its drain.
    fn drain(&self, station: &str, on: bool, by: &str) -> Result<Value, ApiError>;
    /// Preempts every guest on `station` now.
    fn vacate(&self, station: &str, by: &str) -> Result<Value, ApiError>;
    /// Revokes the token `token_id`.
    fn revoke(&self, token_id: &str, by: &str) -> Result<Value, ApiError>;
    /// The tokens issued and not expired (never the tokens themselves).
    fn tokens(&self) -> Result<Value, ApiError>;
}

const ADMINS_ONLY: &str = "only an administrator may change the pool from the dashboard";

/// The action a POST names.
#[derive(Clone, Copy, Debug)]
enum Action {
    Drain,
    Undrain,
    Vacate,
    Revoke,
}

/// Runs `action` on `target` for the request's session: session, Origin,
/// CSRF token, administrator, in that order; then the action.
async fn act(
    d: &Arc<Dashboard>,
    headers: &HeaderMap,
    action: Action,
    target: String,
) -> Result<Response, ApiError> {
    let s = d.sessions.check_csrf(headers)?;
    require_admin(&s.caller, ADMINS_ONLY)?;
    let (admin, by) = (d.admin.clone(), s.caller.name.clone());
    tracing::info!(admin = %by, ?action, %target, "dashboard action");
    let done = tokio::task::spawn_blocking(move || match action {
        Action::Drain => admin.drain(&target, true, &by),
        Action::Undrain => admin.drain(&target, false, &by),
        Action::Vacate => admin.vacate(&target, &by),
        Action::Revoke => admin.revoke(&target, &by),
    })
    .await
    .map_err(|e| ApiError::new(gleaner_proto::wire::ErrorCode::Internal, e.to_string()))??;
    let mut r = axum::Json(done).into_response();
    page_headers(r.headers_mut());
    Ok(r)
}

async fn drain(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    act(&d, &headers, Action::Drain, name).await
}

async fn undrain(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    act(&d, &headers, Action::Undrain, name).await
}

async fn vacate(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    act(&d, &headers, Action::Vacate, name).await
}

async fn revoke(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    act(&d, &headers, Action::Revoke, id).await
}

/// `GET /dashboard/api/tokens`: the token list, for an administrator's
/// session.
async fn tokens(State(d): State<Arc<Dashboard>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let s = d.sessions.session(&headers)?;
    require_admin(&s.caller, "only an administrator sees the pool's tokens")?;
    let admin = d.admin.clone();
    let list = tokio::task::spawn_blocking(move || admin.tokens())
        .await
        .map_err(|e| ApiError::new(gleaner_proto::wire::ErrorCode::Internal, e.to_string()))??;
    let mut r = axum::Json(list).into_response();
    page_headers(r.headers_mut());
    Ok(r)
}

/// The actions' routes (merged into the dashboard's).
pub(super) fn routes() -> Router<Arc<Dashboard>> {
    Router::new()
        .route("/dashboard/api/stations/{name}/drain", post(drain))
        .route("/dashboard/api/stations/{name}/undrain", post(undrain))
        .route("/dashboard/api/stations/{name}/vacate", post(vacate))
        .route("/dashboard/api/tokens/{id}/revoke", post(revoke))
        .route("/dashboard/api/tokens", get(tokens))
}
