//! Claims for placements: the coordinator's word that `home` may place one
//! job on `host` until `expires_at`, once (DESIGN.md, Trust model).

use super::envelope::{self, EnvelopeError, Kind};
use super::subject::{NameError, check_id, check_station_name};
use serde::{Deserialize, Serialize};

/// Longest nonce accepted (nonces issued are 32 hex digits).
pub const MAX_NONCE_LEN: usize = 128;
/// Longest home address accepted.
pub const MAX_ADDRESS_LEN: usize = 2048;

/// The signed content of a claim (the `claim_id` of a grant). A host
/// verifies it with the public key alone ([`super::PoolVerifier::verify_claim`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimTicket {
    /// Always `"claim"`. With `deny_unknown_fields` on both structs and a
    /// separate signing context, a claim never passes as a token nor back.
    pub kind: String,
    /// The station that runs the job.
    pub host: String,
    /// The station the job comes from.
    pub home: String,
    /// The home's shadow URL as the coordinator has it on record: the only
    /// address the host sends its credentials and the job's reports to.
    pub home_address: String,
    /// Seconds since the UNIX epoch.
    pub issued_at: u64,
    /// Seconds since the UNIX epoch.
    pub expires_at: u64,
    /// Random per claim; the host accepts each nonce once.
    pub nonce: String,
}

impl ClaimTicket {
    pub const KIND: &'static str = "claim";

    pub fn new(
        host: impl Into<String>,
        home: impl Into<String>,
        home_address: impl Into<String>,
        issued_at: u64,
        expires_at: u64,
        nonce: impl Into<String>,
    ) -> Self {
        ClaimTicket {
            kind: Self::KIND.to_string(),
            host: host.into(),
            home: home.into(),
            home_address: home_address.into(),
            issued_at,
            expires_at,
            nonce: nonce.into(),
        }
    }

    /// The rules every claim obeys, checked at signing and at verification.
    pub fn validate(&self) -> Result<(), ClaimError> {
        if self.kind != Self::KIND {
            return Err(ClaimError::Malformed("not a claim"));
        }
        check_station_name(&self.host).map_err(ClaimError::Name)?;
        check_station_name(&self.home).map_err(ClaimError::Name)?;
        check_address(&self.home_address).map_err(ClaimError::Invalid)?;
        check_id(&self.nonce, MAX_NONCE_LEN)
            .map_err(|why| ClaimError::Invalid(format!("nonce: {why}")))?;
        if self.expires_at <= self.issued_at {
            return Err(ClaimError::Invalid(
                "expires_at is not after issued_at".into(),
            ));
        }
        Ok(())
    }

    /// Checks that the station placing the job is the claim's home.
    pub fn check_home(&self, home: &str) -> Result<(), ClaimError> {
        if self.home == home {
            Ok(())
        } else {
            Err(ClaimError::WrongHome {
                claimed: self.home.clone(),
                actual: home.to_string(),
            })
        }
    }

    /// Checks that the shadow URL a placement names is the claim's
    /// `home_address` (a trailing '/' aside). A host should simply use
    /// `home_address`; this is for refusing a placement that disagrees.
    pub fn check_address(&self, shadow_url: &str) -> Result<(), ClaimError> {
        if self.home_address.trim_end_matches('/') == shadow_url.trim_end_matches('/') {
            Ok(())
        } else {
            Err(ClaimError::WrongAddress {
                claimed: self.home_address.clone(),
                actual: shadow_url.to_string(),
            })
        }
    }
}

/// An http(s) URL without whitespace or control characters.
fn check_address(addr: &str) -> Result<(), String> {
    if addr.len() > MAX_ADDRESS_LEN {
        return Err("home address is too long".into());
    }
    if !(addr.starts_with("http://") || addr.starts_with("https://")) {
        return Err(format!("home address {addr:?} is not an http(s) URL"));
    }
    if addr.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("home address {addr:?} contains whitespace"));
    }
    Ok(())
}

/// Why a claim was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error("malformed claim: {0}")]
    Malformed(&'static str),
    #[error("bad claim signature (not issued by this pool's coordinator)")]
    BadSignature,
    #[error("claim expired at {expired_at} (now {now})")]
    Expired { expired_at: u64, now: u64 },
    #[error("invalid claim: {0}")]
    Name(NameError),
    #[error("invalid claim: {0}")]
    Invalid(String),
    #[error("claim was issued for host {claimed:?}, not {actual:?}")]
    WrongHost { claimed: String, actual: String },
    #[error("claim was issued to home {claimed:?}, not {actual:?}")]
    WrongHome { claimed: String, actual: String },
    #[error("claim names home address {claimed:?}, not {actual:?}")]
    WrongAddress { claimed: String, actual: String },
    #[error("claim {nonce} was already used")]
    Replayed { nonce: String },
    #[error("too many unexpired claims remembered ({capacity}); refusing more")]
    TooManyClaims { capacity: usize },
}

impl From<EnvelopeError> for ClaimError {
    fn from(e: EnvelopeError) -> Self {
        match e {
            EnvelopeError::Malformed(why) => ClaimError::Malformed(why),
            EnvelopeError::BadSignature => ClaimError::BadSignature,
        }
    }
}

/// A valid ticket, serialised and ready to be signed: checking and
/// serialising are cheap and may fail, signing is costly and cannot, so a
/// coordinator checks each grant's claim as it decides it and signs a
/// pass's claims together ([`super::PoolSigner::sign_payload`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimPayload(Vec<u8>);

impl ClaimPayload {
    /// Checks `ticket` ([`ClaimTicket::validate`]) and serialises it.
    pub fn of(ticket: &ClaimTicket) -> Result<Self, ClaimError> {
        ticket.validate()?;
        serde_json::to_vec(ticket)
            .map(ClaimPayload)
            .map_err(|_| ClaimError::Invalid("claim does not serialise".into()))
    }

    /// The serialised ticket.
    pub fn json(&self) -> &[u8] {
        &self.0
    }
}

/// Seals a checked ticket.
pub(crate) fn seal_payload(key: &ed25519_dalek::SigningKey, payload: &ClaimPayload) -> String {
    envelope::seal(key, Kind::Claim, &payload.0)
}

/// Serialises and seals a valid ticket.
pub(crate) fn seal_ticket(
    key: &ed25519_dalek::SigningKey,
    ticket: &ClaimTicket,
) -> Result<String, ClaimError> {
    Ok(seal_payload(key, &ClaimPayload::of(ticket)?))
}

/// Reads a claim **without verifying it**: for a station comparing a claim
/// it was given by the coordinator (and stored) with one presented to it
/// and verified by then. Never authorise with the result alone.
pub fn peek_claim(claim: &str) -> Result<ClaimTicket, ClaimError> {
    let json = envelope::peek(claim)?;
    serde_json::from_slice(&json).map_err(|_| ClaimError::Malformed("payload is not a claim"))
}

/// Parses a verified ticket and checks its rules only.
pub(crate) fn ticket_from_signed(json: &[u8]) -> Result<ClaimTicket, ClaimError> {
    let ticket: ClaimTicket = serde_json::from_slice(json)
        .map_err(|_| ClaimError::Malformed("payload is not a claim"))?;
    ticket.validate()?;
    Ok(ticket)
}

/// Parses a verified ticket and checks rules, expiry and host.
pub(crate) fn ticket_from_verified(
    json: &[u8],
    host: &str,
    now_secs: u64,
) -> Result<ClaimTicket, ClaimError> {
    let ticket = ticket_from_signed(json)?;
    if now_secs >= ticket.expires_at {
        return Err(ClaimError::Expired {
            expired_at: ticket.expires_at,
            now: now_secs,
        });
    }
    if ticket.host != host {
        return Err(ClaimError::WrongHost {
            claimed: ticket.host,
            actual: host.to_string(),
        });
    }
    Ok(ticket)
}
