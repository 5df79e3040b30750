//! Stage 3a, the start time of a deferred or cron job: the program starts
//! at the job's `DeferralTime`, not before; the guest waits on this host
//! until then (HTCondor's deferral on the execute machine: the job was
//! matched up to `DeferralPrepTime` early). A guest that arrives more
//! than `DeferralWindow` seconds late is held, `HoldReasonCode` 20, as
//! HTCondor holds a job that "missed its deferred execution time".

use super::{Command, GuestRun, Outcome, Stop};
use crate::schedule::{attr_secs, window_secs};
use gleaner_core::cron::{Deferral, deferral};
use gleaner_proto::wire::hold_code;
use std::time::Duration;
use tokio::sync::mpsc;

impl GuestRun<'_> {
    /// Waits for the job's start time, if it has one (the home puts it in
    /// the description it places as `DeferralTime`, in seconds). A vacate
    /// or a lost lease ends the wait: the guest leaves without starting.
    pub(super) async fn wait_for_start(
        &self,
        rx: &mut mpsc::UnboundedReceiver<Command>,
    ) -> Result<(), Stop> {
        let d = &self.req.description;
        let at = attr_secs(d, "DeferralTime", -1);
        if at < 0 {
            return Ok(());
        }
        let window = window_secs(d);
        let mut lease = self.lease.clone();
        loop {
            let now = crate::clock::now_secs() as i64;
            match deferral(now, at, window) {
                Deferral::Ready => return Ok(()),
                Deferral::Missed => {
                    let late = now - at;
                    tracing::info!(job = %self.req.job_id, late, window, "deferred job missed its start time");
                    return Err(Stop::Early(Outcome::Held(
                        format!(
                            "Job missed its deferred execution time: it could start {late} s \
                             after its DeferralTime, and its deferral_window is {window} s"
                        ),
                        Some(hold_code::MISSED_DEFERRED_EXECUTION_TIME),
                    )));
                }
                Deferral::Wait { at } => {
                    let wait = Duration::from_secs(u64::try_from(at - now).unwrap_or(0));
                    tracing::debug!(job = %self.req.job_id, secs = wait.as_secs(), "waiting for the deferral time");
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        cmd = rx.recv() => {
                            let why = match cmd {
                                Some(Command::Vacate(why, _)) => why,
                                // Applied once the program runs.
                                Some(Command::GangHold(h, _)) => {
                                    self.gang_held.store(h, std::sync::atomic::Ordering::SeqCst);
                                    continue;
                                }
                                None => "starter shutting down".into(),
                            };
                            return Err(Stop::evicted(why));
                        }
                        ch = lease.changed() => {
                            if ch.is_err() {
                                // The lease watcher is gone: wait out the time.
                                tokio::time::sleep(wait).await;
                            } else if let Some(why) = lease.borrow_and_update().clone() {
                                return Err(Stop::evicted(why));
                            }
                        }
                    }
                }
            }
        }
    }
}
