//! Signatures already verified. A station checks the same token or claim
//! on every request of a running job (the host's reports and output to the
//! job's home carry the claim, each `glean` call its token), and an
//! Ed25519 verification costs tens of microseconds each time: a trivial
//! job paid for dozens of them. [`PoolVerifier`](super::PoolVerifier)
//! remembers the digests of the envelopes whose signature it verified; the
//! same text again needs only the digest. Only the signature is
//! remembered: the rules, the expiry, the host a claim names and
//! revocation are checked on every use, as before.
//!
//! Bounded: at [`CAPACITY`] digests the memo starts afresh (a full verify
//! the next time each is seen).

use super::envelope::Kind;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::Mutex;

/// Digests kept at most (32 bytes each).
pub(crate) const CAPACITY: usize = 4096;

#[derive(Default)]
pub(crate) struct SeenSignatures {
    digests: Mutex<HashSet<[u8; 32]>>,
}

impl SeenSignatures {
    /// The envelope's digest, under its kind: a token's text is never taken
    /// for a claim's.
    pub(crate) fn digest(kind: Kind, text: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(kind.context());
        h.update([0]);
        h.update(text.as_bytes());
        h.finalize().into()
    }

    pub(crate) fn contains(&self, digest: &[u8; 32]) -> bool {
        self.lock().contains(digest)
    }

    /// Remembers a digest whose envelope's signature just verified.
    pub(crate) fn insert(&self, digest: [u8; 32]) {
        let mut set = self.lock();
        if set.len() >= CAPACITY {
            set.clear();
        }
        set.insert(digest);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<[u8; 32]>> {
        // Each change is whole: a poisoned set is consistent.
        self.digests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_is_bounded_and_keeps_kinds_apart() {
        let seen = SeenSignatures::default();
        for i in 0..=CAPACITY {
            seen.insert(SeenSignatures::digest(Kind::Token, &i.to_string()));
        }
        assert!(seen.len() <= CAPACITY);
        let last = SeenSignatures::digest(Kind::Token, &CAPACITY.to_string());
        assert!(seen.contains(&last));
        assert!(!seen.contains(&SeenSignatures::digest(Kind::Claim, &CAPACITY.to_string())));
    }
}
