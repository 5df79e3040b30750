//! The uncoordinated baseline: RStat's least-loaded placement
//! (Neeracher 1998 §4.2, L1098–1111).

use super::HostId;
use super::score::{HostLoad, HostSpec, Score};
use super::umpire::{by_sigma_desc, sanitize};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// A read-only view of a host for the uncoordinated baseline.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSnapshot {
    pub id: HostId,
    pub spec: HostSpec,
    pub load: Option<HostLoad>,
    pub dysfunctional: bool,
}

/// The uncoordinated "least loaded" placement of the distributed RStat
/// scheduler (L1105–1110), kept as a baseline.
///
/// Each scheduler calls this on its own, possibly stale, `snapshot`: it takes
/// the useful, measured, not dysfunctional host with the best σ (ties by id).
/// It applies the thresholds only when the scheduler already runs a job
/// (`own_running > 0`; with none it starts regardless of load, L1104). There
/// is no arbitration, no job limit and no embargo across schedulers, so
/// schedulers reading the same view all pick the same host: the host
/// contention of L1131–1133 and Fig. 7.15 (L2871–2873). A caller modelling
/// RStat's own-start embargo removes its embargoed hosts from `useful`.
pub fn uncoordinated_pick(
    snapshot: &[HostSnapshot],
    useful: &BTreeSet<HostId>,
    score: &Score,
    own_running: u32,
) -> Option<HostId> {
    let mut best: Option<(f64, HostId)> = None;
    for hs in snapshot {
        let Some(load) = hs.load else { continue };
        if hs.dysfunctional || !useful.contains(&hs.id) {
            continue;
        }
        if own_running > 0 && !score.acceptable(&hs.spec, &load) {
            continue;
        }
        let cand = (sanitize(score.sigma(&hs.spec, &load)), hs.id);
        if best.is_none_or(|b| by_sigma_desc(&cand, &b) == Ordering::Less) {
            best = Some(cand);
        }
    }
    best.map(|(_, h)| h)
}
