//! The starter's HTTP endpoints: place, list and vacate guests.

use super::{GuestListing, Starter};
use axum::Json;
use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{ErrorBody, ErrorCode, PlacementRequest, check_version};
use std::sync::Arc;

/// The starter's endpoints. The daemon applies its authentication layer to
/// the whole app; that layer's verified claims are required here, and
/// placing or vacating needs a daemon or administrator token.
pub fn router(starter: Arc<Starter>) -> Router {
    Router::new()
        .route("/v1/place", post(place_handler))
        .route("/v1/guests", get(guests_handler))
        .route("/v1/guests/{job}/vacate", post(vacate_handler))
        .with_state(starter)
}

fn error_response(code: ErrorCode, msg: impl Into<String>) -> Response {
    let status =
        StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(ErrorBody::new(code, msg))).into_response()
}

/// Placement and vacating are daemon-to-daemon requests: a user's token,
/// even a valid one, must not start or stop guests on a host (only the
/// home station's daemon acts for its jobs, or an administrator).
fn require_daemon(
    claims: Option<&axum::Extension<gleaner_proto::auth::Claims>>,
) -> Option<Response> {
    use gleaner_proto::auth::Role;
    match claims {
        Some(c) if matches!(c.role, Role::Daemon | Role::Admin) => None,
        Some(c) => {
            tracing::warn!(subject = %c.subject, "refused a starter request from a non-daemon token");
            Some(error_response(
                ErrorCode::Forbidden,
                "only station daemons and administrators may place or vacate guests",
            ))
        }
        None => Some(error_response(
            ErrorCode::Unauthorized,
            "missing authentication",
        )),
    }
}

async fn place_handler(
    State(s): State<Arc<Starter>>,
    claims: Option<axum::Extension<gleaner_proto::auth::Claims>>,
    Json(req): Json<PlacementRequest>,
) -> Response {
    if let Some(r) = require_daemon(claims.as_ref()) {
        return r;
    }
    if let Err(e) = check_version(req.protocol) {
        let status =
            StatusCode::from_u16(e.error.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
        return (status, Json(e)).into_response();
    }
    Json(s.place(req)).into_response()
}

async fn vacate_handler(
    State(s): State<Arc<Starter>>,
    claims: Option<axum::Extension<gleaner_proto::auth::Claims>>,
    UrlPath(job): UrlPath<String>,
) -> Response {
    if let Some(r) = require_daemon(claims.as_ref()) {
        return r;
    }
    let Ok(id) = job.parse::<JobId>() else {
        return error_response(ErrorCode::BadRequest, format!("invalid job id {job:?}"));
    };
    if s.vacate(id, "vacated on request") {
        (
            StatusCode::ACCEPTED,
            Json(serde_json::json!({"vacating": id})),
        )
            .into_response()
    } else {
        error_response(ErrorCode::NotFound, format!("job {id} does not run here"))
    }
}

async fn guests_handler(State(s): State<Arc<Starter>>) -> Json<Vec<GuestListing>> {
    Json(s.listing())
}
