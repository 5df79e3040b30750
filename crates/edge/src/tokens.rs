//! Bearer tokens signed with the pool's Ed25519 key (DESIGN.md, Trust
//! model): [`TokenVerifier`] checks them with the public key alone, then
//! asks a [`RevocationCheck`] whether the token was revoked. The
//! coordinator's check reloads its token registry; a station's is the
//! [`SharedRevocations`] its advertise loop fills from the coordinator's
//! replies.

use crate::auth::{Caller, Verifier};
use gleaner_proto::creds::{Claims, PoolVerifier, Revocations, TokenError};
use std::sync::{Arc, RwLock};

/// Says whether a verified token has been revoked.
pub trait RevocationCheck: Send + Sync + 'static {
    /// `Err(TokenError::Revoked)` for a revoked token.
    fn check(&self, claims: &Claims, now_secs: u64) -> Result<(), TokenError>;
}

/// A set of revocations shared by a verifier and whoever updates it.
#[derive(Clone, Debug, Default)]
pub struct SharedRevocations(Arc<RwLock<Revocations>>);

impl SharedRevocations {
    pub fn new(initial: Revocations) -> Self {
        SharedRevocations(Arc::new(RwLock::new(initial)))
    }

    /// A copy of the current set.
    pub fn snapshot(&self) -> Revocations {
        self.read().clone()
    }

    /// Changes the set under the write lock; returns what `edit` returns.
    pub fn update<T>(&self, edit: impl FnOnce(&mut Revocations) -> T) -> T {
        // A panic while editing leaves a set that is still a set of ids;
        // keep enforcing it rather than stop refusing revoked tokens.
        let mut guard = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        edit(&mut guard)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Revocations> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl RevocationCheck for SharedRevocations {
    fn check(&self, claims: &Claims, _now_secs: u64) -> Result<(), TokenError> {
        self.read().check(claims)
    }
}

impl<R: RevocationCheck> RevocationCheck for Arc<R> {
    fn check(&self, claims: &Claims, now_secs: u64) -> Result<(), TokenError> {
        R::check(self, claims, now_secs)
    }
}

/// The Ed25519 token verifier: signature, the claims' rules and expiry
/// ([`PoolVerifier::verify`]), then revocation.
pub struct TokenVerifier<R = SharedRevocations> {
    key: PoolVerifier,
    revoked: R,
}

impl<R: RevocationCheck> TokenVerifier<R> {
    pub fn new(key: PoolVerifier, revoked: R) -> Self {
        TokenVerifier { key, revoked }
    }

    pub fn key(&self) -> &PoolVerifier {
        &self.key
    }

    pub fn revocations(&self) -> &R {
        &self.revoked
    }

    /// Verifies `token` at `now_secs` and returns its claims.
    pub fn verify_at(&self, token: &str, now_secs: u64) -> Result<Claims, TokenError> {
        let claims = self.key.verify(token, now_secs)?;
        self.revoked.check(&claims, now_secs)?;
        Ok(claims)
    }
}

/// Seconds since the UNIX epoch by the wall clock.
pub fn wall_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl<R: RevocationCheck> Verifier for TokenVerifier<R> {
    fn verify_token(&self, token: &str) -> Result<Caller, String> {
        self.verify_at(token, wall_secs())
            .map(Caller::from_claims)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Role;
    use gleaner_proto::creds::{PoolSigner, Role as TokenRole};

    fn claims(role: TokenRole, subject: &str, id: &str) -> Claims {
        Claims {
            subject: subject.into(),
            role,
            issued_at: 1_000,
            expires_at: Some(2_000),
            token_id: id.into(),
        }
    }

    #[test]
    fn signed_tokens_become_callers_until_revoked() {
        let signer = PoolSigner::from_seed(&[3; 32]);
        let revoked = SharedRevocations::default();
        let v = TokenVerifier::new(signer.verifier(), revoked.clone());
        let alice = signer
            .sign(&claims(TokenRole::User, "alice", "a1"))
            .unwrap();
        let ws = signer
            .sign(&claims(TokenRole::Station, "ws1", "s1"))
            .unwrap();
        let c = Caller::from_claims(v.verify_at(&ws, 1_500).unwrap());
        assert_eq!((c.name.as_str(), c.role), ("ws1", Role::Station));
        assert_eq!(v.verify_at(&alice, 1_500).unwrap().subject, "alice");
        // Expired, forged, revoked.
        assert!(matches!(
            v.verify_at(&alice, 2_000),
            Err(TokenError::Expired { .. })
        ));
        let forged = PoolSigner::from_seed(&[4; 32])
            .sign(&claims(TokenRole::Admin, "root", "x"))
            .unwrap();
        assert_eq!(v.verify_at(&forged, 1_500), Err(TokenError::BadSignature));
        revoked.update(|r| r.revoke("a1", Some(2_000)));
        assert!(matches!(
            v.verify_at(&alice, 1_500),
            Err(TokenError::Revoked { .. })
        ));
        assert!(v.verify_at(&ws, 1_500).is_ok());
        assert!(v.verify_token(&forged).is_err());
    }
}
