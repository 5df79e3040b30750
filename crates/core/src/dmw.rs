//! DMW placement: host scores, the UMol arbiter ("umpire") and the
//! uncoordinated least-loaded baseline.
//!
//! Neeracher's DMW (seeds/001_c7470f9b5ea54797.txt, spec
//! `dmw-neeracher.md` §3.2, §3.4, §3.8) places the jobs of many individual
//! schedulers (one per user schedule / home station) on a heterogeneous
//! cluster. This module holds the pure parts of that design:
//!
//! - the scores: the printed UMol σ = σ_μ + σ_λ ([`sigma_mu`],
//!   [`sigma_lambda_umol`]) and the proposed heterogeneous index
//!   σ_λ = β·n/max(n, λ+1) ([`sigma_lambda_hetero`]), selected and
//!   thresholded by [`Score`];
//! - per-host state: job limit, embargo and the dysfunctional back-off
//!   ([`HostState`], [`Backoff`]);
//! - the arbiter [`Umpire`]: apportioning and granting with priority
//!   (n_s, t_s, s), the 90 s apportion expiry and the progress guarantee;
//! - [`uncoordinated_pick`]: every scheduler independently picks the best
//!   host from the same stale view, which is the RStat behaviour that causes
//!   host contention (the "herd effect"), kept as a baseline for the simulator.
//!
//! Nothing here reads a clock: every time-dependent call takes `now`.
//! Ties are broken by id (host id, then scheduler id), so every decision is
//! deterministic; callers wanting random tie-breaks can permute ids.

use crate::time::{Dur, Time};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Dense host identifier, assigned by [`Umpire::add_host`] in insertion
/// order (DMW's "common host ID assigned by the umpire", L2139–2144).
pub type HostId = u32;

/// Identifier of an individual scheduler (one per user schedule / home
/// station). Chosen by the caller.
pub type SchedId = u32;

// ---------------------------------------------------------------------------
// Scores
// ---------------------------------------------------------------------------

/// Memory component of the UMol score, exactly as printed.
///
/// Neeracher 1998 (seeds/001_c7470f9b5ea54797.txt L1192–1196): σ_μ = 120 if
/// μ > 200000, μ/50 if μ < 5000, 100 + μ/10000 otherwise, μ in KB. Note the
/// jump from 99.98 to 100.5 at μ = 5000. Negative and NaN inputs count as no
/// free memory.
pub fn sigma_mu(mu_kb: f64) -> f64 {
    let mu = if mu_kb.is_nan() { 0.0 } else { mu_kb.max(0.0) };
    if mu > 200_000.0 {
        120.0
    } else if mu < 5_000.0 {
        mu / 50.0
    } else {
        100.0 + mu / 10_000.0
    }
}

/// Load component of the UMol score, exactly as printed, on the weighted
/// load λ_w = λ/w_h.
///
/// Neeracher 1998 (L1192–1198): σ_λ = 0 if λ_w > 4.9, 121 − 35·λ_w if
/// λ_w < 0.6, 112 − 20·λ_w otherwise. The two printed quirks are kept on
/// purpose: σ_λ(0) = 121 exceeds the stated 0…120 scale (L1200), and σ_λ
/// drops from 14 to 0 just above 4.9. Negative loads count as zero; NaN counts
/// as hopelessly overloaded.
pub fn sigma_lambda_umol(lambda_w: f64) -> f64 {
    if lambda_w.is_nan() {
        return 0.0;
    }
    let l = lambda_w.max(0.0);
    if l > 4.9 {
        0.0
    } else if l < 0.6 {
        121.0 - 35.0 * l
    } else {
        112.0 - 20.0 * l
    }
}

/// The printed UMol score σ = σ_μ(μ) + σ_λ(λ_w) (L1194), range 0…241.
pub fn sigma_umol(mu_kb: f64, lambda_w: f64) -> f64 {
    sigma_mu(mu_kb) + sigma_lambda_umol(lambda_w)
}

/// The proposed heterogeneous performance index σ_λ = β·n/max(n, λ+1): the
/// share of a CPU of speed β that a new CPU-bound job would get.
///
/// Neeracher 1998 (L1311–1319): CPU time is shared equally, the new job adds
/// 1 to λ, and one job cannot use more than one processor, so the index is
/// flat (= β) until λ+1 reaches n. `cpus = 0` is treated as 1; negative loads
/// as 0; a non-finite or non-positive β or a NaN load gives 0.
pub fn sigma_lambda_hetero(beta: f64, cpus: u32, lambda: f64) -> f64 {
    if !beta.is_finite() || beta <= 0.0 || lambda.is_nan() {
        return 0.0;
    }
    let n = f64::from(cpus.max(1));
    let l = lambda.max(0.0);
    beta * n / n.max(l + 1.0)
}

/// Which load index ranks and filters hosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadIndex {
    /// DMW's UMol as implemented: σ = σ_μ(μ) + σ_λ(λ/w_h), threshold
    /// λ_w < `lambda_thresh` (L1192–1202).
    Umol,
    /// The proposed index (L1319) combined with memory: see [`Score`].
    #[default]
    Heterogeneous,
}

/// Score configuration: which index to use and the placement thresholds.
///
/// **Combination in [`LoadIndex::Heterogeneous`].** The proposed index only
/// covers CPU; memory still matters (L1043). We use
/// σ = σ_λ^het · σ_μ(μ)/120, i.e. σ_μ normalised to 0…1 scales the expected
/// CPU share. Above 200 MB free the factor is 1, at 100 MB ≈ 0.92, at
/// 5000 KB ≈ 0.84, and it falls linearly to 0 below 5000 KB, so memory
/// mostly breaks near-ties in speed while a host with no free memory scores
/// 0. The unit of σ stays "reference-workload executions per time unit".
/// The hard memory gate is the μ threshold, not the score.
///
/// **Thresholds.** A host is *acceptable* for normal apportioning when
/// μ > `mu_thresh_kb` and, for `Umol`, λ_w < `lambda_thresh`, or, for
/// `Heterogeneous`, σ_λ^het ≥ `sigma_thresh`. Following L1321, the default
/// `sigma_thresh` = 1.0 is the index of an unloaded reference host
/// (β = 1, one CPU, λ = 0): any host that would give a new job at least the
/// speed of an idle 60 MHz SuperSPARC is acceptable. Because this lets fast
/// hosts accept several jobs (L1325), it must be combined with job limits
/// (L1327), which the [`Umpire`] always enforces.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Score {
    pub index: LoadIndex,
    /// Upper bound (exclusive) on λ_w for [`LoadIndex::Umol`]; 0.6 in
    /// UMol (L1202).
    pub lambda_thresh: f64,
    /// Lower bound (inclusive) on σ_λ^het for [`LoadIndex::Heterogeneous`].
    pub sigma_thresh: f64,
    /// Lower bound (exclusive) on normalised free memory in KB. UMol used
    /// 5000; the author recommends at least 20000 (L1329–1330), our default.
    pub mu_thresh_kb: f64,
}

impl Default for Score {
    fn default() -> Self {
        Score {
            index: LoadIndex::Heterogeneous,
            lambda_thresh: 0.6,
            sigma_thresh: 1.0,
            mu_thresh_kb: 20_000.0,
        }
    }
}

impl Score {
    /// UMol exactly as run in 1998: printed σ, λ_w < 0.6, μ > 5000 KB
    /// (L1192–1202).
    pub fn umol_1998() -> Self {
        Score {
            index: LoadIndex::Umol,
            lambda_thresh: 0.6,
            sigma_thresh: 1.0,
            mu_thresh_kb: 5_000.0,
        }
    }

    /// The score σ of a host (higher is better).
    pub fn sigma(&self, spec: &HostSpec, load: &HostLoad) -> f64 {
        match self.index {
            LoadIndex::Umol => sigma_umol(load.free_mem_kb, spec.weighted_load(load.load)),
            LoadIndex::Heterogeneous => {
                sigma_lambda_hetero(spec.speed, spec.cpus, load.load)
                    * (sigma_mu(load.free_mem_kb) / 120.0)
            }
        }
    }

    /// Whether the host meets the placement thresholds (see the type docs).
    pub fn acceptable(&self, spec: &HostSpec, load: &HostLoad) -> bool {
        // NaN memory fails `>`, as it should.
        let enough_memory = load.free_mem_kb > self.mu_thresh_kb;
        if !enough_memory {
            return false;
        }
        match self.index {
            LoadIndex::Umol => spec.weighted_load(load.load) < self.lambda_thresh,
            LoadIndex::Heterogeneous => {
                sigma_lambda_hetero(spec.speed, spec.cpus, load.load) >= self.sigma_thresh
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Hosts
// ---------------------------------------------------------------------------

/// Static description of a host, as in DMW's host database (L1098–1103,
/// L1291, Table 7.4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// β: single-CPU speed relative to the reference workload (L1313).
    pub speed: f64,
    /// n: number of CPUs.
    pub cpus: u32,
    /// w_h: the legacy load weight, λ_w = λ/w_h (L1096). Non-positive or
    /// non-finite weights are treated as 1.
    pub weight: f64,
    /// Global limit on concurrent guest jobs from all schedulers (L1285–1291).
    pub job_limit: u32,
}

impl HostSpec {
    /// A host of speed β with `cpus` CPUs, job limit = #CPUs (L1291) and
    /// legacy weight w_h = β (the customer-set weight played the role of a
    /// speed factor, L1096).
    pub fn new(speed: f64, cpus: u32) -> Self {
        HostSpec {
            speed,
            cpus,
            weight: speed,
            job_limit: cpus,
        }
    }

    pub fn with_job_limit(mut self, limit: u32) -> Self {
        self.job_limit = limit;
        self
    }

    pub fn with_weight(mut self, weight: f64) -> Self {
        self.weight = weight;
        self
    }

    /// λ_w = λ / w_h (L1096).
    pub fn weighted_load(&self, load: f64) -> f64 {
        let w = if self.weight.is_finite() && self.weight > 0.0 {
            self.weight
        } else {
            1.0
        };
        load / w
    }
}

/// One measurement of a host, as the monitor ("Mole") reports it (L1524–1528).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLoad {
    /// λ: the raw load average (which average is the caller's choice; the
    /// source leaves it open, spec §9 item 1).
    pub load: f64,
    /// μ: normalised free memory in KB (L1493–1505).
    pub free_mem_kb: f64,
}

/// The dysfunctional-host back-off: after a failed contact a host is out of
/// consideration for `initial`, doubling on each further failure, capped at
/// `cap`.
///
/// Neeracher 1998 (L2122): "initially for 5 minutes … the timeout is doubled,
/// until availability is checked once every hour" → 5, 10, 20, 40, 60, 60 …
/// minutes (the cap is inferred from "once every hour").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Backoff {
    pub initial: Dur,
    pub cap: Dur,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Dur::from_mins(5),
            cap: Dur::from_mins(60),
        }
    }
}

impl Backoff {
    /// Length of the back-off after the `failures`-th consecutive failure
    /// (1-based; 0 gives zero).
    pub fn delay(&self, failures: u32) -> Dur {
        if failures == 0 {
            return Dur::ZERO;
        }
        let shift = (failures - 1).min(63);
        let factor = 1u64 << shift;
        Dur(self.initial.0.saturating_mul(factor)).min(self.cap)
    }
}

/// Everything the arbiter knows about one host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostState {
    pub spec: HostSpec,
    /// Latest measurement; `None` until the host has been measured. Hosts
    /// without a measurement are never apportioned.
    pub load: Option<HostLoad>,
    /// Guest jobs currently running there, from all schedulers.
    pub jobs: u32,
    /// Embargoed while `now < embargo_until`.
    pub embargo_until: Option<Time>,
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
            embargo_until: None,
            failures: 0,
            dysfunctional_until: None,
        }
    }

    pub fn embargoed(&self, now: Time) -> bool {
        self.embargo_until.is_some_and(|u| now < u)
    }

    pub fn dysfunctional(&self, now: Time) -> bool {
        self.dysfunctional_until.is_some_and(|u| now < u)
    }

    pub fn at_limit(&self) -> bool {
        self.jobs >= self.spec.job_limit
    }
}

/// A read-only view of a host for the uncoordinated baseline.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSnapshot {
    pub id: HostId,
    pub spec: HostSpec,
    pub load: Option<HostLoad>,
    pub dysfunctional: bool,
}

// ---------------------------------------------------------------------------
// The arbiter
// ---------------------------------------------------------------------------

/// What the progress guarantee may override when it apportions a host to a
/// scheduler with no running job.
///
/// Neeracher 1998 (L1016, L1057, L1203): "one job per individual scheduler is
/// always kept running"; the source does not say which rules the final pass
/// may break (spec §9 item 4). Our rule: it **always ignores the thresholds**
/// (that is its purpose), ignores the embargo in the default variant, and
/// **never** ignores a host's job limit, its dysfunctional back-off, the
/// scheduler's useful set H_s, or another scheduler's apportionment. Job
/// limits are what keep the β index safe (L1327) and are the only guard
/// against thrashing (L1291), so a guarantee beyond them would be a way round
/// the one hard rule; a scheduler whose every useful host is full waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressGuarantee {
    /// No progress guarantee: only acceptable hosts are apportioned.
    Off,
    /// Ignore thresholds; respect embargo and job limits.
    IgnoreThresholds,
    /// Ignore thresholds and embargo; respect job limits.
    #[default]
    IgnoreThresholdsAndEmbargo,
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

    /// Whether `h` can take one more job at `now`, ignoring thresholds and,
    /// if `ignore_embargo`, the embargo.
    fn has_room(&self, h: HostId, now: Time, ignore_embargo: bool) -> bool {
        self.host(h).is_some_and(|host| {
            host.load.is_some()
                && !host.dysfunctional(now)
                && !host.at_limit()
                && (ignore_embargo || !host.embargoed(now))
        })
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
            .filter(|&h| !taken.contains(&h) && self.has_room(h, now, false))
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

        let ignore_embargo = match self.cfg.progress {
            ProgressGuarantee::Off => return made,
            ProgressGuarantee::IgnoreThresholds => false,
            ProgressGuarantee::IgnoreThresholdsAndEmbargo => true,
        };
        for s in order {
            let Some(st) = self.scheds.get(&s) else {
                continue;
            };
            if st.running != 0 || st.apportioned.is_some() {
                continue;
            }
            let mut best: Option<(f64, HostId)> = None;
            for &h in &st.useful {
                if taken.contains(&h) || !self.has_room(h, now, ignore_embargo) {
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
        host.embargo_until = Some(now + embargo);
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
        host.embargo_until = None;
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
fn sanitize(x: f64) -> f64 {
    if x.is_nan() { f64::NEG_INFINITY } else { x }
}

/// Higher σ first, then lower id.
fn by_sigma_desc(a: &(f64, HostId), b: &(f64, HostId)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

// ---------------------------------------------------------------------------
// Baseline
// ---------------------------------------------------------------------------

/// The uncoordinated "least loaded" placement of the distributed RStat
/// scheduler (L1105–1110), kept as a baseline.
///
/// Each scheduler calls this on its own, possibly stale, `snapshot`: it takes
/// the useful, measured, not dysfunctional host with the best σ (ties by id).
/// It applies the thresholds only when the scheduler already runs a job
/// (`own_running > 0`; with none it starts regardless of load, L1104). There
/// is no arbitration, no job limit and no embargo across schedulers, so
/// schedulers reading the same view all pick the same host: the host
/// contention of L1131–1133 and Fig. 7.15 (L2871–2873). A caller modelling
/// RStat's own-start embargo removes its embargoed hosts from `useful`.
pub fn uncoordinated_pick(
    snapshot: &[HostSnapshot],
    useful: &BTreeSet<HostId>,
    score: &Score,
    own_running: u32,
) -> Option<HostId> {
    let mut best: Option<(f64, HostId)> = None;
    for hs in snapshot {
        let Some(load) = hs.load else { continue };
        if hs.dysfunctional || !useful.contains(&hs.id) {
            continue;
        }
        if own_running > 0 && !score.acceptable(&hs.spec, &load) {
            continue;
        }
        let cand = (sanitize(score.sigma(&hs.spec, &load)), hs.id);
        if best.is_none_or(|b| by_sigma_desc(&cand, &b) == Ordering::Less) {
            best = Some(cand);
        }
    }
    best.map(|(_, h)| h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_inputs_do_not_panic() {
        assert_eq!(sigma_mu(f64::NAN), 0.0);
        assert_eq!(sigma_lambda_umol(f64::NAN), 0.0);
        assert_eq!(sigma_lambda_hetero(f64::NAN, 2, 0.0), 0.0);
        assert_eq!(sigma_lambda_hetero(1.0, 0, 0.0), 1.0);
        assert_eq!(Backoff::default().delay(u32::MAX), Dur::from_mins(60));
    }
}
