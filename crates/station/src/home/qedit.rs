//! `POST /v1/jobs/{id}/edit`: `condor_qedit` — set attributes of queued
//! jobs (`CLUSTER.PROC`, or every job of `CLUSTER`).
//!
//! Who may: the jobs' owner or an administrator, checked on every target
//! job before the body is parsed; one foreign job refuses the whole edit.
//! What may change, as HTCondor's schedd decides it:
//!
//! - immutable attributes (`Owner`, `ClusterId`, `ProcId`, `JobUniverse`,
//!   `MyType`, `TargetType`, `User`, `OsUser`) and secure ones (the
//!   credentials' `x509…`, `AuthToken…`) never;
//! - attributes the station keeps itself (`JobStatus`, `QDate`,
//!   `HoldReason`, `NumJobStarts`, …) and those whose change would need a
//!   new submission (the executable, arguments, environment, files and
//!   their transfer, accounting group, deferral and cron times): refused
//!   as protected;
//! - `JobPrio`, `Requirements`, `Rank`, `RequestCpus`, `RequestMemory`,
//!   `RequestDisk`, `RequestGpus`, `JobBatchName`, `JobMaxRetries`: the
//!   description's own fields, checked as the submit language checks them;
//! - any other attribute: a job attribute of its own (`+Attr`), which the
//!   job's policy expressions (`PeriodicRelease`, …) and `-af`/
//!   `-constraint` then see.
//!
//! Values are ClassAd expressions. Jobs that finished are not edited; a
//! running job keeps its current run and uses the new values from its
//! next. All target jobs change in one transaction or none does.

use super::Home;
use crate::queue::{JobRecord, QueueError};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Extension, Json, Router};
use gleaner_classad::{Expr, Literal, parse_expr};
use gleaner_edge::{ApiError, Caller, body_bytes, may_act_on, parse_json};
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::wire::ErrorCode;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Most attributes one edit sets.
pub const MAX_EDIT_ATTRS: usize = 64;
/// Longest attribute name.
const MAX_NAME: usize = 100;
/// Longest value (expression text).
const MAX_VALUE: usize = 8 * 1024;

/// `POST /v1/jobs/{id}/edit`'s body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    /// (attribute, ClassAd expression) pairs, applied in order.
    pub attrs: Vec<(String, String)>,
    /// Check only: change nothing (`condor_qedit -dry-run`).
    #[serde(default)]
    pub dry_run: bool,
}

/// The answer: the jobs edited (or that would be).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditResponse {
    pub jobs: Vec<JobId>,
}

pub(crate) fn router() -> Router<Arc<Home>> {
    Router::new().route("/v1/jobs/{id}/edit", post(edit))
}

/// How an attribute may be edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protection {
    /// Never (HTCondor's immutable attributes).
    Immutable,
    /// Never (credentials).
    Secure,
    /// Kept by the station or fixed at submit.
    Protected,
    /// A description field or a job attribute of its own.
    Editable,
}

impl Protection {
    fn word(self) -> &'static str {
        match self {
            Protection::Immutable => "immutable",
            Protection::Secure => "secure",
            Protection::Protected => "protected",
            Protection::Editable => "normal",
        }
    }
}

const IMMUTABLE: &[&str] = &[
    "Owner",
    "ClusterId",
    "ProcId",
    "JobUniverse",
    "MyType",
    "TargetType",
    "User",
    "OsUser",
];

const SECURE_PREFIXES: &[&str] = &["x509", "AuthToken"];

const PROTECTED: &[&str] = &[
    // The station's own record of the job.
    "JobStatus",
    "QDate",
    "EnteredCurrentStatus",
    "NumJobStarts",
    "JobStartDate",
    "JobCurrentStartDate",
    "CompletionDate",
    "RemoteHost",
    "LastRemoteHost",
    "HoldReason",
    "HoldReasonCode",
    "HoldReasonSubCode",
    "ExitBySignal",
    "ExitCode",
    "ExitSignal",
    "NumCkpts",
    "NumStartFailures",
    "NumJobCompletions",
    "TotalSubmitProcs",
    "MachineCount",
    "MinHosts",
    "MaxHosts",
    "GlobalJobId",
    // What the submission fixed: what runs, with which files, as whom.
    "Cmd",
    "Args",
    "Arguments",
    "Environment",
    "Env",
    "Iwd",
    "In",
    "Out",
    "Err",
    "UserLog",
    "TransferInput",
    "TransferOutput",
    "TransferCheckpoint",
    "TransferExecutable",
    "ShouldTransferFiles",
    "WhenToTransferOutput",
    "AcctGroup",
    "AcctGroupUser",
    "AccountingGroup",
    "NiceUser",
    "ConcurrencyLimits",
    "SuccessCheckpointExitCode",
    "DeferralTime",
    "DeferralWindow",
    "DeferralPrepTime",
    "CronMinute",
    "CronHour",
    "CronDayOfMonth",
    "CronMonth",
    "CronDayOfWeek",
    "CronPrepTime",
    "CronWindow",
    "KillSig",
    "RemoveKillSig",
    "HoldKillSig",
    "JobLeaseDuration",
];

/// How `name` may be edited (names compare without case).
pub fn protection(name: &str) -> Protection {
    let is = |list: &[&str]| list.iter().any(|a| a.eq_ignore_ascii_case(name));
    if is(IMMUTABLE) {
        return Protection::Immutable;
    }
    let lower = name.to_ascii_lowercase();
    if SECURE_PREFIXES
        .iter()
        .any(|p| lower.starts_with(&p.to_ascii_lowercase()))
    {
        return Protection::Secure;
    }
    if is(PROTECTED) {
        return Protection::Protected;
    }
    Protection::Editable
}

/// Why an edit is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("Update of {} attribute \"{name}\" is not allowed.", .kind.word())]
    NotAllowed { name: String, kind: Protection },
    #[error("invalid attribute name {0:?}")]
    BadName(String),
    #[error("{name}: invalid expression {value:?}: {why}")]
    BadValue {
        name: String,
        value: String,
        why: String,
    },
}

fn literal_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(Literal::Int(i)) => Some(*i),
        // `-3` is written as a negation.
        Expr::Unary(gleaner_classad::UnOp::Neg, inner) => literal_int(inner).map(|i| -i),
        _ => None,
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= MAX_NAME
        && matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Applies one `name = value` edit to `d`.
pub fn apply(d: &mut JobDescription, name: &str, value: &str) -> Result<(), EditError> {
    if !valid_name(name) {
        return Err(EditError::BadName(name.to_string()));
    }
    let kind = protection(name);
    if kind != Protection::Editable {
        return Err(EditError::NotAllowed {
            name: name.to_string(),
            kind,
        });
    }
    let bad = |why: &str| EditError::BadValue {
        name: name.to_string(),
        value: value.to_string(),
        why: why.to_string(),
    };
    if value.len() > MAX_VALUE || value.contains('\0') {
        return Err(bad("too long, or holds a NUL byte"));
    }
    let expr = parse_expr(value).map_err(|e| bad(&e.to_string()))?;
    let int = |min: i64, max: i64| match literal_int(&expr) {
        Some(i) if (min..=max).contains(&i) => Ok(i),
        _ => Err(bad(&format!("must be a whole number from {min} to {max}"))),
    };
    match name.to_ascii_lowercase().as_str() {
        "jobprio" => d.priority = int(-1_000_000, 1_000_000)? as i32,
        "requirements" => d.requirements = Some(value.trim().to_string()),
        "rank" => d.rank = Some(value.trim().to_string()),
        "requestcpus" => d.request_cpus = int(1, 1024)? as u32,
        "requestgpus" => d.request_gpus = int(0, 64)? as u32,
        "requestmemory" => d.request_memory_mb = Some(int(0, i64::from(u32::MAX))? as u64),
        "requestdisk" => d.request_disk_kb = Some(int(0, i64::MAX)? as u64),
        "jobmaxretries" => d.max_retries = Some(int(0, 1_000_000)? as u32),
        "jobbatchname" => match expr {
            Expr::Lit(Literal::Str(s)) => d.batch_name = Some(s),
            _ => return Err(bad("must be a string")),
        },
        _ => {
            // A job attribute of its own: replaces one of any case.
            let existing = d
                .custom_attrs
                .keys()
                .find(|k| k.eq_ignore_ascii_case(name))
                .cloned();
            let key = existing.unwrap_or_else(|| name.to_string());
            d.custom_attrs.insert(key, value.trim().to_string());
        }
    }
    Ok(())
}

async fn edit(
    State(home): State<Arc<Home>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    raw: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<EditResponse>, ApiError> {
    // Who is asking, for which jobs, before anything of the body is read.
    let jobs = super::user::target_jobs(&home, &id)?;
    if let Some(j) = jobs.iter().find(|j| !may_act_on(&caller, &j.owner)) {
        tracing::warn!(user = %caller.name, job = %j.id, owner = %j.owner, "refused edit of another user's job");
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("job {} belongs to {}", j.id, j.owner),
        ));
    }
    let jobs: Vec<JobRecord> = jobs
        .into_iter()
        .filter(|j| !j.state.is_terminal())
        .collect();
    if jobs.is_empty() {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("no job of {id} is in the queue any more"),
        ));
    }
    let raw = body_bytes(raw)?;
    let req: EditRequest = parse_json(&raw)?;
    if req.attrs.is_empty() {
        return Err(ApiError::bad("attrs", "no attribute to set"));
    }
    if req.attrs.len() > MAX_EDIT_ATTRS {
        return Err(ApiError::bad(
            "attrs",
            format!("at most {MAX_EDIT_ATTRS} attributes per edit"),
        ));
    }
    let mut edits = Vec::with_capacity(jobs.len());
    for j in &jobs {
        let mut d = j.description.clone();
        for (name, value) in &req.attrs {
            apply(&mut d, name, value).map_err(|e| match e {
                EditError::NotAllowed { .. } => ApiError::new(ErrorCode::Forbidden, e.to_string()),
                _ => ApiError::bad("attrs", e.to_string()),
            })?;
        }
        edits.push((j.id, d));
    }
    let ids: Vec<JobId> = edits.iter().map(|(id, _)| *id).collect();
    if req.dry_run {
        return Ok(Json(EditResponse { jobs: ids }));
    }
    home.queue()
        .replace_descriptions(&edits)
        .map_err(|e| match e {
            QueueError::NotFound(j) => ApiError::new(
                ErrorCode::Conflict,
                format!("job {j} left the queue while it was being edited"),
            ),
            other => other.into(),
        })?;
    // The queue stored each edited job's new class key with it; the class
    // cache is by key, so nothing cached goes stale.
    let names: Vec<&str> = req.attrs.iter().map(|(n, _)| n.as_str()).collect();
    tracing::info!(user = %caller.name, jobs = ids.len(), attrs = ?names, "jobs edited");
    home.news.notify_one();
    Ok(Json(EditResponse { jobs: ids }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc() -> JobDescription {
        JobDescription::new("alice", "/bin/true")
    }

    #[test]
    fn protected_attributes_are_refused() {
        let mut d = desc();
        for (name, kind) in [
            ("Owner", Protection::Immutable),
            ("clusterid", Protection::Immutable),
            ("x509userproxy", Protection::Secure),
            ("JobStatus", Protection::Protected),
            ("Cmd", Protection::Protected),
            ("AcctGroup", Protection::Protected),
        ] {
            let e = apply(&mut d, name, "1").unwrap_err();
            assert_eq!(
                e,
                EditError::NotAllowed {
                    name: name.into(),
                    kind
                }
            );
        }
        assert_eq!(
            apply(&mut d, "Owner", "\"bob\"").unwrap_err().to_string(),
            "Update of immutable attribute \"Owner\" is not allowed."
        );
        assert_eq!(d, desc());
    }

    #[test]
    fn fields_and_own_attributes() {
        let mut d = desc();
        apply(&mut d, "JobPrio", "10").unwrap();
        apply(&mut d, "RequestMemory", "2048").unwrap();
        apply(&mut d, "requirements", "Memory > 4096").unwrap();
        apply(&mut d, "JobBatchName", "\"nightly\"").unwrap();
        apply(&mut d, "PeriodicRelease", "NumJobStarts < 3").unwrap();
        apply(&mut d, "JobPrio", "-5").unwrap();
        assert_eq!(d.priority, -5);
        assert_eq!(d.request_memory_mb, Some(2048));
        assert_eq!(d.requirements.as_deref(), Some("Memory > 4096"));
        assert_eq!(d.batch_name.as_deref(), Some("nightly"));
        assert_eq!(
            d.custom_attrs.get("PeriodicRelease").map(String::as_str),
            Some("NumJobStarts < 3")
        );
        // Same attribute, other case: replaced, not doubled.
        apply(&mut d, "periodicrelease", "false").unwrap();
        assert_eq!(d.custom_attrs.len(), 1);
    }

    #[test]
    fn bad_values_and_names() {
        let mut d = desc();
        assert!(matches!(
            apply(&mut d, "RequestCpus", "0"),
            Err(EditError::BadValue { .. })
        ));
        assert!(matches!(
            apply(&mut d, "RequestMemory", "MemoryUsage * 2"),
            Err(EditError::BadValue { .. })
        ));
        assert!(matches!(
            apply(&mut d, "Foo", "1 +"),
            Err(EditError::BadValue { .. })
        ));
        assert!(matches!(
            apply(&mut d, "JobBatchName", "3"),
            Err(EditError::BadValue { .. })
        ));
        for name in ["", "1abc", "a-b", "a.b", &"x".repeat(200)] {
            assert!(matches!(
                apply(&mut d, name, "1"),
                Err(EditError::BadName(_))
            ));
        }
        assert_eq!(d, desc());
    }
}
