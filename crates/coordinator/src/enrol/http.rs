//! The coordinator's enrolment endpoints, outside the token layer (a
//! joining station holds no pool token yet):
//!
//! - `GET /v1/pool/ca`: the pool CA's certificate (public; the joining
//!   station checks it against its join token's pin);
//! - `POST /v1/join`: the join token as bearer credential, checked before
//!   the body is read; the body a [`JoinRequest`]; the answer a
//!   [`JoinReply`].

use super::joins::{self, JoinRefused};
use super::pki::PoolCaKey;
use crate::tokens::{TokenRegistry, TokenRegistryError};
use axum::Json;
use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gleaner_edge::tls::NetPeer;
use gleaner_edge::{ApiError, wall_secs};
use gleaner_proto::creds::PoolSigner;
use gleaner_proto::enrol::{JoinReply, JoinRequest, JoinToken, MAX_JOIN_BODY};
use gleaner_proto::wire::{ErrorCode, PROTOCOL_VERSION, check_version};
use std::sync::Arc;

/// What the join endpoints need: the registry, the signing key (to mint
/// the station token), the CA key (to sign its certificate), `pool.pub`.
pub struct EnrolState {
    pub registry: TokenRegistry,
    pub signer: PoolSigner,
    pub ca: PoolCaKey,
    pub public_key: String,
}

pub fn router(state: Arc<EnrolState>) -> Router {
    Router::new()
        .route("/v1/pool/ca", get(ca))
        .route("/v1/join", post(join))
        .with_state(state)
}

async fn ca(State(s): State<Arc<EnrolState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/x-pem-file")],
        s.ca.ca_pem().to_string(),
    )
        .into_response()
}

fn refused(e: TokenRegistryError) -> ApiError {
    match e {
        TokenRegistryError::Join(JoinRefused::WrongName { .. }) => {
            ApiError::new(ErrorCode::Forbidden, e.to_string())
        }
        TokenRegistryError::Join(JoinRefused::Invalid(why)) => {
            ApiError::new(ErrorCode::BadRequest, why)
        }
        TokenRegistryError::Join(_) => ApiError::new(ErrorCode::Unauthorized, e.to_string()),
        other => {
            tracing::error!(error = %other, "join failed");
            ApiError::new(
                ErrorCode::Internal,
                "the coordinator could not record the join",
            )
        }
    }
}

async fn join(State(s): State<Arc<EnrolState>>, req: Request) -> Result<Response, ApiError> {
    let from = req
        .extensions()
        .get::<ConnectInfo<NetPeer>>()
        .map(|c| c.0.addr.to_string())
        .unwrap_or_default();
    let token = gleaner_edge::auth::bearer(req.headers())
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized, "missing bearer join token"))
        .and_then(|t| JoinToken::parse(t).map_err(|e| ApiError::new(ErrorCode::Unauthorized, e)))?;
    // Who is calling, before the body is read.
    let now = wall_secs();
    let (s2, t2) = (s.clone(), token.clone());
    let station = tokio::task::spawn_blocking(move || joins::check(&s2.registry, &t2, now))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(|e| {
            tracing::warn!(%from, id = %token.id, error = %e, "join refused");
            refused(e)
        })?;
    let bytes = axum::body::to_bytes(req.into_body(), MAX_JOIN_BODY)
        .await
        .map_err(|e| {
            ApiError::new(
                ErrorCode::BadRequest,
                format!("join request over {MAX_JOIN_BODY} bytes or unreadable: {e}"),
            )
            .with_status(StatusCode::PAYLOAD_TOO_LARGE)
        })?;
    let body: JoinRequest = gleaner_edge::parse_json(&bytes)?;
    check_version(body.protocol).map_err(ApiError::from)?;
    let (s2, t2, b2, f2) = (s.clone(), token.clone(), body.clone(), from.clone());
    let done = tokio::task::spawn_blocking(move || {
        joins::redeem(&s2.registry, &s2.signer, &s2.ca, &t2, &b2, &f2, now)
    })
    .await
    .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
    let enrolled = done.map_err(|e| {
        tracing::warn!(%from, %station, asked = %body.name, error = %e, "join refused");
        refused(e)
    })?;
    tracing::info!(%from, station = %body.name, token = %enrolled.station_token.record.token_id,
        "station joined");
    Ok(Json(JoinReply {
        protocol: PROTOCOL_VERSION,
        pool: s.ca.pool().to_string(),
        station: body.name,
        certificate: enrolled.certificate,
        ca: s.ca.ca_pem().to_string(),
        public_key: s.public_key.clone(),
        station_token: enrolled.station_token.token,
    })
    .into_response())
}
