//! Revoked tokens as the station knows them (DESIGN.md, Trust model): the
//! coordinator's advertise reply carries the tokens revoked there (`glean
//! token revoke`); the station merges them into the set it keeps in
//! `<state_dir>/revoked.json`, drops those that have expired anyway, and
//! its token verifier refuses every token in the set, user, admin or
//! station alike. Persisted so that a restart, or a coordinator out of
//! reach, does not make a revoked token good again.

use super::DaemonError;
use gleaner_edge::SharedRevocations;
use gleaner_proto::creds::Revocations;
use std::path::{Path, PathBuf};

/// The file in the state directory.
pub const REVOKED_FILE: &str = "revoked.json";

/// The station's revocations: the set its verifier checks, and its file.
#[derive(Debug)]
pub struct StationRevocations {
    path: PathBuf,
    set: SharedRevocations,
}

impl StationRevocations {
    /// Reads `<state_dir>/revoked.json` (missing: none revoked yet). A
    /// corrupt file stops the start: forgetting it would accept revoked
    /// tokens again.
    pub fn open(state_dir: &Path, now_secs: u64) -> Result<Self, DaemonError> {
        let path = state_dir.join(REVOKED_FILE);
        let mut set =
            Revocations::load(&path).map_err(|e| DaemonError::Credentials(e.to_string()))?;
        set.prune(now_secs);
        Ok(StationRevocations {
            path,
            set: SharedRevocations::new(set),
        })
    }

    /// The set the token verifier checks.
    pub fn shared(&self) -> SharedRevocations {
        self.set.clone()
    }

    pub fn snapshot(&self) -> Revocations {
        self.set.snapshot()
    }

    /// Takes in the revocations of an advertise reply: merged at once (the
    /// verifier refuses them from now on), expired ones dropped, and the
    /// file rewritten when the set changed.
    pub fn absorb(&self, incoming: &Revocations, now_secs: u64) {
        let changed = self.set.update(|set| {
            let added = set.merge(incoming);
            let pruned = set.prune(now_secs);
            (added || pruned > 0).then(|| set.clone())
        });
        let Some(set) = changed else { return };
        tracing::info!(revoked = set.len(), "revocations updated");
        if let Err(e) = set.save(&self.path) {
            // Still enforced in memory; the next change tries again.
            tracing::error!(error = %e, "cannot save the revocations");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_edge::RevocationCheck;
    use gleaner_proto::creds::{Claims, Role};

    #[test]
    fn revocations_are_enforced_persisted_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let r = StationRevocations::open(dir.path(), 1_000).unwrap();
        let claims = |id: &str| Claims {
            subject: "alice".into(),
            role: Role::User,
            issued_at: 0,
            expires_at: Some(5_000),
            token_id: id.into(),
        };
        let shared = r.shared();
        assert!(shared.check(&claims("a"), 1_000).is_ok());
        let mut reply = Revocations::new();
        reply.revoke("a", Some(5_000));
        reply.revoke("s", None);
        r.absorb(&reply, 1_000);
        assert!(shared.check(&claims("a"), 1_000).is_err());
        // A restart keeps them; an empty reply withdraws nothing.
        let r = StationRevocations::open(dir.path(), 1_000).unwrap();
        r.absorb(&Revocations::new(), 1_001);
        assert!(r.snapshot().contains("a") && r.snapshot().contains("s"));
        // Past the token's expiry (and the clock grace) it is dropped.
        r.absorb(&Revocations::new(), 5_000 + 601);
        let again = StationRevocations::open(dir.path(), 5_700).unwrap();
        assert!(!again.snapshot().contains("a") && again.snapshot().contains("s"));
        std::fs::write(dir.path().join(REVOKED_FILE), "{").unwrap();
        let e = StationRevocations::open(dir.path(), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("revoked.json"), "{e}");
    }
}
