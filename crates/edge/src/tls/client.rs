//! Clients of the pool's TLS: reqwest clients whose only root is the pool
//! CA, and that check the name of the daemon they mean to reach.

use super::material::{Identity, PoolCa, TlsError};
use rustls::DigitallySignedStruct;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Which name the server's certificate must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The URL's host, as any HTTPS client checks (the CLI).
    UrlHost,
    /// This DNS name, whatever address was dialled: the station or
    /// coordinator a daemon means ([`super::station_dns`],
    /// [`super::coordinator_dns`]).
    Named(String),
}

/// The chain must lead to the pool CA and name what we expect.
#[derive(Debug)]
struct PoolServerVerifier {
    inner: Arc<WebPkiServerVerifier>,
    expect: Option<ServerName<'static>>,
}

impl ServerCertVerifier for PoolServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let name = self.expect.as_ref().unwrap_or(server_name);
        self.inner
            .verify_server_cert(end_entity, intermediates, name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A rustls client configuration trusting only `ca`, checking `expect`,
/// and presenting `me` when given (stations do; users do not).
pub fn client_config(
    ca: &PoolCa,
    me: Option<&Identity>,
    expect: Expect,
) -> Result<rustls::ClientConfig, TlsError> {
    let provider = super::provider();
    let inner = WebPkiServerVerifier::builder_with_provider(ca.roots(), provider.clone())
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let expect = match expect {
        Expect::UrlHost => None,
        Expect::Named(n) => Some(
            ServerName::try_from(n.clone())
                .map_err(|e| TlsError::Config(format!("{n:?} is not a DNS name: {e}")))?,
        ),
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PoolServerVerifier { inner, expect }));
    match me {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(|e| TlsError::Config(e.to_string())),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// `builder` made into an HTTPS-only client of the pool's TLS.
pub fn https_client(
    builder: reqwest::ClientBuilder,
    ca: &PoolCa,
    me: Option<&Identity>,
    expect: Expect,
) -> Result<reqwest::Client, TlsError> {
    builder
        .use_preconfigured_tls(client_config(ca, me, expect)?)
        .https_only(true)
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))
}

/// Makes the builder every client of one daemon starts from (timeouts,
/// user agent).
pub type BaseBuilder = Arc<dyn Fn() -> reqwest::ClientBuilder + Send + Sync>;

/// A daemon's clients of its peers: over TLS, one per name it calls (each
/// checks that name); without TLS (loopback pools), one plain client.
pub struct PeerClients {
    tls: Option<(PoolCa, Option<Identity>)>,
    base: BaseBuilder,
    plain: reqwest::Client,
    named: Mutex<HashMap<String, reqwest::Client>>,
}

impl std::fmt::Debug for PeerClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerClients")
            .field("tls", &self.tls.as_ref().map(|(ca, _)| ca.pool()))
            .finish_non_exhaustive()
    }
}

impl PeerClients {
    /// Plain HTTP only (a loopback pool).
    pub fn plain(base: BaseBuilder) -> Result<Self, TlsError> {
        let plain = base()
            .build()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        Ok(PeerClients {
            tls: None,
            base,
            plain,
            named: Mutex::new(HashMap::new()),
        })
    }

    /// TLS with the pool CA `ca`, presenting `me`.
    pub fn tls(base: BaseBuilder, ca: PoolCa, me: Option<Identity>) -> Result<Self, TlsError> {
        let plain = https_client(base(), &ca, me.as_ref(), Expect::UrlHost)?;
        Ok(PeerClients {
            tls: Some((ca, me)),
            base,
            plain,
            named: Mutex::new(HashMap::new()),
        })
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The pool's name, over TLS.
    pub fn pool(&self) -> Option<&str> {
        self.tls.as_ref().map(|(ca, _)| ca.pool())
    }

    fn named(&self, dns: impl FnOnce(&str) -> String) -> reqwest::Client {
        let Some((ca, me)) = &self.tls else {
            return self.plain.clone();
        };
        let name = dns(ca.pool());
        let mut cache = self.named.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.get(&name) {
            return c.clone();
        }
        match https_client((self.base)(), ca, me.as_ref(), Expect::Named(name.clone())) {
            Ok(c) => {
                cache.insert(name, c.clone());
                c
            }
            // Only a name that is no DNS name gets here (station names are
            // checked as such): a client that refuses every server.
            Err(e) => {
                tracing::error!(%name, error = %e, "no TLS client for this name");
                self.plain.clone()
            }
        }
    }

    /// The client for calls to station `name`: over TLS it accepts only
    /// that station's certificate.
    pub fn station(&self, name: &str) -> reqwest::Client {
        self.named(|pool| super::station_dns(pool, name))
    }

    /// The client for calls to the coordinator.
    pub fn coordinator(&self) -> reqwest::Client {
        self.named(super::coordinator_dns)
    }

    /// Checks a peer's base URL against the transport policy
    /// ([`super::check_url`]).
    pub fn check_url(&self, what: &str, url: &str) -> Result<(), String> {
        super::check_url(what, url, self.tls.is_none())
    }
}

/// Trust on a pin: the server's chain must hold a certificate whose
/// SHA-256 is `pin` (a join token's CA hash), and its leaf must chain to
/// it and name the URL's host. For the first contact of a joining station,
/// before it has the pool CA; daemons send their chain with the CA.
#[derive(Debug)]
struct PinnedCaVerifier {
    pin: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl PinnedCaVerifier {
    fn webpki_for(
        &self,
        chain: &[CertificateDer<'_>],
    ) -> Result<Arc<WebPkiServerVerifier>, rustls::Error> {
        let ca = chain
            .iter()
            .find(|c| super::fingerprint_hex(c) == self.pin)
            .ok_or_else(|| {
                rustls::Error::General(format!(
                    "the server's certificates do not include the pool CA {} of the join token",
                    self.pin
                ))
            })?;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca.clone().into_owned())
            .map_err(|e| rustls::Error::General(e.to_string()))?;
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), self.provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))
    }
}

impl ServerCertVerifier for PinnedCaVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let inner = self.webpki_for(intermediates)?;
        inner.verify_server_cert(end_entity, &[], server_name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// An HTTPS-only client that trusts the CA whose SHA-256 is `pin`
/// (`sha256:HEX`) and nothing else, before the CA itself is on disk.
pub fn pinned_client(
    builder: reqwest::ClientBuilder,
    pin: &str,
) -> Result<reqwest::Client, TlsError> {
    let provider = super::provider();
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedCaVerifier {
            pin: pin.to_string(),
            provider,
        }))
        .with_no_client_auth();
    builder
        .use_preconfigured_tls(config)
        .https_only(true)
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))
}
