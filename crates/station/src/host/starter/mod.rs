//! The starter: the execute side of a station.
//!
//! A home station that holds a claim on this host sends a
//! [`PlacementRequest`](gleaner_proto::wire::PlacementRequest)
//! (`POST /v1/place`). The starter checks it (the claim, then the fit
//! check the matchmaker made, `gleaner_proto::fit`, with this host's owner,
//! guests, free resources and policy of the moment, and a free slot
//! account), answers at once, and runs the guest asynchronously:
//!
//! 0. a slot account of its own ([`SlotPool`], `slot.rs`; issue 12): every
//!    guest runs as a different uid, never `nobody`, the owner's or the
//!    daemon's (a personal pool, when the daemon is not root, runs guests
//!    as the daemon's own user);
//! 1. a private sandbox `<execute_dir>/<home>-<job>-r<run>-<nonce>`, named
//!    after the run (mode 0700, owned by the slot account) in a root-owned
//!    0711 execute directory; what dead runs left there goes at start and
//!    after each run;
//! 2. the executable and `transfer_input_files` (and `input`) fetched from
//!    the shadow (`GET /v1/shadow/{job}/input/{name}`);
//! 3. the guest started unprivileged with
//!    [`GuestLauncher::spawn_confined`](crate::isolation::GuestLauncher):
//!    idle CPU priority at all times, its own PID and mount namespaces
//!    where the kernel allows (not CRIU jobs), in a per-job cgroup with
//!    memory bounds from `request_memory` when a [`CgroupManager`] is given
//!    (otherwise found by its slot's uid);
//! 4. stdout/stderr captured to files in the sandbox and streamed to the
//!    shadow while the job runs (`POST .../output/{stream}?offset=N`);
//! 5. on exit, output files uploaded (`PUT .../files/{name}`) and
//!    `completed` reported with the exit code.
//!
//! While it runs, each guest has its own
//! [`EvictionLadder`](gleaner_core::eviction::EvictionLadder) with the
//! station's policy. Owner-activity changes arrive on a
//! [`watch::Receiver<OwnerState>`] and are applied to the real process at
//! once: freeze then vacate after the grace (Mutka 1988 L841), or kill at
//! once (Immediate-Eviction, Mutka 1988 L583); a guest is at the lowest
//! priority throughout (Ryu & Hollingsworth L54: the owner strictly first),
//! not only while the owner is active. A guest that leaves the host is
//! reported `evicted` with job state `Idle`, so that its home requeues it;
//! every process of its slot's uid is killed before the slot is free again.
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
//! A job with `checkpoint_method = criu`
//! ([`Criu`](crate::checkpoint::Criu)) runs under a reaping waiter in a
//! sandbox whose path is the same on every station (`criu_sandbox_dir`,
//! locked per job). A vacate and every `checkpoint_interval` dump its
//! process tree; the images and the sandbox's files go home as one bundle
//! (streamed from a file, never held in memory), and the next run, here
//! after a periodic dump or on the next station, is a `criu restore`
//! instead of a start.
//!
//! Destinations (`destinations.rs`): the coordinator tells the host, per
//! guest, whether a free node elsewhere would take it; the guest's ladder
//! hears it at once and when it changes, so Linger-Longer migrates after
//! `T_lingr` (Ryu & Hollingsworth Eq. 4) when a free node exists. A
//! `Migrate` action vacates the guest (checkpointing it when it can) and
//! its home requeues it; the coordinator then grants it the free node (the
//! host it left is avoided for a while, `avoid_host_secs`).
//!
//! Open point (documented, not yet done): `when_to_transfer_output =
//! ON_EXIT_OR_EVICT`.
//!
//! # Layout
//!
//! As HTCondor's starter, three concerns are kept apart: talking to the
//! job's home (`jic/`, its JobInfoCommunicator), how the job's processes
//! are run and controlled (`control.rs`, `sandbox.rs`, `criu.rs`), and the
//! lifecycle (`run/`: prepare → restore → launch → supervise → finish).
//! This file holds the [`Starter`] and its public API; `place.rs` decides
//! placements with the fit check of `admission.rs`, `routes.rs` serves
//! them, `claims.rs` checks their claims (signed by the pool, for this host
//! and the placing home, single use), `ckpt.rs` and `outputs.rs` send
//! checkpoints and output files home.

mod admission;
mod ckpt;
mod claims;
mod config;
mod control;
mod criu;
mod destinations;
mod guests;
mod held_claims;
pub use guests::VacateKind;
mod jic;
mod outputs;
mod overrides;
mod place;
mod routes;
mod run;
mod sandbox;
mod slot;

pub use admission::{admit, refusal};
pub use claims::{AnyNonEmptyClaim, ClaimRejected, ClaimVerifier, Granted, SignedClaims};
pub use config::{DEFAULT_CRIU_SANDBOX_DIR, STDERR_FILE, STDOUT_FILE, StarterConfig, StarterError};
pub use guests::GuestListing;
pub use overrides::Overrides;
pub use routes::router;

use crate::checkpoint::{RateMeter, SharedBucket};
use crate::isolation::{
    CgroupManager, Confinement, GuestView, REAP_TIMEOUT, SandboxDisks, Scrubber, SlotPool,
    UserModeStack,
};
use config::io_err;
use gleaner_core::detector::OwnerState;
use gleaner_core::time::Time;
use gleaner_proto::guest_key::GuestKey;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::GuestInfo;
use guests::{Command, GuestEntry};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The execute side of a station. See the module docs.
pub struct Starter {
    config: StarterConfig,
    verifier: Box<dyn ClaimVerifier>,
    owner: watch::Receiver<OwnerState>,
    cgroups: Option<CgroupManager>,
    /// The slot accounts, one per running guest (issue 12, item 4).
    pool: SlotPool,
    /// How every guest is launched: idle at all times, own namespaces
    /// where the kernel allows, its own root.
    confinement: Confinement,
    /// The user-mode stack of guests' own networks (`None`: the host's
    /// network).
    net: Option<UserModeStack>,
    /// How sandboxes are bounded (`request_disk`).
    disks: SandboxDisks,
    /// Clients of the guests' homes (over TLS one per home, which must
    /// present that home's certificate).
    peers: gleaner_edge::tls::PeerClients,
    /// The guests, by home and job: two homes' jobs of the same id are
    /// two guests (every home numbers its clusters from 1).
    guests: Mutex<HashMap<GuestKey, Arc<GuestEntry>>>,
    epoch: Instant,
    draining: AtomicBool,
    /// Throttles checkpoint transfers of all guests on this host.
    bucket: SharedBucket,
    /// Measured checkpoint transfer rate, for `T_migr`.
    pub(crate) rate: RateMeter,
    /// The rate `T_migr` uses now ([`RateMeter::get`]), for running guests'
    /// ladders (`destinations.rs`).
    rate_news: watch::Sender<Option<f64>>,
    /// Rung when a guest's slot is free again: the station advertises at
    /// once, so the coordinator can grant the node to the next job.
    pub(crate) guest_ended: tokio::sync::Notify,
    /// Claims held for their homes' next jobs (claim reuse).
    pub(crate) held: held_claims::HeldClaims,
    /// The owner's controls as they apply here (`overrides.rs`).
    overrides: Mutex<Overrides>,
    /// The owner's history: guests' reactions to returns, guests' runs.
    pub(crate) owner_log: Arc<crate::host::owner_log::OwnerLog>,
    /// Ladder actions carried out, by name (`/metrics`).
    pub(crate) actions: Mutex<std::collections::BTreeMap<&'static str, u64>>,
}

impl Starter {
    /// `owner` is fed by the station's owner monitor. Each guest's claim
    /// is the starter's credential at that guest's home.
    pub fn new(
        mut config: StarterConfig,
        verifier: Box<dyn ClaimVerifier>,
        owner: watch::Receiver<OwnerState>,
        cgroups: Option<CgroupManager>,
    ) -> Result<Self, StarterError> {
        let pool = SlotPool::for_daemon(&config.slots)?;
        // The caller has cleared the guests a previous run recorded and
        // the cgroups it left; whatever still runs as a slot account is
        // left over too (an escapee of a crashed run), and nothing is
        // leased yet.
        for (slot, r) in pool.reap_unleased(REAP_TIMEOUT) {
            if let Some(u) = pool.slots().iter().find(|s| s.name == slot) {
                crate::host::orphans::reap_orphans_of(u.user.uid);
            }
            if let Ok(rep) = r {
                tracing::warn!(%slot, killed = ?rep.found, rounds = rep.rounds,
                    ms = rep.elapsed.as_millis() as u64, "slot cleared at start");
            }
        }
        let confinement = Confinement::for_station(config.namespaces)?
            .with_private_tmp(config.private_tmp)
            .with_max_processes(config.max_processes);
        prepare_execute_dir(&config.execute_dir, &pool)?;
        // Sandbox paths as the guests' own roots have them (`view.rs`
        // mounts each at its real path).
        if let Ok(c) = std::fs::canonicalize(&config.execute_dir) {
            config.execute_dir = c;
        }
        // The daemons' directories: never in a guest's view, never
        // scrubbed as if a guest had left them.
        let own: Vec<std::path::PathBuf> = [
            Some(config.execute_dir.clone()),
            config.state_dir.clone(),
            config.guest_records.clone(),
            Some(config.criu_sandbox_dir.clone()),
        ]
        .into_iter()
        .flatten()
        .collect();
        let view = if confinement.namespaces && config.own_root {
            Some(GuestView::for_host(
                config.expose.clone(),
                config.volumes.clone(),
                own.clone(),
            )?)
        } else {
            if !config.expose.is_empty() || !config.volumes.is_empty() {
                tracing::warn!(
                    "[isolation] expose and volumes apply to guests with a root of \
                    their own only (namespaces and own_root): these guests see the whole host"
                );
            }
            None
        };
        let confinement = confinement.with_view(view);
        let net = config.network.stack(confinement.namespaces)?;
        let disks = SandboxDisks::for_station(config.disk)?;
        if !pool.is_personal() {
            pool.set_scrubber(Scrubber::for_host(own));
        }
        // No guest runs yet: every sandbox here is a dead run's (issue 14).
        if !config.keep_sandboxes {
            sandbox::remove_stale(&config.execute_dir, Default::default);
        }
        if let Some(m) = &cgroups {
            m.ensure_parent()?;
        }
        let (timeout, agent) = (
            config.http_timeout,
            format!("gleaner-starter/{}", config.host),
        );
        let base: gleaner_edge::tls::client::BaseBuilder = Arc::new(move || {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .timeout(timeout)
                // Names the host in the home's logs (and lets fault-injection
                // tests tell hosts apart behind one proxy).
                .user_agent(agent.clone())
        });
        let peers = match &config.tls {
            Some((ca, me)) => {
                gleaner_edge::tls::PeerClients::tls(base, ca.clone(), Some(me.clone()))
            }
            None => gleaner_edge::tls::PeerClients::plain(base),
        }
        .map_err(|e| StarterError::Http(e.to_string()))?;
        let bucket = SharedBucket::new(config.checkpoint_bytes_per_sec);
        Ok(Starter {
            config,
            verifier,
            owner,
            cgroups,
            pool,
            confinement,
            net,
            disks,
            peers,
            guests: Mutex::new(HashMap::new()),
            epoch: Instant::now(),
            draining: AtomicBool::new(false),
            bucket,
            rate: RateMeter::default(),
            rate_news: watch::channel(None).0,
            guest_ended: tokio::sync::Notify::new(),
            held: held_claims::HeldClaims::default(),
            overrides: Mutex::new(Overrides::default()),
            owner_log: Arc::new(crate::host::owner_log::OwnerLog::in_memory()),
            actions: Mutex::new(Default::default()),
        })
    }

    /// Keeps the owner's history in `log` (the host's, saved on disk).
    pub fn with_owner_log(mut self, log: Arc<crate::host::owner_log::OwnerLog>) -> Self {
        self.owner_log = log;
        self
    }

    /// Ladder actions carried out on guests since start, by name.
    pub fn action_counts(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.actions.lock().map(|a| a.clone()).unwrap_or_default()
    }

    pub fn config(&self) -> &StarterConfig {
        &self.config
    }

    /// The client for calls to the home station `home` (over TLS it takes
    /// only that station's certificate).
    pub(crate) fn http_to(&self, home: &str) -> reqwest::Client {
        self.peers.station(home)
    }

    /// Whether `url` is a shadow address this host may call (https, or
    /// plain HTTP on loopback in a pool without TLS).
    pub(crate) fn check_shadow_url(&self, url: &str) -> Result<(), String> {
        self.peers.check_url("shadow", url)
    }

    /// The guests' cgroups, when the station has them.
    pub fn cgroups(&self) -> Option<&CgroupManager> {
        self.cgroups.as_ref()
    }

    /// The slot accounts guests run as.
    pub fn slot_pool(&self) -> &SlotPool {
        &self.pool
    }

    /// How many more guests the slot accounts allow (`None`: a personal
    /// pool, bounded by CPUs only).
    pub fn free_slots(&self) -> Option<usize> {
        if self.pool.is_personal() {
            return None;
        }
        Some(
            self.pool
                .slots()
                .len()
                .saturating_sub(self.pool.leases().len()),
        )
    }

    /// Refuse new placements (running guests are left alone).
    pub fn set_draining(&self, on: bool) {
        self.draining.store(on, Ordering::SeqCst);
    }

    /// The ladder's clock: time since the starter was made.
    fn now(&self) -> Time {
        Time::from_micros(u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    fn instant_of(&self, t: Time) -> Instant {
        self.epoch + Duration::from_micros(t.as_micros())
    }

    fn lock_guests(&self) -> std::sync::MutexGuard<'_, HashMap<GuestKey, Arc<GuestEntry>>> {
        // A poisoned map is still consistent: entries are inserted/removed whole.
        self.guests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Guests on this host, for the station ad's `running_guests`.
    pub fn running_guests(&self) -> Vec<GuestInfo> {
        self.listing().into_iter().map(|l| l.info).collect()
    }

    /// Guests with their ladder state and pid (not those whose program is
    /// over and whose node went back to their claim).
    pub fn listing(&self) -> Vec<GuestListing> {
        let mut v: Vec<GuestListing> = self
            .lock_guests()
            .values()
            .filter(|g| !g.handed_back())
            .map(|g| g.listing())
            .collect();
        v.sort_by(|a, b| (a.info.job, &a.info.home).cmp(&(b.info.job, &b.info.home)));
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

    /// Whether the guest `key` runs here.
    pub fn has_guest(&self, key: &GuestKey) -> bool {
        self.lock_guests().contains_key(key)
    }

    /// The homes of the guests here whose job id is `job` (several homes
    /// may have a job of that id), sorted.
    pub fn homes_of_job(&self, job: JobId) -> Vec<String> {
        let mut v: Vec<String> = self
            .lock_guests()
            .keys()
            .filter(|k| k.job == job)
            .map(|k| k.home.clone())
            .collect();
        v.sort();
        v
    }

    /// The nonce of the claim that placed the guest `key` here, if it had
    /// one.
    pub fn guest_claim_nonce(&self, key: &GuestKey) -> Option<String> {
        self.lock_guests()
            .get(key)
            .and_then(|g| g.claim_nonce.clone())
    }

    /// Ask a guest to leave (checkpoint signal if it checkpoints, its
    /// `kill_sig` if it has one, then kill); it is reported `evicted`.
    /// False if no such guest.
    pub fn vacate(&self, key: &GuestKey, reason: &str) -> bool {
        self.vacate_as(key, reason, guests::VacateKind::Vacate)
    }

    /// [`Starter::vacate`] for a hold or a removal (their own signals).
    pub fn vacate_as(&self, key: &GuestKey, reason: &str, kind: guests::VacateKind) -> bool {
        match self.lock_guests().get(key) {
            Some(g) => g
                .cmd
                .send(Command::Vacate(reason.to_string(), kind))
                .is_ok(),
            None => false,
        }
    }

    /// Whether the guest `key` is a member of a parallel job.
    pub fn is_gang_member(&self, key: &GuestKey) -> bool {
        self.lock_guests()
            .get(key)
            .is_some_and(|g| g.info.class.as_ref().is_some_and(|c| c.gang.is_some()))
    }

    /// Holds (suspends) or releases a parallel job's member with its gang;
    /// false when no such guest runs here. `reply` hears whether its own
    /// owner's ladder keeps it stopped ([`Command::GangHold`]).
    pub fn gang_hold(
        &self,
        key: &GuestKey,
        hold: bool,
        reply: Option<tokio::sync::oneshot::Sender<bool>>,
    ) -> bool {
        match self.lock_guests().get(key) {
            Some(g) => g.cmd.send(Command::GangHold(hold, reply)).is_ok(),
            None => false,
        }
    }

    /// The home gives up the claim `nonce` (no more jobs for it, or the
    /// coordinator preempted it): `Ok(true)` when it ended now (its node
    /// is free, the station advertises at once), `Ok(false)` when it ends
    /// with its guest.
    pub fn release_claim(&self, nonce: &str, home: &str) -> Result<bool, String> {
        let ended = self.held.release(nonce, home)?;
        if ended {
            self.guest_ended.notify_one();
        }
        Ok(ended)
    }

    /// The guest of `entry` completed: its claim, if held, waits for its
    /// home's next job ([`held_claims`]), and the guest's node is the
    /// claim's from now on (the guest leaves the ad while it is cleaned
    /// up). The claim ends by itself if no job comes in time.
    pub(crate) fn completed_on_claim(self: &Arc<Self>, entry: &GuestEntry) {
        let Some(nonce) = &entry.claim_nonce else {
            return;
        };
        let Some(spell) = self.held.completed(nonce, &entry.key()) else {
            return;
        };
        entry.hand_back();
        let me = self.clone();
        let nonce = nonce.clone();
        tokio::spawn(async move {
            tokio::time::sleep(held_claims::IDLE_FOR).await;
            if me.held.idle_over(&nonce, spell) {
                tracing::debug!(claim = %nonce, "held claim idle too long; given back");
                me.guest_ended.notify_one();
            }
        });
    }

    /// See [`crate::host::Host::on_drained`]: an idle claim ended by the
    /// drain frees its node, which the next ad says at once.
    pub(crate) fn on_drained(&self, drained: bool) {
        if self.held.set_drained(drained) {
            tracing::info!("drained by the administrator: idle claims given back");
            self.guest_ended.notify_one();
        }
    }

    /// Vacate every guest (shutdown).
    pub fn vacate_all(&self, reason: &str) {
        for g in self.lock_guests().values() {
            let _ = g.cmd.send(Command::Vacate(
                reason.to_string(),
                guests::VacateKind::Vacate,
            ));
        }
    }
}

/// Makes the sandboxes' parent: root's, mode 0711, so that each guest
/// reaches its own sandbox by name but cannot list the others or write
/// there (`isolation::prepare_execute_dir`). Refuses to start where the
/// slot accounts could not reach it at all: every job would be held.
fn prepare_execute_dir(dir: &Path, pool: &SlotPool) -> Result<(), StarterError> {
    // Any slot will do: the directories on the way belong to none of them.
    if let Some(s) = pool.slots().first()
        && let Some((bad, mode)) = crate::isolation::unreachable_by(dir, s.user)
    {
        return Err(io_err(
            dir,
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "guests (slot {}, uid {}) cannot reach their sandboxes here: {} has mode \
                     {mode:o}; set `execute_dir` to a directory they can reach",
                    s.name,
                    s.user.uid,
                    bad.display()
                ),
            ),
        ));
    }
    crate::isolation::prepare_execute_dir(dir)?;
    Ok(())
}
