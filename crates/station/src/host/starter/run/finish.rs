//! Stage 5, finish: the guest is gone; its output is flushed home, its
//! cgroup and record removed, and on a normal exit its output files are
//! uploaded and `completed` reported; output that did not reach home
//! sends the job back to its queue instead.

use super::super::control::Control;
use super::super::jic::FetchError;
use super::super::sandbox::Snapshot;
use super::setup::Launchpad;
use super::{GuestRun, Outcome};
use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_proto::wire::Usage;

impl GuestRun<'_> {
    /// Cleans up after the last pass and turns `outcome` into the run's
    /// end: an exit whose output files cannot be delivered holds the job.
    pub(super) async fn finish(
        &self,
        mut pad: Launchpad,
        ctl: Control,
        outcome: Outcome,
        usage: Usage,
        before: &Snapshot,
        quiet: bool,
    ) -> Outcome {
        drop(ctl);
        // Held or removed: nothing more goes home, at once (the home
        // refuses it anyway) and the sandbox goes right after.
        let delivered = if quiet {
            pad.streams.abort();
            Ok(())
        } else {
            pad.streams.finish().await
        };
        pad.iso.release();
        pad.ladder.on_finished(self.starter.now());
        self.entry.set_state("finishing", None);

        if let Outcome::Exited(code) = outcome {
            // Output the home lacks (its disk is full, it is unreachable)
            // is not the job's fault: back to the queue, never completed
            // with part of its output (issue 14).
            if let Err(why) = delivered {
                return Outcome::Evicted(why);
            }
            let uploaded = self.upload_outputs(before).await;
            self.remove_disk().await;
            match uploaded {
                Ok(()) => {
                    // The node goes back to the claim before the home hears
                    // of the completion: its next job may come at once.
                    self.starter.completed_on_claim(self.entry);
                    self.home.report_usage(
                        JobEventKind::Completed,
                        JobState::Completed { exit_code: code },
                        format!("exit code {code}"),
                        Some(usage),
                    )
                }
                Err(FetchError::Transient(why)) => return Outcome::Evicted(why),
                Err(FetchError::Permanent(why)) => return Outcome::Held(why, None),
            }
        }
        // Not completed: nothing of the sandbox goes home; its file
        // system goes now (the directory with the guest's slot).
        self.remove_disk().await;
        outcome
    }
}
