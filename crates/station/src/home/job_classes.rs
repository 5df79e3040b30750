//! This station's idle jobs grouped into classes for matchmaking: the
//! coordinator matches hosts to classes, not to single jobs.
//!
//! Every ad and every grant looks at the idle jobs' classes. A job's
//! description changes only by an edit (`condor_qedit`, which forgets its
//! class), so its class is computed once and kept ([`ClassCache`]); the
//! queue is read through its state index only, and a description is
//! decoded only for a job not seen before.
//! A grant for a class finds its job through the queue's class index
//! (`jobs.class_key`, stored at submit): the per-grant cost does not grow
//! with how many jobs of other classes wait (issue 15, item 4).

use crate::queue::{JobQueue, JobRecord};
use gleaner_proto::job::JobId;
use gleaner_proto::matchmaking::JobClass;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Most idle jobs looked at when grouping (a bigger queue still advertises
/// its full count; the rest is grouped as it comes forward).
const MAX_GROUPED: usize = 10_000;

/// Idle jobs read first when looking for the one to place.
const FIRST_LOOK: usize = 64;

/// Most classes advertised: the ad stays small; jobs of further classes
/// still count in the demand and are advertised as earlier ones leave.
const MAX_CLASSES: usize = 256;

/// The class of each idle job seen, by job (without avoided hosts, which
/// change; they are applied on use).
#[derive(Default)]
pub struct ClassCache {
    classes: Mutex<HashMap<JobId, JobClass>>,
    /// The class advertised for jobs avoiding some hosts → the class the
    /// queue stores for them (the one without avoided hosts), so that a
    /// grant for either finds its jobs through the queue's class index.
    stored: Mutex<HashMap<String, String>>,
}

impl ClassCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, JobClass>> {
        self.classes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stored(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.stored
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets the classes of `ids`, whose descriptions were edited.
    pub fn forget(&self, ids: &[JobId]) {
        let mut c = self.lock();
        for id in ids {
            c.remove(id);
        }
    }

    /// The class of `id`, from the cache or computed from its record.
    fn class_of(&self, q: &JobQueue, id: JobId) -> Option<JobClass> {
        if let Some(c) = self.lock().get(&id) {
            return Some(c.clone());
        }
        let record = match q.get(id) {
            Ok(r) => r?,
            Err(e) => {
                tracing::error!(job = %id, error = %e, "cannot read a job's description");
                return None;
            }
        };
        let c = JobClass::of(&record.description);
        self.lock().insert(id, c.clone());
        Some(c)
    }

    /// The station's idle jobs in queue order, grouped into classes;
    /// `skip` jobs are being placed right now; `avoided` names the hosts a
    /// job must stay away from (so the matchmaker never offers them).
    /// Forgets the classes of jobs no longer idle.
    pub fn idle_classes(
        &self,
        q: &JobQueue,
        skip: &HashSet<JobId>,
        avoided: impl Fn(JobId) -> Vec<String>,
    ) -> Vec<JobClass> {
        let ids = match q.matchable_idle_ids(MAX_GROUPED, crate::clock::now()) {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(error = %e, "cannot read idle jobs");
                return Vec::new();
            }
        };
        let mut out: Vec<JobClass> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let mut stored: HashMap<String, String> = HashMap::new();
        for &id in ids.iter().filter(|id| !skip.contains(id)) {
            let Some(c) = self.class_of(q, id) else {
                continue;
            };
            let base = c.key.clone();
            let c = c.with_avoided(avoided(id));
            if c.key != base {
                stored.insert(c.key.clone(), base);
            }
            match at.get(&c.key) {
                Some(&i) => out[i].count += 1,
                None => {
                    at.insert(c.key.clone(), out.len());
                    out.push(c);
                }
            }
        }
        out.truncate(MAX_CLASSES);
        // Only jobs still idle are worth keeping (the others may come back
        // to the queue, and are then looked up once more).
        let idle: HashSet<JobId> = ids.into_iter().collect();
        self.lock().retain(|id, _| idle.contains(id));
        *self.stored() = stored;
        out
    }

    /// The first idle job, in queue order, that `usable` accepts and whose
    /// class (with its avoided hosts) has key `class` if one is given.
    pub fn first_idle(
        &self,
        q: &JobQueue,
        class: Option<&str>,
        usable: impl Fn(JobId) -> bool,
        avoided: impl Fn(JobId) -> Vec<String>,
    ) -> Option<JobRecord> {
        let fits = |id: JobId| {
            usable(id)
                && class.is_none_or(|k| {
                    self.class_of(q, id)
                        .is_some_and(|c| c.with_avoided(avoided(id)).key == k)
                })
        };
        let now = crate::clock::now();
        if let Some(k) = class {
            // The class's own jobs, through the queue's class index: a
            // page at a time, however many jobs of other classes wait.
            let base = self
                .stored()
                .get(k)
                .cloned()
                .unwrap_or_else(|| k.to_string());
            let mut skip = 0;
            while skip < MAX_GROUPED {
                let ids = match q.matchable_idle_ids_of_class(&base, skip, FIRST_LOOK, now) {
                    Ok(ids) => ids,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot read idle jobs");
                        return None;
                    }
                };
                let short = ids.len() < FIRST_LOOK;
                if let Some(id) = ids.into_iter().find(|&id| fits(id)) {
                    return q.get(id).ok().flatten();
                }
                if short {
                    break;
                }
                skip += FIRST_LOOK;
            }
            return None;
        }
        // Any class: the job is nearly always among the first few (those
        // being placed come first): a short read, then the long one.
        for n in [FIRST_LOOK, MAX_GROUPED] {
            let ids = match q.matchable_idle_ids(n, now) {
                Ok(ids) => ids,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read idle jobs");
                    return None;
                }
            };
            let short = ids.len() < n;
            if let Some(id) = ids.into_iter().find(|&id| fits(id)) {
                return q.get(id).ok().flatten();
            }
            if short {
                break;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_core::time::Time;
    use gleaner_proto::job::{JobDescription, JobState};

    /// A queue of `owners.len()` idle jobs, one per owner, in that order.
    fn queue(owners: &[&str]) -> (tempfile::TempDir, JobQueue, Vec<JobId>) {
        let dir = tempfile::tempdir().unwrap();
        let mut q = JobQueue::open(dir.path().join("queue.db")).unwrap();
        let ids = q
            .submit_with(Time::from_secs(1), |_| {
                Ok(owners
                    .iter()
                    .map(|o| JobDescription::new(*o, "/bin/true"))
                    .collect())
            })
            .unwrap();
        (dir, q, ids)
    }

    #[test]
    fn classes_count_idle_jobs_and_forget_those_that_leave() {
        let (_d, mut q, ids) = queue(&["ann", "bob", "ann", "ann"]);
        let cache = ClassCache::default();
        let none = HashSet::new();
        let c = cache.idle_classes(&q, &none, |_| Vec::new());
        let counts: Vec<(String, u32)> = c.iter().map(|c| (c.owner.clone(), c.count)).collect();
        assert_eq!(counts, [("ann".into(), 3), ("bob".into(), 1)]);
        assert_eq!(cache.lock().len(), 4);

        q.transition(ids[0], JobState::Running, "x", Time::from_secs(2))
            .unwrap();
        let placing: HashSet<JobId> = [ids[2]].into();
        let c = cache.idle_classes(&q, &placing, |_| Vec::new());
        let counts: Vec<(String, u32)> = c.iter().map(|c| (c.owner.clone(), c.count)).collect();
        assert_eq!(counts, [("bob".into(), 1), ("ann".into(), 1)]);
        assert!(
            !cache.lock().contains_key(&ids[0]),
            "a running job is forgotten"
        );
    }

    #[test]
    fn avoided_hosts_split_a_class_and_a_grant_takes_the_first_job_of_its_class() {
        let (_d, q, ids) = queue(&["ann", "bob", "ann"]);
        let cache = ClassCache::default();
        let avoided = |id: JobId| {
            if id == ids[0] {
                vec!["h1".to_string()]
            } else {
                Vec::new()
            }
        };
        let c = cache.idle_classes(&q, &HashSet::new(), avoided);
        assert_eq!(c.len(), 3, "ann avoiding h1, bob, ann");
        assert_eq!(c[0].avoid_hosts, ["h1"]);
        let plain_ann = &c[2].key;
        let job = cache
            .first_idle(&q, Some(plain_ann), |_| true, avoided)
            .unwrap();
        assert_eq!(job.id, ids[2]);
        let job = cache
            .first_idle(&q, None, |id| id != ids[0], avoided)
            .unwrap();
        assert_eq!(job.id, ids[1]);
        assert!(
            cache
                .first_idle(&q, Some("nope"), |_| true, avoided)
                .is_none()
        );
    }

    #[test]
    fn a_grant_finds_its_class_behind_any_number_of_other_jobs() {
        // More jobs of one class wait ahead than an idle scan would read.
        let mut owners = vec!["ann"; MAX_GROUPED + 50];
        owners.push("bob");
        let (_d, q, ids) = queue(&owners);
        let cache = ClassCache::default();
        let bob = JobClass::of(&JobDescription::new("bob", "/bin/true")).key;
        let job = cache
            .first_idle(&q, Some(&bob), |_| true, |_| Vec::new())
            .unwrap();
        assert_eq!(job.id, *ids.last().unwrap());
    }

    #[test]
    fn a_class_advertised_with_avoided_hosts_finds_its_jobs_through_the_stored_class() {
        let (_d, q, ids) = queue(&["ann", "bob", "bob"]);
        let cache = ClassCache::default();
        let avoided = |id: JobId| {
            if id == ids[2] {
                vec!["h1".to_string()]
            } else {
                Vec::new()
            }
        };
        let classes = cache.idle_classes(&q, &HashSet::new(), avoided);
        let bob = JobClass::of(&JobDescription::new("bob", "/bin/true")).key;
        let k = classes
            .iter()
            .find(|c| c.owner == "bob" && !c.avoid_hosts.is_empty())
            .map(|c| c.key.clone())
            .unwrap();
        assert_ne!(k, bob);
        let job = cache.first_idle(&q, Some(&k), |_| true, avoided).unwrap();
        assert_eq!(
            job.id, ids[2],
            "the job avoiding h1, not the other of bob's"
        );
        let job = cache.first_idle(&q, Some(&bob), |_| true, avoided).unwrap();
        assert_eq!(job.id, ids[1]);
    }
}
