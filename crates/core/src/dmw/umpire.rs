//! The UMol arbiter ("umpire"): apportions hosts to individual schedulers
//! and grants them on request (Neeracher 1998 §4.4.2, L1168–1211).

use super::baseline::HostSnapshot;
use super::rules::{Backoff, Embargo, Pass, ProgressGuarantee, Room, at_job_limit, needs_progress};
use super::score::{HostLoad, HostSpec, Score};
use super::{HostId, SchedId};
use crate::time::{Dur, Time};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Everything the arbiter knows about one host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostState {
    pub spec: HostSpec,
    /// Latest measurement; `None` until the host has been measured. Hosts
    /// without a measurement are never apportioned.
    pub load: Option<HostLoad>,
    /// Guest jobs currently running there, from all schedulers.
    pub jobs: u32,
    /// DMW's embargo after a grant ([`Embargo`]).
    pub embargo: Embargo,
    /// Consecutive failed contacts (for the back-off).
    pub failures: u32,
    /// Dysfunctional while `now < dysfunctional_until`.
    pub dysfunctional_until: Option<Time>,
}

impl HostState {
    fn new(spec: HostSpec) -> Self {
        HostState {
            spec,
            load: None,
            jobs: 0,
            embargo: Embargo::default(),
            failures: 0,
            dysfunctional_until: None,
        }
    }

    pub fn embargoed(&self, now: Time) -> bool {
        self.embargo.active(now)
    }

    pub fn dysfunctional(&self, now: Time) -> bool {
        self.dysfunctional_until.is_some_and(|u| now < u)
    }

    pub fn at_limit(&self) -> bool {
        at_job_limit(self.jobs, self.spec.job_limit)
    }

    /// The host's room as the rules see it at `now`.
    pub fn room(&self, now: Time) -> Room {
        Room {
            jobs: self.jobs,
            limit: self.spec.job_limit,
            embargoed: self.embargoed(now),
            dysfunctional: self.dysfunctional(now),
        }
    }
}

/// Configuration of the [`Umpire`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UmpireConfig {
    pub score: Score,
    /// Embargo after each grant, lifted early by any job termination on the
    /// host. 90 s in DMW (L1111, L1210); the author recommends longer
    /// (L1331), so callers may raise it.
    pub embargo: Dur,
    /// An apportioned host not requested within this time is taken back
    /// (90 s, L1190).
    pub apportion_timeout: Dur,
    pub backoff: Backoff,
    pub progress: ProgressGuarantee,
}

impl Default for UmpireConfig {
    fn default() -> Self {
        UmpireConfig {
            score: Score::default(),
            embargo: Dur::from_secs(90),
            apportion_timeout: Dur::from_secs(90),
            backoff: Backoff::default(),
            progress: ProgressGuarantee::default(),
        }
    }
}

impl UmpireConfig {
    /// UMol as in 1998: printed score and thresholds, 90 s embargo and expiry.
    pub fn umol_1998() -> Self {
        UmpireConfig {
            score: Score::umol_1998(),
            ..UmpireConfig::default()
        }
    }
}

/// The umpire's record of one individual scheduler (L1179–1185).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerState {
    /// H_s: hosts useful for the scheduler's eligible jobs. Empty means no
    /// eligible work.
    pub useful: BTreeSet<HostId>,
    /// n_s: jobs running.
    pub running: u32,
    /// t_s: last grant; `None` (never granted) sorts first.
    pub last_grant: Option<Time>,
    /// h_s and when it was apportioned.
    pub apportioned: Option<(HostId, Time)>,
}

impl SchedulerState {
    /// The priority key; smaller is higher priority (L1189).
    fn key(&self, id: SchedId) -> (u32, Option<Time>, SchedId) {
        (self.running, self.last_grant, id)
    }
}

/// Errors from the arbiter's bookkeeping calls.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DmwError {
    #[error("unknown host id {0}")]
    UnknownHost(HostId),
    #[error("unknown scheduler id {0}")]
    UnknownScheduler(SchedId),
}

/// The UMol arbiter ("umpire"): apportions hosts to individual schedulers
/// and grants them on request.
///
/// Protocol (Table 5.2, L1570–1581): a scheduler declares its useful set
/// ([`Umpire::set_useful`], command `I`), asks for a host
/// ([`Umpire::request`], `W`) and reports each job end
/// ([`Umpire::release`], `R`). The caller feeds measurements
/// ([`Umpire::set_load`]) and contact failures
/// ([`Umpire::report_unreachable`]).
///
/// Invariant: a grant never takes a host's job count above its limit.
#[derive(Clone, Debug, Default)]
pub struct Umpire {
    cfg: UmpireConfig,
    hosts: Vec<HostState>,
    scheds: BTreeMap<SchedId, SchedulerState>,
}

impl Umpire {
    pub fn new(cfg: UmpireConfig) -> Self {
        Umpire {
            cfg,
            hosts: Vec::new(),
            scheds: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &UmpireConfig {
        &self.cfg
    }

    /// Declares a host (command `H`); ids are dense, in call order.
    pub fn add_host(&mut self, spec: HostSpec) -> HostId {
        let id = HostId::try_from(self.hosts.len()).unwrap_or(HostId::MAX);
        if id != HostId::MAX {
            self.hosts.push(HostState::new(spec));
        }
        id
    }

    pub fn hosts(&self) -> &[HostState] {
        &self.hosts
    }

    pub fn host(&self, h: HostId) -> Option<&HostState> {
        self.hosts.get(h as usize)
    }

    pub fn scheduler(&self, s: SchedId) -> Option<&SchedulerState> {
        self.scheds.get(&s)
    }

    pub fn schedulers(&self) -> impl Iterator<Item = (SchedId, &SchedulerState)> {
        self.scheds.iter().map(|(&s, st)| (s, st))
    }

    fn host_mut(&mut self, h: HostId) -> Result<&mut HostState, DmwError> {
        self.hosts
            .get_mut(h as usize)
            .ok_or(DmwError::UnknownHost(h))
    }

    /// Records a fresh measurement of `h`.
    pub fn set_load(&mut self, h: HostId, load: HostLoad) -> Result<(), DmwError> {
        self.host_mut(h)?.load = Some(load);
        Ok(())
    }

    /// Contact with `h` failed ("Sabotage", L2122): the host is dysfunctional
    /// for the next back-off step. Returns the back-off applied. Any
    /// apportionment of the host is dropped.
    pub fn report_unreachable(&mut self, now: Time, h: HostId) -> Result<Dur, DmwError> {
        let backoff = self.cfg.backoff;
        let host = self.host_mut(h)?;
        host.failures = host.failures.saturating_add(1);
        let d = backoff.delay(host.failures);
        host.dysfunctional_until = Some(now + d);
        for st in self.scheds.values_mut() {
            if st.apportioned.is_some_and(|(ah, _)| ah == h) {
                st.apportioned = None;
            }
        }
        Ok(d)
    }

    /// Contact with `h` succeeded: the back-off resets.
    pub fn report_reachable(&mut self, h: HostId) -> Result<(), DmwError> {
        let host = self.host_mut(h)?;
        host.failures = 0;
        host.dysfunctional_until = None;
        Ok(())
    }

    /// Declares H_s (command `I`), creating the scheduler record if needed.
    /// If the apportioned host is no longer in H_s it is freed (L1190).
    /// Fails, changing nothing, if a host id is unknown.
    pub fn set_useful(
        &mut self,
        s: SchedId,
        hosts: impl IntoIterator<Item = HostId>,
    ) -> Result<(), DmwError> {
        let mut useful = BTreeSet::new();
        for h in hosts {
            if h as usize >= self.hosts.len() {
                return Err(DmwError::UnknownHost(h));
            }
            useful.insert(h);
        }
        let st = self.scheds.entry(s).or_default();
        if st.apportioned.is_some_and(|(h, _)| !useful.contains(&h)) {
            st.apportioned = None;
        }
        st.useful = useful;
        Ok(())
    }

    /// Re-declares a job already running on `h` for scheduler `s`, after an
    /// arbiter restart (L1553–1562; the modern note of spec §2.6 restores
    /// per-host counts exactly). The count may exceed the host's limit (the
    /// job is already there); no new grant happens until it is below.
    pub fn restore_job(&mut self, s: SchedId, h: HostId) -> Result<(), DmwError> {
        let host = self.host_mut(h)?;
        host.jobs = host.jobs.saturating_add(1);
        let st = self.scheds.entry(s).or_default();
        st.running = st.running.saturating_add(1);
        Ok(())
    }

    /// Forgets scheduler `s` (command `Q`). Its running jobs stay counted on
    /// their hosts until released. Returns whether it was known.
    pub fn remove_scheduler(&mut self, s: SchedId) -> bool {
        self.scheds.remove(&s).is_some()
    }

    /// Whether `h` can take one more job at `now` in `pass`, thresholds
    /// aside ([`Room::admits`]); unmeasured hosts never can.
    fn has_room(&self, h: HostId, now: Time, pass: Pass) -> bool {
        self.host(h)
            .is_some_and(|host| host.load.is_some() && host.room(now).admits(pass))
    }

    fn sigma_of(&self, h: HostId) -> f64 {
        match self.host(h) {
            Some(HostState {
                spec,
                load: Some(load),
                ..
            }) => sanitize(self.cfg.score.sigma(spec, load)),
            _ => f64::NEG_INFINITY,
        }
    }

    /// Drops apportionments that expired (not requested within the timeout,
    /// L1190) or became ungrantable (host full or dysfunctional, or no longer
    /// useful to its scheduler).
    fn expire(&mut self, now: Time) {
        let timeout = self.cfg.apportion_timeout;
        let hosts = &self.hosts;
        for st in self.scheds.values_mut() {
            if let Some((h, at)) = st.apportioned {
                let stale = now.since(at) >= timeout;
                let gone = hosts
                    .get(h as usize)
                    .is_none_or(|host| host.at_limit() || host.dysfunctional(now));
                if stale || gone || !st.useful.contains(&h) {
                    st.apportioned = None;
                }
            }
        }
    }

    /// Schedulers with eligible work (non-empty H_s), highest priority first:
    /// ascending (n_s, t_s, s) (L1189).
    fn priority_order(&self) -> Vec<SchedId> {
        let mut v: Vec<(u32, Option<Time>, SchedId)> = self
            .scheds
            .iter()
            .filter(|(_, st)| !st.useful.is_empty())
            .map(|(&s, st)| st.key(s))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, s)| s).collect()
    }

    /// One round of apportioning (L1187–1203). Returns the new
    /// apportionments (scheduler, host) in the order they were made.
    ///
    /// 1. Expire stale apportionments (90 s, L1190).
    /// 2. Candidate hosts: measured, not apportioned, not embargoed, not
    ///    dysfunctional, below their job limit; sorted by σ descending, then
    ///    by id.
    /// 3. Each candidate meeting the thresholds goes to the highest-priority
    ///    scheduler that finds it useful and holds no apportioned host (h_s is
    ///    single-valued, L1185).
    /// 4. Progress guarantee (L1203): each scheduler with n_s = 0, eligible
    ///    work and no apportioned host gets its best-σ useful host, under the
    ///    rule of [`ProgressGuarantee`].
    pub fn apportion(&mut self, now: Time) -> Vec<(SchedId, HostId)> {
        self.expire(now);
        let order = self.priority_order();
        let mut taken: BTreeSet<HostId> = self
            .scheds
            .values()
            .filter_map(|st| st.apportioned.map(|(h, _)| h))
            .collect();
        let mut made = Vec::new();

        let mut candidates: Vec<(f64, HostId)> = (0..self.hosts.len())
            .filter_map(|i| HostId::try_from(i).ok())
            .filter(|&h| !taken.contains(&h) && self.has_room(h, now, Pass::Regular))
            .map(|h| (self.sigma_of(h), h))
            .collect();
        candidates.sort_by(by_sigma_desc);

        for &(_, h) in &candidates {
            let acceptable = match self.host(h) {
                Some(HostState {
                    spec,
                    load: Some(load),
                    ..
                }) => self.cfg.score.acceptable(spec, load),
                _ => false,
            };
            if !acceptable {
                continue;
            }
            let winner = order.iter().copied().find(|s| {
                self.scheds
                    .get(s)
                    .is_some_and(|st| st.apportioned.is_none() && st.useful.contains(&h))
            });
            if let Some(s) = winner
                && let Some(st) = self.scheds.get_mut(&s)
            {
                st.apportioned = Some((h, now));
                taken.insert(h);
                made.push((s, h));
            }
        }

        if !self.cfg.progress.enabled() {
            return made;
        }
        let pass = Pass::Progress(self.cfg.progress);
        for s in order {
            let Some(st) = self.scheds.get(&s) else {
                continue;
            };
            let promised = u32::from(st.apportioned.is_some());
            if !needs_progress(!st.useful.is_empty(), st.running, promised) {
                continue;
            }
            let mut best: Option<(f64, HostId)> = None;
            for &h in &st.useful {
                if taken.contains(&h) || !self.has_room(h, now, pass) {
                    continue;
                }
                let cand = (self.sigma_of(h), h);
                if best.is_none_or(|b| by_sigma_desc(&cand, &b) == Ordering::Less) {
                    best = Some(cand);
                }
            }
            if let Some((_, h)) = best
                && let Some(st) = self.scheds.get_mut(&s)
            {
                st.apportioned = Some((h, now));
                taken.insert(h);
                made.push((s, h));
            }
        }
        made
    }

    /// A scheduler asks for a host (command `W`, L1207–1211). If nothing is
    /// apportioned to it, apportioning runs first. On a grant the host is
    /// embargoed, t_s = now, n_s and the host's job count go up, and h_s is
    /// cleared. `None` is a denial: retry in a few seconds (L1211). Unknown
    /// schedulers are denied.
    pub fn request(&mut self, now: Time, s: SchedId) -> Option<HostId> {
        self.expire(now);
        if self.scheds.get(&s)?.apportioned.is_none() {
            self.apportion(now);
        }
        let embargo = self.cfg.embargo;
        let st = self.scheds.get_mut(&s)?;
        let (h, _) = st.apportioned.take()?;
        let host = self.hosts.get_mut(h as usize)?;
        if host.at_limit() {
            // Unreachable after `expire`, kept so the limit holds whatever
            // happens above.
            return None;
        }
        host.jobs += 1;
        host.embargo.on_grant(now, embargo);
        st.running = st.running.saturating_add(1);
        st.last_grant = Some(now);
        Some(h)
    }

    /// A job of scheduler `s` on `h` terminated (command `R`, L1575): n_s and
    /// the host's job count go down and the host's embargo is lifted (a job
    /// termination ends the embargo, L1111, L1210). Lenient about counts
    /// (saturating), because after an arbiter restart jobs that were never
    /// re-declared still report their end (L1562). Also expires stale
    /// apportionments.
    pub fn release(&mut self, now: Time, s: SchedId, h: HostId) -> Result<(), DmwError> {
        let host = self.host_mut(h)?;
        host.jobs = host.jobs.saturating_sub(1);
        host.embargo.on_job_end();
        if let Some(st) = self.scheds.get_mut(&s) {
            st.running = st.running.saturating_sub(1);
        }
        self.expire(now);
        Ok(())
    }

    /// The current view of all hosts, e.g. for [`uncoordinated_pick`].
    pub fn snapshot(&self, now: Time) -> Vec<HostSnapshot> {
        self.hosts
            .iter()
            .enumerate()
            .filter_map(|(i, host)| {
                Some(HostSnapshot {
                    id: HostId::try_from(i).ok()?,
                    spec: host.spec,
                    load: host.load,
                    dysfunctional: host.dysfunctional(now),
                })
            })
            .collect()
    }
}

/// NaN scores sort last.
pub(super) fn sanitize(x: f64) -> f64 {
    if x.is_nan() { f64::NEG_INFINITY } else { x }
}

/// Higher σ first, then lower id.
pub(super) fn by_sigma_desc(a: &(f64, HostId), b: &(f64, HostId)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}
