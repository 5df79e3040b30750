//! Claim reuse (issue 15, item 3), the home's side: as HTCondor's schedd
//! does, a home that holds a claim starts its next job of the claim's class
//! on it as soon as the last one completes, without a new grant.
//!
//! The home keeps each claim it placed with ([`ClaimBook`]): the host, the
//! class the coordinator matched it for, the number of its last placement
//! and the job on it. When that job completes ([`after_completion`]), the
//! first idle job of the same class that may go to that host is placed on
//! the claim at once, with the next placement number (the host takes each
//! number once: `host::starter::held_claims`). With none, the claim goes
//! back to its host (`POST /v1/claims/release`), which frees the node and
//! tells the coordinator. Any other end of the job (evicted, held, failed
//! start) ends the claim on both sides.
//!
//! Up-Down stays the arbiter: the host's ad names the claim as a node this
//! home holds, running or idle, and the coordinator preempts it like any
//! guest. A preemption of a claim ([`retire`]) gives it up for good:
//! whatever job runs on it now is vacated (also one whose placement is in
//! flight: it is vacated once accepted) and the host lets the node go.
//! And the claim's own expiry bounds its life: after it the host takes no
//! more placements under it, and the node goes back to the coordinator.

use super::Home;
use super::schedd::{self, Target};
use gleaner_proto::job::JobId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// One claim this home placed with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) host: String,
    pub(crate) host_address: String,
    pub(crate) claim_id: String,
    pub(crate) nonce: String,
    /// The job class key it was matched for (`None`: any job).
    pub(crate) class: Option<String>,
    /// The number of its last placement.
    pub(crate) seq: u64,
    /// The job on it: being placed, or running.
    pub(crate) job: Option<JobId>,
    /// Preempted: no more placements; what runs on it is vacated.
    pub(crate) retired: bool,
}

/// The claims of this home's remote jobs, by nonce.
#[derive(Default)]
pub struct ClaimBook {
    map: Mutex<HashMap<String, Held>>,
}

impl ClaimBook {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Held>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `job` was accepted under the claim of `t` (placement `t.seq`).
    /// False when the claim was retired meanwhile: the caller vacates it.
    pub(crate) fn placed(&self, t: &Target, job: JobId) -> bool {
        let Some(nonce) = &t.nonce else { return true };
        let mut map = self.lock();
        let h = map.entry(nonce.clone()).or_insert_with(|| Held {
            host: t.host.clone(),
            host_address: t.host_address.clone(),
            claim_id: t.claim_id.clone(),
            nonce: nonce.clone(),
            class: t.class.clone(),
            seq: t.seq,
            job: Some(job),
            retired: false,
        });
        h.seq = h.seq.max(t.seq);
        h.job = Some(job);
        !h.retired
    }

    /// The placement under claim `nonce` was refused or failed: the claim
    /// is over here (the host ends it too).
    pub(crate) fn failed(&self, nonce: &str) -> Option<Held> {
        self.lock().remove(nonce)
    }

    /// `job` completed: its claim, unless retired, waits for the next job
    /// (returned with the job taken off it); a retired one is dropped.
    fn completed(&self, job: JobId) -> Option<Held> {
        let mut map = self.lock();
        let nonce = map.values().find(|h| h.job == Some(job))?.nonce.clone();
        let h = map.get_mut(&nonce)?;
        h.job = None;
        if h.retired {
            map.remove(&nonce);
            return None;
        }
        Some(h.clone())
    }

    /// `job` left its host without completing: its claim ended there.
    pub(crate) fn ended(&self, job: JobId) {
        self.lock().retain(|_, h| h.job != Some(job));
    }

    /// The coordinator preempts the claim `nonce` (or the one `job` runs
    /// on): it is retired and returned, to be released and its job
    /// vacated.
    fn retire(&self, nonce: Option<&str>, job: Option<JobId>) -> Option<Held> {
        let mut map = self.lock();
        let h = match nonce {
            Some(n) => map.get_mut(n)?,
            None => map.values_mut().find(|h| job.is_some() && h.job == job)?,
        };
        h.retired = true;
        let out = h.clone();
        if out.job.is_none() {
            map.remove(&out.nonce);
        }
        Some(out)
    }

    /// Claims held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `job` completed on its host: the next job of its claim's class goes on
/// the claim now, or the claim goes back. True when the claim is taken
/// care of here (the coordinator hears of it when the claim goes back).
pub(crate) fn after_completion(home: &Arc<Home>, job: JobId) -> bool {
    let Some(h) = home.claims.completed(job) else {
        return false;
    };
    let home = home.clone();
    tokio::spawn(async move { next_on(&home, h).await });
    true
}

/// Places the next job of `h`'s class on it, or gives it back.
async fn next_on(home: &Arc<Home>, h: Held) {
    let target = Target {
        host: h.host.clone(),
        host_address: h.host_address.clone(),
        claim_id: h.claim_id.clone(),
        nonce: Some(h.nonce.clone()),
        class: h.class.clone(),
        seq: h.seq.saturating_add(1),
    };
    if schedd::place(home, &target).await {
        return;
    }
    // No job for it, or the host refused: the node goes back.
    home.claims.failed(&h.nonce);
    release(home, &h).await;
}

/// `job` left its host without completing (evicted, held, failed start):
/// the host ended its claim.
pub(crate) fn after_departure(home: &Home, job: JobId) {
    home.claims.ended(job);
}

/// The coordinator preempts a node this home holds by a claim: the claim
/// is given up, and the job on it (if any) vacated. False when no claim of
/// this home is meant (the caller vacates the job as before).
pub(crate) fn retire(home: &Arc<Home>, nonce: Option<&str>, job: Option<JobId>, why: &str) -> bool {
    let Some(h) = home.claims.retire(nonce, job) else {
        return false;
    };
    tracing::info!(host = %h.host, claim = %h.nonce, job = ?h.job, why, "held claim preempted: given up");
    if let Some(j) = h.job {
        schedd::spawn_vacate(home, j, why);
    }
    let home = home.clone();
    tokio::spawn(async move { release(&home, &h).await });
    true
}

/// Tells the host that this home gives the claim up (with the claim as the
/// credential): an idle claim ends at once, a busy one with its guest.
async fn release(home: &Home, h: &Held) {
    let url = format!("{}/v1/claims/release", h.host_address.trim_end_matches('/'));
    // The host's own name is checked on its certificate (TLS pools).
    let http = home.peers.station(&h.host);
    match http.post(&url).bearer_auth(&h.claim_id).send().await {
        Ok(r) if r.status().is_success() => {
            tracing::debug!(host = %h.host, claim = %h.nonce, "claim given back");
        }
        // Already ended there (expired, or its job left): nothing held.
        Ok(r) => tracing::debug!(host = %h.host, status = %r.status(), "claim release refused"),
        Err(e) => tracing::warn!(host = %h.host, error = %e, "claim release failed"),
    }
    // The node is free: the coordinator should hear this home's demand.
    home.news.notify_one();
}
