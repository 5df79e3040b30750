//! The starter: the execute side of a station.
//!
//! A home station that holds a claim on this host sends a
//! [`PlacementRequest`] (`POST /v1/place`). The starter checks it (owner
//! state, claim, free CPUs, memory and disk), answers at once, and runs the
//! guest asynchronously:
//!
//! 1. a private sandbox `<execute_dir>/<job>-r<run>-<seq>` (mode 0700, owned
//!    by the guest user);
//! 2. the executable and `transfer_input_files` (and `input`) fetched from
//!    the shadow (`GET /v1/shadow/{job}/input/{name}`);
//! 3. the guest started unprivileged with [`GuestLauncher`], in a per-job
//!    cgroup with memory bounds from `request_memory` when a
//!    [`CgroupManager`] is given (otherwise its own process group);
//! 4. stdout/stderr captured to files in the sandbox and streamed to the
//!    shadow while the job runs (`POST .../output/{stream}?offset=N`);
//! 5. on exit, output files uploaded (`PUT .../files/{name}`) and
//!    `completed` reported with the exit code.
//!
//! While it runs, each guest has its own [`EvictionLadder`] with the
//! station's policy. Owner-activity changes arrive on a
//! [`watch::Receiver<OwnerState>`] and are applied to the real process at
//! once: lower priority (Ryu & Hollingsworth L54: the owner strictly first),
//! freeze then vacate after the grace (Mutka 1988 L841), or kill at once
//! (Immediate-Eviction, Mutka 1988 L583). A guest that leaves the host is
//! reported `evicted` with job state `Idle`, so that its home requeues it.
//!
//! Checkpoints (issue #6, [`crate::checkpoint`]): a job that declares
//! `checkpoint_exit_code` gets its latest good checkpoint from home before
//! it starts; when it exits with that code its `transfer_checkpoint_files`
//! go home (after the output written so far) and it is restarted in place;
//! a vacate sends the checkpoint signal first, and `checkpoint_interval`
//! sends it periodically. A lease with the home (`lease_secs` of the
//! placement) is renewed every third of it; when the home cannot be reached
//! for the whole lease, or says the job is no longer ours, the guest is
//! killed at once.
//!
//! A job with `checkpoint_method = criu` ([`Criu`]) runs under a reaping
//! waiter in a sandbox whose path is the same on every station
//! (`criu_sandbox_dir`, locked per job). A vacate and every
//! `checkpoint_interval` dump its process tree; the images and the
//! sandbox's files go home as one bundle (streamed from a file, never held
//! in memory), and the next run, here after a periodic dump or on the next
//! station, is a `criu restore` instead of a start.
//!
//! Open points (documented, not yet done): migration to a chosen
//! destination (a `Migrate` action vacates: the home station picks the
//! next host), and `when_to_transfer_output = ON_EXIT_OR_EVICT`.

use crate::checkpoint::{
    BundleSource, Checkpointer, Criu, Manifest, RateMeter, SelfCheckpoint, SharedBucket,
};
use crate::isolation::{
    CgroupManager, GuestCgroup, GuestLauncher, GuestSpec, GuestUser, IsolationError, MemoryBounds,
    prepare_sandbox,
};
use crate::lease::LeaseRenewal;
use axum::Json;
use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gleaner_core::detector::OwnerState;
use gleaner_core::eviction::{Action, Estimates, EvictionLadder, EvictionPolicy, LadderEvent};
use gleaner_core::linger::MigrationCost;
use gleaner_core::time::Time;
use gleaner_proto::auth::PoolKey;
use gleaner_proto::job::{CheckpointMethod, JobDescription, JobEventKind, JobId, JobState};
use gleaner_proto::wire::{
    ErrorBody, ErrorCode, GuestInfo, JobStatusReport, PROTOCOL_VERSION, PlacementRequest,
    PlacementResponse, RejectReason, Usage, check_version,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// Names of the capture files in the sandbox. They are streamed, never
/// uploaded as output files.
pub const STDOUT_FILE: &str = "_gleaner_stdout";
pub const STDERR_FILE: &str = "_gleaner_stderr";

/// Largest chunk of stdout/stderr sent in one request.
const MAX_CHUNK: usize = 256 * 1024;

/// Default [`StarterConfig::criu_sandbox_dir`].
pub const DEFAULT_CRIU_SANDBOX_DIR: &str = "/var/lib/gleaner-criu";

/// Starter settings.
#[derive(Clone, Debug)]
pub struct StarterConfig {
    /// This station's name (the `host` of status reports and claims).
    pub host: String,
    /// Parent of the guests' sandboxes. Must not be writable by guests.
    pub execute_dir: PathBuf,
    /// CPUs offered to guests (one slot per requested CPU).
    pub cpus: u32,
    /// Memory offered to guests, MiB.
    pub memory_mb: u64,
    /// Free disk kept for the owner in the execute directory, KiB.
    pub reserved_disk_kb: u64,
    /// The eviction policy of every guest on this station.
    pub policy: EvictionPolicy,
    /// Guest user name. When the daemon runs as root: this user, `nobody`
    /// by default. Otherwise guests keep the daemon's identity (a warning
    /// is logged if a name was given).
    pub guest_user: Option<String>,
    /// Start guests in their own PID namespace.
    pub pid_namespace: bool,
    /// How often the capture files are polled for new output.
    pub output_poll: Duration,
    /// Signal sent when a job that declares checkpointing
    /// (`checkpoint_exit_code`) must checkpoint: the hook for the later
    /// checkpoint issue. HTCondor's vanilla universe sends SIGTERM and
    /// expects exit code 85 after a checkpoint.
    pub checkpoint_signal: i32,
    /// How long a checkpointing job may take to exit after the signal on
    /// eviction before it is killed.
    pub checkpoint_grace: Duration,
    /// Checkpoint transfers of this host, bytes per second (0: unlimited).
    pub checkpoint_bytes_per_sec: u64,
    /// This station's base URL, sent with lease renewals.
    pub address: String,
    /// Keep sandboxes after the guest ends (debugging).
    pub keep_sandboxes: bool,
    /// Per-request timeout towards the shadow.
    pub http_timeout: Duration,
    /// Parent of the sandboxes of CRIU jobs. A CRIU image names files by
    /// path, so it must be the same directory on every station of the pool;
    /// must not be writable by guests.
    pub criu_sandbox_dir: PathBuf,
    /// Where running guests are recorded so that a crash leaves none
    /// unfound (guest_records.rs); `None`: not recorded.
    pub guest_records: Option<PathBuf>,
}

impl StarterConfig {
    pub fn new(host: impl Into<String>, execute_dir: impl Into<PathBuf>) -> Self {
        StarterConfig {
            host: host.into(),
            execute_dir: execute_dir.into(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            memory_mb: 1024,
            reserved_disk_kb: 0,
            policy: EvictionPolicy::default(),
            guest_user: None,
            pid_namespace: false,
            output_poll: Duration::from_millis(200),
            checkpoint_signal: libc::SIGTERM,
            checkpoint_grace: Duration::from_secs(10),
            checkpoint_bytes_per_sec: 0,
            address: String::new(),
            keep_sandboxes: false,
            http_timeout: Duration::from_secs(30),
            criu_sandbox_dir: PathBuf::from(DEFAULT_CRIU_SANDBOX_DIR),
            guest_records: None,
        }
    }
}

/// Starter errors.
#[derive(Debug, thiserror::Error)]
pub enum StarterError {
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("HTTP client: {0}")]
    Http(String),
    #[error("invalid file name {0:?}")]
    BadFileName(String),
    #[error("shadow URL {0:?} is not a base URL")]
    BadShadowUrl(String),
}

fn io_err(path: &Path, source: std::io::Error) -> StarterError {
    StarterError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Why a claim id was refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClaimRejected(pub String);

/// Checks the claim id of a placement (the coordinator's grant), so only
/// the grantee can place here.
pub trait ClaimVerifier: Send + Sync {
    fn verify(&self, req: &PlacementRequest, host: &str) -> Result<(), ClaimRejected>;
}

impl<F> ClaimVerifier for F
where
    F: Fn(&PlacementRequest, &str) -> Result<(), ClaimRejected> + Send + Sync,
{
    fn verify(&self, req: &PlacementRequest, host: &str) -> Result<(), ClaimRejected> {
        self(req, host)
    }
}

/// The default verifier: the claim id is a ticket signed with the pool key
/// for this host and the placing home, not expired.
pub struct PoolKeyClaims(pub PoolKey);

impl ClaimVerifier for PoolKeyClaims {
    fn verify(&self, req: &PlacementRequest, host: &str) -> Result<(), ClaimRejected> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let ticket = self
            .0
            .verify_claim(&req.claim_id, host, now)
            .map_err(|e| ClaimRejected(e.to_string()))?;
        if ticket.home != req.home {
            return Err(ClaimRejected(format!(
                "claim was granted to {:?}, not {:?}",
                ticket.home, req.home
            )));
        }
        Ok(())
    }
}

/// Accepts any non-empty claim, with a warning: only for pools without a
/// coordinator-signed claim format (tests, single-station setups).
pub struct AnyNonEmptyClaim;

impl ClaimVerifier for AnyNonEmptyClaim {
    fn verify(&self, req: &PlacementRequest, _host: &str) -> Result<(), ClaimRejected> {
        if req.claim_id.trim().is_empty() {
            return Err(ClaimRejected("empty claim id".into()));
        }
        tracing::warn!(job = %req.job_id, "claim accepted without verification");
        Ok(())
    }
}

/// One guest as listed by `GET /v1/guests`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestListing {
    #[serde(flatten)]
    pub info: GuestInfo,
    pub guest_id: String,
    /// Ladder state: `running`, `lingering`, `suspended`, … (`starting`
    /// while the sandbox is transferred).
    pub state: String,
    #[serde(default)]
    pub pid: Option<u32>,
}

enum Command {
    Vacate(String),
}

struct GuestEntry {
    guest_id: String,
    info: GuestInfo,
    cpus: u32,
    memory_mb: u64,
    state: Mutex<(String, Option<u32>)>,
    cmd: mpsc::UnboundedSender<Command>,
}

impl GuestEntry {
    fn set_state(&self, s: &str, pid: Option<u32>) {
        if let Ok(mut g) = self.state.lock() {
            g.0 = s.to_string();
            if pid.is_some() {
                g.1 = pid;
            }
        }
    }
}

/// The execute side of a station. See the module docs.
pub struct Starter {
    config: StarterConfig,
    token: String,
    verifier: Box<dyn ClaimVerifier>,
    owner: watch::Receiver<OwnerState>,
    cgroups: Option<CgroupManager>,
    user: Option<GuestUser>,
    http: reqwest::Client,
    guests: Mutex<HashMap<JobId, Arc<GuestEntry>>>,
    epoch: Instant,
    seq: AtomicU64,
    draining: AtomicBool,
    /// The station policy's check of a new guest (policy.rs).
    admission: std::sync::OnceLock<Admission>,
    /// Throttles checkpoint transfers of all guests on this host.
    bucket: SharedBucket,
    /// Measured checkpoint transfer rate, for `T_migr`.
    pub(crate) rate: RateMeter,
}

/// Decides whether a job may start here; `Err` explains why not.
pub type Admission = Box<dyn Fn(&JobDescription) -> Result<(), String> + Send + Sync>;

impl Starter {
    /// `token` authenticates the starter at the shadows (a Daemon token);
    /// `owner` is fed by the station's owner monitor.
    pub fn new(
        config: StarterConfig,
        token: impl Into<String>,
        verifier: Box<dyn ClaimVerifier>,
        owner: watch::Receiver<OwnerState>,
        cgroups: Option<CgroupManager>,
    ) -> Result<Self, StarterError> {
        let user = GuestUser::for_daemon(config.guest_user.as_deref())?;
        if user.is_none()
            && let Some(n) = &config.guest_user
        {
            tracing::warn!(user = %n, "not root: guests run as the daemon's user");
        }
        // A guest user must be able to reach its sandbox, or every job
        // would be held ("cannot execute"): say so at start instead.
        if let Some(u) = user
            && let Some((dir, mode)) = crate::isolation::unreachable_by(&config.execute_dir, u)
        {
            return Err(io_err(
                &config.execute_dir,
                std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "guests (uid {}) cannot reach their sandboxes here: {} has mode {mode:o}; \
                         set `execute_dir` to a directory they can reach",
                        u.uid,
                        dir.display()
                    ),
                ),
            ));
        }
        // Guests must not be able to write the sandboxes' parent (see
        // `prepare_sandbox`).
        std::fs::create_dir_all(&config.execute_dir).map_err(|e| io_err(&config.execute_dir, e))?;
        std::fs::set_permissions(&config.execute_dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io_err(&config.execute_dir, e))?;
        if let Some(m) = &cgroups {
            m.ensure_parent()?;
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(config.http_timeout)
            // Names the host in the home's logs (and lets fault-injection
            // tests tell hosts apart behind one proxy).
            .user_agent(format!("gleaner-starter/{}", config.host))
            .build()
            .map_err(|e| StarterError::Http(e.to_string()))?;
        let bucket = SharedBucket::new(config.checkpoint_bytes_per_sec);
        Ok(Starter {
            config,
            token: token.into(),
            verifier,
            owner,
            cgroups,
            user,
            http,
            guests: Mutex::new(HashMap::new()),
            epoch: Instant::now(),
            seq: AtomicU64::new(0),
            admission: std::sync::OnceLock::new(),
            draining: AtomicBool::new(false),
            bucket,
            rate: RateMeter::default(),
        })
    }

    pub fn config(&self) -> &StarterConfig {
        &self.config
    }

    /// Installs the station policy's admission check (once).
    pub fn set_admission(&self, check: Admission) {
        let _ = self.admission.set(check);
    }

    /// The guests' cgroups, when the station has them.
    pub fn cgroups(&self) -> Option<&CgroupManager> {
        self.cgroups.as_ref()
    }

    /// Refuse new placements (running guests are left alone).
    pub fn set_draining(&self, on: bool) {
        self.draining.store(on, Ordering::SeqCst);
    }

    fn now(&self) -> Time {
        Time::from_micros(u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    fn instant_of(&self, t: Time) -> Instant {
        self.epoch + Duration::from_micros(t.as_micros())
    }

    fn lock_guests(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, Arc<GuestEntry>>> {
        // A poisoned map is still consistent: entries are inserted/removed whole.
        self.guests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Guests on this host, for the station ad's `running_guests`.
    pub fn running_guests(&self) -> Vec<GuestInfo> {
        self.listing().into_iter().map(|l| l.info).collect()
    }

    /// Guests with their ladder state and pid.
    pub fn listing(&self) -> Vec<GuestListing> {
        let mut v: Vec<GuestListing> = self
            .lock_guests()
            .values()
            .map(|g| {
                let (state, pid) = g
                    .state
                    .lock()
                    .map(|s| s.clone())
                    .unwrap_or_else(|p| p.into_inner().clone());
                let mut info = g.info.clone();
                info.suspended = state == "suspended";
                GuestListing {
                    info,
                    guest_id: g.guest_id.clone(),
                    state,
                    pid,
                }
            })
            .collect();
        v.sort_by_key(|l| l.info.job);
        v
    }

    /// CPUs taken by guests.
    pub fn used_cpus(&self) -> u32 {
        self.lock_guests().values().map(|g| g.cpus).sum()
    }

    /// Memory the guests requested, MiB.
    pub fn used_memory_mb(&self) -> u64 {
        self.lock_guests().values().map(|g| g.memory_mb).sum()
    }

    /// Ask a guest to leave (checkpoint signal if it checkpoints, then
    /// kill); it is reported `evicted`. False if no such guest.
    pub fn vacate(&self, job: JobId, reason: &str) -> bool {
        match self.lock_guests().get(&job) {
            Some(g) => g.cmd.send(Command::Vacate(reason.to_string())).is_ok(),
            None => false,
        }
    }

    /// Vacate every guest (shutdown).
    pub fn vacate_all(&self, reason: &str) {
        for g in self.lock_guests().values() {
            let _ = g.cmd.send(Command::Vacate(reason.to_string()));
        }
    }

    fn reject(reason: RejectReason, message: impl Into<String>) -> PlacementResponse {
        let message = message.into();
        tracing::info!(?reason, %message, "placement rejected");
        PlacementResponse::Rejected { reason, message }
    }

    /// Decide a placement; on acceptance the guest starts in the background
    /// (needs a Tokio runtime).
    pub fn place(self: &Arc<Self>, req: PlacementRequest) -> PlacementResponse {
        if self.draining.load(Ordering::SeqCst) {
            return Self::reject(RejectReason::Draining, "station is draining");
        }
        if let Err(e) = self.verifier.verify(&req, &self.config.host) {
            return Self::reject(RejectReason::BadClaim, e.0);
        }
        // Only lingering policies use a host whose owner is active (Ryu &
        // Hollingsworth L238, "semi-available" nodes); the others would
        // evict the guest at once (Mutka 1988 L583).
        let owner = *self.owner.borrow();
        if owner == OwnerState::Na && !self.config.policy.lingers() {
            return Self::reject(RejectReason::OwnerActive, "the owner is using this station");
        }
        if let Err(msg) = validate_names(&req.description) {
            return Self::reject(RejectReason::RequirementsUnmet, msg);
        }
        if req.description.checkpoint_method == CheckpointMethod::Criu
            && !crate::checkpoint::criu_status().available()
        {
            return Self::reject(
                RejectReason::RequirementsUnmet,
                "the job is checkpointed with CRIU and this host has no working CRIU",
            );
        }
        if let Some(check) = self.admission.get()
            && let Err(msg) = check(&req.description)
        {
            return Self::reject(RejectReason::RequirementsUnmet, msg);
        }
        let cpus = req.description.request_cpus.max(1);
        let mem = req.description.request_memory_mb.unwrap_or(0);
        if let Some(kb) = req.description.request_disk_kb {
            let free = disk_free_kb(&self.config.execute_dir);
            if free < kb.saturating_add(self.config.reserved_disk_kb) {
                return Self::reject(
                    RejectReason::NoResources,
                    format!("{kb} KiB of disk requested, {free} KiB free"),
                );
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let entry = {
            let mut guests = self.lock_guests();
            if let Some(g) = guests.get(&req.job_id) {
                // A retried placement of a job already here: same answer.
                if g.info.home == req.home {
                    return PlacementResponse::Accepted {
                        guest_id: g.guest_id.clone(),
                    };
                }
                return Self::reject(RejectReason::NoResources, "job already runs here");
            }
            let used_cpus: u32 = guests.values().map(|g| g.cpus).sum();
            let used_mem: u64 = guests.values().map(|g| g.memory_mb).sum();
            if used_cpus + cpus > self.config.cpus {
                return Self::reject(
                    RejectReason::NoResources,
                    format!(
                        "{cpus} CPUs requested, {} free",
                        self.config.cpus.saturating_sub(used_cpus)
                    ),
                );
            }
            if used_mem + mem > self.config.memory_mb {
                return Self::reject(
                    RejectReason::NoResources,
                    format!(
                        "{mem} MiB requested, {} MiB free",
                        self.config.memory_mb.saturating_sub(used_mem)
                    ),
                );
            }
            let seq = self.seq.fetch_add(1, Ordering::SeqCst);
            let guest_id = format!("{}-r{}-{seq}", req.job_id, req.run_count);
            let entry = Arc::new(GuestEntry {
                guest_id,
                info: GuestInfo {
                    job: req.job_id,
                    home: req.home.clone(),
                    owner: req.description.owner.clone(),
                    since: self.now(),
                    suspended: false,
                    concurrency_limits: req.description.concurrency_limits.clone(),
                },
                cpus,
                memory_mb: mem,
                state: Mutex::new(("starting".to_string(), None)),
                cmd: tx,
            });
            guests.insert(req.job_id, entry.clone());
            entry
        };
        tracing::info!(job = %req.job_id, guest = %entry.guest_id, home = %req.home, "placement accepted");
        let guest_id = entry.guest_id.clone();
        let me = self.clone();
        tokio::spawn(async move { me.supervise(entry, req, rx).await });
        PlacementResponse::Accepted { guest_id }
    }

    async fn supervise(
        self: Arc<Self>,
        entry: Arc<GuestEntry>,
        req: PlacementRequest,
        mut rx: mpsc::UnboundedReceiver<Command>,
    ) {
        let (rep_tx, rep_rx) = mpsc::unbounded_channel();
        let reporter = tokio::spawn(report_loop(
            self.http.clone(),
            self.token.clone(),
            req.shadow.clone(),
            req.job_id,
            rep_rx,
            req.lease_secs.map_or(Duration::ZERO, Duration::from_secs),
        ));
        let criu = (req.description.checkpoint_method == CheckpointMethod::Criu).then(|| Criu {
            images: self
                .config
                .execute_dir
                .join(format!("{}.criu", entry.guest_id)),
            user: self.user,
        });
        // A CRIU job's sandbox has one path pool-wide (its images name
        // files by path), held under a lock so that a new run of the job on
        // this machine waits for the old one's cleanup.
        let (sandbox, _sandbox_lock) = if criu.is_some() {
            let dir = self
                .config
                .criu_sandbox_dir
                .join(criu_sandbox_name(&req.home, req.job_id));
            match lock_sandbox(&self.config.criu_sandbox_dir, &dir).await {
                Ok(l) => {
                    // Whatever is there was left by a run that died (its
                    // station was killed): this run starts clean.
                    if let Err(e) = std::fs::remove_dir_all(&dir)
                        && e.kind() != std::io::ErrorKind::NotFound
                    {
                        tracing::warn!(path = %dir.display(), error = %e, "cannot clear a stale CRIU sandbox");
                    }
                    (dir, Some(l))
                }
                Err(e) => {
                    tracing::warn!(job = %req.job_id, error = %e, "CRIU sandbox busy");
                    let _ = rep_tx.send(JobStatusReport {
                        protocol: PROTOCOL_VERSION,
                        job_id: req.job_id,
                        host: self.config.host.clone(),
                        event: JobEventKind::Evicted,
                        state: JobState::Idle,
                        at: self.now(),
                        detail: format!("host error: {e}"),
                        usage: None,
                    });
                    drop(rep_tx);
                    let _ = reporter.await;
                    self.lock_guests().remove(&req.job_id);
                    return;
                }
            }
        } else {
            (self.config.execute_dir.join(&entry.guest_id), None)
        };
        let (lease_tx, lease_rx) = watch::channel(None);
        let lease = req.lease_secs.filter(|l| *l > 0).map(|l| {
            tokio::spawn(lease_loop(
                self.http.clone(),
                self.token.clone(),
                req.shadow.clone(),
                req.job_id,
                LeaseRenewal {
                    host: self.config.host.clone(),
                    host_address: self.config.address.clone(),
                    guest_id: entry.guest_id.clone(),
                },
                Duration::from_secs(l),
                lease_tx,
            ))
        });
        let run = GuestRun {
            starter: &self,
            entry: &entry,
            req: &req,
            sandbox: sandbox.clone(),
            reports: rep_tx,
            ckpt: SelfCheckpoint::for_job(&req.description).filter(|_| criu.is_none()),
            criu: criu.clone(),
            lease: lease_rx,
            base_lens: Mutex::new((0, 0)),
        };
        run.run(&mut rx).await;
        drop(run);
        if let Some(l) = lease {
            l.abort();
        }
        // Every report sent before the slot is freed, so that a new
        // placement of the same job never races its old report.
        let _ = reporter.await;
        let mut leftovers = vec![sandbox];
        if let Some(c) = &criu {
            leftovers.push(c.images.clone());
        }
        for dir in leftovers {
            if !self.config.keep_sandboxes
                && let Err(e) = std::fs::remove_dir_all(&dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(path = %dir.display(), error = %e, "cannot remove sandbox");
            }
        }
        self.lock_guests().remove(&req.job_id);
    }
}

/// Directory name of a CRIU job's sandbox: the home and the job id, with
/// anything but `[A-Za-z0-9._-]` replaced.
fn criu_sandbox_name(home: &str, job: JobId) -> String {
    let clean: String = home
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{clean}-{job}")
}

/// Takes the lock of a CRIU sandbox (`<dir>.lock`, flock), waiting up to
/// 30 s for another run of the same job on this machine to finish its
/// cleanup. The parent is created root-owned and must not be writable by
/// anyone else: guests must not be able to plant files or links there.
async fn lock_sandbox(parent: &Path, dir: &Path) -> Result<File, StarterError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new()
        .mode(0o755)
        .recursive(true)
        .create(parent)
    {
        Ok(()) => {}
        Err(e) => return Err(io_err(parent, e)),
    }
    let md = std::fs::symlink_metadata(parent).map_err(|e| io_err(parent, e))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !md.is_dir() || md.uid() != me || md.mode() & 0o022 != 0 {
        return Err(io_err(
            parent,
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "must be a directory owned by the daemon and writable only by it",
            ),
        ));
    }
    let lock_path = dir.with_extension("lock");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&lock_path)
        .map_err(|e| io_err(&lock_path, e))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&f),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        } == 0
        {
            return Ok(f);
        }
        if Instant::now() > deadline {
            return Err(io_err(
                &lock_path,
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "another run of this job still holds its sandbox",
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Refuses file names that could leave the sandbox.
fn validate_names(d: &JobDescription) -> Result<(), String> {
    let mut names: Vec<&str> = d.transfer_input_files.iter().map(String::as_str).collect();
    if let Some(i) = &d.input {
        names.push(i);
    }
    if let Some(o) = &d.transfer_output_files {
        names.extend(o.iter().map(String::as_str));
    }
    if d.transfer_executable {
        names.push(&d.executable);
    }
    for n in names {
        local_name(n).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The sandbox-relative name of a transferred file: its last component, as
/// HTCondor places input files flat in the scratch directory.
fn local_name(name: &str) -> Result<String, StarterError> {
    let base = name.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    if base.is_empty() || base == "." || base == ".." || base.contains('\0') {
        return Err(StarterError::BadFileName(name.to_string()));
    }
    if base == STDOUT_FILE || base == STDERR_FILE {
        return Err(StarterError::BadFileName(name.to_string()));
    }
    Ok(base.to_string())
}

fn disk_free_kb(dir: &Path) -> u64 {
    match nix::sys::statvfs::statvfs(dir) {
        Ok(s) => s.blocks_available().saturating_mul(s.fragment_size()) / 1024,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "statvfs failed");
            0
        }
    }
}

/// Builds `<base>/<segments…>`, each segment percent-encoded.
fn shadow_url(base: &str, segments: &[&str]) -> Result<reqwest::Url, StarterError> {
    let mut u =
        reqwest::Url::parse(base).map_err(|_| StarterError::BadShadowUrl(base.to_string()))?;
    u.path_segments_mut()
        .map_err(|_| StarterError::BadShadowUrl(base.to_string()))?
        .pop_if_empty()
        .extend(segments);
    Ok(u)
}

/// Sends status reports in order, retrying each with backoff, so that
/// the guest's reactions are never delayed by the network.
async fn report_loop(
    http: reqwest::Client,
    token: String,
    shadow: String,
    job: JobId,
    mut rx: mpsc::UnboundedReceiver<JobStatusReport>,
    patience: Duration,
) {
    let job_s = job.to_string();
    let url = match shadow_url(&shadow, &["v1", "jobs", &job_s, "status"]) {
        Ok(u) => u,
        Err(e) => {
            tracing::error!(%job, error = %e, "cannot report status");
            return;
        }
    };
    while let Some(rep) = rx.recv().await {
        let mut delay = Duration::from_millis(100);
        // With a lease, keep trying for as long as the home would wait for
        // us: a short network cut must not lose a report.
        let until = Instant::now() + patience;
        for attempt in 1.. {
            if attempt > 8 && Instant::now() > until {
                tracing::warn!(%job, event = ?rep.event, "status report given up");
                break;
            }
            let r = http
                .post(url.clone())
                .bearer_auth(&token)
                .json(&rep)
                .send()
                .await;
            match r {
                Ok(resp) if resp.status().is_success() => break,
                // The shadow refused the report (e.g. an illegal state
                // transition); resending will not change its mind.
                Ok(resp) if resp.status().is_client_error() => {
                    tracing::warn!(%job, status = %resp.status(), event = ?rep.event, "shadow refused status report");
                    break;
                }
                Ok(resp) => {
                    tracing::warn!(%job, status = %resp.status(), attempt, "status report failed")
                }
                Err(e) => tracing::warn!(%job, error = %e, attempt, "status report failed"),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}

/// Renews the lease every third of it. Sends `Some(why)` when the home
/// cannot be reached for the whole lease, or when it says the job is no
/// longer this host's to run: the guest must then die, so that the run the
/// home starts elsewhere is the only one.
async fn lease_loop(
    http: reqwest::Client,
    token: String,
    shadow: String,
    job: JobId,
    renewal: LeaseRenewal,
    lease: Duration,
    lost: watch::Sender<Option<String>>,
) {
    let job_s = job.to_string();
    let Ok(url) = shadow_url(&shadow, &["v1", "shadow", &job_s, "lease"]) else {
        return;
    };
    let period = (lease / 3).max(Duration::from_millis(100));
    let mut last_ok = Instant::now();
    loop {
        let r = http
            .post(url.clone())
            .bearer_auth(&token)
            .timeout(period)
            .json(&renewal)
            .send()
            .await;
        match r {
            Ok(resp) if resp.status().is_success() => last_ok = Instant::now(),
            Ok(resp)
                if resp.status() == StatusCode::CONFLICT
                    || resp.status() == StatusCode::NOT_FOUND =>
            {
                tracing::warn!(%job, status = %resp.status(), "home no longer wants this run");
                let _ = lost.send(Some("lease revoked by the home station".into()));
                return;
            }
            Ok(resp) => tracing::debug!(%job, status = %resp.status(), "lease renewal failed"),
            Err(e) => tracing::debug!(%job, error = %e, "lease renewal failed"),
        }
        if last_ok.elapsed() >= lease {
            tracing::warn!(%job, secs = lease.as_secs_f64(), "home unreachable for the lease: killing the guest");
            let _ = lost.send(Some(format!(
                "home unreachable for {:.0} s (lease expired)",
                lease.as_secs_f64()
            )));
            return;
        }
        let next = (last_ok + lease).min(Instant::now() + period);
        tokio::time::sleep_until(next.into()).await;
    }
}

/// How a run ended.
enum Outcome {
    Exited(i32),
    Evicted(String),
    Held(String),
}

/// Why an input file did not arrive.
enum FetchError {
    /// The home is unreachable or failing: try again elsewhere or later.
    Transient(String),
    /// The file is missing, refused or cannot be written: the user must act.
    Permanent(String),
}

/// The real process behind a guest: its cgroup, or its process group.
struct Control {
    pgid: i32,
    cgroup: Option<GuestCgroup>,
    /// Stopped with SIGSTOP (no freezer, or the freezer failed).
    stopped_by_signal: bool,
    frozen: bool,
    checkpoint_signal: i32,
}

impl Control {
    /// Every pid of the guest.
    fn pids(&self) -> Vec<i32> {
        if let Some(g) = &self.cgroup
            && let Ok(p) = g.pids()
        {
            return p;
        }
        pgroup_members(self.pgid)
    }

    fn signal_all(&self, sig: i32) {
        let Ok(sig) = nix::sys::signal::Signal::try_from(sig) else {
            return;
        };
        if self.cgroup.is_some() {
            for pid in self.pids() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
            }
        }
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pgid), sig);
    }

    /// Strict low priority (Ryu & Hollingsworth L54) or back to normal.
    fn set_idle(&self, idle: bool) {
        if let Some(g) = &self.cgroup
            && let Err(e) = g.set_idle(idle)
        {
            tracing::warn!(error = %e, "cgroup idle setting failed; per-task only");
        }
        // Per-task SCHED_IDLE as well: the second line of defence when the
        // cpu controller is missing (isolation/launch.rs).
        let policy = if idle {
            libc::SCHED_IDLE
        } else {
            libc::SCHED_OTHER
        };
        for pid in self.pids() {
            for tid in threads_of(pid) {
                let p = libc::sched_param { sched_priority: 0 };
                // SAFETY: plain syscall on a tid with a valid param struct.
                let r = unsafe { libc::sched_setscheduler(tid, policy, &p) };
                if r != 0 {
                    tracing::debug!(tid, idle, error = %std::io::Error::last_os_error(), "sched_setscheduler");
                }
            }
        }
    }

    /// Stop the guest: the freezer, else SIGSTOP (Mutka 1988 L841 "stops").
    fn suspend(&mut self) {
        if let Some(g) = &self.cgroup {
            match g.freeze() {
                Ok(()) => {
                    self.frozen = true;
                    return;
                }
                Err(e) => tracing::warn!(error = %e, "freeze failed; using SIGSTOP"),
            }
        }
        self.signal_all(libc::SIGSTOP);
        self.stopped_by_signal = true;
    }

    fn resume(&mut self) {
        if self.frozen
            && let Some(g) = &self.cgroup
        {
            if let Err(e) = g.thaw() {
                tracing::warn!(error = %e, "thaw failed");
            }
            self.frozen = false;
        }
        if self.stopped_by_signal {
            self.signal_all(libc::SIGCONT);
            self.stopped_by_signal = false;
        }
    }

    /// Checkpoint hook: the job's checkpoint signal (full checkpointing is
    /// a later issue).
    fn checkpoint_signal(&self) {
        self.signal_all(self.checkpoint_signal);
    }

    fn kill(&self) {
        if let Some(g) = &self.cgroup
            && let Err(e) = g.kill()
        {
            tracing::warn!(error = %e, "cgroup kill failed; signalling the group");
        }
        self.signal_all(libc::SIGKILL);
    }
}

/// Members of a process group, from /proc.
fn pgroup_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| crate::host::procs::proc_stat(pid).is_some_and(|st| st.pgrp == pgid))
        .collect()
}

fn threads_of(pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    if v.is_empty() {
        v.push(pid);
    }
    v
}

/// Kills the guest and removes its cgroup whatever happens to the
/// supervising task (error, panic, runtime shutdown).
struct KillOnDrop {
    pgid: Option<i32>,
    cgroup: Option<GuestCgroup>,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(g) = &self.cgroup {
            if let Err(e) = g.kill() {
                tracing::warn!(error = %e, "cleanup: cgroup kill failed");
            }
            if let Err(e) = g.remove() {
                tracing::warn!(error = %e, "cleanup: cgroup removal failed");
            }
        }
        if let Some(p) = self.pgid {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// One stream's state: offset acknowledged by the shadow.
struct OutputStream {
    name: &'static str,
    file: File,
    /// Stream offset of the capture file's first byte (the output length
    /// of the restored checkpoint).
    base: u64,
    acked: u64,
    /// `acked`, for the checkpoint code to wait on.
    shared: Arc<AtomicU64>,
    url: reqwest::Url,
}

impl OutputStream {
    /// Sends what the shadow lacks. Returns true when it has everything
    /// written so far.
    async fn pump(&mut self, http: &reqwest::Client, token: &str) -> bool {
        loop {
            let len = self.base + self.file.metadata().map_or(0, |m| m.len());
            if self.acked >= len {
                return true;
            }
            let n = usize::try_from(len - self.acked)
                .unwrap_or(MAX_CHUNK)
                .min(MAX_CHUNK);
            let mut buf = vec![0u8; n];
            let got = match self.file.read_at(&mut buf, self.acked - self.base) {
                Ok(g) => g,
                Err(e) => {
                    tracing::warn!(stream = self.name, error = %e, "cannot read capture file");
                    return false;
                }
            };
            if got == 0 {
                return true;
            }
            buf.truncate(got);
            let mut url = self.url.clone();
            url.query_pairs_mut()
                .append_pair("offset", &self.acked.to_string());
            let r = http
                .post(url)
                .bearer_auth(token)
                .header("content-type", "application/octet-stream")
                .body(buf)
                .send()
                .await;
            match r {
                Ok(resp) if resp.status().is_success() => {
                    self.acked += got as u64;
                    self.shared.store(self.acked, Ordering::SeqCst);
                }
                Ok(resp) if resp.status() == StatusCode::CONFLICT => {
                    // The shadow has less than we thought (e.g. it restarted
                    // without its file): resend from the start; the endpoint
                    // is idempotent, so nothing is duplicated.
                    tracing::warn!(
                        stream = self.name,
                        offset = self.acked,
                        "output gap; resending from the start of this run"
                    );
                    self.acked = self.base;
                    return false;
                }
                Ok(resp) => {
                    tracing::warn!(stream = self.name, status = %resp.status(), "output chunk refused");
                    return false;
                }
                Err(e) => {
                    tracing::warn!(stream = self.name, error = %e, "output chunk failed");
                    return false;
                }
            }
        }
    }
}

/// Polls the capture files and streams them until told to finish; then
/// flushes the rest (bounded retries).
async fn stream_loop(
    http: reqwest::Client,
    token: String,
    mut streams: Vec<OutputStream>,
    poll: Duration,
    mut finish: watch::Receiver<bool>,
    patience: Duration,
) {
    loop {
        for s in &mut streams {
            s.pump(&http, &token).await;
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = finish.changed() => break,
        }
    }
    let mut delay = Duration::from_millis(100);
    let until = Instant::now() + patience;
    for attempt in 0.. {
        if attempt >= 10 && Instant::now() > until {
            break;
        }
        let mut done = true;
        for s in &mut streams {
            done &= s.pump(&http, &token).await;
        }
        if done {
            return;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
    tracing::warn!("output streams not fully delivered");
}

/// Metadata of a sandbox file, to find new or changed ones.
type Snapshot = BTreeMap<String, (u64, i64, i64)>;

fn snapshot(dir: &Path) -> Snapshot {
    let mut m = Snapshot::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if let (Some(n), Ok(md)) = (e.file_name().to_str(), e.metadata())
                && md.is_file()
            {
                m.insert(n.to_string(), (md.len(), md.mtime(), md.mtime_nsec()));
            }
        }
    }
    m
}

/// Opens a sandbox file for upload without following a symlink the guest
/// may have planted, and refuses hard links (a guest could link a file it
/// cannot read, and the daemon would send it home).
fn open_output(path: &Path) -> Result<Option<File>, std::io::Error> {
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let md = f.metadata()?;
    if !md.is_file() || md.nlink() != 1 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "not a plain file with one link",
        ));
    }
    Ok(Some(f))
}

struct GuestRun<'a> {
    starter: &'a Arc<Starter>,
    entry: &'a Arc<GuestEntry>,
    req: &'a PlacementRequest,
    sandbox: PathBuf,
    reports: mpsc::UnboundedSender<JobStatusReport>,
    /// The self-checkpointing backend, if the job declares it.
    ckpt: Option<SelfCheckpoint>,
    /// The CRIU backend, if the job asks for it (then `ckpt` is `None`).
    criu: Option<Criu>,
    /// Becomes `Some(why)` when the lease with the home is lost.
    lease: watch::Receiver<Option<String>>,
    /// stdout/stderr lengths at the restored checkpoint: this run's
    /// output continues from there.
    base_lens: Mutex<(u64, u64)>,
}

impl GuestRun<'_> {
    fn base(&self) -> (u64, u64) {
        self.base_lens.lock().map_or((0, 0), |b| *b)
    }

    fn report(&self, event: JobEventKind, state: JobState, detail: impl Into<String>) {
        self.report_usage(event, state, detail, None);
    }

    fn report_usage(
        &self,
        event: JobEventKind,
        state: JobState,
        detail: impl Into<String>,
        usage: Option<Usage>,
    ) {
        let detail = detail.into();
        tracing::info!(job = %self.req.job_id, ?event, %detail, "guest event");
        let _ = self.reports.send(JobStatusReport {
            protocol: PROTOCOL_VERSION,
            job_id: self.req.job_id,
            host: self.starter.config.host.clone(),
            event,
            state,
            at: self.starter.now(),
            detail,
            usage,
        });
    }

    fn url(&self, segs: &[&str]) -> Result<reqwest::Url, StarterError> {
        let job = self.req.job_id.to_string();
        let mut all = vec!["v1", "shadow", job.as_str()];
        all.extend_from_slice(segs);
        shadow_url(&self.req.shadow, &all)
    }

    async fn run(&self, rx: &mut mpsc::UnboundedReceiver<Command>) {
        match self.execute(rx).await {
            Ok(Outcome::Exited(code)) => {
                // Completed is reported by `execute` after the uploads.
                tracing::debug!(job = %self.req.job_id, code, "guest done");
            }
            Ok(Outcome::Evicted(why)) => {
                self.report(JobEventKind::Evicted, JobState::Idle, why);
            }
            Ok(Outcome::Held(why)) => {
                self.report(
                    JobEventKind::Held,
                    JobState::Held {
                        reason: why.clone(),
                    },
                    why,
                );
            }
            // A host-side failure is not the job's fault: back to the queue.
            Err(e) => {
                tracing::error!(job = %self.req.job_id, error = %e, "guest failed on this host");
                self.report(
                    JobEventKind::Evicted,
                    JobState::Idle,
                    format!("host error: {e}"),
                );
            }
        }
    }

    /// Fetches one file from the shadow into the sandbox.
    /// Fetches an input file from the home's shadow into the sandbox. An
    /// unreachable or failing home is [`FetchError::Transient`]: the job goes
    /// back to its home's queue, not on hold, since nothing is wrong with it.
    async fn fetch(&self, name: &str, mode: u32) -> Result<PathBuf, FetchError> {
        let local = local_name(name).map_err(|e| FetchError::Permanent(e.to_string()))?;
        let url = self
            .url(&["input", name])
            .map_err(|e| FetchError::Permanent(e.to_string()))?;
        let resp = self
            .starter
            .http
            .get(url)
            .bearer_auth(&self.starter.token)
            .send()
            .await
            .map_err(|e| FetchError::Transient(format!("cannot fetch {name:?}: {e}")))?;
        let status = resp.status();
        if !status.is_success() {
            let msg = format!("cannot fetch {name:?}: shadow answered {status}");
            return Err(if status.is_server_error() {
                FetchError::Transient(msg)
            } else {
                FetchError::Permanent(msg)
            });
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| FetchError::Transient(format!("cannot fetch {name:?}: {e}")))?;
        let path = self.sandbox.join(&local);
        let user = self.starter.user;
        let p = path.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            // create_new + O_NOFOLLOW: never write through a planted link.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .mode(mode)
                .open(&p)?;
            std::io::Write::write_all(&mut f, &bytes)?;
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
            if let Some(u) = user {
                std::os::unix::fs::fchown(&f, Some(u.uid), Some(u.gid))?;
            }
            Ok(())
        })
        .await
        .map_err(|e| FetchError::Permanent(e.to_string()))?
        .map_err(|e| FetchError::Permanent(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }

    async fn execute(
        &self,
        rx: &mut mpsc::UnboundedReceiver<Command>,
    ) -> Result<Outcome, StarterError> {
        let d = &self.req.description;
        prepare_sandbox(&self.sandbox, self.starter.user)?;

        // --- input transfer -------------------------------------------
        let program = if d.transfer_executable {
            match self.fetch(&d.executable, 0o755).await {
                Ok(p) => p,
                Err(FetchError::Transient(e)) => {
                    return Ok(Outcome::Evicted(format!("executable: {e}")));
                }
                Err(FetchError::Permanent(e)) => {
                    return Ok(Outcome::Held(format!("executable: {e}")));
                }
            }
        } else {
            let p = PathBuf::from(&d.executable);
            if !p.is_absolute() || !p.is_file() {
                return Ok(Outcome::Held(format!(
                    "executable {:?} not found on {}",
                    d.executable, self.starter.config.host
                )));
            }
            p
        };
        let mut inputs: Vec<&String> = d.transfer_input_files.iter().collect();
        if let Some(i) = &d.input
            && !inputs.contains(&i)
        {
            inputs.push(i);
        }
        for name in inputs {
            match self.fetch(name, 0o644).await {
                Ok(_) => {}
                Err(FetchError::Transient(e)) => {
                    return Ok(Outcome::Evicted(format!("input transfer interrupted: {e}")));
                }
                Err(FetchError::Permanent(e)) => {
                    return Ok(Outcome::Held(format!("input transfer failed: {e}")));
                }
            }
        }
        if let Ok(Command::Vacate(why)) = rx.try_recv() {
            return Ok(Outcome::Evicted(why));
        }
        // --- checkpoint restore: the latest good one, from home ---------
        let mut seq = 0u64;
        let mut restored_bytes = None;
        if let Some(c) = &self.criu {
            // The image directory belongs to the guest user (CRIU runs as
            // it) but lies outside the sandbox.
            prepare_sandbox(&c.images, self.starter.user)?;
            c.clear().map_err(|e| StarterError::Http(e.to_string()))?;
        }
        if self.ckpt.is_some() || self.criu.is_some() {
            match self.restore_checkpoint().await {
                Ok(Some(m)) => {
                    seq = m.seq;
                    restored_bytes = Some(m.payload_bytes());
                    if let Ok(mut b) = self.base_lens.lock() {
                        *b = (m.stdout_len, m.stderr_len);
                    }
                }
                Ok(None) => {}
                // Not the job's fault: back to the queue, try elsewhere.
                Err(e) => return Err(StarterError::Http(format!("checkpoint restore: {e}"))),
            }
        }
        let base = self.base();
        let before = snapshot(&self.sandbox);

        // --- isolation ----------------------------------------------------
        // Declared before the guard: the record goes after the kill.
        let mut record = crate::host::guest_records::GuestTracker::new(
            self.starter.config.guest_records.as_deref(),
            &self.entry.guest_id,
            self.req.job_id,
        );
        let mut guard = KillOnDrop {
            pgid: None,
            cgroup: None,
        };
        let cgroup = match &self.starter.cgroups {
            Some(m) => {
                let g = m.create(&self.entry.guest_id)?;
                guard.cgroup = Some(g.clone());
                if let Some(mb) = d.request_memory_mb {
                    let bytes = mb.saturating_mul(1024 * 1024);
                    // Soft bound at the request, hard bound 25 % above it:
                    // guest pages are reclaimed first (Linger-Longer spec
                    // §1.2 L142) without killing a job that overshoots a bit.
                    g.set_memory(MemoryBounds {
                        high: Some(bytes),
                        max: Some(bytes.saturating_add(bytes / 4)),
                    })?;
                }
                Some(g)
            }
            None => None,
        };

        // --- the ladder decides how the guest starts ----------------------
        let mut owner = self.starter.owner.clone();
        let owner_active = *owner.borrow_and_update() == OwnerState::Na;
        let mut ladder = EvictionLadder::new(self.starter.config.policy, self.starter.now());
        // T_migr from this host's measured rate, else the pool's (issue #6).
        let rate = self.starter.rate.get();
        if let Some(e) =
            crate::host::transfer_rate::initial_estimates(rate, restored_bytes, ladder.estimates())
        {
            ladder.handle(self.starter.now(), LadderEvent::Estimates(e));
        }
        let first = ladder.on_placed(self.starter.now(), owner_active);
        if first.iter().any(|a| a.leaves_node()) {
            return Ok(Outcome::Evicted("owner active at start".into()));
        }
        // Never a moment at normal priority while the owner is active.
        let sched_idle = owner_active || first.contains(&Action::LowerPriority);

        let out_path = self.sandbox.join(STDOUT_FILE);
        let err_path = self.sandbox.join(STDERR_FILE);
        let (out_w, out_r) = capture_file(&out_path, self.starter.user)?;
        let (err_w, err_r) = capture_file(&err_path, self.starter.user)?;
        let mut env: BTreeMap<OsString, OsString> = BTreeMap::new();
        env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
        env.insert("HOME".into(), self.sandbox.clone().into_os_string());
        env.insert("TMPDIR".into(), self.sandbox.clone().into_os_string());
        env.insert(
            "_GLEANER_SCRATCH_DIR".into(),
            self.sandbox.clone().into_os_string(),
        );
        env.insert("_GLEANER_JOB_ID".into(), self.req.job_id.to_string().into());
        for (k, v) in &d.environment {
            env.insert(k.into(), v.into());
        }
        let started = Instant::now();
        let checkpoint_exit = self.ckpt.as_ref().map(|c| c.exit_code);
        let ckpt_interval = d
            .checkpoint_interval_secs
            .filter(|_| self.ckpt.is_some() || self.criu.is_some())
            .map(Duration::from_secs);
        let (fin_tx, fin_rx) = watch::channel(false);
        let acked = [
            Arc::new(AtomicU64::new(base.0)),
            Arc::new(AtomicU64::new(base.1)),
        ];
        let mut streamer = None;
        let mut streams = Some(vec![
            OutputStream {
                name: "stdout",
                file: out_r,
                base: base.0,
                acked: base.0,
                shared: acked[0].clone(),
                url: self.url(&["output", "stdout"])?,
            },
            OutputStream {
                name: "stderr",
                file: err_r,
                base: base.1,
                acked: base.1,
                shared: acked[1].clone(),
                url: self.url(&["output", "stderr"])?,
            },
        ]);
        let mut lease = self.lease.clone();
        let mut lease_open = true;
        let mut first = Some(first);
        let mut runs = 0u32;

        // Each pass runs the program once; a self-checkpointing job that
        // exits with its checkpoint code is restarted in place (HTCondor's
        // checkpoint_exit_code semantics).
        let (outcome, usage, ctl) = 'runs: loop {
            let stdin = match &d.input {
                Some(i) => {
                    let p = self.sandbox.join(local_name(i)?);
                    Stdio::from(open_output(&p).map_err(|e| io_err(&p, e))?.ok_or_else(|| {
                        io_err(&p, std::io::Error::from(std::io::ErrorKind::NotFound))
                    })?)
                }
                None => Stdio::null(),
            };
            let dup = |f: &File, p: &Path| f.try_clone().map_err(|e| io_err(p, e));
            // A CRIU job with a dump at hand is restored, not started.
            let restoring = self.criu.as_ref().filter(|c| c.has_images());
            let spec = match restoring {
                Some(c) => GuestSpec {
                    // The restored job writes to this run's capture files.
                    stdin,
                    stdout: Stdio::from(dup(&out_w, &out_path)?),
                    stderr: Stdio::from(dup(&err_w, &err_path)?),
                    ..c.restore_spec(&self.sandbox, &[(1, &out_path), (2, &err_path)])
                },
                None => GuestSpec {
                    program: program.clone(),
                    args: d.arguments.iter().map(OsString::from).collect(),
                    env: env.clone().into_iter().collect(),
                    user: self.starter.user,
                    sandbox: self.sandbox.clone(),
                    sched_idle: sched_idle || ladder.owner_active(),
                    // An unprivileged CRIU dump cannot handle a PID
                    // namespace (see `Criu`).
                    pid_namespace: self.starter.config.pid_namespace && self.criu.is_none(),
                    no_new_privs: true,
                    reaper: self.criu.is_some(),
                    restore_pidfile: None,
                    stdin,
                    stdout: Stdio::from(dup(&out_w, &out_path)?),
                    stderr: Stdio::from(dup(&err_w, &err_path)?),
                },
            };
            let mut proc = match GuestLauncher::new().spawn(spec, cgroup.as_ref()) {
                Ok(p) => p,
                Err(IsolationError::Spawn { source, .. })
                    if restoring.is_none()
                        && (matches!(
                            source.kind(),
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                        ) || source.raw_os_error() == Some(libc::ENOEXEC)) =>
                {
                    return Ok(Outcome::Held(format!(
                        "cannot execute {:?}: {source}",
                        d.executable
                    )));
                }
                Err(e) => return Err(e.into()),
            };
            let mut pid = proc.pid();
            // The launched process: with a reaper, the waiter, whose
            // descendants are the whole job.
            record.spawned(pid);
            if let Some(c) = restoring {
                match await_restore(c, pid).await {
                    Ok(Some(root)) => pid = root,
                    Ok(None) => {}
                    Err(why) => {
                        // Not the job's fault, maybe this host's (a PID in
                        // use): back to the queue; the home avoids us.
                        let _ = c.clear();
                        if let Some(g) = &cgroup {
                            let _ = g.kill();
                        }
                        let _ = tokio::task::spawn_blocking(move || proc.wait()).await;
                        return Ok(Outcome::Evicted(format!("CRIU restore failed: {why}")));
                    }
                }
                tracing::info!(job = %self.req.job_id, pid, "guest restored by CRIU");
            } else if self.criu.is_some() {
                // The job runs under a reaping waiter: CRIU dumps the job.
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    if let Some(p) = proc.job_pid() {
                        pid = p;
                        break;
                    }
                    if Instant::now() > deadline || parent_of(pid).is_none() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            let pgid = i32::try_from(pid).unwrap_or(0);
            guard.pgid = Some(pgid);
            let mut ctl = Control {
                pgid,
                cgroup: cgroup.clone(),
                stopped_by_signal: false,
                frozen: false,
                checkpoint_signal: self.starter.config.checkpoint_signal,
            };
            let (exit_tx, mut exit_rx) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let _ = exit_tx.send(proc.wait());
            });

            // --- output streaming (one streamer for all passes) -----------
            if let Some(s) = streams.take() {
                streamer = Some(tokio::spawn(stream_loop(
                    self.starter.http.clone(),
                    self.starter.token.clone(),
                    s,
                    self.starter.config.output_poll,
                    fin_rx.clone(),
                    self.patience(),
                )));
            }

            let mut leave = None;
            if runs == 0 {
                self.report(
                    JobEventKind::Started,
                    JobState::Running,
                    format!("pid {pid} on {}", self.starter.config.host),
                );
            } else {
                tracing::info!(job = %self.req.job_id, pid, runs, "guest restarted in place after a checkpoint");
            }
            if let Some(f) = first.take() {
                leave = self.apply(&mut ctl, &f, &ladder);
            } else if ladder.owner_active() {
                ctl.set_idle(true);
            }
            // A restored job has the priority it was dumped with.
            if restoring.is_some() && leave.is_none() {
                ctl.set_idle(ladder.owner_active());
            }

            // --- supervision: owner events, deadlines, vacate, exit -------
            let mut owner_gone = false;
            let mut lease_lost = false;
            // A CRIU dump ended the process: its exit is a checkpoint.
            let mut dumped = false;
            let mut next_ckpt = ckpt_interval.map(|i| Instant::now() + i);
            let status = loop {
                if leave.is_some() {
                    break None;
                }
                let deadline = ladder.next_deadline().map(|t| self.starter.instant_of(t));
                let sleep = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d.into()).await,
                        None => std::future::pending().await,
                    }
                };
                let ckpt_tick = async {
                    match next_ckpt {
                        Some(d) => tokio::time::sleep_until(d.into()).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    st = &mut exit_rx => break Some(st),
                    ch = owner.changed(), if !owner_gone => {
                        if ch.is_err() {
                            // The monitor is gone: assume the owner is back,
                            // the safe side for the owner; then wait for exit,
                            // deadlines or vacate only.
                            owner_gone = true;
                            let acts = ladder.on_owner_active(self.starter.now());
                            leave = self.apply(&mut ctl, &acts, &ladder);
                            continue;
                        }
                        let s = *owner.borrow_and_update();
                        let now = self.starter.now();
                        let acts = match s {
                            OwnerState::Na => ladder.on_owner_active(now),
                            OwnerState::Av => ladder.on_owner_idle(now),
                        };
                        leave = self.apply(&mut ctl, &acts, &ladder);
                    }
                    _ = sleep => {
                        let acts = ladder.on_timer(self.starter.now());
                        leave = self.apply(&mut ctl, &acts, &ladder);
                    }
                    _ = ckpt_tick => {
                        // Periodic checkpoint: the job saves and exits with
                        // its checkpoint code, or CRIU dumps it (and it is
                        // restored in place). A frozen job waits its turn.
                        if !(ctl.frozen || ctl.stopped_by_signal || dumped) {
                            match &self.criu {
                                Some(c) => match criu_dump(c, pid).await {
                                    Ok(()) => dumped = true,
                                    Err(e) => tracing::warn!(job = %self.req.job_id, error = %e, "periodic CRIU dump failed; the job goes on"),
                                },
                                None => {
                                    tracing::debug!(job = %self.req.job_id, "periodic checkpoint signal");
                                    ctl.checkpoint_signal();
                                }
                            }
                        }
                        next_ckpt = ckpt_interval.map(|i| Instant::now() + i);
                    }
                    ch = lease.changed(), if lease_open => {
                        if ch.is_err() {
                            lease_open = false;
                            continue;
                        }
                        if let Some(why) = lease.borrow_and_update().clone() {
                            lease_lost = true;
                            leave = Some(why);
                        }
                    }
                    cmd = rx.recv() => {
                        leave = Some(match cmd {
                            Some(Command::Vacate(why)) => why,
                            None => "starter shutting down".into(),
                        });
                    }
                }
            };

            let usage = |ctl: &Control| Usage {
                cpu_secs: ctl
                    .cgroup
                    .as_ref()
                    .and_then(|g| g.cpu_usage().ok())
                    .map_or(0.0, |d| d.as_secs_f64()),
                wall_secs: started.elapsed().as_secs_f64(),
                max_rss_mb: 0,
            };

            match (status, leave) {
                (Some(st), _) => {
                    let code = match st {
                        Ok(Ok(s)) => exit_code(s),
                        Ok(Err(e)) => return Err(io_err(&program, e)),
                        Err(_) => return Err(StarterError::Http("guest waiter vanished".into())),
                    };
                    // Stragglers the job left behind (daemonised children).
                    let u = usage(&ctl);
                    ctl.resume();
                    ctl.kill();
                    if dumped || checkpoint_exit == Some(code) {
                        self.take_checkpoint(&mut ladder, &mut seq, &acked, [&out_w, &err_w])
                            .await;
                        if let Ok(Command::Vacate(why)) = rx.try_recv() {
                            break 'runs (Outcome::Evicted(why), u, ctl);
                        }
                        runs += 1;
                        continue 'runs;
                    }
                    break 'runs (Outcome::Exited(code), u, ctl);
                }
                (None, Some(why)) => {
                    let u = usage(&ctl);
                    let checkpointed = self.evict(&mut ctl, &mut exit_rx, lease_lost, pid).await;
                    // A checkpoint taken on the way out goes home first
                    // (not when the home is unreachable or gave up on us).
                    if !lease_lost && checkpointed {
                        self.take_checkpoint(&mut ladder, &mut seq, &acked, [&out_w, &err_w])
                            .await;
                    }
                    break 'runs (Outcome::Evicted(why), u, ctl);
                }
                (None, None) => {
                    ctl.kill();
                    let u = usage(&ctl);
                    break 'runs (
                        Outcome::Evicted("internal: no exit and no eviction".into()),
                        u,
                        ctl,
                    );
                }
            }
        };
        drop(ctl);
        let _ = fin_tx.send(true);
        if let Some(s) = streamer {
            let _ = s.await;
        }
        if let Some(g) = &cgroup {
            // Removal needs an empty group; the guard retries on drop.
            if g.remove().is_ok() {
                guard.cgroup = None;
            }
        }
        guard.pgid = None;
        record.reaped();
        ladder.on_finished(self.starter.now());
        self.entry.set_state("finishing", None);

        if let Outcome::Exited(code) = outcome {
            match self.upload_outputs(&before).await {
                Ok(()) => self.report_usage(
                    JobEventKind::Completed,
                    JobState::Completed { exit_code: code },
                    format!("exit code {code}"),
                    Some(usage),
                ),
                Err(why) => return Ok(Outcome::Held(why)),
            }
        }
        Ok(outcome)
    }

    /// Leave the host: a CRIU dump, or the checkpoint signal for jobs that
    /// checkpoint themselves with a bounded grace to exit, then kill (at
    /// once when `now`). Returns whether a checkpoint is ready to ship.
    async fn evict(
        &self,
        ctl: &mut Control,
        exit_rx: &mut tokio::sync::oneshot::Receiver<std::io::Result<std::process::ExitStatus>>,
        now: bool,
        root: u32,
    ) -> bool {
        if let Some(c) = &self.criu
            && !now
        {
            // CRIU cannot seize a frozen task.
            ctl.resume();
            match criu_dump(c, root).await {
                Ok(()) => {
                    ctl.kill();
                    let _ = tokio::time::timeout(Duration::from_secs(10), &mut *exit_rx).await;
                    return true;
                }
                Err(e) => {
                    tracing::warn!(job = %self.req.job_id, error = %e, "CRIU dump on vacate failed")
                }
            }
        } else if let Some(sc) = &self.ckpt
            && !now
        {
            // A frozen job cannot act on the signal.
            ctl.resume();
            ctl.set_idle(true);
            ctl.checkpoint_signal();
            let grace = self.starter.config.checkpoint_grace;
            if let Ok(r) = tokio::time::timeout(grace, &mut *exit_rx).await {
                ctl.kill();
                return matches!(r, Ok(Ok(s)) if exit_code(s) == sc.exit_code);
            }
        }
        ctl.resume();
        ctl.kill();
        let _ = tokio::time::timeout(Duration::from_secs(10), exit_rx).await;
        false
    }

    /// How long transfers to the home keep being retried: the lease (the
    /// home waits that long before it gives up on this run), else 20 s.
    fn patience(&self) -> Duration {
        self.req
            .lease_secs
            .map_or(Duration::from_secs(20), Duration::from_secs)
    }

    /// Where this run keeps a checkpoint bundle in transit.
    fn bundle_path(&self) -> PathBuf {
        self.starter
            .config
            .execute_dir
            .join(format!("{}.bundle", self.entry.guest_id))
    }

    /// Fetches the job's latest good checkpoint (throttled by the station's
    /// bucket, streamed to a file) and unpacks it: into the sandbox, and
    /// for CRIU the images into the image directory. `None`: the job has
    /// none yet.
    async fn restore_checkpoint(&self) -> Result<Option<Manifest>, String> {
        use tokio::io::AsyncWriteExt;
        let url = self.url(&["checkpoint"]).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let mut resp = self
            .starter
            .http
            .get(url)
            .bearer_auth(&self.starter.token)
            .timeout(Duration::from_secs(3600))
            .send()
            .await
            .map_err(|e| format!("cannot fetch checkpoint: {e}"))?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !resp.status().is_success() {
            return Err(format!("shadow answered {}", resp.status()));
        }
        let path = self.bundle_path();
        let _ = std::fs::remove_file(&path);
        let mut file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut bytes = 0u64;
        let fetched: Result<(), String> = async {
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| format!("checkpoint download: {e}"))?
            {
                self.starter.bucket.take(chunk.len() as u64).await;
                file.write_all(&chunk)
                    .await
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                bytes += chunk.len() as u64;
            }
            file.flush()
                .await
                .map_err(|e| format!("{}: {e}", path.display()))
        }
        .await;
        drop(file);
        if let Err(e) = fetched {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        self.starter.rate.record(bytes, t0.elapsed());
        let dir = self.sandbox.clone();
        let user = self.starter.user;
        let criu = self.criu.clone();
        let bundle = path.clone();
        let m = tokio::task::spawn_blocking(move || -> Result<Manifest, String> {
            let m = match &criu {
                Some(c) => c.unpack(&bundle, &dir).map_err(|e| e.to_string())?,
                None => {
                    let f =
                        File::open(&bundle).map_err(|e| format!("{}: {e}", bundle.display()))?;
                    crate::checkpoint::read_bundle(
                        &mut std::io::BufReader::with_capacity(1 << 20, f),
                        Some(&dir),
                    )
                    .map_err(|e| e.to_string())?
                }
            };
            // (CRIU's unpack hands its files to the guest user itself.)
            if let (Some(u), None) = (user, &criu) {
                for f in &m.files {
                    let p = dir.join(&f.name);
                    std::os::unix::fs::chown(&p, Some(u.uid), Some(u.gid))
                        .map_err(|e| format!("{}: {e}", p.display()))?;
                }
            }
            Ok(m)
        })
        .await
        .map_err(|e| e.to_string());
        let _ = std::fs::remove_file(&path);
        let m = m??;
        tracing::info!(job = %self.req.job_id, seq = m.seq, bytes = m.payload_bytes(), backend = %m.backend, "checkpoint restored");
        Ok(Some(m))
    }

    /// After the job exited with its checkpoint code: waits until the
    /// output written so far is at home (the checkpoint records its
    /// length), ships the checkpoint files, and feeds the measured rate
    /// into the ladder's `T_migr` (Ryu & Hollingsworth Eq. 5). Failures are
    /// logged: the job still restarts from its local files.
    async fn take_checkpoint(
        &self,
        ladder: &mut EvictionLadder,
        seq: &mut u64,
        acked: &[Arc<AtomicU64>; 2],
        capture: [&File; 2],
    ) {
        if self.ckpt.is_none() && self.criu.is_none() {
            return;
        }
        let lens = capture.map(|f| f.metadata().map_or(0, |m| m.len()));
        let base = self.base();
        let want = [base.0 + lens[0], base.1 + lens[1]];
        let deadline = Instant::now() + self.patience();
        while (0..2).any(|i| acked[i].load(Ordering::SeqCst) < want[i]) {
            if Instant::now() > deadline {
                tracing::warn!(job = %self.req.job_id, "output not delivered; checkpoint not shipped");
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        *seq += 1;
        let manifest = Manifest {
            seq: *seq,
            stdout_len: want[0],
            stderr_len: want[1],
            ..Default::default()
        };
        let dir = self.sandbox.clone();
        let path = self.bundle_path();
        let _ = std::fs::remove_file(&path);
        let (sc, criu, out) = (self.ckpt.clone(), self.criu.clone(), path.clone());
        let collected = tokio::task::spawn_blocking(move || match (&criu, &sc) {
            (Some(c), _) => {
                let sources: Vec<BundleSource> =
                    c.bundle_sources(&dir, &[STDOUT_FILE, STDERR_FILE])?;
                crate::checkpoint::write_bundle_file(
                    Manifest {
                        backend: "criu".into(),
                        ..manifest
                    },
                    &sources,
                    &out,
                )
            }
            (None, Some(sc)) => sc.collect_to(&dir, manifest, &out),
            (None, None) => Err(crate::checkpoint::CheckpointError::Corrupt(
                "no checkpointing".into(),
            )),
        })
        .await;
        let bytes = match collected {
            Ok(Ok(m)) => m.payload_bytes(),
            Ok(Err(e)) => {
                tracing::warn!(job = %self.req.job_id, error = %e, "cannot collect checkpoint");
                let _ = std::fs::remove_file(&path);
                return;
            }
            Err(e) => {
                tracing::warn!(job = %self.req.job_id, error = %e, "checkpoint collector failed");
                let _ = std::fs::remove_file(&path);
                return;
            }
        };
        let shipped = self.ship_bundle(&path, bytes, ladder, *seq, deadline).await;
        let _ = std::fs::remove_file(&path);
        if !shipped {
            tracing::warn!(job = %self.req.job_id, "checkpoint not shipped home");
        }
    }

    /// Uploads a bundle file to the home (streamed and throttled, retried
    /// until `deadline`) and feeds the measured rate into the ladder's
    /// `T_migr` (Ryu & Hollingsworth Eq. 5). Returns whether it arrived.
    async fn ship_bundle(
        &self,
        path: &Path,
        payload: u64,
        ladder: &mut EvictionLadder,
        seq: u64,
        deadline: Instant,
    ) -> bool {
        let Ok(url) = self.url(&["checkpoint"]) else {
            return false;
        };
        let bytes = std::fs::metadata(path).map_or(payload, |m| m.len());
        let mut delay = Duration::from_millis(100);
        loop {
            let t0 = Instant::now();
            let r = match tokio::fs::File::open(path).await {
                Ok(file) => {
                    let st = self.starter.clone();
                    let body = reqwest::Body::wrap_stream(crate::checkpoint::throttled_stream(
                        file,
                        move |n| {
                            let st = st.clone();
                            async move { st.bucket.take(n).await }
                        },
                    ));
                    self.starter
                        .http
                        .put(url.clone())
                        .bearer_auth(&self.starter.token)
                        .header("content-type", "application/octet-stream")
                        .header("content-length", bytes)
                        .timeout(Duration::from_secs(3600))
                        .body(body)
                        .send()
                        .await
                }
                Err(e) => {
                    tracing::warn!(job = %self.req.job_id, error = %e, "checkpoint bundle vanished");
                    return false;
                }
            };
            match r {
                Ok(resp) if resp.status().is_success() => {
                    let took = t0.elapsed();
                    self.starter.rate.record(bytes, took);
                    if let Some(rate) = self.starter.rate.get() {
                        let cost = MigrationCost {
                            image_bytes: bytes,
                            bandwidth_bytes_per_s: rate,
                            ..MigrationCost::default()
                        };
                        let est = Estimates {
                            t_migr: cost.t_migr(),
                            ..ladder.estimates()
                        };
                        ladder.handle(self.starter.now(), LadderEvent::Estimates(est));
                    }
                    tracing::info!(job = %self.req.job_id, seq, bytes, secs = took.as_secs_f64(), "checkpoint shipped home");
                    return true;
                }
                Ok(resp) if resp.status().is_client_error() => {
                    tracing::warn!(job = %self.req.job_id, status = %resp.status(), "home refused the checkpoint");
                    return false;
                }
                Ok(resp) => {
                    tracing::warn!(job = %self.req.job_id, status = %resp.status(), "checkpoint upload failed")
                }
                Err(e) => {
                    tracing::warn!(job = %self.req.job_id, error = %e, "checkpoint upload failed")
                }
            }
            if Instant::now() + delay > deadline {
                tracing::warn!(job = %self.req.job_id, "checkpoint not shipped: home unreachable");
                return false;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    /// Carries out ladder actions on the real process. Returns why the
    /// guest must leave, if it must.
    fn apply(&self, ctl: &mut Control, acts: &[Action], ladder: &EvictionLadder) -> Option<String> {
        for a in acts {
            tracing::debug!(job = %self.req.job_id, action = ?a, "ladder action");
            match a {
                Action::RunNormal => ctl.set_idle(false),
                Action::LowerPriority => ctl.set_idle(true),
                Action::Suspend => {
                    ctl.suspend();
                    self.report(
                        JobEventKind::Suspended,
                        JobState::Suspended,
                        "owner active: suspended",
                    );
                }
                Action::Resume => {
                    ctl.resume();
                    ctl.set_idle(false);
                    self.report(
                        JobEventKind::Resumed,
                        JobState::Running,
                        "owner idle: resumed",
                    );
                }
                // Only a job that declares checkpointing knows the signal;
                // any other job would just die of it.
                Action::Checkpoint if self.req.description.checkpoint_exit_code.is_some() => {
                    ctl.checkpoint_signal();
                }
                Action::Checkpoint => {}
                Action::Migrate { .. } | Action::Vacate { .. } | Action::Kill => {
                    return Some(format!(
                        "evicted by {} policy: owner active",
                        self.starter.config.policy.name()
                    ));
                }
            }
        }
        self.entry
            .set_state(ladder.state().name(), Some(ctl.pgid as u32));
        None
    }

    /// Uploads output files: the named ones (a missing one holds the job,
    /// as in HTCondor), or every new or changed top-level file.
    async fn upload_outputs(&self, before: &Snapshot) -> Result<(), String> {
        let names: Vec<String> = match &self.req.description.transfer_output_files {
            Some(list) => {
                let mut v = Vec::new();
                for n in list {
                    v.push(local_name(n).map_err(|e| e.to_string())?);
                }
                v
            }
            None => snapshot(&self.sandbox)
                .into_iter()
                .filter(|(n, m)| n != STDOUT_FILE && n != STDERR_FILE && before.get(n) != Some(m))
                .map(|(n, _)| n)
                .collect(),
        };
        let explicit = self.req.description.transfer_output_files.is_some();
        for name in names {
            let path = self.sandbox.join(&name);
            let data = match open_output(&path) {
                Ok(Some(mut f)) => {
                    let mut buf = Vec::new();
                    std::io::Read::read_to_end(&mut f, &mut buf)
                        .map_err(|e| format!("cannot read output {name:?}: {e}"))?;
                    buf
                }
                Ok(None) if explicit => {
                    return Err(format!("output file {name:?} was not created"));
                }
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(file = %name, error = %e, "output file skipped");
                    if explicit {
                        return Err(format!("output file {name:?}: {e}"));
                    }
                    continue;
                }
            };
            let url = self.url(&["files", &name]).map_err(|e| e.to_string())?;
            let mut delay = Duration::from_millis(100);
            let mut last = String::new();
            let mut ok = false;
            for _ in 0..6 {
                match self
                    .starter
                    .http
                    .put(url.clone())
                    .bearer_auth(&self.starter.token)
                    .header("content-type", "application/octet-stream")
                    .body(data.clone())
                    .send()
                    .await
                {
                    Ok(r) if r.status().is_success() => {
                        ok = true;
                        break;
                    }
                    Ok(r) => last = format!("shadow answered {}", r.status()),
                    Err(e) => last = e.to_string(),
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            if !ok {
                return Err(format!("cannot upload output {name:?}: {last}"));
            }
        }
        Ok(())
    }
}

/// Dumps a CRIU job (blocking work off the runtime).
async fn criu_dump(c: &Criu, root: u32) -> Result<(), String> {
    let c = c.clone();
    let t0 = Instant::now();
    let r = tokio::task::spawn_blocking(move || c.dump(root))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string());
    if r.is_ok() {
        tracing::info!(
            pid = root,
            secs = t0.elapsed().as_secs_f64(),
            "CRIU dump taken"
        );
    }
    r
}

/// Waits until a detached CRIU restore started under `waiter` has
/// restored the job; returns the restored root's PID (`None` if it already
/// finished). The pidfile is written by CRIU as the guest user, so a PID
/// is trusted only if the waiter is its parent: the station signals that
/// process group as root.
async fn await_restore(c: &Criu, waiter: u32) -> Result<Option<u32>, String> {
    // CRIU writes the pidfile before the restore is over, and the waiter
    // removes it when CRIU fails: success is the root re-parented to the
    // waiter (CRIU has exited), or the pidfile outliving the waiter.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let root = std::fs::read_to_string(c.pidfile())
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        let waiter_alive = parent_of(waiter).is_some();
        match root {
            Some(r) if parent_of(r) == Some(waiter) => return Ok(Some(r)),
            // Finished already: its exit status reaches the waiter.
            Some(_) if !waiter_alive => return Ok(None),
            None if !waiter_alive => {
                let errs = c.restore_errors();
                return Err(if errs.is_empty() {
                    "criu restore did not finish".into()
                } else {
                    errs
                });
            }
            _ => {}
        }
        if Instant::now() > deadline {
            return Err(match root {
                Some(r) => format!("restored process {r} never came under the restorer {waiter}"),
                None => "criu restore timed out".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A live (not zombie) process's parent PID, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let st = crate::host::procs::proc_stat(i32::try_from(pid).ok()?)?;
    u32::try_from(st.ppid).ok()
}

fn exit_code(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// Creates a capture file (guest writes through `w`) and keeps a separate
/// read handle: the daemon reads through it, whatever the guest does to
/// the name later.
fn capture_file(path: &Path, user: Option<GuestUser>) -> Result<(File, File), StarterError> {
    let w = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o600)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    if let Some(u) = user {
        std::os::unix::fs::fchown(&w, Some(u.uid), Some(u.gid)).map_err(|e| io_err(path, e))?;
    }
    let r = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    Ok((w, r))
}

// ----- HTTP ------------------------------------------------------------------

fn error_response(code: ErrorCode, msg: impl Into<String>) -> Response {
    let status =
        StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(ErrorBody::new(code, msg))).into_response()
}

/// Placement and vacating are daemon-to-daemon requests: a user's token,
/// even a valid one, must not start or stop guests on a host (only the
/// home station's daemon acts for its jobs, or an administrator).
fn require_daemon(claims: Option<&axum::Extension<gleaner_edge::Caller>>) -> Option<Response> {
    match claims {
        Some(c) if c.is_station() || c.is_admin() => None,
        Some(c) => {
            tracing::warn!(subject = %c.name, "refused a starter request from a non-daemon token");
            Some(error_response(
                ErrorCode::Forbidden,
                "only station daemons and administrators may place or vacate guests",
            ))
        }
        None => Some(error_response(
            ErrorCode::Unauthorized,
            "missing authentication",
        )),
    }
}

async fn place_handler(
    State(s): State<Arc<Starter>>,
    claims: Option<axum::Extension<gleaner_edge::Caller>>,
    Json(req): Json<PlacementRequest>,
) -> Response {
    if let Some(r) = require_daemon(claims.as_ref()) {
        return r;
    }
    if let Err(e) = check_version(req.protocol) {
        let status =
            StatusCode::from_u16(e.error.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
        return (status, Json(e)).into_response();
    }
    Json(s.place(req)).into_response()
}

async fn vacate_handler(
    State(s): State<Arc<Starter>>,
    claims: Option<axum::Extension<gleaner_edge::Caller>>,
    UrlPath(job): UrlPath<String>,
) -> Response {
    if let Some(r) = require_daemon(claims.as_ref()) {
        return r;
    }
    let Ok(id) = job.parse::<JobId>() else {
        return error_response(ErrorCode::BadRequest, format!("invalid job id {job:?}"));
    };
    if s.vacate(id, "vacated on request") {
        (
            StatusCode::ACCEPTED,
            Json(serde_json::json!({"vacating": id})),
        )
            .into_response()
    } else {
        error_response(ErrorCode::NotFound, format!("job {id} does not run here"))
    }
}

async fn guests_handler(State(s): State<Arc<Starter>>) -> Json<Vec<GuestListing>> {
    Json(s.listing())
}

/// The starter's endpoints. The daemon applies its authentication layer to
/// the whole app; that layer's verified claims are required here, and
/// placing or vacating needs a daemon or administrator token.
pub fn router(starter: Arc<Starter>) -> Router {
    Router::new()
        .route("/v1/place", post(place_handler))
        .route("/v1/guests", get(guests_handler))
        .route("/v1/guests/{job}/vacate", post(vacate_handler))
        .with_state(starter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_stay_in_the_sandbox() {
        assert_eq!(local_name("data/in.txt").unwrap(), "in.txt");
        assert_eq!(local_name("/abs/prog").unwrap(), "prog");
        for bad in ["", "..", "a/..", ".", STDOUT_FILE] {
            assert!(local_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(local_name("x/").unwrap(), "x");
    }

    #[test]
    fn shadow_urls_encode_segments() {
        let u = shadow_url("http://h:1/", &["v1", "shadow", "1.0", "input", "a b/c"]).unwrap();
        assert_eq!(u.as_str(), "http://h:1/v1/shadow/1.0/input/a%20b%2Fc");
        assert!(shadow_url("not a url", &["x"]).is_err());
    }
}
