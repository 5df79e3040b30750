//! Request bodies: read errors and JSON that name what is wrong.

use crate::ApiError;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use gleaner_proto::wire::ErrorCode;

/// Maps a body-extraction failure (over the server's body limit, or
/// truncated) to a `bad_request` about the field `body`. Handlers take the
/// body as `Result<Bytes, BytesRejection>` and pass it through here, so the
/// client gets the JSON error body instead of axum's plain text.
pub fn body_bytes(r: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    r.map_err(|e| {
        let what = if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            "request body is too large"
        } else {
            "cannot read request body"
        };
        ApiError::bad("body", format!("{what}: {e}"))
    })
}

/// Parses a JSON body into `T`; on failure the error names the offending
/// field when serde does (else `body`).
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        let msg = e.to_string();
        // serde names the field as `name` in backquotes; surface it.
        let field = msg
            .split('`')
            .nth(1)
            .filter(|_| msg.contains("field"))
            .unwrap_or("body")
            .to_string();
        ApiError::bad(&field, format!("invalid JSON body: {msg}"))
    })
}

/// The fallback handler: 404 with the JSON error body.
pub async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such endpoint")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Req {
        offset: u64,
        name: String,
    }

    #[test]
    fn json_errors_name_the_field() {
        let e = parse_json::<Req>(br#"{"offset": 1}"#).unwrap_err();
        assert_eq!(e.body.error.field.as_deref(), Some("name"));
        assert!(e.message().contains("invalid JSON body"), "{}", e.message());
        let e = parse_json::<Req>(b"{nope").unwrap_err();
        assert_eq!(e.body.error.field.as_deref(), Some("body"));
        assert!(parse_json::<Req>(br#"{"offset": 1, "name": "a"}"#).is_ok());
    }
}
