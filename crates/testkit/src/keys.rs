//! A pool's credentials for tests (DESIGN.md, Trust model): the
//! coordinator's Ed25519 signing key in a directory of its own (the
//! coordinator's state directory, so a coordinator started there finds
//! and keeps it), `pool.pub` beside it, and tokens and claims signed with
//! it. Stations get only `pool.pub` and a station token file.

use anyhow::Context;
use gleaner_proto::creds::{
    ClaimTicket, Claims, PoolSigner, PoolVerifier, Role, load_or_create_signing_key, new_nonce,
    new_token_id, write_public_key,
};
use std::path::{Path, PathBuf};

/// How long the user and admin tokens of tests live.
const TEST_TOKEN_SECS: u64 = 86_400;

/// The signing key of a test pool and what it signs.
#[derive(Clone, Debug)]
pub struct TestKeys {
    signer: PoolSigner,
    dir: PathBuf,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl TestKeys {
    /// Loads or creates `dir/signing.key` (0600) and writes `dir/pool.pub`.
    pub fn in_dir(dir: &Path) -> anyhow::Result<Self> {
        let signer = load_or_create_signing_key(&dir.join("signing.key"))
            .with_context(|| format!("signing key in {}", dir.display()))?;
        write_public_key(&dir.join("pool.pub"), &signer.verifier())?;
        Ok(TestKeys {
            signer,
            dir: dir.to_path_buf(),
        })
    }

    pub fn signer(&self) -> &PoolSigner {
        &self.signer
    }

    pub fn verifier(&self) -> PoolVerifier {
        self.signer.verifier()
    }

    /// `pool.pub`: what stations are given.
    pub fn public_key(&self) -> PathBuf {
        self.dir.join("pool.pub")
    }

    /// `signing.key`: the coordinator's only.
    pub fn signing_key(&self) -> PathBuf {
        self.dir.join("signing.key")
    }

    /// Signs `claims` as they are.
    pub fn sign(&self, claims: &Claims) -> String {
        match self.signer.sign(claims) {
            Ok(t) => t,
            Err(e) => panic!("test token {claims:?}: {e}"),
        }
    }

    /// A token for `subject` with `role`, issued now with a fresh id; user
    /// and admin tokens live a day, station tokens never expire.
    pub fn token(&self, role: Role, subject: &str) -> String {
        let now = now_secs();
        self.sign(&Claims {
            subject: subject.into(),
            role,
            issued_at: now,
            expires_at: (role != Role::Station).then_some(now + TEST_TOKEN_SECS),
            token_id: new_token_id().unwrap_or_else(|e| panic!("token id: {e}")),
        })
    }

    pub fn user(&self, name: &str) -> String {
        self.token(Role::User, name)
    }

    pub fn admin(&self, name: &str) -> String {
        self.token(Role::Admin, name)
    }

    pub fn station(&self, name: &str) -> String {
        self.token(Role::Station, name)
    }

    /// Writes station `name`'s token to `path` (0600, parents created) and
    /// returns `path`.
    pub fn station_token_file(&self, name: &str, path: &Path) -> anyhow::Result<PathBuf> {
        write_private(path, &self.station(name))?;
        Ok(path.to_path_buf())
    }

    /// A claim for `home` (whose shadow is at `home_address`) on `host`,
    /// valid for ten minutes, with a fresh nonce.
    pub fn claim(&self, host: &str, home: &str, home_address: &str) -> String {
        let now = now_secs();
        let nonce = new_nonce().unwrap_or_else(|e| panic!("nonce: {e}"));
        let ticket = ClaimTicket::new(host, home, home_address, now, now + 600, nonce);
        match self.signer.sign_claim(&ticket) {
            Ok(c) => c,
            Err(e) => panic!("test claim {ticket:?}: {e}"),
        }
    }
}

/// Writes `text` to `path` with mode 0600 (parents created), as the
/// daemons write credential files.
pub fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    gleaner_proto::creds::write_atomic(path, text.as_bytes(), 0o600)
        .with_context(|| format!("writing {}", path.display()))
}
