//! Single-use claims: a host remembers every nonce it accepted until the
//! claim has expired, on disk, so a restart does not reopen replay
//! (DESIGN.md, Trust model).
//!
//! [`NonceBook`] is the pure rule (time is passed in); [`NonceFile`] is the
//! book kept in a file of the host's state directory, rewritten atomically
//! on every accepted claim.

use super::claim::ClaimError;
use super::fsio;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Entries are kept this long past their claim's expiry, so a host clock
/// stepped back a little cannot make an expired claim valid again while
/// its nonce is already forgotten.
pub const CLOCK_STEP_GRACE_SECS: u64 = 600;

/// Most unexpired nonces remembered. Claims live minutes (three advertise
/// periods by default), so a host accepting this many is being flooded:
/// it refuses further claims rather than grow without bound.
pub const DEFAULT_NONCE_CAPACITY: usize = 16_384;

/// The nonces a host has accepted, each with its claim's expiry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NonceBook {
    /// nonce → the claim's `expires_at`.
    nonces: BTreeMap<String, u64>,
    #[serde(skip, default = "default_capacity")]
    capacity: usize,
}

fn default_capacity() -> usize {
    DEFAULT_NONCE_CAPACITY
}

impl Default for NonceBook {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_NONCE_CAPACITY)
    }
}

impl NonceBook {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(capacity: usize) -> Self {
        NonceBook {
            nonces: BTreeMap::new(),
            capacity,
        }
    }

    pub fn len(&self) -> usize {
        self.nonces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nonces.is_empty()
    }

    pub fn contains(&self, nonce: &str) -> bool {
        self.nonces.contains_key(nonce)
    }

    /// Forgets the nonces whose claims expired (plus the grace) by `now`;
    /// returns how many.
    pub fn prune(&mut self, now_secs: u64) -> usize {
        let before = self.nonces.len();
        self.nonces
            .retain(|_, exp| exp.saturating_add(CLOCK_STEP_GRACE_SECS) > now_secs);
        before - self.nonces.len()
    }

    /// Spends `nonce` of a claim valid until `expires_at`: refused if it was
    /// spent before, if the claim has expired, or if the book is full.
    pub fn try_use(
        &mut self,
        nonce: &str,
        expires_at: u64,
        now_secs: u64,
    ) -> Result<(), ClaimError> {
        self.prune(now_secs);
        if now_secs >= expires_at {
            return Err(ClaimError::Expired {
                expired_at: expires_at,
                now: now_secs,
            });
        }
        if self.nonces.contains_key(nonce) {
            return Err(ClaimError::Replayed {
                nonce: nonce.to_string(),
            });
        }
        if self.nonces.len() >= self.capacity {
            return Err(ClaimError::TooManyClaims {
                capacity: self.capacity,
            });
        }
        self.nonces.insert(nonce.to_string(), expires_at);
        Ok(())
    }

    /// Undoes a [`try_use`](Self::try_use) whose effect could not be made
    /// durable.
    fn forget(&mut self, nonce: &str) {
        self.nonces.remove(nonce);
    }
}

/// Why the nonce file refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum NonceFileError {
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error("nonce file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("nonce file {path} is corrupt ({why}); refusing to start without it")]
    Corrupt { path: PathBuf, why: String },
}

/// A [`NonceBook`] persisted in one file (JSON, mode 0600). Owned by one
/// daemon (keep it behind the host's lock); every accepted nonce is on
/// disk before `try_use` returns.
#[derive(Debug)]
pub struct NonceFile {
    path: PathBuf,
    book: NonceBook,
}

impl NonceFile {
    /// Opens the book at `path`; a missing file is an empty book. A corrupt
    /// file is an error, not an empty book: forgetting would reopen replay.
    pub fn open(path: &Path) -> Result<Self, NonceFileError> {
        Self::open_with_capacity(path, DEFAULT_NONCE_CAPACITY)
    }

    pub fn open_with_capacity(path: &Path, capacity: usize) -> Result<Self, NonceFileError> {
        let text = fsio::read_optional(path).map_err(|source| NonceFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut book = match text {
            None => NonceBook::default(),
            Some(text) => {
                serde_json::from_str::<NonceBook>(&text).map_err(|e| NonceFileError::Corrupt {
                    path: path.to_path_buf(),
                    why: e.to_string(),
                })?
            }
        };
        book.capacity = capacity;
        Ok(NonceFile {
            path: path.to_path_buf(),
            book,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn book(&self) -> &NonceBook {
        &self.book
    }

    /// [`NonceBook::try_use`], then writes the book. If the write fails the
    /// nonce is forgotten again and the claim refused: a nonce accepted but
    /// not on disk would be accepted again after a restart.
    pub fn try_use(
        &mut self,
        nonce: &str,
        expires_at: u64,
        now_secs: u64,
    ) -> Result<(), NonceFileError> {
        self.book.try_use(nonce, expires_at, now_secs)?;
        if let Err(e) = self.save() {
            self.book.forget(nonce);
            return Err(e);
        }
        Ok(())
    }

    fn save(&self) -> Result<(), NonceFileError> {
        let io = |source| NonceFileError::Io {
            path: self.path.clone(),
            source,
        };
        let json = serde_json::to_vec(&self.book).map_err(|e| io(std::io::Error::other(e)))?;
        fsio::write_atomic(&self.path, &json, 0o600).map_err(io)
    }
}
