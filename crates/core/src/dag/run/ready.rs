//! When nodes may start, and starting them: parents (strong, weak,
//! priority), futile descendants, the ready queue in priority order, the
//! submission throttles and the script queues (DAGMan's `StartNode`,
//! `SubmitReadyNodes`, `ScriptQ`).

use super::node::{Proc, Status};
use super::{Action, JobstateEvent, Run};
use crate::dag::command::{EdgeKind, NodeKind, ScriptKind};
use crate::dag::macros;
use crate::time::{Dur, Time};

/// What a node's parents allow.
enum Parents {
    Wait,
    Ready,
    /// A parent failed or will never run.
    Never,
}

impl Run {
    /// Sets a node's status, keeping the counts.
    pub(super) fn set_status(&mut self, i: usize, s: Status) {
        let old = self.st.nodes[i].status;
        if old == s {
            return;
        }
        let service = self.is_service(i);
        let cat = self.spec.nodes[i].category.clone();
        for (st, sign) in [(old, -1i64), (s, 1)] {
            let add = |v: &mut usize| {
                *v = if sign > 0 {
                    *v + 1
                } else {
                    v.saturating_sub(1)
                };
            };
            match st {
                Status::Done if !service => add(&mut self.c.done),
                Status::Error if !service => add(&mut self.c.failed),
                Status::Futile => add(&mut self.c.futile),
                Status::Submitted if !service => {
                    add(&mut self.c.submitted);
                    if let Some(c) = &cat {
                        let e = self.c.category.entry(c.clone()).or_default();
                        *e = if sign > 0 {
                            *e + 1
                        } else {
                            e.saturating_sub(1)
                        };
                    }
                }
                Status::PreRun => add(&mut self.c.pre),
                Status::PostRun => add(&mut self.c.post),
                _ => {}
            }
        }
        self.st.nodes[i].status = s;
        self.touch(i);
    }

    /// Sets one job's state, keeping the idle and held counts.
    pub(super) fn set_proc(&mut self, i: usize, p: usize, new: Proc) {
        let Some(&old) = self.st.nodes[i].procs.get(p) else {
            return;
        };
        if old.is_idle() {
            self.c.idle_procs = self.c.idle_procs.saturating_sub(1);
        }
        if old == Proc::Held {
            self.c.held_procs = self.c.held_procs.saturating_sub(1);
        }
        if new.is_idle() {
            self.c.idle_procs += 1;
        }
        if new == Proc::Held {
            self.c.held_procs += 1;
        }
        self.st.nodes[i].procs[p] = new;
        self.touch(i);
    }

    /// A jobstate log line for node `i` (its attempt's sequence number
    /// given on first use).
    pub(super) fn jobstate(&mut self, i: usize, event: &'static str, condor_id: String) {
        if self.spec.jobstate_log.is_none() {
            return;
        }
        let n = &mut self.st.nodes[i];
        if n.seq == 0 {
            n.seq = self.st.next_seq;
            self.st.next_seq += 1;
        }
        let seq = n.seq;
        self.jobstate.push(JobstateEvent {
            at: self.now,
            node: i,
            event,
            condor_id,
            seq,
        });
    }

    /// Starts the nodes that may start at the beginning of a run: nodes
    /// declared DONE are done, SERVICE nodes start, then every node whose
    /// parents allow it, in declaration order (DAGMan's `Bootstrap`).
    pub(super) fn bootstrap(&mut self) {
        let n = self.st.nodes.len();
        for i in 0..n {
            self.st.nodes[i].max_retries = self.spec.nodes[i].retries;
            if self.spec.nodes[i].done {
                self.st.nodes[i].started = true;
                self.set_status(i, Status::Done);
            }
        }
        for i in 0..n {
            match self.spec.nodes[i].kind {
                NodeKind::Final => {}
                NodeKind::Service => {
                    self.log(format!(
                        "Starting service node {}...",
                        self.spec.nodes[i].name
                    ));
                    self.set_status(i, Status::Ready);
                    self.start_node(i, false);
                }
                _ => self.evaluate(i),
            }
        }
    }

    fn parents(&self, c: usize) -> Parents {
        let mut ready = true;
        for p in &self.spec.nodes[c].parents {
            let pn = &self.st.nodes[p.node as usize];
            let (ok, never) = match p.kind {
                EdgeKind::Strong => (
                    pn.status == Status::Done,
                    matches!(pn.status, Status::Error | Status::Futile),
                ),
                EdgeKind::Weak => (
                    matches!(pn.status, Status::Done | Status::Error),
                    pn.status == Status::Futile,
                ),
                EdgeKind::Priority => (
                    pn.executed || matches!(pn.status, Status::Done | Status::Error),
                    pn.status == Status::Futile,
                ),
            };
            if never {
                return Parents::Never;
            }
            ready &= ok;
        }
        if ready { Parents::Ready } else { Parents::Wait }
    }

    /// Moves a waiting node on if its parents allow: starts it, or marks
    /// it (and its descendants) futile.
    pub(super) fn evaluate(&mut self, c: usize) {
        if self.st.nodes[c].status != Status::NotReady || self.spec.nodes[c].kind == NodeKind::Final
        {
            return;
        }
        match self.parents(c) {
            Parents::Wait => {}
            Parents::Ready => {
                self.set_status(c, Status::Ready);
                self.start_node(c, false);
            }
            Parents::Never => self.make_futile(c),
        }
    }

    /// Node `i`'s job began executing: its priority children may go (DMW's
    /// priority dependence: a child starts no earlier than its parent).
    pub(super) fn release_priority_children(&mut self, i: usize) {
        if self.st.nodes[i].executed {
            return;
        }
        self.st.nodes[i].executed = true;
        self.touch(i);
        let prio_children: Vec<usize> = self.spec.nodes[i]
            .children
            .iter()
            .map(|&c| c as usize)
            .filter(|&c| {
                self.spec.nodes[c]
                    .parents
                    .iter()
                    .any(|p| p.node as usize == i && p.kind == EdgeKind::Priority)
            })
            .collect();
        for c in prio_children {
            self.evaluate(c);
        }
    }

    /// Marks `c` and every waiting descendant futile.
    fn make_futile(&mut self, c: usize) {
        let mut todo = vec![c];
        while let Some(i) = todo.pop() {
            if self.st.nodes[i].status != Status::NotReady
                || self.spec.nodes[i].kind == NodeKind::Final
            {
                continue;
            }
            self.set_status(i, Status::Futile);
            self.st.nodes[i].error = "Had an ancestor node fail".into();
            for &ch in &self.spec.nodes[i].children {
                todo.push(ch as usize);
            }
        }
    }

    /// Tells node `i`'s children it moved on (finished, failed or
    /// started).
    pub(super) fn notify_children(&mut self, i: usize) {
        let children = self.spec.nodes[i].children.clone();
        for c in children {
            self.evaluate(c as usize);
        }
    }

    /// Whether node `i` waits for the PROVISIONER node.
    pub(super) fn provisioner_gate(&self, i: usize) -> bool {
        match self.provisioner {
            Some(p) => {
                p != i && !self.st.provisioner_ready && self.spec.nodes[i].kind != NodeKind::Service
            }
            None => false,
        }
    }

    /// DAGMan's `StartNode` for a node in `Ready`: its save point is
    /// written on its first start, its PRE script runs if it has one not
    /// yet run, else it joins the ready queue.
    pub(super) fn start_node(&mut self, i: usize, retry: bool) {
        if self.provisioner_gate(i) {
            return;
        }
        if !retry && self.spec.nodes[i].save_point.is_some() {
            self.act(Action::SavePoint { node: i });
        }
        if !self.st.nodes[i].started {
            self.st.nodes[i].started = true;
            self.st.nodes_run += 1;
            self.touch(i);
        }
        if self.spec.nodes[i].script(ScriptKind::Pre).is_some() && !self.st.nodes[i].pre_done {
            self.set_status(i, Status::PreRun);
            self.queue_script(i, ScriptKind::Pre);
            return;
        }
        let front = if retry {
            self.cfg.retry_node_first
        } else {
            self.cfg.submit_depth_first
        };
        self.enqueue_ready(i, front);
    }

    /// Puts a `Ready` node in the ready queue: first among its priority
    /// when `front`, else last.
    pub(super) fn enqueue_ready(&mut self, i: usize, front: bool) {
        if let Some(q) = self.st.nodes[i].queued.take() {
            self.ready.remove(&(q.0, q.1, i));
        }
        self.st.generation += 1;
        let g = self.st.generation;
        let order = if front { -g } else { g };
        let prio = -(i64::from(self.spec.nodes[i].priority) + i64::from(self.cfg.default_priority));
        self.st.nodes[i].queued = Some((prio, order));
        self.ready.insert((prio, order, i));
        self.touch(i);
    }

    /// Submits ready nodes while the throttles allow (DAGMan's
    /// `SubmitReadyNodes`): at most `DAGMAN_MAX_SUBMITS_PER_INTERVAL` per
    /// step, none while `maxjobs` nodes have jobs queued or `maxidle` jobs
    /// are idle; a node whose category is at its `MAXJOBS` waits.
    pub(super) fn submit_ready(&mut self) {
        if self.st.halted && !self.st.final_started {
            return;
        }
        let mut deferred = Vec::new();
        let mut submits = 0u32;
        while submits < self.cfg.max_submits_per_interval.max(1) {
            let Some(&first) = self.ready.first() else {
                break;
            };
            let i = first.2;
            let service = self.is_service(i);
            if !service
                && self.cfg.max_jobs_submitted > 0
                && self.c.submitted >= self.cfg.max_jobs_submitted as usize
            {
                break;
            }
            if !service
                && self.cfg.max_jobs_idle > 0
                && self.c.idle_procs >= self.cfg.max_jobs_idle as usize
            {
                break;
            }
            self.ready.remove(&first);
            self.st.nodes[i].queued = None;
            if self.st.nodes[i].next_submit.is_some_and(|t| t > self.now) {
                deferred.push(i);
                continue;
            }
            if let Some(cat) = &self.spec.nodes[i].category
                && let Some(&limit) = self.spec.maxjobs.get(cat)
                && self.c.category.get(cat).copied().unwrap_or(0) >= limit
            {
                deferred.push(i);
                continue;
            }
            submits += 1;
            if self.spec.nodes[i].noop {
                self.run_noop(i);
            } else {
                self.set_status(i, Status::Submitted);
                self.st.nodes[i].submitting = true;
                let name = self.spec.nodes[i].name.clone();
                self.log(format!("Submitting HTCondor Node {name} job(s)..."));
                self.act(Action::Submit { node: i });
            }
        }
        for d in deferred {
            self.enqueue_ready(d, true);
        }
    }

    /// A NOOP node: its "jobs" succeed at once (DAGMan writes a submit and
    /// a terminate event for them), then its POST script runs.
    fn run_noop(&mut self, i: usize) {
        self.set_status(i, Status::Submitted);
        let n = &mut self.st.nodes[i];
        n.procs = vec![Proc::Exited(0)];
        n.cluster = None;
        n.job_return = 0;
        if !n.failed {
            n.retval = 0;
        }
        self.touch(i);
        self.jobs_finished(i);
    }

    /// Puts a script in its queue (HOLD scripts: one more to run).
    pub(super) fn queue_script(&mut self, i: usize, kind: ScriptKind) {
        match kind {
            ScriptKind::Pre => {
                self.st.nodes[i].script_waiting = true;
                self.pre_queue.push_back(i);
            }
            ScriptKind::Post => {
                self.st.nodes[i].script_waiting = true;
                self.post_queue.push_back(i);
            }
            ScriptKind::Hold => {
                self.st.nodes[i].hold_scripts_waiting += 1;
                self.hold_queue.push_back(i);
            }
        }
        self.touch(i);
    }

    /// Starts waiting scripts within `DAGMAN_MAX_PRE_SCRIPTS`,
    /// `…_POST_…` and `…_HOLD_…`; a deferred script waits for its time
    /// and does not count meanwhile.
    pub(super) fn run_scripts(&mut self) {
        for kind in [ScriptKind::Post, ScriptKind::Pre, ScriptKind::Hold] {
            if kind == ScriptKind::Pre && self.st.halted {
                continue;
            }
            let limit = match kind {
                ScriptKind::Pre => self.cfg.max_pre_scripts,
                ScriptKind::Post => self.cfg.max_post_scripts,
                ScriptKind::Hold => self.cfg.max_hold_scripts,
            } as usize;
            let mut later = Vec::new();
            loop {
                let running = match kind {
                    ScriptKind::Pre => self.c.pre_running,
                    ScriptKind::Post => self.c.post_running,
                    ScriptKind::Hold => self.c.hold_running,
                };
                if limit > 0 && running >= limit {
                    break;
                }
                let q = match kind {
                    ScriptKind::Pre => &mut self.pre_queue,
                    ScriptKind::Post => &mut self.post_queue,
                    ScriptKind::Hold => &mut self.hold_queue,
                };
                let Some(i) = q.pop_front() else { break };
                if let Some(t) = self.st.nodes[i].defer_until
                    && t > self.now
                {
                    later.push(i);
                    continue;
                }
                self.launch(i, kind);
            }
            let q = match kind {
                ScriptKind::Pre => &mut self.pre_queue,
                ScriptKind::Post => &mut self.post_queue,
                ScriptKind::Hold => &mut self.hold_queue,
            };
            for i in later.into_iter().rev() {
                q.push_front(i);
            }
        }
    }

    fn launch(&mut self, i: usize, kind: ScriptKind) {
        let want = match kind {
            ScriptKind::Pre => Status::PreRun,
            ScriptKind::Post => Status::PostRun,
            ScriptKind::Hold => Status::Submitted,
        };
        let Some(script) = self.spec.nodes[i].script(kind).cloned() else {
            return;
        };
        match kind {
            ScriptKind::Hold => {
                let n = &mut self.st.nodes[i];
                n.hold_scripts_waiting = n.hold_scripts_waiting.saturating_sub(1);
                if n.hold_script_running {
                    return;
                }
                n.hold_script_running = true;
                self.c.hold_running += 1;
            }
            _ => {
                if self.st.nodes[i].status != want || !self.st.nodes[i].script_waiting {
                    return;
                }
                let n = &mut self.st.nodes[i];
                n.script_waiting = false;
                n.script_running = true;
                n.defer_until = None;
                if kind == ScriptKind::Pre {
                    self.c.pre_running += 1;
                } else {
                    self.c.post_running += 1;
                }
            }
        }
        self.touch(i);
        let argv = macros::script_argv(&script.command, &self.script_context(i, kind));
        let name = self.spec.nodes[i].name.clone();
        self.log(format!("Running {} script of Node {name}...", kind.name()));
        match kind {
            ScriptKind::Pre => self.jobstate(i, "PRE_SCRIPT_STARTED", "-".into()),
            ScriptKind::Post => {
                let id = self.condor_id(i);
                self.jobstate(i, "POST_SCRIPT_STARTED", id)
            }
            ScriptKind::Hold => {}
        }
        self.act(Action::RunScript {
            node: i,
            kind,
            argv,
        });
    }

    /// `cluster.proc` of the node's last job, or `-`.
    pub(super) fn condor_id(&self, i: usize) -> String {
        let n = &self.st.nodes[i];
        match n.cluster {
            Some(c) => format!("{c}.{}", n.procs.len().saturating_sub(1)),
            None => "-".into(),
        }
    }

    /// What a script's macros expand to now.
    pub(super) fn script_context(&self, i: usize, kind: ScriptKind) -> macros::ScriptContext {
        let n = &self.st.nodes[i];
        let spec = &self.spec.nodes[i];
        macros::ScriptContext {
            kind: Some(kind),
            node: spec.name.clone(),
            retry: n.retries,
            max_retries: n.max_retries,
            dag_status: self.st.status.code(),
            failed_count: self.c.failed,
            futile_count: self.c.futile,
            done_count: self.c.done,
            queued_count: self.c.submitted,
            node_count: self.node_count(),
            dagman_id: self.st.dagman_id,
            cluster: n.cluster,
            procs: n.procs.clone(),
            job_return: n.job_return,
            pre_return: if spec.script(ScriptKind::Pre).is_some() {
                n.pre_return.unwrap_or(0)
            } else {
                -1
            },
            success: !n.failed,
        }
    }

    /// Seconds before submission attempt `n` + 1 (DAGMan doubles it).
    pub(super) fn submit_delay(attempts: u32) -> Dur {
        Dur::from_secs(1u64 << attempts.saturating_sub(1).min(10))
    }

    pub(super) fn now(&self) -> Time {
        self.now
    }
}
