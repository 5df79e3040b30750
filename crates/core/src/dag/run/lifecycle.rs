//! What each event does to a node, and how a DAG ends: DAGMan's script
//! reapers (`PreScriptReaper`, `ProcessPostTermEvent`), job events
//! (`ProcessTerminatedEvent`, `ProcessAbortEvent`, `ProcessHeldEvent`),
//! `ProcessJobProcEnd`, `RestartNode`, `CheckForDagAbort`,
//! `main_shutdown_rescue` and the end of `condor_event_timer`.

use super::node::{
    Exit, Proc, RETURN_JOB_ABORTED, RETURN_JOB_SKIPPED, RETURN_SUBMIT_FAILED, Status,
};
use super::{Action, DagStatus, EXIT_ABORT, EXIT_ERROR, EXIT_OKAY, Event, JobChange, Run};
use crate::dag::command::{ScriptKind, ToleranceMode};

impl Run {
    pub(super) fn handle(&mut self, event: Event) {
        match event {
            Event::ScriptExited { node, kind, exit } => {
                if node < self.st.nodes.len() {
                    self.script_exited(node, kind, exit);
                }
            }
            Event::Submitted {
                node,
                cluster,
                procs,
            } => {
                if node < self.st.nodes.len() {
                    self.submitted(node, cluster, procs);
                }
            }
            Event::SubmitFailed { node, error } => {
                if node < self.st.nodes.len() {
                    self.submit_failed(node, &error);
                }
            }
            Event::Job { node, proc, change } => {
                if node < self.st.nodes.len() {
                    self.job(node, proc as usize, change);
                }
            }
            Event::ProvisionerReady => {
                if !self.st.provisioner_ready {
                    self.st.provisioner_ready = true;
                    self.log(
                        "Provisioner node reports it is ready; starting the other nodes".into(),
                    );
                    for i in 0..self.st.nodes.len() {
                        let n = &self.st.nodes[i];
                        if n.status == Status::Ready && n.queued.is_none() && !n.started {
                            self.start_node(i, false);
                        }
                    }
                }
            }
            Event::Remove => {
                self.log("Received a removal of the DAG".into());
                self.st.removed = true;
                self.shutdown(EXIT_ABORT, DagStatus::Rm);
            }
            Event::Halt => {
                self.st.halted = true;
                self.log("DAG halted: no new PRE scripts or submissions".into());
            }
            Event::Resume => {
                self.st.halted = false;
                self.log("DAG resumed".into());
            }
        }
    }

    fn shutting_down(&self) -> bool {
        self.st.shutdown_exit.is_some()
    }

    fn name(&self, i: usize) -> String {
        self.spec.nodes[i].name.clone()
    }

    fn script_exited(&mut self, i: usize, kind: ScriptKind, exit: Exit) {
        if kind == ScriptKind::Hold {
            if self.st.nodes[i].hold_script_running {
                self.st.nodes[i].hold_script_running = false;
                self.c.hold_running = self.c.hold_running.saturating_sub(1);
                self.touch(i);
            }
            return;
        }
        let want = if kind == ScriptKind::Pre {
            Status::PreRun
        } else {
            Status::PostRun
        };
        let n = &self.st.nodes[i];
        if n.status != want || !n.script_running {
            // A script of an earlier attempt, or killed at shutdown.
            return;
        }
        self.st.nodes[i].script_running = false;
        if kind == ScriptKind::Pre {
            self.c.pre_running = self.c.pre_running.saturating_sub(1);
        } else {
            self.c.post_running = self.c.post_running.saturating_sub(1);
        }
        self.touch(i);
        if let Some((status, secs)) = self.spec.nodes[i].script(kind).and_then(|s| s.defer)
            && exit == Exit::Code(status)
        {
            let name = self.name(i);
            self.log(format!(
                "Deferring {} script of node {name} for {secs} seconds (exit value {status})",
                kind.name()
            ));
            self.st.nodes[i].defer_until = Some(self.now + crate::time::Dur::from_secs(secs));
            self.queue_script(i, kind);
            return;
        }
        if kind == ScriptKind::Pre {
            self.pre_exited(i, exit);
        } else {
            self.post_exited(i, exit);
        }
    }

    fn pre_exited(&mut self, i: usize, exit: Exit) {
        let v = exit.value();
        let name = self.name(i);
        {
            let n = &mut self.st.nodes[i];
            n.pre_return = Some(v);
            n.retval = v;
        }
        self.jobstate(
            i,
            if exit.ok() {
                "PRE_SCRIPT_SUCCESS"
            } else {
                "PRE_SCRIPT_FAILURE"
            },
            "-".into(),
        );
        if !exit.ok() {
            let msg = match exit {
                Exit::Code(c) => format!("PRE Script failed with status {c}"),
                Exit::Signal(s) => format!("PRE Script died on signal {s}"),
            };
            self.log(match exit {
                Exit::Code(c) => format!("PRE Script of Node {name} failed with status {c}"),
                Exit::Signal(s) => format!("PRE Script of node {name} died on signal {s}"),
            });
            self.st.nodes[i].error = msg;
            let has_post = self.spec.nodes[i].script(ScriptKind::Post).is_some();
            if matches!(exit, Exit::Code(_)) && self.spec.nodes[i].pre_skip == Some(v) {
                self.log(format!(
                    "PRE_SKIP return value {v} indicates we are done (successfully) with node {name}"
                ));
                let n = &mut self.st.nodes[i];
                n.pre_done = true;
                n.retval = 0;
                n.error.clear();
                self.terminate_success(i);
            } else if self.cfg.always_run_post && has_post {
                let n = &mut self.st.nodes[i];
                n.job_return = RETURN_JOB_SKIPPED;
                n.failed = true;
                self.run_post(i);
            } else if self.do_retry(i) {
                self.restart(i);
            } else {
                self.node_failed(i);
            }
        } else {
            self.log(format!("PRE Script of node {name} completed successfully."));
            let n = &mut self.st.nodes[i];
            n.pre_done = true;
            n.retval = 0;
            self.set_status(i, Status::Ready);
            self.enqueue_ready(i, self.cfg.submit_depth_first);
        }
        self.check_abort(i, "PRE script");
    }

    fn post_exited(&mut self, i: usize, exit: Exit) {
        let name = self.name(i);
        let id = self.condor_id(i);
        let ulog_id = match self.st.nodes[i].cluster {
            Some(c) => format!("{c}.0.0"),
            None => "-1.-1.-1".into(),
        };
        self.event_log(i, "ULOG_POST_SCRIPT_TERMINATED", &ulog_id);
        self.jobstate(i, "POST_SCRIPT_TERMINATED", id.clone());
        if exit.ok() {
            self.log(format!(
                "POST Script of node {name} completed successfully."
            ));
            self.st.nodes[i].retval = 0;
            self.jobstate(i, "POST_SCRIPT_SUCCESS", id);
            self.terminate_success(i);
        } else {
            let msg = match exit {
                Exit::Code(c) => format!("failed with status {c}"),
                Exit::Signal(s) => format!("died on signal {s}"),
            };
            self.log(format!("POST Script of node {name} {msg}"));
            let n = &mut self.st.nodes[i];
            n.retval = exit.value();
            n.error = format!("POST Script {msg}");
            self.jobstate(i, "POST_SCRIPT_FAILURE", id);
            if self.do_retry(i) {
                self.restart(i);
            } else {
                self.node_failed(i);
            }
        }
        self.check_abort(i, "POST script");
    }

    fn submitted(&mut self, i: usize, cluster: u64, procs: u32) {
        let n = &self.st.nodes[i];
        if n.status != Status::Submitted || !n.submitting {
            return;
        }
        if procs == 0 {
            self.submit_failed(i, "the submit description queued no jobs");
            return;
        }
        let name = self.name(i);
        let n = &mut self.st.nodes[i];
        n.submitting = false;
        n.cluster = Some(cluster);
        if n.clusters.last() != Some(&cluster) {
            n.clusters.push(cluster);
        }
        n.procs = vec![Proc::Idle; procs as usize];
        n.submit_attempts = 0;
        n.next_submit = None;
        self.c.idle_procs += procs as usize;
        self.st.jobs_submitted += u64::from(procs);
        self.touch(i);
        self.log(format!(
            "Node {name}: assigned HTCondor ID ({cluster}.0.0), {procs} job(s)"
        ));
        for p in 0..procs {
            self.event_log(i, "ULOG_SUBMIT", &format!("{cluster}.{p}.0"));
            self.jobstate(i, "SUBMIT", format!("{cluster}.{p}"));
        }
    }

    /// DAGMan's line for an event it read from the node's log.
    fn event_log(&mut self, i: usize, ulog: &str, id: &str) {
        let name = self.name(i);
        let at = super::stamp(self.now());
        self.log(format!(
            "Event: {ulog} for HTCondor Node {name} ({id}) {{{at}}}"
        ));
    }

    fn submit_failed(&mut self, i: usize, error: &str) {
        let n = &self.st.nodes[i];
        if n.status != Status::Submitted || !n.submitting {
            return;
        }
        let name = self.name(i);
        self.st.nodes[i].submitting = false;
        self.st.nodes[i].submit_attempts += 1;
        let attempts = self.st.nodes[i].submit_attempts;
        self.jobstate(i, "SUBMIT_FAILURE", "-".into());
        self.log(format!(
            "Event: ULOG_SUBMIT_FAILURE for HTCondor Node {name} (-1.-1.-1) {}",
            error.replace('\n', " ")
        ));
        let mut max = self.cfg.max_submit_attempts.max(1);
        if self.st.status == DagStatus::Rm && self.final_node != Some(i) {
            max = max.min(2);
        }
        if attempts >= max {
            self.log(format!(
                "Node submit failed after {attempts} {}.",
                if attempts == 1 { "try" } else { "tries" }
            ));
            self.log(format!(
                "Shortcutting node {name} retries because of submit failure(s)"
            ));
            let n = &mut self.st.nodes[i];
            n.error = format!("Job submit failed: {error}");
            n.retval = RETURN_SUBMIT_FAILED;
            n.job_return = RETURN_SUBMIT_FAILED;
            n.failed = true;
            // A submission that keeps failing uses up the retries.
            n.retries = n.max_retries;
            self.set_status(i, Status::Ready);
            if self.spec.nodes[i].script(ScriptKind::Post).is_some() && !self.shutting_down() {
                self.run_post(i);
            } else {
                self.node_failed(i);
            }
        } else {
            let delay = Run::submit_delay(attempts);
            self.log(format!(
                "Job submit try {attempts}/{max} failed, will try again in >= {} second(s).",
                delay.as_micros() / 1_000_000
            ));
            self.st.nodes[i].next_submit = Some(self.now() + delay);
            self.set_status(i, Status::Ready);
            self.enqueue_ready(i, true);
        }
    }

    fn job(&mut self, i: usize, p: usize, change: JobChange) {
        let n = &self.st.nodes[i];
        if n.status != Status::Submitted || n.cluster.is_none() {
            return;
        }
        let Some(&old) = n.procs.get(p) else {
            return;
        };
        if old.is_done() {
            return;
        }
        let cluster = n.cluster.unwrap_or(0);
        let id = format!("{cluster}.{p}");
        let ulog = match change {
            JobChange::Started => "ULOG_EXECUTE",
            JobChange::Evicted => "ULOG_JOB_EVICTED",
            JobChange::Held => "ULOG_JOB_HELD",
            JobChange::Released => "ULOG_JOB_RELEASED",
            JobChange::Ended(_) => "ULOG_JOB_TERMINATED",
            JobChange::Aborted => "ULOG_JOB_ABORTED",
        };
        self.event_log(i, ulog, &format!("{cluster}.{p}.0"));
        match change {
            JobChange::Started => {
                if old != Proc::Running {
                    self.set_proc(i, p, Proc::Running);
                    self.jobstate(i, "EXECUTE", id);
                }
                self.release_priority_children(i);
            }
            JobChange::Evicted => {
                if old == Proc::Running {
                    self.set_proc(i, p, Proc::Idle);
                    self.jobstate(i, "JOB_EVICTED", id);
                }
            }
            JobChange::Held => {
                if old == Proc::Held {
                    return;
                }
                self.set_proc(i, p, Proc::Held);
                self.jobstate(i, "JOB_HELD", id);
                self.st.nodes[i].holds += 1;
                let holds = self.st.nodes[i].holds;
                let max = self.cfg.max_job_holds;
                if max > 0 && holds >= max {
                    let name = self.name(i);
                    self.log(format!(
                        "Total hold count for job {cluster} (node {name}) has reached DAGMAN_MAX_JOB_HOLDS ({max}); all job proc(s) for this node will now be removed"
                    ));
                    self.act(Action::RemoveJobs {
                        node: i,
                        cluster,
                        reason: "DAG Limit: Max number of held jobs was reached.".into(),
                    });
                }
                if self.spec.nodes[i].script(ScriptKind::Hold).is_some() {
                    self.queue_script(i, ScriptKind::Hold);
                }
            }
            JobChange::Released => {
                if old == Proc::Held {
                    self.set_proc(i, p, Proc::Idle);
                    self.jobstate(i, "JOB_RELEASED", id);
                }
            }
            JobChange::Ended(exit) => {
                self.set_proc(i, p, Proc::Exited(exit.value()));
                self.jobstate(i, "JOB_TERMINATED", id);
                let name = self.name(i);
                if exit.ok() {
                    self.st.jobs_succeeded += 1;
                    self.log(format!(
                        "Node {name} job proc ({cluster}.{p}.0) completed successfully."
                    ));
                    let n = &mut self.st.nodes[i];
                    if !n.failed && n.failed_jobs == 0 {
                        n.retval = 0;
                        n.job_return = 0;
                    }
                } else {
                    self.st.jobs_failed += 1;
                    let msg = match exit {
                        Exit::Code(c) => format!("failed with status {c}"),
                        Exit::Signal(s) => format!("failed with signal {s}"),
                    };
                    self.log(format!("Node {name} job proc ({cluster}.{p}.0) {msg}."));
                    self.job_failure(
                        i,
                        p,
                        exit.value(),
                        format!("Job proc ({cluster}.{p}.0) {msg}"),
                    );
                }
                self.after_job_end(i);
            }
            JobChange::Aborted => {
                self.set_proc(i, p, Proc::Aborted);
                self.jobstate(i, "JOB_ABORTED", id);
                self.st.jobs_failed += 1;
                self.job_failure(
                    i,
                    p,
                    RETURN_JOB_ABORTED,
                    format!(
                        "HTCondor reported ULOG_JOB_ABORTED event for job proc ({cluster}.{p}.0)"
                    ),
                );
                self.after_job_end(i);
            }
        }
    }

    /// One job failed: the node's first failure sets its return value; the
    /// job list fails past its tolerance, and its other jobs are removed.
    fn job_failure(&mut self, i: usize, _p: usize, value: i32, msg: String) {
        let n = &mut self.st.nodes[i];
        n.failed_jobs += 1;
        if n.failed_jobs == 1 {
            n.retval = value;
            n.job_return = value;
            n.error = msg;
        }
        let total = n.procs.len() as u64;
        let (tolerance, mode) = match self.spec.nodes[i].tolerance {
            Some(t) if t.percent => (u64::from(t.value) * total / 100, t.mode),
            Some(t) => (u64::from(t.value), t.mode),
            None => (u64::from(self.cfg.node_job_failure_tolerance), None),
        };
        let n = &mut self.st.nodes[i];
        if !n.failed && u64::from(n.failed_jobs) > tolerance {
            n.failed = true;
            let remove = match mode {
                Some(ToleranceMode::FailFast) => true,
                Some(ToleranceMode::Wait) => false,
                None => self.cfg.remove_job_list_on_failure,
            };
            if remove && n.queued_procs() > 0 {
                let cluster = n.cluster.unwrap_or(0);
                let name = self.name(i);
                let failed = self.st.nodes[i].failed_jobs;
                self.act(Action::RemoveJobs {
                    node: i,
                    cluster,
                    reason: format!(
                        "Node Error: DAG node {name} reached failure tolerance after {failed} failures."
                    ),
                });
            }
        }
        self.touch(i);
    }

    fn after_job_end(&mut self, i: usize) {
        if self.st.nodes[i].queued_procs() == 0 {
            self.jobs_finished(i);
        }
        if self.spec.nodes[i].script(ScriptKind::Post).is_none() {
            self.check_abort(i, "job");
        }
    }

    /// Every job of the node left the queue (DAGMan's `ProcessJobProcEnd`).
    pub(super) fn jobs_finished(&mut self, i: usize) {
        let name = self.name(i);
        self.log(format!("Node {name} job(s) have exited the queue"));
        if Some(i) == self.provisioner && !self.st.provisioner_ready {
            self.log(format!(
                "ERROR: Provisioner node {name} job exited before giving DAGMan the go ahead!"
            ));
        }
        let retval = self.st.nodes[i].retval;
        let failed = self.st.nodes[i].failed;
        self.jobstate(
            i,
            if failed { "JOB_FAILURE" } else { "JOB_SUCCESS" },
            retval.to_string(),
        );
        if self.shutting_down() && self.final_node != Some(i) {
            // The DAG is ending: its other nodes run no more scripts.
            self.st.nodes[i].error = "Removed as the DAG shut down".into();
            self.node_failed(i);
            return;
        }
        if self.spec.nodes[i].script(ScriptKind::Post).is_some() {
            self.run_post(i);
        } else if failed {
            if self.do_retry(i) {
                self.restart(i);
            } else {
                self.node_failed(i);
            }
        } else {
            self.terminate_success(i);
        }
    }

    pub(super) fn run_post(&mut self, i: usize) {
        self.set_status(i, Status::PostRun);
        self.queue_script(i, ScriptKind::Post);
    }

    fn do_abort(&self, i: usize) -> bool {
        matches!(self.spec.nodes[i].abort_on, Some((s, _)) if self.st.nodes[i].retval == s)
    }

    fn do_retry(&self, i: usize) -> bool {
        !self.do_abort(i) && self.st.nodes[i].retries < self.st.nodes[i].max_retries
    }

    /// DAGMan's `RestartNode`: the whole node again (PRE, jobs, POST),
    /// unless the FINAL node runs or the attempt returned the node's
    /// `UNLESS-EXIT` value.
    fn restart(&mut self, i: usize) {
        let name = self.name(i);
        let retval = self.st.nodes[i].retval;
        let unless = self.spec.nodes[i].unless_exit == Some(retval);
        if self.st.final_started || unless || self.shutting_down() {
            let why = if self.st.final_started {
                "because final node is running "
            } else {
                ""
            };
            self.log(format!(
                "Aborting further retries of node {name} {why}(last attempt returned {retval})"
            ));
            self.node_failed(i);
            return;
        }
        let n = &mut self.st.nodes[i];
        n.retries += 1;
        let (r, m) = (n.retries, n.max_retries);
        n.reset_attempt();
        self.log(format!("Retrying node {name} (retry #{r} of {m})..."));
        self.set_status(i, Status::Ready);
        self.start_node(i, true);
    }

    /// The node failed for good.
    pub(super) fn node_failed(&mut self, i: usize) {
        let name = self.name(i);
        {
            let n = &mut self.st.nodes[i];
            if n.max_retries > 0 && !n.error.contains("node retries") {
                n.error = format!("{} (after {} node retries)", n.error, n.retries);
            }
        }
        self.set_status(i, Status::Error);
        let service = self.is_service(i);
        if !service && self.st.status == DagStatus::Ok {
            self.st.status = DagStatus::NodeFailed;
        }
        self.log(format!("Node {name} failed: {}", self.st.nodes[i].error));
        self.notify_children(i);
    }

    /// The node succeeded (DAGMan's `TerminateNode`).
    pub(super) fn terminate_success(&mut self, i: usize) {
        if self.st.nodes[i].status == Status::Done {
            return;
        }
        self.st.nodes[i].error.clear();
        self.set_status(i, Status::Done);
        if self.is_service(i) {
            return;
        }
        self.notify_children(i);
    }

    /// `ABORT-DAG-ON`: the node returned its abort value.
    fn check_abort(&mut self, i: usize, what: &str) {
        let Some((status, ret)) = self.spec.nodes[i].abort_on else {
            return;
        };
        if self.st.nodes[i].retval != status || self.st.aborted {
            return;
        }
        self.log(format!(
            "Aborting DAG because we got the ABORT exit value from a {what}"
        ));
        self.st.aborted = true;
        match ret {
            Some(r) => {
                let r = i32::from(r);
                self.shutdown(
                    r,
                    if r != 0 {
                        DagStatus::Abort
                    } else {
                        DagStatus::Ok
                    },
                );
            }
            None => {
                let v = self.st.nodes[i].retval;
                self.shutdown(v, DagStatus::Abort);
            }
        }
    }

    /// DAGMan's `main_shutdown_rescue`: the rescue DAG is written (for a
    /// non-zero exit), the jobs and scripts still running are removed, and
    /// the FINAL node starts if the DAG has one; else the DAG ends.
    pub(super) fn shutdown(&mut self, exit: i32, status: DagStatus) {
        if self.st.finished.is_some() {
            return;
        }
        self.log("Aborting DAG...".into());
        self.st.status = status;
        self.st.shutdown_exit = Some(exit);
        if exit != EXIT_OKAY {
            if self.cfg.max_rescue_num > 0 {
                self.act(Action::WriteRescue);
            } else {
                self.log("No rescue DAG written because DAGMAN_MAX_RESCUE_NUM is 0".into());
            }
        }
        self.log("Removing submitted jobs...".into());
        self.log("Removing any/all submitted HTCondor jobs...".into());
        if self.c.pre_running + self.c.post_running > 0 {
            self.log("Removing running scripts...".into());
        }
        let reason = if status == DagStatus::Rm {
            "DAG Removed: User removed scheduler job from queue."
        } else {
            "DAG Abort: DAG is exiting and writing rescue file."
        };
        for i in 0..self.st.nodes.len() {
            if Some(i) == self.final_node {
                continue;
            }
            let n = &self.st.nodes[i];
            match n.status {
                Status::Submitted => {
                    if let Some(cluster) = n.cluster
                        && n.queued_procs() > 0
                    {
                        self.act(Action::RemoveJobs {
                            node: i,
                            cluster,
                            reason: reason.to_string(),
                        });
                    } else if n.submitting {
                        // Its submission may still land: it is removed
                        // when it does.
                    }
                }
                Status::PreRun | Status::PostRun => {
                    let kind = if n.status == Status::PreRun {
                        ScriptKind::Pre
                    } else {
                        ScriptKind::Post
                    };
                    if n.script_running {
                        self.act(Action::KillScript { node: i, kind });
                        let c = if kind == ScriptKind::Pre {
                            &mut self.c.pre_running
                        } else {
                            &mut self.c.post_running
                        };
                        *c = c.saturating_sub(1);
                    }
                    let n = &mut self.st.nodes[i];
                    n.script_running = false;
                    n.script_waiting = false;
                    n.error = format!("Was {}", n.status.name());
                    self.pre_queue.retain(|&x| x != i);
                    self.post_queue.retain(|&x| x != i);
                    self.set_status(i, Status::Error);
                }
                _ => {}
            }
        }
        if self.start_final() {
            return;
        }
        self.finish(exit);
    }

    /// DAGMan's `StartFinalNode`: the ready queue is emptied and the FINAL
    /// node starts.
    fn start_final(&mut self) -> bool {
        let Some(f) = self.final_node else {
            return false;
        };
        if self.st.final_started || self.st.nodes[f].status != Status::NotReady {
            return false;
        }
        self.log("Starting final node...".into());
        let queued: Vec<usize> = self.ready.iter().map(|&(_, _, i)| i).collect();
        for i in queued {
            if i != f {
                if let Some(q) = self.st.nodes[i].queued.take() {
                    self.ready.remove(&(q.0, q.1, i));
                }
                self.set_status(i, Status::NotReady);
            }
        }
        self.st.final_started = true;
        self.set_status(f, Status::Ready);
        self.start_node(f, false);
        true
    }

    /// A rejected DAG's end: condor_dagman's exit code 1, nothing run.
    pub(super) fn finish_rejected(&mut self) {
        self.st.status = DagStatus::Error;
        self.finish(EXIT_ERROR);
    }

    fn finish(&mut self, exit: i32) {
        if self.st.finished.is_some() {
            return;
        }
        self.st.finished = Some(exit);
        self.log(format!(
            "**** condor_scheduniv_exec.{}.0 (condor_DAGMAN) pid 0 EXITING WITH STATUS {exit}",
            self.st.dagman_id
        ));
        self.act(Action::Finished {
            exit_code: exit,
            status: self.st.status,
        });
    }

    fn finished_running(&self, include_final: bool) -> bool {
        if include_final && self.final_node.is_some() && !self.st.final_started {
            return false;
        }
        let scripts = self.c.pre_running + self.c.post_running;
        if self.st.halted {
            return self.c.submitted == 0 && scripts == 0;
        }
        self.c.submitted == 0 && self.ready.is_empty() && self.c.pre + self.c.post == 0
    }

    fn final_done(&self) -> bool {
        self.final_node
            .is_some_and(|f| self.st.nodes[f].status == Status::Done)
    }

    fn done_success(&self, include_final: bool) -> bool {
        if !self.finished_running(include_final) {
            return false;
        }
        let mut total = self.node_count();
        let mut done = self.c.done;
        if !include_final && self.final_node.is_some() {
            total -= 1;
            if self.final_done() {
                done -= 1;
            }
        }
        done == total
            || (include_final && self.final_done())
            || (self.st.aborted && self.st.status == DagStatus::Ok)
    }

    fn done_failed(&self, include_final: bool) -> bool {
        self.finished_running(include_final)
            && !(include_final && self.final_done())
            && !(self.st.aborted && self.st.status == DagStatus::Ok)
            && (self.st.halted || self.c.failed > 0)
    }

    /// The end of DAGMan's event timer: success, failure, the FINAL node,
    /// a halted DAG, or a DAG that can go no further.
    pub(super) fn check_end(&mut self) {
        if self.st.finished.is_some() {
            return;
        }
        if self.done_success(true) {
            for i in 0..self.st.nodes.len() {
                if self.is_service(i) && self.st.nodes[i].status == Status::Submitted {
                    if let Some(cluster) = self.st.nodes[i].cluster {
                        self.act(Action::RemoveJobs {
                            node: i,
                            cluster,
                            reason: "DAG is exiting: service node removed".into(),
                        });
                    }
                    self.set_status(i, Status::Done);
                }
            }
            if self.st.removed {
                self.finish(EXIT_ABORT);
            } else {
                self.log("All jobs Completed!".into());
                self.finish(EXIT_OKAY);
            }
            return;
        }
        if self.done_failed(true) {
            self.log("ERROR: the following job(s) failed:".into());
            let failed: Vec<String> = (0..self.st.nodes.len())
                .filter(|&i| self.st.nodes[i].status == Status::Error)
                .map(|i| self.name(i))
                .collect();
            for f in failed {
                self.log(format!("  Node {f}"));
            }
            let (exit, status) = if self.st.removed {
                (EXIT_ABORT, DagStatus::Rm)
            } else {
                (EXIT_ERROR, self.st.status)
            };
            // Nothing runs and the FINAL node (if any) has run: end now,
            // as DAGMan's shutdown does (unless it already began).
            let first = self.st.shutdown_exit.is_none();
            if first {
                self.log("Aborting DAG...".into());
            }
            if self.cfg.max_rescue_num > 0 {
                self.act(Action::WriteRescue);
            }
            if first {
                self.log("Removing submitted jobs...".into());
                self.log("Removing any/all submitted HTCondor jobs...".into());
            }
            self.st.status = status;
            self.finish(exit);
            return;
        }
        if self.done_success(false) {
            self.start_final();
            return;
        }
        if self.st.halted && self.c.submitted == 0 && self.c.post == 0 && !self.st.final_started {
            self.log("Exiting because DAG is halted and no jobs or scripts are running".into());
            self.shutdown(EXIT_ERROR, DagStatus::Halted);
            return;
        }
        if self.finished_running(false) && !self.st.final_started {
            let status = if self.c.failed > 0 {
                DagStatus::NodeFailed
            } else if crate::dag::load::find_cycle(&self.spec).is_some() {
                self.log(
                    "ERROR: DAG finished but not all nodes are complete -- checking for a cycle..."
                        .into(),
                );
                self.log("... ERROR: a cycle exists in the dag, please check input".into());
                DagStatus::Cycle
            } else {
                DagStatus::Error
            };
            self.shutdown(EXIT_ERROR, status);
        }
    }
}
