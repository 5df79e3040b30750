//! Poison jobs: what the home does after a job failed to start.
//!
//! A start can fail because of the host (a missing interpreter there, a
//! broken slot) or because of the job itself (an argument list the kernel
//! refuses with E2BIG, an executable that is not one): the home cannot
//! tell which from one failure. So a failed start sends the job back to
//! the queue, keeps it off that host for a while (so that the host's next
//! grant goes to the station's next idle job, and the queue is never
//! blocked), and after `limit` failures in a row the job goes on hold with
//! the last failure as its reason, as HTCondor holds a job whose starter
//! could not execute it (`HoldReasonCode` 6, subcode = errno). A start
//! that succeeds, and a release, end the series.

use crate::time::Dur;

/// The bound and the back-off of failed starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartFailurePolicy {
    /// Failed starts in a row after which the job is held (at least 1).
    pub limit: u32,
    /// How long the failing host is avoided after the first failure; it
    /// doubles with each further one, up to `max_avoid`.
    pub first_avoid: Dur,
    pub max_avoid: Dur,
}

/// What to do with a job whose start just failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartFailureDecision {
    /// Back to the queue; the failing host is avoided for `avoid_host_for`.
    Retry { avoid_host_for: Dur },
    /// On hold with this reason (the `HoldReason` a user reads).
    Hold { reason: String },
}

impl StartFailurePolicy {
    /// The limit for one job: its own `max_retries` (retries after the
    /// first failed start, so `limit = max_retries + 1`) when given, else
    /// the station's.
    pub fn limit_for(&self, job_max_retries: Option<u32>) -> u32 {
        job_max_retries
            .map_or(self.limit, |r| r.saturating_add(1))
            .max(1)
    }

    /// Decides after the `failures`-th failed start in a row (counting the
    /// one that just happened) of a job whose limit is `limit`; `why` is
    /// that failure, `host` where it happened.
    pub fn decide(&self, failures: u32, limit: u32, why: &str, host: &str) -> StartFailureDecision {
        if failures >= limit.max(1) {
            let times = if failures == 1 {
                "once".to_string()
            } else {
                format!("{failures} times in a row")
            };
            return StartFailureDecision::Hold {
                reason: format!("failed to start {times} (last on {host}): {why}"),
            };
        }
        // Doubling per failure: 1st → first_avoid, 2nd → 2×, … (capped).
        let shift = failures.saturating_sub(1).min(32);
        let avoid = self
            .first_avoid
            .as_micros()
            .saturating_mul(1u64 << shift)
            .min(self.max_avoid.as_micros());
        StartFailureDecision::Retry {
            avoid_host_for: Dur::from_micros(avoid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> StartFailurePolicy {
        StartFailurePolicy {
            limit: 3,
            first_avoid: Dur::from_secs(10),
            max_avoid: Dur::from_secs(25),
        }
    }

    #[test]
    fn retries_below_the_limit_with_a_doubling_capped_avoidance() {
        let p = policy();
        assert_eq!(
            p.decide(1, 3, "x", "h"),
            StartFailureDecision::Retry {
                avoid_host_for: Dur::from_secs(10)
            }
        );
        assert_eq!(
            p.decide(2, 3, "x", "h"),
            StartFailureDecision::Retry {
                avoid_host_for: Dur::from_secs(20)
            }
        );
        // Capped.
        assert_eq!(
            p.decide(2, 10, "x", "h"),
            StartFailureDecision::Retry {
                avoid_host_for: Dur::from_secs(20)
            }
        );
        assert_eq!(
            p.decide(5, 10, "x", "h"),
            StartFailureDecision::Retry {
                avoid_host_for: Dur::from_secs(25)
            }
        );
        // No overflow for absurd counts.
        assert!(matches!(
            p.decide(u32::MAX - 1, u32::MAX, "x", "h"),
            StartFailureDecision::Retry { .. }
        ));
    }

    #[test]
    fn holds_at_the_limit_with_the_cause_and_the_host() {
        let d = policy().decide(3, 3, "exec \"/bin/x\": Argument list too long", "ws2");
        assert_eq!(
            d,
            StartFailureDecision::Hold {
                reason: "failed to start 3 times in a row (last on ws2): exec \"/bin/x\": \
                         Argument list too long"
                    .into()
            }
        );
        // Past the limit too (a limit lowered meanwhile).
        assert!(matches!(
            policy().decide(7, 3, "x", "h"),
            StartFailureDecision::Hold { .. }
        ));
    }

    #[test]
    fn a_jobs_max_retries_sets_its_limit() {
        let p = policy();
        assert_eq!(p.limit_for(None), 3);
        assert_eq!(p.limit_for(Some(0)), 1);
        assert_eq!(p.limit_for(Some(4)), 5);
        assert_eq!(p.limit_for(Some(u32::MAX)), u32::MAX);
        // max_retries = 0: held at the first failed start.
        assert_eq!(
            p.decide(1, p.limit_for(Some(0)), "why", "h"),
            StartFailureDecision::Hold {
                reason: "failed to start once (last on h): why".into()
            }
        );
        // A limit of 0 is treated as 1, never "hold before trying".
        assert!(matches!(
            p.decide(1, 0, "x", "h"),
            StartFailureDecision::Hold { .. }
        ));
    }

    proptest::proptest! {
        /// Held exactly from the limit on; before it, the avoidance never
        /// exceeds its cap and never shrinks from one failure to the next.
        #[test]
        fn hold_iff_at_limit_and_avoidance_grows_to_its_cap(
            failures in 1u32..200,
            limit in 0u32..50,
            first in 0u64..1_000_000,
            cap in 0u64..100_000_000,
        ) {
            let p = StartFailurePolicy {
                limit: 3,
                first_avoid: Dur::from_micros(first),
                max_avoid: Dur::from_micros(cap),
            };
            let avoid = |n: u32| match p.decide(n, limit, "x", "h") {
                StartFailureDecision::Retry { avoid_host_for } => Some(avoid_host_for),
                StartFailureDecision::Hold { .. } => None,
            };
            let now = avoid(failures);
            proptest::prop_assert_eq!(now.is_none(), failures >= limit.max(1));
            if let Some(a) = now {
                proptest::prop_assert!(a <= Dur::from_micros(cap));
                if failures > 1 {
                    let before = avoid(failures - 1);
                    proptest::prop_assert!(before.is_some_and(|b| b <= a));
                }
            }
        }
    }
}
