//! A DAG submission: checked against its DAG file and stored as a running
//! DAG.

use super::api::{DagNodeSubmit, DagSubmitBody, DagSubmitResponse};
use super::store::{Status, time_sql};
use crate::queue::{JobQueue, QueueError};
use gleaner_core::dag::{NodeState, parse_dag};
use gleaner_core::time::Time;
use gleaner_edge::ApiError;
use gleaner_proto::wire::check_version;
use rusqlite::{TransactionBehavior, params};
use std::collections::BTreeMap;

/// Validates a submission and stores it as a running DAG, in one
/// transaction. Errors name the DAG file and line, or the node.
pub fn submit(
    q: &mut JobQueue,
    owner: &str,
    mut body: DagSubmitBody,
    at: Time,
) -> Result<DagSubmitResponse, ApiError> {
    check_version(body.protocol).map_err(ApiError::from)?;
    if !body.dag_file.starts_with('/') {
        return Err(ApiError::bad(
            "dag_file",
            format!("dag_file must be an absolute path, got {:?}", body.dag_file),
        ));
    }
    let mut dag = parse_dag(&body.dag_text).map_err(|errs| {
        let lines: Vec<String> = errs
            .0
            .iter()
            .map(|e| format!("{}:{}: {}", body.dag_file, e.line, e.kind))
            .collect();
        ApiError::bad("dag_text", lines.join("\n"))
    })?;
    let mut by_name: BTreeMap<String, DagNodeSubmit> = BTreeMap::new();
    for n in body.nodes.drain(..) {
        if dag.id(&n.name).is_none() {
            return Err(ApiError::bad(
                "nodes",
                format!("node {:?} is not in {}", n.name, body.dag_file),
            ));
        }
        if let Some(d) = &n.submit_dir
            && !d.starts_with('/')
        {
            return Err(ApiError::bad(
                "submit_dir",
                format!("node {}: submit_dir must be absolute, got {d:?}", n.name),
            ));
        }
        if by_name.contains_key(&n.name) {
            return Err(ApiError::bad(
                "nodes",
                format!("node {:?} given twice", n.name),
            ));
        }
        by_name.insert(n.name.clone(), n);
    }
    if let Some(missing) = dag.nodes().iter().find(|n| !by_name.contains_key(&n.name)) {
        return Err(ApiError::bad(
            "nodes",
            format!("no submit description for node {:?}", missing.name),
        ));
    }
    if dag.is_empty() {
        return Err(ApiError::bad(
            "dag_text",
            format!("{}: the DAG has no JOB lines", body.dag_file),
        ));
    }
    if let Some(r) = &body.rescue {
        dag.apply_rescue(r, body.rescue_retries)
            .map_err(|e| ApiError::bad("rescue", format!("rescue record: {e}")))?;
    }
    let now_sql = time_sql(at)?;
    let tx = q
        .conn_mut()
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(QueueError::from)?;
    tx.execute(
        "INSERT INTO dags (owner, dag_file, dag_text, state, submitted_at) \
         VALUES (?1, ?2, ?3, 'running', ?4)",
        params![owner, body.dag_file, body.dag_text, now_sql],
    )
    .map_err(QueueError::from)?;
    let id = tx.last_insert_rowid();
    let mut done = 0;
    for (i, node) in dag.nodes().iter().enumerate() {
        let Some(n) = by_name.get_mut(&node.name) else {
            continue;
        };
        // The owner is who the token says, never what the body claims.
        n.submission.owner = owner.to_string();
        let json = serde_json::to_string(&n.submission)
            .map_err(|e| ApiError::bad("nodes", format!("node {}: {e}", n.name)))?;
        let status = match dag.state(i) {
            Some(NodeState::Done) => {
                done += 1;
                Status::Done
            }
            Some(NodeState::Failed { .. }) => Status::Failed,
            _ => Status::Pending,
        };
        tx.execute(
            "INSERT INTO dag_nodes (dag, name, submission, submit_dir, status, failures) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                id,
                n.name,
                json,
                n.submit_dir,
                status.name(),
                dag.failures(i).unwrap_or(0)
            ],
        )
        .map_err(QueueError::from)?;
    }
    tx.commit().map_err(QueueError::from)?;
    // Acknowledged to its user: on disk before the answer.
    q.sync_now();
    Ok(DagSubmitResponse {
        id: u64::try_from(id).unwrap_or(0),
        nodes: dag.len(),
        done,
    })
}
