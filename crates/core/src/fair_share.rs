//! Fair share between the users of one home (issue 30, finding 3).
//!
//! Up-Down decides which *station* gets a node (`alloc`); this decides
//! which of the home's users uses it: a grant, or a claim that its last
//! job left free. Jobs are accounted as HTCondor's negotiator accounts
//! them, under a submitter name: `group.user` for a job with an
//! `accounting_group`, else the user (HTCondor manual, "User Priorities
//! and Negotiation"); `nice_user` jobs under the group `nice-user`.
//!
//! The share has two levels ([`Shares`]): first between the Unix users
//! (each user's nice jobs count as one more user, served last), then
//! between one user's submitters (their accounting groups). The first
//! level is the promise: a user cannot buy a bigger share by spreading
//! jobs over many group names, which a user chooses freely; the groups
//! still divide their user's share and name the usage the pool sees.
//!
//! At each level the rule is the same ([`FairShare`]): the one that holds
//! the fewest of the home's nodes now (running, suspended or being
//! placed) goes first, weighted by its priority factor; among equals, the
//! one with the lower decayed usage; then the one served longest ago
//! (round-robin); then by name.
//!
//! Why this rule. HTCondor gives each submitter a share of the pool
//! inversely proportional to its effective priority, a smoothed count of
//! the cores it used: `π(t) = β·π(t−δ) + (1−β)·ρ(t)`, `β = 0.5^(δ/h)`,
//! with `h` the half-life (`PRIORITY_HALFLIFE`, one day); at steady state
//! it equals the cores in use (HTCondor manual, "Real User Priority"). The
//! count of nodes held *now* is that priority at its limit (`h` → 0), and
//! ranking by it first gives the promise this module exists for: a user
//! who holds nothing is served before anyone who holds a node, so a user
//! with 20 000 queued jobs delays another user's first job by at most the
//! next free node, never by its queue. The decayed usage `π` comes second:
//! when counts tie (one node that every job frees, or users whose jobs all
//! ended) users take turns by what they used lately, as HTCondor users do,
//! instead of by who submitted first. The long-run result is max-min
//! fairness of the home's nodes between its users (property tests below),
//! each user's jobs in their own queue order.
//!
//! A priority factor `f` (HTCondor's `condor_userprio -setfactor`, 1 by
//! default) multiplies both keys, `(held + 1)·f` and `π·f`: a user with
//! factor 2 settles at about half the nodes of one with factor 1. Nice
//! jobs have a factor so large that they run only on nodes no one else
//! wants (HTCondor's `NICE_USER_PRIO_FACTOR`).
//!
//! A claim that its job left free ([`reuse`]) takes the next job of its
//! own submitter only while no other submitter is ahead; otherwise the
//! submitter ahead takes it when one of its jobs needs exactly what the
//! claim's did, else the claim goes back to the pool (at most once per
//! `give_back_gap` for the same submitter, so a job no node fits cannot
//! turn every reuse into a round trip).

use crate::time::{Dur, Time};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The group `nice_user` jobs are accounted under (HTCondor's name).
pub const NICE_USER_GROUP: &str = "nice-user";

/// The settings of the share.
#[derive(Clone, Debug, PartialEq)]
pub struct ShareConfig {
    /// Half-life of the decayed usage (HTCondor's `PRIORITY_HALFLIFE`).
    pub half_life: Dur,
    /// Priority factor of submitters in the [`NICE_USER_GROUP`] group.
    pub nice_factor: f64,
    /// Priority factors by submitter name (default 1).
    pub factors: BTreeMap<String, f64>,
    /// A claim goes back to the pool for the same waiting submitter at
    /// most once per this span ([`reuse`]).
    pub give_back_gap: Dur,
}

impl Default for ShareConfig {
    fn default() -> Self {
        ShareConfig {
            half_life: Dur::from_hours(24),
            nice_factor: 1e10,
            factors: BTreeMap::new(),
            give_back_gap: Dur::from_secs(5),
        }
    }
}

impl ShareConfig {
    /// The priority factor of `submitter`: its own, else the nice users',
    /// else 1. Factors that are not positive and finite count as 1.
    pub fn factor(&self, submitter: &str) -> f64 {
        let f = self.factors.get(submitter).copied().unwrap_or_else(|| {
            if is_nice(submitter) {
                self.nice_factor
            } else {
                1.0
            }
        });
        if f.is_finite() && f > 0.0 { f } else { 1.0 }
    }
}

/// Whether `submitter` is accounted under the nice users' group.
pub fn is_nice(submitter: &str) -> bool {
    submitter
        .strip_prefix(NICE_USER_GROUP)
        .is_some_and(|rest| rest.starts_with('.'))
}

/// The name a job is accounted under: `group.user` with an accounting
/// group, else the user; `nice_user` jobs without a group go under
/// [`NICE_USER_GROUP`] (HTCondor's `AccountingGroup`).
pub fn submitter_name(user: &str, group: Option<&str>, nice_user: bool) -> String {
    match group.filter(|g| !g.is_empty()) {
        Some(g) => format!("{g}.{user}"),
        None if nice_user => format!("{NICE_USER_GROUP}.{user}"),
        None => user.to_string(),
    }
}

/// The decayed usage of every name at one instant ([`FairShare::saved`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SavedUsage {
    pub at: Time,
    pub usage: BTreeMap<String, f64>,
}

/// One submitter with idle jobs that may use the node being given out.
#[derive(Clone, Debug, PartialEq)]
pub struct Waiting<'a> {
    pub name: &'a str,
    /// The home's nodes it holds now: running, suspended, being placed.
    pub holding: u32,
}

#[derive(Clone, Debug, PartialEq)]
struct Usage {
    /// Decayed usage π, in nodes.
    usage: f64,
    /// Nodes held since the last observation.
    holding: u32,
    /// The turn it was last served at (0: never).
    last_turn: u64,
}

/// The share's state: each submitter's decayed usage and last turn.
#[derive(Clone, Debug)]
pub struct FairShare {
    config: ShareConfig,
    users: BTreeMap<String, Usage>,
    /// When usage was last brought up to date.
    at: Option<Time>,
    turn: u64,
}

/// A usage below this, held by a submitter holding nothing, is forgotten.
const FORGET_BELOW: f64 = 1e-6;

impl FairShare {
    pub fn new(config: ShareConfig) -> Self {
        FairShare {
            config,
            users: BTreeMap::new(),
            at: None,
            turn: 0,
        }
    }

    pub fn config(&self) -> &ShareConfig {
        &self.config
    }

    /// Brings every submitter's decayed usage up to `now`, counting the
    /// nodes each held since the last observation, and records what each
    /// holds from now on (`holding`; a submitter not named holds none).
    /// An instant before the last one changes only the counts.
    pub fn observe<'a>(&mut self, now: Time, holding: impl IntoIterator<Item = (&'a str, u32)>) {
        let dt = self.at.map_or(Dur::ZERO, |at| now.since(at));
        if self.at.is_none_or(|at| now > at) {
            self.at = Some(now);
        }
        let h = self.config.half_life.as_secs_f64();
        let beta = if h > 0.0 {
            0.5f64.powf(dt.as_secs_f64() / h)
        } else {
            0.0
        };
        for u in self.users.values_mut() {
            u.usage = beta * u.usage + (1.0 - beta) * f64::from(u.holding);
            u.holding = 0;
        }
        for (name, n) in holding {
            let u = self.users.entry(name.to_string()).or_insert(Usage {
                usage: 0.0,
                holding: 0,
                last_turn: 0,
            });
            u.holding = u.holding.saturating_add(n);
        }
        self.users
            .retain(|_, u| u.holding > 0 || u.usage >= FORGET_BELOW || u.last_turn > 0);
        // Turns matter only among submitters still known; keep the table
        // bounded by forgetting the turns of those long idle.
        if self.users.len() > 4096 {
            self.users
                .retain(|_, u| u.holding > 0 || u.usage >= FORGET_BELOW);
        }
    }

    /// What survives a restart: when usage was last brought up to date,
    /// and every name's decayed usage then (holdings and turns are read
    /// again from what runs; only the decayed past is lost with memory).
    pub fn saved(&self) -> Option<SavedUsage> {
        let at = self.at?;
        Some(SavedUsage {
            at,
            usage: self
                .users
                .iter()
                .filter(|(_, u)| u.usage >= FORGET_BELOW)
                .map(|(n, u)| (n.clone(), u.usage))
                .collect(),
        })
    }

    /// Takes up `saved` (what [`FairShare::saved`] gave before a
    /// restart) as the state at its instant: the next observation decays
    /// it over the time in between, counting nothing held meanwhile.
    /// Values that are not finite and non-negative are ignored; names
    /// already known keep their own usage.
    pub fn restore(&mut self, saved: &SavedUsage) {
        if self.at.is_none_or(|at| saved.at < at) {
            self.at = Some(saved.at);
        }
        for (name, &usage) in &saved.usage {
            if usage.is_finite() && usage >= FORGET_BELOW {
                self.users.entry(name.clone()).or_insert(Usage {
                    usage,
                    holding: 0,
                    last_turn: 0,
                });
            }
        }
    }

    /// The decayed usage of `submitter` at the last observation.
    pub fn usage(&self, submitter: &str) -> f64 {
        self.users.get(submitter).map_or(0.0, |u| u.usage)
    }

    /// The nodes `name` held at the last observation.
    pub fn holding(&self, name: &str) -> u32 {
        self.users.get(name).map_or(0, |u| u.holding)
    }

    fn last_turn(&self, name: &str) -> u64 {
        self.users.get(name).map_or(0, |u| u.last_turn)
    }

    /// The effective priority HTCondor would show: usage times factor
    /// (lower is better).
    pub fn priority(&self, submitter: &str) -> f64 {
        self.usage(submitter) * self.config.factor(submitter)
    }

    fn key(&self, w: &Waiting<'_>) -> (f64, f64, u64) {
        let f = self.config.factor(w.name);
        let turn = self.last_turn(w.name);
        (
            (f64::from(w.holding) + 1.0) * f,
            self.usage(w.name) * f,
            turn,
        )
    }

    fn compare(&self, a: &Waiting<'_>, b: &Waiting<'_>) -> Ordering {
        let (ka, kb) = (self.key(a), self.key(b));
        ka.0.total_cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(ka.2.cmp(&kb.2))
            .then(a.name.cmp(b.name))
    }

    /// The order in which the `waiting` submitters are served now, as
    /// indices into `waiting`, first first.
    pub fn order(&self, waiting: &[Waiting<'_>]) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..waiting.len()).collect();
        idx.sort_by(|&a, &b| self.compare(&waiting[a], &waiting[b]));
        idx
    }

    /// The submitter served first among `waiting`.
    pub fn first<'w>(&self, waiting: &'w [Waiting<'w>]) -> Option<&'w Waiting<'w>> {
        waiting.iter().min_by(|a, b| self.compare(a, b))
    }

    /// Records that `submitter` was served (a node went to one of its
    /// jobs): it goes behind its equals next time.
    pub fn served(&mut self, submitter: &str) {
        self.turn += 1;
        let turn = self.turn;
        self.users
            .entry(submitter.to_string())
            .or_insert(Usage {
                usage: 0.0,
                holding: 0,
                last_turn: 0,
            })
            .last_turn = turn;
    }
}

/// Whom a job is accounted to: its owner, a Unix account the home knows
/// (never chosen by the job), and its submitter name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Account<'a> {
    pub owner: &'a str,
    pub submitter: &'a str,
}

impl<'a> Account<'a> {
    /// Its name at the first level: the owner, or for nice jobs their
    /// submitter (`nice-user.OWNER`), a user of its own served last.
    pub fn user(&self) -> &'a str {
        if is_nice(self.submitter) {
            self.submitter
        } else {
            self.owner
        }
    }
}

/// The two-level share (see the module docs): users, then each user's
/// submitters.
#[derive(Clone, Debug)]
pub struct Shares {
    users: FairShare,
    submitters: FairShare,
}

impl Shares {
    pub fn new(config: ShareConfig) -> Self {
        // Within one user, only group names carry factors of their own: a
        // user's factor weighs the user against others, once.
        let mut inner = config.clone();
        inner.nice_factor = 1.0;
        Shares {
            users: FairShare::new(config),
            submitters: FairShare::new(inner),
        }
    }

    pub fn config(&self) -> &ShareConfig {
        self.users.config()
    }

    /// [`FairShare::observe`] at both levels: `holding` lists what each
    /// account holds now (an account not listed holds nothing).
    pub fn observe(&mut self, now: Time, holding: &[(Account<'_>, u32)]) {
        let mut users: BTreeMap<&str, u32> = BTreeMap::new();
        for (a, n) in holding {
            let u = users.entry(a.user()).or_insert(0);
            *u = u.saturating_add(*n);
        }
        self.users.observe(now, users);
        self.submitters
            .observe(now, holding.iter().map(|(a, n)| (a.submitter, *n)));
    }

    fn key(&self, a: &Account<'_>) -> ((f64, f64, u64), (f64, f64, u64)) {
        let user = a.user();
        let outer = self.users.key(&Waiting {
            name: user,
            holding: self.users.holding(user),
        });
        let inner = if a.submitter == a.owner {
            let usage = self.submitters.usage(a.submitter);
            let turn = self.submitters.last_turn(a.submitter);
            (
                f64::from(self.submitters.holding(a.submitter)) + 1.0,
                usage,
                turn,
            )
        } else {
            self.submitters.key(&Waiting {
                name: a.submitter,
                holding: self.submitters.holding(a.submitter),
            })
        };
        (outer, inner)
    }

    fn compare(&self, a: &Account<'_>, b: &Account<'_>) -> Ordering {
        let (ka, kb) = (self.key(a), self.key(b));
        let cmp = |x: (f64, f64, u64), y: (f64, f64, u64)| {
            x.0.total_cmp(&y.0)
                .then(x.1.total_cmp(&y.1))
                .then(x.2.cmp(&y.2))
        };
        cmp(ka.0, kb.0)
            .then(a.user().cmp(b.user()))
            .then(cmp(ka.1, kb.1))
            .then(a.submitter.cmp(b.submitter))
    }

    /// The order in which the `waiting` accounts are served now (as
    /// indices into it, first first), from the last observation: every
    /// account of the user served first, then the next user's.
    pub fn order(&self, waiting: &[Account<'_>]) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..waiting.len()).collect();
        idx.sort_by(|&a, &b| self.compare(&waiting[a], &waiting[b]));
        idx
    }

    /// The index of the account served first among `waiting`.
    pub fn first(&self, waiting: &[Account<'_>]) -> Option<usize> {
        (0..waiting.len()).min_by(|&a, &b| self.compare(&waiting[a], &waiting[b]))
    }

    /// `a` was served: behind its equals next time, at both levels.
    pub fn served(&mut self, a: &Account<'_>) {
        self.users.served(a.user());
        self.submitters.served(a.submitter);
    }

    /// Both levels' decayed usage (users, submitters), for a restart.
    pub fn saved(&self) -> Option<(SavedUsage, SavedUsage)> {
        Some((self.users.saved()?, self.submitters.saved()?))
    }

    /// Takes up what [`Shares::saved`] gave ([`FairShare::restore`]).
    pub fn restore(&mut self, users: &SavedUsage, submitters: &SavedUsage) {
        self.users.restore(users);
        self.submitters.restore(submitters);
    }

    /// The user level's decayed usage of `user` (an owner, or a nice
    /// user's `nice-user.OWNER`).
    pub fn user_usage(&self, user: &str) -> f64 {
        self.users.usage(user)
    }

    /// The user level's effective priority (usage × factor).
    pub fn user_priority(&self, user: &str) -> f64 {
        self.users.priority(user)
    }

    /// The decayed usage of one submitter name.
    pub fn submitter_usage(&self, submitter: &str) -> f64 {
        self.submitters.usage(submitter)
    }
}

/// What a claim whose job completed does next ([`reuse`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// The next job of the claim's own submitter.
    Keep,
    /// A job of this submitter, ahead in the share, that needs what the
    /// claim's job needed.
    Switch(String),
    /// Back to the pool, for this submitter ahead in the share whose jobs
    /// need something else (the coordinator matches them anew).
    GiveBack(String),
}

/// The decision for a free claim of `own`'s job. `ahead` is the submitter
/// the share serves first now among those waiting (see [`FairShare`]);
/// `fits` tells whether it has a job that needs exactly what the claim's
/// job needed; `own_waits` whether `own` has another job for the claim;
/// `last_give_back` when a claim last went back for `ahead`.
pub fn reuse(
    config: &ShareConfig,
    own: &str,
    own_waits: bool,
    ahead: Option<&str>,
    fits: bool,
    last_give_back: Option<Time>,
    now: Time,
) -> Reuse {
    let Some(ahead) = ahead.filter(|a| *a != own) else {
        return Reuse::Keep;
    };
    if fits {
        return Reuse::Switch(ahead.to_string());
    }
    let recently = last_give_back.is_some_and(|t| now.since(t) < config.give_back_gap);
    if recently && own_waits {
        Reuse::Keep
    } else {
        Reuse::GiveBack(ahead.to_string())
    }
}

#[cfg(test)]
mod tests;
