//! The HTTP endpoint (axum) and the scheduling loop.

use crate::CoordinatorError;
use crate::config::{CoordinatorConfig, Timing};
use crate::mailbox::Served;
use crate::persist::{ClaimsState, FairnessState};
use crate::pool::Pool;
use crate::tokens::{RevocationCache, TokenRegistry};
use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, middleware};
use gleaner_core::time::Time;
use gleaner_edge::{
    ApiError, Caller, RevocationCheck, Role, TokenVerifier, authenticate, not_found,
};
use gleaner_proto::creds::{
    Claims, Revocations, TokenError, load_or_create_signing_key, write_public_key,
};
use gleaner_proto::wire::{ErrorCode, PROTOCOL_VERSION, StationAd, check_version};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Longest station or host name accepted (a DNS name's limit).
const MAX_NAME: usize = 253;
const MAX_ADDRESS: usize = 2048;
/// More CPUs or guests than this in one ad is garbage, not a workstation.
const MAX_CPUS: u32 = 1 << 16;
/// Stations send at most a few hundred job classes (station machine.rs).
const MAX_CLASSES: usize = 4096;

/// The revocations of `tokens.json`, as the coordinator enforces and
/// serves them: reloaded when the file changed (`glean token revoke`
/// writes it), before every check.
pub(crate) struct RegistryRevocations(Mutex<RevocationCache>);

impl RegistryRevocations {
    /// The current set (reloaded if the registry changed). If the file
    /// cannot be read the last good set stays in force: revocations are
    /// never dropped for an I/O error.
    fn current(&self, now_secs: u64) -> Revocations {
        let mut cache = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match cache.refresh(now_secs) {
            Ok(r) => r.clone(),
            Err(e) => {
                tracing::error!(error = %e, "cannot reload the token registry; keeping the last revocations");
                cache.current().clone()
            }
        }
    }
}

impl RegistryRevocations {
    /// Whether token `token_id` is revoked now (the registry reloaded if
    /// it changed): asked on every use of a dashboard session.
    pub(crate) fn is_revoked(&self, token_id: &str, now_secs: u64) -> bool {
        let mut cache = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match cache.refresh(now_secs) {
            Ok(r) => r.contains(token_id),
            Err(e) => {
                tracing::error!(error = %e, "cannot reload the token registry; keeping the last revocations");
                cache.current().contains(token_id)
            }
        }
    }
}

impl RevocationCheck for RegistryRevocations {
    fn check(&self, claims: &Claims, now_secs: u64) -> Result<(), TokenError> {
        self.current(now_secs).check(claims)
    }
}

/// The coordinator's token verifier: the pool's public key, then the
/// registry's revocations.
type CoordinatorVerifier = TokenVerifier<Arc<RegistryRevocations>>;

pub(crate) struct Shared {
    pool: Mutex<Served>,
    revocations: Arc<RegistryRevocations>,
    pub(crate) max_body: usize,
    pub(crate) state_dir: PathBuf,
    /// Held while a drain changes (`drained.json`, then the pool).
    pub(crate) drain_change: Mutex<()>,
    /// Serial number of the last claims snapshot taken (under the pool
    /// lock), and of the last one written: concurrent replies must never
    /// race on the temporary file, nor put an older snapshot over a newer.
    claims_taken: std::sync::atomic::AtomicU64,
    claims_written: Mutex<u64>,
    /// Rung when an ad left an event pass waiting for the gap, so the
    /// scheduler wakes for it.
    pass_waiting: tokio::sync::Notify,
    /// The same two serials for `reservations.json`.
    reservations_taken: std::sync::atomic::AtomicU64,
    reservations_written: Mutex<u64>,
}

impl Shared {
    pub(crate) fn pool(&self) -> MutexGuard<'_, Served> {
        // A panic while holding the lock leaves a consistent-enough pool
        // (every mutation is a whole step); keep serving.
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Numbers a claims snapshot; call while holding the pool lock, so the
    /// numbers follow the order of the snapshots.
    fn stamp_claims(&self) -> u64 {
        self.claims_taken
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1
    }

    /// Numbers a reservations snapshot (call under the pool lock).
    pub(crate) fn stamp_reservations(&self) -> u64 {
        self.reservations_taken
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1
    }

    /// Writes snapshot `serial` to `reservations.json` unless a newer one
    /// is there already.
    pub(crate) async fn save_reservations(
        self: &Arc<Self>,
        serial: u64,
        state: crate::pool::partition::PartitionState,
    ) -> bool {
        let me = self.clone();
        let saved = tokio::task::spawn_blocking(move || {
            let mut written = me
                .reservations_written
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if serial <= *written {
                return Ok(());
            }
            crate::persist_reservations::save(&me.state_dir, &state)?;
            *written = serial;
            Ok::<(), CoordinatorError>(())
        })
        .await;
        matches!(saved, Ok(Ok(())))
    }

    /// Saves the reservation role's state if it changed.
    async fn save_partition_if_dirty(self: &Arc<Self>) {
        let state = {
            let mut pool = self.pool();
            pool.take_partition_state()
                .map(|s| (self.stamp_reservations(), s))
        };
        if let Some((serial, state)) = state
            && !self.save_reservations(serial, state).await
        {
            tracing::error!("could not write reservations.json");
        }
    }

    /// Writes snapshot `serial` to `claims.json` unless a newer one is there
    /// already (it holds every claim this one holds, and more).
    async fn save_claims(self: &Arc<Self>, serial: u64, claims: ClaimsState) -> bool {
        let me = self.clone();
        let saved = tokio::task::spawn_blocking(move || {
            let mut written = me.claims_written.lock().unwrap_or_else(|p| p.into_inner());
            if serial <= *written {
                return Ok(());
            }
            claims.save(&me.state_dir)?;
            *written = serial;
            Ok::<(), CoordinatorError>(())
        })
        .await;
        matches!(saved, Ok(Ok(())))
    }
}

/// The pool's clock: wall-clock microseconds since the UNIX epoch.
pub(crate) fn now() -> Time {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| Time::from_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX)))
        .unwrap_or(Time::ZERO)
}

/// A request body of at most `max` bytes: 413 when it declares more, 400
/// when it is cut short or runs over.
pub(crate) async fn read_body(
    body: Body,
    headers: &HeaderMap,
    max: usize,
) -> Result<axum::body::Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(ApiError::new(
            ErrorCode::BadRequest,
            format!("request body larger than {max} bytes"),
        )
        .with_status(StatusCode::PAYLOAD_TOO_LARGE));
    }
    axum::body::to_bytes(body, max).await.map_err(|e| {
        ApiError::new(
            ErrorCode::BadRequest,
            format!("could not read the request body (truncated or over {max} bytes): {e}"),
        )
    })
}

/// Reads and checks a [`StationAd`]: 400 naming the field where possible,
/// 413 over the body limit, 426 on another protocol version.
async fn read_ad(body: Body, headers: &HeaderMap, max: usize) -> Result<StationAd, ApiError> {
    let bytes = read_body(body, headers, max).await?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            ErrorCode::BadRequest,
            format!("body is not valid JSON: {e}"),
        )
    })?;
    // The version is checked before the shape: another version's ad may
    // legitimately look different.
    if let Some(p) = value.get("protocol") {
        let v = p
            .as_u64()
            .ok_or_else(|| ApiError::bad("protocol", "protocol must be an integer"))?;
        let v = u32::try_from(v).unwrap_or(u32::MAX);
        check_version(v)
            .map_err(|e| ApiError::from(e).with_status(StatusCode::UPGRADE_REQUIRED))?;
    }
    let ad: StationAd = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let msg = format!("invalid station ad: {}", e.inner());
        if path != "." {
            return ApiError::bad(&path, msg);
        }
        // A missing field is reported at its parent: name it from the
        // message ("missing field `cpus` at line 1 column 20").
        match e
            .inner()
            .to_string()
            .strip_prefix("missing field `")
            .and_then(|r| r.split_once('`'))
        {
            Some((field, _)) => ApiError::bad(field, msg),
            None => ApiError::new(ErrorCode::BadRequest, msg),
        }
    })?;
    validate(&ad)?;
    Ok(ad)
}

fn validate(ad: &StationAd) -> Result<(), ApiError> {
    let bad = |field: &str, msg: &str| Err(ApiError::bad(field, msg));
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.len() <= MAX_NAME
            && !n.chars().any(|c| c.is_whitespace() || c.is_control())
    };
    if !name_ok(&ad.name) {
        return bad(
            "name",
            "station name must be 1–253 characters without spaces",
        );
    }
    if ad.address.len() > MAX_ADDRESS {
        return bad("address", "address too long");
    }
    if ad.cpus > MAX_CPUS {
        return bad("cpus", "implausible number of cpus");
    }
    if ad.running_guests.len() > MAX_CPUS as usize {
        return bad("running_guests", "implausible number of guests");
    }
    if ad.claims_held.len() > MAX_CPUS as usize {
        return bad("claims_held", "implausible number of held claims");
    }
    if let Some(i) = ad
        .claims_held
        .iter()
        .position(|c| !name_ok(&c.home) || c.claim.is_empty() || c.claim.len() > 256)
    {
        return bad(
            &format!("claims_held[{i}]"),
            "a held claim names a station and a nonce of at most 256 bytes",
        );
    }
    if ad.classes.len() > MAX_CLASSES {
        return bad("classes", "too many job classes in one ad");
    }
    if let Some(field) = ad.summary.as_ref().and_then(|s| s.within_bounds().err()) {
        return bad(field, "dashboard summary over its bounds");
    }
    if let Some(i) = ad.running_guests.iter().position(|g| !name_ok(&g.home)) {
        return bad(
            &format!("running_guests[{i}].home"),
            "guest home must be a station name",
        );
    }
    Ok(())
}

/// Only station tokens advertise, and each only its own station (DESIGN.md,
/// Trust model: a station speaks only for itself).
const STATIONS_ADVERTISE: &str = "only station tokens may advertise";

async fn advertise(
    State(shared): State<Arc<Shared>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if caller.role != Role::Station {
        tracing::warn!(caller = %caller.name, role = ?caller.role, "advertisement without a station token refused");
        return Err(ApiError::new(ErrorCode::Forbidden, STATIONS_ADVERTISE));
    }
    let ad = read_ad(body, &headers, shared.max_body)
        .await
        .inspect_err(|e| tracing::info!(station = %caller.name, error = %e, "bad advertisement"))?;
    if ad.name != caller.name {
        tracing::warn!(station = %caller.name, ad = %ad.name, "advertisement for another station refused");
        return Err(ApiError::field(
            ErrorCode::Forbidden,
            "name",
            format!(
                "the token of station {:?} may advertise only {:?}, not {:?}",
                caller.name, caller.name, ad.name
            ),
        ));
    }
    let revoked = shared.revocations.current(gleaner_edge::wall_secs());
    let (mut reply, claims) = {
        let mut pool = shared.pool();
        let reply = pool.advertise(ad, now());
        if pool.pass_due().is_some() {
            shared.pass_waiting.notify_one();
        }
        let claims = pool
            .take_claims_dirty()
            .then(|| (shared.stamp_claims(), pool.saved_claims()));
        (reply, claims)
    };
    reply.revoked = revoked;
    if let Some((serial, claims)) = claims {
        // A grant that takes a licence is handed out only once it is on
        // disk, so a restarted coordinator still counts it.
        if !shared.save_claims(serial, claims).await {
            tracing::error!("could not write claims.json; withholding grants");
            return Err(ApiError::new(
                ErrorCode::Unavailable,
                "coordinator cannot persist its claims",
            ));
        }
        shared.pool().release_held();
    }
    // An owner's return on a reserved station moved the binding.
    shared.save_partition_if_dirty().await;
    Ok(Json(reply).into_response())
}

/// How long an events call waits for mail by default, and at most.
const EVENTS_WAIT_SECS: f64 = 25.0;
const EVENTS_WAIT_MAX_SECS: f64 = 60.0;

#[derive(serde::Deserialize)]
struct EventsQuery {
    /// The `last` of the previous reply: everything up to it was received.
    #[serde(default)]
    after: u64,
    /// Seconds to wait for mail before answering with none.
    wait: Option<f64>,
}

/// `GET /v1/events?after=SEQ[&wait=SECS]`: the calling station's grants and
/// preemptions as soon as a pass decides them (long poll). The mailbox is
/// the token's own station's: no station reads another's mail.
async fn events(
    State(shared): State<Arc<Shared>>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    if caller.role != Role::Station {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "only station tokens read events",
        ));
    }
    let Query(q) = query.map_err(|e| ApiError::bad("after", e.to_string()))?;
    let wait = q
        .wait
        .filter(|w| w.is_finite())
        .unwrap_or(EVENTS_WAIT_SECS)
        .clamp(0.0, EVENTS_WAIT_MAX_SECS);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs_f64(wait);
    loop {
        // The lock is released before waiting.
        let bell = shared.pool().events(&caller.name, q.after);
        let mut bell = match bell {
            Ok(reply) => return Ok(Json(reply).into_response()),
            Err(bell) => bell,
        };
        match tokio::time::timeout_at(deadline, bell.changed()).await {
            Ok(Ok(())) => continue,
            // Timed out, or the bell is gone: answer with no mail.
            _ => return Ok(Json(Served::no_events(q.after)).into_response()),
        }
    }
}

async fn ads(State(shared): State<Arc<Shared>>) -> Response {
    let view = shared.pool().ads(now());
    Json(view).into_response()
}

async fn pool_status(State(shared): State<Arc<Shared>>) -> Response {
    let status = shared.pool().status(now());
    Json(status).into_response()
}

async fn userprio(State(shared): State<Arc<Shared>>) -> Response {
    let table = shared.pool().userprio();
    Json(table).into_response()
}

/// `GET /metrics` (any valid pool token: it reads what `/v1/pool` and
/// `/v1/userprio` show).
async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    let snap = {
        let pool = shared.pool();
        crate::metrics::Snapshot {
            status: pool.status(now()),
            prio: pool.userprio(),
            issued: pool.issued(),
            passes: pool.passes(),
            transitions: pool.transitions(),
        }
    };
    let process = gleaner_edge::metrics::ProcessStats::current();
    gleaner_edge::metrics::metrics_response(&crate::metrics::registry(&snap, process))
}

async fn health(State(shared): State<Arc<Shared>>) -> Response {
    let stations = shared.pool().status(now()).stations.len();
    Json(serde_json::json!({
        "status": "ok",
        "protocol": PROTOCOL_VERSION,
        "stations": stations,
    }))
    .into_response()
}

impl crate::dashboard::Source for Shared {
    fn view(&self) -> crate::dashboard::PoolView {
        let pool = self.pool();
        let now = now();
        crate::dashboard::PoolView {
            ads: pool.ads(now),
            status: pool.status(now),
            prio: pool.userprio(),
        }
    }
}

/// Every route behind the edge's authentication: a token signed with the
/// pool's key and not revoked (401 otherwise); the reads are open to every
/// role, advertising to stations for themselves. The dashboard's pages sit
/// outside it: they check their session cookie themselves.
fn router(
    shared: Arc<Shared>,
    verifier: Arc<CoordinatorVerifier>,
    dashboard: Arc<crate::dashboard::Dashboard>,
) -> Router {
    let dash = dashboard.clone();
    let key = verifier.clone();
    // The session lasts no longer than the token shown for its ticket.
    let ticket = post(
        move |Extension(caller): Extension<Caller>, headers: HeaderMap| async move {
            let until = gleaner_edge::auth::bearer(&headers)
                .and_then(|t| key.verify_at(t, gleaner_edge::wall_secs()).ok())
                .and_then(|c| c.expires_at);
            crate::dashboard::ticket_reply(&dash, caller, until)
        },
    );
    Router::new()
        .route("/v1/advertise", post(advertise))
        .route("/v1/dashboard/ticket", ticket)
        .route("/v1/events", get(events))
        .route("/v1/pool", get(pool_status))
        .route("/v1/ads", get(ads))
        .route("/v1/userprio", get(userprio))
        .route("/v1/health", get(health))
        .route("/metrics", get(metrics))
        .merge(crate::reserve_api::routes())
        .merge(crate::admin_api::routes())
        .fallback(not_found)
        .with_state(shared)
        .layer(middleware::from_fn_with_state(
            verifier,
            authenticate::<CoordinatorVerifier>,
        ))
        .merge(crate::dashboard::router(dashboard))
}

/// The coordinator's TLS: its server configuration, the enrolment state
/// (the CA key signs stations' certificates at join), the pool's name.
fn load_tls(
    p: &crate::config::TlsPaths,
    config: &CoordinatorConfig,
) -> Result<
    (
        Arc<rustls::ServerConfig>,
        Arc<crate::enrol::http::EnrolState>,
        String,
    ),
    CoordinatorError,
> {
    use gleaner_edge::tls::{Identity, PoolCa, server};
    let tls = |e: String| CoordinatorError::Tls(e);
    let ca = PoolCa::load(&p.pool, &p.ca).map_err(|e| tls(e.to_string()))?;
    let me = Identity::load(&p.cert, &p.key).map_err(|e| tls(e.to_string()))?;
    let want = gleaner_edge::tls::coordinator_dns(&p.pool);
    if !me.dns_names.contains(&want) {
        return Err(tls(format!(
            "{} does not name {want}: not this pool's coordinator certificate",
            p.cert.display()
        )));
    }
    let sc = server::server_config(&ca, &me).map_err(|e| tls(e.to_string()))?;
    let ca_key = crate::enrol::pki::PoolCaKey::load(&p.pool, &p.ca, &p.ca_key)
        .map_err(|e| tls(e.to_string()))?;
    let signer = gleaner_proto::creds::load_signing_key(&config.signing_key_path())?;
    let enrol = crate::enrol::http::EnrolState {
        registry: TokenRegistry::in_state_dir(&config.state_dir),
        public_key: signer.verifier().to_file_string(),
        signer,
        ca: ca_key,
    };
    tracing::info!(pool = %p.pool, ca = %ca.fingerprint(),
        cert_expires = me.not_after, "TLS on");
    Ok((sc, Arc::new(enrol), p.pool.clone()))
}

/// A coordinator running in the background (see [`spawn`]).
pub struct RunningCoordinator {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), CoordinatorError>>,
}

impl RunningCoordinator {
    /// The address the server is bound to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving, writes the fairness state a last time and waits.
    pub async fn stop(mut self) -> Result<(), CoordinatorError> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        self.wait().await
    }

    async fn wait(self) -> Result<(), CoordinatorError> {
        self.task
            .await
            .map_err(|e| CoordinatorError::Server(format!("coordinator task failed: {e}")))?
    }
}

async fn save(state: FairnessState, dir: PathBuf) -> Result<(), CoordinatorError> {
    tokio::task::spawn_blocking(move || state.save(&dir))
        .await
        .map_err(|e| CoordinatorError::Server(format!("state writer failed: {e}")))?
}

/// Starts the coordinator: loads (or creates) the signing key and writes
/// the public key, reads the token registry and the fairness state, binds
/// `config.listen` and runs the scheduling loop.
pub async fn spawn(config: CoordinatorConfig) -> Result<RunningCoordinator, CoordinatorError> {
    let timing: Timing = config.timing()?;
    gleaner_proto::creds::create_private_dir(&config.state_dir).map_err(|source| {
        CoordinatorError::Io {
            path: config.state_dir.clone(),
            source,
        }
    })?;
    let signer = load_or_create_signing_key(&config.signing_key_path())?;
    let public = signer.verifier();
    write_public_key(&config.public_key_path(), &public)?;
    // A registry that cannot be read would leave revoked tokens valid:
    // refuse to start rather than serve without it.
    let mut cache = RevocationCache::new(TokenRegistry::in_state_dir(&config.state_dir));
    let revoked = cache.refresh(gleaner_edge::wall_secs())?.len();
    let revocations = Arc::new(RegistryRevocations(Mutex::new(cache)));
    let verifier = Arc::new(TokenVerifier::new(public.clone(), revocations.clone()));
    let restored = FairnessState::load(&config.state_dir)?;
    let seed = config.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    let interval = timing.interval;
    let claims = ClaimsState::load(&config.state_dir)?;
    let started = now();
    let pool = Pool::new(
        timing,
        Box::new(signer),
        &config.allocator,
        seed,
        &restored,
        started,
    )
    .with_licences(&config.licences, &claims, started);
    let pool = match &config.reservations {
        Some(rc) => {
            let saved = crate::persist_reservations::load(&config.state_dir)?;
            let had = saved.is_some();
            let p = crate::pool::partition::Partition::new(rc, seed, saved).map_err(|e| {
                CoordinatorError::State {
                    path: crate::persist_reservations::path(&config.state_dir),
                    why: e.to_string(),
                }
            })?;
            tracing::info!(
                restored = had,
                reservations = p.market().reservation_list().len(),
                "reservation coordinator role on"
            );
            pool.with_partition(p)
        }
        None => pool,
    };
    let slot_len = config
        .reservations
        .as_ref()
        .map(|r| std::time::Duration::from_secs(r.slot_secs.max(1)));
    let shared = Arc::new(Shared {
        pool: Mutex::new(Served::new(pool)),
        revocations,
        max_body: config.max_body_bytes,
        state_dir: config.state_dir.clone(),
        claims_taken: Default::default(),
        claims_written: Mutex::new(0),
        pass_waiting: tokio::sync::Notify::new(),
        reservations_taken: Default::default(),
        reservations_written: Mutex::new(0),
        drain_change: Mutex::new(()),
    });
    // Drains survive a restart; a file that cannot be read stops the start.
    let drained = crate::drain_state::load(&config.state_dir)?;
    for h in &drained {
        shared.pool().set_drained(h, true);
    }
    let tls = match config.tls_paths() {
        Some(p) => Some(load_tls(&p, &config)?),
        None => None,
    };
    let listener = gleaner_edge::tls::Bound::bind(
        config.listen,
        tls.as_ref()
            .map(|(sc, _, pool)| (sc.clone(), pool.as_str())),
    )
    .await
    .map_err(CoordinatorError::Tls)?;
    let addr = listener
        .local_addr()
        .map_err(|source| CoordinatorError::Bind {
            addr: config.listen,
            source,
        })?;
    tracing::info!(%addr, stations = restored.stations.len(), key = %public.fingerprint(),
        tls = listener.is_tls(), revoked, drained = drained.len(), "coordinator listening");

    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (halt_tx, mut halt_rx) = tokio::sync::watch::channel(false);
    // A dashboard session ends as soon as its token is revoked.
    let revoked = shared.revocations.clone();
    let valid: gleaner_edge::web::Validator = Arc::new(move |c: &Caller| match &c.credential {
        gleaner_edge::Credential::Token { token_id }
            if revoked.is_revoked(token_id, gleaner_edge::wall_secs()) =>
        {
            Err(format!("token {token_id} has been revoked"))
        }
        _ => Ok(()),
    });
    let dashboard = crate::dashboard::Dashboard::new(
        shared.clone(),
        shared.clone(),
        config.state_dir.clone(),
        config.tls.is_some(),
        valid,
    );
    let dash_sampler = dashboard.spawn_sampler(interval, halt_rx.clone());
    let mut app = router(shared.clone(), verifier, dashboard);
    if let Some((_, enrol, _)) = tls {
        app = app.merge(crate::enrol::http::router(enrol));
    }

    let dir = config.state_dir.clone();
    let task = tokio::spawn(async move {
        let mut server_halt = halt_rx.clone();
        let mut slot_halt = halt_rx.clone();
        let server = tokio::spawn(async move {
            gleaner_edge::tls::serve(listener, app, async move {
                let _ = server_halt.wait_for(|h| *h).await;
            })
            .await
        });
        let sched_shared = shared.clone();
        let sched_dir = dir.clone();
        let scheduler = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await; // the first tick is immediate
            loop {
                // An event pass held back by the gap runs when due; the
                // interval's pass runs on the ticker.
                let due = sched_shared.pool().pass_due();
                let wait_due = async {
                    match due {
                        Some(t) => {
                            let left = t.since(now());
                            tokio::time::sleep(std::time::Duration::from_micros(left.as_micros()))
                                .await
                        }
                        None => sched_shared.pass_waiting.notified().await,
                    }
                };
                // What woke the loop: the interval, a held-back event pass,
                // or the halt.
                let interval_pass = tokio::select! {
                    _ = ticker.tick() => true,
                    _ = wait_due => false,
                    _ = halt_rx.wait_for(|h| *h) => break,
                };
                if !interval_pass {
                    if due.is_some() {
                        let claims = {
                            let mut pool = sched_shared.pool();
                            pool.run_due(now());
                            pool.take_claims_dirty()
                                .then(|| (sched_shared.stamp_claims(), pool.saved_claims()))
                        };
                        if let Some((serial, claims)) = claims {
                            if sched_shared.save_claims(serial, claims).await {
                                sched_shared.pool().release_held();
                            } else {
                                tracing::error!("could not write claims.json");
                            }
                        }
                    }
                    continue;
                }
                let (state, serial, claims) = {
                    let mut pool = sched_shared.pool();
                    pool.tick(now());
                    (
                        pool.fairness(),
                        sched_shared.stamp_claims(),
                        pool.saved_claims(),
                    )
                };
                if let Err(e) = save(state, sched_dir.clone()).await {
                    tracing::error!(error = %e, "could not write the fairness state");
                }
                sched_shared.save_partition_if_dirty().await;
                // Grants with licences are held back from the events
                // stream until written (and wait for the write in a reply).
                if sched_shared.save_claims(serial, claims).await {
                    sched_shared.pool().release_held();
                } else {
                    tracing::error!("could not write claims.json");
                }
            }
        });
        // Reservations begin and end on slot boundaries, not on the
        // scheduling interval: wake at each boundary to bind the new slot.
        let slot_shared = shared.clone();
        let slot_clock = tokio::spawn(async move {
            let Some(len) = slot_len else { return };
            let len_us = u64::try_from(len.as_micros()).unwrap_or(u64::MAX).max(1);
            loop {
                let t = now().as_micros();
                // A little past the boundary, so the slot has begun.
                let left = len_us - t % len_us + 1_000;
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_micros(left)) => {}
                    _ = slot_halt.wait_for(|h| *h) => break,
                }
                let t = now();
                slot_shared.pool().with_partition(t, |_| ());
                slot_shared.save_partition_if_dirty().await;
            }
        });
        let _ = stop_rx.await;
        let _ = halt_tx.send(true);
        let _ = slot_clock.await;
        let _ = scheduler.await;
        let _ = dash_sampler.await;
        let served = server.await;
        let (state, serial, claims) = {
            let pool = shared.pool();
            (pool.fairness(), shared.stamp_claims(), pool.saved_claims())
        };
        if !shared.save_claims(serial, claims).await {
            tracing::error!("could not write claims.json");
        }
        shared.save_partition_if_dirty().await;
        save(state, dir).await?;
        match served {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(CoordinatorError::Server(e.to_string())),
            Err(e) => Err(CoordinatorError::Server(e.to_string())),
        }
    });
    Ok(RunningCoordinator {
        addr,
        stop: Some(stop_tx),
        task,
    })
}

/// Runs the coordinator until `shutdown` completes (e.g. Ctrl-C), then
/// writes the fairness state and returns. This is `glean coordinator`.
pub async fn run(
    config: CoordinatorConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), CoordinatorError> {
    let running = spawn(config).await?;
    shutdown.await;
    tracing::info!("coordinator shutting down");
    running.stop().await
}

/// [`spawn`] on an ephemeral loopback port, for tests (here and in other
/// crates): `config.listen` is replaced by `127.0.0.1:0`.
pub async fn spawn_for_test(
    mut config: CoordinatorConfig,
) -> Result<RunningCoordinator, CoordinatorError> {
    config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    spawn(config).await
}
