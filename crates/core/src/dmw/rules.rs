//! DMW's placement rules: the embargo, the global job limit, the
//! dysfunctional-host back-off and the progress guarantee.
//!
//! These are the rules both arbiters of Gleaner apply: the UMol
//! [`Umpire`](super::Umpire) (run by `glean sim dmw`) and the production
//! coordinator (`gleaner_coordinator`, through `gleaner_proto::fit`). Each
//! rule is one function or type here, so the two cannot drift apart.
//!
//! Source: Neeracher 1998, seeds/001_c7470f9b5ea54797.txt; spec
//! `dmw-neeracher.md` §3.4, R9, R11–R13, §9 item 4.
//!
//! # Does the progress guarantee preempt? No.
//! The guarantee is a step of *apportioning*: "Finally, the algorithm
//! iterates through schedulers with no jobs running and no host apportioned
//! to them. Each scheduler is apportioned the least loaded host useful for
//! it" (L1203). Apportioning hands out hosts that no scheduler holds
//! ("unapportioned hosts are sorted by their score", L1192); nothing in
//! DMW takes a running job away from another scheduler, and the guarantee's
//! stated cost is to interactive users, not to other schedulers: it "may
//! further interfere with the computing needs of interactive users" and
//! "simulates the behavior of a user sequentially executing the jobs in the
//! schedule" (L1057). So the guarantee ignores the load thresholds (and, in
//! the default variant, the embargo) but never the job limit (L1287–1291,
//! the only guard against thrashing) and never preempts
//! ([`ProgressGuarantee::may_preempt`]). In Gleaner, taking nodes back is
//! Up-Down's job (Mutka 1988 Table 4.2), which already favours a waiting
//! station with nothing running.

use crate::time::{Dur, Time};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------
// Embargo
// ---------------------------------------------------------------------------

/// DMW's embargo of one host: after a grant, no further placement there
/// "until either one of the jobs started on that host has terminated or 90
/// seconds have elapsed since the start of the last job on that host"
/// (L1111, restated for the umpire at L1209–1210). It exists because a
/// starting job's load is not yet visible in the host's measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Embargo {
    /// Embargoed while `now < until`.
    pub until: Option<Time>,
}

impl Embargo {
    /// A job was granted on the host at `now`: embargoed for `length`
    /// (a zero length sets no embargo).
    pub fn on_grant(&mut self, now: Time, length: Dur) {
        self.until = (!length.is_zero()).then_some(now + length);
    }

    /// A job on the host terminated: the embargo ends (L1111).
    pub fn on_job_end(&mut self) {
        self.until = None;
    }

    /// Whether the embargo holds at `now`.
    pub fn active(&self, now: Time) -> bool {
        self.until.is_some_and(|u| now < u)
    }
}

// ---------------------------------------------------------------------------
// Job limits
// ---------------------------------------------------------------------------

/// A host's global job limit: the configured one, else the number of CPUs
/// ("usually set equal to the number of processors on a host", L1291). A
/// host reporting no CPUs still has a limit of one.
pub fn job_limit(configured: Option<u32>, cpus: u32) -> u32 {
    configured.unwrap_or(cpus).max(1)
}

/// Whether a host running (or promised) `jobs` guest jobs may take no more
/// under `limit` (L1287: "a maximal number of jobs placed on it by all
/// individual schedulers combined").
pub fn at_job_limit(jobs: u32, limit: u32) -> bool {
    jobs >= limit
}

// ---------------------------------------------------------------------------
// Back-off of dysfunctional hosts
// ---------------------------------------------------------------------------

/// The dysfunctional-host back-off: after a failed contact a host is out of
/// consideration for `initial`, doubling on each further failure, capped at
/// `cap`.
///
/// Neeracher 1998 (L2122): "initially for 5 minutes … the timeout is doubled,
/// until availability is checked once every hour" → 5, 10, 20, 40, 60, 60 …
/// minutes (the cap is inferred from "once every hour").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Backoff {
    pub initial: Dur,
    pub cap: Dur,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Dur::from_mins(5),
            cap: Dur::from_mins(60),
        }
    }
}

impl Backoff {
    /// Length of the back-off after the `failures`-th consecutive failure
    /// (1-based; 0 gives zero).
    pub fn delay(&self, failures: u32) -> Dur {
        if failures == 0 {
            return Dur::ZERO;
        }
        let shift = (failures - 1).min(63);
        let factor = 1u64 << shift;
        Dur(self.initial.0.saturating_mul(factor)).min(self.cap)
    }
}

// ---------------------------------------------------------------------------
// Progress guarantee
// ---------------------------------------------------------------------------

/// What the progress guarantee may override when it gives a host to a
/// scheduler with no running job.
///
/// Neeracher 1998 (L1016, L1057, L1203): "one job per individual scheduler is
/// always kept running"; the source does not say which rules the final pass
/// may break (spec §9 item 4). Our rule (see the module docs): it **always
/// ignores the thresholds** (that is its purpose), ignores the embargo in the
/// default variant, and **never** ignores a host's job limit, its
/// dysfunctional back-off, the scheduler's useful set H_s or another
/// scheduler's apportionment, and **never preempts**. A scheduler whose every
/// useful host is full waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressGuarantee {
    /// No progress guarantee: only acceptable hosts are apportioned.
    Off,
    /// Ignore thresholds; respect embargo and job limits.
    IgnoreThresholds,
    /// Ignore thresholds and embargo; respect job limits.
    #[default]
    IgnoreThresholdsAndEmbargo,
}

impl ProgressGuarantee {
    /// Whether there is a guarantee pass at all.
    pub fn enabled(self) -> bool {
        self != ProgressGuarantee::Off
    }

    /// Whether the guarantee pass may use an embargoed host.
    pub fn ignores_embargo(self) -> bool {
        self == ProgressGuarantee::IgnoreThresholdsAndEmbargo
    }

    /// Whether the guarantee pass may use a host beyond the load thresholds.
    pub fn ignores_thresholds(self) -> bool {
        self.enabled()
    }

    /// Never: the guarantee only apportions hosts with room (L1203).
    pub fn may_preempt(self) -> bool {
        false
    }
}

/// Which pass of apportioning asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Regular apportioning: thresholds, embargo and limits all hold.
    Regular,
    /// The final progress-guarantee pass under the given rule.
    Progress(ProgressGuarantee),
}

impl Pass {
    /// Whether an embargoed host is out of this pass.
    pub fn embargo_blocks(self) -> bool {
        match self {
            Pass::Regular => true,
            Pass::Progress(g) => !g.ignores_embargo(),
        }
    }

    /// Whether hosts beyond the load thresholds are out of this pass.
    pub fn thresholds_apply(self) -> bool {
        match self {
            Pass::Regular => true,
            Pass::Progress(g) => !g.ignores_thresholds(),
        }
    }
}

/// What a pass needs to know about one host's room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Room {
    /// Guest jobs running there, plus those granted and not yet started.
    pub jobs: u32,
    pub limit: u32,
    /// [`Embargo::active`] now.
    pub embargoed: bool,
    /// In its back-off after a failed contact.
    pub dysfunctional: bool,
}

impl Room {
    /// Whether `pass` may place one more job on the host (thresholds aside):
    /// never at the job limit or while dysfunctional, in any pass; not while
    /// embargoed unless the pass ignores the embargo.
    pub fn admits(&self, pass: Pass) -> bool {
        let embargo_blocks = self.embargoed && pass.embargo_blocks();
        !(self.dysfunctional || at_job_limit(self.jobs, self.limit) || embargo_blocks)
    }
}

/// Whether a scheduler is owed the guarantee now: it has eligible work, no
/// job running and no host apportioned to it (L1203). `promised` counts
/// hosts apportioned or granted to it whose jobs have not started yet.
pub fn needs_progress(has_work: bool, running: u32, promised: u32) -> bool {
    has_work && running == 0 && promised == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_saturates() {
        assert_eq!(Backoff::default().delay(u32::MAX), Dur::from_mins(60));
        assert_eq!(Backoff::default().delay(0), Dur::ZERO);
    }

    #[test]
    fn zero_embargo_sets_none() {
        let mut e = Embargo::default();
        e.on_grant(Time::from_secs(5), Dur::ZERO);
        assert!(!e.active(Time::from_secs(5)));
    }
}
