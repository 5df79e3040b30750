//! The pool's web dashboard, served by the coordinator under
//! `/dashboard/` (docs/dashboard.md): the stations at a glance (AV/NA, their
//! guests by ladder state, owner-active periods over the last day),
//! per-user queues and waits, the Up-Down table over time, recent
//! evictions and holds with their reasons, DAG progress; live over
//! server-sent events.
//!
//! - [`history`]: what the pool does not keep (owner-state changes over
//!   the day, Up-Down snapshots), bounded and saved in the state directory;
//! - [`view`]: the page's model of the pool, built from the ads (with
//!   their [`StationSummary`](gleaner_proto::summary::StationSummary)),
//!   the Up-Down table and the history;
//! - here: the sampler that notices changes, and the routes.
//!
//! Authentication: `glean dashboard` asks `POST /v1/dashboard/ticket` with
//! the user's pool token (behind the coordinator's usual authentication)
//! for a single-use login ticket, and opens `/dashboard/login?ticket=…`,
//! which trades it for a session cookie ([`gleaner_edge::web`]). Every
//! other route but the static assets needs that session, and a session
//! lasts no longer than its token: it ends when the token expires or is
//! revoked (the coordinator's [`Validator`] asks the token registry on
//! every request, and an open event stream ends within a second).
//! The dashboard is read-only for users; an administrator's session also
//! drains, undrains and vacates stations and revokes tokens ([`actions`]).
//! The assets are compiled into the binary (`include_str!`): no CDN, no
//! build step.

pub mod actions;
pub mod history;
pub mod view;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gleaner_edge::web::{Validator, WebSessions, asset, page_headers};
use gleaner_edge::{ApiError, Caller};
use history::{History, Snapshot};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::task::JoinHandle;
pub use view::PoolView;

/// How often the sampler looks at the pool.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// A page hears from the server at least this often (ages, clocks).
const HEARTBEAT: Duration = Duration::from_secs(5);
/// How often an open event stream asks whether its session still holds
/// (a revoked token's stream ends within this).
const RECHECK: Duration = Duration::from_secs(1);
/// How often the history is written to disk (and at stop).
const SAVE_EVERY: Duration = Duration::from_secs(60);
/// Shortest time between Up-Down snapshots.
const MIN_SNAPSHOT_GAP: Duration = Duration::from_secs(5);

/// Where the dashboard reads the pool (the coordinator's server).
pub trait Source: Send + Sync + 'static {
    fn view(&self) -> PoolView;
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The dashboard's state.
pub struct Dashboard {
    source: Arc<dyn Source>,
    admin: Arc<dyn actions::Admin>,
    sessions: WebSessions,
    history: Mutex<History>,
    /// The latest page model as JSON; its number goes up on each change.
    latest: watch::Sender<(u64, Arc<String>)>,
    state_dir: PathBuf,
}

impl Dashboard {
    /// The dashboard over `source`, acting through `admin`, with the
    /// history saved in `state_dir`; `tls`: served over TLS (`Secure`
    /// cookies); `valid`: asked on every use of a session (is its token
    /// still good).
    pub fn new(
        source: Arc<dyn Source>,
        admin: Arc<dyn actions::Admin>,
        state_dir: PathBuf,
        tls: bool,
        valid: Validator,
    ) -> Arc<Self> {
        let history = History::load(&state_dir);
        Arc::new(Dashboard {
            source,
            admin,
            sessions: WebSessions::new("gleaner_dashboard", "/dashboard")
                .over_tls(tls)
                .with_validator(valid),
            history: Mutex::new(history),
            latest: watch::channel((0, Arc::new(String::from("{}")))).0,
            state_dir,
        })
    }

    fn history(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A login ticket for `caller`, whose token is valid until `until`
    /// (UNIX seconds) (`POST /v1/dashboard/ticket`).
    pub fn ticket(&self, caller: Caller, until: Option<u64>) -> Result<String, ApiError> {
        self.sessions.issue_ticket_until(caller, until)
    }

    /// One look at the pool: records owner-state changes and (every
    /// `snapshot_gap`) the Up-Down table; publishes the page model when it
    /// changed or the heartbeat is due. Returns whether it published.
    fn sample(
        &self,
        snapshot_gap: Duration,
        last: &mut Option<view::Dashboard>,
        force: bool,
    ) -> bool {
        let v = self.source.view();
        let now = now_ms();
        let model = {
            let mut h = self.history();
            for e in &v.ads.stations {
                h.observe(&e.ad.name, e.ad.state, now);
            }
            let due = h
                .updown
                .back()
                .is_none_or(|s| now.saturating_sub(s.at_ms) >= snapshot_gap.as_millis() as u64);
            if due && !v.prio.stations.is_empty() {
                h.snapshot(Snapshot {
                    at_ms: now,
                    si: v
                        .prio
                        .stations
                        .iter()
                        .map(|r| (r.station.clone(), r.si))
                        .collect(),
                    held: v
                        .prio
                        .stations
                        .iter()
                        .map(|r| (r.station.clone(), r.nodes_held))
                        .collect(),
                });
            }
            view::build(&v, &h, now)
        };
        let changed = last.as_ref().is_none_or(|l| l.differs(&model));
        if !(changed || force) {
            return false;
        }
        match serde_json::to_string(&model) {
            Ok(json) => {
                self.latest.send_modify(|(n, s)| {
                    *n += 1;
                    *s = Arc::new(json);
                });
                *last = Some(model);
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "dashboard: cannot encode the pool");
                false
            }
        }
    }

    fn save(&self) {
        let h = self.history().clone();
        if let Err(e) = h.save(&self.state_dir) {
            tracing::warn!(error = %e, "dashboard: cannot save its history");
        }
    }

    /// Starts the sampler; it stops (saving the history) when `halt` turns
    /// true. `interval` is the scheduling interval: one Up-Down snapshot
    /// per interval (at least [`MIN_SNAPSHOT_GAP`] apart).
    pub fn spawn_sampler(
        self: &Arc<Self>,
        interval: Duration,
        mut halt: watch::Receiver<bool>,
    ) -> JoinHandle<()> {
        let me = self.clone();
        let gap = interval.max(MIN_SNAPSHOT_GAP);
        tokio::spawn(async move {
            let mut last = None;
            let mut beat = tokio::time::Instant::now();
            let mut saved = tokio::time::Instant::now();
            loop {
                let force = beat.elapsed() >= HEARTBEAT;
                let m = me.clone();
                let mut l = last.take();
                let published = tokio::task::spawn_blocking(move || {
                    let p = m.sample(gap, &mut l, force);
                    (p, l)
                })
                .await;
                if let Ok((p, l)) = published {
                    last = l;
                    if p {
                        beat = tokio::time::Instant::now();
                    }
                }
                if saved.elapsed() >= SAVE_EVERY {
                    let m = me.clone();
                    let _ = tokio::task::spawn_blocking(move || m.save()).await;
                    saved = tokio::time::Instant::now();
                }
                tokio::select! {
                    _ = tokio::time::sleep(SAMPLE_EVERY) => {}
                    _ = halt.wait_for(|h| *h) => break,
                }
            }
            let m = me.clone();
            let _ = tokio::task::spawn_blocking(move || m.save()).await;
        })
    }
}

const INDEX_HTML: &str = include_str!("assets/index.html");
const DASHBOARD_JS: &str = include_str!("assets/dashboard.js");

/// The 401 page for a browser without a session.
fn login_needed(why: &str) -> Response {
    gleaner_edge::web::login_needed(
        "Gleaner dashboard",
        "/dashboard/style.css",
        why,
        "glean dashboard",
    )
}

#[derive(serde::Deserialize)]
struct LoginQuery {
    ticket: Option<String>,
}

/// `GET /dashboard/login?ticket=T`: the ticket for a session cookie, then
/// to the page (the ticket is spent, so the URL is worth nothing after).
async fn login(
    State(d): State<Arc<Dashboard>>,
    q: Result<Query<LoginQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let ticket = q.ok().and_then(|Query(q)| q.ticket).unwrap_or_default();
    d.sessions
        .login(&ticket, "/dashboard/")
        .unwrap_or_else(|| login_needed("This login link is unknown, used or expired."))
}

async fn index(State(d): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    match d.sessions.caller(&headers) {
        Ok(_) => asset("text/html; charset=utf-8", INDEX_HTML),
        Err(e) => login_needed(e.message()),
    }
}

/// The page's model with who is looking: `{"viewer": …, "pool": …}`.
fn with_viewer(caller: &Caller, csrf: &str, pool: &str) -> String {
    let viewer = serde_json::json!({
        "name": caller.name,
        "role": format!("{:?}", caller.role).to_lowercase(),
        "csrf": csrf,
    });
    format!("{{\"viewer\":{viewer},\"pool\":{pool}}}")
}

async fn state(State(d): State<Arc<Dashboard>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let s = d.sessions.session(&headers)?;
    let pool = d.latest.borrow().1.clone();
    let mut r = (
        [(header::CONTENT_TYPE, "application/json")],
        with_viewer(&s.caller, &s.csrf, &pool),
    )
        .into_response();
    page_headers(r.headers_mut());
    Ok(r)
}

/// `GET /dashboard/api/events`: the page model at once and on every
/// change (server-sent events, `event: pool`). The stream ends as soon as
/// its session does (logout, expiry, the token revoked): it asks every
/// [`RECHECK`].
async fn events(State(d): State<Arc<Dashboard>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let s = d.sessions.session(&headers)?;
    let rx = d.latest.subscribe();
    let stream = futures_util::stream::unfold((rx, true), move |(mut rx, first)| {
        let (d, s) = (d.clone(), s.clone());
        async move {
            if !first {
                loop {
                    let changed = tokio::select! {
                        r = rx.changed() => { r.ok()?; true }
                        _ = tokio::time::sleep(RECHECK) => false,
                    };
                    d.sessions.revalidate(&s).ok()?;
                    if changed {
                        break;
                    }
                }
            }
            let pool = rx.borrow_and_update().1.clone();
            let ev = Event::default()
                .event("pool")
                .data(with_viewer(&s.caller, &s.csrf, &pool));
            Some((Ok::<_, std::convert::Infallible>(ev), (rx, false)))
        }
    });
    let mut r = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    Ok(r)
}

/// `POST /dashboard/logout` (session and CSRF token).
async fn logout(State(d): State<Arc<Dashboard>>, headers: HeaderMap) -> Result<Response, ApiError> {
    d.sessions.check_csrf(&headers)?;
    d.sessions.logout(&headers);
    let mut r = StatusCode::NO_CONTENT.into_response();
    r.headers_mut()
        .insert(header::SET_COOKIE, d.sessions.clear_cookie());
    Ok(r)
}

/// The dashboard's routes, outside the token authentication (they check
/// the session cookie themselves; the assets are public).
pub fn router(d: Arc<Dashboard>) -> Router {
    Router::new()
        .route(
            "/dashboard",
            get(|| async { axum::response::Redirect::to("/dashboard/") }),
        )
        .route("/dashboard/", get(index))
        .route("/dashboard/login", get(login))
        .route("/dashboard/logout", post(logout))
        .route("/dashboard/api/state", get(state))
        .route("/dashboard/api/events", get(events))
        .merge(actions::routes())
        .route(
            "/dashboard/dashboard.js",
            get(|| async { asset("text/javascript; charset=utf-8", DASHBOARD_JS) }),
        )
        .route(
            "/dashboard/charts.js",
            get(|| async {
                asset(
                    "text/javascript; charset=utf-8",
                    gleaner_edge::web::CHARTS_JS,
                )
            }),
        )
        .route(
            "/dashboard/style.css",
            get(|| async { asset("text/css; charset=utf-8", gleaner_edge::web::STYLE_CSS) }),
        )
        .with_state(d)
}

/// `POST /v1/dashboard/ticket` (behind the token authentication): a
/// single-use login ticket for the caller and the path that redeems it.
/// Users and administrators only: a station token is no viewer.
pub fn ticket_reply(
    d: &Dashboard,
    caller: Caller,
    until: Option<u64>,
) -> Result<Response, ApiError> {
    if caller.is_station() {
        return Err(ApiError::new(
            gleaner_proto::wire::ErrorCode::Forbidden,
            "stations do not log in to the dashboard",
        ));
    }
    let t = d.ticket(caller, until)?;
    Ok(axum::Json(serde_json::json!({
        "ticket": t,
        "path": format!("/dashboard/login?ticket={t}"),
        "expires_in_secs": gleaner_edge::web::TICKET_TTL.as_secs(),
    }))
    .into_response())
}
