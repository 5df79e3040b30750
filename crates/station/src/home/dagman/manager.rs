//! The DAG manager in the daemon: every running DAG's
//! [`gleaner_core::dag::run::Run`] kept in memory, fed a few times a
//! second with what the queue says about its nodes' jobs, what its DAG
//! job says (held, released, removed) and its scripts' exits; the run's
//! actions carried out ([`super::act`]); its state stored after every
//! pass, each node's submission in the transaction that queues its jobs.
//!
//! A restarted home rebuilds each running DAG from its rows
//! ([`Run::restore`]): scripts that were running run again (after the
//! ones the old daemon left are killed), submissions asked for but not
//! recorded are asked for again, and the queue is compared once more.

use super::act;
use super::api::DagState;
use super::observe;
use super::outputs;
use super::store::{self, Extras, Stored};
use crate::clock::now;
use crate::home::Home;
use crate::home::local_run::{self, scripts::ScriptEnd};
use crate::isolation::CgroupManager;
use crate::queue::JobRecord;
use gleaner_core::dag::files::{jobstate, status};
use gleaner_core::dag::run::{Event, Run, Status};
use gleaner_core::time::{Dur, Time};
use gleaner_proto::job::{JobId, JobState};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How often the manager looks at running DAGs.
const PASS_PERIOD: Duration = Duration::from_millis(300);

/// One running DAG.
pub(super) struct Live {
    pub id: u64,
    pub owner: String,
    pub run: Run,
    pub extras: Extras,
    /// The node status file was last written then.
    pub status_written: Option<Time>,
    /// Something changed since.
    pub changed: bool,
    /// The dot file's number (with DONT-OVERWRITE).
    pub dot_count: u32,
    /// Its DAG job is on hold.
    pub held: bool,
    /// DAGMan's halt file (`FILE.halt`) was there at the last look, and
    /// when that was.
    pub halt_file: bool,
    pub halt_checked: Option<std::time::Instant>,
}

/// How often a DAG's halt file is looked for (DAGMan: every few seconds).
const HALT_CHECK: Duration = Duration::from_secs(2);

/// The manager's state in its loop.
pub(super) struct Manager {
    pub home: Arc<Home>,
    pub dags: BTreeMap<u64, Live>,
    pub cg: Option<CgroupManager>,
    pub ends_tx: mpsc::UnboundedSender<ScriptEnd>,
    ends_rx: mpsc::UnboundedReceiver<ScriptEnd>,
}

impl Manager {
    fn new(home: Arc<Home>) -> Manager {
        let (ends_tx, ends_rx) = mpsc::unbounded_channel();
        let cg = local_run::cgroups(&home);
        Manager {
            home,
            dags: BTreeMap::new(),
            cg,
            ends_tx,
            ends_rx,
        }
    }

    /// Loads DAGs that run but are not in memory yet (new ones, and all
    /// of them after a restart).
    async fn load_new(&mut self) {
        let ids = match store::ids(&mut self.home.queue(), Some(DagState::Running)) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, "cannot list DAGs");
                return;
            }
        };
        for id in ids {
            if self.dags.contains_key(&id) {
                continue;
            }
            let stored = match store::load(&mut self.home.queue(), id) {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(dag = id, error = %e, "cannot load a DAG");
                    continue;
                }
            };
            self.adopt(stored).await;
        }
    }

    async fn adopt(&mut self, s: Stored) {
        let at = now();
        let id = s.id;
        let fresh = s.run.nodes.iter().all(|n| !n.started) && s.run.jobs_submitted == 0;
        let run = match Run::restore(s.spec, s.config, s.run, at) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(dag = id, error = %e, "cannot restore a DAG");
                let _ = store::finish(&mut self.home.queue(), id, DagState::Failed, 1, &e, at);
                return;
            }
        };
        let mut live = Live {
            id,
            owner: s.owner,
            run,
            extras: s.extras,
            status_written: None,
            changed: true,
            dot_count: 0,
            held: false,
            halt_file: false,
            halt_checked: None,
        };
        if !fresh {
            live.run.log("Running in recovery mode".into());
            if let Some(j) = live.run.spec().jobstate_log.clone() {
                let secs = at.as_micros() / 1_000_000;
                outputs::append(
                    &live.owner,
                    &j,
                    format!("{}\n", jobstate::recovery_line(secs, false)),
                )
                .await;
            }
        } else if let Some(j) = live.run.spec().jobstate_log.clone() {
            let secs = at.as_micros() / 1_000_000;
            outputs::append(
                &live.owner,
                &j,
                format!("{}\n", jobstate::started_line(secs, id)),
            )
            .await;
        }
        self.dags.insert(id, live);
    }

    /// One pass over every running DAG.
    async fn pass(&mut self) {
        self.load_new().await;
        let mut ends: HashMap<u64, Vec<ScriptEnd>> = HashMap::new();
        while let Ok(e) = self.ends_rx.try_recv() {
            ends.entry(e.dag).or_default().push(e);
        }
        let ids: Vec<u64> = self.dags.keys().copied().collect();
        for id in ids {
            let mine = ends.remove(&id).unwrap_or_default();
            self.pass_one(id, mine).await;
        }
    }

    /// The events the queue and the scripts have for DAG `id`.
    fn observe(&mut self, id: u64, ends: Vec<ScriptEnd>) -> Vec<Event> {
        let Some(live) = self.dags.get_mut(&id) else {
            return Vec::new();
        };
        let mut events = Vec::new();
        // The DAG's own job: removed, held, released. Read with the
        // queue's lock let go at once: a release below takes it again (a
        // `match` would hold it through its arms).
        let own = self.home.queue().get(JobId::new(id, 0));
        match own {
            Ok(Some(r)) => match r.state {
                JobState::Removed if !live.run.is_removed() => events.push(Event::Remove),
                JobState::Held { .. } if !live.held => {
                    live.held = true;
                    events.push(Event::Halt);
                }
                JobState::Idle if live.held => {
                    live.held = false;
                    let _ = self.home.queue().transition(
                        JobId::new(id, 0),
                        JobState::Running,
                        "DAG released: the DAG manager goes on",
                        now(),
                    );
                    events.push(Event::Resume);
                }
                _ => {}
            },
            Ok(None) => {}
            Err(e) => tracing::warn!(dag = id, error = %e, "cannot read the DAG's job"),
        }
        for e in ends {
            if let Some(err) = &e.error {
                live.run.log(format!(
                    "{} script of node {} could not run: {err}",
                    e.kind.name(),
                    live.run
                        .spec()
                        .nodes
                        .get(e.node)
                        .map_or("?", |n| n.name.as_str())
                ));
            }
            events.push(Event::ScriptExited {
                node: e.node,
                kind: e.kind,
                exit: e.exit,
            });
        }
        let watched: Vec<(usize, u64)> = (0..live.run.spec().nodes.len())
            .filter_map(|i| {
                let n = live.run.node(i)?;
                (n.status == Status::Submitted).then_some((i, n.cluster?))
            })
            .collect();
        if watched.is_empty() {
            return events;
        }
        let clusters: Vec<u64> = watched.iter().map(|w| w.1).collect();
        let records = match self.home.queue().jobs_of_clusters(&clusters) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(dag = id, error = %e, "cannot read node jobs");
                return events;
            }
        };
        let mut by_cluster: HashMap<u64, Vec<JobRecord>> = HashMap::new();
        for r in records {
            by_cluster.entry(r.id.cluster).or_default().push(r);
        }
        for (i, c) in watched {
            let Some(rs) = by_cluster.get(&c) else {
                continue;
            };
            let known = live
                .run
                .node(i)
                .map(|n| n.procs.clone())
                .unwrap_or_default();
            events.extend(observe::events(i, &known, rs));
        }
        events
    }

    async fn pass_one(&mut self, id: u64, ends: Vec<ScriptEnd>) {
        let at = now();
        let mut events = self.observe(id, ends);
        events.extend(self.halt_file(id).await);
        let mut actions = Vec::new();
        let mut nodes_log = String::new();
        {
            let Some(live) = self.dags.get_mut(&id) else {
                return;
            };
            for e in events {
                act::nodes_log_event(live, &e, at, &mut nodes_log);
                actions.extend(live.run.apply(e, at));
                live.changed = true;
            }
            actions.extend(live.run.step(at));
        }
        self.persist(id);
        // Actions may lead to more (a submission's events); until none.
        let mut rounds = 0;
        while !actions.is_empty() && rounds < 64 {
            rounds += 1;
            let more =
                act::perform(self, id, std::mem::take(&mut actions), at, &mut nodes_log).await;
            actions = more;
            if let Some(live) = self.dags.get_mut(&id) {
                actions.extend(live.run.step(at));
            }
            self.persist(id);
        }
        self.write_files(id, at, nodes_log).await;
        if self
            .dags
            .get(&id)
            .is_some_and(|l| l.run.finished().is_some())
        {
            self.dags.remove(&id);
        }
    }

    /// DAGMan's halt file: `FILE.halt` beside the first DAG file halts the
    /// DAG (no new PRE scripts or submissions; running nodes finish), its
    /// removal resumes it (`htcondor dag halt` makes the file).
    async fn halt_file(&mut self, id: u64) -> Option<Event> {
        let live = self.dags.get_mut(&id)?;
        if live.halt_checked.is_some_and(|t| t.elapsed() < HALT_CHECK)
            || live.run.finished().is_some()
        {
            return None;
        }
        live.halt_checked = Some(std::time::Instant::now());
        let primary = live.run.spec().files.first()?.clone();
        let present = outputs::exists(&live.owner, &format!("{primary}.halt")).await;
        let live = self.dags.get_mut(&id)?;
        if present == live.halt_file {
            return None;
        }
        live.halt_file = present;
        Some(if present { Event::Halt } else { Event::Resume })
    }

    /// Stores what changed.
    pub(super) fn persist(&mut self, id: u64) {
        let Some(live) = self.dags.get_mut(&id) else {
            return;
        };
        let dirty = live.run.take_dirty();
        if let Err(e) = store::save(&mut self.home.queue(), id, live.run.state(), dirty) {
            tracing::error!(dag = id, error = %e, "cannot store a DAG's state");
        }
    }

    /// `dagman.out`, `nodes.log`, the jobstate log, the node status file
    /// and the dot file of DAG `id`.
    pub(super) async fn write_files(&mut self, id: u64, at: Time, nodes_log: String) {
        let Some(live) = self.dags.get_mut(&id) else {
            return;
        };
        let owner = live.owner.clone();
        let changed = live.changed;
        let lines = live.run.take_log();
        if !lines.is_empty() {
            live.changed = true;
            outputs::append(&owner, &live.extras.out_file, outputs::stamped(at, &lines)).await;
        }
        let primary = live.run.spec().files.first().cloned().unwrap_or_default();
        outputs::append(&owner, &format!("{primary}.nodes.log"), nodes_log).await;
        let events = live.run.take_jobstate();
        if let Some(j) = live.run.spec().jobstate_log.clone()
            && !events.is_empty()
        {
            let mut text = String::new();
            for e in &events {
                let node = live
                    .run
                    .spec()
                    .nodes
                    .get(e.node)
                    .map_or("?", |n| n.name.as_str());
                let tag = live
                    .extras
                    .job_tags
                    .get(&e.node)
                    .map_or("-", String::as_str);
                text.push_str(&jobstate::event_line(e, node, tag));
                text.push('\n');
            }
            outputs::append(&owner, &j, text).await;
        }
        let secs = at.as_micros() / 1_000_000;
        if let Some(sf) = live.run.spec().status_file.clone() {
            let due = match live.status_written {
                None => true,
                Some(t) => at.since(t) >= Dur::from_secs(sf.min_update),
            };
            let over = live.run.finished().is_some();
            if over || (due && (live.changed || sf.always_update)) {
                let text = status::status_file(&live.run, secs, live.held);
                if outputs::replace(&owner, &sf.file, text).await {
                    live.status_written = Some(at);
                    live.changed = false;
                }
            }
        }
        if let Some(dot) = live.run.spec().dot.clone()
            && (live.dot_count == 0 || (dot.update && changed))
        {
            let include = match &dot.include {
                Some(p) => read_text(&owner, p).await.map(|t| (p.clone(), t)),
                None => None,
            };
            let text = gleaner_core::dag::files::dot::dot_file(
                &live.run,
                secs,
                include.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
            );
            let file = if dot.overwrite {
                dot.file.clone()
            } else {
                format!("{}.{}", dot.file, live.dot_count)
            };
            live.dot_count += 1;
            outputs::replace(&owner, &file, text).await;
        }
    }
}

/// A small file of the owner's (a dot header), if it can be read.
async fn read_text(owner: &str, path: &str) -> Option<String> {
    let p = std::path::PathBuf::from(path);
    crate::home::as_owner::as_owner(owner, move |u| {
        use std::io::Read;
        let mut s = String::new();
        let mut f = u.open_read(&p)?;
        let _ = f.by_ref().take(1 << 20).read_to_string(&mut s);
        Ok(s)
    })
    .await
    .ok()
}

/// The manager's loop: a pass every [`PASS_PERIOD`] while a DAG runs,
/// asleep until one is submitted otherwise.
pub(crate) async fn run_loop(home: Arc<Home>, mut shutdown: watch::Receiver<bool>) {
    let mut m = Manager::new(home.clone());
    let killed = local_run::scripts::kill_leftovers(m.cg.as_ref());
    if killed > 0 {
        tracing::info!(
            scripts = killed,
            "killed DAG scripts a previous run left; they run again"
        );
    }
    super::remove::recover(&home);
    loop {
        m.pass().await;
        let idle = m.dags.is_empty();
        tokio::select! {
            _ = home.dag_wake.notified(), if idle => {}
            _ = tokio::time::sleep(PASS_PERIOD), if !idle => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}
