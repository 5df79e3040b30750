//! The home's per-user limits (`[limits]` in station.toml; the rules are
//! `gleaner_core::user_limits`): jobs a user may queue and run, jobs one
//! submission may add, and the output the spool keeps per job and per
//! user ([`super::spool`]). Checked when a submission is queued, inside
//! its transaction, so a refused one leaves the queue as it was.
//!
//! ```toml
//! [limits]
//! max_jobs_per_owner = 200000      # HTCondor's MAX_JOBS_PER_OWNER
//! max_jobs_per_submission = 100000 # MAX_JOBS_PER_SUBMISSION
//! max_jobs = 500000                # MAX_JOBS_SUBMITTED (default: none)
//! max_running_per_owner = 50       # jobs of one user on hosts at once (default: none)
//! max_job_spool_mb = 1024          # stdout, stderr and output files of one job
//! max_owner_spool_mb = 10240       # of all of one user's jobs
//! keep_delivered_output_secs = 300 # a completed job's output, once delivered
//! ```

use gleaner_core::user_limits::{QueueLimits, SpoolLimits};
use serde::{Deserialize, Serialize};

const MIB: u64 = 1 << 20;

/// The `[limits]` table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Jobs one user may have in the queue (idle, running, suspended,
    /// held). HTCondor's default is 100 000; Gleaner's is twice that, so a
    /// user with a 100 000-job cluster may still queue another.
    pub max_jobs_per_owner: u64,
    /// Jobs one submission may add (at most 100 000, the largest cluster
    /// Gleaner takes; HTCondor's default is 20 000).
    pub max_jobs_per_submission: u64,
    /// Jobs in the queue, all users together; none by default.
    pub max_jobs: Option<u64>,
    /// Jobs of one user holding hosts at once (running, suspended, being
    /// placed); none by default. A user at the limit waits; the others'
    /// jobs go on.
    pub max_running_per_owner: Option<u64>,
    /// Output one job may keep in the home's spool, MiB: stdout, stderr
    /// and output files (checkpoints are bounded by
    /// `max_checkpoint_bytes`). A job that sends more is held
    /// (`HoldReasonCode` 33).
    pub max_job_spool_mb: u64,
    /// Output all of one user's jobs may keep in the spool, MiB.
    pub max_owner_spool_mb: u64,
    /// How long a completed job's output stays in the spool once it is in
    /// place in its owner's directories (for `glean tail`), seconds; it
    /// goes earlier when its owner's jobs need the room.
    pub keep_delivered_output_secs: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_jobs_per_owner: 200_000,
            max_jobs_per_submission: gleaner_proto::limits::MAX_PROCS,
            max_jobs: None,
            max_running_per_owner: None,
            max_job_spool_mb: 1024,
            max_owner_spool_mb: 10 * 1024,
            keep_delivered_output_secs: 300,
        }
    }
}

impl LimitsConfig {
    /// Checks the values serde cannot: the field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let max = gleaner_proto::limits::MAX_PROCS;
        if self.max_jobs_per_submission == 0 || self.max_jobs_per_submission > max {
            return Err((
                "limits.max_jobs_per_submission",
                format!("must be from 1 to {max} (the largest submission Gleaner takes)"),
            ));
        }
        for (field, v) in [
            ("limits.max_jobs_per_owner", Some(self.max_jobs_per_owner)),
            ("limits.max_jobs", self.max_jobs),
            ("limits.max_running_per_owner", self.max_running_per_owner),
            ("limits.max_job_spool_mb", Some(self.max_job_spool_mb)),
            ("limits.max_owner_spool_mb", Some(self.max_owner_spool_mb)),
        ] {
            if v == Some(0) {
                return Err((field, "must be at least 1".into()));
            }
        }
        // MiB that overflow bytes are refused rather than wrapped.
        for (field, v) in [
            ("limits.max_job_spool_mb", self.max_job_spool_mb),
            ("limits.max_owner_spool_mb", self.max_owner_spool_mb),
        ] {
            if v.checked_mul(MIB).is_none() {
                return Err((field, "is too large".into()));
            }
        }
        Ok(())
    }

    /// The queue's limits for the core's rules.
    pub fn queue(&self) -> QueueLimits {
        QueueLimits {
            max_jobs_per_owner: self.max_jobs_per_owner,
            max_jobs_per_submission: self.max_jobs_per_submission,
            max_jobs: self.max_jobs,
            max_running_per_owner: self.max_running_per_owner,
        }
    }

    /// The spool's bounds, in bytes.
    pub fn spool(&self) -> SpoolLimits {
        SpoolLimits {
            max_job_bytes: self.max_job_spool_mb.saturating_mul(MIB),
            max_owner_bytes: self.max_owner_spool_mb.saturating_mul(MIB),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_zero_or_too_much_is_refused() {
        assert_eq!(LimitsConfig::default().validate(), Ok(()));
        let l = LimitsConfig {
            max_jobs_per_submission: gleaner_proto::limits::MAX_PROCS + 1,
            ..LimitsConfig::default()
        };
        assert_eq!(
            l.validate().unwrap_err().0,
            "limits.max_jobs_per_submission"
        );
        let l = LimitsConfig {
            max_running_per_owner: Some(0),
            ..LimitsConfig::default()
        };
        assert_eq!(l.validate().unwrap_err().0, "limits.max_running_per_owner");
        let l = LimitsConfig {
            max_owner_spool_mb: u64::MAX,
            ..LimitsConfig::default()
        };
        assert_eq!(l.validate().unwrap_err().0, "limits.max_owner_spool_mb");
        assert_eq!(LimitsConfig::default().spool().max_job_bytes, 1 << 30);
    }
}
