//! The pool's certificate authority (rcgen): made once by `glean pool
//! init`, kept by the coordinator alone, used to sign the coordinator's
//! own certificate and each station's at join.
//!
//! Lifetimes: the CA 10 years, the coordinator's certificate 2 years, a
//! station's 1 year (`docs/deploy.md` says how to renew). Keys are ECDSA
//! P-256. Every certificate starts an hour in the past, for clocks that
//! disagree a little.

use gleaner_edge::tls::{coordinator_dns, station_dns};
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

pub const CA_DAYS: i64 = 3650;
pub const COORDINATOR_DAYS: i64 = 730;
pub const STATION_DAYS: i64 = 365;
/// Most names a certificate may carry besides its identity.
pub const MAX_ADDRESSES: usize = 16;

/// Why a certificate could not be made or the CA not be read.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {why}")]
    Bad { path: PathBuf, why: String },
    #[error("{0}")]
    Invalid(String),
    #[error("certificate: {0}")]
    Rcgen(#[from] rcgen::Error),
}

/// A subject alternative name from an address as an administrator writes
/// it: an IP address, or a DNS name.
pub fn san_of(addr: &str) -> Result<SanType, PkiError> {
    let a = addr.trim().trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = a.parse::<IpAddr>() {
        return Ok(SanType::IpAddress(ip));
    }
    rustls_pki_dns(a)?;
    Ok(SanType::DnsName(a.to_ascii_lowercase().try_into()?))
}

fn rustls_pki_dns(a: &str) -> Result<(), PkiError> {
    let ok = !a.is_empty()
        && a.len() <= 253
        && a.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    if ok {
        Ok(())
    } else {
        Err(PkiError::Invalid(format!(
            "{a:?} is neither an IP address nor a DNS name"
        )))
    }
}

/// The host part of a URL or `HOST:PORT` (what a certificate names).
pub fn host_of(url_or_host: &str) -> &str {
    let s = url_or_host
        .split_once("://")
        .map_or(url_or_host, |(_, r)| r);
    let s = s.split('/').next().unwrap_or(s);
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match s.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => s,
    }
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days);
}

fn serial() -> Result<SerialNumber, PkiError> {
    let mut b = [0u8; 16];
    gleaner_proto::creds::fill_random(&mut b).map_err(|e| PkiError::Invalid(e.to_string()))?;
    b[0] &= 0x7f; // positive
    b[0] |= 0x01; // and of full length
    Ok(SerialNumber::from_slice(&b))
}

fn named(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Gleaner");
    dn.push(DnType::CommonName, cn);
    dn
}

/// A new pool CA for pool `pool`: its certificate and its key, in PEM.
pub fn new_ca(pool: &str) -> Result<(String, String), PkiError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = named(&format!("Gleaner pool CA {pool}"));
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.serial_number = Some(serial()?);
    validity(&mut params, CA_DAYS);
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The CA as the coordinator signs with it.
pub struct PoolCaKey {
    pool: String,
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
}

impl std::fmt::Debug for PoolCaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolCaKey")
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl PoolCaKey {
    /// Reads the CA certificate and its key (0600, refused otherwise).
    pub fn load(pool: &str, ca: &Path, ca_key: &Path) -> Result<Self, PkiError> {
        use std::os::unix::fs::PermissionsExt;
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| PkiError::Io { path: p, source }
        };
        let bad = |p: &Path, why: String| PkiError::Bad {
            path: p.to_path_buf(),
            why,
        };
        let mode = std::fs::metadata(ca_key)
            .map_err(io(ca_key))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(bad(
                ca_key,
                format!(
                    "the CA key is readable by group or others (mode {:o}); chmod 600 it",
                    mode & 0o777
                ),
            ));
        }
        let ca_pem = std::fs::read_to_string(ca).map_err(io(ca))?;
        let key_pem = std::fs::read_to_string(ca_key).map_err(io(ca_key))?;
        let key = KeyPair::from_pem(&key_pem).map_err(|e| bad(ca_key, e.to_string()))?;
        let issuer = Issuer::from_ca_cert_pem(&ca_pem, key).map_err(|e| bad(ca, e.to_string()))?;
        Ok(PoolCaKey {
            pool: pool.to_string(),
            issuer,
            ca_pem,
        })
    }

    pub fn pool(&self) -> &str {
        &self.pool
    }

    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    fn leaf(
        &self,
        cn: &str,
        identity: String,
        addresses: &[String],
        days: i64,
    ) -> Result<CertificateParams, PkiError> {
        if addresses.len() > MAX_ADDRESSES {
            return Err(PkiError::Invalid(format!(
                "at most {MAX_ADDRESSES} addresses in a certificate"
            )));
        }
        let mut params = CertificateParams::default();
        params.distinguished_name = named(cn);
        params.subject_alt_names = vec![SanType::DnsName(identity.try_into()?)];
        for a in addresses {
            let san = san_of(host_of(a))?;
            if !params.subject_alt_names.contains(&san) {
                params.subject_alt_names.push(san);
            }
        }
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(serial()?);
        validity(&mut params, days);
        Ok(params)
    }

    /// The coordinator's own certificate and a new key for it (PEM):
    /// `coordinator.POOL` and `addresses`.
    pub fn coordinator_cert(&self, addresses: &[String]) -> Result<(String, String), PkiError> {
        let key = KeyPair::generate()?;
        let params = self.leaf(
            &format!("coordinator of {}", self.pool),
            coordinator_dns(&self.pool),
            addresses,
            COORDINATOR_DAYS,
        )?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// Station `name`'s certificate for the key of `csr_pem` (whose own
    /// signature proves the station holds it): `NAME.station.POOL` and
    /// `addresses`. What the request asks for beside its key is ignored.
    pub fn station_cert(
        &self,
        name: &str,
        csr_pem: &str,
        addresses: &[String],
    ) -> Result<String, PkiError> {
        let csr = CertificateSigningRequestParams::from_pem(csr_pem)
            .map_err(|e| PkiError::Invalid(format!("certificate request: {e}")))?;
        let request = CertificateSigningRequestParams {
            params: self.leaf(
                &format!("station {name} of {}", self.pool),
                station_dns(&self.pool, name),
                addresses,
                STATION_DAYS,
            )?,
            public_key: csr.public_key,
        };
        Ok(request.signed_by(&self.issuer)?.pem())
    }
}

/// A new key pair and a certificate request for it (PEM): what a station
/// makes at join. The key never leaves the station.
pub fn new_request() -> Result<(String, String), PkiError> {
    let key = KeyPair::generate()?;
    let csr = CertificateParams::default().serialize_request(&key)?;
    Ok((csr.pem()?, key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_sans() {
        assert_eq!(host_of("https://10.0.0.1:9620/"), "10.0.0.1");
        assert_eq!(host_of("https://[::1]:9620"), "::1");
        assert_eq!(host_of("ws1.lab:9620"), "ws1.lab");
        assert_eq!(host_of("ws1.lab"), "ws1.lab");
        assert!(matches!(san_of("10.0.0.1").unwrap(), SanType::IpAddress(_)));
        assert!(matches!(san_of("ws1.lab").unwrap(), SanType::DnsName(_)));
        assert!(san_of("bad name").is_err());
    }

    #[test]
    fn a_station_certificate_names_the_station_and_chains_to_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, key) = new_ca("lab").unwrap();
        std::fs::write(dir.path().join("ca.pem"), &ca).unwrap();
        gleaner_proto::creds::write_atomic(&dir.path().join("ca.key"), key.as_bytes(), 0o600)
            .unwrap();
        let ca_key = PoolCaKey::load(
            "lab",
            &dir.path().join("ca.pem"),
            &dir.path().join("ca.key"),
        )
        .unwrap();
        let (csr, _skey) = new_request().unwrap();
        let cert = ca_key
            .station_cert("ws1", &csr, &["https://10.0.0.1:9620".into()])
            .unwrap();
        let der = rustls_pki_types::CertificateDer::from_pem_slice(cert.as_bytes()).unwrap();
        let (_, names) = gleaner_edge::tls::material::leaf_facts(&der).unwrap();
        assert_eq!(names, vec!["ws1.station.lab".to_string()]);
        // A group-readable CA key is refused.
        std::fs::set_permissions(
            dir.path().join("ca.key"),
            std::os::unix::fs::PermissionsExt::from_mode(0o640),
        )
        .unwrap();
        let e = PoolCaKey::load(
            "lab",
            &dir.path().join("ca.pem"),
            &dir.path().join("ca.key"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
    }

    use rustls_pki_types::pem::PemObject;
}
