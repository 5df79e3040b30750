//! The queue's local jobs (`universe = local` and `scheduler`: run by the
//! home itself, never matched) and the reads the DAG manager makes.
//!
//! A local job is stored with the class [`LOCAL_CLASS`] and a `match_from`
//! of [`NEVER`]: the matchable-idle reads skip it, so it never becomes
//! demand; [`JobQueue::local_counts`] lets the home's ad leave it out of
//! its counts too. A DAG's own job (its DAGMan job) is a scheduler job as
//! well, but never run by the local runner.

use super::rows::{RawJob, to_i64};
use super::{JobQueue, JobRecord, QueueError, Result};
use gleaner_proto::job::{JobId, JobStateKind};
use rusqlite::params;

/// The class key of local jobs.
pub const LOCAL_CLASS: &str = "local";

/// `match_from` of jobs that are never matched.
pub const NEVER: i64 = i64::MAX;

fn has_table(conn: &rusqlite::Connection, table: &str) -> Result<bool> {
    let n: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1")?
        .query_row(params![table], |r| r.get(0))?;
    Ok(n > 0)
}

impl JobQueue {
    /// Idle local jobs in queue order (at most `n`), DAG jobs left out.
    pub fn local_idle_jobs(&self, n: usize) -> Result<Vec<JobRecord>> {
        let cols = self.columns;
        let has_dags = has_table(&self.conn, "dagman_runs")?;
        let sql = format!(
            "SELECT {cols} FROM jobs WHERE state = ?1 AND class_key = ?2 {} \
             ORDER BY priority DESC, cluster, proc LIMIT ?3",
            if has_dags {
                "AND cluster NOT IN (SELECT id FROM dagman_runs)"
            } else {
                ""
            }
        );
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![JobStateKind::Idle.code(), LOCAL_CLASS, limit],
            RawJob::from_row,
        )?;
        rows.map(|r| r.map_err(QueueError::from).and_then(RawJob::decode))
            .collect()
    }

    /// Local jobs (DAG jobs included) idle and running: (idle, running).
    pub fn local_counts(&self) -> Result<(u32, u32)> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT state, COUNT(*) FROM jobs WHERE state IN (?1, ?2) AND class_key = ?3 GROUP BY state",
        )?;
        let rows = stmt.query_map(
            params![
                JobStateKind::Idle.code(),
                JobStateKind::Running.code(),
                LOCAL_CLASS
            ],
            |r| Ok((r.get::<_, u8>(0)?, r.get::<_, i64>(1)?)),
        )?;
        let (mut idle, mut running) = (0u32, 0u32);
        for r in rows {
            let (s, n) = r?;
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            if s == JobStateKind::Idle.code() {
                idle = n;
            } else {
                running = n;
            }
        }
        Ok((idle, running))
    }

    /// [`JobQueue::running_jobs`] less the local ones: the jobs that run on
    /// a host, whose leases the home watches (a local job runs here and a
    /// DAG's job nowhere).
    pub fn running_remote_jobs(&self) -> Result<Vec<(JobId, Option<String>)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT cluster, proc, host FROM jobs WHERE state IN (?1, ?2) AND class_key != ?3 \
             ORDER BY cluster, proc",
        )?;
        let rows = stmt.query_map(
            params![
                JobStateKind::Running.code(),
                JobStateKind::Suspended.code(),
                LOCAL_CLASS
            ],
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

    /// Every job of `clusters`, in cluster and proc order (read in chunks,
    /// one statement each).
    pub fn jobs_of_clusters(&self, clusters: &[u64]) -> Result<Vec<JobRecord>> {
        let cols = self.columns;
        let mut out = Vec::new();
        for chunk in clusters.chunks(500) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("?{i}")).collect();
            let sql = format!(
                "SELECT {cols} FROM jobs WHERE cluster IN ({}) ORDER BY cluster, proc",
                marks.join(",")
            );
            let ids: Vec<i64> = chunk
                .iter()
                .map(|&c| to_i64(c, "cluster id"))
                .collect::<Result<_>>()?;
            let mut stmt = self.conn.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(ids), RawJob::from_row)?;
            for r in rows {
                out.push(RawJob::decode(r.map_err(QueueError::from)?)?);
            }
        }
        Ok(out)
    }
}
