//! Rows of the `jobs` table and the conversions between SQL values and
//! the queue's types.

use super::{JobRecord, QueueError, Result};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobId, JobState, JobStateKind};
use rusqlite::Row;

pub(super) fn to_i64(v: u64, what: &'static str) -> Result<i64> {
    i64::try_from(v).map_err(|_| QueueError::Range(what))
}

pub(super) fn time_sql(t: Time) -> Result<i64> {
    to_i64(t.as_micros(), "time")
}

pub(super) fn time_from(v: i64) -> Time {
    Time::from_micros(u64::try_from(v).unwrap_or(0))
}

pub(super) const JOB_COLUMNS: &str = "cluster, proc, owner, description, state, hold_reason, exit_code, \
     submitted_at, updated_at, started_at, finished_at, run_count, host, start_failures, hold_code, \
     hold_subcode, completions, not_before, match_from";

/// [`JOB_COLUMNS`] of a schema-6 queue read without migrating it: no
/// completions, no start times.
pub(super) const JOB_COLUMNS_V6: &str = "cluster, proc, owner, description, state, hold_reason, \
     exit_code, submitted_at, updated_at, started_at, finished_at, run_count, host, \
     start_failures, hold_code, hold_subcode, 0 AS completions, NULL AS not_before, \
     NULL AS match_from";

/// [`JOB_COLUMNS`] of a queue older than schema 6, read without migrating
/// it (a read-only reader): no failed starts, no hold codes.
pub(super) const JOB_COLUMNS_V5: &str = "cluster, proc, owner, description, state, hold_reason, \
     exit_code, submitted_at, updated_at, started_at, finished_at, run_count, host, \
     0 AS start_failures, NULL AS hold_code, NULL AS hold_subcode, 0 AS completions, \
     NULL AS not_before, NULL AS match_from";

/// A `jobs` row before validation.
pub(super) struct RawJob {
    cluster: i64,
    proc: u32,
    owner: String,
    description: String,
    state: u8,
    hold_reason: Option<String>,
    exit_code: Option<i32>,
    submitted_at: i64,
    updated_at: i64,
    started_at: Option<i64>,
    finished_at: Option<i64>,
    run_count: u32,
    host: Option<String>,
    start_failures: u32,
    hold_code: Option<u32>,
    hold_subcode: Option<i32>,
    completions: u32,
    not_before: Option<i64>,
    match_from: Option<i64>,
}

impl RawJob {
    pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(RawJob {
            cluster: r.get(0)?,
            proc: r.get(1)?,
            owner: r.get(2)?,
            description: r.get(3)?,
            state: r.get(4)?,
            hold_reason: r.get(5)?,
            exit_code: r.get(6)?,
            submitted_at: r.get(7)?,
            updated_at: r.get(8)?,
            started_at: r.get(9)?,
            finished_at: r.get(10)?,
            run_count: r.get(11)?,
            host: r.get(12)?,
            start_failures: r.get(13)?,
            hold_code: r.get(14)?,
            hold_subcode: r.get(15)?,
            completions: r.get(16)?,
            not_before: r.get(17)?,
            match_from: r.get(18)?,
        })
    }

    pub(super) fn decode(self) -> Result<JobRecord> {
        let id = JobId::new(u64::try_from(self.cluster).unwrap_or(0), self.proc);
        let description: JobDescription =
            serde_json::from_str(&self.description).map_err(|e| QueueError::Corrupt {
                job: id,
                reason: format!("description: {e}"),
            })?;
        let state = decode_state(id, self.state, self.hold_reason, self.exit_code)?;
        Ok(JobRecord {
            id,
            owner: self.owner,
            description,
            state,
            submitted_at: time_from(self.submitted_at),
            updated_at: time_from(self.updated_at),
            started_at: self.started_at.map(time_from),
            finished_at: self.finished_at.map(time_from),
            run_count: self.run_count,
            host: self.host,
            start_failures: self.start_failures,
            hold_code: self.hold_code,
            hold_subcode: self.hold_subcode,
            completions: self.completions,
            not_before: self.not_before.map(time_from),
            match_from: self.match_from.map(time_from),
        })
    }
}

pub(super) fn decode_state(
    id: JobId,
    code: u8,
    hold_reason: Option<String>,
    exit_code: Option<i32>,
) -> Result<JobState> {
    let kind = JobStateKind::from_code(code).ok_or_else(|| QueueError::Corrupt {
        job: id,
        reason: format!("unknown state code {code}"),
    })?;
    Ok(match kind {
        JobStateKind::Idle => JobState::Idle,
        JobStateKind::Running => JobState::Running,
        JobStateKind::Suspended => JobState::Suspended,
        JobStateKind::Removed => JobState::Removed,
        JobStateKind::Held => JobState::Held {
            reason: hold_reason.unwrap_or_default(),
        },
        JobStateKind::Completed => JobState::Completed {
            exit_code: exit_code.ok_or_else(|| QueueError::Corrupt {
                job: id,
                reason: "completed without an exit code".into(),
            })?,
        },
    })
}
