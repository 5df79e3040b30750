//! Stage 4, supervise: one start of the program watched until it exits or
//! must leave. Each event source has its handler: the owner's state, the
//! pool's news (a destination, the transfer rate), the ladder's deadlines,
//! periodic checkpoints, the lease, the starter's commands.

use super::super::criu::criu_dump;
use super::super::guests::VacateKind;
use super::launch::Pass;
use super::setup::Launchpad;
use super::{Command, GuestRun};
use gleaner_core::detector::OwnerState;
use std::process::ExitStatus;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio::sync::oneshot::error::RecvError;

/// The exit status as the waiter thread delivered it.
pub(crate) type ExitResult = Result<std::io::Result<ExitStatus>, RecvError>;

/// How a pass ended.
pub(crate) struct PassEnd {
    /// The program's exit, if it ended by itself.
    pub(crate) status: Option<ExitResult>,
    /// Why the guest must leave, if it must.
    pub(crate) leave: Option<String>,
    /// The lease was lost: leave at once, ship nothing.
    pub(crate) lease_lost: bool,
    /// A CRIU dump ended the process: its exit is a checkpoint.
    pub(crate) dumped: bool,
    /// What kind of leave a vacate request asked for.
    pub(crate) kind: VacateKind,
    /// The host holds the job, with this `HoldReasonCode` (its sandbox
    /// is full): it is killed at once and not requeued.
    pub(crate) hold: Option<u32>,
}

/// The supervision loop's state for one pass.
struct Watch {
    leave: Option<String>,
    kind: VacateKind,
    /// The owner monitor is gone (the owner is then taken as active).
    owner_gone: bool,
    lease_lost: bool,
    dumped: bool,
    next_ckpt: Option<Instant>,
    /// When the sandbox's usage is looked at next.
    next_disk: Option<Instant>,
    hold: Option<u32>,
}

/// Sleeps until `t`; forever without one.
async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

impl GuestRun<'_> {
    /// Waits for the program's exit, applying the ladder's actions as
    /// events arrive, until it exits or must leave.
    pub(super) async fn supervise(
        &self,
        pad: &mut Launchpad,
        pass: &mut Pass,
        rx: &mut mpsc::UnboundedReceiver<Command>,
    ) -> PassEnd {
        let mut w = Watch {
            leave: pass.leave.take(),
            kind: VacateKind::Vacate,
            owner_gone: false,
            lease_lost: false,
            dumped: false,
            next_ckpt: pad.ckpt_interval.map(|i| Instant::now() + i),
            next_disk: self.disk_period().map(|p| Instant::now() + p),
            hold: None,
        };
        // Held with its gang before it ran (or between two starts).
        if self.gang_held.load(std::sync::atomic::Ordering::SeqCst) && !pass.ctl.is_stopped() {
            pass.ctl.suspend();
            self.home.report(
                gleaner_proto::job::JobEventKind::Suspended,
                gleaner_proto::job::JobState::Suspended,
                "suspended with its gang: another member's owner is back",
            );
        }
        let status = loop {
            if w.leave.is_some() {
                break None;
            }
            let deadline = pad
                .ladder
                .next_deadline()
                .map(|t| self.starter.instant_of(t));
            tokio::select! {
                st = &mut pass.exit => break Some(st),
                ch = pad.owner.changed(), if !w.owner_gone => {
                    self.on_owner(ch.is_ok(), pad, pass, &mut w);
                }
                ch = pad.pool.destination.changed(), if pad.pool.destination_open => {
                    self.on_destination(ch.is_ok(), pad, pass, &mut w);
                }
                ch = pad.pool.rate.changed(), if pad.pool.rate_open => {
                    self.on_rate(ch.is_ok(), pad, pass, &mut w);
                }
                _ = sleep_until(deadline) => self.on_deadline(pad, pass, &mut w),
                _ = sleep_until(w.next_ckpt) => self.on_ckpt_tick(pad, pass, &mut w).await,
                _ = sleep_until(w.next_disk) => self.on_disk_tick(&mut w).await,
                ch = pad.lease.changed(), if pad.lease_open => {
                    self.on_lease(ch.is_ok(), pad, &mut w);
                }
                cmd = rx.recv() => self.on_command(cmd, pad, pass, &mut w),
            }
        };
        PassEnd {
            status,
            leave: w.leave,
            lease_lost: w.lease_lost,
            dumped: w.dumped,
            kind: w.kind,
            hold: w.hold,
        }
    }

    /// The sandbox's usage: a guest that used all of its `request_disk`
    /// is held (HTCondor's `JobOutOfResources`), whatever else it does.
    async fn on_disk_tick(&self, w: &mut Watch) {
        if let Some(why) = self.disk_exceeded().await {
            tracing::warn!(job = %self.req.job_id, %why, "guest held");
            w.leave = Some(why);
            w.kind = VacateKind::Hold;
            w.hold = Some(gleaner_proto::wire::hold_code::JOB_OUT_OF_RESOURCES);
        }
        w.next_disk = self.disk_period().map(|p| Instant::now() + p);
    }

    /// The owner's state changed (or its monitor is gone: assume the owner
    /// is back, the safe side for the owner; then wait for exit, deadlines
    /// or vacate only).
    fn on_owner(&self, alive: bool, pad: &mut Launchpad, pass: &mut Pass, w: &mut Watch) {
        let now = self.starter.now();
        let (acts, back) = if !alive {
            w.owner_gone = true;
            (pad.ladder.on_owner_active(now), true)
        } else {
            match *pad.owner.borrow_and_update() {
                OwnerState::Na => (pad.ladder.on_owner_active(now), true),
                OwnerState::Av => (pad.ladder.on_owner_idle(now), false),
            }
        };
        w.leave = self.apply(&mut pass.ctl, &acts, &pad.ladder);
        // How quickly the guest got out of the way: its first action after
        // the owner's return, carried out now (owner_log.rs).
        if back
            && let Some(a) = acts
                .iter()
                .find(|a| !matches!(a, gleaner_core::eviction::Action::RunNormal))
        {
            let latency = self.starter.owner_log.acted(
                &self.req.job_id.to_string(),
                &self.req.home,
                super::actions::action_name(a),
            );
            tracing::info!(job = %self.req.job_id, action = ?a, latency_ms = ?latency, "guest out of the owner's way");
        }
    }

    /// The coordinator said whether a free node would take the guest: the
    /// ladder may move it now (a Linger-Longer guest past `T_lingr`, a
    /// paused one waiting for somewhere to go).
    fn on_destination(&self, alive: bool, pad: &mut Launchpad, pass: &mut Pass, w: &mut Watch) {
        if !alive {
            pad.pool.destination_open = false;
            return;
        }
        let Some(available) = *pad.pool.destination.borrow_and_update() else {
            return;
        };
        let acts = pad.ladder.on_destination(self.starter.now(), available);
        w.leave = self.apply(&mut pass.ctl, &acts, &pad.ladder);
    }

    /// The transfer rate behind `T_migr` changed: Linger-Longer's linger
    /// time follows (Eq. 4 from the latest estimates).
    fn on_rate(&self, alive: bool, pad: &mut Launchpad, pass: &mut Pass, w: &mut Watch) {
        if !alive {
            pad.pool.rate_open = false;
            return;
        }
        let rate = *pad.pool.rate.borrow_and_update();
        let Some(est) = crate::host::transfer_rate::initial_estimates(
            rate,
            pad.pool.image_bytes,
            pad.ladder.estimates(),
        ) else {
            return;
        };
        let acts = pad.ladder.on_estimates(self.starter.now(), est);
        w.leave = self.apply(&mut pass.ctl, &acts, &pad.ladder);
    }

    /// A ladder deadline passed (grace, linger, pause…).
    fn on_deadline(&self, pad: &mut Launchpad, pass: &mut Pass, w: &mut Watch) {
        let acts = pad.ladder.on_timer(self.starter.now());
        w.leave = self.apply(&mut pass.ctl, &acts, &pad.ladder);
    }

    /// Periodic checkpoint: the job saves and exits with its checkpoint
    /// code, or CRIU dumps it (and it is restored in place). A stopped job
    /// waits its turn.
    async fn on_ckpt_tick(&self, pad: &Launchpad, pass: &Pass, w: &mut Watch) {
        if !(pass.ctl.is_stopped() || w.dumped) {
            match self.criu() {
                Some(c) => match criu_dump(&c, pass.pid).await {
                    Ok(()) => w.dumped = true,
                    Err(e) => {
                        tracing::warn!(job = %self.req.job_id, error = %e, "periodic CRIU dump failed; the job goes on")
                    }
                },
                None => {
                    tracing::debug!(job = %self.req.job_id, "periodic checkpoint signal");
                    pass.ctl.checkpoint_signal();
                }
            }
        }
        w.next_ckpt = pad.ckpt_interval.map(|i| Instant::now() + i);
    }

    /// The lease changed: lost means leave at once.
    fn on_lease(&self, alive: bool, pad: &mut Launchpad, w: &mut Watch) {
        if !alive {
            pad.lease_open = false;
            return;
        }
        if let Some(why) = pad.lease.borrow_and_update().clone() {
            w.lease_lost = true;
            w.leave = Some(why);
        }
    }
}

impl GuestRun<'_> {
    /// A vacate request, a gang hold or release, or the starter is going
    /// away.
    fn on_command(&self, cmd: Option<Command>, pad: &Launchpad, pass: &mut Pass, w: &mut Watch) {
        use gleaner_core::eviction::GuestState;
        use gleaner_proto::job::{JobEventKind, JobState};
        use std::sync::atomic::Ordering;
        w.leave = Some(match cmd {
            Some(Command::Vacate(why, kind)) => {
                w.kind = kind;
                why
            }
            Some(Command::GangHold(true, reply)) => {
                if let Some(reply) = reply {
                    let _ = reply.send(pad.ladder.state() == GuestState::Suspended);
                }
                if !self.gang_held.swap(true, Ordering::SeqCst) && !pass.ctl.is_stopped() {
                    pass.ctl.suspend();
                    self.home.report(
                        JobEventKind::Suspended,
                        JobState::Suspended,
                        "suspended with its gang: another member's owner is back",
                    );
                }
                self.entry
                    .set_state("suspended", Some(pass.ctl.pgid as u32));
                return;
            }
            Some(Command::GangHold(false, reply)) => {
                // Released by the gang; its own ladder may still hold it,
                // which its home hears in the reply: its own owner is
                // back, and the gang is held for that owner.
                let by_owner = pad.ladder.state() == GuestState::Suspended;
                if let Some(reply) = reply {
                    let _ = reply.send(by_owner);
                }
                if self.gang_held.swap(false, Ordering::SeqCst)
                    && !by_owner
                    && pass.ctl.is_stopped()
                {
                    pass.ctl.resume();
                    self.home.report(
                        JobEventKind::Resumed,
                        JobState::Running,
                        "resumed with its gang",
                    );
                }
                self.entry
                    .set_state(pad.ladder.state().name(), Some(pass.ctl.pgid as u32));
                return;
            }
            None => "starter shutting down".into(),
        });
    }
}
