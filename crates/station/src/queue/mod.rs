//! The station's durable local job queue (the schedd's job queue in
//! HTCondor terms; the "background job queue" of Mutka 1988 §5).
//!
//! Jobs live in one SQLite file that survives crashes of the daemon and of
//! the machine:
//! - WAL journal with group commit ([`durability`]): a returned commit
//!   survives any death of the daemon; against power loss, what a user is
//!   told is done is synced before the answer, and everything else within
//!   [`GROUP_WINDOW`], one `fsync` for a whole burst;
//! - one `BEGIN IMMEDIATE` transaction per change (a whole cluster, or one
//!   state change plus its history event), so readers never see half of it
//!   and concurrent writers from other processes serialise;
//! - an append-only `events` table (triggers forbid updates and deletes)
//!   giving each job's history, like HTCondor's user log.
//!
//! The queue never reads the clock: callers pass the time of each change.
//! State changes are checked against [`JobStateKind::can_transition_to`]; an
//! illegal one fails and changes nothing.

mod classes;
mod durability;
mod edit;
mod failures;
mod gang;
mod local;
mod read;
mod rows;
mod schema;
mod share_usage;
mod summary;
mod write;

pub use classes::QueuePos;
pub use durability::GROUP_WINDOW;
pub use failures::FailedStart;
pub use gang::GangRun;
use gleaner_core::time::Time;
use gleaner_proto::job::{
    IllegalTransition, JobDescription, JobEventKind, JobId, JobState, JobStateKind,
};
use gleaner_proto::submit::SubmitErrors;
pub use local::{LOCAL_CLASS, NEVER};
use rusqlite::{Connection, OpenFlags};
pub use schema::SCHEMA_VERSION;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;
pub use summary::{OwnedEvent, OwnerStateCount};

/// How long a writer waits for another process's transaction to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Statements kept parsed per connection.
const STATEMENT_CACHE: usize = 64;

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
    /// A submission over a per-user limit (`[limits]`): nothing queued.
    #[error(transparent)]
    Limit(#[from] gleaner_core::user_limits::LimitExceeded),
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
    /// Failed starts in a row (since the last start that ran the program,
    /// or the last release).
    #[serde(default)]
    pub start_failures: u32,
    /// HTCondor's `HoldReasonCode` of the current hold, when it has one
    /// (a hold for failed starts: 6).
    #[serde(default)]
    pub hold_code: Option<u32>,
    /// HTCondor's `HoldReasonSubCode` (for code 6: the errno).
    #[serde(default)]
    pub hold_subcode: Option<i32>,
    /// Times the job exited (HTCondor's `NumJobCompletions`), runs that
    /// were requeued included.
    #[serde(default)]
    pub completions: u32,
    /// A deferred or cron job's `DeferralTime`: it starts no earlier.
    #[serde(default)]
    pub not_before: Option<Time>,
    /// When such a job may be matched (`DeferralPrepTime` before
    /// `not_before`); idle jobs are placed only from then on.
    #[serde(default)]
    pub match_from: Option<Time>,
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
    /// The claim it was placed with (the home's credential at the host).
    pub host_claim: Option<String>,
    /// Its current run ([`gleaner_proto::run::RunId`] as text), if named.
    pub run_id: Option<String>,
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
    /// The `jobs` columns of a record, as this file has them.
    columns: &'static str,
    /// The group-commit thread (`None`: read-only, or every commit syncs).
    group: Option<std::sync::Arc<durability::GroupSync>>,
    /// Jobs that went on hold or were removed since the last
    /// [`JobQueue::take_departed`]: their spool is cleaned up after the
    /// commit (`home::spool`).
    departed: Vec<JobId>,
    /// The limits a submission is held to (`None`: none, for tools).
    limits: Option<gleaner_core::user_limits::QueueLimits>,
}

impl Drop for JobQueue {
    fn drop(&mut self) {
        if let Some(g) = &self.group {
            g.close();
        }
    }
}

impl std::fmt::Debug for JobQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobQueue")
            .field("path", &self.conn.path())
            .finish()
    }
}

impl JobQueue {
    /// The jobs that went on hold or were removed by commits since the
    /// last call (each at most once per change), oldest first.
    pub fn take_departed(&mut self) -> Vec<JobId> {
        std::mem::take(&mut self.departed)
    }

    /// Holds every later submission to `limits` (the home's `[limits]`).
    pub fn set_limits(&mut self, limits: Option<gleaner_core::user_limits::QueueLimits>) {
        self.limits = limits;
    }

    /// Notes a committed change of `id` to `to` (see `departed`).
    pub(super) fn note_departure(&mut self, id: JobId, to: JobStateKind) {
        if matches!(to, JobStateKind::Held | JobStateKind::Removed) {
            self.departed.push(id);
        }
    }

    /// Opens (creating if needed) the queue at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Every statement of a job's way through the queue stays parsed
        // (`prepare_cached`); rusqlite keeps 16 by default, fewer than the
        // queue has.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // WAL lets readers (`glean q`) run while the daemon writes; group
        // commit (`durability`) makes a burst of changes cost one fsync.
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
        let wal = mode.eq_ignore_ascii_case("wal");
        if !wal {
            tracing::warn!(mode, "job queue could not switch to WAL journaling");
        }
        let group = if wal {
            durability::GroupSync::start(path)
        } else {
            None
        };
        // NORMAL only where the group-commit thread syncs; else FULL.
        let sync = if group.is_some() { "NORMAL" } else { "FULL" };
        conn.pragma_update(None, "synchronous", sync)?;
        schema::create_or_migrate(&conn)?;
        Ok(JobQueue {
            conn,
            columns: rows::JOB_COLUMNS,
            group,
            departed: Vec::new(),
            limits: None,
        })
    }

    /// Opens an existing queue for reading only (for tools such as
    /// `glean q` that must never write).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // An older queue is read as it is, without the columns it lacks.
        let columns = if schema::has_column(&conn, "jobs", "completions")? {
            rows::JOB_COLUMNS
        } else if schema::has_column(&conn, "jobs", "start_failures")? {
            rows::JOB_COLUMNS_V6
        } else {
            rows::JOB_COLUMNS_V5
        };
        Ok(JobQueue {
            conn,
            columns,
            group: None,
            departed: Vec::new(),
            limits: None,
        })
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

    /// The underlying connection, for modules that keep their own tables in
    /// the queue's database (the DAG manager).
    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}
