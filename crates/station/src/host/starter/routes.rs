//! The starter's HTTP endpoints: place, list and vacate guests.

use super::{GuestListing, Starter};
use axum::body::Bytes;
use axum::extract::{FromRequest, Path as UrlPath, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gleaner_edge::{ApiError, Caller, Credential, Role, body_bytes, parse_json, require_station};
use gleaner_proto::guest_key::GuestKey;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{ErrorCode, GangHoldResponse, PlacementRequest, check_version};
use std::sync::Arc;

/// The starter's endpoints. The daemon applies the edge's authentication
/// layer to the whole app, so every handler has a verified [`Caller`].
pub fn router(starter: Arc<Starter>) -> Router {
    Router::new()
        .route("/v1/place", post(place_handler))
        .route("/v1/guests", get(guests_handler))
        .route("/v1/guests/{job}/vacate", post(vacate_handler))
        .route("/v1/guests/{job}/gang", post(gang_handler))
        .route("/v1/claims/release", post(release_handler))
        .with_state(starter)
}

/// How long a gang hold's answer waits for the member's supervisor.
const GANG_REPLY: std::time::Duration = std::time::Duration::from_secs(2);

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
    let id = parse_job(&job)?;
    let key = callers_guest(&s, &caller, id, q.get("home").map(String::as_str))?;
    let kind = super::guests::VacateKind::parse(q.get("kind").map(String::as_str));
    let why = match kind {
        super::guests::VacateKind::Hold => "held by its home",
        super::guests::VacateKind::Remove => "removed by its home",
        super::guests::VacateKind::Vacate => "vacated on request",
    };
    if s.vacate_as(&key, why, kind) {
        Ok((
            StatusCode::ACCEPTED,
            Json(serde_json::json!({"vacating": id, "home": key.home})),
        )
            .into_response())
    } else {
        Err(not_here(id))
    }
}

/// `POST /v1/guests/{job}/gang?hold=true|false`: the home of a parallel
/// job suspends (or releases) one member with its gang, because another
/// member's owner came back (docs/jobs.md, "Parallel jobs"). Heard exactly
/// as a vacate is: from the member's own home (its claim of this
/// placement, or its station token) or an administrator, never another
/// home.
async fn gang_handler(
    State(s): State<Arc<Starter>>,
    Extension(caller): Extension<Caller>,
    UrlPath(job): UrlPath<String>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, ApiError> {
    require_station(&caller, DAEMONS_ONLY)?;
    let id = parse_job(&job)?;
    let hold = match q.get("hold").map(String::as_str) {
        Some("true") => true,
        Some("false") => false,
        _ => return Err(ApiError::bad("hold", "expected hold=true or hold=false")),
    };
    let key = callers_guest(&s, &caller, id, q.get("home").map(String::as_str))?;
    if !s.is_gang_member(&key) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("job {id} is no member of a parallel job"),
        ));
    }
    let (reply, heard) = tokio::sync::oneshot::channel();
    if !s.gang_hold(&key, hold, Some(reply)) {
        return Err(not_here(id));
    }
    tracing::info!(guest = %key, hold, "gang hold requested by its home");
    // Whether its own owner's ladder keeps it stopped, if the running
    // program's supervisor answers soon (absent: not known).
    let by_owner = tokio::time::timeout(GANG_REPLY, heard)
        .await
        .ok()
        .and_then(Result::ok);
    Ok((
        StatusCode::ACCEPTED,
        Json(GangHoldResponse {
            job: id,
            home: key.home.clone(),
            hold,
            suspended_by_owner: by_owner,
        }),
    )
        .into_response())
}

/// The job id of a guest route.
fn parse_job(job: &str) -> Result<JobId, ApiError> {
    job.parse()
        .map_err(|_| ApiError::bad("job", format!("invalid job id {job:?}")))
}

/// The guest a vacate or gang request means ([`guest_to_vacate`]), if the
/// caller's claim is the one that placed it ([`claim_speaks_for`]).
fn callers_guest(
    s: &Starter,
    caller: &Caller,
    id: JobId,
    home: Option<&str>,
) -> Result<GuestKey, ApiError> {
    let key = guest_to_vacate(s, caller, id, home)?;
    claim_speaks_for(s, caller, &key)?;
    Ok(key)
}

/// A claim speaks only for the placement it made: a caller presenting a
/// claim may act on the guest `key` only if that claim placed it.
fn claim_speaks_for(s: &Starter, caller: &Caller, key: &GuestKey) -> Result<(), ApiError> {
    if let Credential::Claim { nonce, .. } = &caller.credential
        && s.guest_claim_nonce(key).as_deref() != Some(nonce.as_str())
    {
        tracing::warn!(guest = %key, caller = %caller.name, "a request with the claim of another placement refused");
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "this claim did not place job {} here: a claim speaks only for its own placement",
                key.job
            ),
        ));
    }
    Ok(())
}

fn not_here(id: JobId) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("job {id} does not run here"))
}

/// Which guest a vacate means. A job id names a job only at its home, so
/// a station's request is for its own job of that id: the home is the
/// station the credential proves (its token, or the claim's home), never
/// one the request names. An administrator may vacate any guest and names
/// the home with `?home=` when two homes' jobs of that id run here.
fn guest_to_vacate(
    s: &Starter,
    caller: &Caller,
    id: JobId,
    asked: Option<&str>,
) -> Result<GuestKey, ApiError> {
    let homes = s.homes_of_job(id);
    if homes.is_empty() {
        return Err(not_here(id));
    }
    let refused = |why: &str| {
        tracing::warn!(caller = %caller.name, job = %id, asked, why, "vacate refused");
        ApiError::new(
            ErrorCode::Forbidden,
            format!("only the guest's home station or an administrator may vacate job {id} here"),
        )
    };
    let home = match (caller.role, asked, homes.as_slice()) {
        (Role::Admin, Some(h), _) => h.to_string(),
        (Role::Admin, None, [only]) => only.clone(),
        (Role::Admin, None, _) => {
            return Err(ApiError::bad(
                "home",
                format!(
                    "job {id} of several homes runs here ({}): name one with ?home=",
                    homes.join(", ")
                ),
            ));
        }
        // A station names no other home than its own.
        (_, Some(h), _) if h != caller.name => return Err(refused("names another home")),
        _ => caller.name.clone(),
    };
    let key = GuestKey::new(home, id);
    if s.has_guest(&key) {
        Ok(key)
    } else if caller.role == Role::Admin {
        Err(not_here(id))
    } else {
        // Only another home's job of this id runs here.
        Err(refused("another home's guest"))
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
