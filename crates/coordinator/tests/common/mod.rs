//! What the coordinator's HTTP tests share.

use gleaner_core::detector::OwnerState;
use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{Demand, GuestInfo, StationAd};

/// A station's ad: `cpus`, `idle` jobs of its own, and a guest per
/// `(job, home)`.
pub fn ad(
    name: &str,
    state: OwnerState,
    cpus: u32,
    idle: u32,
    guests: &[(JobId, &str)],
) -> StationAd {
    StationAd {
        protocol: 1,
        name: name.into(),
        address: format!("http://{name}:9618"),
        state,
        cpus,
        memory_mb: 1024,
        disk_free_kb: 1 << 20,
        arch: "X86_64".into(),
        opsys: "LINUX".into(),
        speed: 1.0,
        running_guests: guests
            .iter()
            .map(|(job, home)| GuestInfo {
                job: *job,
                home: (*home).into(),
                owner: "u".into(),
                since: Time::from_secs(1),
                suspended: false,
                concurrency_limits: Vec::new(),
                class: None,
            })
            .collect(),
        attrs: Default::default(),
        demand: Demand {
            idle_jobs: idle,
            remote_jobs: 0,
        },
        policy: Default::default(),
        classes: Vec::new(),
        submit_only: false,
        execute_only: false,
        sequence: 0,
        sent_at: Time::from_secs(1),
        claims_used: Vec::new(),
        claims_held: Vec::new(),
        summary: None,
    }
}
