//! The signed envelope shared by tokens and claims:
//! `base64url(JSON) "." base64url(Ed25519 signature)`, without padding.
//!
//! There is no header, hence no algorithm field to negotiate (the JWT
//! `alg: none` class of mistakes cannot happen). What is signed is a
//! context string naming the kind of object, a NUL, then the first part as
//! sent; a token's signature therefore never verifies as a claim's, even
//! before the JSON shapes (`deny_unknown_fields` on both) tell them apart.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

/// Longest envelope accepted; checked before anything is decoded.
pub const MAX_ENVELOPE_LEN: usize = 8 * 1024;

/// What an envelope carries; each kind signs under its own context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Token,
    Claim,
}

impl Kind {
    pub(crate) fn context(self) -> &'static [u8] {
        match self {
            Kind::Token => b"gleaner-token-v1",
            Kind::Claim => b"gleaner-claim-v1",
        }
    }
}

/// Why an envelope did not open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EnvelopeError {
    Malformed(&'static str),
    BadSignature,
}

fn message(kind: Kind, payload: &str) -> Vec<u8> {
    let ctx = kind.context();
    let mut m = Vec::with_capacity(ctx.len() + 1 + payload.len());
    m.extend_from_slice(ctx);
    m.push(0);
    m.extend_from_slice(payload.as_bytes());
    m
}

/// Signs `json` as an envelope of `kind`.
pub(crate) fn seal(key: &SigningKey, kind: Kind, json: &[u8]) -> String {
    let payload = URL_SAFE_NO_PAD.encode(json);
    let sig = key.sign(&message(kind, &payload));
    format!("{payload}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}

/// Splits an envelope into its two parts after the size check.
fn split(text: &str) -> Result<(&str, &str), EnvelopeError> {
    let text = text.trim();
    if text.len() > MAX_ENVELOPE_LEN {
        return Err(EnvelopeError::Malformed("too long"));
    }
    let (payload, sig) = text
        .split_once('.')
        .ok_or(EnvelopeError::Malformed("missing '.'"))?;
    if payload.is_empty() || sig.is_empty() {
        return Err(EnvelopeError::Malformed("empty part"));
    }
    Ok((payload, sig))
}

/// Checks the signature of an envelope of `kind` and only then decodes its
/// JSON bytes, so unauthenticated input never reaches a deserialiser.
pub(crate) fn open(key: &VerifyingKey, kind: Kind, text: &str) -> Result<Vec<u8>, EnvelopeError> {
    let (payload, sig) = split(text)?;
    let sig = URL_SAFE_NO_PAD
        .decode(sig.as_bytes())
        .map_err(|_| EnvelopeError::Malformed("signature is not base64url"))?;
    let sig = Signature::from_slice(&sig)
        .map_err(|_| EnvelopeError::Malformed("signature has the wrong length"))?;
    // verify_strict: rejects small-order keys and points and non-canonical
    // signatures, so no second valid signature can be derived from a first.
    key.verify_strict(&message(kind, payload), &sig)
        .map_err(|_| EnvelopeError::BadSignature)?;
    URL_SAFE_NO_PAD
        .decode(payload.as_bytes())
        .map_err(|_| EnvelopeError::Malformed("payload is not base64url"))
}

/// The JSON of an envelope whose signature was verified before (the same
/// text: `seen.rs`).
pub(crate) fn payload_of_verified(text: &str) -> Result<Vec<u8>, EnvelopeError> {
    peek(text)
}

/// Decodes the JSON of an envelope without checking anything: for display.
pub(crate) fn peek(text: &str) -> Result<Vec<u8>, EnvelopeError> {
    let (payload, _) = split(text)?;
    URL_SAFE_NO_PAD
        .decode(payload.as_bytes())
        .map_err(|_| EnvelopeError::Malformed("payload is not base64url"))
}
