//! What TLS is made of: the pool CA ([`PoolCa`]) every side trusts, and a
//! daemon's own certificate chain and private key ([`Identity`]).

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

/// Why TLS material could not be used; each names its file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {why}")]
    Bad { path: PathBuf, why: String },
    #[error("TLS configuration: {0}")]
    Config(String),
}

fn bad(path: &Path, why: impl Into<String>) -> TlsError {
    TlsError::Bad {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// `sha256:` and the hex SHA-256 of a certificate's DER: how a join token
/// pins the pool CA before anything from the network is trusted.
pub fn fingerprint_hex(der: &[u8]) -> String {
    let d = Sha256::digest(der);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The pool's certificate authority, as every daemon and client trusts it:
/// the one root, never with the system's.
#[derive(Clone, Debug)]
pub struct PoolCa {
    pool: String,
    der: CertificateDer<'static>,
    roots: Arc<RootCertStore>,
}

impl PoolCa {
    /// The CA of pool `pool` from PEM text; `origin` names it in errors.
    pub fn from_pem(pool: &str, pem: &[u8], origin: &Path) -> Result<Self, TlsError> {
        let der = CertificateDer::pem_slice_iter(pem)
            .next()
            .ok_or_else(|| bad(origin, "no certificate in the file"))?
            .map_err(|e| bad(origin, format!("not a PEM certificate: {e}")))?;
        let (_, cert) = X509Certificate::from_der(&der)
            .map_err(|e| bad(origin, format!("not an X.509 certificate: {e}")))?;
        if !cert.is_ca() {
            return Err(bad(origin, "not a CA certificate"));
        }
        let mut roots = RootCertStore::empty();
        roots
            .add(der.clone())
            .map_err(|e| bad(origin, format!("not usable as a root: {e}")))?;
        Ok(PoolCa {
            pool: pool.to_string(),
            der,
            roots: Arc::new(roots),
        })
    }

    /// The CA of pool `pool` in the PEM file `path`.
    pub fn load(pool: &str, path: &Path) -> Result<Self, TlsError> {
        let pem = std::fs::read(path).map_err(|source| TlsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        PoolCa::from_pem(pool, &pem, path)
    }

    pub fn pool(&self) -> &str {
        &self.pool
    }

    pub fn der(&self) -> &CertificateDer<'static> {
        &self.der
    }

    /// The CA in PEM, as `GET /v1/pool/ca` serves it.
    pub fn pem(&self) -> String {
        pem_of(&self.der)
    }

    /// `sha256:<hex>` of the CA certificate.
    pub fn fingerprint(&self) -> String {
        fingerprint_hex(&self.der)
    }

    pub fn roots(&self) -> Arc<RootCertStore> {
        self.roots.clone()
    }
}

/// A certificate in PEM.
pub fn pem_of(der: &[u8]) -> String {
    use std::fmt::Write;
    let b64 = base64_std(der);
    let mut s = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        let _ = writeln!(s, "{}", String::from_utf8_lossy(chunk));
    }
    s.push_str("-----END CERTIFICATE-----\n");
    s
}

fn base64_std(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A daemon's own certificate chain and private key.
#[derive(Debug)]
pub struct Identity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// The leaf's expiry, seconds since the UNIX epoch.
    pub not_after: i64,
    /// The leaf's DNS names.
    pub dns_names: Vec<String>,
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Identity {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
            not_after: self.not_after,
            dns_names: self.dns_names.clone(),
        }
    }
}

impl Identity {
    /// Reads `cert` (PEM, leaf first) and `key` (PEM, PKCS#8; mode 0600:
    /// refused if group or others may read it).
    pub fn load(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| TlsError::Io { path: p, source }
        };
        let meta = std::fs::metadata(key).map_err(io(key))?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(bad(
                key,
                format!(
                    "private key is readable by group or others (mode {:o}); chmod 600 it",
                    meta.permissions().mode() & 0o777
                ),
            ));
        }
        let cert_pem = std::fs::read(cert).map_err(io(cert))?;
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(cert, format!("not PEM certificates: {e}")))?;
        let leaf = chain.first().ok_or_else(|| bad(cert, "no certificate"))?;
        let (not_after, dns_names) = leaf_facts(leaf).map_err(|why| bad(cert, why))?;
        let key_pem = std::fs::read(key).map_err(io(key))?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|e| bad(key, format!("not a PEM private key: {e}")))?;
        // The key must be the certificate's: refuse a mismatch here rather
        // than at the first handshake.
        let signer = super::provider()
            .key_provider
            .load_private_key(key_der.clone_key())
            .map_err(|e| bad(key, format!("unusable private key: {e}")))?;
        let ck = rustls::sign::CertifiedKey::new(chain.clone(), signer);
        ck.keys_match()
            .map_err(|e| bad(key, format!("does not belong to {}: {e}", cert.display())))?;
        Ok(Identity {
            chain,
            key: key_der,
            not_after,
            dns_names,
        })
    }

    /// The station this certificate names in pool `pool`, if any.
    pub fn station(&self, pool: &str) -> Option<String> {
        station_of(&self.dns_names, pool)
    }
}

/// The leaf certificate's expiry and DNS names.
pub fn leaf_facts(der: &[u8]) -> Result<(i64, Vec<String>), String> {
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
    let not_after = cert.validity().not_after.timestamp();
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            if let GeneralName::DNSName(d) = n {
                names.push(d.to_ascii_lowercase());
            }
        }
    }
    Ok((not_after, names))
}

/// The station named by `NAME.station.POOL` among `dns_names`.
pub fn station_of(dns_names: &[String], pool: &str) -> Option<String> {
    let suffix = format!(".station.{}", pool.to_ascii_lowercase());
    dns_names
        .iter()
        .find_map(|d| d.strip_suffix(&suffix).filter(|n| !n.is_empty()))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn station_names_come_from_the_pool_suffix() {
        let names = vec!["ws1.station.lab".to_string(), "10.0.0.1".to_string()];
        assert_eq!(station_of(&names, "lab").as_deref(), Some("ws1"));
        assert_eq!(station_of(&names, "other"), None);
        assert_eq!(station_of(&[".station.lab".to_string()], "lab"), None);
    }
}
