//! What the home's handlers share on top of the HTTP edge: job ids from
//! paths, job lookups, queue errors as responses.

use super::Home;
use crate::queue::{JobRecord, QueueError};
use gleaner_edge::ApiError;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::ErrorCode;

/// Parses a `{job}` path segment.
pub fn parse_job_id(s: &str) -> Result<JobId, ApiError> {
    s.parse()
        .map_err(|e: gleaner_proto::job::ParseJobIdError| ApiError::bad("job", e.to_string()))
}

/// The job `id`, or 404.
pub(crate) fn job_record(home: &Home, id: JobId) -> Result<JobRecord, ApiError> {
    home.queue()
        .get(id)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no such job {id}")))
}

/// The job `id` (or 404) and whether it holds a remote host now
/// ([`super::remote::RemoteJobs::is_remote`]): the placing phase is looked
/// at before the row is read, the one order that cannot miss a placement
/// accepted meanwhile.
pub(crate) fn remote_job_record(home: &Home, id: JobId) -> Result<(JobRecord, bool), ApiError> {
    let placing = home.remote.is_placing(id);
    let r = job_record(home, id)?;
    let remote = home.remote.is_remote(&r, placing);
    Ok((r, remote))
}

impl From<QueueError> for ApiError {
    fn from(e: QueueError) -> Self {
        match &e {
            QueueError::NotFound(_) => ApiError::new(ErrorCode::NotFound, e.to_string()),
            QueueError::IllegalTransition { .. } => {
                ApiError::new(ErrorCode::Conflict, e.to_string())
            }
            QueueError::Submit(_) | QueueError::EmptySubmission => {
                ApiError::bad("submission", e.to_string())
            }
            QueueError::Limit(l) => {
                ApiError::field(ErrorCode::Forbidden, l.setting(), l.to_string())
            }
            _ => {
                tracing::error!(error = %e, "job queue failure");
                ApiError::new(ErrorCode::Internal, "job queue failure")
            }
        }
    }
}
