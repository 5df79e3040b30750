//! The coordinator's token registry (`tokens.json` in its state directory):
//! every token it issued, by id, and whether it was revoked (DESIGN.md,
//! Trust model). `glean token create|list|revoke` edit it where the
//! signing key is; the coordinator reads [`TokenRegistry::revocations`]
//! into every advertise reply, reloading when the file changed
//! ([`RevocationCache`]).
//!
//! The registry never holds a token itself, only its claims: a token is
//! printed once, when created. Writers take an exclusive `flock` on
//! `tokens.json.lock` around read-modify-write and replace the file
//! atomically, so concurrent `glean token` runs never lose an entry and a
//! reader never sees half a file.

use gleaner_proto::creds::{
    self, Claims, PoolSigner, Revocations, Role, TokenError, check_subject,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The registry's file name in the state directory.
pub const REGISTRY_FILE: &str = "tokens.json";
/// Default signing-key file name in the state directory.
pub const SIGNING_KEY_FILE: &str = "signing.key";
/// Default public-key file name in the state directory.
pub const PUBLIC_KEY_FILE: &str = "pool.pub";

const VERSION: u32 = 1;
const DAY_SECS: u64 = 86_400;
/// User and admin tokens always expire; this is their default lifetime.
pub const DEFAULT_USER_DAYS: u64 = 30;
/// Station tokens' default lifetime (`--expires 0`: never).
pub const DEFAULT_STATION_DAYS: u64 = 365;
/// Longest lifetime accepted, days (a typo guard: 100 years).
pub const MAX_DAYS: u64 = 36_500;

/// `<state_dir>/signing.key`.
pub fn signing_key_path(state_dir: &Path) -> PathBuf {
    state_dir.join(SIGNING_KEY_FILE)
}

/// `<state_dir>/pool.pub`.
pub fn public_key_path(state_dir: &Path) -> PathBuf {
    state_dir.join(PUBLIC_KEY_FILE)
}

/// One issued token, as the registry keeps it (never the token itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRecord {
    pub token_id: String,
    pub subject: String,
    pub role: Role,
    /// Seconds since the UNIX epoch.
    pub issued_at: u64,
    /// Seconds since the UNIX epoch; `None`: a station token that never
    /// expires.
    #[serde(default)]
    pub expires_at: Option<u64>,
    #[serde(default)]
    pub revoked: bool,
    /// When it was revoked, seconds since the UNIX epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<u64>,
    /// Set for a one-time join token (`glean token create --station`):
    /// `subject` is the station it may join as, `expires_at` the end of
    /// its use (`crate::enrol::joins`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<crate::enrol::joins::JoinRecord>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegistryFile {
    version: u32,
    /// Incremented on every write.
    generation: u64,
    pub(crate) tokens: Vec<TokenRecord>,
}

/// What to issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRequest {
    pub role: Role,
    pub subject: String,
    /// Lifetime in days; `None`: the role's default; `Some(0)`: never
    /// (station tokens only).
    pub expires_days: Option<u64>,
}

/// A token just created: printed once, never stored.
#[derive(Debug)]
pub struct IssuedToken {
    pub token: String,
    pub record: TokenRecord,
}

/// What `revoke` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RevokeOutcome {
    Revoked(TokenRecord),
    /// Revoked before; nothing changed.
    AlreadyRevoked(TokenRecord),
}

/// Why the registry refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum TokenRegistryError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("token registry {path} is corrupt: {why}")]
    Corrupt { path: PathBuf, why: String },
    #[error("no token with id {token_id:?} (see `glean token list`)")]
    UnknownToken { token_id: String },
    #[error("{0}")]
    Lifetime(String),
    #[error(transparent)]
    Token(#[from] TokenError),
    /// A join refused (`crate::enrol::joins`); nothing was written.
    #[error("join refused: {0}")]
    Join(crate::enrol::joins::JoinRefused),
}

/// The expiry of a new token of `role` issued at `now` with a lifetime of
/// `days` (`None`: the role's default). User and admin tokens always
/// expire; `Some(0)` means never and is for station tokens only.
pub fn expiry_for(
    role: Role,
    days: Option<u64>,
    now: u64,
) -> Result<Option<u64>, TokenRegistryError> {
    let days = match (role, days) {
        (Role::Station, Some(0)) => return Ok(None),
        (_, Some(0)) => {
            return Err(TokenRegistryError::Lifetime(format!(
                "{role} tokens always expire: --expires must be at least 1 day \
                 (0, never, is for station tokens only)"
            )));
        }
        (_, Some(d)) if d > MAX_DAYS => {
            return Err(TokenRegistryError::Lifetime(format!(
                "--expires {d}: at most {MAX_DAYS} days"
            )));
        }
        (_, Some(d)) => d,
        (Role::Station, None) => DEFAULT_STATION_DAYS,
        (Role::User | Role::Admin, None) => DEFAULT_USER_DAYS,
    };
    Ok(Some(now.saturating_add(days * DAY_SECS)))
}

/// Identifies one version of the registry file without reading it: a
/// write replaces the file (new inode), so any write changes the stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistryStamp {
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

/// The registry file of one coordinator.
#[derive(Clone, Debug)]
pub struct TokenRegistry {
    path: PathBuf,
}

impl TokenRegistry {
    /// The registry at `<state_dir>/tokens.json`.
    pub fn in_state_dir(state_dir: &Path) -> Self {
        TokenRegistry {
            path: state_dir.join(REGISTRY_FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self) -> impl FnOnce(std::io::Error) -> TokenRegistryError + '_ {
        |source| TokenRegistryError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }

    fn read(&self) -> Result<RegistryFile, TokenRegistryError> {
        let Some(text) = creds::read_optional(&self.path).map_err(self.io())? else {
            return Ok(RegistryFile {
                version: VERSION,
                ..RegistryFile::default()
            });
        };
        let corrupt = |why: String| TokenRegistryError::Corrupt {
            path: self.path.clone(),
            why,
        };
        let file: RegistryFile = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
        if file.version != VERSION {
            return Err(corrupt(format!("unsupported version {}", file.version)));
        }
        Ok(file)
    }

    /// Runs `edit` on the registry under the exclusive lock and writes the
    /// result back atomically. Nothing is written if `edit` fails.
    pub(crate) fn update<T>(
        &self,
        edit: impl FnOnce(&mut RegistryFile) -> Result<T, TokenRegistryError>,
    ) -> Result<T, TokenRegistryError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            creds::create_private_dir(dir).map_err(self.io())?;
        }
        let lock_path = self.lock_path();
        let lock = open_lock(&lock_path).map_err(|source| TokenRegistryError::Io {
            path: lock_path.clone(),
            source,
        })?;
        // Blocks until other writers are done; released when `lock` closes.
        lock.lock().map_err(|source| TokenRegistryError::Io {
            path: lock_path.clone(),
            source,
        })?;
        let mut file = self.read()?;
        let out = edit(&mut file)?;
        file.generation += 1;
        let json =
            serde_json::to_vec_pretty(&file).map_err(|e| self.io()(std::io::Error::other(e)))?;
        creds::write_atomic(&self.path, &json, 0o600).map_err(self.io())?;
        give_to_dir_owner(&self.path);
        give_to_dir_owner(&lock_path);
        Ok(out)
    }

    /// Every token issued, oldest first.
    pub fn list(&self) -> Result<Vec<TokenRecord>, TokenRegistryError> {
        Ok(self.read()?.tokens)
    }

    /// Issues a token: checks the subject for the role, signs, records it,
    /// and returns it. The token is returned only if the record is on disk,
    /// so every usable token can be listed and revoked.
    pub fn create(
        &self,
        signer: &PoolSigner,
        request: &TokenRequest,
        now: u64,
    ) -> Result<IssuedToken, TokenRegistryError> {
        self.update(|file| self.issue_into(file, signer, request, now))
    }

    /// A fresh token id, unique in `file`.
    pub(crate) fn new_id(&self, file: &RegistryFile) -> Result<String, TokenRegistryError> {
        loop {
            let id = creds::new_token_id().map_err(self.io())?;
            // 128 random bits never collide in practice; checking costs
            // nothing and keeps ids unique by construction.
            if !file.tokens.iter().any(|t| t.token_id == id) {
                return Ok(id);
            }
        }
    }

    /// [`TokenRegistry::create`] inside an update already holding the lock.
    pub(crate) fn issue_into(
        &self,
        file: &mut RegistryFile,
        signer: &PoolSigner,
        request: &TokenRequest,
        now: u64,
    ) -> Result<IssuedToken, TokenRegistryError> {
        check_subject(request.role, &request.subject).map_err(TokenError::Subject)?;
        let expires_at = expiry_for(request.role, request.expires_days, now)?;
        {
            let token_id = self.new_id(file)?;
            let claims = Claims {
                subject: request.subject.clone(),
                role: request.role,
                issued_at: now,
                expires_at,
                token_id: token_id.clone(),
            };
            let token = signer.sign(&claims)?;
            let record = TokenRecord {
                token_id,
                subject: claims.subject,
                role: claims.role,
                issued_at: now,
                expires_at,
                revoked: false,
                revoked_at: None,
                join: None,
            };
            file.tokens.push(record.clone());
            Ok(IssuedToken { token, record })
        }
    }

    /// Marks token `token_id` revoked (exact id, as `list` shows it).
    pub fn revoke(&self, token_id: &str, now: u64) -> Result<RevokeOutcome, TokenRegistryError> {
        self.update(|file| {
            let rec = file
                .tokens
                .iter_mut()
                .find(|t| t.token_id == token_id)
                .ok_or_else(|| TokenRegistryError::UnknownToken {
                    token_id: token_id.to_string(),
                })?;
            if rec.revoked {
                return Ok(RevokeOutcome::AlreadyRevoked(rec.clone()));
            }
            rec.revoked = true;
            rec.revoked_at = Some(now);
            Ok(RevokeOutcome::Revoked(rec.clone()))
        })
    }

    /// The revoked tokens that have not yet expired (plus the clock-skew
    /// grace of [`Revocations::prune`]): what the advertise reply carries.
    pub fn revocations(&self, now: u64) -> Result<Revocations, TokenRegistryError> {
        Ok(revocations_of(&self.read()?.tokens, now))
    }

    /// The file's current stamp; `None` if there is no registry yet.
    pub fn stamp(&self) -> Result<Option<RegistryStamp>, TokenRegistryError> {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(Some(RegistryStamp {
                ino: m.ino(),
                len: m.len(),
                mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io()(e)),
        }
    }

    /// Whether the file changed since `stamp` was taken (cheap: one stat).
    pub fn changed_since(&self, stamp: Option<RegistryStamp>) -> Result<bool, TokenRegistryError> {
        Ok(self.stamp()? != stamp)
    }
}

fn revocations_of(tokens: &[TokenRecord], now: u64) -> Revocations {
    let mut r = Revocations::new();
    for t in tokens.iter().filter(|t| t.revoked) {
        r.revoke(t.token_id.clone(), t.expires_at);
    }
    r.prune(now);
    r
}

fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// `glean token` may run as root while the coordinator runs as its own
/// account: files it creates go to the state directory's owner, so the
/// coordinator can still read them. Best effort: without privilege the
/// files are ours already, and chown fails harmlessly.
pub(crate) fn give_to_dir_owner(path: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Some(dir) = path.parent() else { return };
    let (Ok(d), Ok(f)) = (std::fs::metadata(dir), std::fs::symlink_metadata(path)) else {
        return;
    };
    if (d.uid(), d.gid()) != (f.uid(), f.gid()) {
        // lchown: a link planted in the directory moves nothing elsewhere.
        let _ = std::os::unix::fs::lchown(path, Some(d.uid()), Some(d.gid()));
    }
}

/// The registry's revocations as the coordinator serves them: reloaded
/// only when the file changed, pruned on every call.
#[derive(Debug)]
pub struct RevocationCache {
    registry: TokenRegistry,
    stamp: Option<RegistryStamp>,
    loaded: bool,
    current: Revocations,
}

impl RevocationCache {
    pub fn new(registry: TokenRegistry) -> Self {
        RevocationCache {
            registry,
            stamp: None,
            loaded: false,
            current: Revocations::new(),
        }
    }

    /// Reloads if `tokens.json` changed since the last load, then prunes.
    /// On an error the last good set stays in force (revocations are never
    /// dropped because a file could not be read).
    pub fn refresh(&mut self, now: u64) -> Result<&Revocations, TokenRegistryError> {
        // Stamp first, then read: a write in between leaves an old stamp
        // with new content, and the next call reloads again. Never the
        // other way round.
        let stamp = self.registry.stamp()?;
        if !self.loaded || stamp != self.stamp {
            let fresh = self.registry.revocations(now)?;
            self.current = fresh;
            self.stamp = stamp;
            self.loaded = true;
        }
        self.current.prune(now);
        Ok(&self.current)
    }

    /// The set as last loaded.
    pub fn current(&self) -> &Revocations {
        &self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> PoolSigner {
        PoolSigner::from_seed(&[7; 32])
    }

    fn req(role: Role, subject: &str, days: Option<u64>) -> TokenRequest {
        TokenRequest {
            role,
            subject: subject.into(),
            expires_days: days,
        }
    }

    #[test]
    fn expiry_rules() {
        assert_eq!(
            expiry_for(Role::User, None, 0).unwrap(),
            Some(30 * DAY_SECS)
        );
        assert_eq!(
            expiry_for(Role::Station, None, 0).unwrap(),
            Some(365 * DAY_SECS)
        );
        assert_eq!(expiry_for(Role::Station, Some(0), 5).unwrap(), None);
        assert_eq!(
            expiry_for(Role::Admin, Some(2), 5).unwrap(),
            Some(5 + 2 * DAY_SECS)
        );
        assert!(expiry_for(Role::User, Some(0), 0).is_err());
        assert!(expiry_for(Role::Admin, Some(0), 0).is_err());
        assert!(expiry_for(Role::User, Some(MAX_DAYS + 1), 0).is_err());
    }

    #[test]
    fn create_list_revoke_and_revocations() {
        let dir = tempfile::tempdir().unwrap();
        let reg = TokenRegistry::in_state_dir(dir.path());
        assert!(reg.list().unwrap().is_empty());
        assert_eq!(reg.stamp().unwrap(), None);
        let s = signer();
        let a = reg
            .create(&s, &req(Role::User, "alice", None), 1_000)
            .unwrap();
        let b = reg
            .create(&s, &req(Role::Station, "ws12", Some(0)), 1_000)
            .unwrap();
        let claims = s.verifier().verify(&a.token, 1_001).unwrap();
        assert_eq!(claims.token_id, a.record.token_id);
        assert_eq!(claims.expires_at, Some(1_000 + 30 * DAY_SECS));
        assert_eq!(a.record.token_id.len(), 32);
        let list = reg.list().unwrap();
        assert_eq!(list, vec![a.record.clone(), b.record.clone()]);
        // The registry never stores a token.
        let text = std::fs::read_to_string(reg.path()).unwrap();
        assert!(!text.contains(&a.token) && !text.contains(a.token.split('.').nth(1).unwrap()));

        let mut cache = RevocationCache::new(reg.clone());
        assert!(cache.refresh(1_001).unwrap().is_empty());
        let stamp = reg.stamp().unwrap();
        assert!(!reg.changed_since(stamp).unwrap());

        let out = reg.revoke(&b.record.token_id, 2_000).unwrap();
        assert!(matches!(out, RevokeOutcome::Revoked(ref r) if r.revoked_at == Some(2_000)));
        assert!(reg.changed_since(stamp).unwrap());
        assert!(matches!(
            reg.revoke(&b.record.token_id, 2_001).unwrap(),
            RevokeOutcome::AlreadyRevoked(_)
        ));
        assert!(matches!(
            reg.revoke("nope", 2_000),
            Err(TokenRegistryError::UnknownToken { .. })
        ));
        let claims_b = s.verifier().verify(&b.token, 2_002).unwrap();
        assert!(cache.refresh(2_002).unwrap().is_revoked(&claims_b));

        // A revoked user token leaves the set once it has expired anyway.
        reg.revoke(&a.record.token_id, 2_003).unwrap();
        let exp = a.record.expires_at.unwrap();
        assert_eq!(reg.revocations(2_004).unwrap().len(), 2);
        let later = exp + creds::CLOCK_STEP_GRACE_SECS;
        assert_eq!(reg.revocations(later).unwrap().len(), 1);
        assert_eq!(cache.refresh(later).unwrap().len(), 1);
    }

    #[test]
    fn invalid_requests_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let reg = TokenRegistry::in_state_dir(dir.path());
        let s = signer();
        for r in [
            req(Role::User, "Alice", None),
            req(Role::User, "alice", Some(0)),
            req(Role::Station, "bad name", None),
            req(Role::Admin, "", None),
        ] {
            assert!(reg.create(&s, &r, 1_000).is_err(), "{r:?}");
        }
        assert!(!reg.path().exists());
    }

    #[test]
    fn corrupt_registry_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let reg = TokenRegistry::in_state_dir(dir.path());
        std::fs::write(reg.path(), "{").unwrap();
        let e = reg.list().unwrap_err();
        assert!(e.to_string().contains("tokens.json"), "{e}");
        assert!(
            reg.create(&signer(), &req(Role::User, "a", None), 1)
                .is_err()
        );
        assert_eq!(std::fs::read_to_string(reg.path()).unwrap(), "{");
    }
}
