//! How many bytes of output each job, and each user, keeps in the home's
//! spool: the books the spool's bounds are checked against
//! (`gleaner_core::user_limits::SpoolLimits`).
//!
//! Counted: stdout, stderr and output files (checkpoints are bounded on
//! their own, `max_checkpoint_bytes`). A completed job's outputs, once in
//! place in its owner's directories, stay a while for `glean tail` and are
//! the first to go when their owner's jobs need the room
//! ([`SpoolMeter::check`] names them).

use gleaner_core::time::Time;
use gleaner_core::user_limits::{SpoolExceeded, SpoolLimits};
use gleaner_proto::job::JobId;
use std::collections::HashMap;

/// What the spool of one job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The job is in the queue: its output is being written or waits.
    Active,
    /// Completed, its outputs delivered at this time: a copy, kept a
    /// while.
    Delivered(Time),
    /// Completed with outputs that could not be delivered: the only copy.
    Kept,
}

#[derive(Clone, Debug)]
struct Entry {
    owner: String,
    bytes: u64,
    kind: Kind,
}

/// The books. Not thread-safe by itself: the home keeps it behind a lock.
#[derive(Debug, Default)]
pub(crate) struct SpoolMeter {
    jobs: HashMap<JobId, Entry>,
    owners: HashMap<String, u64>,
}

impl SpoolMeter {
    /// Bytes `id` keeps.
    pub(crate) fn job_bytes(&self, id: JobId) -> u64 {
        self.jobs.get(&id).map_or(0, |e| e.bytes)
    }

    /// The owner of `id`'s spool, when the books know it.
    pub(crate) fn owner_of(&self, id: JobId) -> Option<String> {
        self.jobs.get(&id).map(|e| e.owner.clone())
    }

    /// Bytes all of `owner`'s jobs keep.
    pub(crate) fn owner_bytes(&self, owner: &str) -> u64 {
        self.owners.get(owner).copied().unwrap_or(0)
    }

    /// Every owner with bytes in the spool, and how many.
    pub(crate) fn owners(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self
            .owners
            .iter()
            .filter(|(_, b)| **b > 0)
            .map(|(o, b)| (o.clone(), *b))
            .collect();
        v.sort();
        v
    }

    /// Records that `id` (of `owner`) keeps `bytes` now, as `kind`.
    pub(crate) fn set(&mut self, id: JobId, owner: &str, bytes: u64, kind: Kind) {
        self.forget(id);
        *self.owners.entry(owner.to_string()).or_insert(0) += bytes;
        self.jobs.insert(
            id,
            Entry {
                owner: owner.to_string(),
                bytes,
                kind,
            },
        );
    }

    /// `bytes` more for `id` (an active job of `owner`).
    pub(crate) fn add(&mut self, id: JobId, owner: &str, bytes: u64) {
        let e = self.jobs.entry(id).or_insert_with(|| Entry {
            owner: owner.to_string(),
            bytes: 0,
            kind: Kind::Active,
        });
        e.bytes = e.bytes.saturating_add(bytes);
        let o = self.owners.entry(e.owner.clone()).or_insert(0);
        *o = o.saturating_add(bytes);
    }

    /// Changes the kind of `id`'s spool (its bytes stay).
    pub(crate) fn mark(&mut self, id: JobId, kind: Kind) {
        if let Some(e) = self.jobs.get_mut(&id) {
            e.kind = kind;
        }
    }

    /// `id` keeps nothing any more.
    pub(crate) fn forget(&mut self, id: JobId) {
        if let Some(e) = self.jobs.remove(&id) {
            let now_empty = match self.owners.get_mut(&e.owner) {
                Some(o) => {
                    *o = o.saturating_sub(e.bytes);
                    *o == 0
                }
                None => false,
            };
            if now_empty {
                self.owners.remove(&e.owner);
            }
        }
    }

    /// May `id` of `owner` keep `add` bytes more? When its owner's jobs
    /// would be over their bound, delivered copies of theirs make room
    /// first, oldest first: `Ok` names those to delete (already off the
    /// books). `Err` when the job's own bound, or its owner's with every
    /// copy gone, would be passed.
    pub(crate) fn check(
        &mut self,
        limits: &SpoolLimits,
        id: JobId,
        owner: &str,
        add: u64,
    ) -> Result<Vec<JobId>, SpoolExceeded> {
        let job = self.job_bytes(id).saturating_add(add);
        let mut total = self.owner_bytes(owner).saturating_add(add);
        let mut evict = Vec::new();
        if job <= limits.max_job_bytes && total > limits.max_owner_bytes {
            let mut copies: Vec<(Time, JobId, u64)> = self
                .jobs
                .iter()
                .filter(|(j, e)| **j != id && e.owner == owner)
                .filter_map(|(j, e)| match e.kind {
                    Kind::Delivered(at) => Some((at, *j, e.bytes)),
                    _ => None,
                })
                .collect();
            copies.sort();
            for (_, j, b) in copies {
                if total <= limits.max_owner_bytes {
                    break;
                }
                total = total.saturating_sub(b);
                evict.push(j);
            }
        }
        limits.admit(owner, job, total)?;
        for j in &evict {
            self.forget(*j);
        }
        Ok(evict)
    }

    /// Delivered copies older than `keep` at `now`: to delete.
    pub(crate) fn expired(&self, now: Time, keep: gleaner_core::time::Dur) -> Vec<JobId> {
        let mut v: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, e)| matches!(e.kind, Kind::Delivered(at) if now.since(at) >= keep))
            .map(|(j, _)| *j)
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_core::time::Dur;

    const LIMITS: SpoolLimits = SpoolLimits {
        max_job_bytes: 100,
        max_owner_bytes: 250,
    };

    fn j(p: u32) -> JobId {
        JobId::new(1, p)
    }

    #[test]
    fn bounds_hold_and_delivered_copies_make_room_oldest_first() {
        let mut m = SpoolMeter::default();
        assert_eq!(m.check(&LIMITS, j(0), "ann", 100), Ok(vec![]));
        m.add(j(0), "ann", 100);
        assert!(m.check(&LIMITS, j(0), "ann", 1).is_err(), "job bound");
        m.set(j(1), "ann", 90, Kind::Delivered(Time::from_secs(2)));
        m.set(j(2), "ann", 50, Kind::Delivered(Time::from_secs(1)));
        m.set(j(3), "bob", 100, Kind::Active);
        assert_eq!(m.owner_bytes("ann"), 240);
        // 240 + 60 = 300: the oldest copy (50) goes, which is enough.
        assert_eq!(m.check(&LIMITS, j(4), "ann", 60), Ok(vec![j(2)]));
        m.add(j(4), "ann", 60);
        assert_eq!(m.owner_bytes("ann"), 250);
        // Only undeliverable or active bytes left beyond the copy: full.
        m.mark(j(1), Kind::Kept);
        let e = m.check(&LIMITS, j(4), "ann", 1).unwrap_err();
        assert!(e.to_string().contains("ann's jobs"), "{e}");
        assert_eq!(m.owner_bytes("bob"), 100);
        m.forget(j(3));
        assert_eq!(m.owners(), vec![("ann".to_string(), 250)]);
        m.set(j(5), "cat", 1, Kind::Delivered(Time::from_secs(10)));
        assert_eq!(
            m.expired(Time::from_secs(20), Dur::from_secs(10)),
            vec![j(5)]
        );
        assert!(
            m.expired(Time::from_secs(19), Dur::from_secs(10))
                .is_empty()
        );
    }
}
