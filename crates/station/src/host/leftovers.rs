//! Guests a previous run of this station left behind. After a crash their
//! processes may still run, unsupervised: their jobs were requeued (by the
//! home at start, `home::recover`) or will be by their homes' leases, so a
//! survivor would only duplicate work and hold the owner's CPU.

use super::guest_records::{self, GuestRecords};
use crate::isolation::CgroupManager;
use std::path::Path;

/// Kills every leftover guest: those in guest cgroups (when there are
/// cgroups) and those named by the guest records (with or without).
pub fn kill_all(state_dir: &Path, cgroups: Option<&CgroupManager>) {
    if let Some(m) = cgroups {
        kill_leftover_groups(m);
    }
    GuestRecords::new(guest_records::dir(state_dir)).kill_leftovers();
}

/// Kills the processes left in guest cgroups and removes the groups.
/// Without cgroups such processes are found through their records instead
/// (guest_records.rs); returns how many groups were cleared.
pub fn kill_leftover_groups(cgroups: &CgroupManager) -> usize {
    let names = match cgroups.list() {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list guest cgroups left from a previous run");
            return 0;
        }
    };
    let mut n = 0;
    for name in names {
        let cleared = cgroups
            .open(&name)
            .and_then(|g| g.kill().and_then(|_| g.remove()));
        match cleared {
            Ok(()) => n += 1,
            Err(e) => tracing::warn!(guest = %name, error = %e, "cannot clear a leftover guest"),
        }
    }
    if n > 0 {
        tracing::info!(
            groups = n,
            "killed guests left by a previous run of this station"
        );
    }
    n
}
