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
///
/// On a station ([`TokenVerifier::for_station`]) it also takes a claim
/// ticket naming that station as the bearer credential of the other
/// station the ticket names: between stations the claim is the
/// credential, so that a station's own token goes to the coordinator
/// alone and no peer ever holds another's token (DESIGN.md, Trust model).
pub struct TokenVerifier<R = SharedRevocations> {
    key: PoolVerifier,
    revoked: R,
    /// This station's name, when claims naming it are accepted.
    station: Option<String>,
}

impl<R: RevocationCheck> TokenVerifier<R> {
    pub fn new(key: PoolVerifier, revoked: R) -> Self {
        TokenVerifier {
            key,
            revoked,
            station: None,
        }
    }

    /// Also accepts claim tickets that name station `name` as home or
    /// host; the caller is the other station of the ticket.
    pub fn for_station(mut self, name: impl Into<String>) -> Self {
        self.station = Some(name.into());
        self
    }

    /// The station a claim presented here speaks for: signed by the pool
    /// (expiry aside: the claim stays the pair's credential for as long as
    /// the placement it made), and naming this station as one end.
    fn claim_caller(&self, token: &str) -> Option<Result<Caller, String>> {
        let me = self.station.as_deref()?;
        let ticket = self.key.open_claim(token).ok()?;
        let name = if ticket.home == me {
            ticket.host.clone()
        } else if ticket.host == me {
            ticket.home.clone()
        } else {
            return Some(Err(format!(
                "claim between {} and {} presented to {me}",
                ticket.home, ticket.host
            )));
        };
        Some(Ok(Caller {
            name,
            role: crate::auth::Role::Station,
            credential: crate::auth::Credential::Claim {
                home: ticket.home,
                host: ticket.host,
                nonce: ticket.nonce,
            },
        }))
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
        match self.verify_at(token, wall_secs()) {
            Ok(claims) => Ok(Caller::from_claims(claims)),
            // Not a token: perhaps a claim between this station and a peer.
            Err(e) => self
                .claim_caller(token)
                .unwrap_or_else(|| Err(e.to_string())),
        }
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

    #[test]
    fn a_claim_speaks_for_the_other_station_it_names_and_only_there() {
        use crate::auth::Credential;
        use gleaner_proto::creds::ClaimTicket;
        let signer = PoolSigner::from_seed(&[3; 32]);
        // Long expired: the pair's credential outlives the placement window.
        let ticket = ClaimTicket::new("ws2", "home1", "http://h:1", 10, 20, "n1");
        let claim = signer.sign_claim(&ticket).unwrap();
        let at = |me: &str| {
            TokenVerifier::new(signer.verifier(), SharedRevocations::default())
                .for_station(me)
                .verify_token(&claim)
        };
        let c = at("home1").unwrap();
        assert_eq!((c.name.as_str(), c.role), ("ws2", Role::Station));
        assert_eq!(
            c.credential,
            Credential::Claim {
                home: "home1".into(),
                host: "ws2".into(),
                nonce: "n1".into(),
            }
        );
        assert_eq!(at("ws2").unwrap().name, "home1");
        // A third station does not take it; a verifier that is no
        // station's (the coordinator's) takes no claims at all.
        assert!(at("ws3").unwrap_err().contains("presented to ws3"));
        let plain = TokenVerifier::new(signer.verifier(), SharedRevocations::default());
        assert!(plain.verify_token(&claim).is_err());
        // Another pool's claim is nobody.
        let other = PoolSigner::from_seed(&[5; 32]).sign_claim(&ticket).unwrap();
        assert!(
            TokenVerifier::new(signer.verifier(), SharedRevocations::default())
                .for_station("home1")
                .verify_token(&other)
                .is_err()
        );
    }
}
