//! Failed starts: counted in a row per job, and the hold that ends a
//! series that is too long (issue 14, poison jobs), each in one
//! transaction with its history events.

use super::rows::{decode_state, time_sql, to_i64};
use super::{JobQueue, JobRecord, QueueError, Result};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobEventKind, JobId, JobState, JobStateKind};
use gleaner_proto::wire::StartFailure;
use rusqlite::{OptionalExtension, TransactionBehavior, params};

/// What [`JobQueue::record_start_failure`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct FailedStart {
    /// The job after the change.
    pub record: JobRecord,
    /// Failed starts in a row, this one included (0: not counted, the job
    /// was no longer waiting to run).
    pub failures: u32,
    /// The job went on hold.
    pub held: bool,
}

impl JobQueue {
    /// Records that `id` failed to start on `host`: a `start_failed`
    /// event, one more failed start in a row, and then what `decide` says
    /// for that count: `Some(reason)` holds the job (with the failure's
    /// code and subcode), `None` leaves it idle (a running job goes back
    /// to idle, `evicted`). A job that is no longer waiting to run (held,
    /// completed, removed meanwhile) only gets the event.
    pub fn record_start_failure(
        &mut self,
        id: JobId,
        host: &str,
        failure: &StartFailure,
        decide: impl FnOnce(u32) -> Option<String>,
        at: Time,
    ) -> Result<FailedStart> {
        let now = time_sql(at)?;
        let cluster = to_i64(id.cluster, "cluster id")?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: Option<(u8, Option<String>, Option<i32>, u32)> = tx
            .prepare_cached(
                "SELECT state, hold_reason, exit_code, start_failures FROM jobs \
                 WHERE cluster = ?1 AND proc = ?2",
            )?
            .query_row(params![cluster, id.proc], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        let Some((code, reason, exit, before)) = current else {
            return Err(QueueError::NotFound(id));
        };
        let from = decode_state(id, code, reason, exit)?;
        let event = |kind: JobEventKind, detail: &str| {
            tx.prepare_cached(
                "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![cluster, id.proc, now, kind.name(), detail])
        };
        event(
            JobEventKind::StartFailed,
            &format!("on {host}: {}", failure.message),
        )?;
        let waiting = matches!(
            from.kind(),
            JobStateKind::Idle | JobStateKind::Running | JobStateKind::Suspended
        );
        let mut failures = 0;
        let mut held = false;
        if waiting {
            failures = before.saturating_add(1);
            match decide(failures) {
                Some(reason) => {
                    let to = JobState::Held {
                        reason: reason.clone(),
                    };
                    from.check_transition(&to)
                        .map_err(|source| QueueError::IllegalTransition { job: id, source })?;
                    tx.prepare_cached(
                        "UPDATE jobs SET state = ?3, hold_reason = ?4, hold_code = ?5, \
                           hold_subcode = ?6, start_failures = ?7, updated_at = ?8 \
                         WHERE cluster = ?1 AND proc = ?2",
                    )?
                    .execute(params![
                        cluster,
                        id.proc,
                        to.code(),
                        reason,
                        failure.code,
                        failure.subcode,
                        failures,
                        now
                    ])?;
                    event(JobEventKind::Held, &reason)?;
                    held = true;
                }
                None => {
                    let back = from.kind() != JobStateKind::Idle;
                    tx.prepare_cached(
                        "UPDATE jobs SET start_failures = ?3, updated_at = ?4, \
                           state = CASE WHEN ?5 THEN ?6 ELSE state END \
                         WHERE cluster = ?1 AND proc = ?2",
                    )?
                    .execute(params![
                        cluster,
                        id.proc,
                        failures,
                        now,
                        back,
                        JobStateKind::Idle.code()
                    ])?;
                    if back {
                        event(
                            JobEventKind::Evicted,
                            &format!("failed to start on {host} ({failures} in a row)"),
                        )?;
                    }
                }
            }
        }
        tx.commit()?;
        self.committed();
        if held {
            self.note_departure(id, JobStateKind::Held);
        }
        let record = self.get(id)?.ok_or(QueueError::NotFound(id))?;
        Ok(FailedStart {
            record,
            failures,
            held,
        })
    }

    /// Sets the `HoldReasonCode`/`HoldReasonSubCode` of a held job (a
    /// hold by the job's policy, `home::job_policy`).
    pub fn set_hold_code(&mut self, id: JobId, code: u32, subcode: i32) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE jobs SET hold_code = ?3, hold_subcode = ?4 \
             WHERE cluster = ?1 AND proc = ?2 AND state = ?5",
            )?
            .execute(params![
                to_i64(id.cluster, "cluster id")?,
                id.proc,
                code,
                subcode,
                JobStateKind::Held.code()
            ])?;
        self.committed();
        Ok(())
    }

    /// The program of `id` is running: its series of failed starts is
    /// over.
    pub fn clear_start_failures(&mut self, id: JobId) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE jobs SET start_failures = 0 \
             WHERE cluster = ?1 AND proc = ?2 AND start_failures <> 0",
            )?
            .execute(params![to_i64(id.cluster, "cluster id")?, id.proc])?;
        self.committed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_proto::job::JobDescription;
    use gleaner_proto::wire::hold_code;

    fn queue() -> (tempfile::TempDir, JobQueue, JobId) {
        let dir = tempfile::tempdir().unwrap();
        let mut q = JobQueue::open(dir.path().join("q.db")).unwrap();
        let ids = q
            .submit_with(Time::from_secs(1), |_| {
                Ok(vec![JobDescription::new("alice", "/bin/true")])
            })
            .unwrap();
        (dir, q, ids[0])
    }

    fn e2big() -> StartFailure {
        StartFailure {
            code: hold_code::FAILED_TO_EXECUTE,
            subcode: 7,
            message: "exec \"/bin/true\": Argument list too long (os error 7)".into(),
        }
    }

    fn hold_at(limit: u32) -> impl FnOnce(u32) -> Option<String> {
        move |n| (n >= limit).then(|| format!("failed {n} times"))
    }

    #[test]
    fn counts_in_a_row_then_holds_with_code_and_subcode() {
        let (_d, mut q, id) = queue();
        // A running job whose program could not start goes back to idle.
        q.transition(id, JobState::Running, "placed", Time::from_secs(2))
            .unwrap();
        let f = q
            .record_start_failure(id, "ws1", &e2big(), hold_at(3), Time::from_secs(3))
            .unwrap();
        assert_eq!((f.failures, f.held), (1, false));
        assert_eq!(f.record.state, JobState::Idle);
        // A refused placement of an idle job counts too.
        let f = q
            .record_start_failure(id, "ws2", &e2big(), hold_at(3), Time::from_secs(4))
            .unwrap();
        assert_eq!((f.failures, f.held), (2, false));
        assert_eq!(f.record.hold_code, None);
        let f = q
            .record_start_failure(id, "ws3", &e2big(), hold_at(3), Time::from_secs(5))
            .unwrap();
        assert!(f.held);
        assert_eq!(
            f.record.state,
            JobState::Held {
                reason: "failed 3 times".into()
            }
        );
        assert_eq!(f.record.hold_code, Some(6));
        assert_eq!(f.record.hold_subcode, Some(7));
        // The history tells each failure, the return to the queue, and the hold.
        let kinds: Vec<_> = q.events(id).unwrap().into_iter().map(|e| e.kind).collect();
        use JobEventKind::*;
        assert_eq!(
            kinds,
            vec![
                Submitted,
                Started,
                StartFailed,
                Evicted,
                StartFailed,
                StartFailed,
                Held
            ]
        );
        // Held: a late report only adds the event.
        let f = q
            .record_start_failure(id, "ws4", &e2big(), hold_at(1), Time::from_secs(6))
            .unwrap();
        assert_eq!((f.failures, f.held), (0, false));
        // A release starts a new series and clears the codes.
        let r = q
            .transition(id, JobState::Idle, "released", Time::from_secs(7))
            .unwrap();
        assert_eq!(
            (r.start_failures, r.hold_code, r.hold_subcode),
            (0, None, None)
        );
    }

    #[test]
    fn a_start_that_runs_ends_the_series() {
        let (_d, mut q, id) = queue();
        q.record_start_failure(id, "ws1", &e2big(), hold_at(3), Time::from_secs(2))
            .unwrap();
        assert_eq!(q.get(id).unwrap().unwrap().start_failures, 1);
        q.clear_start_failures(id).unwrap();
        assert_eq!(q.get(id).unwrap().unwrap().start_failures, 0);
    }
}
