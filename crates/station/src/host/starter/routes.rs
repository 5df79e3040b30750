//! The starter's HTTP endpoints: place, list and vacate guests.

use super::{GuestListing, Starter};
use axum::body::Bytes;
use axum::extract::{FromRequest, Path as UrlPath, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gleaner_edge::{
    ApiError, Caller, Credential, Role, body_bytes, parse_json, require_station,
    require_station_named,
};
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
        .route("/v1/claims/release", post(release_handler))
        .with_state(starter)
}

/// Placement and vacating are daemon-to-daemon requests: a user's token,
/// even a valid one, must not start or stop guests on a host. A station
/// speaks only for itself (DESIGN.md, Trust model): it places its own jobs
/// with claims granted to it, and vacates only its own guests; an
/// administrator may vacate any guest.
const DAEMONS_ONLY: &str = "only station daemons and administrators may place or vacate guests";

async fn place_handler(
    State(s): State<Arc<Starter>>,
    Extension(caller): Extension<Caller>,
    request: Request,
) -> Result<Response, ApiError> {
    // Who is calling is settled before a byte of the body is read.
    require_station(&caller, DAEMONS_ONLY)?;
    let not_the_home = |home: &str| {
        ApiError::field(
            ErrorCode::Forbidden,
            "home",
            format!(
                "placements come from the home station itself: {} may not place for {home:?}",
                caller.name
            ),
        )
    };
    if caller.role != Role::Station {
        return Err(not_the_home("its home"));
    }
    // Read through the extractor so that the server's body limit holds.
    let raw = body_bytes(Bytes::from_request(request, &()).await)?;
    let req: PlacementRequest = parse_json(&raw)?;
    // The placing station is the caller, whatever the body says; the claim
    // must then be granted to it (claims.rs).
    if caller.name != req.home {
        tracing::warn!(caller = %caller.name, home = %req.home, job = %req.job_id,
            "placement for another home refused");
        return Err(not_the_home(&req.home));
    }
    check_version(req.protocol).map_err(ApiError::from)?;
    Ok(Json(s.place(req)).into_response())
}

async fn vacate_handler(
    State(s): State<Arc<Starter>>,
    Extension(caller): Extension<Caller>,
    UrlPath(job): UrlPath<String>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, ApiError> {
    require_station(&caller, DAEMONS_ONLY)?;
    let id: JobId = job
        .parse()
        .map_err(|_| ApiError::bad("job", format!("invalid job id {job:?}")))?;
    let not_here = || ApiError::new(ErrorCode::NotFound, format!("job {id} does not run here"));
    let home = s.guest_home(id).ok_or_else(not_here)?;
    require_station_named(
        &caller,
        &home,
        &format!("only the guest's home station ({home}) or an administrator may vacate it"),
    )?;
    // A claim speaks only for the placement it made.
    if let Credential::Claim { nonce, .. } = &caller.credential
        && s.guest_claim_nonce(id).as_deref() != Some(nonce.as_str())
    {
        tracing::warn!(job = %id, caller = %caller.name, "vacate with the claim of another placement refused");
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "this claim did not place job {id} here: a claim speaks only for its own placement"
            ),
        ));
    }
    let kind = super::guests::VacateKind::parse(q.get("kind").map(String::as_str));
    let why = match kind {
        super::guests::VacateKind::Hold => "held by its home",
        super::guests::VacateKind::Remove => "removed by its home",
        super::guests::VacateKind::Vacate => "vacated on request",
    };
    if s.vacate_as(id, why, kind) {
        Ok((
            StatusCode::ACCEPTED,
            Json(serde_json::json!({"vacating": id})),
        )
            .into_response())
    } else {
        Err(not_here())
    }
}

/// `POST /v1/claims/release`: the home gives up the claim it presents as
/// its credential (claim reuse, `held_claims.rs`): ended at once when idle,
/// else with its guest. Only with the claim itself: a station token names
/// no claim.
async fn release_handler(
    State(s): State<Arc<Starter>>,
    Extension(caller): Extension<Caller>,
) -> Result<Response, ApiError> {
    require_station(&caller, DAEMONS_ONLY)?;
    let Credential::Claim { nonce, .. } = &caller.credential else {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "a claim is given up with the claim itself as the credential",
        ));
    };
    match s.release_claim(nonce, &caller.name) {
        Ok(ended) => {
            Ok(Json(serde_json::json!({"released": true, "ended": ended})).into_response())
        }
        Err(why) => Err(ApiError::new(ErrorCode::NotFound, why)),
    }
}

async fn guests_handler(State(s): State<Arc<Starter>>) -> Json<Vec<GuestListing>> {
    Json(s.listing())
}
