//! The pool's key pair. The coordinator alone holds the signing key
//! (`signing.key`, 0600); stations and clients hold the public key
//! (`pool.pub`) and can verify but never sign (DESIGN.md, Trust model).
//!
//! File formats, one line each after optional `#` comment lines:
//!
//! ```text
//! signing.key:  gleaner-ed25519-secret <base64url of the 32-byte seed>
//! pool.pub:     gleaner-ed25519 <base64url of the 32-byte public key>
//! ```

use super::claim::{self, ClaimError, ClaimTicket};
use super::envelope::{self, Kind};
use super::fsio;
use super::seen::SeenSignatures;
use super::token::{self, Claims, TokenError};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Label of the public-key line.
pub const PUBLIC_LABEL: &str = "gleaner-ed25519";
/// Label of the signing-key line.
pub const SECRET_LABEL: &str = "gleaner-ed25519-secret";
/// Length of a seed and of a public key, bytes.
pub const KEY_BYTES: usize = 32;

/// The pool's signing key: mints tokens and claims. Held by the
/// coordinator only.
#[derive(Clone)]
pub struct PoolSigner {
    key: SigningKey,
}

// Never print key material, not even in debug logs.
impl fmt::Debug for PoolSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PoolSigner(public {})", self.verifier().fingerprint())
    }
}

impl PoolSigner {
    /// A signer from a 32-byte seed (tests use fixed seeds; the daemon
    /// reads the seed from [`load_or_create_signing_key`]).
    pub fn from_seed(seed: &[u8; KEY_BYTES]) -> Self {
        PoolSigner {
            key: SigningKey::from_bytes(seed),
        }
    }

    /// A new signer seeded from the OS RNG.
    pub fn generate() -> std::io::Result<Self> {
        let mut seed = [0u8; KEY_BYTES];
        fsio::fill_random(&mut seed)?;
        let signer = Self::from_seed(&seed);
        seed.fill(0);
        Ok(signer)
    }

    /// The matching public key, to hand to stations and clients.
    pub fn verifier(&self) -> PoolVerifier {
        PoolVerifier {
            key: self.key.verifying_key(),
            seen: Arc::default(),
        }
    }

    /// Signs claims into a token, after [`Claims::validate`].
    pub fn sign(&self, claims: &Claims) -> Result<String, TokenError> {
        token::seal_claims(&self.key, claims)
    }

    /// Signs a claim ticket (the `claim_id` of a grant), after
    /// [`ClaimTicket::validate`].
    pub fn sign_claim(&self, ticket: &ClaimTicket) -> Result<String, ClaimError> {
        claim::seal_ticket(&self.key, ticket)
    }

    /// Signs a ticket checked and serialised before
    /// ([`claim::ClaimPayload::of`]): the claim id.
    pub fn sign_payload(&self, payload: &claim::ClaimPayload) -> String {
        claim::seal_payload(&self.key, payload)
    }

    /// The key file content (the secret seed; write it 0600 only).
    fn to_file_string(&self) -> String {
        format!(
            "# Gleaner pool signing key (Ed25519). Whoever reads this file can mint\n\
             # any token: keep it on the coordinator only, mode 0600.\n\
             {SECRET_LABEL} {}\n",
            URL_SAFE_NO_PAD.encode(self.key.to_bytes())
        )
    }

    fn from_file_str(text: &str) -> Result<Self, KeyError> {
        let seed = parse_key_line(text, SECRET_LABEL)?;
        Ok(Self::from_seed(&seed))
    }
}

/// The pool's public key: verifies tokens and claims, cannot sign.
/// Clones share the memo of signatures already verified (`seen.rs`).
#[derive(Clone)]
pub struct PoolVerifier {
    key: VerifyingKey,
    seen: Arc<SeenSignatures>,
}

impl PartialEq for PoolVerifier {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for PoolVerifier {}

impl fmt::Debug for PoolVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PoolVerifier({})", self.fingerprint())
    }
}

impl PoolVerifier {
    /// A verifier from public-key bytes; weak (small-order) keys, under
    /// which forged signatures could verify, are refused.
    pub fn from_bytes(bytes: &[u8; KEY_BYTES]) -> Result<Self, KeyError> {
        let key = VerifyingKey::from_bytes(bytes).map_err(|_| KeyError::NotAKey)?;
        if key.is_weak() {
            return Err(KeyError::NotAKey);
        }
        Ok(PoolVerifier {
            key,
            seen: Arc::default(),
        })
    }

    pub fn to_bytes(&self) -> [u8; KEY_BYTES] {
        self.key.to_bytes()
    }

    /// First 16 hex digits of SHA-256 of the key: to compare keys by eye
    /// and name them in logs.
    pub fn fingerprint(&self) -> String {
        Sha256::digest(self.key.as_bytes())
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The `pool.pub` content.
    pub fn to_file_string(&self) -> String {
        format!(
            "# Gleaner pool public key (Ed25519), fingerprint {}\n{PUBLIC_LABEL} {}\n",
            self.fingerprint(),
            URL_SAFE_NO_PAD.encode(self.key.as_bytes())
        )
    }

    /// Parses a `pool.pub`; `#` lines and blank lines are ignored.
    pub fn from_file_str(text: &str) -> Result<Self, KeyError> {
        Self::from_bytes(&parse_key_line(text, PUBLIC_LABEL)?)
    }

    /// Verifies a token: envelope and signature first, then the claims'
    /// rules ([`Claims::validate`]) and expiry. Revocation is the caller's
    /// ([`super::Revocations::check`]).
    pub fn verify(&self, token: &str, now_secs: u64) -> Result<Claims, TokenError> {
        let json = self.open(Kind::Token, token)?;
        token::claims_from_verified(&json, now_secs)
    }

    /// Verifies a claim presented to `host`: signature, rules, expiry, and
    /// that it was issued for `host`. The caller then checks the home
    /// ([`ClaimTicket::check_home`]), uses [`ClaimTicket::home_address`],
    /// and spends the nonce ([`super::NonceBook::try_use`]).
    pub fn verify_claim(
        &self,
        claim: &str,
        host: &str,
        now_secs: u64,
    ) -> Result<ClaimTicket, ClaimError> {
        let json = self.open(Kind::Claim, claim)?;
        claim::ticket_from_verified(&json, host, now_secs)
    }

    /// Verifies a claim's signature and rules, not its expiry: for a claim
    /// presented as the credential between the two stations it names,
    /// for as long as the placement it made lasts (the placement itself
    /// was checked with [`Self::verify_claim`]).
    pub fn open_claim(&self, claim: &str) -> Result<ClaimTicket, ClaimError> {
        let json = self.open(Kind::Claim, claim)?;
        claim::ticket_from_signed(&json)
    }

    /// The payload of an envelope whose signature this key verifies, now
    /// or before (`seen.rs`).
    fn open(&self, kind: Kind, text: &str) -> Result<Vec<u8>, envelope::EnvelopeError> {
        let digest = SeenSignatures::digest(kind, text);
        if self.seen.contains(&digest) {
            return envelope::payload_of_verified(text);
        }
        let json = envelope::open(&self.key, kind, text)?;
        self.seen.insert(digest);
        Ok(json)
    }
}

/// Why key text could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("no key line (expected `{expected} <base64url>`)")]
    Empty { expected: &'static str },
    #[error("more than one key line")]
    ExtraLines,
    #[error("this is a signing key, not a public key: copy pool.pub, never signing.key")]
    SigningKeyGiven,
    #[error("expected a line `{expected} <base64url>`, found label {found:?}")]
    WrongLabel {
        expected: &'static str,
        found: String,
    },
    #[error("key is not base64url")]
    BadEncoding,
    #[error("key must be {KEY_BYTES} bytes, found {0}")]
    WrongLength(usize),
    #[error("not a valid Ed25519 public key")]
    NotAKey,
}

/// Reads `<label> <base64url>` from key text.
fn parse_key_line(text: &str, label: &'static str) -> Result<[u8; KEY_BYTES], KeyError> {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let line = lines.next().ok_or(KeyError::Empty { expected: label })?;
    if lines.next().is_some() {
        return Err(KeyError::ExtraLines);
    }
    let mut words = line.split_whitespace();
    let found = words.next().unwrap_or_default();
    if found != label {
        if label == PUBLIC_LABEL && found == SECRET_LABEL {
            return Err(KeyError::SigningKeyGiven);
        }
        return Err(KeyError::WrongLabel {
            expected: label,
            found: found.chars().take(40).collect(),
        });
    }
    let b64 = words.next().ok_or(KeyError::Empty { expected: label })?;
    if words.next().is_some() {
        return Err(KeyError::ExtraLines);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(b64.trim_end_matches('=').as_bytes())
        .map_err(|_| KeyError::BadEncoding)?;
    bytes
        .as_slice()
        .try_into()
        .map_err(|_| KeyError::WrongLength(bytes.len()))
}

/// Why a key file could not be read, written or created.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("key file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("key file {path} does not exist")]
    Missing { path: PathBuf },
    #[error("key file {path}: {source}")]
    Key { path: PathBuf, source: KeyError },
    #[error(
        "signing key file {path} is accessible to group or others (mode {mode:o}); run `chmod 600 {path}`"
    )]
    Permissive { path: PathBuf, mode: u32 },
}

impl KeyFileError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyFileError + '_ {
        move |source| KeyFileError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn key(path: &Path) -> impl FnOnce(KeyError) -> KeyFileError + '_ {
        move |source| KeyFileError::Key {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Loads the signing key from `path`; does not create it. A file group or
/// others may access is refused: whoever reads it can mint any token.
pub fn load_signing_key(path: &Path) -> Result<PoolSigner, KeyFileError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(KeyFileError::Missing {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(KeyFileError::io(path)(e)),
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyFileError::Permissive {
            path: path.to_path_buf(),
            mode,
        });
    }
    let text = std::fs::read_to_string(path).map_err(KeyFileError::io(path))?;
    PoolSigner::from_file_str(&text).map_err(KeyFileError::key(path))
}

/// Loads the signing key from `path`, or creates it there (seed from the
/// OS RNG, mode 0600, parent directories 0700) if it does not exist. Two
/// processes racing to create it end up with the same key: the file only
/// appears complete, and an existing one is never overwritten.
pub fn load_or_create_signing_key(path: &Path) -> Result<PoolSigner, KeyFileError> {
    match load_signing_key(path) {
        Err(KeyFileError::Missing { .. }) => {}
        other => return other,
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fsio::create_private_dir(dir).map_err(KeyFileError::io(path))?;
    }
    let signer = PoolSigner::generate().map_err(KeyFileError::io(path))?;
    let created = fsio::create_atomic(path, signer.to_file_string().as_bytes(), 0o600)
        .map_err(KeyFileError::io(path))?;
    if created {
        Ok(signer)
    } else {
        load_signing_key(path)
    }
}

/// Writes `pool.pub` (mode 0644: it is public), replacing any old one.
pub fn write_public_key(path: &Path, verifier: &PoolVerifier) -> Result<(), KeyFileError> {
    fsio::write_atomic(path, verifier.to_file_string().as_bytes(), 0o644)
        .map_err(KeyFileError::io(path))
}

/// Loads `pool.pub`.
pub fn load_public_key(path: &Path) -> Result<PoolVerifier, KeyFileError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(KeyFileError::Missing {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(KeyFileError::io(path)(e)),
    };
    PoolVerifier::from_file_str(&text).map_err(KeyFileError::key(path))
}
