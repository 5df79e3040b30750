//! What the home keeps of its running parallel jobs (schema 9), so that a
//! home killed at any moment knows after its restart which members make
//! up each gang's run and which it suspended with their gang
//! (`home::gang`, `gleaner_core::gang::settle`). Each change is one
//! statement or one transaction, committed before the request it stands
//! for leaves the home.

use super::rows::{time_sql, to_i64};
use super::{JobQueue, QueueError, Result};
use gleaner_core::gang::Hold;
use gleaner_core::time::Time;
use gleaner_proto::job::{JobEventKind, JobId, JobStateKind};
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use std::collections::BTreeMap;

/// A parallel job's current run: ranks `0..size` of its `machine_count`
/// members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GangRun {
    pub cluster: u64,
    pub size: u32,
    pub machine_count: u32,
}

fn cluster_sql(cluster: u64) -> Result<i64> {
    to_i64(cluster, "cluster id")
}

fn run_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, u32, u32)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
}

fn to_run((cluster, size, machine_count): (i64, u32, u32)) -> Option<GangRun> {
    Some(GangRun {
        cluster: u64::try_from(cluster).ok()?,
        size,
        machine_count,
    })
}

impl JobQueue {
    /// A gang's run begins on `size` members: recorded (and any mark of an
    /// earlier run dropped) before a placement is sent.
    pub fn start_gang_run(&mut self, run: GangRun) -> Result<()> {
        let c = cluster_sql(run.cluster)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM gang_holds WHERE cluster = ?1", [c])?;
        tx.execute(
            "INSERT OR REPLACE INTO gang_runs (cluster, size, machine_count) VALUES (?1, ?2, ?3)",
            params![c, run.size, run.machine_count],
        )?;
        tx.commit()?;
        self.committed();
        Ok(())
    }

    /// The current run of `cluster`'s gang, if one is recorded.
    pub fn gang_run(&self, cluster: u64) -> Result<Option<GangRun>> {
        let row = self
            .conn
            .query_row(
                "SELECT cluster, size, machine_count FROM gang_runs WHERE cluster = ?1",
                [cluster_sql(cluster)?],
                run_of,
            )
            .optional()?;
        Ok(row.and_then(to_run))
    }

    /// Every recorded gang run.
    pub fn gang_runs(&self) -> Result<Vec<GangRun>> {
        let mut stmt = self
            .conn
            .prepare("SELECT cluster, size, machine_count FROM gang_runs ORDER BY cluster")?;
        let rows = stmt
            .query_map([], run_of)?
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(rows.into_iter().filter_map(to_run).collect())
    }

    /// The run of `cluster` is over (no member on a host): it and its
    /// marks go.
    pub fn end_gang_run(&mut self, cluster: u64) -> Result<()> {
        self.end_gang_run_reopening(cluster, &[], "", Time::from_secs(0))
            .map(|_| ())
    }

    /// [`JobQueue::end_gang_run`] of a run that was vacated, in the same
    /// transaction as the return to the queue of `reopen`: members that
    /// exited before rank 0 in it (`gleaner_core::gang::Plan::reopen`), so
    /// that the job runs again whole. A member goes back (completed to
    /// idle, its exit code forgotten, an `evicted` event with `detail`)
    /// only if it is completed and rank 0 is idle: never once rank 0's
    /// exit ended the job. A home killed before the commit finds the run
    /// still recorded and does it again. Returns the members sent back.
    pub fn end_gang_run_reopening(
        &mut self,
        cluster: u64,
        reopen: &[u32],
        detail: &str,
        at: Time,
    ) -> Result<Vec<u32>> {
        let c = cluster_sql(cluster)?;
        let now = time_sql(at)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut back = Vec::new();
        for r in reopen.iter().copied().filter(|r| *r != 0) {
            let changed = tx.execute(
                "UPDATE jobs SET state = ?3, exit_code = NULL, finished_at = NULL, updated_at = ?4 \
                 WHERE cluster = ?1 AND proc = ?2 AND state = ?5 AND EXISTS \
                   (SELECT 1 FROM jobs WHERE cluster = ?1 AND proc = 0 AND state = ?3)",
                params![
                    c,
                    r,
                    JobStateKind::Idle.code(),
                    now,
                    JobStateKind::Completed.code()
                ],
            )?;
            if changed > 0 {
                tx.execute(
                    "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![c, r, now, JobEventKind::Evicted.name(), detail],
                )?;
                back.push(r);
            }
        }
        tx.execute("DELETE FROM gang_holds WHERE cluster = ?1", [c])?;
        tx.execute("DELETE FROM gang_runs WHERE cluster = ?1", [c])?;
        tx.commit()?;
        self.committed();
        Ok(back)
    }

    /// The members of `cluster` its home suspended with the gang, by rank.
    pub fn gang_holds(&self, cluster: u64) -> Result<BTreeMap<u32, Hold>> {
        let mut stmt = self
            .conn
            .prepare("SELECT proc, releasing FROM gang_holds WHERE cluster = ?1")?;
        let rows = stmt
            .query_map([cluster_sql(cluster)?], |r| {
                Ok((r.get::<_, u32>(0)?, r.get::<_, bool>(1)?))
            })?
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(rows
            .into_iter()
            .map(|(p, releasing)| {
                let h = if releasing {
                    Hold::Releasing
                } else {
                    Hold::Held
                };
                (p, h)
            })
            .collect())
    }

    /// Marks `ranks` of `cluster` as `hold`, in one transaction.
    pub fn mark_gang_holds(&mut self, cluster: u64, ranks: &[u32], hold: Hold) -> Result<()> {
        let releasing = hold == Hold::Releasing;
        self.each_rank(cluster, ranks, |tx, c, r| {
            tx.execute(
                "INSERT OR REPLACE INTO gang_holds (cluster, proc, releasing) VALUES (?1, ?2, ?3)",
                params![c, r, releasing],
            )
        })
    }

    /// Drops the marks of `ranks` of `cluster`.
    pub fn forget_gang_holds(&mut self, cluster: u64, ranks: &[u32]) -> Result<()> {
        self.each_rank(cluster, ranks, |tx, c, r| {
            tx.execute(
                "DELETE FROM gang_holds WHERE cluster = ?1 AND proc = ?2",
                params![c, r],
            )
        })
    }

    /// `write` for each of `ranks` of `cluster`, in one transaction.
    fn each_rank(
        &mut self,
        cluster: u64,
        ranks: &[u32],
        write: impl Fn(&rusqlite::Transaction<'_>, i64, u32) -> rusqlite::Result<usize>,
    ) -> Result<()> {
        let c = cluster_sql(cluster)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for r in ranks {
            write(&tx, c, *r)?;
        }
        tx.commit()?;
        self.committed();
        Ok(())
    }

    /// A member of a reconfigurable parallel job that its gang's last run
    /// did not use ends with the job: completed with rank 0's
    /// `exit_code`, from the queue, where it waited (the state machine has
    /// no idle-to-completed step for a job that ran; this one did not run,
    /// and its history says so in `detail`). Refused unless it is idle.
    /// `publishing`: its outputs staged and not yet in place, as for
    /// [`JobQueue::transition_publishing`].
    pub fn complete_unused_member(
        &mut self,
        id: JobId,
        exit_code: i32,
        detail: &str,
        at: Time,
        publishing: Option<&str>,
    ) -> Result<()> {
        let c = cluster_sql(id.cluster)?;
        let now = time_sql(at)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let changed = tx.execute(
            "UPDATE jobs SET state = ?3, exit_code = ?4, hold_reason = NULL, updated_at = ?5, \
               finished_at = ?5, hold_code = NULL, hold_subcode = NULL, publishing = ?7 \
             WHERE cluster = ?1 AND proc = ?2 AND state = ?6",
            params![
                c,
                id.proc,
                JobStateKind::Completed.code(),
                exit_code,
                now,
                JobStateKind::Idle.code(),
                publishing
            ],
        )?;
        if changed == 0 {
            return Err(QueueError::Range("an idle member of a parallel job"));
        }
        tx.execute(
            "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![c, id.proc, now, JobEventKind::Completed.name(), detail],
        )?;
        tx.commit()?;
        self.committed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_proto::job::{JobDescription, JobState};

    /// A cluster of three procs in `q`.
    fn three(q: &mut JobQueue) -> Vec<JobId> {
        q.submit_with(Time::from_secs(1), |_| {
            Ok((0..3)
                .map(|_| JobDescription::new("u", "/bin/true"))
                .collect())
        })
        .unwrap()
    }

    #[test]
    fn gang_runs_and_holds_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queue.db");
        let mut q = JobQueue::open(&path).unwrap();
        let ids = three(&mut q);
        let c = ids[0].cluster;
        q.start_gang_run(GangRun {
            cluster: c,
            size: 2,
            machine_count: 3,
        })
        .unwrap();
        q.mark_gang_holds(c, &[0, 1], Hold::Held).unwrap();
        q.mark_gang_holds(c, &[1], Hold::Releasing).unwrap();
        drop(q);
        let mut q = JobQueue::open(&path).unwrap();
        assert_eq!(
            q.gang_runs().unwrap(),
            vec![GangRun {
                cluster: c,
                size: 2,
                machine_count: 3
            }]
        );
        let h = q.gang_holds(c).unwrap();
        assert_eq!(h.get(&0), Some(&Hold::Held));
        assert_eq!(h.get(&1), Some(&Hold::Releasing));
        q.forget_gang_holds(c, &[0]).unwrap();
        assert_eq!(q.gang_holds(c).unwrap().len(), 1);
        // A new run starts with no marks.
        q.start_gang_run(GangRun {
            cluster: c,
            size: 3,
            machine_count: 3,
        })
        .unwrap();
        assert!(q.gang_holds(c).unwrap().is_empty());
        q.end_gang_run(c).unwrap();
        assert_eq!(q.gang_run(c).unwrap(), None);

        // An unused member completes from the queue; a running one may not.
        q.complete_unused_member(ids[2], 7, "not used", Time::from_secs(5), None)
            .unwrap();
        let r = q.get(ids[2]).unwrap().unwrap();
        assert_eq!(r.state, JobState::Completed { exit_code: 7 });
        assert_eq!(r.run_count, 0);
        q.transition(ids[1], JobState::Running, "", Time::from_secs(6))
            .unwrap();
        assert!(
            q.complete_unused_member(ids[1], 7, "x", Time::from_secs(7), None)
                .is_err()
        );
        assert_eq!(q.get(ids[1]).unwrap().unwrap().state, JobState::Running);
    }

    #[test]
    fn a_vacated_run_sends_members_that_exited_early_back_to_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = JobQueue::open(dir.path().join("queue.db")).unwrap();
        let ids = three(&mut q);
        let c = ids[0].cluster;
        let run = GangRun {
            cluster: c,
            size: 3,
            machine_count: 3,
        };
        q.start_gang_run(run).unwrap();
        for id in &ids {
            q.transition(*id, JobState::Running, "", Time::from_secs(2))
                .unwrap();
        }
        // Member 1 exits before rank 0; then the gang is vacated.
        q.transition(
            ids[1],
            JobState::Completed { exit_code: 3 },
            "",
            Time::from_secs(3),
        )
        .unwrap();
        for id in [ids[0], ids[2]] {
            q.transition(id, JobState::Idle, "vacated", Time::from_secs(4))
                .unwrap();
        }
        q.mark_gang_holds(c, &[2], Hold::Held).unwrap();
        let back = q
            .end_gang_run_reopening(c, &[1], "runs again with its gang", Time::from_secs(5))
            .unwrap();
        assert_eq!(back, vec![1]);
        let r = q.get(ids[1]).unwrap().unwrap();
        assert_eq!((r.state, r.finished_at), (JobState::Idle, None));
        let last = q.events(ids[1]).unwrap().pop().unwrap();
        assert_eq!(
            (last.kind, last.detail.as_str()),
            (JobEventKind::Evicted, "runs again with its gang")
        );
        assert_eq!(q.gang_run(c).unwrap(), None);
        assert!(q.gang_holds(c).unwrap().is_empty());

        // Once rank 0 has exited the job is over: nothing goes back.
        q.start_gang_run(run).unwrap();
        for id in &ids {
            q.transition(*id, JobState::Running, "", Time::from_secs(6))
                .unwrap();
        }
        for id in [ids[1], ids[0]] {
            q.transition(
                id,
                JobState::Completed { exit_code: 7 },
                "",
                Time::from_secs(7),
            )
            .unwrap();
        }
        q.transition(ids[2], JobState::Idle, "", Time::from_secs(7))
            .unwrap();
        let back = q
            .end_gang_run_reopening(c, &[0, 1], "x", Time::from_secs(8))
            .unwrap();
        assert!(back.is_empty());
        assert_eq!(
            q.get(ids[1]).unwrap().unwrap().state,
            JobState::Completed { exit_code: 7 }
        );
    }
}
