//! Checkpoints of a running guest: packed and shipped home in one pass,
//! or restored from home as they arrive before a start. The transfers
//! themselves are the home channel's (`jic/transfer.rs`).

use super::config::{STDERR_FILE, STDOUT_FILE};
use super::jic::Streaming;
use super::run::GuestRun;
use super::sandbox::Capture;
use crate::checkpoint::pack::default_threads;
use crate::checkpoint::{BundleSource, CheckpointError, Checkpointer, Manifest, RestoreTo};
use gleaner_core::eviction::{Estimates, EvictionLadder, LadderEvent};
use gleaner_core::linger::MigrationCost;
use std::time::{Duration, Instant};

impl GuestRun<'_> {
    /// Restores the job's latest good checkpoint from home as it arrives:
    /// into the sandbox, and for CRIU the images into the image directory,
    /// every file the guest user's. Nothing of a checkpoint that does not
    /// verify is left (the home is asked for a good one). `None`: the job
    /// has none yet.
    pub(crate) async fn restore_checkpoint(&self) -> Result<Option<Manifest>, String> {
        let dir = self.sandbox.clone();
        let owner = self.user().map(|u| (u.uid, u.gid));
        let criu = self.criu();
        let to = || RestoreTo {
            route: match &criu {
                Some(c) => {
                    let (c, dir) = (c.clone(), dir.clone());
                    Box::new(move |name: &str| c.destination(&dir, name))
                }
                None => {
                    let dir = dir.clone();
                    Box::new(move |name: &str| dir.join(name))
                }
            },
            owner,
            threads: default_threads(),
        };
        let Some(f) = self.home.restore_checkpoint(to).await? else {
            return Ok(None);
        };
        let m = f.unpacked.manifest;
        tracing::info!(job = %self.req.job_id, seq = m.seq, bytes = m.payload_bytes(), received = f.bytes, secs = f.elapsed.as_secs_f64(), backend = %m.backend, "checkpoint restored");
        Ok(Some(m))
    }

    /// After the job exited with its checkpoint code (or CRIU dumped it):
    /// waits until the output written so far is at home (the checkpoint
    /// records its length), ships the checkpoint as it is packed, and
    /// feeds the measured rate into the ladder's `T_migr` (Ryu &
    /// Hollingsworth Eq. 5). Failures are logged: the job still restarts
    /// from its local files. Returns the size shipped, the image a
    /// migration would now move.
    pub(crate) async fn take_checkpoint(
        &self,
        ladder: &mut EvictionLadder,
        seq: &mut u64,
        streams: &Streaming,
        capture: &Capture,
    ) -> Option<u64> {
        if self.ckpt.is_none() && !self.is_criu() {
            return None;
        }
        let lens = capture.lens();
        let base = self.base();
        let want = [base.0 + lens[0], base.1 + lens[1]];
        let deadline = Instant::now() + self.home.patience();
        while !streams.delivered(want) {
            if Instant::now() > deadline {
                tracing::warn!(job = %self.req.job_id, "output not delivered; checkpoint not shipped");
                return None;
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
        let (manifest, sources) = match self.sources(manifest) {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(job = %self.req.job_id, error = %e, "cannot collect checkpoint");
                return None;
            }
        };
        let shipped = self
            .home
            .upload_checkpoint(manifest, sources, deadline)
            .await
            .map(|s| s.packed.raw_bytes);
        if let Some(bytes) = shipped {
            self.feed_t_migr(ladder, bytes);
        } else {
            tracing::warn!(job = %self.req.job_id, "checkpoint not shipped home");
        }
        shipped
    }

    /// What makes up the checkpoint: the job's checkpoint files, or CRIU's
    /// images with the sandbox; and the manifest naming its backend.
    fn sources(
        &self,
        manifest: Manifest,
    ) -> Result<(Manifest, Vec<BundleSource>), CheckpointError> {
        match (self.criu(), &self.ckpt) {
            (Some(c), _) => Ok((
                Manifest {
                    backend: "criu".into(),
                    // A restore must run as this uid (`lease_uid`).
                    uid: c.user.map(|u| u.uid),
                    ..manifest
                },
                c.bundle_sources(&self.sandbox, &[STDOUT_FILE, STDERR_FILE])?,
            )),
            (None, Some(sc)) => Ok((
                Manifest {
                    backend: sc.name().into(),
                    ..manifest
                },
                sc.sources(&self.sandbox)?,
            )),
            (None, None) => Err(CheckpointError::Corrupt("no checkpointing".into())),
        }
    }

    /// `T_migr` from the measured transfer rate and this checkpoint's size
    /// (Ryu & Hollingsworth Eq. 5).
    fn feed_t_migr(&self, ladder: &mut EvictionLadder, bytes: u64) {
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
    }
}
