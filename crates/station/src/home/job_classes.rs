//! This station's idle jobs grouped into classes for matchmaking: the
//! coordinator matches hosts to classes, not to single jobs.
//!
//! A job's description never changes once queued, so its class key is
//! computed once, at submit, and stored in the queue (`jobs.class_key`);
//! a class itself is computed once per key and kept ([`ClassCache`]).
//! Everything here reads indexes: each user's idle classes
//! (`jobs_by_owner_class`), a class's idle jobs in queue order
//! (`jobs_by_class`), so the cost of a grant or an ad does not grow with
//! how many jobs of other classes or users wait (issues 15 and 30).
//!
//! The ad lists the classes in the order of the home's fair share
//! ([`super::share`]): the coordinator gives a free node to the first
//! class that fits it, so the user the share serves first is matched
//! first, however many jobs others have queued.

use super::share::Snapshot;
use crate::queue::{JobQueue, JobRecord};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobId, JobStateKind};
use gleaner_proto::matchmaking::JobClass;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Most idle jobs counted for one ad, over all classes (a bigger queue
/// still advertises its full count in the demand; its classes show what
/// was counted, at least one job each).
const MAX_COUNTED: u64 = 10_000;

/// Most idle jobs of one class looked at for a placement.
const MAX_LOOKED: usize = 10_000;

/// Idle jobs read at a time when looking for the one to place.
const FIRST_LOOK: usize = 64;

/// Most classes advertised: the ad stays small; jobs of further classes
/// still count in the demand and are advertised as earlier ones leave.
const MAX_CLASSES: usize = 256;

/// The classes seen, by key (base classes: count 1, no avoided hosts).
#[derive(Default)]
pub struct ClassCache {
    by_key: Mutex<HashMap<String, JobClass>>,
    /// The class advertised for jobs avoiding some hosts → the class the
    /// queue stores for them (the one without avoided hosts), so that a
    /// grant for either finds its jobs through the queue's class index.
    stored: Mutex<HashMap<String, String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ClassCache {
    /// The class of key `key`, from the cache or from one of its jobs.
    pub(crate) fn class(&self, q: &JobQueue, key: &str) -> Option<JobClass> {
        if let Some(c) = lock(&self.by_key).get(key) {
            return Some(c.clone());
        }
        let states = [
            JobStateKind::Idle,
            JobStateKind::Running,
            JobStateKind::Suspended,
            JobStateKind::Held,
        ];
        for s in states {
            match q.description_of_class(key, s) {
                Ok(Some(d)) => {
                    let c = JobClass::of(&d);
                    if c.key != key {
                        // Stored under an older definition of the key: the
                        // queue re-keys at start, so this is a bug, not data.
                        tracing::warn!(stored = key, computed = %c.key, "a job's stored class key is stale");
                    }
                    lock(&self.by_key).insert(key.to_string(), c.clone());
                    return Some(c);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(key, error = %e, "cannot read a job class");
                    return None;
                }
            }
        }
        None
    }

    /// The stored (base) class key behind an advertised one.
    pub(crate) fn base_key(&self, key: &str) -> String {
        lock(&self.stored)
            .get(key)
            .cloned()
            .unwrap_or_else(|| key.to_string())
    }

    /// Forgets the classes not in `keep` (no job of them waits or runs).
    pub(crate) fn retain(&self, keep: &HashSet<&str>) {
        lock(&self.by_key).retain(|k, _| keep.contains(k.as_str()));
    }

    /// The classes to advertise, in the share's order (`snap`): each
    /// user's classes in the order of their first jobs, their matchable
    /// idle jobs counted, less those being placed (`skip`); jobs that
    /// avoid hosts for now (`avoiding`) form classes of their own that
    /// name those hosts (so the matchmaker never offers them).
    pub fn idle_classes(
        &self,
        q: &JobQueue,
        snap: &Snapshot,
        skip: &HashSet<JobId>,
        avoiding: &[(JobId, Vec<String>)],
        now: Time,
    ) -> Vec<JobClass> {
        // Jobs not to count in their stored class: being placed, or split
        // off with their avoided hosts.
        let mut less: HashMap<String, u32> = HashMap::new();
        let mut split: Vec<JobClass> = Vec::new();
        let mut stored: HashMap<String, String> = HashMap::new();
        for &id in skip {
            if let Ok(Some(k)) = q.class_key_of(id) {
                *less.entry(k).or_default() += 1;
            }
        }
        for (id, hosts) in avoiding.iter().filter(|(id, _)| !skip.contains(id)) {
            let Ok(Some(r)) = q.get(*id) else { continue };
            let matchable = r.state == gleaner_proto::job::JobState::Idle
                && r.match_from.is_none_or(|t| t <= now);
            let Some(key) = q.class_key_of(*id).ok().flatten() else {
                continue;
            };
            if !matchable {
                continue;
            }
            let Some(base) = self.class(q, &key) else {
                continue;
            };
            *less.entry(key.clone()).or_default() += 1;
            let c = base.with_avoided(hosts.clone());
            stored.insert(c.key.clone(), key);
            match split.iter_mut().find(|s| s.key == c.key) {
                Some(s) => s.count += 1,
                None => split.push(c),
            }
        }
        let mut out: Vec<JobClass> = Vec::new();
        let mut budget = MAX_COUNTED;
        'users: for w in &snap.waiting {
            // This user's classes, by their first matchable job.
            let mut firsts: Vec<((i64, u64, u32), &JobClass)> = Vec::new();
            for c in &w.classes {
                match q.matchable_idle_of_class(&c.key, 0, 1, now) {
                    Ok(v) => {
                        if let Some(p) = v.first() {
                            firsts.push((p.order_key(), c));
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "cannot read idle jobs"),
                }
            }
            firsts.sort_by_key(|a| a.0);
            for (_, c) in firsts {
                let minus = less.get(&c.key).copied().unwrap_or(0);
                let cap = budget.max(1).saturating_add(u64::from(minus));
                let counted = q
                    .count_matchable_idle_of_class(&c.key, cap, now)
                    .unwrap_or(0);
                budget = budget.saturating_sub(counted);
                let n = u32::try_from(counted)
                    .unwrap_or(u32::MAX)
                    .saturating_sub(minus);
                if n > 0 {
                    out.push(JobClass {
                        count: n,
                        ..c.clone()
                    });
                }
                // The jobs of this class that avoid hosts, right after it.
                for s in split.iter().filter(|s| stored.get(&s.key) == Some(&c.key)) {
                    out.push(s.clone());
                }
                if out.len() >= MAX_CLASSES {
                    break 'users;
                }
            }
        }
        out.truncate(MAX_CLASSES);
        *lock(&self.stored) = stored;
        out
    }

    /// The first idle job of class `key` (a stored key), in queue order,
    /// that may be matched now and that `usable` accepts.
    pub(crate) fn first_usable(
        &self,
        q: &JobQueue,
        key: &str,
        usable: impl Fn(JobId) -> bool,
        now: Time,
    ) -> Option<crate::queue::QueuePos> {
        let mut skip = 0;
        while skip < MAX_LOOKED {
            let page = match q.matchable_idle_of_class(key, skip, FIRST_LOOK, now) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read idle jobs");
                    return None;
                }
            };
            let short = page.len() < FIRST_LOOK;
            if let Some(p) = page.into_iter().find(|p| usable(p.id)) {
                return Some(p);
            }
            if short {
                break;
            }
            skip += FIRST_LOOK;
        }
        None
    }

    /// The first idle job, in queue order, that `usable` accepts and whose
    /// class (with its avoided hosts) has key `class`: what a gang's grant
    /// takes (`gang::start`), strictly its class.
    pub fn first_idle(
        &self,
        q: &JobQueue,
        class: Option<&str>,
        usable: impl Fn(JobId) -> bool,
        avoided: impl Fn(JobId) -> Vec<String>,
    ) -> Option<JobRecord> {
        let now = crate::clock::now();
        let Some(k) = class else {
            let ids = q.matchable_idle_ids(MAX_LOOKED, now).ok()?;
            let id = ids.into_iter().find(|&id| usable(id))?;
            return q.get(id).ok().flatten();
        };
        let base = self.base_key(k);
        let class = self.class(q, &base)?;
        let fits = |id: JobId| usable(id) && class.clone().with_avoided(avoided(id)).key == k;
        let p = self.first_usable(q, &base, fits, now)?;
        q.get(p.id).ok().flatten()
    }
}

#[cfg(test)]
mod tests;
