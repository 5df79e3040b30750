//! The host side of a station: HTCondor's execute point. While the owner
//! is away the station runs other stations' jobs as guests:
//!
//! - [`owner_watch`]: the owner's activity, as AV/NA from the core
//!   detector, which the guests' eviction ladders follow;
//! - [`policy`]: the owner's rules for guests (operating windows, users,
//!   `START`, guest limit), checked on each placement by the starter's fit
//!   check (`starter/admission.rs`, the matchmaker's `gleaner_proto::fit`);
//! - [`machine_ad`]: what the station says about itself as a machine (β
//!   benchmark, disk, zone, attributes);
//! - [`guest_records`], [`procs`], [`leftovers`]: durable records of
//!   running guests, so that a crash leaves none running unsupervised;
//! - [`orphans`], [`state_seal`]: guests isolated from the daemons (issue
//!   12, item 4): the station is their subreaper, and of its state
//!   directory they reach only the execute directory;
//! - [`transfer_rate`]: the checkpoint transfer rate behind `T_migr`;
//! - [`starter`]: runs the guests.
//!
//! [`Host`] is the side's state; the node takes its part of the station's
//! ad ([`HostPart`]) and gives it the pool's transfer rate and the
//! destinations of its guests.

pub mod gpus;
pub mod guest_records;
pub mod leftovers;
pub mod lending_gate;
pub mod machine_ad;
pub mod orphans;
pub mod owner_controls;
pub mod owner_log;
pub mod owner_watch;
pub mod policy;
pub mod procs;
pub mod state_seal;
pub mod transfer_rate;

pub mod starter;

use crate::config::{ConfigError, StationConfig};
use axum::Router;
use gleaner_core::detector::OwnerState;
use gleaner_core::eviction::EvictionPolicy;
use gleaner_proto::creds::{NonceFile, NonceFileError, PoolVerifier};
use gleaner_proto::wire::{Destination, StationAd};
use starter::{SignedClaims, Starter, StarterConfig, StarterError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Why the host side cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("starter: {0}")]
    Starter(#[from] StarterError),
    /// The claims this host accepted cannot be read: starting without
    /// them would accept each of them again.
    #[error(transparent)]
    Nonces(#[from] NonceFileError),
    /// The owner's controls cannot be read: starting without them could
    /// lend a machine its owner stopped.
    #[error(transparent)]
    Controls(#[from] owner_controls::ControlsError),
}

/// The host's record of the claims it accepted (`<state_dir>/nonces.json`).
pub fn nonce_path(state_dir: &std::path::Path) -> std::path::PathBuf {
    state_dir.join("nonces.json")
}

/// What the host side puts in the station's ad.
#[derive(Clone, Debug, PartialEq)]
pub struct HostPart {
    /// The station as a machine: its description, the owner's state, the
    /// CPUs, memory and disk it offers guests, the guests it runs, the
    /// owner's policy. The home's fields (demand, classes) are left empty.
    pub machine: StationAd,
    /// The host's own measured checkpoint transfer rate, bytes/s.
    pub transfer_rate: Option<f64>,
}

/// How the host reaches the rest of the pool.
pub struct HostSetup {
    pub config: Arc<StationConfig>,
    pub name: String,
    /// This station's base URL (the starter's `host_address`).
    pub address: String,
    /// The pool's public key: verifies the coordinator's claims on
    /// placements.
    pub key: PoolVerifier,
    /// The pool's TLS: its CA and this station's certificate.
    pub tls: Option<(gleaner_edge::tls::PoolCa, gleaner_edge::tls::Identity)>,
}

/// The host side's state.
pub struct Host {
    config: Arc<StationConfig>,
    /// The fixed parts of the ad ([`machine_ad::template`]).
    template: StationAd,
    /// The owner's state as the execute side sees it. Held here so that
    /// the channel stays open for the station's lifetime (the starter takes
    /// a closed channel as "owner back").
    owner: watch::Sender<OwnerState>,
    /// `None` on a submit-only station, which never hosts.
    starter: Option<Arc<Starter>>,
    /// The owner's side: controls, history, the lending gate's news and
    /// the detector's own state (before stops and schedules).
    owner_side: Option<OwnerSide>,
}

/// What the owner's page and `glean owner` work with.
pub struct OwnerSide {
    pub controls: Arc<owner_controls::ControlsStore>,
    pub log: Arc<owner_log::OwnerLog>,
    pub news: Arc<lending_gate::GateNews>,
    pub detector: watch::Receiver<OwnerState>,
}

impl Host {
    /// Builds the host side and starts its owner watch; returns the tasks
    /// it started (they end with `shutdown`).
    pub fn start(
        setup: HostSetup,
        shutdown: &watch::Receiver<bool>,
    ) -> Result<(Self, Vec<JoinHandle<()>>), HostError> {
        let HostSetup {
            config,
            name,
            address,
            key,
            tls,
        } = setup;
        let mut tasks = Vec::new();
        let executes = config.role.executes();
        // A submit-only station never hosts: it advertises itself as in use.
        let initial = if executes {
            OwnerState::Av
        } else {
            OwnerState::Na
        };
        let (owner, owner_rx) = watch::channel(initial);
        let mut template = machine_ad::template(&config, &name);
        if !executes {
            let host = Host {
                config,
                template,
                owner,
                starter: None,
                owner_side: None,
            };
            return Ok((host, tasks));
        }
        // Single-use claims: every nonce accepted before a restart is still
        // refused after it. Read first: a corrupt book stops the start
        // before anything else is touched.
        let nonces = NonceFile::open(&nonce_path(&config.state_dir))?;
        let claims = SignedClaims::new(key, nonces);
        let mut sc = StarterConfig::new(name, config.execute_dir());
        sc.tls = tls;
        if let Some(c) = config.cpus {
            sc.cpus = c;
        }
        sc.slots = config.isolation.slot_config();
        sc.namespaces = config.isolation.namespaces;
        sc.private_tmp = config.isolation.private_tmp;
        sc.max_processes = config.isolation.process_bound();
        sc.state_dir = Some(config.state_dir.clone());
        sc.own_root = config.isolation.own_root;
        sc.expose = config.isolation.expose.clone();
        sc.volumes = config.isolation.volumes.clone();
        sc.network = config.isolation.network;
        sc.disk = config.isolation.disk;
        sc.default_disk_mb = config.isolation.default_disk_mb;
        // Orphans of guests come to the station, which kills and reaps
        // them by their slot's uid (orphans.rs).
        orphans::become_subreaper();
        if let Some(m) = config.memory_mb {
            sc.memory_mb = m;
        }
        let cgroups = config
            .isolation
            .build(sc.memory_mb)
            .map_err(|e| HostError::Io {
                what: "guest cgroups ([isolation] required = true)".into(),
                source: std::io::Error::other(e),
            })?;
        // Without cgroups too: the guests recorded by a previous run.
        leftovers::kill_all(&config.state_dir, cgroups.as_ref());
        sc.guest_records = Some(guest_records::dir(&config.state_dir));
        // The activity source feeds the lending gate, which forces NA while
        // the owner stopped lending or the schedule is closed
        // (lending_gate.rs).
        let controls = Arc::new(owner_controls::ControlsStore::open(&config.state_dir)?);
        let log = Arc::new(owner_log::OwnerLog::open(&config.state_dir));
        let news = Arc::new(lending_gate::GateNews::default());
        let (activity_tx, raw_rx) = watch::channel(initial);
        tasks.push(
            lending_gate::Gate {
                config_windows: config.policy.windows.clone(),
                raw: raw_rx.clone(),
                controls: controls.subscribe(),
                out: owner.clone(),
                log: log.clone(),
                news: news.clone(),
            }
            .spawn(shutdown.clone()),
        );
        if let Some(t) =
            owner_watch::spawn_activity(&config, cgroups.clone(), activity_tx, shutdown.clone())
        {
            tasks.push(t);
        }
        sc.checkpoint_signal = config.checkpoint_signal_number().unwrap_or(libc::SIGTERM);
        sc.checkpoint_grace = Duration::from_secs_f64(config.checkpoint_grace_secs.max(0.0));
        sc.checkpoint_bytes_per_sec = config.checkpoint_bytes_per_sec;
        sc.criu_sandbox_dir = config.criu_sandbox_dir.clone();
        sc.address = address;
        sc.policy = EvictionPolicy::from_name(&config.eviction_policy).ok_or_else(|| {
            ConfigError::Invalid {
                field: "eviction_policy",
                message: format!("unknown policy {:?}", config.eviction_policy),
            }
        })?;
        template.cpus = sc.cpus;
        template.memory_mb = sc.memory_mb;
        // Placements are checked against the machine the station
        // advertises, with the same fit check as the matchmaker's.
        sc.machine = template.clone();
        sc.gpus = config.gpus.devices();
        sc.guest_policy = config.policy.clone();
        let starter =
            Starter::new(sc, Box::new(claims), owner_rx, cgroups)?.with_owner_log(log.clone());
        let starter = Arc::new(starter);
        tasks.push(follow_controls(
            controls.subscribe(),
            starter.clone(),
            config.isolation.bound_memory,
            shutdown.clone(),
        ));
        if !starter.slot_pool().is_personal() {
            state_seal::seal_execute_parent(&config.state_dir, &config.execute_dir());
        }
        let host = Host {
            config,
            template,
            owner,
            starter: Some(starter),
            owner_side: Some(OwnerSide {
                controls,
                log,
                news,
                detector: raw_rx,
            }),
        };
        Ok((host, tasks))
    }

    /// The starter's endpoints (`/v1/place`, `/v1/guests`), if this
    /// station hosts.
    pub fn router(&self) -> Option<Router> {
        self.starter.as_ref().map(|s| starter::router(s.clone()))
    }

    /// The owner's side (`None` on a station that never hosts).
    pub fn owner_side(&self) -> Option<&OwnerSide> {
        self.owner_side.as_ref()
    }

    /// The starter, if this station hosts.
    pub fn starter(&self) -> Option<&Arc<Starter>> {
        self.starter.as_ref()
    }

    /// Changes of the owner's state (the coordinator must hear of them at
    /// once).
    pub fn owner_changes(&self) -> watch::Receiver<OwnerState> {
        self.owner.subscribe()
    }

    /// Resolves when a guest has ended and its slot is free (never on a
    /// station that does not host).
    pub async fn guest_ended(&self) {
        match &self.starter {
            Some(s) => s.guest_ended.notified().await,
            None => std::future::pending().await,
        }
    }

    /// The guests running here with their states (empty on a submit-only
    /// station), as `GET /v1/guests` lists them.
    pub fn guests(&self) -> Vec<starter::GuestListing> {
        self.starter
            .as_ref()
            .map(|s| s.listing())
            .unwrap_or_default()
    }

    /// Each guest's ladder state, for the ad's dashboard summary.
    pub fn guest_ladders(&self) -> Vec<gleaner_proto::summary::GuestLadder> {
        self.guests()
            .into_iter()
            .take(gleaner_proto::summary::MAX_GUESTS)
            .map(|g| gleaner_proto::summary::GuestLadder {
                job: g.info.job,
                home: g.info.home,
                state: g.state,
            })
            .collect()
    }

    /// The owner's state as the execute side sees it now.
    pub fn owner_state(&self) -> OwnerState {
        *self.owner.borrow()
    }

    /// This side's part of the station's ad.
    pub fn part(&self) -> HostPart {
        let machine = match &self.starter {
            // The ad placements are checked against (starter/admission.rs).
            Some(s) => s.current_ad(),
            None => {
                let mut ad = self.template.clone();
                ad.state = *self.owner.borrow();
                ad.cpus = 0;
                ad.policy = self.config.policy.to_ad(crate::clock::now_secs() as i64);
                ad
            }
        };
        HostPart {
            machine,
            transfer_rate: self.starter.as_ref().and_then(|s| s.rate.own()),
        }
    }

    /// The pool's checkpoint transfer rate from the coordinator's reply:
    /// the fallback for new guests' `T_migr`.
    pub fn on_pool_transfer_rate(&self, rate: Option<u64>) {
        if let Some(s) = &self.starter {
            s.on_pool_transfer_rate(rate.map(|r| r as f64));
        }
    }

    /// The coordinator's destinations for this host's guests: each guest's
    /// eviction ladder hears whether a free node would take it.
    pub fn on_destinations(&self, destinations: &[Destination]) {
        if let Some(s) = &self.starter {
            s.on_destinations(destinations);
        }
    }

    /// The coordinator's word on whether an administrator drained this
    /// host: a drained host keeps no claim for its homes' next jobs
    /// (`starter::held_claims`).
    pub fn on_drained(&self, drained: bool) {
        if let Some(s) = &self.starter {
            s.on_drained(drained);
        }
    }

    /// Stops hosting: no new guests; every guest is vacated (a
    /// self-checkpointing one checkpoints first, within its grace) and
    /// reported to its home, which requeues it. Returns when they are gone
    /// or the grace is over.
    pub async fn drain(&self) {
        let Some(s) = &self.starter else { return };
        s.set_draining(true);
        s.vacate_all("the station is shutting down");
        let deadline =
            std::time::Instant::now() + s.config().checkpoint_grace + Duration::from_secs(5);
        while !s.running_guests().is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// After the daemon's tasks stopped: guests still there after the
    /// grace are killed, so none is left running unsupervised on the
    /// owner's machine, and the guests' cgroup parent goes.
    pub fn clear_leftovers(&self) {
        let Some(s) = &self.starter else { return };
        leftovers::kill_all(&self.config.state_dir, s.cgroups());
        // Escapees of guests whose records are gone: every slot not leased
        // (a guest task still running holds its slot and kills it itself).
        for (slot, _) in s.slot_pool().reap_unleased(crate::isolation::REAP_TIMEOUT) {
            if let Some(u) = s.slot_pool().slots().iter().find(|x| x.name == slot) {
                orphans::reap_orphans_of(u.user.uid);
            }
        }
        if let Some(m) = s.cgroups()
            && let Err(e) = m.remove_parent()
        {
            tracing::debug!(error = %e, "guest cgroup parent not removed");
        }
    }
}

/// Applies the owner's controls to the starter as they change: the policy
/// for new guests, the schedule it advertises, the memory it offers, and
/// the cap on the guests' cgroup subtree (when there is one and the
/// station bounds memory).
fn follow_controls(
    mut rx: watch::Receiver<owner_controls::OwnerControls>,
    starter: Arc<Starter>,
    bound_memory: bool,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let c = rx.borrow_and_update().clone();
            let overrides = starter::Overrides {
                policy: c
                    .eviction_policy
                    .as_deref()
                    .and_then(EvictionPolicy::from_name),
                windows: c.schedule.clone(),
                memory_cap_mb: c.guest_memory_mb,
            };
            starter.set_overrides(overrides);
            if let Some(m) = starter.cgroups()
                && (bound_memory || c.guest_memory_mb.is_some())
            {
                let bytes = starter.offered_memory_mb().saturating_mul(1024 * 1024);
                // The owner's cap is a hard one; the station's own bound
                // leaves a quarter of slack above its soft limit
                // (isolation/settings.rs).
                let bounds = match c.guest_memory_mb {
                    Some(_) => crate::isolation::MemoryBounds {
                        high: Some(bytes / 10 * 9),
                        max: Some(bytes),
                    },
                    None => crate::isolation::MemoryBounds {
                        high: Some(bytes),
                        max: Some(bytes.saturating_add(bytes / 4)),
                    },
                };
                if let Err(e) = m.set_parent_memory(bounds) {
                    tracing::warn!(error = %e, "cannot set the guests' memory cap");
                }
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return },
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    })
}
