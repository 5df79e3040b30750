//! Claim verification: only the grantee of a claim on this host may place
//! a guest here, once, and the host then talks to the grantee's address on
//! record and to no other (DESIGN.md, Trust model).

use gleaner_proto::creds::{ClaimTicket, NonceFile, PoolVerifier};
use gleaner_proto::wire::PlacementRequest;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a spent claim is named in the host's ads (`claims_used`): a few
/// advertise periods, so the coordinator hears of it even if an ad is lost.
const NAMED_FOR: Duration = Duration::from_secs(600);
/// At most this many named at once, the most recent (an ad stays small).
const NAMED_MAX: usize = 512;

/// Why a claim id was refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClaimRejected(pub String);

/// What a verified claim grants the placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted {
    /// The home's shadow URL: the only address the host sends its
    /// credentials and the job's reports to.
    pub home_address: String,
    /// The claim's nonce and expiry, spent by [`ClaimVerifier::spend`];
    /// `None` for verifiers without single-use claims (tests).
    nonce: Option<(String, u64)>,
}

impl Granted {
    /// The claim's nonce (`None` for verifiers without single-use claims):
    /// it names the placement, and only a claim with it speaks for the
    /// guest afterwards.
    pub fn nonce(&self) -> Option<&str> {
        self.nonce.as_ref().map(|(n, _)| n.as_str())
    }

    /// The claim's expiry, UNIX seconds (`None` without a nonce): no
    /// placement under it after that, reuse included.
    pub fn expires_at(&self) -> Option<u64> {
        self.nonce.as_ref().map(|(_, e)| *e)
    }

    /// A grant with no nonce to spend, for verifiers of test pools.
    pub fn unchecked(home_address: impl Into<String>) -> Self {
        Granted {
            home_address: home_address.into(),
            nonce: None,
        }
    }
}

/// Checks the claim of a placement (the coordinator's grant).
pub trait ClaimVerifier: Send + Sync {
    /// Is the claim valid for this `host` and the placing home, naming the
    /// shadow address the placement names? Nothing is spent yet.
    fn verify(&self, req: &PlacementRequest, host: &str) -> Result<Granted, ClaimRejected>;

    /// Spends the claim: refused if it was used before. The last check
    /// before a guest is accepted, called under the host's guest lock.
    fn spend(&self, granted: &Granted) -> Result<(), ClaimRejected>;

    /// The nonces of the claims spent (or given back) lately, oldest
    /// first, for the ad: the coordinator settles each grant by them.
    fn recently_spent(&self) -> Vec<String> {
        Vec::new()
    }

    /// A valid claim whose placement was refused here (no room after all):
    /// named like a spent one, so the coordinator stops holding a node for
    /// it, but not spent.
    fn give_back(&self, _granted: &Granted) {}
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The station's verifier: the claim is a [`ClaimTicket`] signed with the
/// pool's key for this host and the placing home, unexpired, naming the
/// placement's shadow as the home's address, and never used before here
/// (its nonce is remembered in `nonces.json` until it expires).
pub struct SignedClaims {
    key: PoolVerifier,
    nonces: Mutex<NonceFile>,
    /// Spent lately, with when ([`ClaimVerifier::recently_spent`]).
    recent: Mutex<VecDeque<(String, Instant)>>,
}

impl SignedClaims {
    pub fn new(key: PoolVerifier, nonces: NonceFile) -> Self {
        SignedClaims {
            key,
            nonces: Mutex::new(nonces),
            recent: Mutex::new(VecDeque::new()),
        }
    }

    /// Names `nonce` in the next ads ([`ClaimVerifier::recently_spent`]).
    fn name(&self, nonce: &str) {
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        recent.push_back((nonce.to_string(), Instant::now()));
        if recent.len() > NAMED_MAX {
            recent.pop_front();
        }
    }

    fn ticket(&self, req: &PlacementRequest, host: &str) -> Result<ClaimTicket, ClaimRejected> {
        let reject = |e: gleaner_proto::creds::ClaimError| ClaimRejected(e.to_string());
        let ticket = self
            .key
            .verify_claim(&req.claim_id, host, now_secs())
            .map_err(reject)?;
        ticket.check_home(&req.home).map_err(reject)?;
        // The placement may not redirect the host: its credentials go to the
        // address the coordinator has on record for the home, or nowhere.
        ticket.check_address(&req.shadow).map_err(reject)?;
        Ok(ticket)
    }
}

impl ClaimVerifier for SignedClaims {
    fn verify(&self, req: &PlacementRequest, host: &str) -> Result<Granted, ClaimRejected> {
        let ticket = self.ticket(req, host)?;
        Ok(Granted {
            home_address: ticket.home_address,
            nonce: Some((ticket.nonce, ticket.expires_at)),
        })
    }

    fn spend(&self, granted: &Granted) -> Result<(), ClaimRejected> {
        let Some((nonce, expires_at)) = &granted.nonce else {
            return Ok(());
        };
        let mut book = self
            .nonces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        book.try_use(nonce, *expires_at, now_secs())
            .map_err(|e| ClaimRejected(e.to_string()))?;
        self.name(nonce);
        Ok(())
    }

    fn give_back(&self, granted: &Granted) {
        if let Some((nonce, _)) = &granted.nonce {
            self.name(nonce);
        }
    }

    fn recently_spent(&self) -> Vec<String> {
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while recent
            .front()
            .is_some_and(|(_, at)| at.elapsed() > NAMED_FOR)
        {
            recent.pop_front();
        }
        recent.iter().map(|(n, _)| n.clone()).collect()
    }
}

/// Accepts any non-empty claim, with a warning: only for tests that run a
/// starter without a pool.
pub struct AnyNonEmptyClaim;

impl ClaimVerifier for AnyNonEmptyClaim {
    fn verify(&self, req: &PlacementRequest, _host: &str) -> Result<Granted, ClaimRejected> {
        if req.claim_id.trim().is_empty() {
            return Err(ClaimRejected("empty claim id".into()));
        }
        tracing::warn!(job = %req.job_id, "claim accepted without verification");
        Ok(Granted::unchecked(req.shadow.clone()))
    }

    fn spend(&self, _granted: &Granted) -> Result<(), ClaimRejected> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_proto::creds::PoolSigner;
    use gleaner_proto::job::{JobDescription, JobId};

    fn placement(claim: String, home: &str, shadow: &str) -> PlacementRequest {
        PlacementRequest {
            protocol: gleaner_proto::wire::PROTOCOL_VERSION,
            job_id: JobId::new(1, 0),
            home: home.into(),
            claim_id: claim,
            description: JobDescription::new("alice", "/bin/true"),
            shadow: shadow.into(),
            checkpoint: None,
            run_count: 0,
            lease_secs: None,
            run: None,
            claim_seq: 0,
        }
    }

    #[test]
    fn a_claim_is_for_its_home_and_address_and_spent_once_also_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let signer = PoolSigner::from_seed(&[1; 32]);
        let now = now_secs();
        let ticket = ClaimTicket::new("h", "a", "http://a:9620", now - 1, now + 600, "n1");
        let claim = signer.sign_claim(&ticket).unwrap();
        let open = || {
            SignedClaims::new(
                signer.verifier(),
                NonceFile::open(&dir.path().join("nonces.json")).unwrap(),
            )
        };
        let v = open();
        // Another home, another address, another host: refused.
        for (req, host) in [
            (placement(claim.clone(), "b", "http://a:9620"), "h"),
            (placement(claim.clone(), "a", "http://mallory:1"), "h"),
            (placement(claim.clone(), "a", "http://a:9620"), "h2"),
        ] {
            assert!(v.verify(&req, host).is_err(), "{req:?} on {host}");
        }
        let ok = placement(claim.clone(), "a", "http://a:9620/");
        let g = v.verify(&ok, "h").unwrap();
        assert_eq!(g.home_address, "http://a:9620");
        assert!(v.recently_spent().is_empty());
        v.spend(&g).unwrap();
        // The host names the spent claim in its ads, by nonce.
        assert_eq!(v.recently_spent(), ["n1"]);
        let e = v.spend(&v.verify(&ok, "h").unwrap()).unwrap_err();
        assert_eq!(v.recently_spent(), ["n1"], "a refused spend names nothing");
        assert!(e.0.contains("already used"), "{e}");
        drop(v);
        let v = open();
        assert!(v.spend(&v.verify(&ok, "h").unwrap()).is_err());
    }
}
