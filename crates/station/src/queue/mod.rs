//! The station's durable local job queue (the schedd's job queue in
//! HTCondor terms; the "background job queue" of Mutka 1988 §5).
//!
//! Jobs live in one SQLite file that survives crashes of the daemon and of
//! the machine:
//! - WAL journal with `synchronous=FULL`, so a returned commit is on disk;
//! - one `BEGIN IMMEDIATE` transaction per change (a whole cluster, or one
//!   state change plus its history event), so readers never see half of it
//!   and concurrent writers from other processes serialise;
//! - an append-only `events` table (triggers forbid updates and deletes)
//!   giving each job's history, like HTCondor's user log.
//!
//! The queue never reads the clock: callers pass the time of each change.
//! State changes are checked against [`JobStateKind::can_transition_to`]; an
//! illegal one fails and changes nothing.

mod rows;
mod schema;

use gleaner_core::time::Time;
use gleaner_proto::job::{
    IllegalTransition, JobDescription, JobEventKind, JobId, JobState, JobStateKind,
};
use gleaner_proto::submit::{ClusterSubmission, SubmitErrors};
use rows::{JOB_COLUMNS, RawJob, decode_state, time_from, time_sql, to_i64};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use schema::SCHEMA_VERSION;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// How long a writer waits for another process's transaction to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors of the job queue.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("job queue database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("no such job {0}")]
    NotFound(JobId),
    #[error("job {job}: {source}")]
    IllegalTransition {
        job: JobId,
        #[source]
        source: IllegalTransition,
    },
    #[error("event {0} changes the job state; use transition()")]
    NotAnAnnotation(JobEventKind),
    #[error(transparent)]
    Submit(#[from] SubmitErrors),
    #[error("a submission must contain at least one job")]
    EmptySubmission,
    #[error("job queue schema version {found} is newer than this build ({SCHEMA_VERSION})")]
    SchemaTooNew { found: i64 },
    #[error("corrupt job record {job}: {reason}")]
    Corrupt { job: JobId, reason: String },
    #[error("value out of range: {0}")]
    Range(&'static str),
}

pub type Result<T, E = QueueError> = std::result::Result<T, E>;

/// One job as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: JobId,
    pub owner: String,
    pub description: JobDescription,
    pub state: JobState,
    pub submitted_at: Time,
    pub updated_at: Time,
    pub started_at: Option<Time>,
    pub finished_at: Option<Time>,
    /// Times the job has started (HTCondor's `NumJobStarts`).
    pub run_count: u32,
    /// Host the job was last placed on.
    pub host: Option<String>,
}

/// One entry of a job's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobEvent {
    /// Global order of events in this queue.
    pub seq: i64,
    pub job: JobId,
    pub at: Time,
    pub kind: JobEventKind,
    pub detail: String,
}

/// A job that holds a host now, where it was placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningJob {
    pub id: JobId,
    pub host: Option<String>,
    pub host_address: Option<String>,
}

/// Selects jobs for [`JobQueue::list`]; empty fields match everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFilter {
    pub owner: Option<String>,
    pub state: Option<JobStateKind>,
    pub cluster: Option<u64>,
}

impl JobFilter {
    pub fn owner(owner: impl Into<String>) -> Self {
        JobFilter {
            owner: Some(owner.into()),
            ..Default::default()
        }
    }
    pub fn state(state: JobStateKind) -> Self {
        JobFilter {
            state: Some(state),
            ..Default::default()
        }
    }
}

/// The durable job queue. One value per connection; open one per thread
/// (or process) for concurrent readers.
pub struct JobQueue {
    conn: Connection,
}

impl std::fmt::Debug for JobQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobQueue")
            .field("path", &self.conn.path())
            .finish()
    }
}

impl JobQueue {
    /// Opens (creating if needed) the queue at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL lets readers (`glean q`) run while the daemon writes; FULL
        // syncs the WAL on every commit so an acknowledged submit survives
        // power loss, not only a process crash.
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(mode, "job queue could not switch to WAL journaling");
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        schema::create_or_migrate(&conn)?;
        Ok(JobQueue { conn })
    }

    /// Opens an existing queue for reading only (for tools such as
    /// `glean q` that must never write).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(JobQueue { conn })
    }

    /// Runs `PRAGMA integrity_check`; `Ok(())` if the file is sound,
    /// otherwise the problems SQLite reports.
    pub fn integrity_check(&self) -> Result<Result<(), Vec<String>>> {
        let mut stmt = self.conn.prepare("PRAGMA integrity_check")?;
        let rows: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        if rows.len() == 1 && rows[0] == "ok" {
            Ok(Ok(()))
        } else {
            Ok(Err(rows))
        }
    }

    /// Expands a parsed submit file with a newly allocated cluster id and
    /// inserts all its procs, in one transaction. Returns the new job ids in
    /// proc order.
    pub fn submit(&mut self, sub: &ClusterSubmission, at: Time) -> Result<Vec<JobId>> {
        self.submit_with(at, |cluster| sub.expand(cluster).map_err(QueueError::from))
    }

    /// Like [`JobQueue::submit`] but with the descriptions built by
    /// `build(cluster_id)`, called inside the transaction. If it fails, the
    /// cluster id is not consumed and nothing is stored.
    pub fn submit_with(
        &mut self,
        at: Time,
        build: impl FnOnce(u64) -> Result<Vec<JobDescription>>,
    ) -> Result<Vec<JobId>> {
        self.submit_linked(at, build, |_, _| Ok(()))
    }

    /// Like [`JobQueue::submit_with`], then runs `also` with the new job ids
    /// inside the same transaction, so a record elsewhere in this database
    /// (the DAG manager's node table) commits together with the jobs or not
    /// at all.
    pub fn submit_linked(
        &mut self,
        at: Time,
        build: impl FnOnce(u64) -> Result<Vec<JobDescription>>,
        also: impl FnOnce(&rusqlite::Transaction<'_>, &[JobId]) -> Result<()>,
    ) -> Result<Vec<JobId>> {
        let now = time_sql(at)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let next: i64 = tx.query_row(
            "SELECT value FROM meta WHERE key = 'next_cluster'",
            [],
            |r| r.get(0),
        )?;
        let cluster = u64::try_from(next).map_err(|_| QueueError::Range("cluster id"))?;
        let descs = build(cluster)?;
        if descs.is_empty() {
            return Err(QueueError::EmptySubmission);
        }
        let mut ids = Vec::with_capacity(descs.len());
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO jobs (cluster, proc, owner, description, state, priority, \
                 submitted_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            )?;
            let mut ev = tx.prepare_cached(
                "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (i, d) in descs.iter().enumerate() {
                let proc = u32::try_from(i).map_err(|_| QueueError::Range("proc id"))?;
                let json = serde_json::to_string(d).map_err(|e| QueueError::Corrupt {
                    job: JobId::new(cluster, proc),
                    reason: e.to_string(),
                })?;
                ins.execute(params![
                    next,
                    proc,
                    d.owner,
                    json,
                    JobStateKind::Idle.code(),
                    d.priority,
                    now
                ])?;
                ev.execute(params![
                    next,
                    proc,
                    now,
                    JobEventKind::Submitted.name(),
                    d.owner
                ])?;
                ids.push(JobId::new(cluster, proc));
            }
        }
        tx.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'next_cluster'",
            params![next.checked_add(1).ok_or(QueueError::Range("cluster id"))?],
        )?;
        also(&tx, &ids)?;
        tx.commit()?;
        tracing::debug!(cluster, procs = ids.len(), "submitted cluster");
        Ok(ids)
    }

    /// The underlying connection, for modules that keep their own tables in
    /// the queue's database (the DAG manager).
    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// One job, if it exists.
    pub fn get(&self, id: JobId) -> Result<Option<JobRecord>> {
        let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE cluster = ?1 AND proc = ?2");
        let raw = self
            .conn
            .query_row(
                &sql,
                params![to_i64(id.cluster, "cluster id")?, id.proc],
                RawJob::from_row,
            )
            .optional()?;
        raw.map(RawJob::decode).transpose()
    }

    /// Jobs matching `filter`, in job-id order (terminal jobs included if
    /// the filter does not exclude them).
    pub fn list(&self, filter: &JobFilter) -> Result<Vec<JobRecord>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM jobs \
             WHERE (?1 IS NULL OR owner = ?1) AND (?2 IS NULL OR state = ?2) \
               AND (?3 IS NULL OR cluster = ?3) \
             ORDER BY cluster, proc"
        );
        let cluster = filter
            .cluster
            .map(|c| to_i64(c, "cluster id"))
            .transpose()?;
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![filter.owner, filter.state.map(JobStateKind::code), cluster],
            RawJob::from_row,
        )?;
        rows.map(|r| r.map_err(QueueError::from).and_then(RawJob::decode))
            .collect()
    }

    /// Completed and removed jobs, most recently finished first
    /// (`glean history`).
    pub fn history(&self, owner: Option<&str>) -> Result<Vec<JobRecord>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM jobs \
             WHERE state IN (?1, ?2) AND (?3 IS NULL OR owner = ?3) \
             ORDER BY finished_at DESC, cluster DESC, proc DESC"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![
                JobStateKind::Completed.code(),
                JobStateKind::Removed.code(),
                owner
            ],
            RawJob::from_row,
        )?;
        rows.map(|r| r.map_err(QueueError::from).and_then(RawJob::decode))
            .collect()
    }

    /// Up to `n` idle jobs to place next: higher job `priority` first, then
    /// first in, first out. With the default priority (0) this is plain FIFO.
    pub fn next_idle_jobs(&self, n: usize) -> Result<Vec<JobRecord>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE state = ?1 \
             ORDER BY priority DESC, cluster, proc LIMIT ?2"
        );
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![JobStateKind::Idle.code(), limit], RawJob::from_row)?;
        rows.map(|r| r.map_err(QueueError::from).and_then(RawJob::decode))
            .collect()
    }

    /// Jobs that hold a host now (Running or Suspended) with the host they
    /// were last placed on, in job-id order: what the home's lease monitor
    /// watches. Reads only the `jobs_by_state` index range and three
    /// columns (no description is decoded), so its cost follows the number
    /// of running jobs, not the size of the queue.
    pub fn running_jobs(&self) -> Result<Vec<(JobId, Option<String>)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT cluster, proc, host FROM jobs WHERE state IN (?1, ?2) ORDER BY cluster, proc",
        )?;
        let rows = stmt.query_map(
            params![JobStateKind::Running.code(), JobStateKind::Suspended.code()],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            },
        )?;
        let mut out = Vec::new();
        for row in rows {
            let (cluster, proc, host) = row?;
            out.push((JobId::new(u64::try_from(cluster).unwrap_or(0), proc), host));
        }
        Ok(out)
    }

    /// Like [`JobQueue::running_jobs`], with the host's address when it was
    /// recorded ([`JobQueue::record_placement`]): what the home reloads its
    /// table of remote jobs from after a restart.
    pub fn running_placements(&self) -> Result<Vec<RunningJob>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT cluster, proc, host, host_address FROM jobs WHERE state IN (?1, ?2) \
             ORDER BY cluster, proc",
        )?;
        let rows = stmt.query_map(
            params![JobStateKind::Running.code(), JobStateKind::Suspended.code()],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            },
        )?;
        let mut out = Vec::new();
        for row in rows {
            let (cluster, proc, host, host_address) = row?;
            out.push(RunningJob {
                id: JobId::new(u64::try_from(cluster).unwrap_or(0), proc),
                host,
                host_address,
            });
        }
        Ok(out)
    }

    /// Counts of jobs per state (for the station's advertised demand).
    pub fn count_by_state(&self) -> Result<Vec<(JobStateKind, u64)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT state, COUNT(*) FROM jobs GROUP BY state ORDER BY state")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, u8>(0)?, r.get::<_, i64>(1)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (code, n) = row?;
            if let Some(k) = JobStateKind::from_code(code) {
                out.push((k, u64::try_from(n).unwrap_or(0)));
            }
        }
        Ok(out)
    }

    /// Moves a job to `to`, recording the matching history event with
    /// `detail`. Illegal transitions (see the table on
    /// [`JobStateKind::can_transition_to`]) fail without changing anything.
    /// Returns the updated record.
    pub fn transition(
        &mut self,
        id: JobId,
        to: JobState,
        detail: &str,
        at: Time,
    ) -> Result<JobRecord> {
        let now = time_sql(at)?;
        let cluster = to_i64(id.cluster, "cluster id")?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: Option<(u8, Option<String>, Option<i32>)> = tx
            .query_row(
                "SELECT state, hold_reason, exit_code FROM jobs WHERE cluster = ?1 AND proc = ?2",
                params![cluster, id.proc],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((code, reason, exit)) = current else {
            return Err(QueueError::NotFound(id));
        };
        let from = decode_state(id, code, reason, exit)?;
        let event = from
            .check_transition(&to)
            .map_err(|source| QueueError::IllegalTransition { job: id, source })?;

        let (hold_reason, exit_code) = match &to {
            JobState::Held { reason } => (Some(reason.clone()), None),
            JobState::Completed { exit_code } => (None, Some(*exit_code)),
            _ => (None, None),
        };
        let starting = to.kind() == JobStateKind::Running && event == JobEventKind::Started;
        tx.execute(
            "UPDATE jobs SET state = ?3, hold_reason = ?4, exit_code = ?5, updated_at = ?6, \
               started_at = CASE WHEN ?7 THEN ?6 ELSE started_at END, \
               run_count = run_count + CASE WHEN ?7 THEN 1 ELSE 0 END, \
               finished_at = CASE WHEN ?8 THEN ?6 ELSE finished_at END \
             WHERE cluster = ?1 AND proc = ?2",
            params![
                cluster,
                id.proc,
                to.code(),
                hold_reason,
                exit_code,
                now,
                starting,
                to.is_terminal()
            ],
        )?;
        tx.execute(
            "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![cluster, id.proc, now, event.name(), detail],
        )?;
        tx.commit()?;
        self.get(id)?.ok_or(QueueError::NotFound(id))
    }

    /// Records an event that does not change the job's state: `Placed`
    /// (with the host name as detail, which also becomes the job's host;
    /// its address becomes unknown, see [`JobQueue::record_placement`]) or
    /// `Checkpointed`. Other kinds must go through [`JobQueue::transition`].
    pub fn annotate(
        &mut self,
        id: JobId,
        kind: JobEventKind,
        detail: &str,
        at: Time,
    ) -> Result<()> {
        if !matches!(kind, JobEventKind::Placed | JobEventKind::Checkpointed) {
            return Err(QueueError::NotAnAnnotation(kind));
        }
        self.annotate_with(id, kind, detail, None, at)
    }

    /// Records that `id` was placed on `host` at `address` (its base URL):
    /// a `Placed` event with the host name as detail. Both survive a
    /// restart of the home ([`JobQueue::running_placements`]).
    pub fn record_placement(
        &mut self,
        id: JobId,
        host: &str,
        address: &str,
        at: Time,
    ) -> Result<()> {
        self.annotate_with(id, JobEventKind::Placed, host, Some(address), at)
    }

    fn annotate_with(
        &mut self,
        id: JobId,
        kind: JobEventKind,
        detail: &str,
        address: Option<&str>,
        at: Time,
    ) -> Result<()> {
        let now = time_sql(at)?;
        let cluster = to_i64(id.cluster, "cluster id")?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let changed = tx.execute(
            "UPDATE jobs SET updated_at = ?3, host = CASE WHEN ?4 THEN ?5 ELSE host END, \
               host_address = CASE WHEN ?4 THEN ?6 ELSE host_address END \
             WHERE cluster = ?1 AND proc = ?2",
            params![
                cluster,
                id.proc,
                now,
                kind == JobEventKind::Placed,
                detail,
                address
            ],
        )?;
        if changed == 0 {
            return Err(QueueError::NotFound(id));
        }
        tx.execute(
            "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![cluster, id.proc, now, kind.name(), detail],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// A job's history, oldest first.
    pub fn events(&self, id: JobId) -> Result<Vec<JobEvent>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, at, kind, detail FROM events WHERE cluster = ?1 AND proc = ?2 ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![to_i64(id.cluster, "cluster id")?, id.proc], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at, kind, detail) = row?;
            let kind = JobEventKind::from_name(&kind).ok_or_else(|| QueueError::Corrupt {
                job: id,
                reason: format!("unknown event kind {kind:?}"),
            })?;
            out.push(JobEvent {
                seq,
                job: id,
                at: time_from(at),
                kind,
                detail,
            });
        }
        Ok(out)
    }
}
