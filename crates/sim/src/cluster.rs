//! Linger-Longer's cluster simulator: N workstations, each with a two-level
//! local workload ([`crate::local_load`]) and at most one foreign job, under
//! one of the core's eviction policies (IE, PM, LL, LF, …).
//!
//! The simulator owns placement, the CPU model and accounting; every
//! decision about a placed guest (linger, pause, migrate, resume) comes from
//! `gleaner_core::eviction::EvictionLadder`, and idleness from the core's
//! `Detector` with the Linger-Longer profile. Nothing of those policies is
//! re-implemented here.
//!
//! # Model (Ryu & Hollingsworth, seeds/002_34f613b0a80e1e58.txt)
//! - Time advances in 2-s windows (the coarse trace period, L99). At each
//!   window start every node reads its coarse sample, feeds the core detector
//!   (idle ⇔ CPU < 10 % and no keyboard for 60 s, L126) and draws the
//!   window's fine-grained run/idle bursts.
//! - CPU: local work has strict priority over the foreign job (L54); each
//!   local run burst that begins while the foreign job is runnable pays an
//!   effective context switch `t_cs` (default 100 µs, L181), which both
//!   delays the local request and is lost to the foreign job. The foreign
//!   job gets `(W − busy − bursts·t_cs)/W` of the window, spread uniformly
//!   over it (the bursts are short against the 2-s window).
//! - Detector timing: the window's sample is fed at the window's start, so
//!   the detector sees the trace without lag (the trace's idle/nonidle
//!   flag is recomputed from CPU and keyboard, spec §2.6).
//! - Migration (Eq. 5, L87): the job stops for `T_migr`, makes no progress
//!   (L189, L208), and the destination is reserved for it meanwhile.
//!   Concurrent migrations do not share bandwidth (the paper is silent).
//!
//! # Decisions the paper leaves open (spec R8), with our defaults
//! - Queue discipline: FIFO by submission. Jobs already started that wait
//!   for a destination (IE/PM evictees suspended on a busy node, LL jobs
//!   past their linger time) are served before queued jobs, oldest wait
//!   first, because they hold partial work.
//! - Destination choice: the free idle node that has been idle longest
//!   (by the paper's own predictor, L81, it is expected to stay idle
//!   longest), ties by node index.
//! - Semi-available placement (LL, LF only, L238): when no free idle node
//!   is left, a queued job may start on a free non-idle node whose current
//!   local utilisation is at most `semi_max_util` (default 0.5); the least
//!   loaded such node is taken, ties by index.
//! - IE/PM with no free idle node: the guest waits suspended on its node
//!   (`NoDestination::Wait`), resumes in place if the owner leaves, and
//!   migrates as soon as a destination frees up.
//! - `h` (Eq. 4) for a node: the mean coarse local utilisation of the
//!   current non-idle episode so far, re-sent to the ladder every window;
//!   `l`: the mean coarse utilisation over every idle window the cluster has
//!   seen so far (0 before the first).

use crate::SimError;
use crate::engine::{EventId, EventQueue};
use crate::local_load::{BurstTable, CoarseTrace, FineLoad, WINDOW_SECS};
use gleaner_core::detector::{Detector, DetectorConfig, DetectorProfile, OwnerSample};
use gleaner_core::eviction::{
    Action, Estimates, EvictionLadder, EvictionPolicy, GuestState, ImmediateEvictionConfig,
    LadderEvent, LingerForeverConfig, LingerLongerConfig, NoDestination, PauseAndMigrateConfig,
    TimeInState,
};
use gleaner_core::linger::MigrationCost;
use gleaner_core::rng::{PolicyRng, substream};
use gleaner_core::time::{Dur, Time};
use std::collections::VecDeque;
use std::sync::Arc;

/// The four policies of the Linger-Longer comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    LingerLonger,
    LingerForever,
    ImmediateEviction,
    PauseAndMigrate,
}

impl PolicyKind {
    /// In the paper's Table 1 column order (L223).
    pub const ALL: [PolicyKind; 4] = [
        PolicyKind::LingerLonger,
        PolicyKind::LingerForever,
        PolicyKind::ImmediateEviction,
        PolicyKind::PauseAndMigrate,
    ];

    pub fn short(self) -> &'static str {
        match self {
            PolicyKind::LingerLonger => "ll",
            PolicyKind::LingerForever => "lf",
            PolicyKind::ImmediateEviction => "ie",
            PolicyKind::PauseAndMigrate => "pm",
        }
    }

    /// The core ladder policy as this simulator configures it: process-image
    /// moves (no checkpoint), IE/PM wait suspended when no destination is
    /// free, PM's pause is the core default (60 s), LL starts from the
    /// migration cost of the run and the worst-case `h = 1` until measured.
    pub fn policy(self, t_migr: Dur) -> EvictionPolicy {
        match self {
            PolicyKind::LingerLonger => EvictionPolicy::LingerLonger(LingerLongerConfig {
                initial_estimates: Estimates {
                    h: 1.0,
                    l: 0.0,
                    t_migr,
                },
                ..LingerLongerConfig::default()
            }),
            PolicyKind::LingerForever => EvictionPolicy::LingerForever(LingerForeverConfig {}),
            PolicyKind::ImmediateEviction => {
                EvictionPolicy::ImmediateEviction(ImmediateEvictionConfig {
                    checkpoint_first: false,
                    no_destination: NoDestination::Wait,
                })
            }
            PolicyKind::PauseAndMigrate => EvictionPolicy::PauseAndMigrate(PauseAndMigrateConfig {
                no_destination: NoDestination::Wait,
                ..PauseAndMigrateConfig::default()
            }),
        }
    }
}

/// How the fine-grained level is modelled.
#[derive(Clone, Debug)]
pub enum FineModel {
    /// H2 run/idle bursts from a burst table (the paper's model).
    Bursts(Arc<BurstTable>),
    /// Fluid: the foreign job gets exactly `1 − u` of each window and no
    /// context switches (for analytic checks such as Fig. 8).
    Fluid,
}

/// Simulator settings.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    pub policy: EvictionPolicy,
    pub migration: MigrationCost,
    /// Effective context-switch time per preempting local burst (L181).
    pub t_cs: Dur,
    pub detector: DetectorConfig,
    /// Highest current local utilisation of a semi-available node.
    pub semi_max_util: f64,
    pub fine: FineModel,
    /// Simulation stops here even if jobs remain (family runs then fail).
    pub horizon: Time,
    /// Local activity simulated before the jobs are submitted, so that
    /// detectors and the "idle longest" destination rule have a history
    /// (the paper's traces start at random offsets, L204). Measurements
    /// start at submission.
    pub warmup: Dur,
}

impl ClusterConfig {
    /// The paper's set-up for `kind`: 8 MB at 3 Mbit/s (L208), 100 µs
    /// context switches (L181), Linger-Longer idle rule (L126), the default
    /// burst table.
    pub fn paper(kind: PolicyKind) -> Self {
        let migration = MigrationCost::default();
        ClusterConfig {
            policy: kind.policy(migration.t_migr()),
            migration,
            t_cs: Dur::from_micros(100),
            detector: DetectorProfile::LingerLonger.config(),
            semi_max_util: 0.5,
            fine: FineModel::Bursts(Arc::new(BurstTable::default_table())),
            horizon: Time::from_secs(48 * 3600),
            warmup: Dur::from_hours(1),
        }
    }
}

/// A node's local workload: a coarse trace read from `offset`, wrapping.
#[derive(Clone, Debug)]
pub struct NodeLoad {
    pub trace: Arc<CoarseTrace>,
    pub offset: usize,
}

/// Which jobs the run submits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JobMode {
    /// `count` jobs of `work` CPU-seconds, all submitted at time 0; the run
    /// ends when the last one finishes (L214).
    Family { count: usize, work: f64 },
    /// `count` jobs in the system at all times for `duration`: each finished
    /// job is replaced at once (the throughput configuration, L242).
    Constant {
        count: usize,
        work: f64,
        duration: Dur,
    },
}

/// One job's history.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRecord {
    pub submit: Time,
    pub first_start: Option<Time>,
    pub finish: Option<Time>,
    /// Time in each ladder state up to completion (or the end of the run).
    pub times: TimeInState,
    pub migrations: u64,
    /// CPU-seconds the job received.
    pub cpu: f64,
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterResult {
    pub jobs: Vec<JobRecord>,
    /// Submission time: measurements cover `start..end`.
    pub start: Time,
    /// Simulated time at the end of the run.
    pub end: Time,
    /// Foreign CPU-seconds delivered in the run.
    pub foreign_cpu: f64,
    /// Local CPU busy seconds over all nodes.
    pub local_busy: f64,
    /// Seconds of local delay caused by context switches to foreign jobs.
    pub local_delay: f64,
    /// Events delivered by the engine.
    pub events: u64,
    /// Local run bursts generated (fine-grained level; drawn in a loop per
    /// window, not as engine events).
    pub bursts: u64,
}

impl ClusterResult {
    fn finished(&self) -> impl Iterator<Item = &JobRecord> {
        self.jobs.iter().filter(|j| j.finish.is_some())
    }

    /// Mean completion time (submission to finish; includes queueing, pauses
    /// and migrations, L210), seconds.
    pub fn avg_completion(&self) -> f64 {
        mean(
            self.finished()
                .filter_map(|j| Some(j.finish?.since(j.submit).as_secs_f64())),
        )
    }

    /// Coefficient of variation σ/mean of execution time, first start to
    /// completion (L212; Table 1 prints it as a percentage).
    pub fn variation(&self) -> f64 {
        let xs: Vec<f64> = self
            .finished()
            .filter_map(|j| Some(j.finish?.since(j.first_start?).as_secs_f64()))
            .collect();
        let m = mean(xs.iter().copied());
        if xs.is_empty() || m <= 0.0 {
            return 0.0;
        }
        let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64;
        var.sqrt() / m
    }

    /// Completion time of the family's last job after submission (L214), seconds.
    pub fn family_time(&self) -> f64 {
        self.finished()
            .filter_map(|j| j.finish)
            .max()
            .map(|t| t.since(self.start).as_secs_f64())
            .unwrap_or(0.0)
    }

    /// Foreign CPU-seconds per second over the run (L216, L242).
    pub fn throughput(&self) -> f64 {
        let s = self.end.since(self.start).as_secs_f64();
        if s > 0.0 { self.foreign_cpu / s } else { 0.0 }
    }

    /// Mean relative increase of local CPU-request completion time (L242):
    /// context-switch delay over local busy time.
    pub fn local_delay_frac(&self) -> f64 {
        if self.local_busy > 0.0 {
            self.local_delay / self.local_busy
        } else {
            0.0
        }
    }

    /// Mean time per job in each state, seconds: queued, running,
    /// lingering, paused (suspended), migrating.
    pub fn mean_time_in_state(&self) -> [f64; 5] {
        let n = self.jobs.len().max(1) as f64;
        let mut out = [0.0; 5];
        for j in &self.jobs {
            let t = &j.times;
            let v = [
                t.queued + t.vacated + t.killed,
                t.running,
                t.lingering,
                t.suspended,
                t.migrating,
            ];
            for (o, d) in out.iter_mut().zip(v) {
                *o += d.as_secs_f64() / n;
            }
        }
        out
    }
}

fn mean(it: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = it.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { s / n as f64 }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Tick,
    Done(usize),
    Timer(usize),
    Arrive(usize, usize),
    Submit,
}

struct Node {
    load: NodeLoad,
    fine: Option<FineLoad>,
    rng: PolicyRng,
    det: Detector,
    last_input: Option<Time>,
    idle: bool,
    cpu: f64,
    /// Foreign progress rate (CPU-s per s) in the current window.
    rate: f64,
    /// Local delay per second of foreign presence in the current window.
    cs_rate: f64,
    guest: Option<usize>,
    reserved: Option<usize>,
    ep_sum: f64,
    ep_n: u64,
}

struct Job {
    ladder: EvictionLadder,
    remaining: f64,
    checkpointed: f64,
    node: Option<usize>,
    rate: f64,
    last: Time,
    submit: Time,
    first_start: Option<Time>,
    finish: Option<Time>,
    cpu: f64,
    done_ev: Option<EventId>,
    timer: Option<(Time, EventId)>,
}

/// One simulation run.
pub struct Cluster {
    cfg: ClusterConfig,
    t_migr: Dur,
    q: EventQueue<Ev>,
    nodes: Vec<Node>,
    jobs: Vec<Job>,
    queue: VecDeque<usize>,
    idle_sum: f64,
    idle_n: u64,
    window: u64,
    foreign_cpu: f64,
    local_busy: f64,
    local_delay: f64,
    bursts: u64,
    mode: JobMode,
    measure_from: Time,
    measure_until: Time,
}

/// Work below this (CPU-s) counts as done: completion events are rounded
/// up to whole microseconds, so a tiny remainder must not re-arm forever.
const EPS: f64 = 1e-5;

impl Cluster {
    /// Builds a run: one node per entry of `loads`; `seed` fixes the
    /// fine-grained bursts.
    pub fn new(
        cfg: ClusterConfig,
        loads: Vec<NodeLoad>,
        mode: JobMode,
        seed: u64,
    ) -> Result<Self, SimError> {
        if loads.is_empty() {
            return Err(SimError::Param {
                name: "nodes".into(),
                msg: "a cluster needs at least one node".into(),
            });
        }
        if loads.iter().any(|l| l.trace.samples.is_empty()) {
            return Err(SimError::Param {
                name: "trace".into(),
                msg: "every node needs a non-empty coarse trace".into(),
            });
        }
        let (count, work) = match mode {
            JobMode::Family { count, work } | JobMode::Constant { count, work, .. } => {
                (count, work)
            }
        };
        if count == 0 {
            return Err(SimError::Param {
                name: "jobs".into(),
                msg: "at least one job is needed".into(),
            });
        }
        if !(work.is_finite() && work > 0.0) {
            return Err(SimError::Param {
                name: "work".into(),
                msg: format!("job work must be > 0 CPU-s, got {work}"),
            });
        }
        let t_migr = cfg.migration.t_migr();
        if t_migr == Dur::MAX {
            return Err(SimError::Param {
                name: "migration".into(),
                msg: "migration cost is infinite (bandwidth ≤ 0)".into(),
            });
        }
        let nodes = loads
            .into_iter()
            .enumerate()
            .map(|(i, load)| Node {
                load,
                fine: match &cfg.fine {
                    FineModel::Bursts(t) => Some(FineLoad::new(t.clone())),
                    FineModel::Fluid => None,
                },
                rng: substream(seed, 0x1000 + i as u64),
                det: Detector::new(cfg.detector.clone(), Time::ZERO),
                last_input: None,
                idle: false,
                cpu: 0.0,
                rate: 0.0,
                cs_rate: 0.0,
                guest: None,
                reserved: None,
                ep_sum: 0.0,
                ep_n: 0,
            })
            .collect();
        let measure_from = Time::ZERO + cfg.warmup;
        let measure_until = match mode {
            JobMode::Family { .. } => cfg.horizon,
            JobMode::Constant { duration, .. } => measure_from + duration,
        };
        let mut c = Cluster {
            cfg,
            t_migr,
            q: EventQueue::new(),
            nodes,
            jobs: Vec::new(),
            queue: VecDeque::new(),
            idle_sum: 0.0,
            idle_n: 0,
            window: 0,
            foreign_cpu: 0.0,
            local_busy: 0.0,
            local_delay: 0.0,
            bursts: 0,
            mode,
            measure_from,
            measure_until,
        };
        c.q.schedule(Time::ZERO, Ev::Tick);
        c.q.schedule(measure_from, Ev::Submit);
        Ok(c)
    }

    fn submit(&mut self, work: f64) {
        let now = self.q.now();
        let id = self.jobs.len();
        self.jobs.push(Job {
            ladder: EvictionLadder::new(self.cfg.policy, now),
            remaining: work,
            checkpointed: work,
            node: None,
            rate: 0.0,
            last: now,
            submit: now,
            first_start: None,
            finish: None,
            cpu: 0.0,
            done_ev: None,
            timer: None,
        });
        self.queue.push_back(id);
    }

    /// Runs to the end (all family jobs done, or the constant-mode duration)
    /// and returns the measurements.
    pub fn run(mut self) -> Result<ClusterResult, SimError> {
        let stop = self.measure_until.min(self.cfg.horizon);
        while let Some((now, ev)) = self.q.pop_until(stop) {
            match ev {
                Ev::Tick => self.tick(now),
                Ev::Done(j) => {
                    self.jobs[j].done_ev = None;
                    self.settle(j, now);
                    if self.jobs[j].remaining <= EPS {
                        self.finish(j, now);
                        self.dispatch(now);
                    } else {
                        self.refresh(j, now);
                    }
                }
                Ev::Timer(j) => {
                    self.jobs[j].timer = None;
                    self.call(j, now, LadderEvent::Timer);
                    self.dispatch(now);
                }
                Ev::Arrive(j, d) => {
                    self.nodes[d].reserved = None;
                    self.place(j, d, now);
                    self.dispatch(now);
                }
                Ev::Submit => {
                    let (JobMode::Family { count, work } | JobMode::Constant { count, work, .. }) =
                        self.mode;
                    for _ in 0..count {
                        self.submit(work);
                    }
                    self.dispatch(now);
                }
            }
            if matches!(self.mode, JobMode::Family { .. })
                && !self.jobs.is_empty()
                && self.jobs.iter().all(|j| j.finish.is_some())
            {
                break;
            }
        }
        let end = match self.mode {
            JobMode::Family { .. } => {
                if self.jobs.iter().any(|j| j.finish.is_none()) {
                    return Err(SimError::Param {
                        name: "horizon".into(),
                        msg: format!(
                            "{} of {} jobs unfinished at the horizon {}",
                            self.jobs.iter().filter(|j| j.finish.is_none()).count(),
                            self.jobs.len(),
                            self.cfg.horizon
                        ),
                    });
                }
                self.q.now()
            }
            JobMode::Constant { .. } => stop,
        };
        for j in 0..self.jobs.len() {
            self.settle(j, end);
        }
        let jobs = self
            .jobs
            .iter()
            .map(|j| JobRecord {
                submit: j.submit,
                first_start: j.first_start,
                finish: j.finish,
                times: j.ladder.time_in_state(j.finish.unwrap_or(end)),
                migrations: j.ladder.counters().migrations,
                cpu: j.cpu,
            })
            .collect();
        Ok(ClusterResult {
            jobs,
            start: self.measure_from,
            end,
            foreign_cpu: self.foreign_cpu,
            local_busy: self.local_busy,
            local_delay: self.local_delay,
            events: self.q.delivered(),
            bursts: self.bursts,
        })
    }

    // ----- windows ---------------------------------------------------------

    fn tick(&mut self, now: Time) {
        for j in 0..self.jobs.len() {
            if self.jobs[j].node.is_some() {
                self.settle(j, now);
            }
        }
        let k = self.window;
        self.window += 1;
        for i in 0..self.nodes.len() {
            self.node_window(i, k, now);
        }
        for i in 0..self.nodes.len() {
            if let Some(j) = self.nodes[i].guest {
                self.node_events(i, j, now);
            }
        }
        self.dispatch(now);
        self.q
            .schedule(now + Dur::from_secs_f64(WINDOW_SECS), Ev::Tick);
    }

    /// Reads window `k`'s coarse sample and draws its fine-grained load.
    fn node_window(&mut self, i: usize, k: u64, now: Time) {
        let t_cs = self.cfg.t_cs.as_secs_f64();
        let n = &mut self.nodes[i];
        let len = n.load.trace.samples.len();
        let s = n.load.trace.samples[(n.load.offset + k as usize) % len];
        if s.keyboard {
            n.last_input = Some(now);
        }
        let since_input = Some(match n.last_input {
            Some(t) => now.since(t),
            // Quiet before the run started (a full recruitment threshold).
            None => self.cfg.detector.input_quiet + now.since(Time::ZERO),
        });
        n.det.sample(
            now,
            &OwnerSample {
                owner_cpu: s.cpu,
                since_input,
                load_avg: None,
            },
        );
        let was_idle = n.idle;
        n.idle = n.det.is_available();
        n.cpu = s.cpu;
        if n.idle {
            self.idle_sum += s.cpu;
            self.idle_n += 1;
        } else {
            if was_idle || n.ep_n == 0 {
                n.ep_sum = 0.0;
                n.ep_n = 0;
            }
            n.ep_sum += s.cpu;
            n.ep_n += 1;
        }
        let (busy, bursts) = match n.fine.as_mut() {
            Some(f) => {
                let w = f.window(s.cpu, &mut n.rng);
                self.bursts += u64::from(w.bursts);
                (w.busy, f64::from(w.bursts))
            }
            None => (s.cpu * WINDOW_SECS, 0.0),
        };
        n.rate = ((WINDOW_SECS - busy - bursts * t_cs) / WINDOW_SECS).max(0.0);
        n.cs_rate = bursts * t_cs / WINDOW_SECS;
        if now >= self.measure_from && now < self.measure_until {
            self.local_busy += busy;
        }
    }

    /// Tells the guest's ladder what changed on its node this window.
    fn node_events(&mut self, i: usize, j: usize, now: Time) {
        let n = &self.nodes[i];
        let active = !n.idle;
        let was_active = self.jobs[j].ladder.owner_active();
        if active && self.is_ll() {
            let est = self.estimates(i);
            self.call(j, now, LadderEvent::Estimates(est));
        }
        if self.jobs[j].node != Some(i) {
            return; // the estimates made it migrate
        }
        if active && !was_active {
            self.call(j, now, LadderEvent::OwnerActive);
        } else if !active && was_active {
            self.call(j, now, LadderEvent::OwnerIdle);
        } else {
            self.refresh(j, now);
        }
    }

    fn is_ll(&self) -> bool {
        matches!(self.cfg.policy, EvictionPolicy::LingerLonger(_))
    }

    /// Eq. 4's inputs for node `i` (see the module docs for how).
    fn estimates(&self, i: usize) -> Estimates {
        let n = &self.nodes[i];
        let h = if n.ep_n > 0 {
            n.ep_sum / n.ep_n as f64
        } else {
            n.cpu
        };
        let l = if self.idle_n > 0 {
            self.idle_sum / self.idle_n as f64
        } else {
            0.0
        };
        Estimates {
            h,
            l,
            t_migr: self.t_migr,
        }
    }

    // ----- jobs ------------------------------------------------------------

    /// Accounts the job's progress from its last update to `now`.
    fn settle(&mut self, j: usize, now: Time) {
        let job = &mut self.jobs[j];
        let dt = now.since(job.last).as_secs_f64();
        job.last = job.last.max(now);
        if dt <= 0.0 || job.rate <= 0.0 {
            return;
        }
        let got = (job.rate * dt).min(job.remaining);
        job.remaining -= got;
        job.cpu += got;
        self.foreign_cpu += got;
        if let Some(i) = job.node {
            // Context-switch delay accrues while the guest is runnable; a
            // partial final stretch counts in proportion to the work done.
            self.local_delay += self.nodes[i].cs_rate * got / job.rate;
        }
    }

    /// Recomputes the job's rate and re-arms its completion and ladder timer.
    fn refresh(&mut self, j: usize, now: Time) {
        let progressing = matches!(
            self.jobs[j].ladder.state(),
            GuestState::Running | GuestState::Lingering
        );
        let rate = match self.jobs[j].node {
            Some(i) if progressing => self.nodes[i].rate,
            _ => 0.0,
        };
        let job = &mut self.jobs[j];
        job.rate = rate;
        job.last = now;
        if let Some(id) = job.done_ev.take() {
            self.q.cancel(id);
        }
        if rate > 0.0 && job.finish.is_none() {
            let secs = job.remaining / rate;
            // Beyond the next window the rate changes anyway; the tick re-arms.
            if secs <= WINDOW_SECS {
                let at = now + Dur::from_micros(((secs * 1e6).ceil() as u64).max(1));
                job.done_ev = Some(self.q.schedule(at, Ev::Done(j)));
            }
        }
        let deadline = job.ladder.next_deadline();
        match (deadline, job.timer) {
            (Some(d), Some((t, _))) if d == t => {}
            (d, old) => {
                if let Some((_, id)) = old {
                    self.q.cancel(id);
                }
                job.timer = d.map(|d| (d, self.q.schedule(d, Ev::Timer(j))));
            }
        }
    }

    /// Feeds `ev` to job `j`'s ladder (after telling it whether a free idle
    /// destination exists) and carries out the actions.
    fn call(&mut self, j: usize, now: Time, ev: LadderEvent) {
        self.settle(j, now);
        let avail = self.free_idle().is_some();
        let mut acts = self.jobs[j].ladder.on_destination(now, avail);
        if !matches!(ev, LadderEvent::Destination(_)) {
            acts.extend(self.jobs[j].ladder.handle(now, ev));
        }
        for a in acts {
            self.act(j, now, a);
        }
        self.refresh(j, now);
    }

    fn act(&mut self, j: usize, now: Time, a: Action) {
        match a {
            Action::RunNormal | Action::LowerPriority | Action::Suspend | Action::Resume => {}
            Action::Checkpoint => self.jobs[j].checkpointed = self.jobs[j].remaining,
            Action::Migrate { checkpoint_first } => {
                if checkpoint_first {
                    self.jobs[j].checkpointed = self.jobs[j].remaining;
                }
                self.leave_node(j);
                match self.free_idle() {
                    Some(d) => {
                        self.nodes[d].reserved = Some(j);
                        self.q.schedule(now + self.t_migr, Ev::Arrive(j, d));
                    }
                    None => {
                        // Cannot happen while destinations are reported
                        // truthfully; requeue rather than lose the job.
                        self.jobs[j].ladder.on_requeued(now);
                        self.queue.push_front(j);
                    }
                }
            }
            Action::Vacate { checkpoint_first } => {
                if checkpoint_first {
                    self.jobs[j].checkpointed = self.jobs[j].remaining;
                }
                self.jobs[j].remaining = self.jobs[j].checkpointed;
                self.leave_node(j);
                self.queue.push_front(j);
            }
            Action::Kill => {
                self.jobs[j].remaining = self.jobs[j].checkpointed;
                self.leave_node(j);
                self.queue.push_front(j);
            }
        }
    }

    fn leave_node(&mut self, j: usize) {
        if let Some(i) = self.jobs[j].node.take() {
            self.nodes[i].guest = None;
        }
    }

    fn place(&mut self, j: usize, i: usize, now: Time) {
        self.nodes[i].guest = Some(j);
        self.jobs[j].node = Some(i);
        self.jobs[j].last = now;
        self.jobs[j].first_start.get_or_insert(now);
        let active = !self.nodes[i].idle;
        if active && self.is_ll() {
            let est = self.estimates(i);
            self.jobs[j].ladder.on_estimates(now, est);
        }
        self.call(
            j,
            now,
            LadderEvent::Placed {
                owner_active: active,
            },
        );
    }

    fn finish(&mut self, j: usize, now: Time) {
        self.jobs[j].ladder.on_finished(now);
        self.jobs[j].finish = Some(now);
        self.jobs[j].rate = 0.0;
        if let Some((_, id)) = self.jobs[j].timer.take() {
            self.q.cancel(id);
        }
        self.leave_node(j);
        if let JobMode::Constant { work, .. } = self.mode {
            self.submit(work);
        }
    }

    /// The free idle node idle for longest, ties by index.
    fn free_idle(&self) -> Option<usize> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.idle && n.guest.is_none() && n.reserved.is_none())
            .min_by_key(|(i, n)| (n.det.state_since(), *i))
            .map(|(i, _)| i)
    }

    /// The least-loaded free semi-available node (LL/LF placement).
    fn free_semi(&self) -> Option<usize> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| {
                !n.idle
                    && n.guest.is_none()
                    && n.reserved.is_none()
                    && n.cpu <= self.cfg.semi_max_util
            })
            .min_by(|(i, a), (k, b)| a.cpu.total_cmp(&b.cpu).then(i.cmp(k)))
            .map(|(i, _)| i)
    }

    fn dispatch(&mut self, now: Time) {
        let mut offered = vec![false; self.jobs.len()];
        while let Some(d) = self.free_idle() {
            // Started jobs waiting for a destination first, oldest wait first.
            let waiting = self
                .jobs
                .iter()
                .enumerate()
                .filter(|(k, jb)| {
                    !offered[*k] && jb.node.is_some() && jb.ladder.awaiting_destination()
                })
                .min_by_key(|(k, jb)| (jb.ladder.state_since(), *k))
                .map(|(k, _)| k);
            if let Some(j) = waiting {
                offered[j] = true;
                self.call(j, now, LadderEvent::Destination(true));
                continue;
            }
            let Some(j) = self.queue.pop_front() else {
                break;
            };
            self.place(j, d, now);
        }
        if self.cfg.policy.lingers() {
            while !self.queue.is_empty() {
                let Some(d) = self.free_semi() else { break };
                if let Some(j) = self.queue.pop_front() {
                    self.place(j, d, now);
                }
            }
        }
    }
}

/// Per-node loads from synthetic traces: node `i` gets its own machine
/// trace of `samples` windows generated from substream `(seed, i)`. The
/// machines' activity quantiles are stratified (one per `1/nodes` slice,
/// shuffled over nodes) so every pool has the calibrated average activity.
pub fn synthetic_loads(
    nodes: usize,
    samples: usize,
    params: &crate::local_load::SyntheticParams,
    seed: u64,
) -> Result<Vec<NodeLoad>, SimError> {
    use gleaner_core::rng::Rng;
    let mut rng = substream(seed, 0x5747);
    let mut slots: Vec<usize> = (0..nodes).collect();
    for i in (1..slots.len()).rev() {
        let k = rng.random_range(0..=i);
        slots.swap(i, k);
    }
    (0..nodes)
        .map(|i| {
            let mut rng = substream(seed, i as u64);
            let q = (slots[i] as f64 + rng.random::<f64>()) / nodes as f64;
            let t = crate::local_load::synthetic_trace_at(
                &format!("syn{i}"),
                params,
                q,
                samples,
                &mut rng,
            )?;
            Ok(NodeLoad {
                trace: Arc::new(t),
                offset: 0,
            })
        })
        .collect()
}

/// Per-node loads from measured traces (R11, L204): node `i` gets a
/// distinct machine while there are enough (a seeded permutation; machines
/// are reused round-robin when there are fewer machines than nodes) and a
/// random start offset into it.
pub fn trace_loads(
    traces: &[Arc<CoarseTrace>],
    nodes: usize,
    seed: u64,
) -> Result<Vec<NodeLoad>, SimError> {
    use gleaner_core::rng::Rng;
    if traces.is_empty() || traces.iter().any(|t| t.samples.is_empty()) {
        return Err(SimError::Param {
            name: "trace".into(),
            msg: "need at least one non-empty machine trace".into(),
        });
    }
    let mut rng = substream(seed, 0xACE);
    let mut perm: Vec<usize> = (0..traces.len()).collect();
    for i in (1..perm.len()).rev() {
        let k = rng.random_range(0..=i);
        perm.swap(i, k);
    }
    Ok((0..nodes)
        .map(|i| {
            let t = traces[perm[i % perm.len()]].clone();
            let offset = rng.random_range(0..t.samples.len());
            NodeLoad { trace: t, offset }
        })
        .collect())
}
