//! One node's state in a run, as DAGMan keeps it (`Node` in its
//! `node.cpp`): the status the node status file shows, retries, return
//! values, the node's jobs.

use crate::time::Time;
use serde::{Deserialize, Serialize};

/// A node's status; the numbers are the node status file's.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Some parent has not finished (or it is the FINAL node).
    #[default]
    NotReady,
    /// Its parents are done; not yet submitted.
    Ready,
    /// Its PRE script runs (or waits to).
    PreRun,
    /// Its jobs are in the queue.
    Submitted,
    /// Its POST script runs (or waits to).
    PostRun,
    Done,
    Error,
    /// It will never run: an ancestor failed.
    Futile,
}

impl Status {
    /// `NodeStatus` in the node status file.
    pub fn code(self) -> u8 {
        match self {
            Status::NotReady => 0,
            Status::Ready => 1,
            Status::PreRun => 2,
            Status::Submitted => 3,
            Status::PostRun => 4,
            Status::Done => 5,
            Status::Error => 6,
            Status::Futile => 7,
        }
    }

    /// DAGMan's name (`STATUS_DONE` …).
    pub fn name(self) -> &'static str {
        match self {
            Status::NotReady => "STATUS_NOT_READY",
            Status::Ready => "STATUS_READY",
            Status::PreRun => "STATUS_PRERUN",
            Status::Submitted => "STATUS_SUBMITTED",
            Status::PostRun => "STATUS_POSTRUN",
            Status::Done => "STATUS_DONE",
            Status::Error => "STATUS_ERROR",
            Status::Futile => "STATUS_FUTILE",
        }
    }

    /// The node will not change any more (in this run).
    pub fn is_final(self) -> bool {
        matches!(self, Status::Done | Status::Error | Status::Futile)
    }
}

/// One job of a node's cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Proc {
    #[default]
    Idle,
    Running,
    Held,
    /// Exited with a code (a negative code: killed by that signal).
    Exited(i32),
    /// Removed from the queue before it ended.
    Aborted,
}

impl Proc {
    pub fn is_done(self) -> bool {
        matches!(self, Proc::Exited(_) | Proc::Aborted)
    }

    /// Counts as idle for `DAGMAN_MAX_JOBS_IDLE` (held jobs do, as in
    /// DAGMan).
    pub fn is_idle(self) -> bool {
        matches!(self, Proc::Idle | Proc::Held)
    }
}

/// How a script or job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    /// DAGMan's return value: the code, or minus the signal.
    pub fn value(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => -s,
        }
    }

    pub fn ok(self) -> bool {
        self == Exit::Code(0)
    }
}

/// `$RETURN` when the node's jobs could not be submitted.
pub const RETURN_SUBMIT_FAILED: i32 = -1001;
/// `$RETURN` when a job was removed from the queue.
pub const RETURN_JOB_ABORTED: i32 = -1002;
/// `$RETURN` when the jobs were skipped because the PRE script failed.
pub const RETURN_JOB_SKIPPED: i32 = -1004;

/// A node's state in one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeRun {
    pub status: Status,
    /// Retries done so far (`$RETRY`).
    pub retries: u32,
    /// Retries allowed (`$MAX_RETRIES`).
    pub max_retries: u32,
    /// The PRE script of this attempt succeeded (not run again when the
    /// submission is retried).
    pub pre_done: bool,
    /// The node's return value: of whichever part ran last.
    pub retval: i32,
    /// `$PRE_SCRIPT_RETURN` (`None`: no PRE script ran).
    pub pre_return: Option<i32>,
    /// `$RETURN` for the POST script.
    pub job_return: i32,
    /// Some job failed, or the PRE script did with `DAGMAN_ALWAYS_RUN_POST`.
    pub failed: bool,
    /// The current attempt's cluster.
    pub cluster: Option<u64>,
    /// Every attempt's cluster, oldest first.
    pub clusters: Vec<u64>,
    pub procs: Vec<Proc>,
    /// Submission asked for, not yet answered.
    pub submitting: bool,
    /// Failed submissions of this attempt.
    pub submit_attempts: u32,
    /// No new submission before this.
    pub next_submit: Option<Time>,
    /// Its PRE or POST script waits for a free slot or its DEFER time.
    pub script_waiting: bool,
    /// Its PRE or POST script runs.
    pub script_running: bool,
    /// A deferred script runs again no earlier than this.
    pub defer_until: Option<Time>,
    /// Its HOLD script runs.
    pub hold_script_running: bool,
    /// HOLD scripts waiting to run.
    pub hold_scripts_waiting: u32,
    /// Ever started (a PRE script or a submission).
    pub started: bool,
    /// A job of it ever began executing: priority children may run.
    #[serde(default)]
    pub executed: bool,
    /// Holds of this attempt's jobs.
    pub holds: u32,
    /// Failed jobs of this attempt.
    pub failed_jobs: u32,
    /// Why it failed, for the status file and rescue.
    pub error: String,
    /// Its place in the ready queue, if there: (priority, order).
    pub queued: Option<(i64, i64)>,
    /// The jobstate log's sequence number (0: none yet).
    pub seq: u32,
    /// Last time it changed, for the jobstate log.
    pub changed_at: Time,
    /// Submitted on hold (`DAGMAN_PUT_FAILED_JOBS_ON_HOLD`).
    pub hold_on_submit: bool,
}

impl NodeRun {
    /// Clears an attempt's results before a retry.
    pub fn reset_attempt(&mut self) {
        self.pre_done = false;
        self.pre_return = None;
        self.job_return = 0;
        self.failed = false;
        self.cluster = None;
        self.procs.clear();
        self.submitting = false;
        self.submit_attempts = 0;
        self.next_submit = None;
        self.holds = 0;
        self.failed_jobs = 0;
        self.error.clear();
        self.seq = 0;
    }

    /// Jobs still in the queue.
    pub fn queued_procs(&self) -> usize {
        self.procs.iter().filter(|p| !p.is_done()).count()
    }

    /// Jobs on hold now.
    pub fn held_procs(&self) -> usize {
        self.procs.iter().filter(|p| **p == Proc::Held).count()
    }

    /// Exit codes by proc (`None` for removed jobs).
    pub fn exit_codes(&self) -> Vec<Option<i32>> {
        self.procs
            .iter()
            .map(|p| match p {
                Proc::Exited(c) => Some(*c),
                _ => None,
            })
            .collect()
    }
}
