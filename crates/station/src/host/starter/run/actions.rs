//! The ladder's decisions carried out on the guest's real processes, and
//! the way out of the host.

use super::super::control::{Control, exit_code};
use super::super::criu::criu_dump;
use super::super::guests::VacateKind;
use super::GuestRun;
use super::launch::ExitWait;
use gleaner_core::eviction::{Action, EvictionLadder, EvictionPolicy, GuestState};
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
            if let Ok(mut n) = self.starter.actions.lock() {
                *n.entry(action_name(a)).or_default() += 1;
            }
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
                // A member held with its gang stays stopped until its home
                // releases it.
                Action::Resume if self.gang_held.load(std::sync::atomic::Ordering::SeqCst) => {}
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
                    self.entry.set_state(ladder.state().name(), None);
                    return Some(self.leave_reason(ladder));
                }
            }
        }
        self.entry
            .set_state(ladder.state().name(), Some(ctl.pgid as u32));
        None
    }

    /// Why the ladder sends the guest away, for the home's history: a
    /// migration to a free node (Linger-Longer's after `T_lingr`), or an
    /// eviction with nowhere known to go.
    pub(super) fn leave_reason(&self, ladder: &EvictionLadder) -> String {
        let policy = *ladder.policy();
        match (ladder.state(), policy) {
            (GuestState::Migrating, EvictionPolicy::LingerLonger(_)) => format!(
                "migrating ({} policy): owner active for T_lingr = {:.1} s \
                 (T_migr = {:.1} s) and a free node would take the job",
                policy.name(),
                ladder.estimates().linger_time().as_secs_f64(),
                ladder.estimates().t_migr.as_secs_f64(),
            ),
            (GuestState::Migrating, _) => format!(
                "migrating ({} policy): owner active and a free node would take the job",
                policy.name()
            ),
            _ => format!("evicted by {} policy: owner active", policy.name()),
        }
    }

    /// Leave the host: a CRIU dump, or the checkpoint signal for jobs that
    /// checkpoint themselves with a bounded grace to exit, or the job's
    /// own `kill_sig` with its `job_max_vacate_time`, then kill (at once
    /// when `now`, and for a removal unless the job wants it graceful).
    /// Returns whether a checkpoint is ready to ship.
    pub(super) async fn evict(
        &self,
        ctl: &mut Control,
        exit_rx: &mut ExitWait,
        now: bool,
        root: u32,
        kind: VacateKind,
    ) -> bool {
        let d = &self.req.description;
        // HTCondor: condor_rm kills at once unless want_graceful_removal.
        let now = now || (kind == VacateKind::Remove && !d.want_graceful_removal);
        if !now && let Some((sig, wait)) = self.leave_signal(kind) {
            // The job asked for a signal to leave by: it gets it, and the
            // time it asked for, within the host's limit (the owner
            // comes first), before SIGKILL.
            ctl.resume();
            ctl.send_signal(sig);
            tracing::info!(job = %self.req.job_id, sig, secs = wait.as_secs_f64(), ?kind, "leave signal sent");
            if let Ok(r) = tokio::time::timeout(wait, &mut *exit_rx).await {
                ctl.kill();
                self.entry.slot.kill_left(ctl, &self.entry.guest_id).await;
                return self
                    .ckpt
                    .as_ref()
                    .is_some_and(|sc| matches!(r, Ok(Ok(s)) if exit_code(s) == sc.exit_code));
            }
            ctl.kill();
            let _ = tokio::time::timeout(Duration::from_secs(10), &mut *exit_rx).await;
            self.entry.slot.kill_left(ctl, &self.entry.guest_id).await;
            return false;
        }
        if let Some(c) = self.criu()
            && !now
        {
            // CRIU cannot seize a frozen task.
            ctl.resume();
            match criu_dump(&c, root).await {
                Ok(()) => {
                    ctl.kill();
                    let _ = tokio::time::timeout(Duration::from_secs(10), &mut *exit_rx).await;
                    self.entry.slot.kill_left(ctl, &self.entry.guest_id).await;
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
                self.entry.slot.kill_left(ctl, &self.entry.guest_id).await;
                return matches!(r, Ok(Ok(s)) if exit_code(s) == sc.exit_code);
            }
        }
        ctl.resume();
        ctl.kill();
        let _ = tokio::time::timeout(Duration::from_secs(10), exit_rx).await;
        // What left the guest's process group (or, without cgroups, the
        // tree) dies by its uid.
        self.entry.slot.kill_left(ctl, &self.entry.guest_id).await;
        false
    }
}

/// An action's name for `/metrics` and the owner's history.
pub(super) fn action_name(a: &Action) -> &'static str {
    match a {
        Action::RunNormal => "run",
        Action::LowerPriority => "lowered",
        Action::Suspend => "suspended",
        Action::Resume => "resumed",
        Action::Checkpoint => "checkpoint",
        Action::Migrate { .. } => "migrated",
        Action::Vacate { .. } => "vacated",
        Action::Kill => "killed",
    }
}

impl GuestRun<'_> {
    /// The signal a leaving job of `kind` gets and how long it has to
    /// exit, if the job asked for one (`kill_sig`, `hold_kill_sig`,
    /// `remove_kill_sig`, `job_max_vacate_time`): the time is the job's,
    /// at most the host's `checkpoint_grace`; without a time of its own,
    /// the host's. A CRIU job is dumped instead.
    fn leave_signal(&self, kind: VacateKind) -> Option<(i32, Duration)> {
        let d = &self.req.description;
        if self.criu_images.is_some() {
            return None;
        }
        let own = match kind {
            VacateKind::Hold => d.hold_kill_sig.or(d.kill_sig),
            VacateKind::Remove => d.remove_kill_sig.or(d.kill_sig),
            VacateKind::Vacate => d.kill_sig,
        };
        if own.is_none() && d.job_max_vacate_time.is_none() {
            return None;
        }
        let host_limit = self.starter.config.checkpoint_grace;
        let wait = d
            .job_max_vacate_time
            .map_or(host_limit, |s| Duration::from_secs(s).min(host_limit));
        Some((own.unwrap_or(libc::SIGTERM), wait))
    }
}
