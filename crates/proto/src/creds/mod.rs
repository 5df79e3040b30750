//! The pool's credentials under the asymmetric trust model (DESIGN.md,
//! "Trust model"; issue 12): the coordinator alone holds the Ed25519
//! signing key, everyone else verifies with the public key.
//!
//! - [`PoolSigner`] / [`PoolVerifier`]: the key pair and its files
//!   (`signing.key` 0600, `pool.pub`).
//! - [`Claims`]: tokens, `base64url(JSON) "." base64url(signature)`.
//! - [`ClaimTicket`]: claims for placements, single use through
//!   [`NonceBook`] / [`NonceFile`].
//! - [`Revocations`]: revoked token ids, carried in advertise replies.
//! - [`check_user_name`] / [`check_station_name`]: the naming rules.
//!
//! Verification never reads the clock: callers pass `now`.

mod claim;
mod envelope;
mod fsio;
mod keys;
mod nonce;
mod revoke;
mod seen;
mod subject;
mod token;

pub use claim::{
    ClaimError, ClaimPayload, ClaimTicket, MAX_ADDRESS_LEN, MAX_NONCE_LEN, peek_claim,
};
pub use envelope::MAX_ENVELOPE_LEN;
pub use fsio::{
    create_atomic, create_private_dir, fill_random, new_nonce, new_token_id, random_hex,
    read_optional, write_atomic,
};
pub use keys::{
    KEY_BYTES, KeyError, KeyFileError, PUBLIC_LABEL, PoolSigner, PoolVerifier, SECRET_LABEL,
    load_or_create_signing_key, load_public_key, load_signing_key, write_public_key,
};
pub use nonce::{
    CLOCK_STEP_GRACE_SECS, DEFAULT_NONCE_CAPACITY, NonceBook, NonceFile, NonceFileError,
};
pub use revoke::{Revocations, RevocationsFileError, RevokedToken};
pub use subject::{
    MAX_STATION_NAME, MAX_USER_NAME, NameError, check_station_name, check_user_name,
};
pub use token::{Claims, MAX_TOKEN_ID_LEN, Role, TokenError, check_subject, peek_claims};
