//! Stage 2, restore: the job's latest good checkpoint from home, if it
//! checkpoints and has one.

use super::super::sandbox::{Snapshot, snapshot};
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
}
