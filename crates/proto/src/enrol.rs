//! Enrolment: the join token an administrator hands to a new station, and
//! the messages of `POST /v1/join` (issue 13; `docs/deploy.md`).
//!
//! A join token is `gleaner-join1.ID.SECRET.CAHASH`: the id of its record
//! in the coordinator's token registry, 128 random bits of secret (the
//! registry keeps only their SHA-256), and the SHA-256 of the pool CA's
//! certificate, which the joining station checks the CA it fetches against
//! before it trusts anything the network said (as kubeadm's discovery
//! hash). It is good for one join, as the station it names, until it
//! expires.

use serde::{Deserialize, Serialize};

/// The join token's leading word and version.
pub const JOIN_PREFIX: &str = "gleaner-join1";
/// Longest join request body, bytes (a CSR and a few addresses).
pub const MAX_JOIN_BODY: usize = 16 * 1024;

/// A parsed join token.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinToken {
    /// The registry id (32 hex digits).
    pub id: String,
    /// The secret (32 hex digits).
    pub secret: String,
    /// The pool CA's SHA-256, 64 hex digits.
    pub ca_sha256: String,
}

impl std::fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret in a log.
        f.debug_struct("JoinToken")
            .field("id", &self.id)
            .field("ca_sha256", &self.ca_sha256)
            .finish_non_exhaustive()
    }
}

fn hex_of_len(s: &str, n: usize) -> bool {
    s.len() == n
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl JoinToken {
    /// Parses `gleaner-join1.ID.SECRET.CAHASH`.
    pub fn parse(text: &str) -> Result<JoinToken, String> {
        let mut parts = text.trim().split('.');
        let (Some(prefix), Some(id), Some(secret), Some(ca), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(format!(
                "not a join token: expected {JOIN_PREFIX}.ID.SECRET.CAHASH \
                 (from `glean token create --station NAME`)"
            ));
        };
        if prefix != JOIN_PREFIX {
            return Err(format!(
                "not a join token: it does not start with {JOIN_PREFIX}."
            ));
        }
        if !hex_of_len(id, 32) || !hex_of_len(secret, 32) || !hex_of_len(ca, 64) {
            return Err("malformed join token (wrong length or not lower-case hex)".into());
        }
        Ok(JoinToken {
            id: id.into(),
            secret: secret.into(),
            ca_sha256: ca.into(),
        })
    }

    /// The CA pin as `sha256:HEX` (how fingerprints are printed).
    pub fn ca_fingerprint(&self) -> String {
        format!("sha256:{}", self.ca_sha256)
    }
}

impl std::fmt::Display for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{JOIN_PREFIX}.{}.{}.{}",
            self.id, self.secret, self.ca_sha256
        )
    }
}

/// `POST /v1/join` (bearer: the join token).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    pub protocol: u32,
    /// The station's name; must be the one the join token names.
    pub name: String,
    /// A PKCS#10 request for the station's key (PEM), self-signed.
    pub csr: String,
    /// Where the station is reached (IP addresses or DNS names, or URLs),
    /// written into its certificate beside `NAME.station.POOL`.
    #[serde(default)]
    pub addresses: Vec<String>,
}

/// The answer to a join: everything the station needs, nothing secret of
/// anyone else's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinReply {
    pub protocol: u32,
    /// The pool's name.
    pub pool: String,
    pub station: String,
    /// The station's certificate (PEM), signed by the pool CA.
    pub certificate: String,
    /// The pool CA (PEM).
    pub ca: String,
    /// The pool's public key (`pool.pub`'s text).
    pub public_key: String,
    /// The station's own long-lived station token.
    pub station_token: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_tokens_round_trip_and_bad_ones_say_why() {
        let t = JoinToken {
            id: "0".repeat(32),
            secret: "a".repeat(32),
            ca_sha256: "f".repeat(64),
        };
        assert_eq!(JoinToken::parse(&t.to_string()).unwrap(), t);
        assert!(!format!("{t:?}").contains(&"a".repeat(32)));
        assert!(
            JoinToken::parse("gleaner-join1.x.y")
                .unwrap_err()
                .contains("expected")
        );
        assert!(JoinToken::parse(&t.to_string().replace("join1", "join2")).is_err());
        assert!(JoinToken::parse(&t.to_string().to_uppercase()).is_err());
    }
}
