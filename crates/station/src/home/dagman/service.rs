//! The DAG manager's endpoints (`/v1/dags`): submit (condor_submit_dag),
//! list, status, remove.

use super::api::{DagRmResponse, DagState, DagStatus, DagSubmitBody, DagSubmitResponse};
use super::nodes::{OwnerDagFs, create, dag_env, out_file, prepare_as, write_header};
use super::outputs;
use super::prepare::node_submission;
use super::remove::remove;
use super::status::{status, status_one};
use super::store::{self, Extras};
use crate::clock::now;
use crate::home::Home;
use crate::home::as_owner::as_owner;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gleaner_core::dag::load::{base_of, dir_of};
use gleaner_core::dag::run::{Run, SubmitExtras};
use gleaner_edge::{ApiError, Caller, body_bytes, may_act_on, parse_json};
use gleaner_proto::wire::{ErrorCode, check_version};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Most DAG files one submission names.
const MAX_FILES: usize = 64;

/// Most distinct node submissions checked when a DAG is submitted.
const MAX_CHECKED: usize = 2000;

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

/// Every node's submit description parsed now (retry 0), as the owner: a
/// broken one refuses the DAG before anything runs. A submit file not
/// there yet is allowed (a PRE script may write it).
async fn check_nodes(
    owner: &str,
    prepared: &super::prepare::Prepared,
    env: std::collections::BTreeMap<String, String>,
) -> Result<Vec<String>, ApiError> {
    let run = Run::new(prepared.spec.clone(), prepared.config.clone(), 1, now());
    let mut work = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, n) in prepared.spec.nodes.iter().enumerate() {
        if n.noop || n.done || n.join {
            continue;
        }
        let vars = run.submit_vars(i, &SubmitExtras::default());
        let key = format!("{:?}{:?}{:?}", n.submit, n.dir, vars);
        if seen.insert(key) && work.len() < MAX_CHECKED {
            work.push((n.clone(), vars));
        }
    }
    let o = owner.to_string();
    let res = as_owner(owner, move |u| {
        let mut fs = OwnerDagFs(u);
        let mut problems = Vec::new();
        let mut notes = Vec::new();
        for (n, vars) in &work {
            match node_submission(n, vars, &o, &env, &mut fs) {
                Ok(_) => {}
                Err(errs) if errs.len() == 1 && errs[0].contains("cannot read the submit file") => {
                    notes.push(format!(
                        "{} (it must exist when the node is submitted)",
                        errs[0]
                    ));
                }
                Err(errs) => problems.extend(errs),
            }
        }
        Ok((problems, notes))
    })
    .await
    .map_err(|e| ApiError::bad("files", e.to_string()))?;
    let (problems, notes) = res;
    if problems.is_empty() {
        Ok(notes)
    } else {
        Err(ApiError::bad(
            "nodes",
            format!("{}\nnothing was submitted", problems.join("\n")),
        ))
    }
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
    // Who is calling is known before the body is read.
    let _fs = home.submitter(&caller)?;
    let raw = body_bytes(raw)?;
    let req: DagSubmitBody = parse_json(&raw)?;
    check_version(req.protocol).map_err(ApiError::from)?;
    if !req.cwd.starts_with('/') {
        return Err(ApiError::bad(
            "cwd",
            format!("cwd must be an absolute path, got {:?}", req.cwd),
        ));
    }
    if req.files.is_empty() || req.files.len() > MAX_FILES {
        return Err(ApiError::bad(
            "files",
            format!("a DAG submission names 1 to {MAX_FILES} DAG files"),
        ));
    }
    let owner = caller.name.clone();
    let prepared = match prepare_as(
        &owner,
        req.files.clone(),
        req.cwd.clone(),
        req.options.clone(),
    )
    .await?
    {
        Ok(p) => p,
        Err(problems) => {
            return Err(ApiError::bad(
                "files",
                format!("{}\nnothing was submitted", problems.join("\n")),
            ));
        }
    };
    let env = dag_env(&prepared, &req.options, &req.env);
    let mut notes: Vec<String> = prepared.notes.clone();
    notes.extend(prepared.spec.warnings.iter().map(|w| w.to_string()));
    notes.extend(check_nodes(&owner, &prepared, env.clone()).await?);
    let primary = prepared.spec.files.first().cloned().unwrap_or_default();
    let out = out_file(&primary, &req.options);
    if let Err(e) = outputs::writable(&owner, &out).await {
        return Err(ApiError::bad(
            "files",
            format!(
                "cannot write {out}: {e}; DAGMan's files (dagman.out, the rescue DAG …) go \
                 beside the DAG file, or use -outfile_dir\nnothing was submitted"
            ),
        ));
    }
    if req.options.force {
        // -f: older rescue DAGs are set aside, not used later.
        for n in outputs::list(&owner, &dir_of(&primary)).await {
            if n.starts_with(&format!("{}.rescue", base_of(&primary))) && !n.ends_with(".old") {
                let p = format!("{}/{n}", dir_of(&primary));
                outputs::rename(&owner, &p, &format!("{p}.old")).await;
            }
        }
    }
    let extras = Extras {
        env,
        out_file: out_file(&primary, &req.options),
        submit: SubmitExtras {
            batch_name: req.options.batch_name.clone(),
            suppress_notification: req.options.suppress_notification.unwrap_or(false),
            ..Default::default()
        },
        rescue: prepared.rescue.clone(),
        options: req.options.clone(),
        dag_file: req.files.first().cloned().unwrap_or_default(),
        ..Default::default()
    };
    let at = now();
    let id = create(&home, &owner, &prepared, extras, at).map_err(ApiError::from)?;
    write_header(&owner, &out, id, &prepared, &notes, at).await;
    home.dag_wake.notify_one();
    let done = prepared.spec.nodes.iter().filter(|n| n.done).count();
    tracing::info!(%owner, dag = id, nodes = prepared.spec.nodes.len(), "DAG submitted");
    Ok(Json(DagSubmitResponse {
        id,
        nodes: prepared.spec.user_nodes().count(),
        done,
        rescue: prepared.rescue,
        notes,
        dagman_out: out,
    }))
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
    {
        let mut q = home.queue();
        let s = store::load(&mut q, id)?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such DAG {id}")))?;
        if !may_act_on(&caller, &s.owner) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("DAG {id} belongs to {}", s.owner),
            ));
        }
        if s.state != DagState::Running {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("DAG {id} is {}, not running", s.state.name()),
            ));
        }
        remove(&mut q, id, &caller.name)?;
    }
    home.dag_wake.notify_one();
    // The manager removes the node jobs and writes the rescue DAG; wait
    // for it (a few passes) to answer with what it did.
    let mut rescue = None;
    let mut removed = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        // Loaded with the queue's lock let go at once: the lines below
        // take it again (an `if let` would hold it through its block).
        let loaded = store::load(&mut home.queue(), id);
        if let Ok(Some(s)) = loaded
            && s.state != DagState::Running
        {
            rescue = s.rescue_file.clone();
            for n in &s.run.nodes {
                for c in &n.clusters {
                    if let Ok(jobs) = home.queue().jobs_of_clusters(&[*c]) {
                        removed.extend(
                            jobs.iter()
                                .filter(|j| {
                                    matches!(j.state, gleaner_proto::job::JobState::Removed)
                                })
                                .map(|j| j.id),
                        );
                    }
                }
            }
            break;
        }
    }
    tracing::info!(user = %caller.name, dag = id, "DAG removed");
    Ok(Json(DagRmResponse {
        id,
        removed_jobs: removed,
        rescue_file: rescue,
    }))
}
