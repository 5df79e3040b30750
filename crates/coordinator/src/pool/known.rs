//! The stations' latest ads ([`Known`]), by interned id ([`ById`]).
//!
//! An ad that says nothing new but its progress (sequence, send time, free
//! disk, summary) keeps what the pool derived from the last one: most ads
//! of a settled pool are such, and rebuilding ClassAds for them was most of
//! the coordinator's cost per ad.
//!
//! Ids are dense (the pool hands them out in order as it meets names), so
//! the table is a vector indexed by id: an ad finds its station's entry
//! without a search, and iteration runs in id order as a `BTreeMap` would.

use gleaner_classad::Ad;
use gleaner_classad::ad::Slot;
use gleaner_core::alloc::StationId;
use gleaner_core::detector::OwnerState;
use gleaner_core::time::Time;
use gleaner_proto::fit::JobView;
use gleaner_proto::matchmaking::{machine_ad, machine_ad_since, set_disk, set_disk_at};
use gleaner_proto::wire::StationAd;

/// A station's latest ad, with what the matchmaker derives from it once
/// per advertisement rather than once per pass.
pub(super) struct Known {
    pub(super) ad: StationAd,
    pub(super) last_seen: Time,
    /// Which ad the pool received this as (the pool's count of ads).
    pub(super) serial: u64,
    /// The machine ClassAd of `ad`, but for `Disk`, which may be older
    /// ([`Known::machine`] has the whole of it).
    machine: Ad,
    /// The free disk `machine` says.
    machine_disk: u64,
    /// Where `machine` binds `Disk`, found at the first update.
    disk_slot: Option<Slot>,
    /// `machine` with the current free disk, made when a stale one is first
    /// read.
    fresh: std::cell::OnceCell<Ad>,
    /// `ad.classes` with their job ClassAds.
    pub(super) jobs: Vec<JobView>,
    /// The interned home of each node held here, in [`node_holders`](super::node_holders)'
    /// order (the guests', then the idle claims'): a pass reads them
    /// without a name lookup.
    pub(super) holders: Vec<StationId>,
    /// Each running guest's job as a destination query sees it
    /// (`destinations.rs`), built when first asked and kept while the
    /// station's ads say nothing new.
    pub(super) guest_jobs: std::cell::OnceCell<Vec<JobView>>,
}

impl Known {
    /// The station's ad received at `now`; what can be reused from its
    /// previous ad `prev` is (the machine ad when only the occupancy
    /// changed, the job ads of unchanged classes).
    pub(super) fn new(
        ad: StationAd,
        now: Time,
        serial: u64,
        prev: Option<Known>,
        holders: Vec<StationId>,
    ) -> Self {
        let (machine, jobs) = match prev {
            None => (
                machine_ad(&ad),
                ad.classes.iter().cloned().map(JobView::of_class).collect(),
            ),
            Some(mut p) => {
                // What changed is found by comparing the ads: the machine
                // ad must say all of the old one first.
                p.refresh_disk();
                let machine = machine_ad_since(&p.ad, p.machine, &ad);
                let jobs = ad
                    .classes
                    .iter()
                    .map(|c| match p.jobs.iter().find(|j| j.class.key == c.key) {
                        // The key covers everything but the count, and the
                        // job ad has no count.
                        Some(j) => JobView {
                            class: c.clone(),
                            ad: j.ad.clone(),
                        },
                        None => JobView::of_class(c.clone()),
                    })
                    .collect();
                (machine, jobs)
            }
        };
        Known {
            machine_disk: ad.disk_free_kb,
            ad,
            last_seen: now,
            serial,
            machine,
            disk_slot: None,
            fresh: std::cell::OnceCell::new(),
            jobs,
            holders,
            guest_jobs: std::cell::OnceCell::new(),
        }
    }

    /// The station's next ad `ad`, received at `now` as ad number
    /// `serial`, which [`StationAd::same_apart_from_progress`] found to say
    /// nothing new: what was derived stands, only the progress fields are
    /// taken. The machine ad's `Disk` is written now if the host may have a
    /// free node (passes and destination queries read its machine ad),
    /// else when it is first read: writing it into all 10 000 machine ads,
    /// a few cache misses each, was a sixth of a round.
    pub(super) fn touch(&mut self, ad: StationAd, now: Time, serial: u64) {
        let eager = self.hosting() && self.ad.occupied() < self.ad.cpus;
        self.keep_fresh();
        self.ad.disk_free_kb = ad.disk_free_kb;
        if eager {
            self.refresh_disk();
        }
        self.ad.sequence = ad.sequence;
        self.ad.sent_at = ad.sent_at;
        self.ad.summary = ad.summary;
        self.last_seen = now;
        self.serial = serial;
    }

    /// The machine ClassAd of the last ad, `Disk` included.
    pub(super) fn machine(&self) -> &Ad {
        if self.machine_disk == self.ad.disk_free_kb {
            return &self.machine;
        }
        self.fresh.get_or_init(|| {
            let mut m = self.machine.clone();
            set_disk(&mut m, self.ad.disk_free_kb);
            m
        })
    }

    /// Keeps the machine ad made at the last read (with the free disk of
    /// then, which `ad` still says).
    fn keep_fresh(&mut self) {
        if let Some(f) = self.fresh.take() {
            self.machine = f;
            self.machine_disk = self.ad.disk_free_kb;
        }
    }

    /// Writes the current free disk into the kept machine ad.
    fn refresh_disk(&mut self) {
        self.keep_fresh();
        if self.machine_disk != self.ad.disk_free_kb {
            set_disk_at(&mut self.machine, &mut self.disk_slot, self.ad.disk_free_kb);
            self.machine_disk = self.ad.disk_free_kb;
        }
    }

    /// Offers nodes at all: AV and not submit-only.
    pub(super) fn hosting(&self) -> bool {
        self.ad.state == OwnerState::Av && !self.ad.submit_only
    }
}

/// A check reads the machine ad only when it gets that far.
impl gleaner_proto::fit::MachineSource for Known {
    fn machine_ad(&self) -> &Ad {
        self.machine()
    }
}

/// A map from station id to `T`, stored densely.
pub(super) struct ById<T> {
    slots: Vec<Option<(StationId, T)>>,
    len: usize,
}

impl<T> Default for ById<T> {
    fn default() -> Self {
        ById {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<T> ById<T> {
    pub(super) fn get(&self, id: &StationId) -> Option<&T> {
        self.slots
            .get(*id as usize)
            .and_then(|s| s.as_ref())
            .map(|(_, v)| v)
    }

    pub(super) fn get_mut(&mut self, id: &StationId) -> Option<&mut T> {
        self.slots
            .get_mut(*id as usize)
            .and_then(|s| s.as_mut())
            .map(|(_, v)| v)
    }

    pub(super) fn insert(&mut self, id: StationId, v: T) -> Option<T> {
        let i = id as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        let old = self.slots[i].replace((id, v)).map(|(_, v)| v);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub(super) fn remove(&mut self, id: &StationId) -> Option<T> {
        let old = self
            .slots
            .get_mut(*id as usize)
            .and_then(Option::take)
            .map(|(_, v)| v);
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Entries in id order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&StationId, &T)> {
        self.slots.iter().flatten().map(|(id, v)| (id, v))
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &StationId> {
        self.iter().map(|(id, _)| id)
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &T> {
        self.iter().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// Behaves as a `BTreeMap` under any sequence of insertions and
        /// removals: same lookups, length and id-ordered iteration.
        #[test]
        fn matches_a_btree_map(ops in proptest::collection::vec((any::<bool>(), 0u32..40, any::<u16>()), 0..200)) {
            let mut dense = ById::default();
            let mut tree = BTreeMap::new();
            for (insert, id, v) in ops {
                if insert {
                    prop_assert_eq!(dense.insert(id, v), tree.insert(id, v));
                } else {
                    prop_assert_eq!(dense.remove(&id), tree.remove(&id));
                }
                prop_assert_eq!(dense.len(), tree.len());
                prop_assert_eq!(dense.get(&id), tree.get(&id));
            }
            let a: Vec<(u32, u16)> = dense.iter().map(|(k, v)| (*k, *v)).collect();
            let b: Vec<(u32, u16)> = tree.iter().map(|(k, v)| (*k, *v)).collect();
            prop_assert_eq!(a, b);
            if let Some((&k, _)) = tree.iter().next() {
                if let Some(v) = dense.get_mut(&k) {
                    *v = 7;
                }
                prop_assert_eq!(dense.get(&k), Some(&7));
            }
        }
    }
}
