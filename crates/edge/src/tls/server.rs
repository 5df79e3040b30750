//! Serving a router over TLS, or over plain HTTP on loopback only.
//!
//! Handshakes run in tasks of their own (a slow client holds up no one),
//! bounded in number and time. A client that speaks plain HTTP to a TLS
//! port gets a plain `400` saying to use `https://` and nothing else: no
//! request of it reaches a handler. The station a client certificate
//! names reaches the handlers as [`NetPeer`] connect info, for
//! [`crate::authenticate`] to bind it to the bearer credential.

use super::material::{Identity, PoolCa, TlsError, leaf_facts, station_of};
use axum::Router;
use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Longest a client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at once; more wait in the kernel's backlog.
const MAX_HANDSHAKES: usize = 256;

/// The far end of a TCP connection, as handlers see it
/// (`ConnectInfo<NetPeer>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetPeer {
    pub addr: SocketAddr,
    /// `Some` over TLS.
    pub tls: Option<TlsPeer>,
}

/// What the TLS handshake proved about the client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsPeer {
    /// The station its certificate names (`NAME.station.POOL`), if it
    /// presented one signed by the pool CA.
    pub station: Option<String>,
    /// Whether it presented a certificate at all.
    pub certified: bool,
}

impl Connected<IncomingStream<'_, TcpListener>> for NetPeer {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> Self {
        NetPeer {
            addr: *stream.remote_addr(),
            tls: None,
        }
    }
}

impl Connected<IncomingStream<'_, TlsListener>> for NetPeer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// The server side of the pool's TLS: its certificate, and client
/// certificates optional (users have none) but, when given, signed by the
/// pool CA or the handshake fails.
pub fn server_config(ca: &PoolCa, me: &Identity) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = super::provider();
    let clients = WebPkiClientVerifier::builder_with_provider(ca.roots(), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_client_cert_verifier(clients)
        .with_single_cert(me.chain.clone(), me.key.clone_key())
        .map_err(|e| TlsError::Config(e.to_string()))?;
    Ok(Arc::new(config))
}

/// A TCP listener whose connections come out as finished TLS sessions.
pub struct TlsListener {
    rx: mpsc::Receiver<(TlsStream<TcpStream>, NetPeer)>,
    local: SocketAddr,
    accept_task: tokio::task::AbortHandle,
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

impl TlsListener {
    /// Serves TLS with `config` on `tcp`; client certificates are read for
    /// station names of pool `pool`.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>, pool: &str) -> io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, rx) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        let pool = pool.to_string();
        let permits = Arc::new(Semaphore::new(MAX_HANDSHAKES));
        let task = tokio::spawn(async move {
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let (tcp, addr) = match tcp.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        // EMFILE and friends: back off as axum does.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let (acceptor, tx, pool) = (acceptor.clone(), tx.clone(), pool.clone());
                tokio::spawn(async move {
                    let done = tokio::time::timeout(
                        HANDSHAKE_TIMEOUT,
                        handshake(acceptor, tcp, addr, &pool),
                    )
                    .await;
                    drop(permit);
                    match done {
                        Ok(Some(conn)) => {
                            let _ = tx.send(conn).await;
                        }
                        Ok(None) => {}
                        Err(_) => tracing::info!(%addr, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            rx,
            local,
            accept_task: task.abort_handle(),
        })
    }
}

/// One handshake; `None` when the client spoke plain HTTP (answered with
/// a 400) or the handshake failed (logged).
async fn handshake(
    acceptor: TlsAcceptor,
    mut tcp: TcpStream,
    addr: SocketAddr,
    pool: &str,
) -> Option<(TlsStream<TcpStream>, NetPeer)> {
    let _ = tcp.set_nodelay(true);
    let mut first = [0u8; 1];
    match tcp.peek(&mut first).await {
        Ok(1) => {}
        _ => return None,
    }
    // A TLS record of type handshake starts with 0x16; anything printable
    // is someone speaking plain HTTP to this port.
    if first[0] != 0x16 {
        tracing::warn!(%addr, "plain-text request on the TLS port refused");
        let body = "this Gleaner daemon speaks HTTPS only: use https:// and the pool's CA \
                    (docs/deploy.md)\n";
        let reply = format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tcp.write_all(reply.as_bytes()).await;
        let _ = tcp.shutdown().await;
        return None;
    }
    match acceptor.accept(tcp).await {
        Ok(tls) => {
            let (_, session) = tls.get_ref();
            let peer = match session.peer_certificates().and_then(|c| c.first()) {
                Some(leaf) => TlsPeer {
                    station: leaf_facts(leaf)
                        .ok()
                        .and_then(|(_, names)| station_of(&names, pool)),
                    certified: true,
                },
                None => TlsPeer::default(),
            };
            Some((
                tls,
                NetPeer {
                    addr,
                    tls: Some(peer),
                },
            ))
        }
        Err(e) => {
            tracing::warn!(%addr, error = %e, "TLS handshake refused");
            None
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = NetPeer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(c) => c,
            // The accept task is gone (only when dropped): nothing more
            // will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(NetPeer {
            addr: self.local,
            tls: Some(TlsPeer::default()),
        })
    }
}

/// A bound server socket: TLS, or plain HTTP on loopback.
pub enum Bound {
    Plain(TcpListener),
    Tls(TlsListener),
}

impl Bound {
    /// Binds `addr`: with `tls` (the server configuration and the pool's
    /// name) as TLS; without, as plain HTTP, which is refused on any
    /// address but loopback.
    pub async fn bind(
        addr: SocketAddr,
        tls: Option<(Arc<ServerConfig>, &str)>,
    ) -> Result<Bound, String> {
        if tls.is_none() && !addr.ip().is_loopback() {
            return Err(format!(
                "listen = {addr}: plain HTTP is served only on loopback; give the daemon \
                 its [tls] (glean pool init / glean station join) or listen on 127.0.0.1"
            ));
        }
        let tcp = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("bind {addr}: {e}"))?;
        Ok(match tls {
            None => Bound::Plain(tcp),
            Some((config, pool)) => Bound::Tls(
                TlsListener::new(tcp, config, pool).map_err(|e| format!("bind {addr}: {e}"))?,
            ),
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Bound::Plain(l) => l.local_addr(),
            Bound::Tls(l) => Ok(l.local),
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Bound::Tls(_))
    }
}

/// Serves `app` on `bound` until `shutdown` resolves (graceful).
pub async fn serve(
    bound: Bound,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let svc = app.into_make_service_with_connect_info::<NetPeer>();
    match bound {
        Bound::Plain(l) => axum::serve(l, svc).with_graceful_shutdown(shutdown).await,
        Bound::Tls(l) => axum::serve(l, svc).with_graceful_shutdown(shutdown).await,
    }
}
