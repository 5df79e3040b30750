//! The lease between a job's home and its host: the one message the two
//! sides of a station exchange about a running job besides the shadow's
//! transfers and status reports.
//!
//! The host's starter renews the lease every third of `lease_secs`
//! (`POST /v1/shadow/{job}/lease` at the home); a host that cannot reach
//! the home for the whole lease kills the guest, and a home that has not
//! heard from the host for the lease plus one renewal period requeues the
//! job (`home::lease`), so the old run is gone before a new one starts.

use serde::{Deserialize, Serialize};

/// Starter → home: "I still run this job".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRenewal {
    pub host: String,
    /// Base URL of the host (restores the home's table of remote jobs
    /// after a restart, so that it can vacate the job again).
    #[serde(default)]
    pub host_address: String,
    #[serde(default)]
    pub guest_id: String,
    /// The run renewed: the home answers 409 for any but the job's current
    /// run, and the host then kills it (absent: from an older host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<gleaner_proto::run::RunId>,
}
