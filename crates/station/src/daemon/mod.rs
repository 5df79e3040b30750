//! The station daemon (`glean station`): one HTTP server per workstation
//! that is both the home of its users' jobs and, when idle, a host for
//! other stations' guests (Mutka 1988 §5; thesis summary §1).
//!
//! - [`config`]: the TOML configuration.
//! - [`user`]: the user API the CLI calls (submit, q, rm/hold/release,
//!   history, output while running).
//! - [`shadow`]: the home-side endpoints a host's starter calls for each of
//!   this station's jobs running elsewhere (sandbox, output, status).
//! - [`schedd`]: the advertise loop and the local scheduler that decides
//!   which of this station's idle jobs uses a granted host.
//! - [`starter`]: the execute side (guests of other stations).
//! - [`dagman`]: the DAG manager (`glean dag`), submitting DAG nodes into
//!   the queue as their dependences allow.
//!
//! Every route sits behind one authentication layer: a pool-key-signed
//! bearer token is required everywhere; its [`Claims`] are put in the
//! request extensions for the handlers.

pub mod checkpoint;
pub mod config;
pub mod dagman;
pub mod guest_records;
pub mod machine;
pub mod owner_watch;
pub mod policy;
pub mod pool_rate;
mod recover;
pub mod schedd;
pub mod shadow;
pub mod starter;
pub mod user;

use crate::queue::{JobQueue, QueueError};
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use config::StationConfig;
use gleaner_core::detector::OwnerState;
use gleaner_core::eviction::EvictionPolicy;
use gleaner_core::time::Time;
use gleaner_proto::auth::{Claims, PoolKey, Role};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{ErrorBody, ErrorCode};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// Errors that stop the daemon from starting.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("pool key: {0}")]
    Key(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("starter: {0}")]
    Starter(#[from] starter::StarterError),
    #[error("HTTP client: {0}")]
    Http(String),
}

/// Current wall-clock time as the queue stores it (UNIX epoch).
pub fn now() -> Time {
    let us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    Time::from_micros(us)
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A request error: an [`ErrorBody`] with its HTTP status.
#[derive(Debug)]
pub struct ApiError(pub ErrorBody);

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError(ErrorBody::new(code, message))
    }
    pub fn field(code: ErrorCode, field: &str, message: impl Into<String>) -> Self {
        ApiError(ErrorBody::new(code, message).with_field(field))
    }
    pub fn bad(field: &str, message: impl Into<String>) -> Self {
        Self::field(ErrorCode::BadRequest, field, message)
    }
}

impl From<QueueError> for ApiError {
    fn from(e: QueueError) -> Self {
        match &e {
            QueueError::NotFound(_) => ApiError::new(ErrorCode::NotFound, e.to_string()),
            QueueError::IllegalTransition { .. } => {
                ApiError::new(ErrorCode::Conflict, e.to_string())
            }
            QueueError::Submit(_) | QueueError::EmptySubmission => {
                ApiError::bad("submission", e.to_string())
            }
            _ => {
                tracing::error!(error = %e, "job queue failure");
                ApiError::new(ErrorCode::Internal, "job queue failure")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.error.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(self.0)).into_response()
    }
}

/// Parses a JSON body into `T`, naming the offending field on failure.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        let msg = e.to_string();
        // serde names the field as `name` in backquotes; surface it.
        let field = msg
            .split('`')
            .nth(1)
            .filter(|_| msg.contains("field"))
            .unwrap_or("body")
            .to_string();
        ApiError::bad(&field, format!("invalid JSON body: {msg}"))
    })
}

/// Parses a `{job}` path segment.
pub fn parse_job_id(s: &str) -> Result<JobId, ApiError> {
    s.parse()
        .map_err(|e: gleaner_proto::job::ParseJobIdError| ApiError::bad("job", e.to_string()))
}

/// State shared by every handler and background task.
pub struct Station {
    pub config: StationConfig,
    pub name: String,
    /// Base URL others use to reach this station (the shadow URL).
    pub address: String,
    key: PoolKey,
    /// This station's Daemon token for placements and vacates.
    pub(crate) daemon_token: String,
    queue: Mutex<JobQueue>,
    pub(crate) spool: PathBuf,
    /// Serialises spool writes, so that appends at an offset are atomic.
    pub(crate) spool_lock: tokio::sync::Mutex<()>,
    /// Wakes the advertise loop early (job submitted or finished).
    pub(crate) wake: Notify,
    /// Wakes the DAG manager, which sleeps while no DAG runs.
    pub(crate) dag_wake: Notify,
    /// Jobs with a placement request in flight.
    pub(crate) placing: Mutex<HashSet<JobId>>,
    /// Base URL of the host each remote job was placed on.
    pub(crate) hosts: Mutex<HashMap<JobId, String>>,
    pub(crate) http: reqwest::Client,
    pub(crate) starter: Option<Arc<starter::Starter>>,
    /// The owner's state as the execute side sees it. Held here so that
    /// the channel stays open for the station's lifetime (the starter takes
    /// a closed channel as "owner back").
    pub(crate) owner: watch::Sender<OwnerState>,
    /// Checkpoints, leases and eviction feedback (issue #6).
    pub(crate) ckpt: checkpoint::HomeCkpt,
}

impl Station {
    /// The job queue. A poisoned lock is recovered: the queue's own
    /// transactions keep the database consistent whatever a panicking
    /// holder left behind.
    pub fn queue(&self) -> MutexGuard<'_, JobQueue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn spool_for(&self, job: JobId) -> PathBuf {
        self.spool.join(job.to_string())
    }

    pub(crate) fn placing(&self) -> MutexGuard<'_, HashSet<JobId>> {
        self.placing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn hosts(&self) -> MutexGuard<'_, HashMap<JobId, String>> {
        self.hosts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Verifies a bearer token with the pool key.
    pub fn verify_token(&self, token: &str) -> Result<Claims, String> {
        self.key
            .verify(token, now_secs())
            .map_err(|e| e.to_string())
    }
}

/// May `claims` act on a job owned by `owner`? Admins and daemons may act
/// on any job; users only on their own.
pub fn may_act_on(claims: &Claims, owner: &str) -> bool {
    matches!(claims.role, Role::Admin | Role::Daemon) || claims.subject == owner
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// The one authentication layer: every route needs a valid token.
async fn auth(State(st): State<Arc<Station>>, mut req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.to_string())
        .unwrap_or_default();
    let Some(token) = bearer(req.headers()) else {
        tracing::warn!(%peer, path = %req.uri().path(), "request without bearer token");
        return ApiError::new(ErrorCode::Unauthorized, "missing bearer token").into_response();
    };
    match st.verify_token(token) {
        Ok(claims) => {
            req.extensions_mut().insert(claims);
            next.run(req).await
        }
        Err(e) => {
            tracing::warn!(%peer, path = %req.uri().path(), error = %e, "rejected token");
            ApiError::new(ErrorCode::Unauthorized, format!("invalid token: {e}")).into_response()
        }
    }
}

async fn fallback() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such endpoint")
}

/// A running daemon.
pub struct Running {
    /// The bound address.
    pub addr: SocketAddr,
    pub station: Arc<Station>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Running {
    /// Stops the station gracefully: no new guests; every guest is vacated
    /// (a self-checkpointing one checkpoints first, within its grace) and
    /// reported to its home, which requeues it; then the server and the
    /// background loops stop. Guests still there after the grace are killed,
    /// so none is left running unsupervised on the owner's machine.
    pub async fn stop(self) {
        if let Some(s) = &self.station.starter {
            s.set_draining(true);
            s.vacate_all("the station is shutting down");
            let deadline =
                std::time::Instant::now() + s.config().checkpoint_grace + Duration::from_secs(5);
            while !s.running_guests().is_empty() && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        if self.station.starter.is_some() {
            guest_records::GuestRecords::new(guest_records::dir(&self.station.config.state_dir))
                .kill_leftovers();
        }
        if let Some(m) = self.station.starter.as_ref().and_then(|s| s.cgroups()) {
            recover::kill_leftover_guests(m);
            if let Err(e) = m.remove_parent() {
                tracing::debug!(error = %e, "guest cgroup parent not removed");
            }
        }
    }
}

/// Binds, builds the station and starts serving and advertising.
pub async fn start(config: StationConfig) -> Result<Running, DaemonError> {
    config.validate()?;
    let io = |what: String| move |source| DaemonError::Io { what, source };
    std::fs::create_dir_all(&config.state_dir)
        .map_err(io(format!("state dir {}", config.state_dir.display())))?;
    std::fs::create_dir_all(config.spool_dir()).map_err(io("spool dir".into()))?;
    let key = gleaner_proto::auth::load_or_create_pool_key(&config.pool_key)
        .map_err(|e| DaemonError::Key(e.to_string()))?;
    let mut queue = JobQueue::open(config.queue_path())?;
    dagman::init(&mut queue)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(io(format!("bind {}", config.listen)))?;
    let addr = listener.local_addr().map_err(io("local address".into()))?;
    let name = config.station_name();
    if config.role.executes() {
        recover::requeue_own_guests(&mut queue, &name, now());
    }
    let address = if config.address.is_empty() {
        format!("http://{addr}")
    } else {
        config.address.trim_end_matches('/').to_string()
    };
    let daemon_token = key.sign(&Claims {
        subject: format!("station@{name}"),
        role: Role::Daemon,
        issued_at: now_secs(),
        expires_at: None,
        token_id: format!("station-{name}"),
    });
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| DaemonError::Http(e.to_string()))?;

    let (shutdown, shutdown_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    // A submit-only station never hosts: it advertises itself as in use.
    let initial = if config.role.executes() {
        OwnerState::Av
    } else {
        OwnerState::Na
    };
    let (owner_tx, owner_rx) = watch::channel(initial);
    let starter = if config.role.executes() {
        let mut sc = starter::StarterConfig::new(name.clone(), config.execute_dir());
        if let Some(c) = config.cpus {
            sc.cpus = c;
        }
        if let Some(m) = config.memory_mb {
            sc.memory_mb = m;
        }
        let cgroups = config
            .isolation
            .build(sc.memory_mb)
            .map_err(|e| DaemonError::Io {
                what: "guest cgroups ([isolation] required = true)".into(),
                source: std::io::Error::other(e),
            })?;
        if let Some(m) = &cgroups {
            recover::kill_leftover_guests(m);
        }
        // Without cgroups too: the guests recorded by a previous run.
        let records = guest_records::dir(&config.state_dir);
        guest_records::GuestRecords::new(&records).kill_leftovers();
        sc.guest_records = Some(records);
        // With operating windows the activity source feeds a gate that
        // forces NA while the windows are closed (policy.rs).
        let activity_tx = if config.policy.windows.is_empty() {
            owner_tx.clone()
        } else {
            let (raw_tx, raw_rx) = watch::channel(initial);
            tasks.push(policy::spawn_window_gate(
                config.policy.windows.clone(),
                raw_rx,
                owner_tx.clone(),
                shutdown_rx.clone(),
            ));
            raw_tx
        };
        if let Some(t) = spawn_activity(&config, cgroups.clone(), activity_tx, shutdown_rx.clone())
        {
            tasks.push(t);
        }
        sc.checkpoint_signal = config.checkpoint_signal_number().unwrap_or(libc::SIGTERM);
        sc.checkpoint_grace = Duration::from_secs_f64(config.checkpoint_grace_secs.max(0.0));
        sc.checkpoint_bytes_per_sec = config.checkpoint_bytes_per_sec;
        sc.criu_sandbox_dir = config.criu_sandbox_dir.clone();
        sc.address = address.clone();
        match EvictionPolicy::from_name(&config.eviction_policy) {
            Some(p) => sc.policy = p,
            None => {
                return Err(DaemonError::Config(config::ConfigError::Invalid {
                    field: "eviction_policy",
                    message: format!("unknown policy {:?}", config.eviction_policy),
                }));
            }
        }
        let starter = starter::Starter::new(
            sc,
            daemon_token.clone(),
            Box::new(starter::PoolKeyClaims(key.clone())),
            owner_rx,
            cgroups,
        )?;
        let mut template = schedd::machine_template(&config, &name);
        template.cpus = starter.config().cpus;
        template.memory_mb = starter.config().memory_mb;
        let policy_cfg = config.policy.clone();
        starter.set_admission(Box::new(move |job: &gleaner_proto::job::JobDescription| {
            let now = now_secs() as i64;
            let mut ad = template.clone();
            ad.policy = policy_cfg.to_ad(now);
            let machine = gleaner_proto::matchmaking::machine_ad(&ad);
            policy::admit(&ad.policy, &machine, job, now)
        }));
        Some(Arc::new(starter))
    } else {
        None
    };

    let ckpt = checkpoint::HomeCkpt::new(
        config.lease(),
        Duration::from_secs_f64(config.avoid_host_secs.max(0.0)),
        config.checkpoint_bytes_per_sec,
        config.max_checkpoint_bytes,
    );
    let station = Arc::new(Station {
        ckpt,
        spool: config.spool_dir(),
        config,
        name,
        address,
        key,
        daemon_token,
        queue: Mutex::new(queue),
        spool_lock: tokio::sync::Mutex::new(()),
        wake: Notify::new(),
        dag_wake: Notify::new(),
        placing: Mutex::new(HashSet::new()),
        hosts: Mutex::new(HashMap::new()),
        http,
        starter,
        owner: owner_tx,
    });

    let mut app = Router::new()
        .merge(user::router())
        .merge(dagman::router())
        .merge(shadow::router())
        .merge(checkpoint::router())
        .with_state(station.clone());
    if let Some(s) = &station.starter {
        app = app.merge(starter::router(s.clone()));
    }
    let app = app
        .fallback(fallback)
        .layer(middleware::from_fn_with_state(station.clone(), auth))
        .layer(DefaultBodyLimit::max(station.config.max_body_bytes));

    let mut rx = shutdown_rx.clone();
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        let _ = rx.wait_for(|s| *s).await;
    });
    tasks.push(tokio::spawn(async move {
        if let Err(e) = server.await {
            tracing::error!(error = %e, "HTTP server failed");
        }
    }));
    if station.config.role.submits() {
        tasks.push(tokio::spawn(dagman::run_loop(
            station.clone(),
            shutdown_rx.clone(),
        )));
    }
    tasks.push(tokio::spawn(checkpoint::lease_monitor(
        station.clone(),
        shutdown_rx.clone(),
    )));
    tasks.push(tokio::spawn(schedd::advertise_loop(
        station.clone(),
        shutdown_rx,
    )));
    tracing::info!(station = %station.name, %addr, address = %station.address, "station daemon started");
    Ok(Running {
        addr,
        station,
        shutdown,
        tasks,
    })
}

/// Runs the daemon until `shutdown` resolves.
pub async fn run(
    config: StationConfig,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), DaemonError> {
    let running = start(config).await?;
    shutdown.await;
    tracing::info!("station daemon stopping");
    running.stop().await;
    Ok(())
}

/// Starts a daemon for tests; returns its address and the handle that
/// stops it.
pub async fn spawn_for_test(config: StationConfig) -> Result<(SocketAddr, Running), DaemonError> {
    let r = start(config).await?;
    Ok((r.addr, r))
}

/// Feeds the starter's owner state from the configured activity source
/// (see [`owner_watch`]).
fn spawn_activity(
    config: &StationConfig,
    cgroups: Option<crate::isolation::CgroupManager>,
    tx: watch::Sender<OwnerState>,
    shutdown: watch::Receiver<bool>,
) -> Option<JoinHandle<()>> {
    match &config.activity {
        config::ActivitySource::AlwaysIdle => None,
        config::ActivitySource::File { path } => {
            Some(owner_watch::spawn_state_file(path.clone(), tx, shutdown))
        }
        config::ActivitySource::Linux => Some(owner_watch::spawn_linux(
            &config.owner,
            cgroups,
            tx,
            shutdown,
        )),
    }
}

/// Maps a body-extraction failure (too large, truncated) to an [`ApiError`].
pub(crate) fn body(
    r: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<axum::body::Bytes, ApiError> {
    r.map_err(|e| {
        let code = if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            "request body is too large"
        } else {
            "cannot read request body"
        };
        ApiError::bad("body", format!("{code}: {e}"))
    })
}
