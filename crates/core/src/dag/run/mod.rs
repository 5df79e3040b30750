//! A DAG's run as a pure state machine: DAGMan's node lifecycle (PRE →
//! jobs → POST, retries, `PRE_SKIP`, `ABORT-DAG-ON`, the FINAL,
//! SERVICE and PROVISIONER nodes, `DAG_STATUS`) and its throttles
//! (`maxjobs`, `maxidle`, `maxpre`, `maxpost`, categories).
//!
//! The caller feeds [`Event`]s (a script exited, a node's jobs were
//! submitted, a job started, was held, ended …) and calls [`Run::step`]
//! with the time; the run answers with [`Action`]s as data (run a script,
//! submit a node, remove jobs, write the rescue DAG, finish). Both the
//! station's DAG manager and the tests drive this same code; nothing here
//! reads a clock or a file. What the run decides follows HTCondor 25's
//! `dag.cpp` and `dagman_main.cpp` (the event timer, `main_shutdown_rescue`),
//! cited per method.
//!
//! Its state ([`RunState`]) is plain data the caller stores; [`Run::restore`]
//! rebuilds a run from it after a crash, re-running scripts that were
//! running (as DAGMan does) and asking again for submissions that were
//! asked for but not recorded.

mod lifecycle;
pub mod node;
mod ready;

pub use node::{Exit, NodeRun, Proc, Status};

use super::command::{NodeKind, ScriptKind};
use super::config::DagConfig;
use super::macros;
use super::spec::DagSpec;
use crate::time::Time;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// `DAG_Status`: why a DAG stopped (the numbers are HTCondor's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DagStatus {
    #[default]
    Ok,
    Error,
    NodeFailed,
    Abort,
    Rm,
    Cycle,
    Halted,
}

impl DagStatus {
    pub fn code(self) -> i32 {
        match self {
            DagStatus::Ok => 0,
            DagStatus::Error => 1,
            DagStatus::NodeFailed => 2,
            DagStatus::Abort => 3,
            DagStatus::Rm => 4,
            DagStatus::Cycle => 5,
            DagStatus::Halted => 6,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DagStatus::Ok => "DAG_STATUS_OK",
            DagStatus::Error => "DAG_STATUS_ERROR",
            DagStatus::NodeFailed => "DAG_STATUS_NODE_FAILED",
            DagStatus::Abort => "DAG_STATUS_ABORT",
            DagStatus::Rm => "DAG_STATUS_RM",
            DagStatus::Cycle => "DAG_STATUS_CYCLE",
            DagStatus::Halted => "DAG_STATUS_HALTED",
        }
    }
}

/// condor_dagman's exit codes.
pub const EXIT_OKAY: i32 = 0;
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_ABORT: i32 = 2;

/// What happened to one of a node's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobChange {
    /// It began executing.
    Started,
    /// It went back to idle (evicted, vacated).
    Evicted,
    Held,
    Released,
    /// It left the queue having exited.
    Ended(Exit),
    /// It was removed from the queue.
    Aborted,
}

/// `MM/DD/YY HH:MM:SS` (UTC), as DAGMan prints an event's time.
pub fn stamp(t: Time) -> String {
    let (y, mo, d, h, mi, s) = super::rescue::utc(t.as_micros() / 1_000_000);
    format!(
        "{mo:02}/{d:02}/{:02} {h:02}:{mi:02}:{s:02}",
        y.rem_euclid(100)
    )
}

/// An input to the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// A PRE, POST or HOLD script of `node` exited.
    ScriptExited {
        node: usize,
        kind: ScriptKind,
        exit: Exit,
    },
    /// The node's jobs were queued as `cluster` (procs 0..procs).
    Submitted {
        node: usize,
        cluster: u64,
        procs: u32,
    },
    /// The node's jobs could not be queued.
    SubmitFailed { node: usize, error: String },
    /// A job of the node changed.
    Job {
        node: usize,
        proc: u32,
        change: JobChange,
    },
    /// The PROVISIONER node's job says it has provisioned
    /// (`ProvisionerState == 2`).
    ProvisionerReady,
    /// The DAG was removed by its user (condor_rm of the DAGMan job).
    Remove,
    /// `htcondor dag halt`: no new PRE scripts or submissions.
    Halt,
    /// `htcondor dag resume`.
    Resume,
}

/// Something the caller must do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run a script of `node` with `argv` (macros expanded) in the node's
    /// directory; report its exit as [`Event::ScriptExited`].
    RunScript {
        node: usize,
        kind: ScriptKind,
        argv: Vec<String>,
    },
    /// Stop a running script (the DAG is shutting down).
    KillScript { node: usize, kind: ScriptKind },
    /// Queue the node's jobs ([`Run::submit_vars`] gives its macros);
    /// report [`Event::Submitted`] or [`Event::SubmitFailed`].
    Submit { node: usize },
    /// Remove the node's jobs still in the queue.
    RemoveJobs {
        node: usize,
        cluster: u64,
        reason: String,
    },
    /// Write the node's save point file ([`super::rescue::save_point_text`]).
    SavePoint { node: usize },
    /// Write the rescue DAG ([`super::rescue::rescue_text`]).
    WriteRescue,
    /// The DAG is over: condor_dagman's exit code and the DAG's status.
    Finished { exit_code: i32, status: DagStatus },
}

/// An event for the jobstate log (`JOBSTATE_LOG`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobstateEvent {
    pub at: Time,
    pub node: usize,
    /// `SUBMIT`, `EXECUTE`, `JOB_TERMINATED`, `PRE_SCRIPT_STARTED` …
    pub event: &'static str,
    /// `cluster.proc`, a return value, or `-`.
    pub condor_id: String,
    pub seq: u32,
}

/// What node submissions get from the DAG's own submission
/// (condor_submit_dag's options, the DAGMan job's attributes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SubmitExtras {
    pub batch_name: Option<String>,
    pub accounting_group: Option<String>,
    pub accounting_group_user: Option<String>,
    pub suppress_notification: bool,
    /// `DAGMAN_INHERIT_ATTRS`: (attribute, value) from the DAG's job.
    pub inherited: Vec<(String, String)>,
}

/// A run's stored state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunState {
    pub nodes: Vec<NodeRun>,
    pub status: DagStatus,
    /// An `ABORT-DAG-ON` fired.
    pub aborted: bool,
    /// Removed by its user.
    pub removed: bool,
    pub halted: bool,
    /// Shutting down with this exit code (waiting for the FINAL node).
    pub shutdown_exit: Option<i32>,
    pub final_started: bool,
    pub provisioner_ready: bool,
    /// Over: condor_dagman's exit code.
    pub finished: Option<i32>,
    /// Order counter of the ready queue.
    pub generation: i64,
    pub next_seq: u32,
    /// The DAG's `DAGManJobId`.
    pub dagman_id: u64,
    pub started_at: Time,
    pub jobs_submitted: u64,
    pub jobs_succeeded: u64,
    pub jobs_failed: u64,
    /// Nodes whose attempt ran (for the metrics' `total_nodes_run`).
    pub nodes_run: u64,
}

/// Counts kept as the run changes (rebuilt by [`Run::restore`]).
#[derive(Clone, Debug, Default)]
struct Counts {
    done: usize,
    failed: usize,
    futile: usize,
    submitted: usize,
    pre: usize,
    post: usize,
    idle_procs: usize,
    held_procs: usize,
    pre_running: usize,
    post_running: usize,
    hold_running: usize,
    category: BTreeMap<String, u32>,
}

/// One DAG's run.
pub struct Run {
    spec: DagSpec,
    cfg: DagConfig,
    st: RunState,
    c: Counts,
    /// (-priority, -order, node): the ready queue, first out first.
    ready: BTreeSet<(i64, i64, usize)>,
    pre_queue: VecDeque<usize>,
    post_queue: VecDeque<usize>,
    hold_queue: VecDeque<usize>,
    out: Vec<Action>,
    log: Vec<String>,
    jobstate: Vec<JobstateEvent>,
    dirty: BTreeSet<usize>,
    now: Time,
    final_node: Option<usize>,
    provisioner: Option<usize>,
}

impl Run {
    /// A new run of `spec` (nodes declared DONE already done), started at
    /// `now`; `dagman_id` is the DAG's `DAGManJobId`. [`Run::step`] starts
    /// it.
    pub fn new(spec: DagSpec, cfg: DagConfig, dagman_id: u64, now: Time) -> Run {
        let n = spec.nodes.len();
        let st = RunState {
            nodes: vec![NodeRun::default(); n],
            dagman_id,
            started_at: now,
            next_seq: 1,
            ..Default::default()
        };
        let mut run = Run::bare(spec, cfg, st, now);
        run.bootstrap();
        run
    }

    fn bare(spec: DagSpec, cfg: DagConfig, st: RunState, now: Time) -> Run {
        let final_node = spec.nodes.iter().position(|n| n.kind == NodeKind::Final);
        let provisioner = spec
            .nodes
            .iter()
            .position(|n| n.kind == NodeKind::Provisioner);
        Run {
            spec,
            cfg,
            st,
            c: Counts::default(),
            ready: BTreeSet::new(),
            pre_queue: VecDeque::new(),
            post_queue: VecDeque::new(),
            hold_queue: VecDeque::new(),
            out: Vec::new(),
            log: Vec::new(),
            jobstate: Vec::new(),
            dirty: BTreeSet::new(),
            now,
            final_node,
            provisioner,
        }
    }

    /// Rebuilds a run from its stored state after a restart: scripts that
    /// were running run again, submissions asked for but never recorded
    /// are asked for again.
    pub fn restore(
        spec: DagSpec,
        cfg: DagConfig,
        mut st: RunState,
        now: Time,
    ) -> Result<Run, String> {
        if st.nodes.len() != spec.nodes.len() {
            return Err(format!(
                "stored run has {} nodes, the DAG {}",
                st.nodes.len(),
                spec.nodes.len()
            ));
        }
        for n in st.nodes.iter_mut() {
            if n.status == Status::Submitted && n.cluster.is_none() {
                // Asked for but never recorded: nothing was queued.
                n.status = Status::Ready;
                n.submitting = false;
                n.queued = None;
            }
            if n.script_running {
                n.script_running = false;
                n.script_waiting = true;
            }
            n.hold_script_running = false;
        }
        let mut run = Run::bare(spec, cfg, st, now);
        run.recount();
        for i in 0..run.st.nodes.len() {
            let node = &run.st.nodes[i];
            if node.status == Status::Ready && node.queued.is_none() && !run.provisioner_gate(i) {
                run.enqueue_ready(i, true);
            }
        }
        run.log(format!(
            "Running in recovery mode: {} node(s) done, {} running scripts to run again",
            run.c.done,
            run.pre_queue.len() + run.post_queue.len()
        ));
        Ok(run)
    }

    fn recount(&mut self) {
        self.c = Counts::default();
        self.ready.clear();
        self.pre_queue.clear();
        self.post_queue.clear();
        self.hold_queue.clear();
        for i in 0..self.st.nodes.len() {
            let service = self.is_service(i);
            let n = &self.st.nodes[i];
            match n.status {
                Status::Done if !service => self.c.done += 1,
                Status::Error if !service => self.c.failed += 1,
                Status::Futile => self.c.futile += 1,
                Status::Submitted if !service => {
                    self.c.submitted += 1;
                    if let Some(cat) = &self.spec.nodes[i].category {
                        *self.c.category.entry(cat.clone()).or_default() += 1;
                    }
                }
                Status::PreRun => self.c.pre += 1,
                Status::PostRun => self.c.post += 1,
                _ => {}
            }
            for p in &n.procs {
                if p.is_idle() {
                    self.c.idle_procs += 1;
                }
                if *p == Proc::Held {
                    self.c.held_procs += 1;
                }
            }
            if let Some(q) = n.queued {
                self.ready.insert((q.0, q.1, i));
            }
            if n.script_waiting {
                match n.status {
                    Status::PreRun => self.pre_queue.push_back(i),
                    Status::PostRun => self.post_queue.push_back(i),
                    _ => {}
                }
            }
            if n.script_running {
                match n.status {
                    Status::PreRun => self.c.pre_running += 1,
                    Status::PostRun => self.c.post_running += 1,
                    _ => {}
                }
            }
            for _ in 0..n.hold_scripts_waiting {
                self.hold_queue.push_back(i);
            }
        }
    }

    // ----- accessors -------------------------------------------------

    pub fn spec(&self) -> &DagSpec {
        &self.spec
    }

    pub fn config(&self) -> &DagConfig {
        &self.cfg
    }

    pub fn state(&self) -> &RunState {
        &self.st
    }

    pub fn node(&self, i: usize) -> Option<&NodeRun> {
        self.st.nodes.get(i)
    }

    pub fn status(&self) -> DagStatus {
        self.st.status
    }

    /// condor_dagman's exit code once the run is over.
    pub fn finished(&self) -> Option<i32> {
        self.st.finished
    }

    /// Nodes changed since the last call (for storing them).
    pub fn take_dirty(&mut self) -> BTreeSet<usize> {
        std::mem::take(&mut self.dirty)
    }

    /// `dagman.out` lines since the last call.
    pub fn take_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// Jobstate log events since the last call.
    pub fn take_jobstate(&mut self) -> Vec<JobstateEvent> {
        std::mem::take(&mut self.jobstate)
    }

    /// `$NODE_COUNT`: nodes, the FINAL one included, SERVICE ones not.
    pub fn node_count(&self) -> usize {
        self.st.nodes.len() - self.service_count()
    }

    fn service_count(&self) -> usize {
        self.spec
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Service)
            .count()
    }

    /// `$DONE_COUNT`.
    pub fn done_count(&self) -> usize {
        self.c.done
    }

    /// `$FAILED_COUNT`.
    pub fn failed_count(&self) -> usize {
        self.c.failed
    }

    /// `$FUTILE_COUNT`.
    pub fn futile_count(&self) -> usize {
        self.c.futile
    }

    /// `$QUEUED_COUNT`: nodes with jobs in the queue.
    pub fn queued_count(&self) -> usize {
        self.c.submitted
    }

    pub fn pre_count(&self) -> usize {
        self.c.pre
    }

    pub fn post_count(&self) -> usize {
        self.c.post
    }

    /// Nodes ready to submit.
    pub fn ready_count(&self) -> usize {
        self.ready.len()
    }

    /// Node jobs idle (held included) and held.
    pub fn idle_procs(&self) -> usize {
        self.c.idle_procs
    }

    pub fn held_procs(&self) -> usize {
        self.c.held_procs
    }

    /// Nodes not ready because of their parents (FINAL included).
    pub fn unready_count(&self) -> usize {
        self.st
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| n.status == Status::NotReady && !self.is_service(*i))
            .count()
    }

    fn is_service(&self, i: usize) -> bool {
        self.spec.nodes[i].kind == NodeKind::Service
    }

    /// Adds a `dagman.out` line (the caller's own messages among the run's).
    pub fn log(&mut self, line: String) {
        self.log.push(line);
    }

    /// A `dagman.out` line for what the caller did while carrying out the
    /// run's last actions (writing the rescue DAG): before the run's
    /// closing `EXITING WITH STATUS` line if that is still pending, as
    /// DAGMan orders them.
    pub fn log_before_exit(&mut self, line: String) {
        match self
            .log
            .iter()
            .rposition(|l| l.contains("EXITING WITH STATUS"))
        {
            Some(at) => self.log.insert(at, line),
            None => self.log.push(line),
        }
    }

    fn touch(&mut self, i: usize) {
        self.st.nodes[i].changed_at = self.now;
        self.dirty.insert(i);
    }

    fn act(&mut self, a: Action) {
        self.out.push(a);
    }

    /// The DAG has stopped on an `ABORT-DAG-ON`.
    pub fn is_aborted(&self) -> bool {
        self.st.aborted
    }

    /// The DAG's user removed it.
    pub fn is_removed(&self) -> bool {
        self.st.removed
    }

    /// The macros node `i`'s submit description sees now.
    pub fn submit_vars(&self, i: usize, extra: &SubmitExtras) -> Vec<macros::SubmitVar> {
        let spec = &self.spec.nodes[i];
        let n = &self.st.nodes[i];
        let parents: Vec<String> = spec
            .parents
            .iter()
            .map(|p| self.spec.nodes[p.node as usize].name.clone())
            .collect();
        let record_retry = self
            .cfg
            .node_record_info
            .split([',', ' '])
            .any(|w| w.eq_ignore_ascii_case("retry"));
        macros::submit_vars(&macros::SubmitContext {
            node: spec.name.clone(),
            retry: n.retries,
            dag_status: self.st.status.code(),
            failed_count: self.c.failed,
            parents,
            dagman_id: self.st.dagman_id,
            batch_name: extra.batch_name.clone(),
            priority: spec.priority.saturating_add(self.cfg.default_priority),
            hold: n.hold_on_submit,
            record_retry,
            suppress_notification: self.cfg.suppress_notification || extra.suppress_notification,
            suppress_job_logs: self.cfg.suppress_job_logs,
            service: spec.kind == NodeKind::Service,
            accounting_group: extra.accounting_group.clone(),
            accounting_group_user: extra.accounting_group_user.clone(),
            inherited: extra.inherited.clone(),
            vars: &spec.vars,
        })
    }

    // ----- the two entry points -------------------------------------

    /// Feeds one event at `now`; returns what to do.
    pub fn apply(&mut self, event: Event, now: Time) -> Vec<Action> {
        self.now = now;
        if self.st.finished.is_none() {
            self.handle(event);
        }
        std::mem::take(&mut self.out)
    }

    /// Runs what may run at `now`: waiting scripts within their limits,
    /// ready nodes within the throttles, and the DAG's end when nothing is
    /// left (DAGMan's event timer).
    pub fn step(&mut self, now: Time) -> Vec<Action> {
        self.now = now;
        if self.st.finished.is_none()
            && let Some(at) = self.spec.reject.clone()
        {
            // DAGMan reads REJECT and exits at once, writing nothing else.
            self.log(format!(
                "ERROR: DAG marked as rejected ({at}): nothing runs"
            ));
            self.log("Exiting because of REJECT specification".into());
            self.finish_rejected();
        }
        if self.st.finished.is_none() {
            self.run_scripts();
            self.submit_ready();
            self.check_end();
            // The end may start the FINAL node: give it its turn now.
            self.run_scripts();
            self.submit_ready();
        }
        std::mem::take(&mut self.out)
    }
}
