//! Tokens signed with the pool's key (the role of HTCondor's IDTOKENS).
//!
//! A token is `base64url(JSON claims) "." base64url(HMAC-SHA256(key, first
//! part))`, without padding. It is deliberately not a JWT: there is no header
//! and hence no algorithm negotiation to get wrong. The pool key is 32 random
//! bytes held by the coordinator and copied to stations; whoever holds it can
//! mint tokens, so it is as sensitive as HTCondor's `passwords.d/POOL`.
//!
//! Nothing here reads the clock or the OS RNG: callers pass `now` and the key
//! bytes, which keeps verification deterministic in tests.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::fmt;

type HmacSha256 = Hmac<Sha256>;

/// Length of a pool key in bytes.
pub const KEY_LEN: usize = 32;
/// Length of a MAC in bytes.
const MAC_LEN: usize = 32;
/// Longest token accepted; guards against absurd inputs before decoding.
pub const MAX_TOKEN_LEN: usize = 8 * 1024;

/// What a token's holder may do, mirroring HTCondor's READ/WRITE,
/// ADMINISTRATOR and DAEMON authorisation levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Submit and manage one's own jobs; read pool status.
    User,
    /// Manage anyone's jobs and the stations (drain, off, vacate).
    Admin,
    /// Daemon-to-daemon traffic: advertisements, placements, reports.
    Daemon,
}

/// The signed content of a token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// User or daemon name (`alice`, `station@ws12`).
    pub subject: String,
    pub role: Role,
    /// Seconds since the UNIX epoch.
    pub issued_at: u64,
    /// Seconds since the UNIX epoch; `None` never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Token id, so that a token can be listed and revoked.
    pub token_id: String,
}

impl Claims {
    pub fn is_expired(&self, now_secs: u64) -> bool {
        self.expires_at.is_some_and(|exp| now_secs >= exp)
    }
}

/// Why a token was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    #[error("bad token signature")]
    BadSignature,
    #[error("token expired at {expired_at} (now {now})")]
    Expired { expired_at: u64, now: u64 },
}

/// Why a key could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("pool key must be {KEY_LEN} bytes, found {0}")]
    WrongLength(usize),
    #[error("pool key file is neither hex nor base64")]
    BadEncoding,
}

/// The pool's signing key.
#[derive(Clone, PartialEq, Eq)]
pub struct PoolKey([u8; KEY_LEN]);

// Never print key material, not even in debug logs.
impl fmt::Debug for PoolKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PoolKey(..)")
    }
}

impl PoolKey {
    /// Wraps key bytes; the daemon reads them from the OS RNG.
    pub const fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        PoolKey(bytes)
    }

    /// Generates a key by filling it from the caller's RNG (a closure so
    /// that this crate needs no RNG dependency).
    pub fn generate(mut fill: impl FnMut(&mut [u8])) -> Self {
        let mut b = [0u8; KEY_LEN];
        fill(&mut b);
        PoolKey(b)
    }

    pub fn from_slice(bytes: &[u8]) -> Result<Self, KeyError> {
        let arr: [u8; KEY_LEN] = bytes
            .try_into()
            .map_err(|_| KeyError::WrongLength(bytes.len()))?;
        Ok(PoolKey(arr))
    }

    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The key file content: 64 lowercase hex digits and a newline.
    pub fn to_file_string(&self) -> String {
        let mut s: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        s.push('\n');
        s
    }

    /// Reads a key file: hex (64 digits) or base64 (standard or URL-safe,
    /// padded or not). Surrounding whitespace and `#` comment lines are
    /// ignored so that administrators can annotate the file.
    pub fn from_file_str(text: &str) -> Result<Self, KeyError> {
        let body: String = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        if body.len() == 2 * KEY_LEN && body.bytes().all(|b| b.is_ascii_hexdigit()) {
            let bytes: Vec<u8> = body
                .as_bytes()
                .chunks(2)
                .map(|p| (hex_val(p[0]) << 4) | hex_val(p[1]))
                .collect();
            return PoolKey::from_slice(&bytes);
        }
        let b64 = body
            .trim_end_matches('=')
            .replace('+', "-")
            .replace('/', "_");
        match URL_SAFE_NO_PAD.decode(b64.as_bytes()) {
            Ok(bytes) => PoolKey::from_slice(&bytes),
            Err(_) => Err(KeyError::BadEncoding),
        }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length, so this cannot fail; fall back to
        // an empty-key MAC rather than panic, which would only ever produce
        // signatures that fail verification.
        <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| <HmacSha256 as KeyInit>::new(&Default::default()))
    }

    /// Signs claims into a compact token.
    pub fn sign(&self, claims: &Claims) -> String {
        // Serialising a struct of strings and integers cannot fail.
        let json = serde_json::to_vec(claims).unwrap_or_default();
        self.sign_payload(&json)
    }

    fn sign_payload(&self, json: &[u8]) -> String {
        let payload = URL_SAFE_NO_PAD.encode(json);
        let mut mac = self.mac();
        mac.update(payload.as_bytes());
        let tag = mac.finalize().into_bytes();
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    /// Verifies a token's signature and expiry and returns its claims.
    ///
    /// The signature is checked (in constant time) before the claims are
    /// parsed, so unauthenticated JSON never reaches the deserialiser.
    pub fn verify(&self, token: &str, now_secs: u64) -> Result<Claims, TokenError> {
        let claims = self.verify_signature(token)?;
        if let Some(exp) = claims.expires_at
            && now_secs >= exp
        {
            return Err(TokenError::Expired {
                expired_at: exp,
                now: now_secs,
            });
        }
        Ok(claims)
    }

    /// Verifies the signature only (for listing tokens, expired or not).
    pub fn verify_signature(&self, token: &str) -> Result<Claims, TokenError> {
        let json = self.verified_payload(token)?;
        serde_json::from_slice(&json)
            .map_err(|_| TokenError::Malformed("claims are not valid JSON"))
    }

    /// Signs a claim ticket: the `claim_id` of a [`crate::wire::Grant`].
    pub fn sign_claim(&self, ticket: &ClaimTicket) -> String {
        // Serialising a struct of strings and integers cannot fail.
        let json = serde_json::to_vec(ticket).unwrap_or_default();
        self.sign_payload(&json)
    }

    /// Verifies a claim id presented in a placement: signature, expiry, and
    /// that it was issued for this `host`. The caller still compares
    /// [`ClaimTicket::home`] with the placing station.
    pub fn verify_claim(
        &self,
        claim_id: &str,
        host: &str,
        now_secs: u64,
    ) -> Result<ClaimTicket, ClaimError> {
        let json = self.verified_payload(claim_id)?;
        // `deny_unknown_fields` on both structs keeps a user token from
        // passing as a claim and the other way round.
        let ticket: ClaimTicket = serde_json::from_slice(&json)
            .map_err(|_| TokenError::Malformed("not a claim ticket"))?;
        if now_secs >= ticket.expires_at {
            return Err(TokenError::Expired {
                expired_at: ticket.expires_at,
                now: now_secs,
            }
            .into());
        }
        if ticket.host != host {
            return Err(ClaimError::WrongHost {
                claimed: ticket.host,
                actual: host.to_string(),
            });
        }
        Ok(ticket)
    }

    /// Checks the MAC of `token` and returns its decoded payload.
    fn verified_payload(&self, token: &str) -> Result<Vec<u8>, TokenError> {
        let token = token.trim();
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::Malformed("too long"));
        }
        let (payload, sig) = token
            .split_once('.')
            .ok_or(TokenError::Malformed("missing '.'"))?;
        if payload.is_empty() || sig.is_empty() {
            return Err(TokenError::Malformed("empty part"));
        }
        let sig = URL_SAFE_NO_PAD
            .decode(sig.as_bytes())
            .map_err(|_| TokenError::Malformed("signature is not base64url"))?;
        if sig.len() != MAC_LEN {
            return Err(TokenError::Malformed("signature has the wrong length"));
        }
        let mut mac = self.mac();
        mac.update(payload.as_bytes());
        mac.verify_slice(&sig)
            .map_err(|_| TokenError::BadSignature)?;
        URL_SAFE_NO_PAD
            .decode(payload.as_bytes())
            .map_err(|_| TokenError::Malformed("claims are not base64url"))
    }
}

/// The signed content of a claim id: the coordinator lets `home` place one
/// job on `host` until `expires_at`. A host verifies it with the pool key
/// alone ([`PoolKey::verify_claim`]), without asking the coordinator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimTicket {
    /// Always `"claim"`, so a ticket can never be mistaken for [`Claims`].
    pub kind: String,
    pub host: String,
    pub home: String,
    /// Seconds since the UNIX epoch.
    pub issued_at: u64,
    /// Seconds since the UNIX epoch.
    pub expires_at: u64,
    /// Unique per grant, so that two claims for the same pair differ.
    pub nonce: String,
}

impl ClaimTicket {
    pub const KIND: &'static str = "claim";

    pub fn new(
        host: impl Into<String>,
        home: impl Into<String>,
        issued_at: u64,
        expires_at: u64,
        nonce: impl Into<String>,
    ) -> Self {
        ClaimTicket {
            kind: Self::KIND.to_string(),
            host: host.into(),
            home: home.into(),
            issued_at,
            expires_at,
            nonce: nonce.into(),
        }
    }
}

/// Why a claim id was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("claim was issued for host {claimed:?}, not {actual:?}")]
    WrongHost { claimed: String, actual: String },
}

/// Why the pool key file could not be read or created.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("pool key file {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("pool key file {path}: {source}")]
    Key {
        path: std::path::PathBuf,
        source: KeyError,
    },
    #[error(
        "pool key file {path} is readable by group or others (mode {mode:o}); run `chmod 600 {path}`"
    )]
    Permissive { path: std::path::PathBuf, mode: u32 },
}

/// Loads the pool key from `path`, or creates it there with 32 bytes from
/// the OS RNG (`/dev/urandom`) and mode 0600 if it does not exist yet.
///
/// A key file that group or others may read is refused: whoever reads it
/// can mint daemon tokens and claims.
pub fn load_or_create_pool_key(path: &std::path::Path) -> Result<PoolKey, KeyFileError> {
    use std::io::{Read, Write};
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |source| KeyFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::metadata(path) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(KeyFileError::Permissive {
                    path: path.to_path_buf(),
                    mode,
                });
            }
            let text = std::fs::read_to_string(path).map_err(io)?;
            PoolKey::from_file_str(&text).map_err(|source| KeyFileError::Key {
                path: path.to_path_buf(),
                source,
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = [0u8; KEY_LEN];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| f.read_exact(&mut bytes))
                .map_err(io)?;
            let key = PoolKey::from_bytes(bytes);
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            // create_new: never overwrite a key another process just wrote.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(io)?;
            f.write_all(key.to_file_string().as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
            Ok(key)
        }
        Err(e) => Err(io(e)),
    }
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// Reads the claims of a token without verifying it, for display only
/// (`glean token list`). Never use the result for authorisation.
pub fn peek_claims(token: &str) -> Result<Claims, TokenError> {
    let token = token.trim();
    if token.len() > MAX_TOKEN_LEN {
        return Err(TokenError::Malformed("too long"));
    }
    let (payload, _) = token
        .split_once('.')
        .ok_or(TokenError::Malformed("missing '.'"))?;
    let json = URL_SAFE_NO_PAD
        .decode(payload.as_bytes())
        .map_err(|_| TokenError::Malformed("claims are not base64url"))?;
    serde_json::from_slice(&json).map_err(|_| TokenError::Malformed("claims are not valid JSON"))
}
