//! Editing queued jobs' descriptions (`condor_qedit`): each new
//! description replaces the old one with the columns derived from it (the
//! job's priority and class), all of an edit in one transaction synced
//! before the answer; a job that finished meanwhile is not changed.

use super::rows::to_i64;
use super::{JobQueue, QueueError, Result};
use gleaner_proto::job::{JobDescription, JobId, JobStateKind};
use rusqlite::{TransactionBehavior, params};

impl JobQueue {
    /// Replaces the description of each job of `edits`, all or none: a
    /// job absent or no longer in the queue (completed, removed) fails
    /// the whole edit with [`QueueError::NotFound`].
    pub fn replace_descriptions(&mut self, edits: &[(JobId, JobDescription)]) -> Result<()> {
        self.durably(|q| {
            let tx = q
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut up = tx.prepare_cached(
                    "UPDATE jobs SET description = ?3, priority = ?4, class_key = ?5 \
                     WHERE cluster = ?1 AND proc = ?2 AND state NOT IN (?6, ?7)",
                )?;
                for (id, d) in edits {
                    let json = serde_json::to_string(d).map_err(|e| QueueError::Corrupt {
                        job: *id,
                        reason: e.to_string(),
                    })?;
                    let changed = up.execute(params![
                        to_i64(id.cluster, "cluster id")?,
                        id.proc,
                        json,
                        d.priority,
                        gleaner_proto::matchmaking::JobClass::of(d).key,
                        JobStateKind::Completed.code(),
                        JobStateKind::Removed.code(),
                    ])?;
                    if changed == 0 {
                        return Err(QueueError::NotFound(*id));
                    }
                }
            }
            tx.commit()?;
            q.committed();
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::queue::{JobFilter, JobQueue};
    use gleaner_core::time::Time;
    use gleaner_proto::job::{JobDescription, JobState};
    use gleaner_proto::submit::{SubmitContext, parse_submit};

    #[test]
    fn edits_replace_descriptions_of_queued_jobs_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = JobQueue::open(dir.path().join("q.db")).unwrap();
        let sub = parse_submit(
            "executable = /bin/true\nqueue 2\n",
            &SubmitContext::new("t.sub", "alice"),
        )
        .unwrap();
        let ids = q.submit(&sub, Time::from_secs(1)).unwrap();
        let mut d: JobDescription = q.get(ids[0]).unwrap().unwrap().description;
        d.priority = 7;
        d.request_memory_mb = Some(2048);
        q.replace_descriptions(&[(ids[0], d.clone())]).unwrap();
        let back = q.get(ids[0]).unwrap().unwrap();
        assert_eq!(back.description, d);
        // The priority column orders the queue: it follows the edit.
        let idle = q.next_idle_ids(2).unwrap();
        assert_eq!(idle[0], ids[0]);
        // A finished job is not edited, nor is any other of the same edit.
        q.transition(ids[1], JobState::Removed, "rm", Time::from_secs(2))
            .unwrap();
        let mut d2 = d.clone();
        d2.priority = 9;
        let e = q
            .replace_descriptions(&[(ids[0], d2.clone()), (ids[1], d2)])
            .unwrap_err();
        assert!(e.to_string().contains("no such job"), "{e}");
        assert_eq!(q.get(ids[0]).unwrap().unwrap().description.priority, 7);
        assert_eq!(q.list(&JobFilter::default()).unwrap().len(), 2);
    }
}
