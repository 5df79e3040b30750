//! Revoked tokens. `glean token revoke ID` records a revocation at the
//! coordinator; its advertise reply carries the set (each entry until its
//! token would have expired anyway), and every station merges it into the
//! set it persists and enforces (DESIGN.md, Trust model).

use super::fsio;
use super::nonce::CLOCK_STEP_GRACE_SECS;
use super::token::{Claims, TokenError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One revoked token, as it travels and is stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokedToken {
    pub token_id: String,
    /// The token's own expiry; `None` (a station token that never expires)
    /// is remembered for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

/// A set of revoked token ids with their tokens' expiry. On the wire and on
/// disk a JSON list of [`RevokedToken`]; fit for an `AdvertiseReply` field:
///
/// ```ignore
/// #[serde(default, skip_serializing_if = "Revocations::is_empty")]
/// pub revoked: Revocations,
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<RevokedToken>", into = "Vec<RevokedToken>")]
pub struct Revocations {
    ids: BTreeMap<String, Option<u64>>,
}

/// The later of two expiries, `None` (never) being latest.
fn later(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        _ => None,
    }
}

impl From<Vec<RevokedToken>> for Revocations {
    fn from(list: Vec<RevokedToken>) -> Self {
        let mut r = Revocations::default();
        for t in list {
            r.revoke(t.token_id, t.expires_at);
        }
        r
    }
}

impl From<Revocations> for Vec<RevokedToken> {
    fn from(r: Revocations) -> Self {
        r.iter().collect()
    }
}

impl Revocations {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = RevokedToken> + '_ {
        self.ids.iter().map(|(id, exp)| RevokedToken {
            token_id: id.clone(),
            expires_at: *exp,
        })
    }

    /// Records a revocation; returns whether the set changed.
    pub fn revoke(&mut self, token_id: impl Into<String>, expires_at: Option<u64>) -> bool {
        let token_id = token_id.into();
        match self.ids.get_mut(&token_id) {
            Some(old) => {
                let new = later(*old, expires_at);
                let changed = new != *old;
                *old = new;
                changed
            }
            None => {
                self.ids.insert(token_id, expires_at);
                true
            }
        }
    }

    pub fn contains(&self, token_id: &str) -> bool {
        self.ids.contains_key(token_id)
    }

    pub fn is_revoked(&self, claims: &Claims) -> bool {
        self.contains(&claims.token_id)
    }

    /// `Err(Revoked)` for a revoked token: call after
    /// [`super::PoolVerifier::verify`].
    pub fn check(&self, claims: &Claims) -> Result<(), TokenError> {
        if self.is_revoked(claims) {
            Err(TokenError::Revoked {
                token_id: claims.token_id.clone(),
            })
        } else {
            Ok(())
        }
    }

    /// Adds every revocation of `other`; returns whether the set changed.
    /// Revocations are never withdrawn, so merging is a union.
    pub fn merge(&mut self, other: &Revocations) -> bool {
        let mut changed = false;
        for (id, exp) in &other.ids {
            changed |= self.revoke(id.clone(), *exp);
        }
        changed
    }

    /// Drops revocations of tokens expired (plus a grace for clock skew
    /// between coordinator and stations) by `now`: the expiry refuses them
    /// by itself. Returns how many.
    pub fn prune(&mut self, now_secs: u64) -> usize {
        let before = self.ids.len();
        self.ids.retain(|_, exp| match exp {
            Some(e) => e.saturating_add(CLOCK_STEP_GRACE_SECS) > now_secs,
            None => true,
        });
        before - self.ids.len()
    }

    /// Reads a set saved by [`save`](Self::save); a missing file is empty.
    pub fn load(path: &Path) -> Result<Self, RevocationsFileError> {
        let text = fsio::read_optional(path).map_err(|source| RevocationsFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        match text {
            None => Ok(Self::default()),
            Some(t) => serde_json::from_str(&t).map_err(|e| RevocationsFileError::Corrupt {
                path: path.to_path_buf(),
                why: e.to_string(),
            }),
        }
    }

    /// Writes the set atomically (JSON, mode 0600).
    pub fn save(&self, path: &Path) -> Result<(), RevocationsFileError> {
        let io = |source| RevocationsFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let json = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        fsio::write_atomic(path, &json, 0o600).map_err(io)
    }
}

/// Why a revocations file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RevocationsFileError {
    #[error("revocations file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("revocations file {path} is corrupt: {why}")]
    Corrupt { path: PathBuf, why: String },
}
