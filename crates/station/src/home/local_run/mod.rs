//! User processes the home runs itself, as their owner: jobs of
//! `universe = local` and `scheduler` (HTCondor runs them on the access
//! point, and so does Gleaner: on the submitting user's home station) and
//! the DAG manager's scripts ([`scripts`]).
//!
//! Local jobs never become demand for the coordinator: the queue stores
//! them with the class `local` and no time from which they may be matched
//! (`queue::write`), and the home's ad leaves them out of its counts. This
//! loop starts each idle one (at most [`MAX_RUNNING`] at once), with its
//! standard streams opened as the owner in its initial directory, in a
//! cgroup of its own when the home has them ([`spawn`]). A job removed or
//! held meanwhile is killed; an exit goes through the job's own
//! `on_exit_*` policy like any other. A job that was running when the
//! station died is requeued at start (`recover`) and runs again, as
//! HTCondor's schedd reruns a local job whose starter died with it.

pub mod scripts;
pub mod spawn;

use super::Home;
use super::as_owner::{as_owner, io_error};
use super::job_policy::{OnExit, on_exit};
use super::user_log::{UserEvent, spawn_user_log};
use crate::clock::now;
use crate::isolation::{CgroupManager, GuestCgroup};
use crate::queue::JobRecord;
use crate::userfs::{Op, UnixUser};
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use spawn::{UserProc, kill_group};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Most local jobs running at once per home (HTCondor's
/// `START_LOCAL_UNIVERSE` / `START_SCHEDULER_UNIVERSE` default to a bound
/// of this kind).
pub const MAX_RUNNING: usize = 64;

/// How often the loop looks for work and for jobs removed meanwhile.
const PERIOD: Duration = Duration::from_millis(250);

/// The cgroup subtree of the home's user processes.
pub fn cgroups(home: &Home) -> Option<CgroupManager> {
    let m = home.config.isolation.build_named("home")?;
    Some(m)
}

/// The local job's process group, by job.
type Running = Arc<Mutex<HashMap<JobId, u32>>>;

fn lock(r: &Running) -> std::sync::MutexGuard<'_, HashMap<JobId, u32>> {
    r.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The loop: starts idle local jobs, kills those no longer wanted.
pub(crate) async fn run_loop(home: Arc<Home>, mut shutdown: watch::Receiver<bool>) {
    let running: Running = Arc::default();
    let cg = cgroups(&home);
    // Groups a previous run of the daemon left: their jobs were requeued.
    if let Some(m) = &cg {
        for name in m.list().unwrap_or_default() {
            if name.starts_with("local-")
                && let Ok(g) = m.open(&name)
            {
                let _ = g.kill();
                let _ = g.remove();
            }
        }
    }
    loop {
        pass(&home, &running, cg.as_ref()).await;
        tokio::select! {
            _ = tokio::time::sleep(PERIOD) => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
    // Shutdown: the jobs stop with the daemon and are requeued at start.
    for (_, pid) in lock(&running).drain() {
        kill_group(pid);
    }
}

async fn pass(home: &Arc<Home>, running: &Running, cg: Option<&CgroupManager>) {
    // Jobs no longer running in the queue (removed, held) are killed.
    let ids: Vec<(JobId, u32)> = lock(running).iter().map(|(k, v)| (*k, *v)).collect();
    for (id, pid) in ids {
        let still = matches!(home.queue().get(id), Ok(Some(r)) if r.state == JobState::Running);
        if !still {
            tracing::info!(job = %id, "local job no longer wanted: killed");
            kill_group(pid);
            if let Some(m) = cg
                && let Ok(g) = m.open(&cgroup_name(id))
            {
                let _ = g.kill();
            }
        }
    }
    let room = MAX_RUNNING.saturating_sub(lock(running).len());
    if room == 0 {
        return;
    }
    let idle = match home.queue().local_idle_jobs(room) {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "cannot read local jobs");
            return;
        }
    };
    for r in idle {
        start(home, running, cg, r).await;
    }
}

fn cgroup_name(id: JobId) -> String {
    format!("local-{}-{}", id.cluster, id.proc)
}

/// A path of the job's, relative to its initial directory.
fn job_path(r: &JobRecord, p: &str) -> PathBuf {
    match &r.description.iwd {
        Some(iwd) if !p.starts_with('/') => Path::new(iwd).join(p),
        _ => PathBuf::from(p),
    }
}

/// The environment of a local job: its own, plus what HTCondor's local
/// starter sets.
fn environment(
    r: &JobRecord,
    iwd: &Path,
    station: &str,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut env: Vec<(String, String)> = r
        .description
        .environment
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let has = |env: &Vec<(String, String)>, k: &str| env.iter().any(|(x, _)| x == k);
    for (k, v) in [
        ("_CONDOR_SCRATCH_DIR", iwd.display().to_string()),
        ("_CONDOR_JOB_IWD", iwd.display().to_string()),
        ("_CONDOR_SLOT", "local".to_string()),
        ("CONDOR_ID", format!("{}.{}", r.id.cluster, r.id.proc)),
        ("_CONDOR_STATION", station.to_string()),
    ] {
        if !has(&env, k) {
            env.push((k.to_string(), v));
        }
    }
    if !has(&env, "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    env.into_iter().map(|(k, v)| (k.into(), v.into())).collect()
}

/// Opens the job's standard streams as its owner.
async fn streams(r: &JobRecord) -> Result<(Stdio, Stdio, Stdio), String> {
    let d = &r.description;
    let input = d.input.as_deref().map(|p| job_path(r, p));
    let output = d.output.as_deref().map(|p| job_path(r, p));
    let error = d.error.as_deref().map(|p| job_path(r, p));
    let same = output.is_some() && output == error;
    let files = as_owner(&r.owner, move |u| {
        let i = match &input {
            Some(p) => Some(u.open_read(p)?),
            None => None,
        };
        let o = match &output {
            Some(p) => Some(u.create_truncate(p, 0o644)?),
            None => None,
        };
        let e = match (&error, same, &o) {
            (Some(_), true, Some(f)) => Some(
                f.try_clone()
                    .map_err(|e| io_error(Op::Create, Path::new("stderr"), &u.user().name, e))?,
            ),
            (Some(p), _, _) => Some(u.create_truncate(p, 0o644)?),
            (None, _, _) => None,
        };
        Ok((i, o, e))
    })
    .await
    .map_err(|e| e.to_string())?;
    let to = |f: Option<std::fs::File>| f.map_or_else(Stdio::null, Stdio::from);
    Ok((to(files.0), to(files.1), to(files.2)))
}

async fn start(home: &Arc<Home>, running: &Running, cg: Option<&CgroupManager>, r: JobRecord) {
    let id = r.id;
    let at = now();
    let station = home.name.clone();
    {
        let mut q = home.queue();
        // The host is this station: a crash requeues the job at start.
        if let Err(e) = q
            .annotate(id, JobEventKind::Placed, &station, at)
            .and_then(|()| {
                q.transition(
                    id,
                    JobState::Running,
                    "started on its home station (local universe)",
                    at,
                )
            })
        {
            tracing::warn!(job = %id, error = %e, "cannot start local job");
            return;
        }
    }
    spawn_user_log(
        home,
        id,
        at,
        UserEvent::Executing {
            host: home.address.clone(),
        },
    );
    let iwd = r
        .description
        .iwd
        .clone()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let user = if nix::unistd::geteuid().is_root() {
        match UnixUser::lookup(&r.owner) {
            Ok(u) => Some(u),
            Err(e) => return finish_failed(home, id, &e.to_string()),
        }
    } else {
        None
    };
    let (stdin, stdout, stderr) = match streams(&r).await {
        Ok(s) => s,
        Err(e) => return finish_failed(home, id, &format!("cannot open the job's files: {e}")),
    };
    let program = job_path(&r, &r.description.executable);
    let proc = UserProc {
        program,
        args: r.description.arguments.iter().map(Into::into).collect(),
        env: environment(&r, &iwd, &station),
        cwd: iwd,
        user,
        stdin,
        stdout,
        stderr,
    };
    let group: Option<GuestCgroup> = cg.and_then(|m| m.create(&cgroup_name(id)).ok());
    let mut child = match spawn::spawn(proc, group.as_ref()) {
        Ok(c) => c,
        Err(e) => return finish_failed(home, id, &e.to_string()),
    };
    let pid = child.id().unwrap_or(0);
    lock(running).insert(id, pid);
    tracing::info!(job = %id, pid, "local job started");
    let (home, running) = (home.clone(), running.clone());
    tokio::spawn(async move {
        let status = child.wait().await;
        lock(&running).remove(&id);
        if let Some(g) = &group {
            let _ = g.kill();
            let _ = g.remove();
        }
        let code = match status {
            Ok(s) => {
                use std::os::unix::process::ExitStatusExt;
                match (s.code(), s.signal()) {
                    (Some(c), _) => c,
                    (None, Some(sig)) => -sig,
                    _ => -1,
                }
            }
            Err(e) => {
                tracing::warn!(job = %id, error = %e, "cannot wait for local job");
                -1
            }
        };
        exited(&home, id, code);
    });
}

/// A local job that could not start: held, as a job that cannot start on
/// a host is in the end (code 6, `HoldReasonCode` of a failed start).
fn finish_failed(home: &Arc<Home>, id: JobId, why: &str) {
    tracing::warn!(job = %id, %why, "local job did not start");
    let at = now();
    let reason = format!("Error from local universe: {why}");
    let res = home.queue().transition(
        id,
        JobState::Held {
            reason: reason.clone(),
        },
        &reason,
        at,
    );
    if res.is_ok() {
        spawn_user_log(
            home,
            id,
            at,
            UserEvent::Held {
                reason,
                code: gleaner_proto::wire::hold_code::FAILED_TO_EXECUTE,
                subcode: 0,
            },
        );
    }
    home.news().notify_one();
}

/// The job's program exited with `code` (negative: a signal).
fn exited(home: &Arc<Home>, id: JobId, code: i32) {
    let at = now();
    let record = match home.queue().get(id) {
        Ok(Some(r)) if r.state == JobState::Running => r,
        // Removed or held meanwhile: already accounted.
        _ => return,
    };
    let detail = format!("exited locally with {code}");
    let (to, event) = match on_exit(&record, code, at) {
        OnExit::Complete => (
            JobState::Completed { exit_code: code },
            UserEvent::Terminated {
                exit_code: code,
                detail: String::new(),
            },
        ),
        OnExit::Hold(h) => (
            JobState::Held {
                reason: h.reason.clone(),
            },
            UserEvent::Held {
                reason: h.reason,
                code: gleaner_proto::wire::hold_code::JOB_POLICY,
                subcode: h.subcode,
            },
        ),
        OnExit::Requeue(why) => (
            JobState::Idle,
            UserEvent::Requeued {
                exit_code: code,
                reason: why,
            },
        ),
    };
    if let Err(e) = home.queue().transition_exited(id, to, &detail, at, None) {
        tracing::warn!(job = %id, error = %e, "cannot record a local job's end");
        return;
    }
    spawn_user_log(home, id, at, event);
    home.news().notify_one();
    home.dag_wake.notify_one();
}
