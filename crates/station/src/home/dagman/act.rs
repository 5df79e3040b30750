//! The run's actions carried out at the home: scripts started as the
//! owner ([`crate::home::local_run::scripts`]), node jobs submitted
//! ([`super::nodes`]), jobs removed, rescue DAGs and save points written,
//! the DAG ended (its DAGMan job completes with condor_dagman's exit code,
//! its metrics and final node status file written).

use super::api::DagState;
use super::manager::{Live, Manager};
use super::nodes;
use super::outputs;
use super::store;
use crate::home::local_run::scripts::{self, ScriptJob};
use crate::home::schedd::spawn_vacate;
use crate::home::user_log::{UserEvent, format_event, spawn_user_log};
use gleaner_core::dag::command::ScriptKind;
use gleaner_core::dag::files::{jobstate, metrics, status};
use gleaner_core::dag::load::{base_of, dir_of};
use gleaner_core::dag::rescue::{
    last_rescue_num, rescue_name, rescue_text, save_point_path, save_point_text,
};
use gleaner_core::dag::run::{Action, DagStatus, Event, JobChange};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobId, JobState};
use std::time::Duration;

/// The `nodes.log` entry of an event, if it is a job's.
pub(super) fn nodes_log_event(live: &Live, e: &Event, at: Time, out: &mut String) {
    let Event::Job { node, proc, change } = e else {
        if let Event::ScriptExited {
            node,
            kind: ScriptKind::Post,
            exit,
        } = e
        {
            let cluster = live.run.node(*node).and_then(|n| n.cluster).unwrap_or(0);
            let name = live
                .run
                .spec()
                .nodes
                .get(*node)
                .map_or("", |n| n.name.as_str());
            out.push_str(&format_event(
                JobId::new(cluster, 0),
                at,
                &UserEvent::PostScriptTerminated {
                    exit_code: exit.value(),
                    node: name.to_string(),
                },
            ));
        }
        return;
    };
    let Some(cluster) = live.run.node(*node).and_then(|n| n.cluster) else {
        return;
    };
    let id = JobId::new(cluster, *proc);
    let ev = match change {
        JobChange::Started => UserEvent::Executing {
            host: "gleaner".into(),
        },
        JobChange::Evicted => UserEvent::Evicted {
            checkpointed: false,
            reason: String::new(),
        },
        JobChange::Held => UserEvent::Held {
            reason: String::new(),
            code: 0,
            subcode: 0,
        },
        JobChange::Released => UserEvent::Released {
            reason: String::new(),
        },
        JobChange::Ended(x) => UserEvent::Terminated {
            exit_code: x.value(),
            detail: String::new(),
        },
        JobChange::Aborted => UserEvent::Aborted {
            reason: String::new(),
        },
    };
    out.push_str(&format_event(id, at, &ev));
}

/// The environment of a DAG's scripts: the DAG's own (`ENV`, the
/// submitter's chosen variables), then what DAGMan's job would have.
fn script_env(m: &Manager, live: &Live) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = live
        .extras
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let primary = live.run.spec().files.first().cloned().unwrap_or_default();
    let mut set = |k: &str, v: String| {
        env.retain(|(x, _)| x != k);
        env.push((k.to_string(), v));
    };
    set("_CONDOR_DAGMAN_LOG", live.extras.out_file.clone());
    set("_CONDOR_MAX_DAGMAN_LOG", "0".into());
    set("CONDOR_ID", format!("{}.0", live.id));
    set("DAGManJobId", live.id.to_string());
    set("DAG_STATUS", live.run.status().code().to_string());
    set("_CONDOR_SCHEDD_HOST", m.home.name.clone());
    set("_CONDOR_DAGMAN_DAG_FILE", primary);
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    env
}

/// Carries out `actions` for DAG `id`; returns the actions that events
/// fed meanwhile asked for.
pub(super) async fn perform(
    m: &mut Manager,
    id: u64,
    actions: Vec<Action>,
    at: Time,
    nodes_log: &mut String,
) -> Vec<Action> {
    let mut more = Vec::new();
    for a in actions {
        if !m.dags.contains_key(&id) {
            break;
        }
        match a {
            Action::RunScript { node, kind, argv } => start_script(m, id, node, kind, argv),
            Action::KillScript { node, kind } => {
                if let Some(cg) = &m.cg
                    && let Ok(g) = cg.open(&scripts::cgroup_name(id, node, kind))
                {
                    let _ = g.kill();
                }
            }
            Action::Submit { node } => {
                let events = nodes::submit(m, id, node, at).await;
                if let Some(live) = m.dags.get_mut(&id) {
                    for e in events {
                        nodes_log_event(live, &e, at, nodes_log);
                        more.extend(live.run.apply(e, at));
                    }
                }
            }
            Action::RemoveJobs {
                node,
                cluster,
                reason,
            } => remove_jobs(m, id, node, cluster, &reason, at),
            Action::SavePoint { node } => save_point(m, id, node, at).await,
            Action::WriteRescue => write_rescue(m, id, at).await,
            Action::Finished { exit_code, status } => {
                // DAGMan's files are complete before its job leaves the
                // queue: whoever follows the job reads them then.
                m.write_files(id, at, std::mem::take(nodes_log)).await;
                finished(m, id, exit_code, status, at).await
            }
        }
    }
    more
}

fn start_script(m: &Manager, id: u64, node: usize, kind: ScriptKind, argv: Vec<String>) {
    let Some(live) = m.dags.get(&id) else { return };
    let Some(spec) = live.run.spec().nodes.get(node) else {
        return;
    };
    let limit = match live.run.config().max_script_seconds {
        0 => None,
        s => Some(Duration::from_secs(s)),
    };
    let job = ScriptJob {
        dag: id,
        node,
        node_name: spec.name.clone(),
        kind,
        argv,
        dir: spec.dir.clone(),
        owner: live.owner.clone(),
        env: script_env(m, live),
        debug: spec.script(kind).and_then(|s| s.debug.clone()),
        limit,
    };
    let tx = m.ends_tx.clone();
    let cg = m.cg.clone();
    let wake = m.home.clone();
    tokio::spawn(async move {
        let end = scripts::run(job, cg).await;
        let _ = tx.send(end);
        wake.dag_wake.notify_one();
    });
}

/// Removes a node's jobs still in the queue (vacating those on hosts).
fn remove_jobs(m: &Manager, id: u64, node: usize, cluster: u64, reason: &str, at: Time) {
    let jobs = match m.home.queue().jobs_of_clusters(&[cluster]) {
        Ok(j) => j,
        Err(e) => {
            tracing::warn!(dag = id, node, error = %e, "cannot read jobs to remove");
            return;
        }
    };
    for j in jobs {
        if j.state.is_terminal() {
            continue;
        }
        let remote = matches!(j.state, JobState::Running | JobState::Suspended)
            && !j.description.universe.is_local();
        match m
            .home
            .queue()
            .transition(j.id, JobState::Removed, reason, at)
        {
            Ok(_) => {
                spawn_user_log(
                    &m.home,
                    j.id,
                    at,
                    UserEvent::Aborted {
                        reason: reason.to_string(),
                    },
                );
                if remote {
                    spawn_vacate(&m.home, j.id, reason);
                }
            }
            Err(e) => tracing::warn!(job = %j.id, error = %e, "cannot remove a node job"),
        }
    }
    m.home.news().notify_one();
}

async fn save_point(m: &Manager, id: u64, node: usize, at: Time) {
    let Some(live) = m.dags.get(&id) else { return };
    let Some(file) = live
        .run
        .spec()
        .nodes
        .get(node)
        .and_then(|n| n.save_point.clone())
    else {
        return;
    };
    let path = save_point_path(&live.run.spec().cwd, &file);
    let text = save_point_text(&live.run, node, at.as_micros() / 1_000_000);
    let owner = live.owner.clone();
    if !file.contains('/') {
        let dir = dir_of(&path);
        let d = std::path::PathBuf::from(&dir);
        let _ = crate::home::as_owner::as_owner(&owner, move |u| {
            std::fs::create_dir_all(&d).map_err(|e| {
                crate::home::as_owner::io_error(crate::userfs::Op::Create, &d, &u.user().name, e)
            })
        })
        .await;
    }
    if !outputs::list(&owner, &dir_of(&path))
        .await
        .iter()
        .any(|n| n == base_of(&path))
    {
        outputs::replace(&owner, &path, text).await;
    } else {
        outputs::rename(&owner, &path, &format!("{path}.old")).await;
        outputs::replace(&owner, &path, text).await;
    }
}

/// Writes the rescue DAG: the next `FILE.rescueNNN` (the same file again
/// later in the same run), and renames newer ones `.old` when the run
/// came from an older one.
async fn write_rescue(m: &mut Manager, id: u64, at: Time) {
    let Some(live) = m.dags.get_mut(&id) else {
        return;
    };
    let owner = live.owner.clone();
    let primary = live.run.spec().files.first().cloned().unwrap_or_default();
    let multi = live.run.spec().files.len() > 1;
    let max = live.run.config().max_rescue_num.max(1);
    let path = match live.extras.rescue_out.clone() {
        Some(p) => p,
        None => {
            let names = outputs::list(&owner, &dir_of(&primary)).await;
            if let Some(used) = &live.extras.rescue
                && used.number > 0
            {
                for old in super::prepare::newer_rescues(&names, &primary, multi, used.number) {
                    outputs::rename(&owner, &old, &format!("{old}.old")).await;
                }
            }
            let from = live.extras.rescue.as_ref().map_or(0, |r| r.number);
            let last = if from > 0 {
                from
            } else {
                last_rescue_num(&names, &primary, multi, max)
            };
            let p = rescue_name(&primary, multi, (last + 1).min(max));
            live.extras.rescue_out = Some(p.clone());
            let _ = store::save_extras(&mut m.home.queue(), id, &live.extras);
            p
        }
    };
    let named = if live.extras.dag_file.is_empty() {
        &primary
    } else {
        &live.extras.dag_file
    };
    let text = rescue_text(&live.run, named, at.as_micros() / 1_000_000);
    live.run
        .log_before_exit(format!("Writing Rescue DAG to {path}..."));
    if outputs::replace(&owner, &path, text).await {
        let _ = store::record_rescue(&mut m.home.queue(), id, &path);
    }
}

/// The DAG is over: its job completes with condor_dagman's exit code, its
/// metrics and last node status are written, and it leaves the manager.
async fn finished(m: &mut Manager, id: u64, exit: i32, status: DagStatus, at: Time) {
    let Some(live) = m.dags.get_mut(&id) else {
        return;
    };
    let owner = live.owner.clone();
    let secs = at.as_micros() / 1_000_000;
    let primary = live.run.spec().files.first().cloned().unwrap_or_default();
    let state = if live.run.is_removed() {
        DagState::Removed
    } else if exit == 0 {
        DagState::Done
    } else {
        DagState::Failed
    };
    let failed: Vec<String> = (0..live.run.spec().nodes.len())
        .filter(|&i| {
            live.run
                .node(i)
                .is_some_and(|n| n.status == gleaner_core::dag::run::Status::Error)
        })
        .map(|i| {
            let n = &live.run.spec().nodes[i];
            let r = live.run.node(i).map(|r| r.retries + 1).unwrap_or(1);
            format!("{} after {r} attempt(s)", n.name)
        })
        .collect();
    let message = match state {
        DagState::Done => String::new(),
        DagState::Removed => "removed by its user".into(),
        _ if failed.is_empty() => format!("{} (exit {exit})", status.name()),
        _ => format!("failed: {}", failed.join(", ")),
    };
    if let Err(e) = store::finish(&mut m.home.queue(), id, state, exit, &message, at) {
        tracing::error!(dag = id, error = %e, "cannot record the DAG's end");
    }
    let rescue_num = live.extras.rescue.as_ref().map_or(0, |r| r.number);
    let parent = live.extras.parent_node.map(|p| p.0);
    let text = metrics::metrics_file(&live.run, at.as_secs_f64(), exit, rescue_num, parent);
    outputs::replace(&owner, &format!("{primary}.metrics"), text).await;
    if let Some(sf) = live.run.spec().status_file.clone() {
        outputs::replace(
            &owner,
            &sf.file,
            status::status_file(&live.run, secs, false),
        )
        .await;
    }
    if let Some(j) = live.run.spec().jobstate_log.clone() {
        outputs::append(
            &owner,
            &j,
            format!("{}\n", jobstate::finished_line(secs, exit)),
        )
        .await;
    }
    // The DAG's job: completed with condor_dagman's exit code (removed
    // stays removed).
    let job = JobId::new(id, 0);
    let done = m.home.queue().transition_exited(
        job,
        JobState::Completed { exit_code: exit },
        &format!("DAG ended: {}", status.name()),
        at,
        None,
    );
    if done.is_ok() {
        spawn_user_log(
            &m.home,
            job,
            at,
            UserEvent::Terminated {
                exit_code: exit,
                detail: String::new(),
            },
        );
    }
    tracing::info!(dag = id, exit, status = status.name(), "DAG ended");
    m.home.news().notify_one();
    m.home.dag_wake.notify_one();
}
