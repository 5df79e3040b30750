//! Changing the queue: submissions, state transitions, annotations. Each
//! change is one `BEGIN IMMEDIATE` transaction with its history event.

use super::rows::{decode_state, time_sql, to_i64};
use super::{JobQueue, JobRecord, QueueError, Result};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobEventKind, JobId, JobState, JobStateKind};
use gleaner_proto::submit::ClusterSubmission;
use gleaner_proto::wire::hold_code;
use rusqlite::{OptionalExtension, TransactionBehavior, params};

/// The hold reason of a job submitted with `hold = true` (HTCondor's
/// words).
pub const SUBMITTED_ON_HOLD: &str = "submitted on hold at user's request";

impl JobQueue {
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
        // A submission is acknowledged to its user: synced before the
        // answer, also against power loss (`durability`).
        self.durably(|q| q.submit_tx(at, build, also))
    }

    fn submit_tx(
        &mut self,
        at: Time,
        build: impl FnOnce(u64) -> Result<Vec<JobDescription>>,
        also: impl FnOnce(&rusqlite::Transaction<'_>, &[JobId]) -> Result<()>,
    ) -> Result<Vec<JobId>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let next: i64 = tx
            .prepare_cached("SELECT value FROM meta WHERE key = 'next_cluster'")?
            .query_row([], |r| r.get(0))?;
        let cluster = u64::try_from(next).map_err(|_| QueueError::Range("cluster id"))?;
        let descs = build(cluster)?;
        if descs.is_empty() {
            return Err(QueueError::EmptySubmission);
        }
        if let (Some(limits), Some(first)) = (&self.limits, descs.first()) {
            let (mine, all) = super::classes::queued_counts(&tx, &first.owner)?;
            let n = u64::try_from(descs.len()).unwrap_or(u64::MAX);
            limits.admit(&first.owner, mine, all, n)?;
        }
        let mut ids = Vec::with_capacity(descs.len());
        {
            let mut ins = tx.prepare_cached(INSERT_JOB)?;
            let mut ev = tx.prepare_cached(INSERT_SUBMITTED)?;
            for (i, d) in descs.iter().enumerate() {
                let proc = u32::try_from(i).map_err(|_| QueueError::Range("proc id"))?;
                ids.push(insert_proc(&mut ins, &mut ev, cluster, proc, d, at)?);
            }
        }
        tx.prepare_cached("UPDATE meta SET value = ?1 WHERE key = 'next_cluster'")?
            .execute(params![
                next.checked_add(1).ok_or(QueueError::Range("cluster id"))?
            ])?;
        also(&tx, &ids)?;
        tx.commit()?;
        self.committed();
        tracing::debug!(cluster, procs = ids.len(), "submitted cluster");
        Ok(ids)
    }

    /// Queues cluster `cluster` (which must be the next cluster id; else
    /// nothing is stored and `Ok(None)` says so) with the descriptions
    /// `produce` hands to its sink one by one, each inserted and dropped at
    /// once, all in one transaction synced before it returns: a 100 000-proc
    /// cluster never sits in memory whole. `produce`'s error stores nothing.
    pub fn submit_streamed(
        &mut self,
        at: Time,
        cluster: u64,
        produce: impl FnOnce(&mut dyn FnMut(JobDescription) -> Result<()>) -> Result<()>,
    ) -> Result<Option<Vec<JobId>>> {
        self.durably(|q| {
            let tx = q
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let next: i64 = tx
                .prepare_cached("SELECT value FROM meta WHERE key = 'next_cluster'")?
                .query_row([], |r| r.get(0))?;
            if u64::try_from(next).ok() != Some(cluster) {
                return Ok(None);
            }
            let mut ids = Vec::new();
            let limits = q.limits;
            {
                let mut ins = tx.prepare_cached(INSERT_JOB)?;
                let mut ev = tx.prepare_cached(INSERT_SUBMITTED)?;
                // The owner's and the queue's counts, read with the first
                // job (every job of a cluster has one owner).
                let mut counts: Option<(u64, u64)> = None;
                let mut sink = |d: JobDescription| -> Result<()> {
                    if let Some(limits) = &limits {
                        let (mine, all) = match counts {
                            Some(c) => c,
                            None => *counts.insert(super::classes::queued_counts(&tx, &d.owner)?),
                        };
                        let n = u64::try_from(ids.len())
                            .unwrap_or(u64::MAX)
                            .saturating_add(1);
                        limits.admit(&d.owner, mine, all, n)?;
                    }
                    let proc =
                        u32::try_from(ids.len()).map_err(|_| QueueError::Range("proc id"))?;
                    ids.push(insert_proc(&mut ins, &mut ev, cluster, proc, &d, at)?);
                    Ok(())
                };
                produce(&mut sink)?;
            }
            if ids.is_empty() {
                return Err(QueueError::EmptySubmission);
            }
            tx.prepare_cached("UPDATE meta SET value = ?1 WHERE key = 'next_cluster'")?
                .execute(params![
                    next.checked_add(1).ok_or(QueueError::Range("cluster id"))?
                ])?;
            tx.commit()?;
            q.committed();
            tracing::debug!(cluster, procs = ids.len(), "submitted cluster (streamed)");
            Ok(Some(ids))
        })
    }

    /// Records, before they are written, the outputs about to be staged
    /// for `id` (see `home::deliver`); the completion's commit replaces it.
    pub fn set_publishing(&mut self, id: JobId, record: &str) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE jobs SET publishing = ?3 WHERE cluster = ?1 AND proc = ?2")?
            .execute(params![to_i64(id.cluster, "cluster id")?, id.proc, record])?;
        self.committed();
        Ok(())
    }

    /// Forgets the staged outputs of `id` once they are in place.
    pub fn published(&mut self, id: JobId) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE jobs SET publishing = NULL WHERE cluster = ?1 AND proc = ?2")?
            .execute(params![to_i64(id.cluster, "cluster id")?, id.proc])?;
        self.committed();
        Ok(())
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
        self.transition_inner(id, to, detail, at, None, false)
    }

    /// [`JobQueue::transition`] that also records, in the same transaction,
    /// `publishing`: the outputs staged for this completion and not yet in
    /// place (see `home::deliver`), until [`JobQueue::published`].
    pub fn transition_publishing(
        &mut self,
        id: JobId,
        to: JobState,
        detail: &str,
        at: Time,
        publishing: Option<&str>,
    ) -> Result<JobRecord> {
        self.transition_inner(id, to, detail, at, publishing, false)
    }

    /// [`JobQueue::transition_publishing`] for the end of a run whose
    /// program exited: one more `NumJobCompletions`, whether the job
    /// completes, is held or goes back to the queue.
    pub fn transition_exited(
        &mut self,
        id: JobId,
        to: JobState,
        detail: &str,
        at: Time,
        publishing: Option<&str>,
    ) -> Result<JobRecord> {
        self.transition_inner(id, to, detail, at, publishing, true)
    }

    fn transition_inner(
        &mut self,
        id: JobId,
        to: JobState,
        detail: &str,
        at: Time,
        publishing: Option<&str>,
        exited: bool,
    ) -> Result<JobRecord> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        apply_transition(&tx, id, &to, detail, at, publishing, exited)?;
        tx.commit()?;
        self.committed();
        self.note_departure(id, to.kind());
        self.get(id)?.ok_or(QueueError::NotFound(id))
    }

    /// Moves each of `ids` to `to` in one transaction (a user's `rm`,
    /// `hold` or `release` of a whole cluster): one commit, not one per
    /// job. A job that is gone or may not make this transition gets its
    /// error and stays as it was (nothing of it was written); the others
    /// change. Each job's outcome (the state it left), in the order given.
    pub fn transition_many(
        &mut self,
        ids: &[JobId],
        to: &JobState,
        detail: &str,
        at: Time,
    ) -> Result<Vec<Result<JobState>>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            match apply_transition(&tx, id, to, detail, at, None, false) {
                Err(e @ (QueueError::NotFound(_) | QueueError::IllegalTransition { .. })) => {
                    out.push(Err(e))
                }
                Err(e) => return Err(e),
                Ok(from) => out.push(Ok(from)),
            }
        }
        tx.commit()?;
        self.committed();
        for (id, r) in ids.iter().zip(&out) {
            if r.is_ok() {
                self.note_departure(*id, to.kind());
            }
        }
        Ok(out)
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

    /// Records that `id` was placed on `host` at `address` (its base URL)
    /// with `claim`: a `Placed` event with the host name as detail. All
    /// three survive a restart of the home ([`JobQueue::running_placements`]).
    pub fn record_placement(
        &mut self,
        id: JobId,
        host: &str,
        address: &str,
        claim: &str,
        at: Time,
    ) -> Result<()> {
        self.record_placement_run(id, host, address, claim, None, at)
    }

    /// [`JobQueue::record_placement`] of the run `run`, which becomes the
    /// job's current run ([`JobQueue::current_run`]); `None`: no run is
    /// named, and the home hears any.
    pub fn record_placement_run(
        &mut self,
        id: JobId,
        host: &str,
        address: &str,
        claim: &str,
        run: Option<&str>,
        at: Time,
    ) -> Result<()> {
        let placement = Placement {
            address,
            claim,
            run,
        };
        self.annotate_with(id, JobEventKind::Placed, host, Some(placement), at)
    }

    /// Records that `id` has no current run any more (held, removed, its
    /// lease expired): an empty `run_id`, which no run matches.
    pub fn retire_run(&mut self, id: JobId) -> Result<()> {
        let cluster = to_i64(id.cluster, "cluster id")?;
        let changed = self
            .conn
            .prepare_cached("UPDATE jobs SET run_id = '' WHERE cluster = ?1 AND proc = ?2")?
            .execute(params![cluster, id.proc])?;
        self.committed();
        if changed == 0 {
            return Err(QueueError::NotFound(id));
        }
        Ok(())
    }

    fn annotate_with(
        &mut self,
        id: JobId,
        kind: JobEventKind,
        detail: &str,
        placement: Option<Placement<'_>>,
        at: Time,
    ) -> Result<()> {
        let address = placement.as_ref().map(|p| p.address);
        let claim = placement.as_ref().map(|p| p.claim);
        let run = placement.as_ref().and_then(|p| p.run);
        let now = time_sql(at)?;
        let cluster = to_i64(id.cluster, "cluster id")?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let changed = tx
            .prepare_cached(
                "UPDATE jobs SET updated_at = ?3, host = CASE WHEN ?4 THEN ?5 ELSE host END, \
               host_address = CASE WHEN ?4 THEN ?6 ELSE host_address END, \
               host_claim = CASE WHEN ?4 THEN ?7 ELSE host_claim END, \
               run_id = CASE WHEN ?4 THEN ?8 ELSE run_id END \
             WHERE cluster = ?1 AND proc = ?2",
            )?
            .execute(params![
                cluster,
                id.proc,
                now,
                kind == JobEventKind::Placed,
                detail,
                address,
                claim,
                run
            ])?;
        if changed == 0 {
            return Err(QueueError::NotFound(id));
        }
        tx.prepare_cached(
            "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![cluster, id.proc, now, kind.name(), detail])?;
        tx.commit()?;
        self.committed();
        Ok(())
    }
}

/// Inserts proc `proc` of `cluster` (described by `d`, submitted at `now`)
/// and its `submitted` event with the statements of a submission.
fn insert_proc(
    ins: &mut rusqlite::CachedStatement<'_>,
    ev: &mut rusqlite::CachedStatement<'_>,
    cluster: u64,
    proc: u32,
    d: &JobDescription,
    at: Time,
) -> Result<JobId> {
    let id = JobId::new(cluster, proc);
    let next = to_i64(cluster, "cluster id")?;
    let now = time_sql(at)?;
    let json = serde_json::to_string(d).map_err(|e| QueueError::Corrupt {
        job: id,
        reason: e.to_string(),
    })?;
    // `hold = true`: queued on hold, as HTCondor does it (HoldReasonCode
    // 15, SubmittedOnHold).
    let (state, hold_reason, hold_code) = if d.hold {
        (
            JobStateKind::Held,
            Some(SUBMITTED_ON_HOLD),
            Some(hold_code::SUBMITTED_ON_HOLD),
        )
    } else {
        (JobStateKind::Idle, None, None)
    };
    let start = crate::schedule::first_start(d, id, at);
    // A local job runs here, never matched: its own class, no match time.
    let (match_from, class) = if d.universe.is_local() {
        (Some(super::NEVER), super::LOCAL_CLASS.to_string())
    } else {
        (
            start.map(|s| time_sql(s.match_from)).transpose()?,
            gleaner_proto::matchmaking::JobClass::of(d).key,
        )
    };
    ins.execute(params![
        next,
        proc,
        d.owner,
        json,
        state.code(),
        d.priority,
        now,
        hold_reason,
        hold_code,
        start.map(|s| time_sql(s.at)).transpose()?,
        match_from,
        class
    ])?;
    ev.execute(params![
        next,
        proc,
        now,
        JobEventKind::Submitted.name(),
        d.owner
    ])?;
    Ok(id)
}

/// One job row as [`insert_proc`] fills it.
const INSERT_JOB: &str = "INSERT INTO jobs (cluster, proc, owner, description, state, priority, \
     submitted_at, updated_at, hold_reason, hold_code, not_before, match_from, class_key) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12)";

/// The `Submitted` event of one job.
const INSERT_SUBMITTED: &str =
    "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)";

/// Where a job was placed, as [`JobQueue::record_placement_run`] stores it.
struct Placement<'a> {
    address: &'a str,
    claim: &'a str,
    run: Option<&'a str>,
}

impl JobQueue {
    /// Sets when an idle job may start and be matched (`None`: at once);
    /// the home's timing loop moves a cron job that missed its window to
    /// its next time.
    pub fn set_schedule(&mut self, id: JobId, start: Option<crate::schedule::Start>) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE jobs SET not_before = ?3, match_from = ?4 WHERE cluster = ?1 AND proc = ?2",
            )?
            .execute(params![
                to_i64(id.cluster, "cluster id")?,
                id.proc,
                start.map(|s| time_sql(s.at)).transpose()?,
                start.map(|s| time_sql(s.match_from)).transpose()?
            ])?;
        if changed == 0 {
            return Err(QueueError::NotFound(id));
        }
        Ok(())
    }
}

/// One job's transition inside `tx`: checked against its current state
/// first, so a refused one writes nothing. Returns the state it left.
fn apply_transition(
    tx: &rusqlite::Transaction<'_>,
    id: JobId,
    to: &JobState,
    detail: &str,
    at: Time,
    publishing: Option<&str>,
    exited: bool,
) -> Result<JobState> {
    let now = time_sql(at)?;
    let cluster = to_i64(id.cluster, "cluster id")?;
    // Cached statements: a cluster's `rm` runs these once per job.
    let current: Option<(u8, Option<String>, Option<i32>, String)> = tx
        .prepare_cached(
            "SELECT state, hold_reason, exit_code, description FROM jobs \
             WHERE cluster = ?1 AND proc = ?2",
        )?
        .query_row(params![cluster, id.proc], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let Some((code, reason, exit, description)) = current else {
        return Err(QueueError::NotFound(id));
    };
    let from = decode_state(id, code, reason, exit)?;
    let event = from
        .check_transition(to)
        .map_err(|source| QueueError::IllegalTransition { job: id, source })?;

    let (hold_reason, exit_code) = match to {
        JobState::Held { reason } => (Some(reason.clone()), None),
        JobState::Completed { exit_code } => (None, Some(*exit_code)),
        _ => (None, None),
    };
    let starting = to.kind() == JobStateKind::Running && event == JobEventKind::Started;
    // A CronTab job back in the queue (requeued after a run, evicted,
    // released) waits for its schedule's next time (HTCondor computes
    // a new DeferralTime then).
    if to.kind() == JobStateKind::Idle
        && let Ok(d) = serde_json::from_str::<gleaner_proto::job::JobDescription>(&description)
        && let Some(next) = crate::schedule::next_cron_start(&d, at)
    {
        tx.prepare_cached(
            "UPDATE jobs SET not_before = ?3, match_from = ?4 WHERE cluster = ?1 AND proc = ?2",
        )?
        .execute(params![
            cluster,
            id.proc,
            time_sql(next.at)?,
            time_sql(next.match_from)?
        ])?;
    }
    tx.prepare_cached(
        "UPDATE jobs SET state = ?3, hold_reason = ?4, exit_code = ?5, updated_at = ?6, \
           started_at = CASE WHEN ?7 THEN ?6 ELSE started_at END, \
           run_count = run_count + CASE WHEN ?7 THEN 1 ELSE 0 END, \
           finished_at = CASE WHEN ?8 THEN ?6 ELSE finished_at END, \
           publishing = COALESCE(?9, publishing), \
           hold_code = NULL, hold_subcode = NULL, \
           start_failures = CASE WHEN ?10 THEN 0 ELSE start_failures END, \
           completions = completions + CASE WHEN ?11 THEN 1 ELSE 0 END \
         WHERE cluster = ?1 AND proc = ?2",
    )?
    .execute(params![
        cluster,
        id.proc,
        to.code(),
        hold_reason,
        exit_code,
        now,
        starting,
        to.is_terminal(),
        publishing,
        // A release starts a new series of starts.
        event == JobEventKind::Released,
        exited
    ])?;
    tx.prepare_cached(
        "INSERT INTO events (cluster, proc, at, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![cluster, id.proc, now, event.name(), detail])?;
    Ok(from)
}
