//! Request and response bodies of the station's user API and shadow API
//! that are not daemon-to-daemon messages (those live in [`crate::wire`]).
//!
//! User API (served by every station that accepts submissions; the CLI is
//! the client):
//! - `POST /v1/submit`: [`SubmitBody`] → [`crate::wire::SubmitResponse`];
//! - `GET /v1/jobs?owner=&state=&constraint=`: `Vec<`[`JobInfo`]`>`;
//! - `GET /v1/jobs/{id}`: [`JobDetail`];
//! - `POST /v1/jobs/{id}/rm|hold|release`: [`ActionRequest`] → [`ActionResponse`];
//! - `GET /v1/history?owner=`: `Vec<`[`JobInfo`]`>`;
//! - `GET /v1/jobs/{id}/output/{stream}?offset=N`: raw bytes.
//!
//! Shadow API (the host's starter is the client):
//! - `GET /v1/shadow/{job}/input/{name}`: raw bytes;
//! - `POST /v1/shadow/{job}/output/{stream}?offset=N`: raw bytes → [`AppendResponse`];
//! - `PUT /v1/shadow/{job}/files/{name}`: raw bytes → [`StoredResponse`];
//! - `POST /v1/jobs/{job}/status`: [`crate::wire::JobStatusReport`] → [`StoredResponse`].

use crate::job::{JobDescription, JobEventKind, JobId, JobState};
use crate::submit::ClusterSubmission;
use gleaner_core::time::Time;
use serde::{Deserialize, Serialize};

fn current_version() -> u32 {
    crate::wire::PROTOCOL_VERSION
}

/// `POST /v1/submit` body. A superset of [`crate::wire::SubmitRequest`]:
/// the CLI also sends the submit file's directory, which becomes the jobs'
/// initial working directory (HTCondor's `Iwd`) when the file sets none, and
/// which relative `initialdir` values are resolved against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitBody {
    #[serde(default = "current_version")]
    pub protocol: u32,
    pub submission: ClusterSubmission,
    /// Absolute directory of the submit file on the submitting machine.
    #[serde(default)]
    pub submit_dir: Option<String>,
}

/// One job as listed by `GET /v1/jobs` and `GET /v1/history`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    pub id: JobId,
    pub owner: String,
    pub state: JobState,
    pub submitted_at: Time,
    pub updated_at: Time,
    #[serde(default)]
    pub started_at: Option<Time>,
    #[serde(default)]
    pub finished_at: Option<Time>,
    #[serde(default)]
    pub run_count: u32,
    /// Host it runs on (or last ran on).
    #[serde(default)]
    pub host: Option<String>,
    /// Executable and arguments, for the `CMD` column.
    pub cmd: String,
    /// Failed starts in a row (a job held for them: the whole series).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_failures: u32,
    /// HTCondor's `HoldReasonCode` of a hold that has one (6: the program
    /// could not be executed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_code: Option<u32>,
    /// HTCondor's `HoldReasonSubCode` (for code 6: the errno).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_subcode: Option<i32>,
    /// Times the job exited (HTCondor's `NumJobCompletions`), requeued
    /// runs included (`max_retries`, `on_exit_remove`, cron jobs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub completions: u32,
    /// When a deferred or cron job may start next (its `DeferralTime`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<Time>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One history entry of a job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventInfo {
    pub at: Time,
    pub kind: JobEventKind,
    #[serde(default)]
    pub detail: String,
}

/// `GET /v1/jobs/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobDetail {
    pub job: JobInfo,
    pub description: JobDescription,
    pub events: Vec<EventInfo>,
}

/// Body of `rm`, `hold` and `release`; may be empty.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ActionRequest {
    pub reason: Option<String>,
}

/// Result of `rm`, `hold` or `release`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionResponse {
    /// Jobs whose state changed.
    pub changed: Vec<JobId>,
    /// Jobs left alone because the action did not apply to their state
    /// (e.g. releasing a job that is not held), with the reason.
    #[serde(default)]
    pub skipped: Vec<(JobId, String)>,
}

/// Answer to an output append: the stream's stored length afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendResponse {
    pub length: u64,
}

/// Answer to a stored file or status report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub ok: bool,
    #[serde(default)]
    pub detail: String,
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) for a UNIX-epoch [`Time`].
pub fn utc_datetime(t: Time) -> String {
    let secs = t.as_micros() / 1_000_000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Jobs counted by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StateCounts {
    pub idle: u64,
    pub running: u64,
    pub suspended: u64,
    pub held: u64,
    pub completed: u64,
    pub removed: u64,
}

impl StateCounts {
    /// Adds `n` jobs in state `k`.
    pub fn add(&mut self, k: crate::job::JobStateKind, n: u64) {
        use crate::job::JobStateKind as K;
        let slot = match k {
            K::Idle => &mut self.idle,
            K::Running => &mut self.running,
            K::Suspended => &mut self.suspended,
            K::Held => &mut self.held,
            K::Completed => &mut self.completed,
            K::Removed => &mut self.removed,
        };
        *slot = slot.saturating_add(n);
    }

    /// Jobs still in the queue (not completed or removed).
    pub fn active(&self) -> u64 {
        self.idle + self.running + self.suspended + self.held
    }

    pub fn total(&self) -> u64 {
        self.active() + self.completed + self.removed
    }
}

/// One cluster with jobs still in the queue, as `condor_q` summarises it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSummary {
    pub cluster: u64,
    pub owner: String,
    pub submitted_at: Time,
    pub counts: StateCounts,
}

/// `GET /v1/queue/summary`: the queue by cluster and state, from indexed
/// counts (no job is read).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSummary {
    /// Clusters with jobs still in the queue, by id.
    pub clusters: Vec<ClusterSummary>,
    /// Every job of the query still in the queue, by state.
    pub total: StateCounts,
}

/// `GET /v1/users`: a home's users, their share and use, and its limits
/// (`glean users`; the home's `[limits]` and `[share]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HomeUsers {
    pub limits: HomeLimits,
    /// Every user with a job in the queue or output in the spool, by name.
    pub users: Vec<HomeUser>,
}

/// A home's per-user limits (`[limits]`); `None`: no limit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HomeLimits {
    pub max_jobs_per_owner: u64,
    pub max_jobs_per_submission: u64,
    pub max_jobs: Option<u64>,
    pub max_running_per_owner: Option<u64>,
    pub max_job_spool_bytes: u64,
    pub max_owner_spool_bytes: u64,
}

/// One user of a home.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HomeUser {
    pub user: String,
    /// Jobs in the queue by state.
    pub jobs: StateCounts,
    /// The home's nodes the user's jobs hold now (running, suspended,
    /// being placed).
    pub nodes: u32,
    /// Decayed usage in nodes (HTCondor's real user priority).
    pub usage: f64,
    /// The priority factor (1 unless `[share] factors` says).
    pub factor: f64,
    /// Output the user's jobs keep in the spool, bytes.
    pub spool_bytes: u64,
    /// The names the user's jobs are accounted under (`group.user`),
    /// among those waiting or on hosts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub submitters: Vec<String>,
}
