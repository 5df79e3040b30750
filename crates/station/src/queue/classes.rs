//! Reading the queue by user and by job class, for the home's fair share
//! and its advertised classes (issue 30): which users have idle jobs,
//! each user's idle classes, how many idle jobs a class has, its first
//! ones in queue order, and how many jobs of each class hold a host.
//!
//! Every read is a range of an index (`jobs_by_owner_class`,
//! `jobs_by_class`), never a scan of the queue: distinct values are found
//! one index seek each ("loose index scan"), so a user with 100 000 idle
//! jobs costs another user's lookup nothing.

use super::rows::{time_sql, to_i64};
use super::{JobQueue, QueueError, Result};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobId, JobStateKind};
use rusqlite::{OptionalExtension, params};

/// A job's place in its user's queue: higher `priority` first, then
/// cluster and proc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePos {
    pub priority: i64,
    pub id: JobId,
}

impl QueuePos {
    /// Sort key: queue order.
    pub fn order_key(&self) -> (i64, u64, u32) {
        (-self.priority, self.id.cluster, self.id.proc)
    }
}

impl JobQueue {
    /// The users with jobs in state `state`, by name, at most `max`.
    pub fn owners_in_state(&self, state: JobStateKind, max: usize) -> Result<Vec<String>> {
        let mut next = self
            .conn
            .prepare_cached("SELECT owner FROM jobs WHERE owner > ?1 ORDER BY owner LIMIT 1")?;
        let mut has = self
            .conn
            .prepare_cached("SELECT 1 FROM jobs WHERE owner = ?1 AND state = ?2 LIMIT 1")?;
        let mut out = Vec::new();
        let mut after = String::new();
        while out.len() < max {
            let Some(owner) = next
                .query_row(params![after], |r| r.get::<_, String>(0))
                .optional()?
            else {
                break;
            };
            if has
                .query_row(params![owner, state.code()], |_| Ok(()))
                .optional()?
                .is_some()
            {
                out.push(owner.clone());
            }
            after = owner;
        }
        Ok(out)
    }

    /// The class keys of `owner`'s jobs in state `state`, by key, at most
    /// `max` (jobs without a key, whose description no longer reads, are
    /// not matched and not listed).
    pub fn class_keys_of_owner(
        &self,
        owner: &str,
        state: JobStateKind,
        max: usize,
    ) -> Result<Vec<String>> {
        let mut next = self.conn.prepare_cached(
            "SELECT class_key FROM jobs WHERE owner = ?1 AND state = ?2 AND class_key > ?3 \
             ORDER BY class_key LIMIT 1",
        )?;
        let mut out = Vec::new();
        let mut after = String::new();
        while out.len() < max {
            let Some(key) = next
                .query_row(params![owner, state.code(), after], |r| {
                    r.get::<_, String>(0)
                })
                .optional()?
            else {
                break;
            };
            out.push(key.clone());
            after = key;
        }
        Ok(out)
    }

    /// Idle jobs of class `key` that may be matched at `now`, counting at
    /// most `cap` of them.
    pub fn count_matchable_idle_of_class(&self, key: &str, cap: u64, now: Time) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE state = ?1 AND class_key = ?2 \
                   AND (match_from IS NULL OR match_from <= ?3) LIMIT ?4)",
            )?
            .query_row(
                params![
                    JobStateKind::Idle.code(),
                    key,
                    time_sql(now)?,
                    i64::try_from(cap).unwrap_or(i64::MAX)
                ],
                |r| r.get(0),
            )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The first idle jobs of class `key` that may be matched at `now`, in
    /// queue order, after the first `skip`, at most `n`, with their place.
    pub fn matchable_idle_of_class(
        &self,
        key: &str,
        skip: usize,
        n: usize,
        now: Time,
    ) -> Result<Vec<QueuePos>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT priority, cluster, proc FROM jobs WHERE state = ?1 AND class_key = ?2 \
               AND (match_from IS NULL OR match_from <= ?3) \
             ORDER BY priority DESC, cluster, proc LIMIT ?4 OFFSET ?5",
        )?;
        let rows = stmt.query_map(
            params![
                JobStateKind::Idle.code(),
                key,
                time_sql(now)?,
                i64::try_from(n).unwrap_or(i64::MAX),
                i64::try_from(skip).unwrap_or(i64::MAX)
            ],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, u32>(2)?,
                ))
            },
        )?;
        let mut out = Vec::new();
        for row in rows {
            let (priority, cluster, proc) = row?;
            let cluster = u64::try_from(cluster).map_err(|_| QueueError::Range("cluster id"))?;
            out.push(QueuePos {
                priority,
                id: JobId::new(cluster, proc),
            });
        }
        Ok(out)
    }

    /// How many jobs of each class hold a host now (running or suspended).
    pub fn holding_by_class(&self) -> Result<Vec<(String, u64)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT class_key, COUNT(*) FROM jobs WHERE state IN (?1, ?2) \
               AND class_key IS NOT NULL GROUP BY class_key",
        )?;
        let rows = stmt.query_map(
            params![JobStateKind::Running.code(), JobStateKind::Suspended.code()],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)),
        )?;
        let mut out = Vec::new();
        for row in rows {
            let (key, n) = row?;
            out.push((key, u64::try_from(n).unwrap_or(0)));
        }
        Ok(out)
    }

    /// The class key stored for `id`.
    pub fn class_key_of(&self, id: JobId) -> Result<Option<String>> {
        let key = self
            .conn
            .prepare_cached("SELECT class_key FROM jobs WHERE cluster = ?1 AND proc = ?2")?
            .query_row(params![to_i64(id.cluster, "cluster id")?, id.proc], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()?;
        Ok(key.flatten())
    }

    /// The description of one job of class `key` in state `state` (what
    /// the class is made from), if any.
    pub fn description_of_class(
        &self,
        key: &str,
        state: JobStateKind,
    ) -> Result<Option<JobDescription>> {
        let text = self
            .conn
            .prepare_cached(
                "SELECT description FROM jobs WHERE state = ?1 AND class_key = ?2 LIMIT 1",
            )?
            .query_row(params![state.code(), key], |r| r.get::<_, String>(0))
            .optional()?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Jobs of `owner` still in the queue (idle, running, suspended, held),
    /// and of all users.
    pub fn queued_counts(&self, owner: &str) -> Result<(u64, u64)> {
        queued_counts(&self.conn, owner)
    }
}

/// [`JobQueue::queued_counts`] on `conn` (inside a submission's
/// transaction): index ranges only.
pub(super) fn queued_counts(conn: &rusqlite::Connection, owner: &str) -> Result<(u64, u64)> {
    let active = [
        JobStateKind::Idle,
        JobStateKind::Running,
        JobStateKind::Suspended,
        JobStateKind::Held,
    ];
    let (mut mine, mut all) = (0i64, 0i64);
    for s in active {
        let n: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM jobs WHERE owner = ?1 AND state = ?2")?
            .query_row(params![owner, s.code()], |r| r.get(0))?;
        mine += n;
        let n: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM jobs WHERE state = ?1")?
            .query_row(params![s.code()], |r| r.get(0))?;
        all += n;
    }
    Ok((
        u64::try_from(mine).unwrap_or(0),
        u64::try_from(all).unwrap_or(0),
    ))
}
