//! Per-user limits of a home (issue 30): how many jobs a user may queue
//! and run, how many one submission may add, and how much output the
//! home's spool keeps for one job and for one user.
//!
//! The numbers come from the station's `[limits]`; HTCondor's schedd has
//! the same knobs (`MAX_JOBS_PER_OWNER`, `MAX_JOBS_PER_SUBMISSION`,
//! `MAX_JOBS_SUBMITTED`, `MAX_JOBS_RUNNING`; `MAX_TRANSFER_OUTPUT_MB`,
//! which holds a job with `HoldReasonCode` 33). Each refusal names the
//! setting and the numbers, so that a user knows what to ask for and an
//! administrator what to change.

use std::fmt;

/// The queue's limits per user and per submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLimits {
    /// Jobs one user may have in the queue (idle, running, held).
    pub max_jobs_per_owner: u64,
    /// Jobs one submission may add.
    pub max_jobs_per_submission: u64,
    /// Jobs in the queue, all users together (`None`: no limit).
    pub max_jobs: Option<u64>,
    /// Jobs of one user running at once (`None`: no limit).
    pub max_running_per_owner: Option<u64>,
}

/// A submission over a limit: nothing of it is queued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitExceeded {
    PerSubmission {
        limit: u64,
    },
    PerOwner {
        owner: String,
        queued: u64,
        limit: u64,
    },
    Total {
        queued: u64,
        limit: u64,
    },
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitExceeded::PerSubmission { limit } => write!(
                f,
                "a submission may queue at most {limit} jobs (max_jobs_per_submission, \
                 HTCondor's MAX_JOBS_PER_SUBMISSION); nothing was queued"
            ),
            LimitExceeded::PerOwner {
                owner,
                queued,
                limit,
            } => write!(
                f,
                "{owner} has {queued} jobs in this station's queue; with this submission it \
                 would be over max_jobs_per_owner = {limit} (HTCondor's MAX_JOBS_PER_OWNER); \
                 nothing was queued"
            ),
            LimitExceeded::Total { queued, limit } => write!(
                f,
                "this station's queue holds {queued} jobs; with this submission it would be \
                 over max_jobs = {limit} (HTCondor's MAX_JOBS_SUBMITTED); nothing was queued"
            ),
        }
    }
}

impl std::error::Error for LimitExceeded {}

impl LimitExceeded {
    /// The setting that refused (the `[limits]` key).
    pub fn setting(&self) -> &'static str {
        match self {
            LimitExceeded::PerSubmission { .. } => "max_jobs_per_submission",
            LimitExceeded::PerOwner { .. } => "max_jobs_per_owner",
            LimitExceeded::Total { .. } => "max_jobs",
        }
    }
}

impl QueueLimits {
    /// May a submission of `owner`, who has `owner_queued` jobs in the
    /// queue (of `total_queued` in all), add its `adding`-th job? Checked
    /// job by job while a streamed submission is queued, so the first job
    /// over a limit stops it.
    pub fn admit(
        &self,
        owner: &str,
        owner_queued: u64,
        total_queued: u64,
        adding: u64,
    ) -> Result<(), LimitExceeded> {
        if adding > self.max_jobs_per_submission {
            return Err(LimitExceeded::PerSubmission {
                limit: self.max_jobs_per_submission,
            });
        }
        if owner_queued.saturating_add(adding) > self.max_jobs_per_owner {
            return Err(LimitExceeded::PerOwner {
                owner: owner.to_string(),
                queued: owner_queued,
                limit: self.max_jobs_per_owner,
            });
        }
        if let Some(limit) = self.max_jobs
            && total_queued.saturating_add(adding) > limit
        {
            return Err(LimitExceeded::Total {
                queued: total_queued,
                limit,
            });
        }
        Ok(())
    }

    /// May one more job of a user who runs `running` jobs start?
    pub fn may_start(&self, running: u64) -> bool {
        self.max_running_per_owner.is_none_or(|m| running < m)
    }
}

/// How much of a job's output the home's spool keeps (stdout, stderr and
/// output files; checkpoints have their own bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpoolLimits {
    /// Bytes one job may have in the spool.
    pub max_job_bytes: u64,
    /// Bytes all of one user's jobs may have in the spool.
    pub max_owner_bytes: u64,
}

/// Output that would take the spool over a bound: the job is held
/// (`HoldReasonCode` 33, as HTCondor's `MAX_TRANSFER_OUTPUT_MB`) with this
/// as its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpoolExceeded {
    Job {
        bytes: u64,
        limit: u64,
    },
    Owner {
        owner: String,
        bytes: u64,
        limit: u64,
    },
}

impl fmt::Display for SpoolExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpoolExceeded::Job { bytes, limit } => write!(
                f,
                "output over the spool's bound: this job sent {bytes} bytes of output, over \
                 max_job_spool_mb ({limit} bytes) at its home"
            ),
            SpoolExceeded::Owner {
                owner,
                bytes,
                limit,
            } => write!(
                f,
                "output over the spool's bound: {owner}'s jobs would keep {bytes} bytes of \
                 output at their home, over max_owner_spool_mb ({limit} bytes)"
            ),
        }
    }
}

impl std::error::Error for SpoolExceeded {}

impl SpoolLimits {
    /// May a job whose output would total `job_bytes`, of its owner's
    /// `owner_bytes`, be kept?
    pub fn admit(
        &self,
        owner: &str,
        job_bytes: u64,
        owner_bytes: u64,
    ) -> Result<(), SpoolExceeded> {
        if job_bytes > self.max_job_bytes {
            return Err(SpoolExceeded::Job {
                bytes: job_bytes,
                limit: self.max_job_bytes,
            });
        }
        if owner_bytes > self.max_owner_bytes {
            return Err(SpoolExceeded::Owner {
                owner: owner.to_string(),
                bytes: owner_bytes,
                limit: self.max_owner_bytes,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits() -> QueueLimits {
        QueueLimits {
            max_jobs_per_owner: 10,
            max_jobs_per_submission: 4,
            max_jobs: Some(12),
            max_running_per_owner: Some(2),
        }
    }

    #[test]
    fn refusals_name_the_setting_and_the_numbers() {
        let l = limits();
        assert_eq!(l.admit("ann", 0, 0, 4), Ok(()));
        let e = l.admit("ann", 0, 0, 5).unwrap_err();
        assert_eq!(e, LimitExceeded::PerSubmission { limit: 4 });
        assert!(e.to_string().contains("max_jobs_per_submission"));
        let e = l.admit("ann", 8, 8, 3).unwrap_err();
        assert!(e.to_string().contains("ann has 8 jobs"), "{e}");
        assert!(e.to_string().contains("max_jobs_per_owner = 10"), "{e}");
        let e = l.admit("bob", 0, 11, 2).unwrap_err();
        assert!(e.to_string().contains("max_jobs = 12"), "{e}");
        assert!(l.may_start(1) && !l.may_start(2));
        let s = SpoolLimits {
            max_job_bytes: 100,
            max_owner_bytes: 150,
        };
        assert_eq!(s.admit("ann", 100, 150), Ok(()));
        assert!(
            s.admit("ann", 101, 101)
                .unwrap_err()
                .to_string()
                .contains("max_job_spool_mb")
        );
        let e = s.admit("ann", 50, 151).unwrap_err();
        assert!(e.to_string().contains("ann's jobs"), "{e}");
    }

    proptest! {
        /// A submission is admitted exactly when it fits every limit.
        #[test]
        fn admit_is_the_conjunction_of_the_limits(
            owner_queued in 0u64..30, others in 0u64..30, adding in 1u64..10,
            per_owner in 0u64..40, per_sub in 0u64..10, total in proptest::option::of(0u64..60),
        ) {
            let l = QueueLimits {
                max_jobs_per_owner: per_owner,
                max_jobs_per_submission: per_sub,
                max_jobs: total,
                max_running_per_owner: None,
            };
            let all = owner_queued + others;
            let fits = adding <= per_sub
                && owner_queued + adding <= per_owner
                && total.is_none_or(|t| all + adding <= t);
            prop_assert_eq!(l.admit("u", owner_queued, all, adding).is_ok(), fits);
        }
    }
}
