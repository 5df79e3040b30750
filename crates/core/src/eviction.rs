//! The guest eviction ladder: what happens to a guest job when the owner of
//! the station it runs on comes back.
//!
//! One [`EvictionLadder`] per guest job. It is a pure state machine: the
//! caller feeds events ([`LadderEvent`], or the `on_*` methods) with the
//! current [`Time`], carries out the returned [`Action`]s, and calls
//! [`EvictionLadder::on_timer`] when [`EvictionLadder::next_deadline`] is
//! reached. The machine tracks the guest's [`GuestState`] and the time spent
//! in each state (Linger-Longer's time-in-state breakdown, seeds/
//! 002_34f613b0a80e1e58.txt L246).
//!
//! Policies ([`EvictionPolicy`]):
//! - Immediate-Eviction (IE): leave as soon as the owner is active (Ryu &
//!   Hollingsworth L58; Mutka 1988 design rule, seeds/000_14c1149197e96532.txt L583).
//! - Pause-and-Migrate (PM): stop for a fixed pause, resume in place if the
//!   owner leaves, otherwise migrate (L58).
//! - Linger-Longer (LL): keep running at strict low priority; migrate once
//!   the episode is `T_lingr` old (Eq. 4, L83) and a free idle node exists.
//! - Linger-Forever (LF): keep running at strict low priority, never leave (L91).
//! - Condor-1988: suspend; if the owner is still active after 5 minutes,
//!   checkpoint and move (Mutka 1988 L841).
//! - Checkpoint-then-kill: periodic checkpoints while running; kill at once
//!   when the owner returns (Mutka's proposal, L841).
//!
//! Invariant (checked by the tests): the guest is never left running at
//! normal priority while the owner is active. Every owner-active event moves
//! a `Running` guest to `Lingering`, `Suspended`, `Migrating`, `Vacated` or
//! `Killed` in the same call.
//!
//! Decisions the papers leave open are configuration fields with documented
//! defaults: the PM pause, what IE/PM/Condor do when no destination is free
//! ([`NoDestination`]), the checkpoint interval of checkpoint-then-kill.
//!
//! ```
//! use gleaner_core::eviction::{Action, EvictionLadder, EvictionPolicy};
//! use gleaner_core::time::Time;
//!
//! // Condor 1988: suspend, then checkpoint and move after 5 minutes.
//! let mut g = EvictionLadder::new(EvictionPolicy::default(), Time::ZERO);
//! assert_eq!(g.on_placed(Time::ZERO, false), vec![Action::RunNormal]);
//! assert_eq!(g.on_owner_active(Time::from_secs(60)), vec![Action::Suspend]);
//! assert_eq!(g.next_deadline(), Some(Time::from_secs(360)));
//! g.on_destination(Time::from_secs(100), true);
//! assert_eq!(
//!     g.on_timer(Time::from_secs(360)),
//!     vec![Action::Migrate { checkpoint_first: true }]
//! );
//! ```

use crate::linger::{self, MigrationCost};
use crate::time::{Dur, Time};
use serde::{Deserialize, Serialize};

/// What the caller must do to the guest process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run the guest at normal (guest) priority: start it after placement,
    /// or raise it back after lingering. Only issued while the owner is idle.
    RunNormal,
    /// Keep the guest running at strict lowest priority (idle class), so
    /// any owner process preempts it (Ryu & Hollingsworth L54).
    LowerPriority,
    /// Stop the guest (no CPU, memory and disk kept).
    Suspend,
    /// Continue a suspended guest at normal priority (owner idle again).
    Resume,
    /// Take a checkpoint; the guest stays where and as it is.
    Checkpoint,
    /// Move the guest to the free idle node the caller said exists; the
    /// guest makes no progress until [`EvictionLadder::on_placed`]. With
    /// `checkpoint_first` the move goes through a checkpoint (Condor);
    /// without, the process image is moved as is (Linger-Longer, Eq. 5).
    Migrate { checkpoint_first: bool },
    /// Leave this node with no destination: the job's state goes back to
    /// its home station and the job waits in the home queue. As for
    /// `Migrate`, `checkpoint_first` only selects the mechanism (checkpoint
    /// file or plain process image); no work is lost either way.
    Vacate { checkpoint_first: bool },
    /// Kill the guest; it restarts elsewhere from its last checkpoint
    /// (Mutka 1988 L841: only work since that checkpoint is lost).
    Kill,
}

impl Action {
    /// True for actions that take the guest off its node.
    pub fn leaves_node(self) -> bool {
        matches!(
            self,
            Action::Migrate { .. } | Action::Vacate { .. } | Action::Kill
        )
    }
}

/// Where the guest job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuestState {
    /// Not placed yet.
    Queued,
    /// Running at normal priority on a node whose owner is idle.
    Running,
    /// Running at strict low priority while the owner is active (LL, LF).
    Lingering,
    /// Stopped on its node (PM pause, Condor grace, or waiting for a
    /// destination), making no progress.
    Suspended,
    /// In transit to a destination node.
    Migrating,
    /// Back in the home queue after leaving a node without a destination.
    Vacated,
    /// Killed; waits to be restarted from its last checkpoint.
    Killed,
    /// Completed. Terminal.
    Finished,
}

impl GuestState {
    pub const ALL: [GuestState; 8] = [
        GuestState::Queued,
        GuestState::Running,
        GuestState::Lingering,
        GuestState::Suspended,
        GuestState::Migrating,
        GuestState::Vacated,
        GuestState::Killed,
        GuestState::Finished,
    ];

    /// True while the guest occupies a node (running, lingering or stopped).
    pub fn on_node(self) -> bool {
        matches!(
            self,
            GuestState::Running | GuestState::Lingering | GuestState::Suspended
        )
    }

    /// True while the guest waits to be placed (again).
    pub fn awaiting_placement(self) -> bool {
        matches!(
            self,
            GuestState::Queued | GuestState::Vacated | GuestState::Killed
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            GuestState::Queued => "queued",
            GuestState::Running => "running",
            GuestState::Lingering => "lingering",
            GuestState::Suspended => "suspended",
            GuestState::Migrating => "migrating",
            GuestState::Vacated => "vacated",
            GuestState::Killed => "killed",
            GuestState::Finished => "finished",
        }
    }
}

/// Cumulative time spent in each state (the simulator's time-in-state
/// metric, Ryu & Hollingsworth L246, spec R14).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeInState {
    pub queued: Dur,
    pub running: Dur,
    pub lingering: Dur,
    pub suspended: Dur,
    pub migrating: Dur,
    pub vacated: Dur,
    pub killed: Dur,
}

impl TimeInState {
    pub fn get(&self, s: GuestState) -> Dur {
        match s {
            GuestState::Queued => self.queued,
            GuestState::Running => self.running,
            GuestState::Lingering => self.lingering,
            GuestState::Suspended => self.suspended,
            GuestState::Migrating => self.migrating,
            GuestState::Vacated => self.vacated,
            GuestState::Killed => self.killed,
            GuestState::Finished => Dur::ZERO,
        }
    }

    fn add(&mut self, s: GuestState, d: Dur) {
        let slot = match s {
            GuestState::Queued => &mut self.queued,
            GuestState::Running => &mut self.running,
            GuestState::Lingering => &mut self.lingering,
            GuestState::Suspended => &mut self.suspended,
            GuestState::Migrating => &mut self.migrating,
            GuestState::Vacated => &mut self.vacated,
            GuestState::Killed => &mut self.killed,
            GuestState::Finished => return,
        };
        *slot += d;
    }

    /// Sum over all states.
    pub fn total(&self) -> Dur {
        self.queued
            + self.running
            + self.lingering
            + self.suspended
            + self.migrating
            + self.vacated
            + self.killed
    }
}

/// Event counts of one guest, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LadderCounters {
    pub suspensions: u64,
    pub checkpoints: u64,
    pub migrations: u64,
    pub vacates: u64,
    pub kills: u64,
    /// Wall time spent running or lingering that was thrown away by a kill
    /// (Mutka 1988 L841: "the only work lost is that between the job's most
    /// recent checkpoint and the time it was terminated").
    pub lost_run_time: Dur,
}

/// The caller's current estimates for Linger-Longer's decision (Eq. 4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Estimates {
    /// Owner CPU utilisation of this (non-idle) node, `0..=1`.
    pub h: f64,
    /// Owner CPU utilisation of an idle destination node, `0..=1`.
    pub l: f64,
    /// Migration cost (Eq. 5, see [`MigrationCost::t_migr`]).
    pub t_migr: Dur,
}

impl Default for Estimates {
    /// Until the caller measures `h`, assume the worst case `h = 1` (the
    /// owner takes the whole CPU, so the linger time is just `T_migr`),
    /// `l = 0`, and the paper's 8 MB at 3 Mbit/s (L189) for `T_migr`.
    fn default() -> Self {
        Estimates {
            h: 1.0,
            l: 0.0,
            t_migr: MigrationCost::default().t_migr(),
        }
    }
}

impl Estimates {
    /// `T_lingr` for these estimates (Eq. 4; `Dur::MAX` when `h ≤ l`).
    pub fn linger_time(&self) -> Dur {
        linger::linger_time(self.h, self.l, self.t_migr)
    }
}

/// What to do when the policy wants to move the guest but the caller says
/// no free idle node exists. The Linger-Longer paper leaves this open
/// (spec linger-longer.md R8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoDestination {
    /// Leave the node anyway and go back to the home queue (Condor's
    /// "checkpointed and moved from the location", Mutka 1988 L841).
    #[default]
    Vacate,
    /// Stay suspended on the node; migrate when a destination appears,
    /// resume if the owner leaves first.
    Wait,
}

/// Immediate-Eviction settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImmediateEvictionConfig {
    /// Move through a checkpoint (Mutka's design rule, L583) rather than a
    /// plain process-image move (Linger-Longer's IE). Default: image move.
    pub checkpoint_first: bool,
    pub no_destination: NoDestination,
}

/// Pause-and-Migrate settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PauseAndMigrateConfig {
    /// How long the guest stays suspended before migrating. Ryu &
    /// Hollingsworth (L58) only say it "should not be long" [NOT IN SOURCE];
    /// default 60 s, one Linger-Longer recruitment threshold (L126).
    pub pause: Dur,
    pub checkpoint_first: bool,
    pub no_destination: NoDestination,
}

impl Default for PauseAndMigrateConfig {
    fn default() -> Self {
        PauseAndMigrateConfig {
            pause: Dur::from_secs(60),
            checkpoint_first: false,
            no_destination: NoDestination::Vacate,
        }
    }
}

/// Linger-Longer settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LingerLongerConfig {
    pub checkpoint_first: bool,
    /// Do not migrate a nearly finished job (extension, not in the paper;
    /// see [`linger::migration_beats_staying`]). Needs the caller to report
    /// remaining work. Off by default.
    pub near_finished_guard: bool,
    /// Estimates used until the caller reports measured ones.
    pub initial_estimates: Estimates,
}

/// Linger-Forever has no settings; the struct keeps the config format
/// uniform (and rejects unknown fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LingerForeverConfig {}

/// Condor as implemented in 1988 (Mutka 1988 L841).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Condor1988Config {
    /// How long the guest stays suspended before it is checkpointed and
    /// moved. Mutka 1988 L841: 5 minutes.
    pub grace: Dur,
    /// Mutka 1988 L841: "the job will be checkpointed and moved". Default true.
    pub checkpoint_first: bool,
    pub no_destination: NoDestination,
}

impl Default for Condor1988Config {
    fn default() -> Self {
        Condor1988Config {
            // Mutka 1988 (seeds/000_14c1149197e96532.txt L841): 5 minutes.
            grace: Dur::from_mins(5),
            checkpoint_first: true,
            no_destination: NoDestination::Vacate,
        }
    }
}

/// Mutka's proposed periodic-checkpoint-then-kill (L841).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointThenKillConfig {
    /// Time running between checkpoints. Mutka gives no value [NOT IN
    /// SOURCE]; default 30 min (a checkpoint cost ≈ 2.5 s CPU per job,
    /// L817, stays below 0.2 %). Clamped to at least 1 ms.
    pub interval: Dur,
}

impl Default for CheckpointThenKillConfig {
    fn default() -> Self {
        CheckpointThenKillConfig {
            interval: Dur::from_mins(30),
        }
    }
}

/// The eviction policy, as written in configuration files:
/// `{"policy": "pause_and_migrate", "pause": 60000000}` (durations in µs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case", deny_unknown_fields)]
pub enum EvictionPolicy {
    ImmediateEviction(ImmediateEvictionConfig),
    PauseAndMigrate(PauseAndMigrateConfig),
    LingerLonger(LingerLongerConfig),
    LingerForever(LingerForeverConfig),
    Condor1988(Condor1988Config),
    CheckpointThenKill(CheckpointThenKillConfig),
}

impl Default for EvictionPolicy {
    /// Condor as it ran in 1988.
    fn default() -> Self {
        EvictionPolicy::Condor1988(Condor1988Config::default())
    }
}

impl EvictionPolicy {
    /// Every policy name, as used in configs and on command lines.
    pub const NAMES: [&'static str; 6] = [
        "immediate_eviction",
        "pause_and_migrate",
        "linger_longer",
        "linger_forever",
        "condor1988",
        "checkpoint_then_kill",
    ];

    pub fn name(&self) -> &'static str {
        match self {
            EvictionPolicy::ImmediateEviction(_) => "immediate_eviction",
            EvictionPolicy::PauseAndMigrate(_) => "pause_and_migrate",
            EvictionPolicy::LingerLonger(_) => "linger_longer",
            EvictionPolicy::LingerForever(_) => "linger_forever",
            EvictionPolicy::Condor1988(_) => "condor1988",
            EvictionPolicy::CheckpointThenKill(_) => "checkpoint_then_kill",
        }
    }

    /// The default configuration of the policy called `name` (also accepts
    /// `-` for `_`, any case, and the short forms ie, pm, ll, lf, ctk).
    pub fn from_name(name: &str) -> Option<Self> {
        let n = name.to_ascii_lowercase().replace('-', "_");
        Some(match n.as_str() {
            "immediate_eviction" | "ie" => {
                EvictionPolicy::ImmediateEviction(ImmediateEvictionConfig::default())
            }
            "pause_and_migrate" | "pm" => {
                EvictionPolicy::PauseAndMigrate(PauseAndMigrateConfig::default())
            }
            "linger_longer" | "ll" => EvictionPolicy::LingerLonger(LingerLongerConfig::default()),
            "linger_forever" | "lf" => EvictionPolicy::LingerForever(LingerForeverConfig {}),
            "condor1988" | "condor_1988" | "condor" => {
                EvictionPolicy::Condor1988(Condor1988Config::default())
            }
            "checkpoint_then_kill" | "ctk" => {
                EvictionPolicy::CheckpointThenKill(CheckpointThenKillConfig::default())
            }
            _ => return None,
        })
    }

    /// True for the policies that may place or keep a guest on a node whose
    /// owner is active (Ryu & Hollingsworth L238: LL and LF use
    /// "semi-available" nodes).
    pub fn lingers(&self) -> bool {
        matches!(
            self,
            EvictionPolicy::LingerLonger(_) | EvictionPolicy::LingerForever(_)
        )
    }
}

/// An input to the ladder, for callers that queue events (the simulator).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LadderEvent {
    /// The guest starts (or resumes after a move) on a node.
    Placed {
        owner_active: bool,
    },
    OwnerActive,
    OwnerIdle,
    /// A deadline may have passed.
    Timer,
    Estimates(Estimates),
    /// Whether a free idle destination node exists now.
    Destination(bool),
    /// CPU work the guest still needs, for the near-finished guard.
    RemainingWork(Option<Dur>),
    /// A move failed or was abandoned; the guest waits in its home queue.
    Requeued,
    Finished,
}

/// Upper bound on timers fired by one call, so a tiny checkpoint interval
/// and a long silence cannot make a call loop for long.
const MAX_TIMER_FIRINGS: usize = 64;

/// The eviction ladder of one guest job.
#[derive(Clone, Debug)]
pub struct EvictionLadder {
    policy: EvictionPolicy,
    state: GuestState,
    state_since: Time,
    /// Latest time seen; time never runs backwards.
    now: Time,
    /// Is the owner of the guest's current node active?
    owner_active: bool,
    est: Estimates,
    destination_free: bool,
    remaining_work: Option<Dur>,
    /// Start of the current owner episode on this node.
    episode_start: Option<Time>,
    /// When the guest was suspended on this node.
    suspended_at: Option<Time>,
    /// The policy wanted to move the guest but had to wait (no destination,
    /// or the near-finished guard); re-offered by `on_destination`.
    awaiting_destination: bool,
    /// Base of the periodic checkpoint timer.
    last_checkpoint: Time,
    /// Run time since the last checkpoint (lost on a kill). A plain image
    /// move (migrate or vacate without checkpoint) carries it along.
    unsaved: Dur,
    times: TimeInState,
    counters: LadderCounters,
}

impl EvictionLadder {
    /// A queued guest job under `policy`.
    pub fn new(policy: EvictionPolicy, now: Time) -> Self {
        let est = match policy {
            EvictionPolicy::LingerLonger(c) => c.initial_estimates,
            _ => Estimates::default(),
        };
        EvictionLadder {
            policy,
            state: GuestState::Queued,
            state_since: now,
            now,
            owner_active: false,
            est,
            destination_free: false,
            remaining_work: None,
            episode_start: None,
            suspended_at: None,
            awaiting_destination: false,
            last_checkpoint: now,
            unsaved: Dur::ZERO,
            times: TimeInState::default(),
            counters: LadderCounters::default(),
        }
    }

    pub fn policy(&self) -> &EvictionPolicy {
        &self.policy
    }
    pub fn state(&self) -> GuestState {
        self.state
    }
    /// When the current state began.
    pub fn state_since(&self) -> Time {
        self.state_since
    }
    /// Is the owner of the guest's current node active, as last reported?
    pub fn owner_active(&self) -> bool {
        self.owner_active
    }
    pub fn estimates(&self) -> Estimates {
        self.est
    }
    pub fn counters(&self) -> LadderCounters {
        self.counters
    }
    /// True while the policy wants to move the guest and waits for the
    /// caller to report a free destination.
    pub fn awaiting_destination(&self) -> bool {
        self.awaiting_destination
    }

    /// Age of the current owner episode, if the owner is active.
    pub fn episode_age(&self, now: Time) -> Option<Dur> {
        self.episode_start.map(|s| now.max(self.now) - s)
    }

    /// The invariant: `true` would mean the guest runs at normal priority
    /// while the owner is active. The ladder never lets that happen.
    pub fn violates_owner_priority(&self) -> bool {
        self.owner_active && self.state == GuestState::Running
    }

    /// Time in each state up to `now` (including the open stretch).
    pub fn time_in_state(&self, now: Time) -> TimeInState {
        let mut t = self.times;
        t.add(self.state, now.max(self.now) - self.now);
        t
    }

    /// The next instant at which [`EvictionLadder::on_timer`] has work to do.
    pub fn next_deadline(&self) -> Option<Time> {
        match (self.state, &self.policy) {
            (GuestState::Suspended, EvictionPolicy::PauseAndMigrate(c))
                if !self.awaiting_destination =>
            {
                self.suspended_at.map(|s| s + c.pause)
            }
            (GuestState::Suspended, EvictionPolicy::Condor1988(c))
                if !self.awaiting_destination =>
            {
                self.suspended_at.map(|s| s + c.grace)
            }
            (GuestState::Lingering, EvictionPolicy::LingerLonger(_))
                if !self.awaiting_destination =>
            {
                let t = self.est.linger_time();
                match self.episode_start {
                    Some(s) if t != Dur::MAX => Some(s + t),
                    _ => None,
                }
            }
            (GuestState::Running, EvictionPolicy::CheckpointThenKill(c)) => {
                Some(self.last_checkpoint + c.interval.max(Dur::from_millis(1)))
            }
            _ => None,
        }
    }

    /// Feeds one event; see the `on_*` methods.
    pub fn handle(&mut self, now: Time, ev: LadderEvent) -> Vec<Action> {
        match ev {
            LadderEvent::Placed { owner_active } => self.on_placed(now, owner_active),
            LadderEvent::OwnerActive => self.on_owner_active(now),
            LadderEvent::OwnerIdle => self.on_owner_idle(now),
            LadderEvent::Timer => self.on_timer(now),
            LadderEvent::Estimates(e) => self.on_estimates(now, e),
            LadderEvent::Destination(d) => self.on_destination(now, d),
            LadderEvent::RemainingWork(w) => self.on_remaining_work(now, w),
            LadderEvent::Requeued => self.on_requeued(now),
            LadderEvent::Finished => self.on_finished(now),
        }
    }

    /// The guest starts on a node (first placement, restart after a kill or
    /// vacate, or arrival after a migration). `owner_active` is the state of
    /// that node's owner. Ignored unless the guest is off-node.
    pub fn on_placed(&mut self, now: Time, owner_active: bool) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        if !matches!(
            self.state,
            GuestState::Queued | GuestState::Vacated | GuestState::Killed | GuestState::Migrating
        ) {
            return acts;
        }
        if self.state == GuestState::Killed {
            // Restart from the last checkpoint: nothing unsaved.
            self.unsaved = Dur::ZERO;
        }
        self.last_checkpoint = now;
        self.suspended_at = None;
        self.awaiting_destination = false;
        self.owner_active = owner_active;
        self.episode_start = None;
        self.set_state(now, GuestState::Running);
        if owner_active {
            // Only lingering policies should be placed on busy nodes; for
            // the others this evicts at once rather than running normally.
            self.episode_start = Some(now);
            self.react_owner_active(now, &mut acts);
        } else {
            acts.push(Action::RunNormal);
        }
        acts
    }

    /// The owner of the guest's node became active (the detector went NA).
    pub fn on_owner_active(&mut self, now: Time) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        if self.owner_active {
            return acts;
        }
        self.owner_active = true;
        self.episode_start = Some(now);
        if self.state == GuestState::Running {
            self.react_owner_active(now, &mut acts);
        }
        acts
    }

    /// The owner of the guest's node became idle (the detector went AV).
    pub fn on_owner_idle(&mut self, now: Time) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        if !self.owner_active {
            return acts;
        }
        self.owner_active = false;
        self.episode_start = None;
        match self.state {
            // Ryu & Hollingsworth L58/L85: PM resumes in place when the
            // episode ends within the pause; lingering guests speed up again.
            // Mutka 1988 L841: Condor resumes if the station is AV again.
            GuestState::Lingering => {
                self.awaiting_destination = false;
                self.set_state(now, GuestState::Running);
                acts.push(Action::RunNormal);
            }
            GuestState::Suspended => {
                self.awaiting_destination = false;
                self.suspended_at = None;
                self.set_state(now, GuestState::Running);
                acts.push(Action::Resume);
            }
            _ => {}
        }
        acts
    }

    /// Fires every deadline at or before `now`.
    pub fn on_timer(&mut self, now: Time) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        self.fire_due(now, true, &mut acts);
        acts
    }

    /// New estimates of `h`, `l` and `T_migr`. Linger-Longer recomputes its
    /// linger time from the latest values (Eq. 4) and may migrate at once.
    pub fn on_estimates(&mut self, now: Time, est: Estimates) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        self.est = est;
        if self.is_lingering_ll() {
            self.awaiting_destination = false;
            self.ll_check(now, &mut acts);
        }
        acts
    }

    /// Whether a free idle destination node exists. When one appears, a
    /// guest that was waiting for it is offered the move again.
    pub fn on_destination(&mut self, now: Time, available: bool) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        self.destination_free = available;
        if available && self.awaiting_destination {
            match self.state {
                GuestState::Lingering if self.is_lingering_ll() => {
                    self.awaiting_destination = false;
                    self.ll_check(now, &mut acts);
                }
                GuestState::Suspended => {
                    self.awaiting_destination = false;
                    let cf = self.checkpoint_first();
                    self.migrate(now, cf, &mut acts);
                }
                _ => {}
            }
        }
        acts
    }

    /// CPU work the guest still needs (for the near-finished guard).
    pub fn on_remaining_work(&mut self, now: Time, work: Option<Dur>) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        self.remaining_work = work;
        if self.is_lingering_ll() && self.awaiting_destination {
            self.awaiting_destination = false;
            self.ll_check(now, &mut acts);
        }
        acts
    }

    /// A migration failed or was abandoned: the guest goes back to its home
    /// queue. Only meaningful while `Migrating`.
    pub fn on_requeued(&mut self, now: Time) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        if self.state == GuestState::Migrating {
            self.set_state(now, GuestState::Vacated);
        }
        acts
    }

    /// The guest completed. Terminal; later events are ignored.
    pub fn on_finished(&mut self, now: Time) -> Vec<Action> {
        let mut acts = Vec::new();
        let now = self.prologue(now, &mut acts);
        self.episode_start = None;
        self.suspended_at = None;
        self.awaiting_destination = false;
        self.set_state(now, GuestState::Finished);
        acts
    }

    // ----- internals -------------------------------------------------------

    /// Clamps time, fires deadlines strictly before `now` (a deadline equal
    /// to `now` loses to the event: Condor's "within 5 minutes" includes the
    /// 5-minute mark), and accounts time in state.
    fn prologue(&mut self, now: Time, acts: &mut Vec<Action>) -> Time {
        let now = now.max(self.now);
        self.fire_due(now, false, acts);
        self.advance(now);
        now
    }

    /// Fires the deadlines before `now` (and at `now` if `inclusive`).
    /// Several overdue checkpoint periods collapse into one checkpoint at
    /// the latest of them: a burst of checkpoints at once would be useless.
    fn fire_due(&mut self, now: Time, inclusive: bool, acts: &mut Vec<Action>) {
        for _ in 0..MAX_TIMER_FIRINGS {
            let Some(mut d) = self.next_deadline() else {
                break;
            };
            if d > now || (d == now && !inclusive) {
                break;
            }
            if let (GuestState::Running, EvictionPolicy::CheckpointThenKill(c)) =
                (self.state, self.policy)
            {
                let period = c.interval.max(Dur::from_millis(1)).as_micros();
                let overdue = (now - d).as_micros();
                let mut skip = overdue / period;
                if !inclusive && overdue.is_multiple_of(period) && skip > 0 {
                    skip -= 1; // the one at `now` loses to the event
                }
                d += Dur::from_micros(skip.saturating_mul(period));
            }
            self.fire(d, acts);
        }
    }

    fn advance(&mut self, now: Time) {
        let now = now.max(self.now);
        let dt = now - self.now;
        self.times.add(self.state, dt);
        if matches!(self.state, GuestState::Running | GuestState::Lingering) {
            self.unsaved += dt;
        }
        self.now = now;
    }

    fn set_state(&mut self, now: Time, s: GuestState) {
        self.advance(now);
        if s != self.state {
            self.state = s;
            self.state_since = self.now;
        }
    }

    fn is_lingering_ll(&self) -> bool {
        self.state == GuestState::Lingering
            && matches!(self.policy, EvictionPolicy::LingerLonger(_))
    }

    fn checkpoint_first(&self) -> bool {
        match self.policy {
            EvictionPolicy::ImmediateEviction(c) => c.checkpoint_first,
            EvictionPolicy::PauseAndMigrate(c) => c.checkpoint_first,
            EvictionPolicy::LingerLonger(c) => c.checkpoint_first,
            EvictionPolicy::Condor1988(c) => c.checkpoint_first,
            EvictionPolicy::LingerForever(_) | EvictionPolicy::CheckpointThenKill(_) => false,
        }
    }

    fn no_destination(&self) -> NoDestination {
        match self.policy {
            EvictionPolicy::ImmediateEviction(c) => c.no_destination,
            EvictionPolicy::PauseAndMigrate(c) => c.no_destination,
            EvictionPolicy::Condor1988(c) => c.no_destination,
            _ => NoDestination::Wait,
        }
    }

    /// The guest is `Running` and the owner just became active. Every branch
    /// leaves the guest off normal priority.
    fn react_owner_active(&mut self, now: Time, acts: &mut Vec<Action>) {
        match self.policy {
            // Ryu & Hollingsworth L58: "migrated as soon as the machine
            // becomes nonidle"; Mutka 1988 L583: preempt "immediately".
            EvictionPolicy::ImmediateEviction(_) => self.leave_or_wait(now, acts),
            // Ryu & Hollingsworth L58: PM suspends for a fixed time first.
            // Mutka 1988 L841: Condor stops the job and keeps it there.
            EvictionPolicy::PauseAndMigrate(_) | EvictionPolicy::Condor1988(_) => {
                self.suspend(now, acts);
            }
            // Ryu & Hollingsworth L54/L85: keep running at strict low priority.
            EvictionPolicy::LingerLonger(_) => {
                self.set_state(now, GuestState::Lingering);
                acts.push(Action::LowerPriority);
                self.ll_check(now, acts);
            }
            // Ryu & Hollingsworth L91: never leave the node.
            EvictionPolicy::LingerForever(_) => {
                self.set_state(now, GuestState::Lingering);
                acts.push(Action::LowerPriority);
            }
            // Mutka 1988 L841: "kill the job immediately"; only work since
            // the most recent checkpoint is lost.
            EvictionPolicy::CheckpointThenKill(_) => {
                self.counters.kills += 1;
                self.counters.lost_run_time += self.unsaved;
                self.unsaved = Dur::ZERO;
                self.set_state(now, GuestState::Killed);
                acts.push(Action::Kill);
            }
        }
    }

    fn suspend(&mut self, now: Time, acts: &mut Vec<Action>) {
        self.counters.suspensions += 1;
        self.suspended_at = Some(now);
        self.awaiting_destination = false;
        self.set_state(now, GuestState::Suspended);
        acts.push(Action::Suspend);
    }

    /// Move now if a destination exists, otherwise vacate or wait suspended.
    fn leave_or_wait(&mut self, now: Time, acts: &mut Vec<Action>) {
        let cf = self.checkpoint_first();
        if self.destination_free {
            self.migrate(now, cf, acts);
            return;
        }
        match self.no_destination() {
            NoDestination::Vacate => {
                if cf {
                    self.counters.checkpoints += 1;
                    self.unsaved = Dur::ZERO;
                }
                self.counters.vacates += 1;
                self.suspended_at = None;
                self.set_state(now, GuestState::Vacated);
                acts.push(Action::Vacate {
                    checkpoint_first: cf,
                });
            }
            NoDestination::Wait => {
                if self.state != GuestState::Suspended {
                    self.suspend(now, acts);
                }
                self.awaiting_destination = true;
            }
        }
    }

    fn migrate(&mut self, now: Time, checkpoint_first: bool, acts: &mut Vec<Action>) {
        if checkpoint_first {
            self.counters.checkpoints += 1;
            self.unsaved = Dur::ZERO;
        }
        self.counters.migrations += 1;
        self.suspended_at = None;
        self.episode_start = None;
        self.awaiting_destination = false;
        // The destination is a free idle node (Ryu & Hollingsworth L189);
        // `on_placed` reports its owner state on arrival.
        self.owner_active = false;
        self.set_state(now, GuestState::Migrating);
        acts.push(Action::Migrate { checkpoint_first });
    }

    /// Linger-Longer's decision (spec R4): migrate at the first instant the
    /// episode age reaches `T_lingr` (Eq. 4, from the latest estimates) and
    /// a free idle node exists; otherwise keep lingering.
    fn ll_check(&mut self, now: Time, acts: &mut Vec<Action>) {
        if !self.is_lingering_ll() {
            return;
        }
        let Some(start) = self.episode_start else {
            return;
        };
        let t_lingr = self.est.linger_time();
        // h ≤ l gives Dur::MAX: never migrate (spec R1).
        if t_lingr == Dur::MAX || now - start < t_lingr {
            return; // an episode shorter than T_lingr never migrates (L85)
        }
        if !self.destination_free {
            // Migration is "an optional move" (L58): keep lingering until
            // the caller reports a free idle node.
            self.awaiting_destination = true;
            return;
        }
        if let (EvictionPolicy::LingerLonger(c), Some(w)) = (self.policy, self.remaining_work)
            && c.near_finished_guard
            && !linger::migration_beats_staying(w, self.est.t_migr, self.est.h, self.est.l)
        {
            self.awaiting_destination = true;
            return;
        }
        let cf = self.checkpoint_first();
        self.migrate(now, cf, acts);
    }

    /// Handles the deadline `at` (which is `next_deadline()`).
    fn fire(&mut self, at: Time, acts: &mut Vec<Action>) {
        self.advance(at);
        match (self.state, self.policy) {
            (
                GuestState::Suspended,
                EvictionPolicy::PauseAndMigrate(_) | EvictionPolicy::Condor1988(_),
            ) => {
                // PM: the pause is over (L58). Condor: not AV again within
                // 5 minutes, so checkpoint and move (Mutka 1988 L841).
                self.leave_or_wait(at, acts);
            }
            (GuestState::Lingering, EvictionPolicy::LingerLonger(_)) => {
                self.ll_check(at, acts);
                if self.state == GuestState::Lingering && !self.awaiting_destination {
                    // Deadline moved (should not happen); avoid refiring.
                    self.awaiting_destination = true;
                }
            }
            (GuestState::Running, EvictionPolicy::CheckpointThenKill(_)) => {
                // Mutka 1988 L841: periodic checkpoints while running.
                self.counters.checkpoints += 1;
                self.unsaved = Dur::ZERO;
                self.last_checkpoint = at;
                acts.push(Action::Checkpoint);
            }
            _ => {}
        }
    }
}
