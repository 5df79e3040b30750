//! The home side of a station: HTCondor's access point. Job state lives on
//! the submitting station (Mutka 1988 §5), so everything about this
//! station's own jobs is here:
//!
//! - [`user`]: the user API the CLI calls (submit, q, rm/hold/release,
//!   history, output while running), on TCP with a token and on the
//!   station's user socket; [`identity`]: who it serves and as which Unix
//!   account a job runs;
//! - `as_owner`: all file work on a user's behalf, as that user
//!   ([`crate::userfs`]); `submit_check`: paths checked as the owner
//!   before anything is queued; [`private`]: the spool's modes;
//! - [`schedd`]: the local scheduler, which uses the coordinator's grants
//!   for this station's idle jobs and passes preemptions on;
//! - [`remote`]: the one table of this station's remote jobs (where each
//!   runs or is being placed, lease contact, hosts to avoid); `runs`:
//!   which run of a job is heard (one run's outputs, issue 14);
//! - [`shadow`]: the endpoints a host's starter calls for each of these
//!   jobs (sandbox, output, status), heard only from the station the job
//!   is placed on (`host_caller`);
//! - [`ckpt_store`]: checkpoints received from hosts; [`lease`]: lease
//!   renewals and the monitor that requeues jobs of silent hosts;
//! - [`dagman`]: the DAG manager; [`local_run`]: user processes the home
//!   runs itself as their owner (`universe = local`/`scheduler` jobs, DAG
//!   scripts); [`user_log`]: HTCondor-style user logs; [`recover`]:
//!   start-up recovery of the queue.
//!
//! [`Home`] is the side's state; the node gives it grants and preemptions
//! and takes its part of the station's ad ([`HomePart`]).

mod as_owner;
pub mod ckpt_store;
pub mod claim_reuse;
pub mod dagman;
mod deliver;
pub mod gang;
mod host_caller;
mod http;
pub mod identity;
pub mod job_classes;
mod job_policy;
pub mod lease;
pub mod limits;
pub mod local_run;
pub mod meters;
pub mod private;
pub mod qedit;
pub mod recover;
pub mod remote;
mod runs;
pub mod schedd;
pub mod shadow;
pub mod share;
pub mod spool;
mod start_failures;
mod submit_check;
pub mod summary;
mod timing;
pub mod user;
pub mod user_log;
mod users_view;

use crate::config::StationConfig;
use crate::queue::{JobQueue, QueueError};
use axum::Router;
use axum::routing::get;
use gleaner_proto::job::{JobId, JobStateKind};
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::wire::Demand;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

pub use http::parse_job_id;

/// What the home side puts in the station's ad.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HomePart {
    /// Idle jobs (not being placed) and jobs running elsewhere.
    pub demand: Demand,
    /// The idle jobs grouped into classes for matchmaking.
    pub classes: Vec<JobClass>,
    /// Measured rate of the checkpoints this home received, bytes/s.
    pub transfer_rate: Option<f64>,
}

/// How the home reaches the rest of the pool.
pub struct HomeSetup {
    pub config: Arc<StationConfig>,
    pub name: String,
    /// Base URL others use to reach this station (the shadow URL).
    pub address: String,
    /// Clients of the hosts (over TLS, one per host, each taking only that
    /// host's certificate).
    pub peers: Arc<gleaner_edge::tls::PeerClients>,
}

/// The home side's state, shared by its handlers and loops.
pub struct Home {
    config: Arc<StationConfig>,
    name: String,
    address: String,
    peers: Arc<gleaner_edge::tls::PeerClients>,
    queue: Mutex<JobQueue>,
    spool: PathBuf,
    /// Serialises spool writes, so that appends at an offset are atomic.
    spool_lock: tokio::sync::Mutex<()>,
    /// News for the coordinator (a job submitted, finished or requeued):
    /// wakes the advertise loop early.
    news: Notify,
    /// Wakes the DAG manager, which sleeps while no DAG runs.
    dag_wake: Notify,
    remote: remote::RemoteJobs,
    ckpt: ckpt_store::CkptStore,
    /// When the local scheduler last placed a job (one per interval). An
    /// async lock, held while a grant waits out the interval and picks its
    /// job, so grants from the advertise reply and the events stream are
    /// used one after another and never pick the same job.
    last_placement: tokio::sync::Mutex<Option<Instant>>,
    /// Whom the user API serves (decided by the daemon's uid).
    served: identity::Served,
    /// This station's slot-account prefix: such accounts are guests, never
    /// users ([`identity`]).
    slot_prefix: String,
    /// Jobs whose completion (outputs staged, committed, published) is
    /// under way: one at a time per job (`deliver`).
    completing: Mutex<HashSet<JobId>>,
    /// The job classes, computed once per class key.
    classes: job_classes::ClassCache,
    /// The fair share between this home's users (`share`).
    share: share::ShareBook,
    /// The spool's books and clean-up (`spool`).
    pub spooled: spool::Spool,
    /// The claims of the remote jobs, kept for the next job (claim reuse).
    claims: claim_reuse::ClaimBook,
    /// The running parallel jobs' gang state (`gang`).
    gangs: gang::GangBook,
    /// Counters and histograms for `/metrics`.
    pub meters: meters::HomeMeters,
}

impl Home {
    /// The home over `queue`; its table of remote jobs is reloaded from the
    /// queue's running jobs.
    pub fn new(setup: HomeSetup, mut queue: JobQueue) -> Result<Self, QueueError> {
        let HomeSetup {
            config,
            name,
            address,
            peers,
        } = setup;
        dagman::init(&mut queue)?;
        let slot_prefix = config.isolation.slot_prefix.clone();
        let share_settings = config.share.clone();
        let limits = config.limits.clone();
        // Every submission is held to the per-user limits (`limits`).
        if config.role.submits() {
            queue.set_limits(Some(limits.queue()));
        }
        let remote = remote::RemoteJobs::new(
            config.lease(),
            Duration::from_secs_f64(config.avoid_host_secs.max(0.0)),
        );
        remote.load(&queue.running_placements()?);
        let ckpt = ckpt_store::CkptStore::new(
            config.checkpoint_bytes_per_sec,
            config.max_checkpoint_bytes,
        );
        // Who used the home's nodes lately, as saved before a restart.
        let share = share::ShareBook::new(&share_settings, &queue);
        Ok(Home {
            spool: config.spool_dir(),
            config,
            name,
            address,
            peers,
            queue: Mutex::new(queue),
            spool_lock: tokio::sync::Mutex::new(()),
            news: Notify::new(),
            dag_wake: Notify::new(),
            remote,
            ckpt,
            last_placement: tokio::sync::Mutex::new(None),
            served: identity::Served::detect(),
            slot_prefix,
            completing: Mutex::new(HashSet::new()),
            classes: job_classes::ClassCache::default(),
            share,
            spooled: spool::Spool::new(&limits),
            claims: claim_reuse::ClaimBook::default(),
            gangs: gang::GangBook::default(),
            meters: meters::HomeMeters::default(),
        })
    }

    /// The job queue. A poisoned lock is recovered: the queue's own
    /// transactions keep the database consistent whatever a panicking
    /// holder left behind. Jobs held or removed while it is held go to the
    /// spool's clean-up when it is released ([`spool::QueueGuard`]).
    pub fn queue(&self) -> spool::QueueGuard<'_> {
        spool::QueueGuard::new(
            self.queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            &self.spooled,
        )
    }

    /// The table of this station's remote jobs: where each is placed, hence
    /// which station speaks for it.
    pub fn remote_jobs(&self) -> &remote::RemoteJobs {
        &self.remote
    }

    pub fn spool_for(&self, job: JobId) -> PathBuf {
        self.spool.join(job.to_string())
    }

    /// Notified when the coordinator should hear from this station now.
    pub fn news(&self) -> &Notify {
        &self.news
    }

    /// The home's endpoints (user API, DAGs, shadow, checkpoints, leases).
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .merge(self.user_routes())
            .merge(shadow::router())
            .merge(ckpt_store::router())
            .merge(lease::router())
            .with_state(self.clone())
    }

    /// The user API alone (jobs, history, output, DAGs, whoami): what the
    /// user socket serves. No shadow, checkpoint or lease endpoints.
    pub fn user_router(self: &Arc<Self>) -> Router {
        self.user_routes().with_state(self.clone())
    }

    /// The user API's routes, each behind [`identity::admit`].
    fn user_routes(self: &Arc<Self>) -> Router<Arc<Home>> {
        Router::new()
            .merge(user::router())
            .merge(qedit::router())
            .merge(dagman::router())
            .route("/v1/whoami", get(identity::whoami))
            .route("/v1/users", get(users_view::users))
            .route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                identity::admit,
            ))
    }

    /// Starts the home's loops: the DAG manager (when this station takes
    /// submissions) and the lease monitor.
    pub fn spawn(self: &Arc<Self>, shutdown: &watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
        let mut tasks = Vec::new();
        // Outputs of completions acknowledged before a crash come first.
        let home = self.clone();
        tasks.push(tokio::spawn(async move {
            deliver::finish_pending(&home, crate::clock::now()).await;
        }));
        if self.config.role.submits() {
            tasks.push(tokio::spawn(dagman::run_loop(
                self.clone(),
                shutdown.clone(),
            )));
            // Local and scheduler universe jobs, run here as their owner.
            tasks.push(tokio::spawn(local_run::run_loop(
                self.clone(),
                shutdown.clone(),
            )));
        }
        tasks.push(tokio::spawn(lease::monitor(self.clone(), shutdown.clone())));
        // Running gangs: holds resent at start, then settled every few
        // seconds.
        tasks.push(tokio::spawn(gang::watch(self.clone(), shutdown.clone())));
        // Placements a killed home may have lost the answer to.
        let doubt = recover::in_doubt(self);
        tasks.push(tokio::spawn(recover::settle_in_doubt(self.clone(), doubt)));
        // The spool: swept at start, then cleaned after holds and removals.
        tasks.push(tokio::spawn(spool::run_loop(
            self.clone(),
            shutdown.clone(),
        )));
        // The jobs' own periodic_hold / periodic_release.
        tasks.push(tokio::spawn(job_policy::run_loop(
            self.clone(),
            shutdown.clone(),
        )));
        // Deferred and cron jobs: when they may be matched, and missed
        // windows.
        tasks.push(tokio::spawn(timing::run_loop(
            self.clone(),
            shutdown.clone(),
        )));
        tasks
    }

    /// This side's part of the station's ad.
    pub fn part(&self) -> HomePart {
        let counts = self.queue().count_by_state().unwrap_or_default();
        let count = |k: JobStateKind| {
            counts
                .iter()
                .find(|(s, _)| *s == k)
                .map_or(0, |(_, n)| u32::try_from(*n).unwrap_or(u32::MAX))
        };
        let mut placing = self.remote.placing();
        // A gang's members that wait with it are no demand of their own.
        placing.extend(gang::parked(self));
        // Local jobs run here: no demand for other stations' nodes.
        let (local_idle, local_running) = self.queue().local_counts().unwrap_or_default();
        let demand = Demand {
            idle_jobs: count(JobStateKind::Idle)
                .saturating_sub(local_idle)
                .saturating_sub(u32::try_from(placing.len()).unwrap_or(0)),
            remote_jobs: (count(JobStateKind::Running) + count(JobStateKind::Suspended))
                .saturating_sub(local_running),
        };
        let classes = if self.config.role.submits() {
            let mut q = self.queue();
            let now = crate::clock::now();
            let snap = share::snapshot(self, &q, &placing, now);
            self.share.save_if_due(&mut q, now);
            self.classes
                .idle_classes(&q, &snap, &placing, &self.remote.avoiding(), now)
        } else {
            Vec::new()
        };
        HomePart {
            demand,
            classes,
            transfer_rate: self.ckpt.rate.own(),
        }
    }
}
