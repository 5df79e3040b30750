//! Reads for the station's dashboard summary (`home::summary`): per-owner
//! counts with the oldest idle submission, the newest evictions and
//! holds, and a job's newest events. Each is one bounded query.

use super::rows::time_from;
use super::{JobQueue, Result};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobEventKind, JobId, JobStateKind};
use rusqlite::params;

/// One owner's jobs in one state: how many, and the oldest submission.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnerStateCount {
    pub owner: String,
    pub state: JobStateKind,
    pub count: u64,
    pub oldest_submitted: Time,
}

/// A history event with its job's owner.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedEvent {
    pub job: JobId,
    pub owner: String,
    pub kind: JobEventKind,
    pub detail: String,
    pub at: Time,
}

impl JobQueue {
    /// Jobs per owner and state with the oldest submission time of each
    /// group (Completed and Removed left out).
    pub fn owner_state_counts(&self) -> Result<Vec<OwnerStateCount>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT owner, state, COUNT(*), MIN(submitted_at) FROM jobs \
             WHERE state IN (?1, ?2, ?3, ?4) GROUP BY owner, state",
        )?;
        let live = [
            JobStateKind::Idle,
            JobStateKind::Running,
            JobStateKind::Suspended,
            JobStateKind::Held,
        ]
        .map(|k| k.code());
        let rows = stmt.query_map(params![live[0], live[1], live[2], live[3]], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, u8>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (owner, code, n, oldest) = row?;
            if let Some(state) = JobStateKind::from_code(code) {
                out.push(OwnerStateCount {
                    owner,
                    state,
                    count: u64::try_from(n).unwrap_or(0),
                    oldest_submitted: time_from(oldest),
                });
            }
        }
        Ok(out)
    }

    /// The newest `limit` history events of the given kinds, newest first,
    /// with their jobs' owners.
    pub fn recent_events(&self, kinds: &[JobEventKind], limit: usize) -> Result<Vec<OwnedEvent>> {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        let placeholders = (1..=names.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        // Walks the events backwards by their primary key and stops at
        // `limit` matches.
        let sql = format!(
            "SELECT e.cluster, e.proc, e.kind, e.detail, e.at, j.owner FROM events e \
             JOIN jobs j ON j.cluster = e.cluster AND j.proc = e.proc \
             WHERE e.kind IN ({placeholders}) ORDER BY e.seq DESC LIMIT {limit}"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(names.iter()), |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, String>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (cluster, proc, kind, detail, at, owner) = row?;
            let Some(kind) = JobEventKind::from_name(&kind) else {
                continue;
            };
            out.push(OwnedEvent {
                job: JobId {
                    cluster: u64::try_from(cluster).unwrap_or(0),
                    proc,
                },
                owner,
                kind,
                detail,
                at: time_from(at),
            });
        }
        Ok(out)
    }

    /// The newest `limit` events of job `id`, oldest first, and how many
    /// it has in all: walks its events backwards on the `events_by_job`
    /// index, so a long history costs no more than a short one.
    pub fn newest_events_of(&self, id: JobId, limit: usize) -> Result<(Vec<OwnedEvent>, u64)> {
        let cluster = i64::try_from(id.cluster).unwrap_or(i64::MAX);
        let total: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM events WHERE cluster = ?1 AND proc = ?2")?
            .query_row(params![cluster, id.proc], |r| r.get(0))?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.kind, e.detail, e.at, j.owner FROM events e \
             JOIN jobs j ON j.cluster = e.cluster AND j.proc = e.proc \
             WHERE e.cluster = ?1 AND e.proc = ?2 ORDER BY e.seq DESC LIMIT ?3",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt.query_map(params![cluster, id.proc, limit], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (kind, detail, at, owner) = row?;
            let Some(kind) = JobEventKind::from_name(&kind) else {
                continue;
            };
            out.push(OwnedEvent {
                job: id,
                owner,
                kind,
                detail,
                at: time_from(at),
            });
        }
        out.reverse();
        Ok((out, u64::try_from(total).unwrap_or(0)))
    }
}
