//! Tokens: who the bearer is (`subject`), as what (`role`), until when.

use super::envelope::{self, EnvelopeError, Kind};
use super::subject::{NameError, check_id, check_station_name, check_user_name};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest token id accepted (ids issued are 32 hex digits).
pub const MAX_TOKEN_ID_LEN: usize = 64;

/// What a token's holder may do, after HTCondor's READ/WRITE,
/// ADMINISTRATOR and DAEMON authorisation levels, except that a daemon is
/// now one named station speaking only for itself (DESIGN.md, Trust model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Submit and manage one's own jobs as the Unix account `subject`.
    User,
    /// Manage anyone's jobs and the stations (drain, off, vacate).
    Admin,
    /// The station named `subject`: its advertisements, placements, reports.
    Station,
}

impl Role {
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Admin => "admin",
            Role::Station => "station",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "user" => Ok(Role::User),
            "admin" => Ok(Role::Admin),
            "station" => Ok(Role::Station),
            _ => Err(format!("unknown role {s:?} (user, admin or station)")),
        }
    }
}

/// Checks `subject` against the naming rules of `role`: user and admin
/// tokens name a Unix account, station tokens a station.
pub fn check_subject(role: Role, subject: &str) -> Result<(), NameError> {
    match role {
        Role::User | Role::Admin => check_user_name(subject),
        Role::Station => check_station_name(subject),
    }
}

/// The signed content of a token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// A Unix user name (user, admin) or a station name (station).
    pub subject: String,
    pub role: Role,
    /// Seconds since the UNIX epoch.
    pub issued_at: u64,
    /// Seconds since the UNIX epoch; `None` (never) only for station tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Random 128-bit hex id, by which the token is listed and revoked.
    pub token_id: String,
}

impl Claims {
    pub fn is_expired(&self, now_secs: u64) -> bool {
        self.expires_at.is_some_and(|exp| now_secs >= exp)
    }

    /// The rules every token obeys, checked when one is signed and again
    /// when one is verified: subject named by the role's rules, a sane id,
    /// and an expiry for every token that is not a station's.
    pub fn validate(&self) -> Result<(), TokenError> {
        check_subject(self.role, &self.subject).map_err(TokenError::Subject)?;
        check_id(&self.token_id, MAX_TOKEN_ID_LEN)
            .map_err(|why| TokenError::Invalid(format!("token id: {why}")))?;
        match (self.role, self.expires_at) {
            (Role::User | Role::Admin, None) => Err(TokenError::Invalid(format!(
                "{} tokens must expire",
                self.role
            ))),
            (_, Some(exp)) if exp <= self.issued_at => Err(TokenError::Invalid(
                "expires_at is not after issued_at".into(),
            )),
            _ => Ok(()),
        }
    }
}

/// Why a token was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    #[error("bad token signature (not issued by this pool's coordinator)")]
    BadSignature,
    #[error("token expired at {expired_at} (now {now})")]
    Expired { expired_at: u64, now: u64 },
    #[error("token {token_id} has been revoked")]
    Revoked { token_id: String },
    #[error("invalid token: {0}")]
    Subject(NameError),
    #[error("invalid token: {0}")]
    Invalid(String),
}

impl From<EnvelopeError> for TokenError {
    fn from(e: EnvelopeError) -> Self {
        match e {
            EnvelopeError::Malformed(why) => TokenError::Malformed(why),
            EnvelopeError::BadSignature => TokenError::BadSignature,
        }
    }
}

/// Parses verified token JSON and applies [`Claims::validate`] and expiry.
pub(crate) fn claims_from_verified(json: &[u8], now_secs: u64) -> Result<Claims, TokenError> {
    let claims: Claims = serde_json::from_slice(json)
        .map_err(|_| TokenError::Malformed("payload is not token claims"))?;
    claims.validate()?;
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

/// Serialises and seals valid claims.
pub(crate) fn seal_claims(
    key: &ed25519_dalek::SigningKey,
    claims: &Claims,
) -> Result<String, TokenError> {
    claims.validate()?;
    let json = serde_json::to_vec(claims)
        .map_err(|_| TokenError::Invalid("claims do not serialise".into()))?;
    Ok(envelope::seal(key, Kind::Token, &json))
}

/// Reads a token's claims **without verifying it**, for display only (the
/// CLI showing whose token it holds). Never authorise with the result.
pub fn peek_claims(token: &str) -> Result<Claims, TokenError> {
    let json = envelope::peek(token)?;
    serde_json::from_slice(&json).map_err(|_| TokenError::Malformed("payload is not token claims"))
}
