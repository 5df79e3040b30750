//! The identity of one run of a job: which home, which job, which start,
//! and a random nonce.
//!
//! A job may run more than once (evicted, held and released, its lease
//! lost), and a host presumed dead may still be running an old run. The
//! home names each run when it places the job; the host carries the name
//! in every output chunk, file upload, checkpoint, status report and lease
//! renewal, and the home takes data only from the job's current run
//! (issue 14: a job's outputs are those of exactly one run). The nonce
//! makes names unique across restarts of either side, where the run
//! number alone repeats (a home that restarts before recording a start).
//!
//! On the wire a run is one string, `home/cluster.proc/rN/nonce`.

use crate::job::JobId;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Longest run id accepted on the wire (a home name is far shorter).
pub const MAX_RUN_ID_LEN: usize = 512;

/// One run of a job. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId {
    pub home: String,
    pub job: JobId,
    /// The start this run is (HTCondor's `NumJobStarts` after it began).
    pub run: u32,
    /// Random hex: tells apart runs whose other parts repeat.
    pub nonce: String,
}

/// A run id that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed run id {0:?}: expected home/cluster.proc/rN/nonce")]
pub struct ParseRunIdError(pub String);

impl RunId {
    /// A new run of `job` at `home`, the `run`th start, with a fresh
    /// random nonce (64 bits from the kernel).
    pub fn new(home: &str, job: JobId, run: u32) -> std::io::Result<RunId> {
        Ok(RunId {
            home: home.to_string(),
            job,
            run,
            nonce: crate::creds::random_hex(8)?,
        })
    }

    /// A name for this run in a file system: unique per run, one path
    /// component, only `[A-Za-z0-9._-]` (anything else in the home's name
    /// becomes `_`; the nonce keeps such names apart).
    pub fn dir_name(&self) -> String {
        let home: String = self
            .home
            .chars()
            .take(64)
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{home}-{}-r{}-{}", self.job, self.run, self.nonce)
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/r{}/{}", self.home, self.job, self.run, self.nonce)
    }
}

impl FromStr for RunId {
    type Err = ParseRunIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseRunIdError(s.chars().take(80).collect());
        if s.len() > MAX_RUN_ID_LEN {
            return Err(err());
        }
        // From the right: the home's name is whatever is left.
        let mut parts = s.rsplitn(4, '/');
        let nonce = parts.next().ok_or_else(err)?;
        let run = parts.next().ok_or_else(err)?;
        let job = parts.next().ok_or_else(err)?;
        let home = parts.next().ok_or_else(err)?;
        let hex = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit());
        let run = run
            .strip_prefix('r')
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse().ok())
            .ok_or_else(err)?;
        if home.is_empty() || !hex(nonce) {
            return Err(err());
        }
        Ok(RunId {
            home: home.to_string(),
            job: job.parse().map_err(|_| err())?,
            run,
            nonce: nonce.to_string(),
        })
    }
}

impl TryFrom<String> for RunId {
    type Error = ParseRunIdError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<RunId> for String {
    fn from(r: RunId) -> String {
        r.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_round_trip_and_differ() {
        let job: JobId = "1.4".parse().unwrap();
        let a = RunId::new("home a/x", job, 3).unwrap();
        let b = RunId::new("home a/x", job, 3).unwrap();
        assert_ne!(a, b, "fresh nonces");
        let back: RunId = a.to_string().parse().unwrap();
        assert_eq!(back, a);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<RunId>(&json).unwrap(), a);
        assert!(a.dir_name().starts_with("home_a_x-1.4-r3-"));
        assert!(!a.dir_name().contains('/'));
        for bad in [
            "",
            "a/1.4/r3",
            "a/1.4/3/ab",
            "a/x/r3/ab",
            "/1.4/r3/ab",
            "a/1.4/r3/zz",
        ] {
            assert!(bad.parse::<RunId>().is_err(), "{bad:?}");
        }
    }
}
