//! The home's fair share between its users (issue 30, finding 3): which
//! idle job uses a grant or a claim its last job left free, and the order
//! of the classes the home advertises. The rule is
//! `gleaner_core::fair_share` (users first, then each user's accounting
//! groups; fewest nodes held, then decayed usage, then turns); this module
//! feeds it from the queue and applies its answer.
//!
//! Each decision takes a [`Snapshot`]: what each account (owner and
//! submitter name) holds now (jobs running or suspended, and being
//! placed) and which accounts wait, with their idle classes, in the
//! share's order. Everything is read from the queue's indexes
//! (`queue::classes`), so a user with 100 000 idle jobs makes a decision
//! no slower for another.
//!
//! A node given to the home for a class (a grant, or a claim kept for
//! reuse) goes to the first account in that order with a job that needs
//! what the class needs (`JobClass::same_needs`: a host that fits one fits
//! the other, but for the owner's rules, which the host checks again). A
//! reused claim that an account ahead cannot use goes back to the pool
//! when the core says so (`fair_share::reuse`), so that the coordinator
//! matches that account's own classes, which lead the home's next ad.
//!
//! ```toml
//! [share]
//! half_life_secs = 86400           # HTCondor's PRIORITY_HALFLIFE
//! give_back_secs = 5               # a reused claim goes back for one user at most this often
//! factors = { ann = 2.0, "physics.bob" = 0.5 }   # condor_userprio -setfactor (default 1)
//! ```

use super::Home;
use super::schedd::Target;
use crate::queue::{JobQueue, JobRecord};
use gleaner_core::fair_share::{Account, Reuse, ShareConfig, Shares, reuse};
use gleaner_core::time::{Dur, Time};
use gleaner_proto::job::{JobId, JobStateKind};
use gleaner_proto::matchmaking::JobClass;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

/// Most users looked at per decision (a station's Unix accounts).
const MAX_USERS: usize = 4096;

/// Most idle classes of one user looked at per decision.
const MAX_CLASSES_PER_USER: usize = 256;

/// The `[share]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShareSettings {
    /// Half-life of each user's decayed usage, seconds (HTCondor's
    /// `PRIORITY_HALFLIFE`, one day).
    pub half_life_secs: f64,
    /// A claim kept for reuse goes back to the pool for the same waiting
    /// user at most once per this many seconds.
    pub give_back_secs: f64,
    /// Priority factors by user or submitter name (`group.user`); 1 when
    /// not named. A user with factor 2 gets about half the nodes of one
    /// with factor 1.
    pub factors: BTreeMap<String, f64>,
}

impl Default for ShareSettings {
    fn default() -> Self {
        ShareSettings {
            half_life_secs: 86_400.0,
            give_back_secs: 5.0,
            factors: BTreeMap::new(),
        }
    }
}

impl ShareSettings {
    /// Checks the values serde cannot: the field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [
            ("share.half_life_secs", self.half_life_secs),
            ("share.give_back_secs", self.give_back_secs),
        ] {
            if !(v.is_finite() && (0.0..=1e9).contains(&v)) {
                return Err((field, "must be a number of seconds from 0 to 1e9".into()));
            }
        }
        for (name, f) in &self.factors {
            if !(f.is_finite() && *f > 0.0 && *f <= 1e12) {
                return Err((
                    "share.factors",
                    format!("{name} = {f}: a factor must be a positive number up to 1e12"),
                ));
            }
        }
        Ok(())
    }

    fn core(&self) -> ShareConfig {
        ShareConfig {
            half_life: Dur::from_secs_f64(self.half_life_secs),
            factors: self.factors.clone(),
            give_back_gap: Dur::from_secs_f64(self.give_back_secs),
            ..ShareConfig::default()
        }
    }
}

/// How often the decayed usage is written to the queue: a home killed
/// forgets at most this much of its users' recent use.
const SAVE_EVERY: Dur = Dur::from_secs(30);

/// The share's state at the home.
pub struct ShareBook {
    shares: Mutex<Shares>,
    /// When a reused claim last went back to the pool for each submitter.
    gave_back: Mutex<HashMap<String, Time>>,
    /// When the decayed usage was last saved.
    saved_at: Mutex<Option<Time>>,
}

impl ShareBook {
    /// The share, with the decayed usage `queue` kept from before a
    /// restart.
    pub fn new(settings: &ShareSettings, queue: &JobQueue) -> Self {
        let mut shares = Shares::new(settings.core());
        match queue.share_usage() {
            Ok((users, submitters)) => shares.restore(&users, &submitters),
            Err(e) => tracing::error!(error = %e,
                "cannot read the users' saved usage: every user starts at zero"),
        }
        ShareBook {
            shares: Mutex::new(shares),
            gave_back: Mutex::new(HashMap::new()),
            saved_at: Mutex::new(None),
        }
    }

    /// Writes the decayed usage to `queue` when the last save is
    /// [`SAVE_EVERY`] old (or there was none).
    pub fn save_if_due(&self, queue: &mut JobQueue, now: Time) {
        let mut at = self
            .saved_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if at.is_some_and(|t| now.since(t) < SAVE_EVERY) {
            return;
        }
        let Some((users, submitters)) = self.shares().saved() else {
            return;
        };
        match queue.save_share_usage(&users, &submitters) {
            Ok(()) => *at = Some(now),
            Err(e) => tracing::warn!(error = %e, "cannot save the users' usage"),
        }
    }

    fn shares(&self) -> MutexGuard<'_, Shares> {
        self.shares
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A user's decayed usage and effective priority (usage × factor).
    pub fn usage_of(&self, user: &str) -> (f64, f64) {
        let s = self.shares();
        (s.user_usage(user), s.user_priority(user))
    }
}

/// One account with idle jobs.
#[derive(Clone, Debug)]
pub struct Waiter {
    pub owner: String,
    pub submitter: String,
    /// Its idle classes (stored classes: count 1, no avoided hosts).
    pub classes: Vec<JobClass>,
}

/// Who holds the home's nodes and who waits, in the share's order.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Accounts with idle jobs, first served first. Users at their
    /// running limit (`max_running_per_owner`) are not among them.
    pub waiting: Vec<Waiter>,
    /// Nodes held by account: (owner, submitter) → jobs running,
    /// suspended or being placed.
    pub holding: BTreeMap<(String, String), u32>,
}

impl Snapshot {
    /// Nodes held by the jobs of `owner`, all accounts together.
    pub fn held_by_owner(&self, owner: &str) -> u32 {
        self.holding
            .iter()
            .filter(|((o, _), _)| o == owner)
            .map(|(_, n)| *n)
            .sum()
    }
}

/// Takes the snapshot: reads holdings and waiting accounts from the queue
/// (`placing`: the jobs being placed now), brings the share up to `now`,
/// and orders the waiting accounts.
pub fn snapshot(home: &Home, q: &JobQueue, placing: &HashSet<JobId>, now: Time) -> Snapshot {
    let cache = &home.classes;
    let mut snap = Snapshot::default();
    let mut seen: HashSet<String> = HashSet::new();
    let hold = |c: &JobClass, n: u32, snap: &mut Snapshot| {
        let e = snap
            .holding
            .entry((c.owner.clone(), c.submitter().to_string()))
            .or_insert(0);
        *e = e.saturating_add(n);
    };
    match q.holding_by_class() {
        Ok(rows) => {
            for (key, n) in rows {
                if let Some(c) = cache.class(q, &key) {
                    hold(&c, u32::try_from(n).unwrap_or(u32::MAX), &mut snap);
                }
                seen.insert(key);
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot read the jobs on hosts"),
    }
    for &id in placing {
        if let Ok(Some(key)) = q.class_key_of(id) {
            if let Some(c) = cache.class(q, &key) {
                hold(&c, 1, &mut snap);
            }
            seen.insert(key);
        }
    }
    let owners = q
        .owners_in_state(JobStateKind::Idle, MAX_USERS)
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot read the users with idle jobs");
            Vec::new()
        });
    let limits = home.config.limits.queue();
    let mut waiting: Vec<Waiter> = Vec::new();
    for owner in owners {
        if !limits.may_start(u64::from(snap.held_by_owner(&owner))) {
            continue;
        }
        let keys = q
            .class_keys_of_owner(&owner, JobStateKind::Idle, MAX_CLASSES_PER_USER)
            .unwrap_or_default();
        for key in keys {
            let Some(c) = cache.class(q, &key) else {
                continue;
            };
            seen.insert(key);
            let submitter = c.submitter().to_string();
            match waiting
                .iter_mut()
                .find(|w| w.owner == owner && w.submitter == submitter)
            {
                Some(w) => w.classes.push(c),
                None => waiting.push(Waiter {
                    owner: owner.clone(),
                    submitter,
                    classes: vec![c],
                }),
            }
        }
    }
    cache.retain(&seen.iter().map(String::as_str).collect());
    let mut shares = home.share.shares();
    let held: Vec<(Account<'_>, u32)> = snap
        .holding
        .iter()
        .map(|((o, s), n)| {
            (
                Account {
                    owner: o,
                    submitter: s,
                },
                *n,
            )
        })
        .collect();
    shares.observe(now, &held);
    let accounts: Vec<Account<'_>> = waiting
        .iter()
        .map(|w| Account {
            owner: &w.owner,
            submitter: &w.submitter,
        })
        .collect();
    let order = shares.order(&accounts);
    drop(accounts);
    drop(held);
    drop(shares);
    let mut slots: Vec<Option<Waiter>> = waiting.into_iter().map(Some).collect();
    snap.waiting = order.into_iter().filter_map(|i| slots[i].take()).collect();
    snap
}

/// What a node given to the home for `Target`'s class does.
pub(crate) enum Pick {
    /// This job goes there.
    Job(Box<JobRecord>),
    /// A reused claim goes back to the pool: an account ahead in the share
    /// needs a node of another kind.
    GiveBack,
    /// No idle job may use it.
    Nothing,
}

/// Chooses the job for the node of `g` (not for gangs: `gang::start`).
pub(crate) fn pick(home: &Home, g: &Target) -> Pick {
    let now = crate::clock::now();
    let q = home.queue();
    let placing = home.remote.placing();
    let snap = snapshot(home, &q, &placing, now);
    let cache = &home.classes;
    let wanted: Option<JobClass> = g
        .class
        .as_deref()
        .and_then(|k| cache.class(&q, &cache.base_key(k)));
    if g.class.is_some() && wanted.is_none() {
        // No job of it is left to say what the host was matched for.
        tracing::debug!(class = ?g.class, "a grant for a class this home no longer knows");
        return Pick::Nothing;
    }
    let takes = |c: &JobClass| {
        c.gang.is_none()
            && wanted
                .as_ref()
                .is_none_or(|w| w.key == c.key || w.same_needs(c))
    };
    let usable = |id: JobId| !placing.contains(&id) && !home.remote.avoids(id, &g.host);
    let unplaced = |id: JobId| !placing.contains(&id);
    // Accounts ahead of the one served that could not use this node but
    // have a job to place elsewhere.
    let mut passed: Option<&Waiter> = None;
    for w in &snap.waiting {
        let best = w
            .classes
            .iter()
            .filter(|c| takes(c))
            .filter_map(|c| cache.first_usable(&q, &c.key, usable, now))
            .min_by_key(|p| p.order_key());
        let Some(p) = best else {
            let waits = w
                .classes
                .iter()
                .filter(|c| c.gang.is_none())
                .any(|c| cache.first_usable(&q, &c.key, unplaced, now).is_some());
            if waits && passed.is_none() {
                passed = Some(w);
            }
            continue;
        };
        if g.seq > 0
            && let Some(ahead) = passed
        {
            let last = home
                .share
                .gave_back
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&ahead.submitter)
                .copied();
            let config = home.share.shares().config().clone();
            let d = reuse(
                &config,
                &w.submitter,
                true,
                Some(&ahead.submitter),
                false,
                last,
                now,
            );
            if let Reuse::GiveBack(to) = d {
                tracing::info!(claim_host = %g.host, ahead = %to, "claim given back for a user ahead in the share");
                home.share
                    .gave_back
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(to, now);
                return Pick::GiveBack;
            }
        }
        let Ok(Some(job)) = q.get(p.id) else {
            continue;
        };
        home.share.shares().served(&Account {
            owner: &w.owner,
            submitter: &w.submitter,
        });
        return Pick::Job(Box::new(job));
    }
    Pick::Nothing
}
