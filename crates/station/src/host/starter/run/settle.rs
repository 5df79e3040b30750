//! After a pass: a checkpoint exit restarts the program in place; an exit
//! ends the run; a guest that must leave is evicted (its checkpoint, if
//! one was taken on the way out, shipped home first).

use super::super::config::io_err;
use super::super::control::{Control, exit_code};
use super::super::guests::VacateKind;
use super::launch::Pass;
use super::prepare::Prepared;
use super::setup::Launchpad;
use super::supervise::{ExitResult, PassEnd};
use super::{Command, GuestRun, Outcome, StarterError, Stop};
use gleaner_proto::wire::{Usage, hold_code};
use std::time::Duration;
use tokio::sync::mpsc;

/// What follows a pass.
pub(crate) enum Next {
    /// Start the program again (after a checkpoint).
    Restart,
    /// The run is over; `ctl` still holds its processes' cgroup.
    Done {
        outcome: Outcome,
        usage: Usage,
        ctl: Control,
        /// The run ends without sending the rest of its output home (a
        /// hold or a removal).
        quiet: bool,
    },
}

impl GuestRun<'_> {
    /// Decides what follows a pass and does what it takes: kills
    /// stragglers, takes and ships checkpoints, evicts.
    pub(super) async fn settle(
        &self,
        pad: &mut Launchpad,
        pass: Pass,
        end: PassEnd,
        rx: &mut mpsc::UnboundedReceiver<Command>,
        prepared: &Prepared,
    ) -> Result<Next, Stop> {
        match (end.status, end.leave) {
            (Some(st), _) => self.exited(pad, pass, st, end.dumped, rx, prepared).await,
            (None, Some(why)) => Ok(self
                .leave(pad, pass, why, end.lease_lost, end.kind, end.hold)
                .await),
            (None, None) => {
                pass.ctl.kill();
                self.entry
                    .slot
                    .kill_left(&pass.ctl, &self.entry.guest_id)
                    .await;
                let usage = pass.ctl.usage(pad.started);
                Ok(Next::Done {
                    outcome: Outcome::Evicted("internal: no exit and no eviction".into()),
                    usage,
                    ctl: pass.ctl,
                    quiet: false,
                })
            }
        }
    }

    /// The program exited: a checkpoint (its checkpoint code, or a CRIU
    /// dump) goes home and the program restarts, unless a vacate came
    /// meanwhile; any other exit ends the run.
    async fn exited(
        &self,
        pad: &mut Launchpad,
        mut pass: Pass,
        st: ExitResult,
        dumped: bool,
        rx: &mut mpsc::UnboundedReceiver<Command>,
        prepared: &Prepared,
    ) -> Result<Next, Stop> {
        let code = match st {
            Ok(Ok(s)) => exit_code(s),
            Ok(Err(e)) => return Err(io_err(&prepared.program, e).into()),
            Err(_) => return Err(StarterError::Http("guest waiter vanished".into()).into()),
        };
        // Stragglers the job left behind (daemonised children): its group,
        // then, without cgroups too, everything of its slot's uid, before
        // the program restarts or the run ends.
        let usage = pass.ctl.usage(pad.started);
        pass.ctl.resume();
        pass.ctl.kill();
        self.entry
            .slot
            .kill_left(&pass.ctl, &self.entry.guest_id)
            .await;
        let outcome = if dumped || pad.checkpoint_exit == Some(code) {
            let shipped = self
                .take_checkpoint(&mut pad.ladder, &mut pad.seq, &pad.streams, &pad.capture)
                .await;
            if shipped.is_some() {
                pad.pool.image_bytes = shipped;
            }
            let lost = match shipped {
                Some(_) => None,
                None => self.lease_verdict(pad).await,
            };
            match (rx.try_recv(), lost) {
                (Ok(Command::Vacate(why, _)), _) => Outcome::Evicted(why),
                (Ok(Command::GangHold(h, _)), None) => {
                    // Applied when it restarts (`supervise.rs`).
                    self.gang_held.store(h, std::sync::atomic::Ordering::SeqCst);
                    if pad.ladder.state().on_node() {
                        return Ok(Next::Restart);
                    }
                    Outcome::Evicted(self.leave_reason(&pad.ladder))
                }
                (Ok(Command::GangHold(..)), Some(why)) => Outcome::Evicted(why),
                (_, Some(why)) => Outcome::Evicted(why),
                // The new T_migr ended the linger time: the checkpoint just
                // shipped is the move's.
                (Err(_), None) if !pad.ladder.state().on_node() => {
                    Outcome::Evicted(self.leave_reason(&pad.ladder))
                }
                (Err(_), None) => return Ok(Next::Restart),
            }
        } else if let Some(why) = self.disk_exceeded().await {
            // It filled its sandbox and stopped (ENOSPC) before the next
            // look at it: held for it all the same, not "completed".
            Outcome::Held(why, Some(hold_code::JOB_OUT_OF_RESOURCES))
        } else {
            Outcome::Exited(code)
        };
        let quiet = matches!(outcome, Outcome::Held(..));
        Ok(Next::Done {
            outcome,
            usage,
            ctl: pass.ctl,
            quiet,
        })
    }

    /// A checkpoint that did not go home (the home unreachable for as
    /// long as it would wait): the lease decides within one renewal period
    /// whether this run may go on, and the program is not restarted before.
    /// A run its home gave up on would otherwise work on past its last
    /// checkpoint at home until the lease's loss killed it, and the run
    /// the home starts elsewhere would redo that work (multihost_tls, a
    /// partition longer than the lease). `Some(why)`: the lease is lost.
    async fn lease_verdict(&self, pad: &mut Launchpad) -> Option<String> {
        if !pad.lease_open || (self.ckpt.is_none() && !self.is_criu()) {
            return None;
        }
        let lease = Duration::from_secs(self.req.lease_secs.unwrap_or(0));
        let wait = (lease / 3).max(Duration::from_millis(100)) + Duration::from_millis(500);
        match tokio::time::timeout(wait, pad.lease.wait_for(Option::is_some)).await {
            Ok(Ok(why)) => why.clone(),
            Ok(Err(_)) => {
                pad.lease_open = false;
                None
            }
            Err(_) => None,
        }
    }

    /// The guest must leave: evicted, with a checkpoint taken on the way
    /// out shipped home first (not when the home is unreachable or gave up
    /// on us).
    async fn leave(
        &self,
        pad: &mut Launchpad,
        mut pass: Pass,
        why: String,
        lease_lost: bool,
        kind: VacateKind,
        hold: Option<u32>,
    ) -> Next {
        let usage = pass.ctl.usage(pad.started);
        // A guest the host holds goes at once, without a checkpoint.
        let now = lease_lost || hold.is_some();
        let checkpointed = self
            .evict(&mut pass.ctl, &mut pass.exit, now, pass.pid, kind)
            .await;
        if !now && checkpointed {
            self.take_checkpoint(&mut pad.ladder, &mut pad.seq, &pad.streams, &pad.capture)
                .await;
        }
        Next::Done {
            outcome: match hold {
                Some(code) => Outcome::Held(why, Some(code)),
                None => Outcome::Evicted(why),
            },
            usage,
            ctl: pass.ctl,
            // Removed or held: HTCondor sends no output home then.
            quiet: hold.is_some() || kind != VacateKind::Vacate,
        }
    }
}
