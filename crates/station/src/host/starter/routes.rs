//! The starter's HTTP endpoints: place, list and vacate guests.

use super::{GuestListing, Starter};
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gleaner_edge::{ApiError, Caller, require_station};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{ErrorCode, PlacementRequest, check_version};
use std::sync::Arc;

/// The starter's endpoints. The daemon applies the edge's authentication
/// layer to the whole app, so every handler has a verified [`Caller`].
pub fn router(starter: Arc<Starter>) -> Router {
    Router::new()
        .route("/v1/place", post(place_handler))
        .route("/v1/guests", get(guests_handler))
        .route("/v1/guests/{job}/vacate", post(vacate_handler))
        .with_state(starter)
}

/// Placement and vacating are daemon-to-daemon requests: a user's token,
/// even a valid one, must not start or stop guests on a host (only the
/// home station's daemon acts for its jobs, or an administrator).
const DAEMONS_ONLY: &str = "only station daemons and administrators may place or vacate guests";

async fn place_handler(
    State(s): State<Arc<Starter>>,
    Extension(caller): Extension<Caller>,
    Json(req): Json<PlacementRequest>,
) -> Result<Response, ApiError> {
    require_station(&caller, DAEMONS_ONLY)?;
    check_version(req.protocol).map_err(ApiError::from)?;
    Ok(Json(s.place(req)).into_response())
}

async fn vacate_handler(
    State(s): State<Arc<Starter>>,
    Extension(caller): Extension<Caller>,
    UrlPath(job): UrlPath<String>,
) -> Result<Response, ApiError> {
    require_station(&caller, DAEMONS_ONLY)?;
    let id: JobId = job
        .parse()
        .map_err(|_| ApiError::bad("job", format!("invalid job id {job:?}")))?;
    if s.vacate(id, "vacated on request") {
        Ok((
            StatusCode::ACCEPTED,
            Json(serde_json::json!({"vacating": id})),
        )
            .into_response())
    } else {
        Err(ApiError::new(
            ErrorCode::NotFound,
            format!("job {id} does not run here"),
        ))
    }
}

async fn guests_handler(State(s): State<Arc<Starter>>) -> Json<Vec<GuestListing>> {
    Json(s.listing())
}
