//! Claim reuse (issue 15, item 3), the host's side: as HTCondor's schedd
//! runs its next job on a claim it already holds, a home that placed a job
//! here with a claim may place its next job of the same class on it as
//! soon as this one completes, without a new grant.
//!
//! The claim stays what it was: signed for this host and that home, with
//! its expiry. What reuse adds is kept here, per claim:
//!
//! - each placement under a claim carries a sequence number
//!   ([`PlacementRequest::claim_seq`]): 0 for the first, which spends the
//!   claim as before (`claims.rs`), then exactly one more than the last one
//!   accepted. A replayed placement (an old number) starts nothing;
//! - one job at a time: a placement is taken only while the claim is idle,
//!   its last job completed;
//! - until the claim's own expiry: after it, no more placements, and the
//!   node goes back to the coordinator at the end of the job (the claim's
//!   lifetime is its worklife, HTCondor's `CLAIM_WORKLIFE`);
//! - only after a completion: a guest that is vacated, evicted, held or
//!   fails to start ends its claim;
//! - idle for at most [`IDLE_FOR`]: a home that has nothing more to place
//!   gives the claim back at once (`POST /v1/claims/release`); one that
//!   went silent loses it after that time.
//!
//! - none on a drained host: once the coordinator's reply says an
//!   administrator drained it ([`HeldClaims::set_drained`]), idle claims
//!   end, running ones end with their guest, and no reuse is taken (the
//!   coordinator calls the idle ones back too, but a claim whose guest was
//!   running then would otherwise carry its home's next job).
//!
//! Nothing here is kept on disk: after a restart the host holds no claim,
//! and every reuse is refused (the home then waits for a grant).
//!
//! The station's ad names every claim held ([`StationAd::claims_held`]),
//! with its guest or idle: the coordinator counts each as a node held by
//! its home, exactly as a guest, and may preempt it; the home then gives
//! the claim up and vacates whatever runs on it.
//!
//! [`PlacementRequest::claim_seq`]: gleaner_proto::wire::PlacementRequest::claim_seq
//! [`StationAd::claims_held`]: gleaner_proto::wire::StationAd::claims_held

use gleaner_proto::guest_key::GuestKey;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::HeldClaim;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How long a claim waits idle for its home's next job.
pub(crate) const IDLE_FOR: Duration = Duration::from_secs(2);

struct Held {
    home: String,
    /// UNIX seconds: no placement under the claim after it.
    expires_at: u64,
    /// The last placement accepted under it.
    seq: u64,
    /// The job placed last.
    job: JobId,
    /// Its program is not over yet.
    running: bool,
    /// Given up by its home: no more placements; it ends with its guest.
    retired: bool,
    /// Counts idle spells, so that a timer knows whether its spell is over.
    spell: u64,
    /// The last job's resources and licences: the claim keeps them while
    /// idle (the next job is of the same class).
    cpus: u32,
    memory_mb: u64,
    concurrency_limits: Vec<String>,
}

impl Held {
    /// Whether `g` is the guest placed on it last (its home's job: a job
    /// id alone could be another home's).
    fn placed_last(&self, g: &GuestKey) -> bool {
        self.home == g.home && self.job == g.job
    }
}

/// What the host knows of a placement under a claim.
pub(crate) struct Placed<'a> {
    pub(crate) nonce: &'a str,
    /// The guest placed: its home (the claim's) and its job.
    pub(crate) guest: &'a GuestKey,
    pub(crate) cpus: u32,
    pub(crate) memory_mb: u64,
    pub(crate) concurrency_limits: &'a [String],
}

/// The claims this host holds for reuse, by nonce.
#[derive(Default)]
pub(crate) struct HeldClaims {
    map: Mutex<HashMap<String, Held>>,
    /// The coordinator said this host is drained.
    drained: AtomicBool,
}

fn now_secs() -> u64 {
    crate::clock::now_secs()
}

impl HeldClaims {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Held>> {
        // Each change is whole: a poisoned map is consistent.
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// May `home` place its placement number `seq` under the claim
    /// `nonce` now? `Err` says why not (a refusal of the claim).
    pub(crate) fn check_reuse(&self, nonce: &str, home: &str, seq: u64) -> Result<(), String> {
        let map = self.lock();
        if self.drained.load(Ordering::SeqCst) {
            return Err("this station is drained by its administrator".into());
        }
        let Some(h) = map.get(nonce) else {
            return Err("this claim is not held here for another job".into());
        };
        if h.home != home {
            return Err("the claim is held for another home".into());
        }
        if h.retired {
            return Err("the claim was given up".into());
        }
        if h.running {
            return Err(format!("the claim's job {} still runs", h.job));
        }
        if seq != h.seq.saturating_add(1) {
            // A replay, or a placement from the past.
            return Err(format!(
                "placement {seq} under this claim is not fresh (the next is {})",
                h.seq.saturating_add(1)
            ));
        }
        if now_secs() >= h.expires_at {
            return Err("the claim has expired".into());
        }
        Ok(())
    }

    /// The first placement under a claim was accepted (the claim is
    /// spent): it is held from now on, with `p.job` on it.
    pub(crate) fn hold(&self, p: &Placed<'_>, expires_at: u64) {
        self.lock().insert(
            p.nonce.to_string(),
            Held {
                home: p.guest.home.clone(),
                expires_at,
                seq: 0,
                job: p.guest.job,
                running: true,
                retired: self.drained.load(Ordering::SeqCst),
                spell: 0,
                cpus: p.cpus,
                memory_mb: p.memory_mb,
                concurrency_limits: p.concurrency_limits.to_vec(),
            },
        );
    }

    /// Placement `seq` under the claim was accepted
    /// ([`HeldClaims::check_reuse`] passed under the same guest lock).
    pub(crate) fn reuse(&self, p: &Placed<'_>, seq: u64) {
        if let Some(h) = self.lock().get_mut(p.nonce)
            && h.home == p.guest.home
        {
            h.seq = seq;
            h.job = p.guest.job;
            h.running = true;
            h.cpus = p.cpus;
            h.memory_mb = p.memory_mb;
            h.concurrency_limits = p.concurrency_limits.to_vec();
        }
    }

    /// The guest `g`, placed with the claim `nonce`, completed: the claim
    /// waits for its home's next job. `Some(spell)` when it does (for the idle
    /// timer, [`HeldClaims::idle_over`]); `None` when it ends instead
    /// (given up, expired, or not held).
    pub(crate) fn completed(&self, nonce: &str, g: &GuestKey) -> Option<u64> {
        let mut map = self.lock();
        let h = map.get_mut(nonce)?;
        if !h.placed_last(g) || !h.running {
            return None;
        }
        if h.retired || now_secs() >= h.expires_at || self.drained.load(Ordering::SeqCst) {
            map.remove(nonce);
            return None;
        }
        h.running = false;
        h.spell += 1;
        Some(h.spell)
    }

    /// The guest `g` is gone. True when the claim `nonce` ended with it (it
    /// did not complete, or was given up): its node is free. A claim idle
    /// since the completion, or running the next job, stays.
    pub(crate) fn guest_gone(&self, nonce: &str, g: &GuestKey) -> bool {
        let mut map = self.lock();
        match map.get(nonce) {
            Some(h) if h.placed_last(g) && h.running => {
                map.remove(nonce);
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// The idle spell `spell` of the claim is over: if it is still idle
    /// in that spell, it ends (true: its node is free).
    pub(crate) fn idle_over(&self, nonce: &str, spell: u64) -> bool {
        let mut map = self.lock();
        if map
            .get(nonce)
            .is_some_and(|h| !h.running && h.spell == spell)
        {
            map.remove(nonce);
            return true;
        }
        false
    }

    /// The home gives the claim up. `Ok(true)`: it was idle and ended
    /// now (its node is free); `Ok(false)`: it ends with the guest on it.
    /// `Err`: not held here for `home`.
    pub(crate) fn release(&self, nonce: &str, home: &str) -> Result<bool, String> {
        let mut map = self.lock();
        let Some(h) = map.get_mut(nonce) else {
            return Err("this claim is not held here".into());
        };
        if h.home != home {
            return Err("the claim is held for another home".into());
        }
        if h.running {
            h.retired = true;
            return Ok(false);
        }
        map.remove(nonce);
        Ok(true)
    }

    /// What the coordinator's latest reply says of a drain. When it
    /// begins, every idle claim ends and every running one is given up
    /// (it ends with its guest); returns whether an idle claim ended (its
    /// node is free).
    pub(crate) fn set_drained(&self, on: bool) -> bool {
        let mut map = self.lock();
        let was = self.drained.swap(on, Ordering::SeqCst);
        if !on || was {
            return false;
        }
        let before = map.len();
        map.retain(|_, h| h.running);
        for h in map.values_mut() {
            h.retired = true;
        }
        map.len() < before
    }

    /// The claims held, for the ad; `except` (a claim being reused right
    /// now) left out.
    pub(crate) fn listing(&self, except: Option<&str>) -> Vec<HeldClaim> {
        let mut v: Vec<HeldClaim> = self
            .lock()
            .iter()
            .filter(|(n, _)| except != Some(n.as_str()))
            .map(|(n, h)| HeldClaim {
                claim: n.clone(),
                home: h.home.clone(),
                job: h.job,
                running: h.running,
                concurrency_limits: h.concurrency_limits.clone(),
            })
            .collect();
        v.sort_by(|a, b| a.claim.cmp(&b.claim));
        v
    }

    /// CPUs and memory the idle claims keep (`except` left out).
    pub(crate) fn idle_resources(&self, except: Option<&str>) -> (u32, u64) {
        self.lock()
            .iter()
            .filter(|(n, h)| !h.running && except != Some(n.as_str()))
            .fold((0, 0), |(c, m), (_, h)| {
                (c.saturating_add(h.cpus), m.saturating_add(h.memory_mb))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(home: &str, job: &str) -> GuestKey {
        GuestKey::new(home, job.parse().unwrap())
    }

    fn placed<'a>(nonce: &'a str, guest: &'a GuestKey) -> Placed<'a> {
        Placed {
            nonce,
            guest,
            cpus: 1,
            memory_mb: 0,
            concurrency_limits: &[],
        }
    }

    #[test]
    fn a_claim_takes_one_job_at_a_time_each_placement_fresh() {
        let h = HeldClaims::default();
        let far = now_secs() + 600;
        h.hold(&placed("n1", &key("a", "1.0")), far);
        // Its job runs: nothing else goes on it.
        assert!(
            h.check_reuse("n1", "a", 1)
                .unwrap_err()
                .contains("still runs")
        );
        let spell = h.completed("n1", &key("a", "1.0")).unwrap();
        assert_eq!(h.idle_resources(None), (1, 0));
        // Another home, an old or skipped number, an unknown claim: refused.
        assert!(h.check_reuse("n1", "b", 1).is_err());
        assert!(
            h.check_reuse("n1", "a", 0)
                .unwrap_err()
                .contains("not fresh")
        );
        assert!(
            h.check_reuse("n1", "a", 2)
                .unwrap_err()
                .contains("not fresh")
        );
        assert!(h.check_reuse("n2", "a", 1).is_err());
        h.check_reuse("n1", "a", 1).unwrap();
        h.reuse(&placed("n1", &key("a", "1.1")), 1);
        // A replay of placement 1 is refused from now on.
        assert!(h.check_reuse("n1", "a", 1).is_err());
        // The timer of the old idle spell does not end the busy claim.
        assert!(!h.idle_over("n1", spell));
        // The old job's guest going away leaves the claim to the new one.
        assert!(!h.guest_gone("n1", &key("a", "1.0")));
        let l = h.listing(None);
        assert_eq!(
            (l.len(), l[0].running, l[0].job),
            (1, true, "1.1".parse().unwrap())
        );
    }

    #[test]
    fn a_claim_ends_unless_its_job_completed_and_its_home_kept_it() {
        let h = HeldClaims::default();
        let far = now_secs() + 600;
        // Evicted (gone without completing): the claim ends.
        h.hold(&placed("n1", &key("a", "1.0")), far);
        assert!(h.guest_gone("n1", &key("a", "1.0")));
        assert!(h.listing(None).is_empty());
        // Given up while running: no reuse, it ends with its guest.
        h.hold(&placed("n2", &key("a", "2.0")), far);
        assert_eq!(
            h.release("n2", "b").unwrap_err(),
            "the claim is held for another home"
        );
        assert_eq!(h.release("n2", "a"), Ok(false));
        assert_eq!(h.completed("n2", &key("a", "2.0")), None);
        assert!(h.listing(None).is_empty());
        // Idle, given up: ends at once; idle too long: ends.
        h.hold(&placed("n3", &key("a", "3.0")), far);
        let s = h.completed("n3", &key("a", "3.0")).unwrap();
        assert!(h.idle_over("n3", s));
        h.hold(&placed("n4", &key("a", "4.0")), far);
        h.completed("n4", &key("a", "4.0")).unwrap();
        assert_eq!(h.release("n4", "a"), Ok(true));
        // Expired: its job's completion ends it.
        h.hold(&placed("n5", &key("a", "5.0")), now_secs());
        assert_eq!(h.completed("n5", &key("a", "5.0")), None);
        assert!(h.listing(None).is_empty());
    }

    #[test]
    fn a_drained_host_keeps_no_claim_for_a_next_job() {
        let h = HeldClaims::default();
        let far = now_secs() + 600;
        h.hold(&placed("idle", &key("a", "1.0")), far);
        h.completed("idle", &key("a", "1.0")).unwrap();
        h.hold(&placed("busy", &key("a", "2.0")), far);
        // The drain ends the idle claim at once (its node is free)...
        assert!(h.set_drained(true));
        assert!(!h.set_drained(true), "only a new drain ends claims");
        assert_eq!(h.listing(None).len(), 1);
        assert!(
            h.check_reuse("idle", "a", 1)
                .unwrap_err()
                .contains("drained")
        );
        // ...the running one ends with its guest, even a completed one.
        assert_eq!(h.completed("busy", &key("a", "2.0")), None);
        assert!(h.listing(None).is_empty());
        // A placement granted before the drain holds no reusable claim.
        h.hold(&placed("late", &key("a", "3.0")), far);
        assert_eq!(h.completed("late", &key("a", "3.0")), None);
        // After the drain, claims are kept again.
        assert!(!h.set_drained(false));
        h.hold(&placed("after", &key("a", "4.0")), far);
        assert!(h.completed("after", &key("a", "4.0")).is_some());
        h.check_reuse("after", "a", 1).unwrap();
    }

    #[test]
    fn a_claim_knows_its_guest_by_home_and_job() {
        let h = HeldClaims::default();
        let far = now_secs() + 600;
        // Two homes' claims on this host, each with its home's job 1.12.
        h.hold(&placed("na", &key("a", "1.12")), far);
        h.hold(&placed("nb", &key("b", "1.12")), far);
        // b's job completing or leaving says nothing of a's claim.
        assert_eq!(h.completed("na", &key("b", "1.12")), None);
        assert!(!h.guest_gone("na", &key("b", "1.12")));
        assert_eq!(h.listing(None).iter().filter(|c| c.running).count(), 2);
        // Each claim ends with its own guest only.
        assert!(h.completed("nb", &key("b", "1.12")).is_some());
        assert!(h.guest_gone("na", &key("a", "1.12")));
        let l = h.listing(None);
        assert_eq!(
            l.iter()
                .map(|c| (c.claim.as_str(), c.running))
                .collect::<Vec<_>>(),
            [("nb", false)]
        );
        // A reuse that names another home changes nothing.
        h.reuse(&placed("nb", &key("a", "1.13")), 1);
        assert_eq!(h.listing(None)[0].job, "1.12".parse().unwrap());
    }
}
