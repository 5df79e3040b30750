//! The owner's page and API (issue 18, item 3; docs/owner.md): what ran on
//! this machine, how quickly guests got out of the way each time the
//! owner came back, and the owner's controls (stop lending now or until a
//! time, a weekly schedule, the eviction policy, a cap on guests' memory).
//!
//! Who may: the machine's owner (`[owner] account`), root, and on a
//! station run by an ordinary user that user. Proof of identity is the
//! user socket's peer credentials (`SO_PEERCRED`): `glean owner` asks
//! there for the state, for changes, or for a single-use login ticket
//! (`POST /v1/owner/ticket`) that the page at `http://127.0.0.1:PORT/owner/`
//! trades for a session cookie ([`gleaner_edge::web`]). The page is served
//! to loopback peers only; a request from elsewhere is 403 before anything
//! else is looked at. Changes from the page carry the session's CSRF
//! token and the page's own `Origin`. The page stays current over
//! server-sent events (`GET /owner/api/events`, `event: owner`): the
//! station looks every [`SAMPLE_EVERY`] and sends the page's state when
//! something on it changed (a stop, the owner's return, a guest's ladder
//! state, a new entry in the history), and at least every [`HEARTBEAT`].

use crate::config::StationConfig;
use crate::host::Host;
use crate::host::owner_controls::{ChangeError, ControlChange};
use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json};
use gleaner_core::detector::OwnerState;
use gleaner_core::eviction::EvictionPolicy;
use gleaner_edge::tls::NetPeer;
use gleaner_edge::web::{WebSessions, asset, page_headers};
use gleaner_edge::{ApiError, Caller, Credential};
use gleaner_proto::wire::ErrorCode;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// History entries sent to the page at most (newest first).
const RETURNS_SENT: usize = 50;
const RUNS_SENT: usize = 100;
/// Largest control change accepted, bytes.
const MAX_CHANGE_BYTES: usize = 16 * 1024;
/// How often an open event stream looks at the owner's state.
const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// An open page hears from the station at least this often (its clock).
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(5);

/// The owner's side of the station's server.
pub struct OwnerWeb {
    pub config: Arc<StationConfig>,
    pub host: Arc<Host>,
    pub name: String,
    /// The address the station's HTTP server is bound to (for the page's
    /// URL).
    pub listen: SocketAddr,
    sessions: WebSessions,
}

impl OwnerWeb {
    pub fn new(
        config: Arc<StationConfig>,
        host: Arc<Host>,
        name: String,
        listen: SocketAddr,
    ) -> Arc<Self> {
        let tls = config.tls.is_some();
        Arc::new(OwnerWeb {
            config,
            host,
            name,
            listen,
            sessions: WebSessions::new("gleaner_owner", "/owner").over_tls(tls),
        })
    }

    /// Whether `caller` is this machine's owner: a peer of the user socket
    /// that is root, the configured `[owner] account`, or the daemon's own
    /// user when the daemon is not root.
    pub fn is_owner(&self, caller: &Caller) -> bool {
        let Credential::Peer { uid } = caller.credential else {
            return false;
        };
        let daemon = nix::unistd::geteuid().as_raw();
        uid == 0
            || (daemon != 0 && uid == daemon)
            || self.config.owner.account.as_deref() == Some(caller.name.as_str())
    }

    fn require_owner(&self, caller: &Caller) -> Result<(), ApiError> {
        if self.is_owner(caller) {
            Ok(())
        } else {
            tracing::warn!(caller = %caller.name, "owner's controls refused to a non-owner");
            Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "{} is not the owner of this machine (owner: {})",
                    caller.name,
                    self.config.owner.account.as_deref().unwrap_or("root only")
                ),
            ))
        }
    }

    fn side(&self) -> Result<&crate::host::OwnerSide, ApiError> {
        self.host.owner_side().ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotFound,
                "this station never hosts guests: there is nothing to lend",
            )
        })
    }

    /// The page's base URL on loopback.
    fn base_url(&self) -> String {
        let ip = if self.listen.ip().is_unspecified() {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            self.listen.ip()
        };
        // The page is on the station's own port: TLS when the station
        // speaks TLS (the browser sees the pool CA's certificate).
        let scheme = if self.config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", SocketAddr::new(ip, self.listen.port()))
    }

    /// Everything the page and `glean owner status` show.
    pub fn state(&self) -> Result<OwnerView, ApiError> {
        let side = self.side()?;
        let saved = side.log.saved();
        let starter = self.host.starter();
        let controls = side.controls.get();
        let policy = starter.map_or_else(
            || self.config.eviction_policy.clone(),
            |s| s.policy().name().to_string(),
        );
        let state = self.host.owner_state();
        Ok(OwnerView {
            station: self.name.clone(),
            account: self.config.owner.account.clone(),
            now_ms: crate::clock::now().as_micros() / 1000,
            state: state_name(state),
            lending: state.is_available(),
            why: side.news.why().map(crate::host::lending_gate::cause_name),
            detector: state_name(*side.detector.borrow()),
            controls,
            schedule_config: self.config.policy.windows.clone(),
            policy,
            policy_config: self.config.eviction_policy.clone(),
            policies: EvictionPolicy::NAMES.to_vec(),
            memory_mb: starter.map_or(0, |s| s.config().memory_mb),
            offered_memory_mb: starter.map_or(0, |s| s.offered_memory_mb()),
            guests: self
                .host
                .guests()
                .into_iter()
                .map(|g| GuestNow {
                    job: g.info.job.to_string(),
                    home: g.info.home,
                    owner: g.info.owner,
                    state: g.state,
                    since_ms: g.info.since.as_micros() / 1000,
                })
                .collect(),
            returns: saved
                .returns
                .iter()
                .rev()
                .take(RETURNS_SENT)
                .cloned()
                .collect(),
            runs: saved.guests.iter().rev().take(RUNS_SENT).cloned().collect(),
            guest_cpu_secs: saved.guests.iter().fold(0.0, |a, r| a + r.cpu_secs),
            to_na: side.news.to_na.load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// Applies one change (the caller is the owner).
    fn change(&self, change: ControlChange) -> Result<OwnerView, ApiError> {
        let side = self.side()?;
        tracing::info!(?change, "owner's control changed");
        side.controls
            .change(change, crate::clock::now_secs())
            .map_err(|e| match e {
                ChangeError::Invalid(field, msg) => ApiError::bad(field, msg),
                ChangeError::Io(m) => ApiError::new(ErrorCode::Internal, m),
            })?;
        self.state()
    }
}

fn state_name(s: OwnerState) -> &'static str {
    match s {
        OwnerState::Av => "AV",
        OwnerState::Na => "NA",
    }
}

/// A guest running now.
#[derive(Serialize)]
pub struct GuestNow {
    pub job: String,
    pub home: String,
    pub owner: String,
    pub state: String,
    pub since_ms: u64,
}

/// The owner's view of the station (`GET /v1/owner`, the page's state).
#[derive(Serialize)]
pub struct OwnerView {
    pub station: String,
    pub account: Option<String>,
    pub now_ms: u64,
    /// As the pool sees it: `AV` (lending) or `NA`.
    pub state: &'static str,
    pub lending: bool,
    /// Why not lending: `stopped`, `schedule`, `owner`.
    pub why: Option<&'static str>,
    /// The activity detector's own state.
    pub detector: &'static str,
    pub controls: crate::host::owner_controls::OwnerControls,
    pub schedule_config: Vec<String>,
    /// The policy for guests placed now, and the configuration's.
    pub policy: String,
    pub policy_config: String,
    pub policies: Vec<&'static str>,
    pub memory_mb: u64,
    pub offered_memory_mb: u64,
    pub guests: Vec<GuestNow>,
    pub returns: Vec<crate::host::owner_log::OwnerReturn>,
    pub runs: Vec<crate::host::owner_log::GuestRun>,
    pub guest_cpu_secs: f64,
    pub to_na: u64,
}

/// Reads a change's body (after the caller was checked), at most
/// [`MAX_CHANGE_BYTES`].
async fn read_body(body: Body) -> Result<axum::body::Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_CHANGE_BYTES)
        .await
        .map_err(|e| {
            ApiError::bad(
                "body",
                format!("cannot read the request body (over {MAX_CHANGE_BYTES} bytes?): {e}"),
            )
        })
}

/// This machine's peers only: the owner's page is for the machine it runs
/// on. A loopback peer, or — when the station listens on one address of
/// its own — a peer with that very address: a connection from this machine
/// to its own address carries it as its source, and a remote host cannot
/// complete a TCP handshake from an address whose replies stay here.
fn require_local(listen: &SocketAddr, peer: &SocketAddr) -> Result<(), ApiError> {
    let own_address = !listen.ip().is_unspecified() && peer.ip() == listen.ip();
    if peer.ip().is_loopback() || own_address {
        Ok(())
    } else {
        tracing::warn!(%peer, "owner's page asked from another machine");
        Err(ApiError::new(
            ErrorCode::Forbidden,
            "the owner's page is served to this machine only",
        ))
    }
}

// ---- the user socket (peer credentials) ----

/// `GET /v1/owner`.
async fn socket_state(
    State(w): State<Arc<OwnerWeb>>,
    Extension(caller): Extension<Caller>,
) -> Result<Response, ApiError> {
    w.require_owner(&caller)?;
    Ok(Json(w.state()?).into_response())
}

/// `POST /v1/owner/controls` with a [`ControlChange`].
async fn socket_change(
    State(w): State<Arc<OwnerWeb>>,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Result<Response, ApiError> {
    w.require_owner(&caller)?;
    let bytes = read_body(body).await?;
    let change: ControlChange = gleaner_edge::parse_json(&bytes)?;
    Ok(Json(w.change(change)?).into_response())
}

/// `POST /v1/owner/ticket`: a login ticket and the page's URL.
async fn socket_ticket(
    State(w): State<Arc<OwnerWeb>>,
    Extension(caller): Extension<Caller>,
) -> Result<Response, ApiError> {
    w.require_owner(&caller)?;
    w.side()?;
    let t = w.sessions.issue_ticket(caller)?;
    Ok(Json(serde_json::json!({
        "ticket": t,
        "url": format!("{}/owner/login?ticket={t}", w.base_url()),
        "expires_in_secs": gleaner_edge::web::TICKET_TTL.as_secs(),
    }))
    .into_response())
}

/// The owner's routes on the user socket (behind its peer authentication).
pub fn socket_router(w: Arc<OwnerWeb>) -> Router {
    Router::new()
        .route("/v1/owner", get(socket_state))
        .route("/v1/owner/controls", post(socket_change))
        .route("/v1/owner/ticket", post(socket_ticket))
        .with_state(w)
}

// ---- the page (TCP, loopback, session cookie) ----

const OWNER_HTML: &str = include_str!("owner_assets/owner.html");
const OWNER_JS: &str = include_str!("owner_assets/owner.js");

/// The 401 page for a browser without a session.
fn login_needed(why: &str) -> Response {
    gleaner_edge::web::login_needed(
        "This machine's lending",
        "/owner/style.css",
        why,
        "glean owner",
    )
}

#[derive(serde::Deserialize)]
struct LoginQuery {
    ticket: Option<String>,
}

async fn page_login(
    State(w): State<Arc<OwnerWeb>>,
    ConnectInfo(peer): ConnectInfo<NetPeer>,
    q: Result<Query<LoginQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    require_local(&w.listen, &peer.addr)?;
    let ticket = q.ok().and_then(|Query(q)| q.ticket).unwrap_or_default();
    Ok(w.sessions
        .login(&ticket, "/owner/")
        .unwrap_or_else(|| login_needed("This login link is unknown, used or expired.")))
}

async fn page_index(
    State(w): State<Arc<OwnerWeb>>,
    ConnectInfo(peer): ConnectInfo<NetPeer>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    require_local(&w.listen, &peer.addr)?;
    Ok(match w.sessions.caller(&headers) {
        Ok(c) if w.is_owner(&c) => asset("text/html; charset=utf-8", OWNER_HTML),
        Ok(_) => login_needed("This session is not the machine owner's."),
        Err(e) => login_needed(e.message()),
    })
}

/// The owner's session behind a page request from `peer`: loopback, a
/// live session, the owner's.
fn owner_session(
    w: &OwnerWeb,
    peer: &NetPeer,
    headers: &HeaderMap,
) -> Result<gleaner_edge::web::Session, ApiError> {
    require_local(&w.listen, &peer.addr)?;
    let s = w.sessions.session(headers)?;
    w.require_owner(&s.caller)?;
    Ok(s)
}

async fn page_state(
    State(w): State<Arc<OwnerWeb>>,
    ConnectInfo(peer): ConnectInfo<NetPeer>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let s = owner_session(&w, &peer, &headers)?;
    let state = serde_json::to_value(w.state()?).unwrap_or_default();
    let mut r = Json(page_model(&s, state)).into_response();
    page_headers(r.headers_mut());
    Ok(r)
}

/// The page's model: who looks, and the owner's state.
fn page_model(s: &gleaner_edge::web::Session, owner: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "viewer": {"name": s.caller.name, "csrf": s.csrf},
        "owner": owner,
    })
}

/// `GET /owner/api/events`: the page's model at once, then on every
/// change (server-sent events, `event: owner`); the stream ends with the
/// session (logout, expiry).
async fn page_events(
    State(w): State<Arc<OwnerWeb>>,
    ConnectInfo(peer): ConnectInfo<NetPeer>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let s = owner_session(&w, &peer, &headers)?;
    w.side()?;
    // (what was sent last, less its clock; when)
    let start: (Option<serde_json::Value>, Option<std::time::Instant>) = (None, None);
    let stream = futures_util::stream::unfold(start, move |(last, sent)| {
        let (w, s) = (w.clone(), s.clone());
        async move {
            loop {
                if sent.is_some() {
                    tokio::time::sleep(SAMPLE_EVERY).await;
                }
                let s = w.sessions.revalidate(&s).ok()?;
                let owner = serde_json::to_value(w.state().ok()?).ok()?;
                let mut key = owner.clone();
                key["now_ms"] = serde_json::Value::Null;
                let due = sent.is_none_or(|t| t.elapsed() >= HEARTBEAT);
                if due || last.as_ref() != Some(&key) {
                    let ev = Event::default()
                        .event("owner")
                        .data(page_model(&s, owner).to_string());
                    let next = (Some(key), Some(std::time::Instant::now()));
                    return Some((Ok::<_, std::convert::Infallible>(ev), next));
                }
            }
        }
    });
    let mut r = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
        .into_response();
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    Ok(r)
}

async fn page_change(
    State(w): State<Arc<OwnerWeb>>,
    ConnectInfo(peer): ConnectInfo<NetPeer>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    require_local(&w.listen, &peer.addr)?;
    // Who, and the CSRF token, before the body is read.
    let s = w.sessions.check_csrf(&headers)?;
    w.require_owner(&s.caller)?;
    let bytes = read_body(body).await?;
    let change: ControlChange = gleaner_edge::parse_json(&bytes)?;
    Ok(Json(w.change(change)?).into_response())
}

async fn page_logout(
    State(w): State<Arc<OwnerWeb>>,
    ConnectInfo(peer): ConnectInfo<NetPeer>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    require_local(&w.listen, &peer.addr)?;
    w.sessions.check_csrf(&headers)?;
    w.sessions.logout(&headers);
    let mut r = StatusCode::NO_CONTENT.into_response();
    r.headers_mut()
        .insert(header::SET_COOKIE, w.sessions.clear_cookie());
    Ok(r)
}

async fn local_asset(
    State(w): State<Arc<OwnerWeb>>,
    ConnectInfo(peer): ConnectInfo<NetPeer>,
    which: &'static str,
) -> Result<Response, ApiError> {
    require_local(&w.listen, &peer.addr)?;
    Ok(match which {
        "js" => asset("text/javascript; charset=utf-8", OWNER_JS),
        "charts" => asset(
            "text/javascript; charset=utf-8",
            gleaner_edge::web::CHARTS_JS,
        ),
        _ => asset("text/css; charset=utf-8", gleaner_edge::web::STYLE_CSS),
    })
}

/// The page's routes on the station's TCP port, outside the token
/// authentication (they check the peer and the session themselves).
pub fn page_router(w: Arc<OwnerWeb>) -> Router {
    Router::new()
        .route(
            "/owner",
            get(|| async { axum::response::Redirect::to("/owner/") }),
        )
        .route("/owner/", get(page_index))
        .route("/owner/login", get(page_login))
        .route("/owner/logout", post(page_logout))
        .route("/owner/api/state", get(page_state))
        .route("/owner/api/events", get(page_events))
        .route("/owner/api/controls", post(page_change))
        .route("/owner/owner.js", get(|s, c| local_asset(s, c, "js")))
        .route("/owner/charts.js", get(|s, c| local_asset(s, c, "charts")))
        .route("/owner/style.css", get(|s, c| local_asset(s, c, "css")))
        .with_state(w)
}

#[cfg(test)]
mod tests {
    use super::require_local;
    use std::net::SocketAddr;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_this_machine_reaches_the_page() {
        let any = a("0.0.0.0:9618");
        let own = a("10.1.2.3:9618");
        assert!(require_local(&any, &a("127.0.0.1:40000")).is_ok());
        assert!(require_local(&any, &a("[::1]:40000")).is_ok());
        assert!(require_local(&own, &a("127.0.0.1:40000")).is_ok());
        // Listening on its own address, the machine's browser comes from it.
        assert!(require_local(&own, &a("10.1.2.3:40000")).is_ok());
        // Anyone else, or any address when listening on all of them.
        assert!(require_local(&own, &a("10.1.2.4:40000")).is_err());
        assert!(require_local(&any, &a("10.1.2.3:40000")).is_err());
        assert!(require_local(&a("[::]:9618"), &a("[fe80::1]:40000")).is_err());
    }
}
