//! The queue's SQLite schema and its migrations.
//!
//! `PRAGMA user_version` holds the schema version. A new database gets the
//! current schema at once; an older one is migrated in the same
//! transaction that opens it, so a daemon of this build can take over the
//! queue of an older one (and a newer database is refused rather than
//! misread).

use super::{QueueError, Result};
use rusqlite::{Connection, OptionalExtension};

/// Schema version stored in `PRAGMA user_version`.
/// 1: jobs, events, meta. 2: `jobs.host_address`, the base URL of the host
/// a job was last placed on (the home's table of remote jobs reloads it
/// after a restart). 3: `jobs.host_claim`, the claim the job was placed
/// with: the home's credential at that host (to vacate it after a restart).
/// 4: `jobs.run_id`, the identity of the job's current run (the one last
/// placed): the home takes output, checkpoints and reports from it alone,
/// also after a restart (issue 14).
/// 5: `jobs.publishing`, the outputs of a committed completion not yet
/// renamed into place (JSON; cleared once they are): a home killed in
/// between finishes the renames at start (issue 14).
/// 6: `jobs.start_failures` (failed starts in a row), `jobs.hold_code` and
/// `jobs.hold_subcode` (HTCondor's `HoldReasonCode`/`HoldReasonSubCode` of
/// a hold that has one): poison jobs go on hold (issue 14).
/// 7: `jobs.completions` (HTCondor's `NumJobCompletions`: exits, requeued
/// ones included), `jobs.not_before` (a deferred or cron job's
/// `DeferralTime`) and `jobs.match_from` (when it may be matched: the
/// deferral time less `DeferralPrepTime`) (issue 19).
/// 8: `jobs.class_key` (the job's matchmaking class, `JobClass::of`) with
/// the index `jobs_by_class`, so that a grant for a class finds its next
/// job without reading other jobs; `jobs_in_order` replaces
/// `jobs_by_state` with the queue's own order (`priority DESC`), so that
/// the first idle jobs are read without sorting all of them (issue 15).
/// 9: `gang_runs` (each running parallel job's member count) and
/// `gang_holds` (the members its home suspended with their gang), so that
/// a restarted home releases a held gang when the owner leaves (issue 17;
/// `home::gang`).
/// 10: the index `jobs_by_owner_class` (owner, state, class key) replaces
/// `jobs_by_owner`, so that each user's idle classes are found without
/// reading other users' jobs: the home's fair share walks users, then
/// their classes (issue 30).
/// 11: `share_usage`, the fair share's decayed usage per user and
/// submitter, so that a restarted home remembers who used its nodes
/// lately (`home::share`).
pub const SCHEMA_VERSION: i64 = 11;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
    cluster      INTEGER NOT NULL,
    proc         INTEGER NOT NULL,
    owner        TEXT NOT NULL,
    description  TEXT NOT NULL,          -- JobDescription as JSON
    state        INTEGER NOT NULL,       -- HTCondor JobStatus code
    hold_reason  TEXT,
    exit_code    INTEGER,
    priority     INTEGER NOT NULL DEFAULT 0,
    submitted_at INTEGER NOT NULL,       -- microseconds, caller's epoch
    updated_at   INTEGER NOT NULL,
    started_at   INTEGER,                -- last start
    finished_at  INTEGER,                -- entered Completed/Removed
    run_count    INTEGER NOT NULL DEFAULT 0,
    host         TEXT,                   -- host it was last placed on
    host_address TEXT,                   -- that host's base URL (schema 2)
    host_claim   TEXT,                   -- the claim it was placed with (schema 3)
    run_id       TEXT,                   -- its current run, RunId (schema 4)
    publishing   TEXT,                   -- staged outputs to put in place (schema 5)
    start_failures INTEGER NOT NULL DEFAULT 0, -- failed starts in a row (schema 6)
    hold_code    INTEGER,                -- HoldReasonCode of the hold (schema 6)
    hold_subcode INTEGER,                -- HoldReasonSubCode (schema 6)
    completions  INTEGER NOT NULL DEFAULT 0, -- NumJobCompletions (schema 7)
    not_before   INTEGER,                -- DeferralTime, microseconds (schema 7)
    match_from   INTEGER,                -- matched from, microseconds (schema 7)
    class_key    TEXT,                   -- JobClass key (schema 8)
    PRIMARY KEY (cluster, proc)
);
-- glean q's summary by cluster reads this index alone (issue 15).
CREATE INDEX IF NOT EXISTS jobs_by_cluster ON jobs (cluster, state, owner, submitted_at);
CREATE TABLE IF NOT EXISTS events (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster INTEGER NOT NULL,
    proc    INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    detail  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS events_by_job ON events (cluster, proc, seq);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
INSERT OR IGNORE INTO meta (key, value) VALUES ('next_cluster', 1);
-- A parallel job's current run: its members are ranks 0..size-1 (schema 9).
CREATE TABLE IF NOT EXISTS gang_runs (
    cluster       INTEGER PRIMARY KEY,
    size          INTEGER NOT NULL,
    machine_count INTEGER NOT NULL
);
-- Members the home suspended with their gang; releasing = 1 once released
-- and until their host reports them running (schema 9).
CREATE TABLE IF NOT EXISTS gang_holds (
    cluster   INTEGER NOT NULL,
    proc      INTEGER NOT NULL,
    releasing INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (cluster, proc)
);
-- The fair share's decayed usage: level 0 users, 1 submitters (schema 11).
CREATE TABLE IF NOT EXISTS share_usage (
    level INTEGER NOT NULL,
    name  TEXT NOT NULL,
    usage REAL NOT NULL,
    at    INTEGER NOT NULL,                  -- microseconds, UNIX epoch
    PRIMARY KEY (level, name)
);
";

/// Creates the schema, or migrates an older one, in one transaction.
pub(super) fn create_or_migrate(conn: &Connection) -> Result<()> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(QueueError::SchemaTooNew { found });
    }
    conn.execute_batch("BEGIN IMMEDIATE;")?;
    let res = (|| -> Result<()> {
        conn.execute_batch(SCHEMA)?;
        // Version 1 had no host address (CREATE IF NOT EXISTS kept the old
        // table): add the column, empty for the jobs placed before.
        // Likewise version 2 had no claim and version 3 no run: a job
        // placed before has no current run, and any run of it is heard;
        // version 4 had nothing staged across a restart.
        let mut migrated = false;
        for column in ["host_address", "host_claim", "run_id", "publishing"] {
            if !has_column(conn, "jobs", column)? {
                conn.execute_batch(&format!("ALTER TABLE jobs ADD COLUMN {column} TEXT;"))?;
                migrated = true;
            }
        }
        // Version 5 counted no failed starts and kept no hold codes;
        // version 6 no completions and no start times (a job queued
        // before may start at once).
        for (column, decl) in [
            ("start_failures", "INTEGER NOT NULL DEFAULT 0"),
            ("hold_code", "INTEGER"),
            ("hold_subcode", "INTEGER"),
            ("completions", "INTEGER NOT NULL DEFAULT 0"),
            ("not_before", "INTEGER"),
            ("match_from", "INTEGER"),
        ] {
            if !has_column(conn, "jobs", column)? {
                conn.execute_batch(&format!("ALTER TABLE jobs ADD COLUMN {column} {decl};"))?;
                migrated = true;
            }
        }
        let keyless = !has_column(conn, "jobs", "class_key")?;
        if keyless {
            conn.execute_batch("ALTER TABLE jobs ADD COLUMN class_key TEXT;")?;
            migrated = true;
        }
        // Indexes in the queue's order (`priority DESC, cluster, proc`):
        // the first n idle jobs, of all classes or of one, are an index
        // range, not a sort of every idle job.
        conn.execute_batch(
            "DROP INDEX IF EXISTS jobs_by_state;
             CREATE INDEX IF NOT EXISTS jobs_in_order ON jobs (state, priority DESC, cluster, proc);
             CREATE INDEX IF NOT EXISTS jobs_by_class
                 ON jobs (state, class_key, priority DESC, cluster, proc);
             DROP INDEX IF EXISTS jobs_by_owner;
             CREATE INDEX IF NOT EXISTS jobs_by_owner_class ON jobs (owner, state, class_key);",
        )?;
        if fill_class_keys(conn, keyless)? > 0 {
            migrated = true;
        }
        if migrated {
            tracing::info!(
                from = found,
                to = SCHEMA_VERSION,
                "job queue schema migrated"
            );
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))?;
        Ok(())
    })();
    match res {
        Ok(()) => {
            conn.execute_batch("COMMIT;")?;
            Ok(())
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK;");
            Err(e)
        }
    }
}

/// Gives every job that may still be matched its class key: jobs queued
/// before schema 8, and all of them when the key's definition changed
/// (`JobClass::KEY_VERSION`, kept in `meta`). Finished jobs are never
/// matched again and keep none. Every job queued since has its key from
/// its insert, so an ordinary start reads no job here (`added`: the
/// column was just added). Returns how many were keyed.
fn fill_class_keys(conn: &Connection, added: bool) -> Result<usize> {
    use gleaner_proto::job::{JobDescription, JobStateKind};
    use gleaner_proto::matchmaking::JobClass;
    let version: Option<i64> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'class_key_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let stale = version != Some(JobClass::KEY_VERSION);
    if stale {
        conn.execute_batch("UPDATE jobs SET class_key = NULL;")?;
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('class_key_version', ?1)",
            [JobClass::KEY_VERSION],
        )?;
    }
    if !(added || stale) {
        return Ok(0);
    }
    let done = [JobStateKind::Completed.code(), JobStateKind::Removed.code()];
    let mut read = conn.prepare(
        "SELECT cluster, proc, description FROM jobs \
         WHERE class_key IS NULL AND state NOT IN (?1, ?2)",
    )?;
    let rows: Vec<(i64, i64, String)> = read
        .query_map(done, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<std::result::Result<_, _>>()?;
    let mut write =
        conn.prepare("UPDATE jobs SET class_key = ?3 WHERE cluster = ?1 AND proc = ?2")?;
    for (cluster, proc, description) in &rows {
        // A description that no longer reads keeps no key: the job is
        // reported corrupt where it is read, as before.
        if let Ok(d) = serde_json::from_str::<JobDescription>(description) {
            write.execute(rusqlite::params![cluster, proc, JobClass::of(&d).key])?;
        }
    }
    Ok(rows.len())
}

pub(super) fn has_column(conn: &Connection, table: &str, column: &str) -> Result<bool> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    for n in names {
        if n? == column {
            return Ok(true);
        }
    }
    Ok(false)
}
