//! A pretend station for [`Run`]: it carries out the run's actions at
//! once (scripts and jobs end with the outcomes a test chose), in an order
//! a seeded RNG picks, and records what happened and when.

use gleaner_core::dag::command::ScriptKind;
use gleaner_core::dag::config::DagConfig;
use gleaner_core::dag::run::{Action, DagStatus, Event, Exit, JobChange, Run, Status};
use gleaner_core::dag::spec::DagSpec;
use gleaner_core::dag::{LoadOptions, load};
use gleaner_core::time::{Dur, Time};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::collections::{BTreeMap, HashMap};

/// Loads DAG text given as (file name, text) pairs; the first is the DAG.
pub fn spec(files: &[(&str, &str)]) -> DagSpec {
    try_spec(files).unwrap_or_else(|e| panic!("{e}"))
}

pub fn try_spec(files: &[(&str, &str)]) -> Result<DagSpec, gleaner_core::dag::LoadErrors> {
    let map: HashMap<String, String> = files
        .iter()
        .map(|(n, t)| (format!("/w/{n}"), t.to_string()))
        .collect();
    let mut read = |p: &str| {
        map.get(p)
            .cloned()
            .ok_or_else(|| "no such file".to_string())
    };
    load(
        &[files[0].0.to_string()],
        &LoadOptions::new("/w"),
        &mut read,
    )
}

/// What happened, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rec {
    Script(String, ScriptKind, Vec<String>),
    Submit(String, u32),
    JobEnd(String, i32),
    Done(String),
    Rescue,
    SavePoint(String),
    Removed(String),
    Finished(i32, DagStatus),
}

/// A pending completion.
enum Pending {
    Script(usize, ScriptKind, Exit),
    Job(usize, u32, JobChange),
    Submitted(usize, u64, u32),
    SubmitFailed(usize),
}

pub struct Sim {
    pub run: Run,
    pub now: Time,
    pub recs: Vec<Rec>,
    /// (node, kind, retry) → exit; default 0.
    pub scripts: HashMap<(String, ScriptKind, u32), Exit>,
    /// (node, retry) → per-proc exits; default one job exiting 0.
    pub jobs: HashMap<(String, u32), Vec<Exit>>,
    /// (node, retry) → submissions that fail before one works.
    pub submit_failures: HashMap<(String, u32), u32>,
    /// Jobs that never end on their own (service nodes).
    pub forever: Vec<String>,
    pending: Vec<Pending>,
    rng: Pcg64,
    cluster: u64,
    /// Each node's retry when its jobs were submitted.
    submitted_retry: BTreeMap<usize, u32>,
    failed_so_far: HashMap<(String, u32), u32>,
    /// Highest number of nodes with jobs queued / PRE scripts running at once.
    pub max_queued: usize,
    pub max_pre: usize,
    pre_running: usize,
    pub rescue: Option<String>,
}

impl Sim {
    pub fn new(spec: DagSpec, cfg: DagConfig, seed: u64) -> Sim {
        let now = Time::from_secs(1_000_000);
        Sim {
            run: Run::new(spec, cfg, 17, now),
            now,
            recs: Vec::new(),
            scripts: HashMap::new(),
            jobs: HashMap::new(),
            submit_failures: HashMap::new(),
            forever: Vec::new(),
            pending: Vec::new(),
            rng: Pcg64::seed_from_u64(seed),
            cluster: 100,
            submitted_retry: BTreeMap::new(),
            failed_so_far: HashMap::new(),
            max_queued: 0,
            max_pre: 0,
            pre_running: 0,
            rescue: None,
        }
    }

    fn name(&self, i: usize) -> String {
        self.run.spec().nodes[i].name.clone()
    }

    fn retry(&self, i: usize) -> u32 {
        self.run.node(i).map_or(0, |n| n.retries)
    }

    fn take(&mut self, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::RunScript { node, kind, argv } => {
                    let name = self.name(node);
                    let exit = self
                        .scripts
                        .get(&(name.clone(), kind, self.retry(node)))
                        .copied()
                        .unwrap_or(Exit::Code(0));
                    if kind == ScriptKind::Pre {
                        self.pre_running += 1;
                        self.max_pre = self.max_pre.max(self.pre_running);
                    }
                    self.recs.push(Rec::Script(name, kind, argv));
                    self.pending.push(Pending::Script(node, kind, exit));
                }
                Action::KillScript { .. } => {}
                Action::Submit { node } => {
                    let name = self.name(node);
                    let retry = self.retry(node);
                    let key = (name.clone(), retry);
                    let fails = self.submit_failures.get(&key).copied().unwrap_or(0);
                    let so_far = self.failed_so_far.entry(key.clone()).or_default();
                    if *so_far < fails {
                        *so_far += 1;
                        self.pending.push(Pending::SubmitFailed(node));
                        continue;
                    }
                    let exits = self.jobs.get(&key).cloned().unwrap_or(vec![Exit::Code(0)]);
                    self.cluster += 1;
                    self.submitted_retry.insert(node, retry);
                    self.recs.push(Rec::Submit(name, retry));
                    self.pending
                        .push(Pending::Submitted(node, self.cluster, exits.len() as u32));
                }
                Action::RemoveJobs { node, .. } => {
                    self.recs.push(Rec::Removed(self.name(node)));
                    let procs = self.run.node(node).map_or(0, |n| n.procs.len());
                    for p in 0..procs as u32 {
                        self.pending.push(Pending::Job(node, p, JobChange::Aborted));
                    }
                }
                Action::SavePoint { node } => self.recs.push(Rec::SavePoint(self.name(node))),
                Action::WriteRescue => {
                    self.recs.push(Rec::Rescue);
                    self.rescue = Some(gleaner_core::dag::rescue::rescue_text(
                        &self.run, "/w/x.dag", 0,
                    ));
                }
                Action::Finished { exit_code, status } => {
                    self.recs.push(Rec::Finished(exit_code, status))
                }
            }
        }
    }

    fn statuses(&self) -> Vec<Status> {
        (0..self.run.spec().nodes.len())
            .map(|i| self.run.node(i).map_or(Status::NotReady, |n| n.status))
            .collect()
    }

    /// Records nodes that became done, then takes the actions.
    fn after(&mut self, before: Vec<Status>, a: Vec<Action>) {
        for (i, b) in before.iter().enumerate() {
            let s = self.run.node(i).map_or(Status::NotReady, |n| n.status);
            if s == Status::Done && *b != Status::Done {
                self.recs.push(Rec::Done(self.name(i)));
            }
        }
        self.take(a);
    }

    fn feed(&mut self, e: Event) {
        let before = self.statuses();
        let a = self.run.apply(e, self.now);
        self.after(before, a);
    }

    fn step(&mut self) {
        let before = self.statuses();
        let a = self.run.step(self.now);
        self.after(before, a);
    }

    /// Runs until the DAG finishes (or `limit` completions); returns the
    /// exit code.
    pub fn run(&mut self, limit: usize) -> Option<i32> {
        self.step();
        for _ in 0..limit {
            if let Some(x) = self.run.finished() {
                return Some(x);
            }
            self.max_queued = self.max_queued.max(self.run.queued_count());
            if self.pending.is_empty() {
                // Time must pass for deferrals and backoffs.
                let mut gap = 1;
                while self.pending.is_empty() && self.run.finished().is_none() && gap < 4096 {
                    self.now += Dur::from_secs(gap);
                    self.step();
                    gap *= 2;
                }
                if self.pending.is_empty() {
                    return self.run.finished();
                }
                continue;
            }
            let k = self.rng.random_range(0..self.pending.len());
            let p = self.pending.swap_remove(k);
            self.now += Dur::from_millis(10);
            match p {
                Pending::Script(node, kind, exit) => {
                    if kind == ScriptKind::Pre {
                        self.pre_running -= 1;
                    }
                    self.feed(Event::ScriptExited { node, kind, exit });
                }
                Pending::Submitted(node, cluster, procs) => {
                    self.feed(Event::Submitted {
                        node,
                        cluster,
                        procs,
                    });
                    let name = self.name(node);
                    if self.forever.contains(&name) {
                        continue;
                    }
                    let retry = self.submitted_retry.get(&node).copied().unwrap_or(0);
                    let exits = self
                        .jobs
                        .get(&(name, retry))
                        .cloned()
                        .unwrap_or(vec![Exit::Code(0)]);
                    for (p, e) in exits.into_iter().enumerate() {
                        self.pending
                            .push(Pending::Job(node, p as u32, JobChange::Started));
                        self.pending
                            .push(Pending::Job(node, p as u32, JobChange::Ended(e)));
                    }
                }
                Pending::SubmitFailed(node) => self.feed(Event::SubmitFailed {
                    node,
                    error: "submit refused".into(),
                }),
                Pending::Job(node, p, change) => {
                    if let JobChange::Ended(e) = change {
                        self.recs.push(Rec::JobEnd(self.name(node), e.value()));
                    }
                    self.feed(Event::Job {
                        node,
                        proc: p,
                        change,
                    })
                }
            }
            self.step();
        }
        self.run.finished()
    }

    /// Names in the order `f` picks them out of the record.
    pub fn names(&self, f: impl Fn(&Rec) -> Option<String>) -> Vec<String> {
        self.recs.iter().filter_map(f).collect()
    }

    pub fn submits(&self) -> Vec<String> {
        self.names(|r| match r {
            Rec::Submit(n, _) => Some(n.clone()),
            _ => None,
        })
    }

    pub fn scripts(&self, kind: ScriptKind) -> Vec<Vec<String>> {
        self.recs
            .iter()
            .filter_map(|r| match r {
                Rec::Script(_, k, argv) if *k == kind => Some(argv.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn status(&self, name: &str) -> Status {
        let i = self.run.spec().find(name).expect("node");
        self.run.node(i).map_or(Status::NotReady, |n| n.status)
    }
}
