//! Stage 3a, set up the launch (once per run): the guest's cgroup and
//! clean-up guard, its eviction ladder, the capture files and their
//! streams, the environment.

use super::super::control::KillOnDrop;
use super::super::jic::Streaming;
use super::super::sandbox::Capture;
use super::{GuestRun, Stop, restore::Restored};
use crate::host::guest_records::GuestTracker;
use crate::isolation::{GuestCgroup, MemoryBounds};
use gleaner_core::detector::OwnerState;
use gleaner_core::eviction::{Action, EvictionLadder, LadderEvent};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What every start of the program in a run shares (a job restarted in
/// place after a checkpoint keeps it).
pub(crate) struct Launchpad {
    /// First field: dropped first, so the guest is killed before anything
    /// else goes.
    pub(crate) iso: Isolation,
    pub(crate) ladder: EvictionLadder,
    /// The owner's state, as the station's monitor sees it.
    pub(crate) owner: watch::Receiver<OwnerState>,
    /// What the pool says: a destination for this guest, and the rate
    /// behind `T_migr` (`starter/destinations.rs`).
    pub(crate) pool: PoolNews,
    /// The ladder's actions at placement, applied at the first start.
    pub(crate) first: Option<Vec<Action>>,
    pub(crate) capture: Capture,
    pub(crate) streams: Streaming,
    pub(crate) env: BTreeMap<OsString, OsString>,
    pub(crate) started: Instant,
    /// The exit code that means "checkpoint taken" (self-checkpointing).
    pub(crate) checkpoint_exit: Option<i32>,
    pub(crate) ckpt_interval: Option<Duration>,
    /// The lease's state (see `GuestRun::lease`); `lease_open` until its
    /// sender is gone.
    pub(crate) lease: watch::Receiver<Option<String>>,
    pub(crate) lease_open: bool,
    /// Sequence number of the latest checkpoint.
    pub(crate) seq: u64,
    /// Starts so far after the first.
    pub(crate) runs: u32,
}

/// The pool's news for one guest's ladder; each `*_open` until its sender
/// is gone.
pub(crate) struct PoolNews {
    pub(crate) destination: watch::Receiver<Option<bool>>,
    pub(crate) destination_open: bool,
    pub(crate) rate: watch::Receiver<Option<f64>>,
    pub(crate) rate_open: bool,
    /// The size of the checkpoint the guest was restored from (the image
    /// `T_migr` moves), if any.
    pub(crate) image_bytes: Option<u64>,
}

/// The guest's cgroup and the guard that kills it.
pub(crate) struct Isolation {
    /// Declared before `record`: the guest is killed before its record
    /// goes.
    pub(crate) guard: KillOnDrop,
    pub(crate) record: GuestTracker,
    pub(crate) cgroup: Option<GuestCgroup>,
}

impl Isolation {
    /// The guest is gone: its cgroup removed (the guard retries on drop if
    /// it is not empty yet) and its record with it.
    pub(crate) fn release(&mut self) {
        if let Some(g) = &self.cgroup {
            // Removal needs an empty group; the guard retries on drop.
            if g.remove().is_ok() {
                self.guard.cgroup = None;
            }
        }
        self.guard.pgid = None;
        self.record.reaped();
    }
}

/// The ladder at placement.
struct LadderStart {
    ladder: EvictionLadder,
    owner: watch::Receiver<OwnerState>,
    pool: PoolNews,
    first: Vec<Action>,
}

impl GuestRun<'_> {
    /// Builds the [`Launchpad`]. A ladder that sends the guest away at
    /// once (the owner is active and the policy does not linger) ends the
    /// run here.
    pub(super) fn setup(&self, restored: &Restored) -> Result<Launchpad, Stop> {
        let base = self.base();
        let iso = self.isolate()?;
        let start = self.start_ladder(restored.payload_bytes)?;
        let (capture, readers) = Capture::create(&self.sandbox, self.user())?;
        let env = self.environment();
        let started = Instant::now();
        let d = &self.req.description;
        let checkpoint_exit = self.ckpt.as_ref().map(|c| c.exit_code);
        let ckpt_interval = d
            .checkpoint_interval_secs
            .filter(|_| self.ckpt.is_some() || self.is_criu())
            .map(Duration::from_secs);
        let streams = Streaming::new(&self.home, base, readers)?;
        Ok(Launchpad {
            iso,
            ladder: start.ladder,
            owner: start.owner,
            pool: start.pool,
            first: Some(start.first),
            capture,
            streams,
            env,
            started,
            checkpoint_exit,
            ckpt_interval,
            lease: self.lease.clone(),
            lease_open: true,
            seq: restored.seq,
            runs: 0,
        })
    }

    /// The guest's cgroup, with memory bounds from `request_memory`, and
    /// the guard that kills it.
    fn isolate(&self) -> Result<Isolation, Stop> {
        let mut iso = Isolation {
            guard: KillOnDrop {
                pgid: None,
                cgroup: None,
            },
            record: GuestTracker::new(
                self.starter.config.guest_records.as_deref(),
                &self.entry.guest_id,
                self.req.job_id,
            )
            .with_home(&self.req.home)
            .with_slot(self.entry.slot.name(), self.user().map(|u| u.uid)),
            cgroup: None,
        };
        if let Some(m) = &self.starter.cgroups {
            let g = m.create(&self.entry.guest_id)?;
            iso.guard.cgroup = Some(g.clone());
            // Idle at all times (issue 12), the group as well as its tasks.
            if let Err(e) = g.set_idle(true) {
                tracing::warn!(guest = %self.entry.guest_id, error = %e,
                    "cannot make the guest's cgroup idle; its tasks are SCHED_IDLE");
            }
            // The lowest I/O weight too, where the kernel has weights (its
            // tasks are in the idle I/O class either way).
            if let Err(e) = g.set_io_lowest() {
                tracing::warn!(guest = %self.entry.guest_id, error = %e,
                    "cannot lower the guest's I/O weight; its tasks are in the idle I/O class");
            }
            if let Some(mb) = self.req.description.request_memory_mb {
                let bytes = mb.saturating_mul(1024 * 1024);
                // Soft bound at the request, hard bound 25 % above it:
                // guest pages are reclaimed first (Linger-Longer spec
                // §1.2 L142) without killing a job that overshoots a bit.
                g.set_memory(MemoryBounds {
                    high: Some(bytes),
                    max: Some(bytes.saturating_add(bytes / 4)),
                })?;
            }
            iso.cgroup = Some(g);
        }
        Ok(iso)
    }

    /// The ladder decides how the guest starts, knowing `T_migr` and
    /// whether a destination exists as far as the pool has said.
    fn start_ladder(&self, restored_bytes: Option<u64>) -> Result<LadderStart, Stop> {
        let mut owner = self.starter.owner.clone();
        let owner_active = *owner.borrow_and_update() == OwnerState::Na;
        let now = self.starter.now();
        // A parallel job's member lingers under LL-k where the owner lets
        // guests linger (gleaner_core::gang::member_ladder).
        let policy = match self.req.description.gang {
            Some(m) => gleaner_core::gang::member_ladder(&m.gang.policy(), self.starter.policy()),
            None => self.starter.policy(),
        };
        let mut ladder = EvictionLadder::new(policy, now);
        let mut pool = PoolNews {
            destination: self.entry.destination.subscribe(),
            destination_open: true,
            rate: self.starter.rate_news.subscribe(),
            rate_open: true,
            image_bytes: restored_bytes,
        };
        pool.rate.mark_unchanged();
        // T_migr from this host's measured rate, else the pool's (issue #6).
        let rate = self.starter.rate.get();
        if let Some(e) =
            crate::host::transfer_rate::initial_estimates(rate, restored_bytes, ladder.estimates())
        {
            ladder.handle(now, LadderEvent::Estimates(e));
        }
        if let Some(d) = *pool.destination.borrow_and_update() {
            ladder.handle(now, LadderEvent::Destination(d));
        }
        let first = ladder.on_placed(now, owner_active);
        if first.iter().any(|a| a.leaves_node()) {
            return Err(Stop::evicted("owner active at start"));
        }
        Ok(LadderStart {
            ladder,
            owner,
            pool,
            first,
        })
    }

    /// The guest's environment: a plain PATH, the sandbox as HOME and
    /// TMPDIR, HTCondor's scratch-directory and job-id variables, then the
    /// job's own.
    fn environment(&self) -> BTreeMap<OsString, OsString> {
        let mut env: BTreeMap<OsString, OsString> = BTreeMap::new();
        env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
        env.insert("HOME".into(), self.sandbox.clone().into_os_string());
        env.insert("TMPDIR".into(), self.sandbox.clone().into_os_string());
        env.insert(
            "_GLEANER_SCRATCH_DIR".into(),
            self.sandbox.clone().into_os_string(),
        );
        env.insert("_GLEANER_JOB_ID".into(), self.req.job_id.to_string().into());
        for (k, v) in &self.req.description.environment {
            env.insert(k.into(), v.into());
        }
        // On a host with GPUs, the ones given to this guest (none: the
        // empty list hides them all), as HTCondor's starter says it.
        if !self.starter.config.gpus.is_empty() {
            let gpus = crate::host::gpus::visible_devices(&self.entry.gpus);
            env.insert("CUDA_VISIBLE_DEVICES".into(), gpus.clone().into());
            env.insert(
                "_CONDOR_AssignedGPUs".into(),
                self.entry.gpus.join(",").into(),
            );
        }
        env
    }
}
