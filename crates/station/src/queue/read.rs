//! Reading the queue: jobs, lists, the running jobs, counts, history.

use super::rows::{RawJob, time_from, time_sql, to_i64};
use super::{JobEvent, JobFilter, JobQueue, JobRecord, QueueError, Result, RunningJob};
use gleaner_core::time::Time;
use gleaner_proto::api::{ClusterSummary, QueueSummary, StateCounts};
use gleaner_proto::job::{JobEventKind, JobId, JobStateKind};
use rusqlite::{OptionalExtension, params};

impl JobQueue {
    /// The current run of `id` (the one last placed), if one was named.
    pub fn current_run(&self, id: JobId) -> Result<Option<String>> {
        let run = self
            .conn
            .prepare_cached("SELECT run_id FROM jobs WHERE cluster = ?1 AND proc = ?2")?
            .query_row(params![to_i64(id.cluster, "cluster id")?, id.proc], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()?;
        run.ok_or(QueueError::NotFound(id))
    }

    /// The jobs whose staged outputs are not all in place yet, with their
    /// owner and the record given to [`JobQueue::transition_publishing`].
    pub fn publishing(&self) -> Result<Vec<(JobId, String, String)>> {
        let mut stmt = self.conn.prepare(
            "SELECT cluster, proc, owner, publishing FROM jobs \
             WHERE publishing IS NOT NULL ORDER BY cluster, proc",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (cluster, proc, owner, record) = row?;
            let cluster = u64::try_from(cluster).map_err(|_| QueueError::Range("cluster id"))?;
            out.push((JobId::new(cluster, proc), owner, record));
        }
        Ok(out)
    }

    /// The staged-output record of `id` ([`JobQueue::publishing`]), if any.
    pub fn publishing_of(&self, id: JobId) -> Result<Option<String>> {
        let r = self
            .conn
            .prepare_cached("SELECT publishing FROM jobs WHERE cluster = ?1 AND proc = ?2")?
            .query_row(params![to_i64(id.cluster, "cluster id")?, id.proc], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()?;
        Ok(r.flatten())
    }

    /// One job, if it exists.
    pub fn get(&self, id: JobId) -> Result<Option<JobRecord>> {
        let cols = self.columns;
        let sql = format!("SELECT {cols} FROM jobs WHERE cluster = ?1 AND proc = ?2");
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
        let cols = self.columns;
        let sql = format!(
            "SELECT {cols} FROM jobs \
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

    /// One page of [`JobQueue::list`]: at most `limit` jobs after the
    /// first `offset`, in job-id order; without a state in `filter` only
    /// jobs still in the queue unless `terminal` (`glean q` pages through
    /// 100 000 jobs without reading them all).
    pub fn list_page(
        &self,
        filter: &JobFilter,
        terminal: bool,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<JobRecord>> {
        let cols = self.columns;
        let sql = format!(
            "SELECT {cols} FROM jobs \
             WHERE (?1 IS NULL OR owner = ?1) AND (?2 IS NULL OR state = ?2) \
               AND (?3 IS NULL OR cluster = ?3) \
               AND (?2 IS NOT NULL OR ?4 OR state NOT IN (?5, ?6)) \
             ORDER BY cluster, proc LIMIT ?7 OFFSET ?8"
        );
        let cluster = filter
            .cluster
            .map(|c| to_i64(c, "cluster id"))
            .transpose()?;
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![
                filter.owner,
                filter.state.map(JobStateKind::code),
                cluster,
                terminal,
                JobStateKind::Completed.code(),
                JobStateKind::Removed.code(),
                i64::try_from(limit).unwrap_or(i64::MAX),
                i64::try_from(offset).unwrap_or(i64::MAX),
            ],
            RawJob::from_row,
        )?;
        rows.map(|r| r.map_err(QueueError::from).and_then(RawJob::decode))
            .collect()
    }

    /// The queue by cluster: for each cluster that still has a job in the
    /// queue (of `owner`, if given), its owner, first submission and jobs
    /// by state; and the jobs still in the queue by state. Only the state
    /// index and the clusters it names are read, never a description.
    pub fn summary(&self, owner: Option<&str>) -> Result<QueueSummary> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT cluster, owner, state, COUNT(*), MIN(submitted_at) FROM jobs \
             WHERE cluster IN (SELECT DISTINCT cluster FROM jobs \
                               WHERE state IN (?2, ?3, ?4, ?5)) \
               AND (?1 IS NULL OR owner = ?1) \
             GROUP BY cluster, state, owner ORDER BY cluster, owner",
        )?;
        let rows = stmt.query_map(
            params![
                owner,
                JobStateKind::Idle.code(),
                JobStateKind::Running.code(),
                JobStateKind::Suspended.code(),
                JobStateKind::Held.code()
            ],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, u8>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            },
        )?;
        let mut out = QueueSummary::default();
        for row in rows {
            let (cluster, owner, code, n, at) = row?;
            let Some(kind) = JobStateKind::from_code(code) else {
                continue;
            };
            let cluster = u64::try_from(cluster).map_err(|_| QueueError::Range("cluster id"))?;
            let n = u64::try_from(n).unwrap_or(0);
            let at = time_from(at);
            let c = match out.clusters.last_mut() {
                Some(c) if c.cluster == cluster && c.owner == owner => c,
                _ => {
                    out.clusters.push(ClusterSummary {
                        cluster,
                        owner,
                        submitted_at: at,
                        counts: StateCounts::default(),
                    });
                    // Just pushed.
                    let Some(c) = out.clusters.last_mut() else {
                        continue;
                    };
                    c
                }
            };
            c.submitted_at = c.submitted_at.min(at);
            c.counts.add(kind, n);
            if !kind.is_terminal() {
                out.total.add(kind, n);
            }
        }
        Ok(out)
    }

    /// Jobs still in the queue whose description has one of the custom
    /// attributes `attrs` (`PeriodicHold`, …): the job policy's pass looks
    /// at them alone, and the other jobs' descriptions are not decoded.
    pub fn active_with_attrs(&self, attrs: &[&str]) -> Result<Vec<JobRecord>> {
        let cols = self.columns;
        let mut out = Vec::new();
        for a in attrs {
            let sql = format!(
                "SELECT {cols} FROM jobs WHERE state NOT IN (?1, ?2) \
                 AND json_extract(description, '$.custom_attrs.' || ?3) IS NOT NULL \
                 ORDER BY cluster, proc"
            );
            let mut stmt = self.conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(
                params![
                    JobStateKind::Completed.code(),
                    JobStateKind::Removed.code(),
                    format!("\"{a}\"")
                ],
                RawJob::from_row,
            )?;
            for r in rows {
                let r = RawJob::decode(r?)?;
                if !out.iter().any(|o: &JobRecord| o.id == r.id) {
                    out.push(r);
                }
            }
        }
        out.sort_by_key(|r| r.id);
        Ok(out)
    }

    /// Completed and removed jobs, most recently finished first
    /// (`glean history`).
    pub fn history(&self, owner: Option<&str>) -> Result<Vec<JobRecord>> {
        let cols = self.columns;
        let sql = format!(
            "SELECT {cols} FROM jobs \
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
        let cols = self.columns;
        let sql = format!(
            "SELECT {cols} FROM jobs WHERE state = ?1 \
             ORDER BY priority DESC, cluster, proc LIMIT ?2"
        );
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![JobStateKind::Idle.code(), limit], RawJob::from_row)?;
        rows.map(|r| r.map_err(QueueError::from).and_then(RawJob::decode))
            .collect()
    }

    /// The ids of [`JobQueue::next_idle_jobs`], in the same order, read
    /// from the `jobs_in_order` index alone (no description is decoded).
    pub fn next_idle_ids(&self, n: usize) -> Result<Vec<JobId>> {
        self.idle_ids(n, None)
    }

    /// [`JobQueue::next_idle_ids`] that may be matched at `now`: a
    /// deferred or cron job only from its `match_from` on. What the home's
    /// scheduler walks on every grant and ad.
    pub fn matchable_idle_ids(&self, n: usize, now: Time) -> Result<Vec<JobId>> {
        self.idle_ids(n, Some(now))
    }

    /// The matchable idle jobs of one class (`JobClass::of`'s key, stored
    /// at submit), in queue order, skipping the first `skip`: a range of
    /// the `jobs_by_class` index, whatever else waits (issue 15).
    pub fn matchable_idle_ids_of_class(
        &self,
        class_key: &str,
        skip: usize,
        n: usize,
        now: Time,
    ) -> Result<Vec<JobId>> {
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        let offset = i64::try_from(skip).unwrap_or(i64::MAX);
        let now = time_sql(now)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT cluster, proc FROM jobs WHERE state = ?1 AND class_key = ?4 \
               AND (match_from IS NULL OR match_from <= ?3) \
             ORDER BY priority DESC, cluster, proc LIMIT ?2 OFFSET ?5",
        )?;
        let rows = stmt.query_map(
            params![JobStateKind::Idle.code(), limit, now, class_key, offset],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, u32>(1)?)),
        )?;
        job_ids(rows)
    }

    fn idle_ids(&self, n: usize, now: Option<Time>) -> Result<Vec<JobId>> {
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        let now = now.map(time_sql).transpose()?;
        // `jobs_in_order` is in this order: the first n are read, not all
        // idle jobs sorted.
        let mut stmt = self.conn.prepare_cached(
            "SELECT cluster, proc FROM jobs WHERE state = ?1 \
               AND (?3 IS NULL OR match_from IS NULL OR match_from <= ?3) \
             ORDER BY priority DESC, cluster, proc LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![JobStateKind::Idle.code(), limit, now], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, u32>(1)?))
        })?;
        job_ids(rows)
    }

    /// Jobs that hold a host now (Running or Suspended) with the host they
    /// were last placed on, in job-id order: what the home's lease monitor
    /// watches. Reads only the `jobs_in_order` index range and three
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
        self.placements(
            "SELECT cluster, proc, host, host_address, host_claim, run_id FROM jobs \
             WHERE state IN (?1, ?2) \
             ORDER BY cluster, proc",
            params![JobStateKind::Running.code(), JobStateKind::Suspended.code()],
        )
    }

    /// Idle jobs whose last placement may have been accepted: a run is
    /// recorded (not retired) and nothing happened to the job since its
    /// `placed` event. A home killed between a host's acceptance and its
    /// own record of it finds them at start (`home::recover`).
    pub fn in_doubt_placements(&self) -> Result<Vec<RunningJob>> {
        self.placements(
            "SELECT j.cluster, j.proc, j.host, j.host_address, j.host_claim, j.run_id \
             FROM jobs j WHERE j.state = ?1 AND j.run_id IS NOT NULL AND j.run_id <> '' \
               AND (SELECT e.kind FROM events e WHERE e.cluster = j.cluster \
                    AND e.proc = j.proc ORDER BY e.seq DESC LIMIT 1) = ?2 \
             ORDER BY j.cluster, j.proc",
            params![JobStateKind::Idle.code(), JobEventKind::Placed.name()],
        )
    }

    /// The placements `sql` selects (cluster, proc, host, address, claim,
    /// run).
    fn placements(&self, sql: &str, p: impl rusqlite::Params) -> Result<Vec<RunningJob>> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let rows = stmt.query_map(p, |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (cluster, proc, host, host_address, host_claim, run_id) = row?;
            out.push(RunningJob {
                id: JobId::new(u64::try_from(cluster).unwrap_or(0), proc),
                host,
                host_address,
                host_claim,
                run_id,
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

    /// Counts of jobs per owner and state, for the states listed (the
    /// station's `/metrics`).
    pub fn count_by_owner(
        &self,
        states: &[JobStateKind],
    ) -> Result<Vec<(String, JobStateKind, u64)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT owner, state, COUNT(*) FROM jobs GROUP BY owner, state")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, u8>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (owner, code, n) = row?;
            if let Some(k) = JobStateKind::from_code(code).filter(|k| states.contains(k)) {
                out.push((owner, k, u64::try_from(n).unwrap_or(0)));
            }
        }
        Ok(out)
    }

    /// The details of every history event of `kind`, with how often each
    /// occurs (the station's `/metrics` classifies evictions by them).
    pub fn event_details(&self, kind: JobEventKind) -> Result<Vec<(String, u64)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT detail, COUNT(*) FROM events WHERE kind = ?1 GROUP BY detail",
        )?;
        let rows = stmt.query_map(params![kind.name()], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (detail, n) = row?;
            out.push((detail, u64::try_from(n).unwrap_or(0)));
        }
        Ok(out)
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

impl JobQueue {
    /// Idle jobs with a start time (deferred and cron jobs), for the
    /// home's timing loop.
    pub fn scheduled_idle(&self) -> Result<Vec<JobRecord>> {
        let cols = self.columns;
        let sql = format!(
            "SELECT {cols} FROM jobs WHERE state = ?1 AND not_before IS NOT NULL \
             ORDER BY cluster, proc"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![JobStateKind::Idle.code()], RawJob::from_row)?;
        rows.map(|r| r.map_err(QueueError::from).and_then(RawJob::decode))
            .collect()
    }
}

/// Job ids from rows of `(cluster, proc)`.
fn job_ids(rows: impl Iterator<Item = rusqlite::Result<(i64, u32)>>) -> Result<Vec<JobId>> {
    let mut out = Vec::new();
    for row in rows {
        let (cluster, proc) = row?;
        let cluster = u64::try_from(cluster).map_err(|_| QueueError::Range("cluster id"))?;
        out.push(JobId::new(cluster, proc));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::{JobFilter, JobQueue};
    use gleaner_core::time::Time;
    use gleaner_proto::job::{JobDescription, JobState, JobStateKind};

    #[test]
    fn summary_counts_clusters_by_state_and_pages_walk_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = JobQueue::open(dir.path().join("q.db")).unwrap();
        let a = q
            .submit_streamed(Time::from_secs(1), 1, |sink| {
                for _ in 0..5 {
                    sink(JobDescription::new("ann", "/bin/true"))?;
                }
                Ok(())
            })
            .unwrap()
            .unwrap();
        // Not the next cluster id: nothing stored.
        assert!(
            q.submit_streamed(Time::from_secs(2), 7, |_| Ok(()))
                .unwrap()
                .is_none()
        );
        let b = q
            .submit_with(Time::from_secs(3), |_| {
                Ok(vec![JobDescription::new("bob", "/bin/true"); 2])
            })
            .unwrap();
        let t = Time::from_secs(4);
        q.transition(a[0], JobState::Running, "x", t).unwrap();
        q.transition(a[1], JobState::Running, "x", t).unwrap();
        q.transition(a[1], JobState::Completed { exit_code: 0 }, "x", t)
            .unwrap();
        for id in &b {
            q.transition(*id, JobState::Removed, "x", t).unwrap();
        }
        let s = q.summary(None).unwrap();
        // Cluster 2 has nothing left in the queue.
        assert_eq!(s.clusters.len(), 1);
        let c = &s.clusters[0];
        assert_eq!((c.cluster, c.owner.as_str()), (1, "ann"));
        assert_eq!(
            (c.counts.idle, c.counts.running, c.counts.completed),
            (3, 1, 1)
        );
        assert_eq!((s.total.active(), s.total.completed), (4, 0));
        assert!(q.summary(Some("bob")).unwrap().clusters.is_empty());
        // Pages of 3 over the 4 active jobs; a state filter; terminal too.
        let f = JobFilter::default();
        let p1: Vec<_> = q.list_page(&f, false, 0, 3).unwrap();
        let p2: Vec<_> = q.list_page(&f, false, 3, 3).unwrap();
        assert_eq!(p1.len() + p2.len(), 4);
        assert_eq!(p1[0].id, a[0]);
        let idle = q
            .list_page(&JobFilter::state(JobStateKind::Idle), false, 0, 10)
            .unwrap();
        assert_eq!(idle.len(), 3);
        assert_eq!(q.list_page(&f, true, 0, 100).unwrap().len(), 7);
    }
}
