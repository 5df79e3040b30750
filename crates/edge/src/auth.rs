//! Who is calling: a [`Verifier`] turns the request's credential into a
//! [`Caller`], and the [`authenticate`] middleware puts that caller in the
//! request extensions (or answers 401 itself). Handlers match on the
//! caller; they never see a token.
//!
//! On TCP the credential is a bearer token signed with the pool's Ed25519
//! key ([`crate::TokenVerifier`]). On a local Unix socket it is the peer's
//! credentials ([`PeerCred`], `SO_PEERCRED`): such a server serves with
//! `ConnectInfo<PeerCred>`, any token sent there is ignored, and its
//! verifier ([`crate::LocalPeers`]) maps the uid to a user.

use crate::ApiError;
use crate::tls::NetPeer;
use crate::tls::server::TlsPeer;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gleaner_proto::creds::{self, Claims};
use gleaner_proto::wire::ErrorCode;
use std::net::SocketAddr;
use std::sync::Arc;

/// What a caller may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Submits and manages its own jobs, reads the queue.
    User,
    /// Manages anyone's jobs and the daemons.
    Admin,
    /// A station daemon: advertisements, placements, reports, vacates.
    Station,
}

/// How the caller proved who it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// A bearer token; its id (so that it can be named and revoked).
    Token { token_id: String },
    /// The peer of a local socket, by its uid.
    Peer { uid: u32 },
    /// A claim ticket, presented by one of the two stations it names to
    /// the other: the credential between a home and a host for the one
    /// placement it made (`crate::tokens`); `nonce` names that placement.
    Claim {
        home: String,
        host: String,
        nonce: String,
    },
}

/// An authenticated caller, as the handlers see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The name the caller acts as: a user name, or a station's name.
    pub name: String,
    pub role: Role,
    pub credential: Credential,
}

impl Caller {
    /// The caller a verified token names.
    pub fn from_claims(c: Claims) -> Self {
        let role = match c.role {
            creds::Role::User => Role::User,
            creds::Role::Admin => Role::Admin,
            creds::Role::Station => Role::Station,
        };
        Caller {
            name: c.subject,
            role,
            credential: Credential::Token {
                token_id: c.token_id,
            },
        }
    }

    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }

    pub fn is_station(&self) -> bool {
        self.role == Role::Station
    }
}

/// A local socket peer's credentials (`SO_PEERCRED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCred {
    pub uid: u32,
    pub gid: u32,
    pub pid: Option<i32>,
}

/// Turns a request's credential into a [`Caller`]; `Err` says why not
/// (it goes back to the client in a 401).
pub trait Verifier: Send + Sync + 'static {
    /// The caller a bearer token names.
    fn verify_token(&self, token: &str) -> Result<Caller, String>;

    /// The caller at the other end of a local socket. Refused unless the
    /// verifier knows how to map peers to users.
    fn verify_peer(&self, peer: &PeerCred) -> Result<Caller, String> {
        Err(format!(
            "peer credentials (uid {}) are not accepted here",
            peer.uid
        ))
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme is
/// case-insensitive).
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// The authentication middleware: every request needs a credential `V`
/// accepts; the [`Caller`] goes into the request extensions. Install with
/// `axum::middleware::from_fn_with_state(Arc::new(verifier), authenticate::<V>)`.
pub async fn authenticate<V: Verifier>(
    State(verifier): State<Arc<V>>,
    mut req: Request,
    next: Next,
) -> Response {
    let net = req
        .extensions()
        .get::<ConnectInfo<NetPeer>>()
        .map(|c| c.0.clone());
    let peer = net
        .as_ref()
        .map(|n| n.addr.to_string())
        .or_else(|| {
            req.extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.to_string())
        })
        .unwrap_or_default();
    let path = req.uri().path().to_string();
    let verified = if let Some(ConnectInfo(p)) = req.extensions().get::<ConnectInfo<PeerCred>>() {
        verifier
            .verify_peer(p)
            .map_err(|e| format!("peer not accepted: {e}"))
    } else {
        let Some(token) = bearer(req.headers()) else {
            tracing::warn!(%peer, %path, "request without bearer token");
            return ApiError::new(ErrorCode::Unauthorized, "missing bearer token").into_response();
        };
        verifier
            .verify_token(token)
            .map_err(|e| format!("invalid token: {e}"))
    };
    let verified = verified.and_then(|caller| match net.as_ref().and_then(|n| n.tls.as_ref()) {
        Some(tls) => bind_to_certificate(caller, tls),
        None => Ok(caller),
    });
    match verified {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => {
            tracing::warn!(%peer, %path, error = %e, "rejected credential");
            ApiError::new(ErrorCode::Unauthorized, e).into_response()
        }
    }
}

/// Over TLS a station speaks only with its own certificate: a station
/// credential (its token, or a claim that speaks for it) must come on a
/// connection whose client certificate names that station. A token or
/// claim read somewhere is thus worth nothing without the station's
/// private key. Users and administrators need no certificate.
fn bind_to_certificate(caller: Caller, tls: &TlsPeer) -> Result<Caller, String> {
    if caller.role != Role::Station {
        return Ok(caller);
    }
    match &tls.station {
        Some(name) if *name == caller.name.to_ascii_lowercase() => Ok(caller),
        Some(name) => Err(format!(
            "the credential speaks for station {} but the TLS client certificate names \
             station {name}",
            caller.name
        )),
        None => Err(format!(
            "the credential speaks for station {} but the connection has no station \
             certificate of this pool",
            caller.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::http::{Request as HttpRequest, StatusCode};
    use axum::routing::get;
    use axum::{Extension, middleware};
    use tower::ServiceExt;

    /// Accepts `alice` and `station`, nothing else.
    struct Fixed;

    impl Verifier for Fixed {
        fn verify_token(&self, token: &str) -> Result<Caller, String> {
            let role = match token {
                "alice" => Role::User,
                "station" => Role::Station,
                _ => return Err("unknown token".into()),
            };
            Ok(Caller {
                name: token.into(),
                role,
                credential: Credential::Token {
                    token_id: format!("id-{token}"),
                },
            })
        }
    }

    fn app() -> Router {
        Router::new()
            .route(
                "/who",
                get(|Extension(c): Extension<Caller>| async move { c.name }),
            )
            .layer(middleware::from_fn_with_state(
                Arc::new(Fixed),
                authenticate::<Fixed>,
            ))
    }

    async fn call(auth: Option<&str>) -> (StatusCode, String) {
        let mut req = HttpRequest::get("/who");
        if let Some(a) = auth {
            req = req.header(header::AUTHORIZATION, a);
        }
        let resp = app()
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn the_caller_reaches_the_handler() {
        assert_eq!(
            call(Some("Bearer alice")).await,
            (StatusCode::OK, "alice".into())
        );
        assert_eq!(call(Some("bearer station")).await.1, "station");
        let (s, body) = call(Some("Bearer mallory")).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        assert!(
            body.contains("unauthorized") && body.contains("unknown token"),
            "{body}"
        );
        assert_eq!(call(None).await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(call(Some("Basic alice")).await.0, StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn station_tokens_are_stations() {
        let c = Caller::from_claims(Claims {
            subject: "ws1".into(),
            role: creds::Role::Station,
            issued_at: 0,
            expires_at: None,
            token_id: "t1".into(),
        });
        assert!(c.is_station() && !c.is_admin());
        assert_eq!(
            c.credential,
            Credential::Token {
                token_id: "t1".into()
            }
        );
    }
}
