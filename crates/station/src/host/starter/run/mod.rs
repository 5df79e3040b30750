//! One guest's run on this host, as a sequence of stages:
//!
//! 1. [`prepare`](GuestRun::prepare) (`prepare.rs`): the sandbox, the
//!    executable and the input files → [`Prepared`];
//! 2. [`restore`](GuestRun::restore) (`restore.rs`): the latest good
//!    checkpoint from home → [`Restored`];
//! 3. launch: [`setup`](GuestRun::setup) (`setup.rs`) once per run —
//!    cgroup, eviction ladder, capture files, environment → [`Launchpad`];
//!    then [`launch`](GuestRun::launch) (`launch.rs`) for each start of the
//!    program → [`Pass`];
//! 4. [`supervise`](GuestRun::supervise) (`supervise.rs`): owner events,
//!    ladder deadlines, periodic checkpoints, the lease and vacate requests
//!    until the program ends or must leave → [`PassEnd`]; then
//!    [`settle`](GuestRun::settle) (`settle.rs`): restart in place after a
//!    checkpoint, or the run's [`Outcome`];
//! 5. [`finish`](GuestRun::finish) (`finish.rs`): output flushed, cgroup
//!    removed, output files home, `completed` reported.
//!
//! A stage that ends the run early returns [`Stop`]. `actions.rs` carries
//! the ladder's actions out on the processes; `task.rs` is the guest's
//! task around the run (reports, CRIU sandbox, lease, clean-up).

mod actions;
mod deferral;
mod finish;
mod launch;
mod prepare;
mod restore;
mod settle;
mod setup;
mod supervise;
mod task;

pub(crate) use task::guest_task;

use super::guests::{Command, GuestEntry};
use super::jic::Home;
use super::{Starter, StarterError};
use crate::checkpoint::{Criu, SelfCheckpoint};
use crate::isolation::{GuestUser, IsolationError, SandboxDisk};
use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_proto::wire::{PlacementRequest, StartFailure};
use launch::Pass;
use prepare::Prepared;
use restore::Restored;
use settle::Next;
use setup::Launchpad;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use supervise::PassEnd;
use tokio::sync::{mpsc, watch};

/// How a run ended.
pub(crate) enum Outcome {
    Exited(i32),
    Evicted(String),
    /// Held by the host, with its `HoldReasonCode` if it has one.
    Held(String, Option<u32>),
    /// The program could not be started (the home decides what next).
    StartFailed(StartFailure),
}

/// Why the stages stopped before the run's end.
pub(crate) enum Stop {
    /// The run is over with this outcome (evicted, held).
    Early(Outcome),
    /// A host-side failure.
    Failed(StarterError),
}

impl Stop {
    fn evicted(why: impl Into<String>) -> Self {
        Stop::Early(Outcome::Evicted(why.into()))
    }

    fn held(why: impl Into<String>) -> Self {
        Stop::Early(Outcome::Held(why.into(), None))
    }

    /// The program could not be started: `code` is the `HoldReasonCode`
    /// a hold for it carries, `errno` its subcode.
    fn start_failed(code: u32, errno: i32, message: String) -> Self {
        Stop::Early(Outcome::StartFailed(StartFailure {
            code,
            subcode: errno,
            message,
        }))
    }
}

impl From<StarterError> for Stop {
    fn from(e: StarterError) -> Self {
        Stop::Failed(e)
    }
}

impl From<IsolationError> for Stop {
    fn from(e: IsolationError) -> Self {
        Stop::Failed(e.into())
    }
}

/// One run of a guest on this host.
pub(crate) struct GuestRun<'a> {
    pub(crate) starter: &'a Arc<Starter>,
    pub(crate) entry: &'a Arc<GuestEntry>,
    pub(crate) req: &'a PlacementRequest,
    pub(crate) sandbox: PathBuf,
    /// The line to the job's home.
    pub(crate) home: Home,
    /// The self-checkpointing backend, if the job declares it.
    pub(crate) ckpt: Option<SelfCheckpoint>,
    /// The CRIU image directory, if the job asks for CRIU (then `ckpt` is
    /// `None`); see [`GuestRun::criu`].
    pub(crate) criu_images: Option<PathBuf>,
    /// Becomes `Some(why)` when the lease with the home is lost.
    pub(crate) lease: watch::Receiver<Option<String>>,
    /// stdout/stderr lengths at the restored checkpoint: this run's
    /// output continues from there.
    pub(crate) base_lens: Mutex<(u64, u64)>,
    /// CPU seconds the run used (set when its last pass ends).
    pub(crate) cpu_secs: Mutex<f64>,
    /// A parallel job's member its home suspended with its gang (another
    /// member's owner came back): it stays stopped, whatever its own
    /// owner does, until the home releases it.
    pub(crate) gang_held: std::sync::atomic::AtomicBool,
    /// The sandbox's file system (`request_disk`), once made.
    pub(crate) disk: Mutex<Option<SandboxDisk>>,
}

impl GuestRun<'_> {
    /// Who the guest runs as: its slot account (`None` in a personal
    /// pool). May change once, before a CRIU restore (`restore.rs`).
    pub(crate) fn user(&self) -> Option<GuestUser> {
        self.entry.slot.user()
    }

    /// The CRIU backend as the guest's current slot account.
    pub(crate) fn criu(&self) -> Option<Criu> {
        self.criu_images.as_ref().map(|images| Criu {
            images: images.clone(),
            user: self.user(),
        })
    }

    pub(crate) fn is_criu(&self) -> bool {
        self.criu_images.is_some()
    }

    pub(crate) fn base(&self) -> (u64, u64) {
        self.base_lens.lock().map_or((0, 0), |b| *b)
    }

    /// (bytes used, bytes requested) of the sandbox, if it has a bound;
    /// measuring an unbounded one walks it, off the runtime.
    pub(crate) async fn disk_usage(&self) -> Option<(u64, u64)> {
        let (bounded, dir, limit) = {
            let d = self.disk.lock().ok()?;
            let d = d.as_ref()?;
            (d.bounded(), d.dir().to_path_buf(), d.limit())
        };
        if bounded {
            return self.disk.lock().ok()?.as_ref().map(SandboxDisk::usage);
        }
        let used = tokio::task::spawn_blocking(move || crate::isolation::usage_of_dir(&dir))
            .await
            .ok()?;
        Some((used, limit))
    }

    /// How often the sandbox's usage is looked at: one `statvfs` for a
    /// file system of its own, a walk for a plain directory.
    pub(crate) fn disk_period(&self) -> Option<std::time::Duration> {
        let d = self.disk.lock().ok()?;
        let d = d.as_ref()?;
        Some(std::time::Duration::from_millis(if d.bounded() {
            500
        } else {
            2000
        }))
    }

    /// The hold for a sandbox that used all it asked for (HTCondor's
    /// `JobOutOfResources` with its disk subcode), if it did.
    pub(crate) async fn disk_exceeded(&self) -> Option<String> {
        let (used, limit) = self.disk_usage().await?;
        (used >= limit).then(|| {
            format!(
                "DiskUsage exceeded request_disk: the sandbox holds {} KiB, {} KiB were \
                 requested; consider increasing request_disk",
                used / 1024,
                limit / 1024
            )
        })
    }

    /// Unmounts and deletes the sandbox's file system (its files with
    /// it), off the runtime.
    pub(crate) async fn remove_disk(&self) {
        let d = self.disk.lock().ok().and_then(|mut d| d.take());
        if let Some(mut d) = d {
            let _ = tokio::task::spawn_blocking(move || d.remove()).await;
        }
    }

    /// Runs the guest and reports how it ended (`completed` is reported by
    /// `finish`, after the uploads); returns the end in words for the
    /// owner's history.
    pub(crate) async fn run(&self, rx: &mut mpsc::UnboundedReceiver<Command>) -> String {
        match self.execute(rx).await {
            Ok(Outcome::Exited(code)) => {
                tracing::debug!(job = %self.req.job_id, code, "guest done");
                format!("completed (exit {code})")
            }
            Ok(Outcome::Evicted(why)) => {
                self.home
                    .report(JobEventKind::Evicted, JobState::Idle, why.clone());
                format!("evicted: {why}")
            }
            Ok(Outcome::StartFailed(f)) => {
                tracing::warn!(job = %self.req.job_id, code = f.code, errno = f.subcode, message = %f.message, "guest failed to start");
                let words = format!("failed to start: {}", f.message);
                self.home.report_start_failure(f);
                words
            }
            Ok(Outcome::Held(why, code)) => {
                let words = format!("held: {why}");
                self.home.report_held(why, code);
                words
            }
            // A host-side failure is not the job's fault: back to the queue.
            Err(e) => {
                tracing::error!(job = %self.req.job_id, error = %e, "guest failed on this host");
                self.home.report(
                    JobEventKind::Evicted,
                    JobState::Idle,
                    format!("host error: {e}"),
                );
                format!("host error: {e}")
            }
        }
    }

    async fn execute(
        &self,
        rx: &mut mpsc::UnboundedReceiver<Command>,
    ) -> Result<Outcome, StarterError> {
        match self.stages(rx).await {
            Ok(o) | Err(Stop::Early(o)) => Ok(o),
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// prepare → restore → launch → supervise → finish.
    async fn stages(&self, rx: &mut mpsc::UnboundedReceiver<Command>) -> Result<Outcome, Stop> {
        let prepared: Prepared = self.prepare(rx).await?;
        let restored: Restored = self.restore().await?;
        // A deferred job starts at its time, not before.
        self.wait_for_start(rx).await?;
        let mut pad: Launchpad = self.setup(&restored)?;
        // Each pass runs the program once; a self-checkpointing job that
        // exits with its checkpoint code is restarted in place (HTCondor's
        // checkpoint_exit_code semantics).
        let (outcome, usage, ctl, quiet) = loop {
            let mut pass: Pass = self.launch(&mut pad, &prepared).await?;
            let end: PassEnd = self.supervise(&mut pad, &mut pass, rx).await;
            match self.settle(&mut pad, pass, end, rx, &prepared).await? {
                Next::Restart => pad.runs += 1,
                Next::Done {
                    outcome,
                    usage,
                    ctl,
                    quiet,
                } => break (outcome, usage, ctl, quiet),
            }
        };
        if let Ok(mut c) = self.cpu_secs.lock() {
            *c = usage.cpu_secs;
        }
        Ok(self
            .finish(pad, ctl, outcome, usage, &restored.before, quiet)
            .await)
    }
}
