//! The ladder's decisions carried out on the guest's real processes, and
//! the way out of the host.

use super::super::control::{Control, exit_code};
use super::super::criu::criu_dump;
use super::GuestRun;
use super::launch::ExitWait;
use gleaner_core::eviction::{Action, EvictionLadder};
use gleaner_proto::job::{JobEventKind, JobState};
use std::time::Duration;

impl GuestRun<'_> {
    /// Carries out ladder actions on the real process. Returns why the
    /// guest must leave, if it must.
    pub(super) fn apply(
        &self,
        ctl: &mut Control,
        acts: &[Action],
        ladder: &EvictionLadder,
    ) -> Option<String> {
        for a in acts {
            tracing::debug!(job = %self.req.job_id, action = ?a, "ladder action");
            match a {
                // Guests run at idle priority at all times, not only while
                // the owner is active (issue 12): "run normally" means
                // running, still idle, which costs a guest nothing while
                // the CPU is otherwise free (Ryu & Hollingsworth L54).
                Action::RunNormal => {}
                Action::LowerPriority => ctl.keep_idle(),
                Action::Suspend => {
                    ctl.suspend();
                    self.home.report(
                        JobEventKind::Suspended,
                        JobState::Suspended,
                        "owner active: suspended",
                    );
                }
                Action::Resume => {
                    ctl.resume();
                    self.home.report(
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

    /// Leave the host: a CRIU dump, or the checkpoint signal for jobs that
    /// checkpoint themselves with a bounded grace to exit, then kill (at
    /// once when `now`). Returns whether a checkpoint is ready to ship.
    pub(super) async fn evict(
        &self,
        ctl: &mut Control,
        exit_rx: &mut ExitWait,
        now: bool,
        root: u32,
    ) -> bool {
        if let Some(c) = self.criu()
            && !now
        {
            // CRIU cannot seize a frozen task.
            ctl.resume();
            match criu_dump(&c, root).await {
                Ok(()) => {
                    ctl.kill();
                    let _ = tokio::time::timeout(Duration::from_secs(10), &mut *exit_rx).await;
                    self.entry.slot.kill_all(&self.entry.guest_id).await;
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
            ctl.checkpoint_signal();
            let grace = self.starter.config.checkpoint_grace;
            if let Ok(r) = tokio::time::timeout(grace, &mut *exit_rx).await {
                ctl.kill();
                self.entry.slot.kill_all(&self.entry.guest_id).await;
                return matches!(r, Ok(Ok(s)) if exit_code(s) == sc.exit_code);
            }
        }
        ctl.resume();
        ctl.kill();
        let _ = tokio::time::timeout(Duration::from_secs(10), exit_rx).await;
        // What left the guest's process group (or, without cgroups, the
        // tree) dies by its uid.
        self.entry.slot.kill_all(&self.entry.guest_id).await;
        false
    }
}
