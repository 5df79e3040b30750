//! Error types.

use thiserror::Error;

/// A syntax error, with the position of the offending input.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("parse error at line {line}, column {column} (byte {offset}): {message}")]
pub struct ParseError {
    /// Byte offset into the parsed text.
    pub offset: usize,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column (in characters) within the line.
    pub column: usize,
    /// What went wrong.
    pub message: String,
}

impl ParseError {
    pub(crate) fn at(src: &str, offset: usize, message: impl Into<String>) -> Self {
        let offset = offset.min(src.len());
        let mut line = 1;
        let mut line_start = 0;
        for (i, b) in src.as_bytes()[..offset].iter().enumerate() {
            if *b == b'\n' {
                line += 1;
                line_start = i + 1;
            }
        }
        let column = String::from_utf8_lossy(&src.as_bytes()[line_start..offset])
            .chars()
            .count()
            + 1;
        ParseError {
            offset,
            line,
            column,
            message: message.into(),
        }
    }

    /// Re-bases an error found in a slice starting at byte `base` of `full`.
    pub(crate) fn relocate(self, full: &str, base: usize) -> Self {
        ParseError::at(full, base + self.offset, self.message)
    }
}

/// Errors of the library entry points.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ClassAdError {
    /// The expression or ad text does not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The ad text parsed but is not a valid ad (e.g. an attribute defined with no name).
    #[error("invalid ad: {0}")]
    InvalidAd(String),
}
