//! Claim verification: only the grantee of a claim on this host may place
//! a guest here.

use gleaner_proto::auth::PoolKey;
use gleaner_proto::wire::PlacementRequest;

/// Why a claim id was refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClaimRejected(pub String);

/// Checks the claim id of a placement (the coordinator's grant), so only
/// the grantee can place here.
pub trait ClaimVerifier: Send + Sync {
    fn verify(&self, req: &PlacementRequest, host: &str) -> Result<(), ClaimRejected>;
}

impl<F> ClaimVerifier for F
where
    F: Fn(&PlacementRequest, &str) -> Result<(), ClaimRejected> + Send + Sync,
{
    fn verify(&self, req: &PlacementRequest, host: &str) -> Result<(), ClaimRejected> {
        self(req, host)
    }
}

/// The default verifier: the claim id is a ticket signed with the pool key
/// for this host and the placing home, not expired.
pub struct PoolKeyClaims(pub PoolKey);

impl ClaimVerifier for PoolKeyClaims {
    fn verify(&self, req: &PlacementRequest, host: &str) -> Result<(), ClaimRejected> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let ticket = self
            .0
            .verify_claim(&req.claim_id, host, now)
            .map_err(|e| ClaimRejected(e.to_string()))?;
        if ticket.home != req.home {
            return Err(ClaimRejected(format!(
                "claim was granted to {:?}, not {:?}",
                ticket.home, req.home
            )));
        }
        Ok(())
    }
}

/// Accepts any non-empty claim, with a warning: only for pools without a
/// coordinator-signed claim format (tests, single-station setups).
pub struct AnyNonEmptyClaim;

impl ClaimVerifier for AnyNonEmptyClaim {
    fn verify(&self, req: &PlacementRequest, _host: &str) -> Result<(), ClaimRejected> {
        if req.claim_id.trim().is_empty() {
            return Err(ClaimRejected("empty claim id".into()));
        }
        tracing::warn!(job = %req.job_id, "claim accepted without verification");
        Ok(())
    }
}
