//! The station daemon (`glean station`): one HTTP server per workstation
//! that is both the home of its users' jobs ([`crate::home`]) and, when
//! idle, a host for other stations' guests ([`crate::host`]) (Mutka 1988
//! §5; thesis summary §1).
//!
//! The node composes the two sides and is all they share:
//! - the station's credentials ([`credentials`]): the pool's public key
//!   and its own station token, never a key that signs; and the tokens
//!   revoked at the coordinator ([`revocations`]);
//! - one HTTP server: the home's and the host's routes behind one
//!   authentication layer ([`gleaner_edge::authenticate`]: a bearer token
//!   signed by the pool's coordinator and not revoked, its
//!   [`gleaner_edge::Caller`] in the request extensions) and one body
//!   limit;
//! - the user socket ([`user_socket`]): the home's user API again, for
//!   local users known by their uid, no token;
//! - the daemon's state kept private ([`private_state`]);
//! - the advertise loop ([`advertise`]): the station's ad is the host's
//!   part ([`HostPart`]) and the home's ([`HomePart`]); of the
//!   coordinator's reply, grants and preemptions go to the home, the pool's
//!   transfer rate to the host, revoked tokens to the verifier;
//! - the events stream ([`events`]): grants and preemptions pushed by the
//!   coordinator as soon as they are decided, to the home;
//! - start and stop.
//!
//! [`HostPart`]: crate::host::HostPart
//! [`HomePart`]: crate::home::HomePart

pub mod advertise;
pub mod credentials;
pub mod events;
pub mod owner_web;
pub mod private_state;
pub mod revocations;
pub mod tls;
pub mod user_socket;

use crate::clock::{now, now_secs};
use crate::config::{ConfigError, StationConfig};
use crate::home::{Home, HomeSetup};
use crate::host::{Host, HostError, HostSetup};
use crate::queue::{JobQueue, QueueError};
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use gleaner_edge::{LocalPeers, SharedRevocations, TokenVerifier, authenticate};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Errors that stop the daemon from starting.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The public key, the station token or the revocations are unusable.
    #[error("credentials: {0}")]
    Credentials(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("HTTP client: {0}")]
    Http(String),
}

/// How the station knows its callers: tokens signed by the pool's
/// coordinator and not revoked, and peers of the user socket.
type StationVerifier = LocalPeers<TokenVerifier<SharedRevocations>>;

/// A running daemon.
pub struct Running {
    /// The bound address.
    pub addr: SocketAddr,
    /// The user socket.
    pub socket: user_socket::UserSocket,
    pub home: Arc<Home>,
    pub host: Arc<Host>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Running {
    /// Stops the station gracefully: the host drains (every guest vacated
    /// and reported to its home, which requeues it); then the server and
    /// the background loops stop, and guests still there are killed.
    pub async fn stop(self) {
        self.host.drain().await;
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        self.socket.remove();
        self.host.clear_leftovers();
    }
}

/// Binds, builds both sides and starts serving and advertising.
pub async fn start(config: StationConfig) -> Result<Running, DaemonError> {
    config.validate()?;
    let io = |what: String| move |source| DaemonError::Io { what, source };
    let name = config.station_name();
    // Credentials first, reading only: a station refused for them leaves
    // its state directory as it found it.
    let revocations = Arc::new(revocations::StationRevocations::open(
        &config.state_dir,
        now_secs(),
    )?);
    let creds = credentials::load(&config, &name, &revocations.snapshot(), now_secs())?;
    private_state::secure(&config)?;
    let mut queue = JobQueue::open(config.queue_path())?;
    let tls = tls::load(&config, &name)?;
    let server_tls = match &tls {
        Some((ca, me)) => Some(
            gleaner_edge::tls::server::server_config(ca, me)
                .map_err(|e| DaemonError::Credentials(e.to_string()))?,
        ),
        None => None,
    };
    let listener = gleaner_edge::tls::Bound::bind(
        config.listen,
        server_tls
            .zip(tls.as_ref())
            .map(|(sc, (ca, _))| (sc, ca.pool())),
    )
    .await
    .map_err(DaemonError::Http)?;
    let addr = listener.local_addr().map_err(io("local address".into()))?;
    let scheme = if listener.is_tls() { "https" } else { "http" };
    let (socket_listener, socket) = user_socket::bind(&config.user_socket_path())?;
    if config.role.executes() {
        crate::home::recover::requeue_own_guests(&mut queue, &name, now());
    }
    let address = if config.address.is_empty() {
        format!("{scheme}://{addr}")
    } else {
        config.address.trim_end_matches('/').to_string()
    };
    let token = creds.token.clone();
    let base: gleaner_edge::tls::client::BaseBuilder = Arc::new(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
    });
    // Over TLS one client per peer, each taking only the certificate of
    // the station (or coordinator) it means, and showing this station's.
    let peers = Arc::new(
        match &tls {
            Some((ca, me)) => {
                gleaner_edge::tls::PeerClients::tls(base, ca.clone(), Some(me.clone()))
            }
            None => gleaner_edge::tls::PeerClients::plain(base),
        }
        .map_err(|e| DaemonError::Http(e.to_string()))?,
    );
    let http = peers.coordinator();
    let config = Arc::new(config);

    let (shutdown, shutdown_rx) = watch::channel(false);
    let (host, mut tasks) = Host::start(
        HostSetup {
            config: config.clone(),
            name: name.clone(),
            address: address.clone(),
            key: creds.verifier.clone(),
            tls: tls.clone(),
        },
        &shutdown_rx,
    )?;
    let host = Arc::new(host);
    let home = Arc::new(Home::new(
        HomeSetup {
            config: config.clone(),
            name: name.clone(),
            address: address.clone(),
            peers: peers.clone(),
        },
        queue,
    )?);

    let mut app = home.router();
    if let Some(r) = host.router() {
        app = app.merge(r);
    }
    app = app.merge(crate::metrics::router(home.clone(), host.clone()));
    let owner_web = owner_web::OwnerWeb::new(config.clone(), host.clone(), name.clone(), addr);
    // Between stations the claim is the credential: this station takes
    // claims naming it, and sends its own token to the coordinator alone.
    let verifier = Arc::new(LocalPeers(
        TokenVerifier::new(creds.verifier.clone(), revocations.shared()).for_station(&name),
    ));
    let app = app
        .fallback(gleaner_edge::not_found)
        .layer(middleware::from_fn_with_state(
            verifier.clone(),
            authenticate::<StationVerifier>,
        ))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        // The owner's page checks its peer and session itself.
        .merge(owner_web::page_router(owner_web.clone()));
    let socket_app = home
        .user_router()
        .merge(owner_web::socket_router(owner_web))
        .fallback(gleaner_edge::not_found)
        .layer(middleware::from_fn_with_state(
            verifier,
            authenticate::<StationVerifier>,
        ))
        .layer(DefaultBodyLimit::max(config.max_body_bytes));
    let mut rx = shutdown_rx.clone();
    let server = gleaner_edge::tls::serve(listener, app, async move {
        let _ = rx.wait_for(|s| *s).await;
    });
    tasks.push(tokio::spawn(async move {
        if let Err(e) = server.await {
            tracing::error!(error = %e, "HTTP server failed");
        }
    }));
    tasks.push(user_socket::serve(
        socket_listener,
        socket_app,
        shutdown_rx.clone(),
    ));
    tasks.extend(home.spawn(&shutdown_rx));
    tasks.push(tokio::spawn(events::run(
        events::Events {
            config: config.clone(),
            token: token.clone(),
            http: http.clone(),
            home: home.clone(),
        },
        shutdown_rx.clone(),
    )));
    tasks.push(tokio::spawn(advertise::run(
        advertise::Advertiser {
            config,
            address: address.clone(),
            token,
            http,
            home: home.clone(),
            host: host.clone(),
            revocations,
        },
        shutdown_rx,
    )));
    tracing::info!(station = %name, %addr, %address, socket = %socket.path().display(),
        key = %creds.verifier.fingerprint(), token = %creds.claims.token_id, "station daemon started");
    Ok(Running {
        addr,
        socket,
        home,
        host,
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
/// stops it. Without a `user_socket` it serves one in its state directory
/// (tests running side by side must not share `/run/gleaner/<name>.sock`).
pub async fn spawn_for_test(
    mut config: StationConfig,
) -> Result<(SocketAddr, Running), DaemonError> {
    if config.user_socket.is_none() {
        config.user_socket = Some(config.state_dir.join("user.sock"));
    }
    let r = start(config).await?;
    Ok((r.addr, r))
}
