//! Checkpoints of a running guest: taken (collected into a bundle file)
//! and shipped home, or fetched from home and unpacked before a start.
//! The transfers themselves are the home channel's (`jic/transfer.rs`).

use super::config::{STDERR_FILE, STDOUT_FILE};
use super::jic::Streaming;
use super::run::GuestRun;
use super::sandbox::Capture;
use crate::checkpoint::{BundleSource, CheckpointError, Checkpointer, Manifest};
use gleaner_core::eviction::{Estimates, EvictionLadder, LadderEvent};
use gleaner_core::linger::MigrationCost;
use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

impl GuestRun<'_> {
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
    pub(crate) async fn restore_checkpoint(&self) -> Result<Option<Manifest>, String> {
        let path = self.bundle_path();
        if !self.home.download_checkpoint(&path).await? {
            return Ok(None);
        }
        let m = self.unpack(path.clone()).await;
        let _ = std::fs::remove_file(&path);
        let m = m?;
        tracing::info!(job = %self.req.job_id, seq = m.seq, bytes = m.payload_bytes(), backend = %m.backend, "checkpoint restored");
        Ok(Some(m))
    }

    /// Unpacks a downloaded bundle (off the runtime); the files go to the
    /// guest user.
    async fn unpack(&self, bundle: PathBuf) -> Result<Manifest, String> {
        let dir = self.sandbox.clone();
        let user = self.user();
        let criu = self.criu();
        tokio::task::spawn_blocking(move || -> Result<Manifest, String> {
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
        .map_err(|e| e.to_string())?
    }

    /// After the job exited with its checkpoint code (or CRIU dumped it):
    /// waits until the output written so far is at home (the checkpoint
    /// records its length), ships the checkpoint, and feeds the measured
    /// rate into the ladder's `T_migr` (Ryu & Hollingsworth Eq. 5).
    /// Failures are logged: the job still restarts from its local files.
    /// Returns the size shipped, the image a migration would now move.
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
        let path = self.bundle_path();
        let _ = std::fs::remove_file(&path);
        let Some(payload) = self.collect(manifest, path.clone()).await else {
            let _ = std::fs::remove_file(&path);
            return None;
        };
        let shipped = self
            .home
            .upload_checkpoint(&path, payload, *seq, deadline)
            .await;
        if let Some(bytes) = shipped {
            self.feed_t_migr(ladder, bytes);
        }
        let _ = std::fs::remove_file(&path);
        if shipped.is_none() {
            tracing::warn!(job = %self.req.job_id, "checkpoint not shipped home");
        }
        shipped
    }

    /// Collects the checkpoint into a bundle file at `out` (off the
    /// runtime): the job's checkpoint files, or CRIU's images with the
    /// sandbox. Returns the payload size; `None` (logged) on failure.
    async fn collect(&self, manifest: Manifest, out: PathBuf) -> Option<u64> {
        let dir = self.sandbox.clone();
        let (sc, criu) = (self.ckpt.clone(), self.criu());
        let collected = tokio::task::spawn_blocking(move || match (&criu, &sc) {
            (Some(c), _) => {
                let sources: Vec<BundleSource> =
                    c.bundle_sources(&dir, &[STDOUT_FILE, STDERR_FILE])?;
                crate::checkpoint::write_bundle_file(
                    Manifest {
                        backend: "criu".into(),
                        // A restore must run as this uid (`lease_uid`).
                        uid: c.user.map(|u| u.uid),
                        ..manifest
                    },
                    &sources,
                    &out,
                )
            }
            (None, Some(sc)) => sc.collect_to(&dir, manifest, &out),
            (None, None) => Err(CheckpointError::Corrupt("no checkpointing".into())),
        })
        .await;
        match collected {
            Ok(Ok(m)) => Some(m.payload_bytes()),
            Ok(Err(e)) => {
                tracing::warn!(job = %self.req.job_id, error = %e, "cannot collect checkpoint");
                None
            }
            Err(e) => {
                tracing::warn!(job = %self.req.job_id, error = %e, "checkpoint collector failed");
                None
            }
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
