//! Enrolment (issue 13): the pool CA and the coordinator's certificate
//! (`glean pool init`, [`init`]), one-time join tokens in the token
//! registry ([`joins`]), and the join endpoint that turns one into a
//! station's certificate and station token ([`http`]). The CA's key stays
//! with the coordinator, as the signing key does.
//!
//! - [`pki`]: the CA, certificates for the coordinator and the stations,
//!   a station's key and certificate request.

pub mod http;
pub mod joins;
pub mod pki;

use crate::tokens::{public_key_path, signing_key_path};
use gleaner_proto::creds::{self, load_or_create_signing_key, write_public_key};
use pki::PkiError;
use std::path::{Path, PathBuf};

/// What `glean pool init` makes, and where.
#[derive(Clone, Debug)]
pub struct InitOptions {
    pub state_dir: PathBuf,
    pub pool: String,
    /// Names and addresses the coordinator is reached at (its certificate
    /// carries them, beside `coordinator.POOL`).
    pub addresses: Vec<String>,
    /// Issue a new coordinator certificate even if one exists (a changed
    /// address, or renewal).
    pub renew_certificate: bool,
}

/// What `init` found or made.
#[derive(Clone, Debug)]
pub struct InitOutcome {
    pub ca: PathBuf,
    pub ca_key: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub public_key: PathBuf,
    pub ca_fingerprint: String,
    /// Whether a new CA was made (false: the existing one was kept).
    pub new_ca: bool,
    pub new_certificate: bool,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PkiError + '_ {
    move |source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Makes the pool's keys where they are missing: the signing key and
/// `pool.pub`, the pool CA, the coordinator's certificate. Never replaces
/// a CA or a key that exists (a second `init` is harmless).
pub fn init(o: &InitOptions) -> Result<InitOutcome, PkiError> {
    gleaner_proto::creds::check_station_name(&o.pool)
        .map_err(|e| PkiError::Invalid(format!("pool name: {e}")))?;
    let d = &o.state_dir;
    creds::create_private_dir(d).map_err(io(d))?;
    let signer = load_or_create_signing_key(&signing_key_path(d))
        .map_err(|e| PkiError::Invalid(e.to_string()))?;
    let public_key = public_key_path(d);
    write_public_key(&public_key, &signer.verifier())
        .map_err(|e| PkiError::Invalid(e.to_string()))?;
    let (ca, ca_key) = (d.join("ca.pem"), d.join("ca.key"));
    let new_ca = !ca_key.exists();
    if new_ca {
        let (cert, key) = pki::new_ca(&o.pool)?;
        // The key first: a CA certificate without its key is no CA.
        creds::write_atomic(&ca_key, key.as_bytes(), 0o600).map_err(io(&ca_key))?;
        creds::write_atomic(&ca, cert.as_bytes(), 0o644).map_err(io(&ca))?;
    }
    let ca_signer = pki::PoolCaKey::load(&o.pool, &ca, &ca_key)?;
    let (cert, key) = (d.join("coordinator.crt"), d.join("coordinator.key"));
    let new_certificate = o.renew_certificate || new_ca || !cert.exists() || !key.exists();
    if new_certificate {
        let (c, k) = ca_signer.coordinator_cert(&o.addresses)?;
        creds::write_atomic(&key, k.as_bytes(), 0o600).map_err(io(&key))?;
        // The chain with the CA: a joining station that knows only the
        // CA's hash finds it there (`gleaner_edge::tls::pinned_client`).
        let chain = format!("{c}{}", ca_signer.ca_pem());
        creds::write_atomic(&cert, chain.as_bytes(), 0o644).map_err(io(&cert))?;
    }
    // Run as root beside a coordinator that runs as its own account (the
    // package's `gleaner`): what it made goes to the state directory's
    // owner, or the coordinator could not read its own keys.
    for p in [&signing_key_path(d), &public_key, &ca, &ca_key, &cert, &key] {
        crate::tokens::give_to_dir_owner(p);
    }
    let fp = gleaner_edge::tls::PoolCa::load(&o.pool, &ca)
        .map_err(|e| PkiError::Invalid(e.to_string()))?
        .fingerprint();
    Ok(InitOutcome {
        ca,
        ca_key,
        cert,
        key,
        public_key,
        ca_fingerprint: fp,
        new_ca,
        new_certificate,
    })
}
