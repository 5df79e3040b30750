//! TLS between the daemons and for remote clients (issue 13), on rustls
//! with ring as the one crypto provider.
//!
//! Trust is the pool's own certificate authority, made by `glean pool
//! init`; no system root is ever trusted. Identities are names in the
//! certificates' subject alternative names:
//!
//! - a station `NAME` of pool `POOL` is `NAME.station.POOL`
//!   ([`station_dns`]), issued to it when it joins;
//! - the coordinator is `coordinator.POOL` ([`coordinator_dns`]).
//!
//! Both carry their addresses too, so a client that knows only a URL (the
//! CLI) checks the URL's host as any HTTPS client does. A daemon that
//! calls another checks the *name* it means instead ([`Expect::Named`]):
//! a host calls the home its claim names, a home the host of its grant, a
//! station the coordinator, whatever address answers.
//!
//! - [`material`]: the pool CA ([`PoolCa`], pinned by its SHA-256
//!   fingerprint) and a daemon's own certificate and key ([`Identity`]);
//! - [`server`]: serving a router over TLS or, on loopback only, plain
//!   HTTP; the caller's certificate name reaches the handlers in
//!   [`NetPeer`];
//! - [`client`]: reqwest clients that trust only the pool CA and check
//!   the peer's name ([`PeerClients`]).

pub mod client;
pub mod material;
pub mod server;

pub use client::{Expect, PeerClients, client_config, https_client, pinned_client};
pub use material::{Identity, PoolCa, TlsError, fingerprint_hex};
pub use server::{Bound, NetPeer, TlsListener, serve};

use std::net::IpAddr;
use std::sync::Arc;

/// The crypto provider of every TLS configuration Gleaner makes.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The DNS name in the certificate of station `name` of pool `pool`.
pub fn station_dns(pool: &str, name: &str) -> String {
    format!(
        "{}.station.{}",
        name.to_ascii_lowercase(),
        pool.to_ascii_lowercase()
    )
}

/// The DNS name in the coordinator's certificate of pool `pool`.
pub fn coordinator_dns(pool: &str) -> String {
    format!("coordinator.{}", pool.to_ascii_lowercase())
}

/// Whether `host` (a URL's host, brackets removed) is a loopback address:
/// the only place plain HTTP is allowed.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Checks a base URL against the transport policy: `https://` anywhere,
/// `http://` only to a loopback host (and only where plain HTTP is
/// configured: `plain_ok`). `what` names the setting in the error.
pub fn check_url(what: &str, url: &str, plain_ok: bool) -> Result<(), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{what} {url:?} is not a URL (https://HOST:PORT)"))?;
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) && !h.ends_with(':') => h,
        _ => authority,
    };
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(()),
        "http" if !is_loopback_host(host) => Err(format!(
            "{what} {url:?}: plain HTTP is allowed only on loopback; use https:// \
             (the pool's TLS, see docs/deploy.md)"
        )),
        "http" if !plain_ok => Err(format!(
            "{what} {url:?}: plain HTTP, but this side speaks TLS; use https://"
        )),
        "http" => Ok(()),
        other => Err(format!("{what} {url:?}: unknown scheme {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_on_loopback() {
        assert!(check_url("coordinator", "http://127.0.0.1:9618", true).is_ok());
        assert!(check_url("coordinator", "http://[::1]:9618/", true).is_ok());
        assert!(check_url("coordinator", "http://localhost:9618", true).is_ok());
        let e = check_url("coordinator", "http://10.1.2.3:9618", true).unwrap_err();
        assert!(
            e.contains("only on loopback") && e.contains("coordinator"),
            "{e}"
        );
        assert!(check_url("x", "http://127.0.0.1:1", false).is_err());
        assert!(check_url("x", "https://10.1.2.3:9618", false).is_ok());
        assert!(check_url("x", "ftp://a", true).is_err());
        assert!(check_url("x", "nonsense", true).is_err());
    }

    #[test]
    fn names() {
        assert_eq!(station_dns("Lab", "WS12"), "ws12.station.lab");
        assert_eq!(coordinator_dns("lab"), "coordinator.lab");
    }
}
