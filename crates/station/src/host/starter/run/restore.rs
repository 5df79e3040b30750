//! Stage 2, restore: the job's latest good checkpoint from home, if it
//! checkpoints and has one.

use super::super::config::io_err;
use super::super::sandbox::{Snapshot, snapshot};
use super::super::slot::reown_top;
use super::{GuestRun, StarterError, Stop};
use crate::isolation::prepare_sandbox;

/// What `restore` hands on.
pub(crate) struct Restored {
    /// Sequence number of the restored checkpoint (0: none).
    pub(crate) seq: u64,
    /// Its size, for the first `T_migr` estimate.
    pub(crate) payload_bytes: Option<u64>,
    /// The sandbox before the job ran: output files are what is new.
    pub(crate) before: Snapshot,
}

impl GuestRun<'_> {
    /// Unpacks the checkpoint into the sandbox (and a CRIU job's images
    /// into its image directory); the output streams continue from the
    /// lengths it recorded. A failure is the host's, not the job's.
    pub(super) async fn restore(&self) -> Result<Restored, Stop> {
        let mut seq = 0u64;
        let mut payload_bytes = None;
        if let Some(c) = self.criu() {
            // The image directory belongs to the guest user (CRIU runs as
            // it) but lies outside the sandbox.
            prepare_sandbox(&c.images, self.user())?;
            c.clear().map_err(|e| StarterError::Http(e.to_string()))?;
        }
        if self.ckpt.is_some() || self.is_criu() {
            match self.restore_checkpoint().await {
                Ok(Some(m)) => {
                    if let Some(uid) = m.uid.filter(|_| self.is_criu()) {
                        self.adopt_uid(uid).await?;
                    }
                    seq = m.seq;
                    payload_bytes = Some(m.payload_bytes());
                    if let Ok(mut b) = self.base_lens.lock() {
                        *b = (m.stdout_len, m.stderr_len);
                    }
                }
                Ok(None) => {}
                // Not the job's fault: back to the queue, try elsewhere.
                Err(e) => {
                    return Err(StarterError::Http(format!("checkpoint restore: {e}")).into());
                }
            }
        }
        Ok(Restored {
            seq,
            payload_bytes,
            before: snapshot(&self.sandbox),
        })
    }

    /// A CRIU checkpoint is restored as the uid it was dumped as: an
    /// unprivileged restore cannot change it. Swap the slot leased at
    /// placement for the slot with that uid (stations that move CRIU jobs
    /// share slot uids, `slot_first_uid`) and hand the sandbox and images
    /// to it; none such free here sends the job elsewhere.
    async fn adopt_uid(&self, uid: u32) -> Result<(), Stop> {
        let Some(now) = self.user() else {
            // A personal pool has one identity: the restore tells.
            return Ok(());
        };
        if now.uid == uid {
            return Ok(());
        }
        let lease = self
            .starter
            .pool
            .lease_uid(&self.entry.guest_id, uid)
            .map_err(|e| {
                Stop::evicted(format!(
                    "the CRIU checkpoint runs as uid {uid}, and no free slot here has it: {e}"
                ))
            })?;
        let Some(user) = lease.user() else {
            return Ok(());
        };
        self.entry.slot.replace(lease, &self.entry.guest_id).await;
        tracing::info!(job = %self.req.job_id, uid, "slot swapped for the checkpoint's uid");
        let mut dirs = vec![self.sandbox.clone()];
        dirs.extend(self.criu_images.clone());
        tokio::task::spawn_blocking(move || {
            dirs.iter()
                .try_for_each(|d| reown_top(d, user).map_err(|e| io_err(d, e)))
        })
        .await
        .map_err(|e| StarterError::Http(e.to_string()))??;
        Ok(())
    }
}
