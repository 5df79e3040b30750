//! The manager in the daemon: its loop and the `/v1/dags` endpoints.

use super::api::{DagRmResponse, DagState, DagStatus, DagSubmitBody, DagSubmitResponse};
use super::remove::{recover, remove};
use super::status::{status, status_one};
use super::store::load_dag;
use super::store::{RescueFile, record_rescue};
use super::submit::submit;
use super::tick::tick;
use crate::clock::now;
use crate::home::Home;
use crate::home::as_owner::{as_owner, io_error};
use crate::home::private;
use crate::home::schedd::spawn_vacate;
use crate::home::submit_check::{Strictness, check_paths, expand};
use crate::home::user_log::{UserEvent, spawn_user_log};
use crate::userfs::Op;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gleaner_edge::{ApiError, Caller, body_bytes, may_act_on, parse_json};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::ErrorCode;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often the manager looks at its DAGs.
const PASS_PERIOD: Duration = Duration::from_millis(300);

/// Last resort for rescue files: the daemon's own state (private).
fn rescue_dir(home: &Home) -> PathBuf {
    home.config.state_dir.join("dags")
}

/// Writes a rescue file as the DAG's owner: beside the DAG file, else in
/// the owner's home directory; only if neither works (or the owner has no
/// account) in the daemon's state directory. Records and returns where.
async fn write_rescue(home: &Home, rf: &RescueFile) -> Option<String> {
    let text = rf.text.clone();
    let beside = rf.path.clone();
    let fallback = rf.fallback_name();
    let written = as_owner(&rf.owner, move |u| {
        let mut tried = Vec::new();
        for path in [beside, u.user().home.join(&fallback)] {
            let res = u.create_truncate(&path, 0o644).and_then(|mut f| {
                f.write_all(text.as_bytes())
                    .map_err(|e| io_error(Op::Write, &path, &u.user().name, e))
            });
            match res {
                Ok(()) => return Ok(Ok(path)),
                Err(e) => tried.push(e.to_string()),
            }
        }
        Ok(Err(tried.join("; ")))
    })
    .await;
    let path = match written {
        Ok(Ok(p)) => p,
        other => {
            let why = match other {
                Ok(Err(tried)) => tried,
                Err(e) => e.to_string(),
                Ok(Ok(_)) => String::new(),
            };
            let p = rescue_dir(home).join(rf.fallback_name());
            tracing::warn!(dag = rf.dag, owner = %rf.owner, %why, fallback = %p.display(), "cannot write the rescue file as its owner");
            if let Err(e) = private::create_dir(&rescue_dir(home))
                .and_then(|()| private::write(&p, rf.text.as_bytes()))
            {
                tracing::error!(dag = rf.dag, path = %p.display(), error = %e, "cannot write rescue file");
                return None;
            }
            p
        }
    };
    let path = path.display().to_string();
    if let Err(e) = record_rescue(&mut home.queue(), rf.dag, &path) {
        tracing::error!(dag = rf.dag, error = %e, "cannot record the rescue file");
    }
    Some(path)
}

/// The manager's loop: a pass every [`PASS_PERIOD`] while a DAG runs, until
/// shutdown. With no DAG running it sleeps until one is submitted: a home
/// whose jobs run elsewhere should not wake a few times a second for
/// nothing (its CPU time is what Mutka's leverage divides by).
pub(crate) async fn run_loop(home: Arc<Home>, mut shutdown: watch::Receiver<bool>) {
    let orphans = recover(&mut home.queue(), now());
    match orphans {
        Ok(jobs) => after_removal(&home, &jobs, "removed with its DAG"),
        Err(e) => tracing::error!(error = %e, "DAG manager recovery failed"),
    }
    loop {
        let at = now();
        let result = tick(&mut home.queue(), at);
        let mut idle = false;
        match result {
            Ok(r) => {
                idle = r.running == 0 && r.submitted.is_empty();
                for (_, _, jobs) in &r.submitted {
                    for id in jobs {
                        let host = home.address.clone();
                        spawn_user_log(&home, *id, at, UserEvent::Submitted { host });
                    }
                }
                for rf in &r.rescues {
                    write_rescue(&home, rf).await;
                }
                if !r.submitted.is_empty() {
                    home.news.notify_one();
                }
            }
            Err(e) => tracing::error!(error = %e, "DAG manager pass failed"),
        }
        if idle {
            tokio::select! {
                _ = home.dag_wake.notified() => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        } else {
            tokio::select! {
                _ = tokio::time::sleep(PASS_PERIOD) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }
}

fn after_removal(home: &Arc<Home>, jobs: &[(JobId, bool)], why: &str) {
    let at = now();
    for &(id, remote) in jobs {
        spawn_user_log(
            home,
            id,
            at,
            UserEvent::Aborted {
                reason: why.to_string(),
            },
        );
        if remote {
            spawn_vacate(home, id, why);
        }
    }
    if !jobs.is_empty() {
        home.news.notify_one();
    }
}

pub(crate) fn router() -> Router<Arc<Home>> {
    Router::new()
        .route("/v1/dags", post(submit_handler).get(list_handler))
        .route("/v1/dags/{id}", get(detail_handler))
        .route("/v1/dags/{id}/rm", post(rm_handler))
}

fn parse_dag_id(s: &str) -> Result<u64, ApiError> {
    s.parse()
        .map_err(|_| ApiError::bad("dag", format!("invalid DAG id {s:?}: expected a number")))
}

async fn submit_handler(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<DagSubmitResponse>, ApiError> {
    if !home.config.role.submits() {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "this station is execute-only and accepts no submissions",
        ));
    }
    let raw = body_bytes(raw)?;
    let req: DagSubmitBody = parse_json(&raw)?;
    // The DAG's jobs run as the caller's account (never root), and their
    // paths are checked as it now; missing files may be a parent's outputs.
    let fs = home.submitter(&caller)?;
    for n in &req.nodes {
        let descs = expand(&n.submission, 0, &caller.name, n.submit_dir.as_deref())
            .map_err(|e| ApiError::bad("nodes", format!("node {}: {e}", n.name)))?;
        check_paths(
            &fs,
            &descs,
            Strictness::MissingAllowed,
            &format!("node {}", n.name),
        )
        .await?;
    }
    let resp = submit(&mut home.queue(), &caller.name, req, now())?;
    home.dag_wake.notify_one();
    tracing::info!(owner = %caller.name, dag = resp.id, nodes = resp.nodes, "DAG submitted");
    Ok(Json(resp))
}

async fn list_handler(
    State(home): State<Arc<Home>>,
    q: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<DagStatus>>, ApiError> {
    let q = q
        .map(|Query(m)| m)
        .map_err(|e| ApiError::bad("query", e.to_string()))?;
    let owner = q.get("owner").filter(|o| !o.is_empty());
    Ok(Json(status(&mut home.queue(), owner.map(String::as_str))?))
}

async fn detail_handler(
    State(home): State<Arc<Home>>,
    Path(id): Path<String>,
) -> Result<Json<DagStatus>, ApiError> {
    let id = parse_dag_id(&id)?;
    status_one(&mut home.queue(), id)?
        .map(Json)
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such DAG {id}")))
}

async fn rm_handler(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<DagRmResponse>, ApiError> {
    let id = parse_dag_id(&id)?;
    let (jobs, rescue) = {
        let mut q = home.queue();
        let row = load_dag(&mut q, id)?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such DAG {id}")))?;
        if !may_act_on(&caller, &row.owner) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("DAG {id} belongs to {}", row.owner),
            ));
        }
        if row.state != DagState::Running {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("DAG {id} is {}, not running", row.state.name()),
            ));
        }
        remove(&mut q, id, &caller.name, now())?
    };
    let rescue = match rescue {
        Some(rf) => write_rescue(&home, &rf).await,
        None => None,
    };
    after_removal(
        &home,
        &jobs,
        &format!("removed with DAG {id} by {}", caller.name),
    );
    tracing::info!(user = %caller.name, dag = id, jobs = jobs.len(), "DAG removed");
    Ok(Json(DagRmResponse {
        id,
        removed_jobs: jobs.into_iter().map(|(j, _)| j).collect(),
        rescue_file: rescue,
    }))
}
