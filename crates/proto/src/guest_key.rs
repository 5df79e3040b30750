//! Which guest a host means: a job id names a job only at its home (every
//! home numbers its clusters from 1), so on a host, in an ad and at the
//! coordinator a guest is the pair (home station, job id). The home's name
//! is always the one its credential proves (the placement's caller, the
//! claim's home), never one a request body chooses.

use crate::job::JobId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A guest's identity on a host: its home station and its job there.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GuestKey {
    pub home: String,
    pub job: JobId,
}

impl GuestKey {
    pub fn new(home: impl Into<String>, job: JobId) -> Self {
        GuestKey {
            home: home.into(),
            job,
        }
    }
}

/// `job@home`, as logs and the dashboard show a guest.
impl fmt::Display for GuestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.job, self.home)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_job_ids_of_two_homes_are_two_guests() {
        let a = GuestKey::new("h1", JobId::new(1, 12));
        let b = GuestKey::new("h2", JobId::new(1, 12));
        assert_ne!(a, b);
        let set: std::collections::HashSet<_> = [a.clone(), b, a.clone()].into_iter().collect();
        assert_eq!(set.len(), 2);
        assert_eq!(a.to_string(), "1.12@h1");
    }
}
