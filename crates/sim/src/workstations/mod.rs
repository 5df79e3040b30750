//! A simulated pool of privately owned workstations, after Mutka 1988 §4.4
//! (seeds/000_14c1149197e96532.txt L690–744): owners come and go, each
//! station's background jobs run at home when it is AV, and a coordinator
//! hands out the remote capacity of idle stations.
//!
//! The coordinator is pluggable ([`CoordinatorKind`]):
//! - **bare**: the allocators of `gleaner-core` (Up-Down, Random,
//!   Round-Robin) called directly on the pool view, as the thesis modelled
//!   its coordinator (`glean sim updown`);
//! - **production**: the real `gleaner_coordinator::Pool`, to which every
//!   station sends its ad whenever its state, jobs or guests change, and
//!   whose grants and preemptions the stations carry out at once (`glean sim
//!   pool`). It adds what the daemon does: job classes and matchmaking,
//!   claims, reservations for preempted nodes, DMW's embargo, guest limits
//!   and progress guarantee, capacity events triggered by ads.
//!
//! # Model rules (spec mutka-livny-1987.md §2.4, R-SIM-1…5)
//! - One job per host. A station's own background job runs on its own host
//!   whenever that host is AV ("background jobs execute locally if their
//!   workstation's state is AV", T:L715); it displaces a guest there.
//! - A host is remote capacity only if it is AV, runs no job of its owner
//!   and no guest (S:L160: AV and "had no local background jobs to run").
//! - On AV→NA every job on the host (local or guest) is vacated, keeping its
//!   progress (checkpoint), and returns to the front of its owner's queue
//!   (T:L631). With [`PoolConfig::guest_eviction`] set, a guest instead
//!   follows the core's eviction ladder, as a station daemon's starter does:
//!   under Condor-1988 it is suspended on the host, resumed in place if the
//!   host is AV again within 5 minutes, and only then checkpointed and sent
//!   back to its owner's queue (T:L841). A suspended guest keeps its node
//!   (the node is not free capacity) and makes no progress.
//! - Every remote placement — first placement, re-placement after a vacate,
//!   or a move after preemption — costs JobTransferCost: the node is held
//!   but the job makes no progress for that long (T:L631; R-SIM-1). Local
//!   (re)starts are free.
//! - The coordinator runs its interval pass (Up-Down's index update, then an
//!   allocation) at every SchedInterval tick, and an allocation at every
//!   capacity event: a host becoming AV, a remote job completing (T:L629,
//!   L643; resolution A4), and — our reading of "new capacity becomes
//!   available" — an owner's local job finishing and leaving its AV host
//!   idle. Preemption vacates the guest back to its owner's queue.
//!
//! # Accounting conventions (spec §2.5 open points)
//! - `E_i` counts node time allocated to station `i`, including transfer
//!   time; `W_i` is the time `i` had queued jobs and held no node (the
//!   literal definition: holding one node while more jobs wait is not
//!   waiting).
//! - RCP counts CPU time actually executed (transfers excluded).
//! - The heavy station's wait fraction is `W_heavy / horizon`.

mod bare;
mod model;
mod production;

use crate::SimError;
use crate::availability::Source;
use crate::metrics::{StationAccount, group_mean, mean};
use crate::workload::{Demand, StationWorkload};
use gleaner_core::alloc::{AllocatorConfig, AllocatorKind};
use gleaner_core::eviction::EvictionPolicy;
use gleaner_core::rng::substream;
use gleaner_core::time::{Dur, Time};
use model::Model;

/// Who decides remote capacity, as the model's event loop sees it.
trait Coordinator {
    /// A SchedInterval tick.
    fn tick(&mut self, m: &mut Model);
    /// A capacity event of the model.
    fn capacity_event(&mut self, m: &mut Model);
    /// After every event (the production coordinator hears the ads of the
    /// stations that changed).
    fn after_event(&mut self, m: &mut Model);
    /// Allocation passes run.
    fn passes(&self) -> u64;
    /// Grants the stations could not use (the host was taken meanwhile).
    fn unusable_grants(&self) -> u64 {
        0
    }
}

/// Role of a station in the reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    Light,
    Medium,
    Heavy,
    Other,
}

/// Everything one pool simulation needs.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Background workload of each station (its index is its id).
    pub workloads: Vec<StationWorkload>,
    /// Reporting class of each station.
    pub classes: Vec<Class>,
    pub allocator: AllocatorConfig,
    /// Mutka's SchedInterval (10 min, T:L703).
    pub sched_interval: Dur,
    /// Mutka's JobTransferCost (1 min, T:L704).
    pub transfer_cost: Dur,
    /// Simulated length.
    pub horizon: Time,
    pub availability: Source,
    /// Who decides remote capacity: the bare allocator (the thesis's
    /// model) or the production coordinator fed station ads.
    pub coordinator: CoordinatorKind,
    /// What happens to a guest when its host's owner returns: `None` is the
    /// thesis's model (vacate at once, T:L631); otherwise the core's
    /// eviction ladder with this policy, as the station daemon runs it
    /// (only policies that suspend, resume, migrate or vacate: immediate
    /// eviction, pause-and-migrate, Condor-1988).
    pub guest_eviction: Option<EvictionPolicy>,
}

/// Which coordinator decides grants and preemptions in a simulation.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum CoordinatorKind {
    /// `PoolConfig::allocator` called directly on the model's pool view.
    #[default]
    Bare,
    /// `gleaner_coordinator::Pool`, configured by this template (its
    /// allocator and scheduling interval are the pool config's).
    Production(Box<gleaner_coordinator::CoordinatorConfig>),
}

/// The LightStation job stream of Table 4.4: arrive = 2000 min,
/// servemean = 5 h (T:L698–701).
pub fn light_workload() -> StationWorkload {
    StationWorkload::Poisson {
        mean_interarrival: Dur::from_mins(2000),
        demand: Demand::Exp(Dur::from_hours(5)),
    }
}

/// `count` permanent jobs with 5-hour exponential demands (T:L614, L701).
pub fn permanent_workload(count: u32) -> StationWorkload {
    StationWorkload::Permanent {
        count,
        demand: Demand::Exp(Dur::from_hours(5)),
    }
}

impl PoolConfig {
    /// Mutka 1988 Table 4.4 (T:L694–707): stations 0–10 light, 11 medium
    /// (2 permanent jobs), 12 heavy (`heavy_jobs` permanent jobs).
    pub fn table_4_4(
        kind: AllocatorKind,
        heavy_jobs: u32,
        horizon: Time,
        availability: Source,
    ) -> PoolConfig {
        let mut workloads = vec![light_workload(); 11];
        let mut classes = vec![Class::Light; 11];
        workloads.push(permanent_workload(2));
        classes.push(Class::Medium);
        workloads.push(permanent_workload(heavy_jobs));
        classes.push(Class::Heavy);
        PoolConfig {
            workloads,
            classes,
            allocator: AllocatorConfig::default_for(kind),
            sched_interval: Dur::from_mins(10),
            transfer_cost: Dur::from_mins(1),
            horizon,
            availability,
            coordinator: CoordinatorKind::Bare,
            guest_eviction: None,
        }
    }

    /// A large pool made of `groups` copies of the Table 4.4 mix (heavy
    /// station with `heavy_jobs` jobs) — the scaling benchmark.
    pub fn scaled(
        kind: AllocatorKind,
        groups: u32,
        heavy_jobs: u32,
        horizon: Time,
        availability: Source,
    ) -> PoolConfig {
        let one = PoolConfig::table_4_4(kind, heavy_jobs, horizon, availability);
        let mut c = one.clone();
        c.workloads.clear();
        c.classes.clear();
        for _ in 0..groups {
            c.workloads.extend(one.workloads.iter().cloned());
            c.classes.extend(one.classes.iter().copied());
        }
        c
    }
}

/// What one pool simulation produced.
#[derive(Clone, Debug)]
pub struct PoolResult {
    pub accounts: Vec<StationAccount>,
    pub classes: Vec<Class>,
    pub horizon: Time,
    /// Events delivered by the queue.
    pub events: u64,
    pub allocation_passes: u64,
    /// Grants the stations could not use (production coordinator only).
    pub unusable_grants: u64,
    pub completed: u64,
    pub placements: u64,
    pub preemptions: u64,
    pub vacates: u64,
    /// Time with no free host (every host NA or running a job), and the
    /// longest such stretch.
    pub all_busy_total: Dur,
    pub all_busy_longest: Dur,
}

impl PoolResult {
    fn of(&self, c: Class) -> impl Iterator<Item = &StationAccount> {
        self.accounts
            .iter()
            .zip(&self.classes)
            .filter(move |(_, k)| **k == c)
            .map(|(a, _)| a)
    }
    /// Mean of a per-station metric over class `c`.
    pub fn class_mean(&self, c: Class, f: impl Fn(&StationAccount) -> Option<f64>) -> f64 {
        group_mean(self.of(c), f).unwrap_or(f64::NAN)
    }
    /// Fraction of the horizon class `c`'s stations waited (mean).
    pub fn wait_fraction(&self, c: Class) -> f64 {
        let h = self.horizon.as_secs_f64();
        mean(self.of(c).map(|a| a.wait / h)).unwrap_or(f64::NAN)
    }
}

/// Runs one pool simulation with run seed `seed`.
pub fn simulate(cfg: &PoolConfig, seed: u64) -> Result<PoolResult, SimError> {
    let model = Model::new(cfg, seed)?;
    // The coordinator's random choices come from their own stream.
    let rng = substream(seed, 2_000_000);
    let mut coord: Box<dyn Coordinator> = match &cfg.coordinator {
        CoordinatorKind::Bare => Box::new(bare::Bare::new(cfg.allocator.build(), rng)),
        CoordinatorKind::Production(template) => {
            Box::new(production::Production::new(template, cfg, rng)?)
        }
    };
    Ok(model.run(coord.as_mut(), cfg.classes.clone()))
}
