//! The error response of every daemon: an HTTP status and an
//! [`ErrorBody`] (`{"error": {"code", "message", "field"?}}`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gleaner_proto::wire::{ErrorBody, ErrorCode};

/// A request error: the JSON body and the status it goes out with (by
/// default the one its [`ErrorCode`] maps to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody::new(code, message).into()
    }

    /// An error about one request field.
    pub fn field(code: ErrorCode, field: &str, message: impl Into<String>) -> Self {
        ErrorBody::new(code, message).with_field(field).into()
    }

    /// A `bad_request` about one request field.
    pub fn bad(field: &str, message: impl Into<String>) -> Self {
        Self::field(ErrorCode::BadRequest, field, message)
    }

    /// An internal failure: logged here with its cause, answered with
    /// `what` only (the cause may name server paths).
    pub fn internal(what: &str, cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "{what}");
        Self::new(ErrorCode::Internal, what)
    }

    /// The same body with another status (e.g. 413 for a body too large).
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    pub fn code(&self) -> ErrorCode {
        self.body.error.code
    }

    pub fn message(&self) -> &str {
        &self.body.error.message
    }
}

impl From<ErrorBody> for ApiError {
    fn from(body: ErrorBody) -> Self {
        let status = StatusCode::from_u16(body.error.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError { status, body }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.body)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_follows_the_code() {
        assert_eq!(
            ApiError::new(ErrorCode::Conflict, "x").status,
            StatusCode::CONFLICT
        );
        let e = ApiError::bad("offset", "not a number");
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(e.body.error.field.as_deref(), Some("offset"));
        let e = e.with_status(StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(e.code(), ErrorCode::BadRequest);
    }
}
