//! Who a credential names: the one place where user and station names are
//! checked, for tokens, claims and the `glean token` command alike.

/// Longest user name: what Linux `useradd` accepts (`LOGIN_NAME_MAX` less
/// the terminating NUL would allow more, but 32 is the portable limit).
pub const MAX_USER_NAME: usize = 32;
/// Longest station name: a full DNS name (RFC 1035 §2.3.4).
pub const MAX_STATION_NAME: usize = 253;
/// Longest DNS label (RFC 1035 §2.3.4).
const MAX_LABEL: usize = 63;

/// Why a name was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} {name:?} is not valid: {why}")]
pub struct NameError {
    /// "user name" or "station name".
    pub what: &'static str,
    pub name: String,
    pub why: &'static str,
}

/// Checks a user name as Unix systems allow it (shadow-utils' default
/// `NAME_REGEX`): `[a-z_][a-z0-9_-]*[$]?`, at most 32 characters. A token
/// for user NAME acts as the Unix account NAME, so anything an account
/// could not be called is refused here.
pub fn check_user_name(name: &str) -> Result<(), NameError> {
    let err = |why| NameError {
        what: "user name",
        name: name.to_string(),
        why,
    };
    if name.is_empty() {
        return Err(err("empty"));
    }
    if name.len() > MAX_USER_NAME {
        return Err(err("longer than 32 characters"));
    }
    let body = name.strip_suffix('$').unwrap_or(name);
    let mut chars = body.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() || c == '_' => {}
        _ => return Err(err("must start with a lowercase letter or '_'")),
    }
    if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
        return Err(err(
            "only lowercase letters, digits, '_' and '-' are allowed (and a final '$')",
        ));
    }
    Ok(())
}

/// Checks a station name: a DNS-like name of at most 253 characters, dot-
/// separated labels of 1–63 letters, digits, '-' or '_', no label starting
/// or ending with '-'. ('_' is not valid in host names, but appears in
/// machine names in practice and is harmless in an identifier.)
pub fn check_station_name(name: &str) -> Result<(), NameError> {
    let err = |why| NameError {
        what: "station name",
        name: name.to_string(),
        why,
    };
    if name.is_empty() {
        return Err(err("empty"));
    }
    if name.len() > MAX_STATION_NAME {
        return Err(err("longer than 253 characters"));
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(err("empty label (leading, trailing or double '.')"));
        }
        if label.len() > MAX_LABEL {
            return Err(err("a label is longer than 63 characters"));
        }
        if !label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(err(
                "only letters, digits, '-', '_' and '.' between labels are allowed",
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(err("a label starts or ends with '-'"));
        }
    }
    Ok(())
}

/// Checks an opaque identifier (token id, claim nonce): 1–`max` ASCII
/// letters, digits, '-' or '_'.
pub(crate) fn check_id(id: &str, max: usize) -> Result<(), &'static str> {
    if id.is_empty() {
        return Err("empty");
    }
    if id.len() > max {
        return Err("too long");
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err("only letters, digits, '-' and '_' are allowed");
    }
    Ok(())
}
