//! One-time join tokens, kept in the token registry beside the tokens
//! (`tokens.json`; a record with `join` set): made by `glean token create
//! --station NAME`, spent by the one join that uses them.
//!
//! A join is one locked update of the registry: the token is checked
//! (known, secret right, not spent, not revoked, not expired, for this
//! station), the station's certificate signed, its station token minted,
//! and the join token marked spent, all written at once or not at all. A
//! refused join writes nothing.

use super::pki::{PkiError, PoolCaKey};
use crate::tokens::{IssuedToken, TokenRecord, TokenRegistry, TokenRegistryError, TokenRequest};
use gleaner_proto::creds::{self, PoolSigner, Role, TokenError, check_subject};
use gleaner_proto::enrol::{JoinRequest, JoinToken};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Default time a join token may be used in, hours.
pub const DEFAULT_JOIN_HOURS: u64 = 24;

/// What the registry keeps of a join token (never its secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinRecord {
    /// SHA-256 (hex) of the secret.
    pub secret_sha256: String,
    /// Lifetime of the station token the join yields, days (`None`: the
    /// default; `Some(0)`: never expires).
    #[serde(default)]
    pub station_days: Option<u64>,
    /// When it was used, seconds since the UNIX epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<u64>,
    /// From which address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_from: Option<String>,
    /// The station token it yielded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub station_token_id: Option<String>,
}

/// Why a join was refused (nothing was written).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JoinRefused {
    #[error("unknown join token")]
    Unknown,
    #[error("join token used already, at {at} from {from}")]
    Spent { at: u64, from: String },
    #[error("join token revoked")]
    Revoked,
    #[error("join token expired at {at}")]
    Expired { at: u64 },
    #[error("this join token is for station {token_for:?}, not {asked:?}")]
    WrongName { token_for: String, asked: String },
    #[error("{0}")]
    Invalid(String),
}

fn sha256_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Equal in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A new join token for station `station`, usable for `hours`, carrying the
/// CA pin `ca_fingerprint` (`sha256:HEX`).
pub fn create(
    registry: &TokenRegistry,
    station: &str,
    hours: u64,
    station_days: Option<u64>,
    ca_fingerprint: &str,
    now: u64,
) -> Result<(JoinToken, TokenRecord), TokenRegistryError> {
    check_subject(Role::Station, station).map_err(TokenError::Subject)?;
    if hours == 0 || hours > 24 * 365 {
        return Err(TokenRegistryError::Lifetime(
            "a join token is usable for 1 hour to 1 year".into(),
        ));
    }
    // The station token's lifetime is checked now, not at the join.
    crate::tokens::expiry_for(Role::Station, station_days, now)?;
    let ca = ca_fingerprint
        .strip_prefix("sha256:")
        .unwrap_or(ca_fingerprint)
        .to_string();
    let secret = creds::random_hex(16).map_err(|e| TokenRegistryError::Io {
        path: registry.path().to_path_buf(),
        source: e,
    })?;
    registry.update(|file| {
        let id = registry.new_id(file)?;
        let record = TokenRecord {
            token_id: id.clone(),
            subject: station.to_string(),
            role: Role::Station,
            issued_at: now,
            expires_at: Some(now + hours * 3600),
            revoked: false,
            revoked_at: None,
            join: Some(JoinRecord {
                secret_sha256: sha256_hex(&secret),
                station_days,
                used_at: None,
                used_from: None,
                station_token_id: None,
            }),
        };
        file.tokens.push(record.clone());
        Ok((
            JoinToken {
                id,
                secret: secret.clone(),
                ca_sha256: ca.clone(),
            },
            record,
        ))
    })
}

/// What a join yields.
#[derive(Debug)]
pub struct Enrolment {
    pub certificate: String,
    pub station_token: IssuedToken,
}

/// Checks the join token without writing: for the answer before the body
/// is read. The join itself checks again under the lock.
pub fn check(
    registry: &TokenRegistry,
    token: &JoinToken,
    now: u64,
) -> Result<String, TokenRegistryError> {
    let list = registry.list()?;
    let rec = list
        .iter()
        .find(|r| r.token_id == token.id && r.join.is_some())
        .ok_or(TokenRegistryError::Join(JoinRefused::Unknown))?;
    usable(rec, token, now)?;
    Ok(rec.subject.clone())
}

fn usable(rec: &TokenRecord, token: &JoinToken, now: u64) -> Result<(), TokenRegistryError> {
    let refuse = |r| Err(TokenRegistryError::Join(r));
    let Some(join) = &rec.join else {
        return refuse(JoinRefused::Unknown);
    };
    if !same(&join.secret_sha256, &sha256_hex(&token.secret)) {
        // The same answer as an unknown id: the id alone proves nothing.
        return refuse(JoinRefused::Unknown);
    }
    if let Some(at) = join.used_at {
        return refuse(JoinRefused::Spent {
            at,
            from: join.used_from.clone().unwrap_or_default(),
        });
    }
    if rec.revoked {
        return refuse(JoinRefused::Revoked);
    }
    if let Some(at) = rec.expires_at.filter(|at| now >= *at) {
        return refuse(JoinRefused::Expired { at });
    }
    Ok(())
}

/// Spends `token` for `req`: the station's certificate and its station
/// token, and the join token marked used, in one write.
pub fn redeem(
    registry: &TokenRegistry,
    signer: &PoolSigner,
    ca: &PoolCaKey,
    token: &JoinToken,
    req: &JoinRequest,
    from: &str,
    now: u64,
) -> Result<Enrolment, TokenRegistryError> {
    registry.update(|file| {
        let idx = file
            .tokens
            .iter()
            .position(|r| r.token_id == token.id && r.join.is_some())
            .ok_or(TokenRegistryError::Join(JoinRefused::Unknown))?;
        usable(&file.tokens[idx], token, now)?;
        let rec = &file.tokens[idx];
        if rec.subject != req.name {
            return Err(TokenRegistryError::Join(JoinRefused::WrongName {
                token_for: rec.subject.clone(),
                asked: req.name.clone(),
            }));
        }
        let certificate = ca
            .station_cert(&req.name, &req.csr, &req.addresses)
            .map_err(|e: PkiError| TokenRegistryError::Join(JoinRefused::Invalid(e.to_string())))?;
        let station_days = rec.join.as_ref().and_then(|j| j.station_days);
        let issued = registry.issue_into(
            file,
            signer,
            &TokenRequest {
                role: Role::Station,
                subject: req.name.clone(),
                expires_days: station_days,
            },
            now,
        )?;
        if let Some(join) = file.tokens[idx].join.as_mut() {
            join.used_at = Some(now);
            join.used_from = Some(from.to_string());
            join.station_token_id = Some(issued.record.token_id.clone());
        }
        Ok(Enrolment {
            certificate,
            station_token: issued,
        })
    })
}
