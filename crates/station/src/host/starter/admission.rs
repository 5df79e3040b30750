//! Does this placement fit this host now? The host asks the one typed fit
//! check of [`gleaner_proto::fit`], the one the coordinator's matchmaker
//! asked before it granted the claim, again with its own numbers of the
//! moment (HTCondor's startd re-evaluates `START` when a claim is
//! activated): the owner, the guests, free CPUs, memory and disk, the
//! owner's `[policy]` and the job's requirements. The refusal names the
//! first failing condition as the wire's reason and all of them in the
//! words of `glean q --analyze`.
//!
//! The ad checked is the ad the host advertises ([`Starter::current_ad`]),
//! so host and coordinator judge the same description.

use super::Starter;
use super::guests::GuestEntry;
use gleaner_core::detector::OwnerState;
use gleaner_proto::fit::{self, HostView, JobView, LicenceBook, Reject};
use gleaner_proto::guest_key::GuestKey;
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::matchmaking::machine_ad;
use gleaner_proto::requests::{self, Requests};
use gleaner_proto::submit::matchtime::substitute_in;
use gleaner_proto::wire::{GuestInfo, RejectReason, StationAd};
use std::collections::HashMap;
use std::sync::Arc;

impl Starter {
    /// This host's ad as it stands: the machine, the owner's state, the
    /// CPUs, memory and disk it offers, its guests and the owner's policy.
    /// The advertise loop sends it; placements are checked against it.
    pub fn current_ad(&self) -> StationAd {
        let now_unix = crate::clock::now_secs() as i64;
        let guests = self.lock_guests();
        let mut ad = self.ad_of(&guests, *self.owner.borrow(), now_unix, None);
        ad.claims_used = self.verifier.recently_spent();
        ad
    }

    /// [`Self::current_ad`] for the guest table `guests` (locked by the
    /// caller); `reusing`: a held claim being placed on right now, whose
    /// node counts as free.
    pub(super) fn ad_of(
        &self,
        guests: &HashMap<GuestKey, Arc<GuestEntry>>,
        owner: OwnerState,
        now_unix: i64,
        reusing: Option<&str>,
    ) -> StationAd {
        let c = &self.config;
        // A guest whose node went back to its claim is the claim's now.
        let live = || guests.values().filter(|g| !g.handed_back());
        let mut running: Vec<GuestInfo> = live().map(|g| g.listing().info).collect();
        running.sort_by(|a, b| (a.job, &a.home).cmp(&(b.job, &b.home)));
        let claims_held = self.held.listing(reusing);
        let idle = claims_held.iter().filter(|h| !h.running).count() as u32;
        let (idle_cpus, idle_mem) = self.held.idle_resources(reusing);
        let used_cpus: u32 = live().map(|g| g.cpus).sum::<u32>() + idle_cpus;
        let used_mem: u64 = live().map(|g| g.memory_mb).sum::<u64>() + idle_mem;
        // The coordinator counts one node per guest and per idle held
        // claim: offer the CPUs nothing uses plus one node for each of
        // those, and never more new guests than free slot accounts.
        let free = c.cpus.saturating_sub(used_cpus);
        let free = match self.free_slots() {
            Some(slots) => free.min(u32::try_from(slots).unwrap_or(u32::MAX)),
            None => free,
        };
        let mut ad = c.machine.clone();
        ad.state = owner;
        ad.cpus = free
            .saturating_add(running.len() as u32)
            .saturating_add(idle);
        ad.memory_mb = self.offered_memory_mb().saturating_sub(used_mem);
        ad.claims_held = claims_held;
        ad.disk_free_kb = crate::host::machine_ad::disk_free_kb(&c.execute_dir)
            .saturating_sub(c.reserved_disk_kb);
        ad.running_guests = running;
        ad.policy = c.guest_policy.to_ad(now_unix);
        ad.policy.windows = self.windows();
        // The GPUs, those no guest holds free (an owner's `[attrs]` of the
        // same names win, as for every built-in attribute).
        if !c.gpus.is_empty() {
            let taken: Vec<&String> = live().flat_map(|g| g.gpus.iter()).collect();
            let free: Vec<&str> = c
                .gpus
                .iter()
                .map(|g| g.id.as_str())
                .filter(|id| !taken.iter().any(|t| t.as_str() == *id))
                .collect();
            for (k, v) in gleaner_proto::gpus::machine_attrs(&c.gpus, &free) {
                if !c.machine.attrs.contains_key(&k) {
                    ad.attrs.insert(k, v);
                }
            }
        }
        ad
    }

    /// Settles the job's requests on this host: each written as an
    /// expression is evaluated against this host's machine ad now, and the
    /// description carries the amounts (its CPUs, memory and GPUs here,
    /// the cgroup's bounds); the expressions stay, for the destinations
    /// Linger-Longer asks about. `Err` names a request with no amount here.
    pub(super) fn settle_requests(&self, d: &mut JobDescription) -> Result<(), String> {
        if d.request_exprs.is_empty() {
            return Ok(());
        }
        let now_unix = crate::clock::now_secs() as i64;
        let machine = {
            let guests = self.lock_guests();
            machine_ad(&self.ad_of(&guests, *self.owner.borrow(), now_unix, None))
        };
        let job = JobView::of(d);
        let a = requests::amounts(Requests::of(d), &job.ad, &machine, now_unix)
            .map_err(|e| e.to_string())?;
        d.request_cpus = a.cpus;
        d.request_memory_mb = a.memory_mb;
        d.request_disk_kb = a.disk_kb;
        d.request_gpus = a.gpus;
        Ok(())
    }

    /// The GPUs to give `job` here now (`guests` locked by the caller): the
    /// first free ones its `require_gpus` accepts, as many as it asks for.
    /// `Err` is the refusal to send when there are too few.
    pub(super) fn choose_gpus(
        &self,
        guests: &HashMap<GuestKey, Arc<GuestEntry>>,
        job: &JobDescription,
        reusing: Option<&str>,
    ) -> Result<Vec<String>, (RejectReason, String)> {
        let need = job.request_gpus as usize;
        if need == 0 {
            return Ok(Vec::new());
        }
        let now_unix = crate::clock::now_secs() as i64;
        let machine = machine_ad(&self.ad_of(guests, *self.owner.borrow(), now_unix, reusing));
        let usable = gleaner_proto::gpus::usable(&JobView::of(job).ad, &machine, now_unix);
        if usable.len() < need {
            return Err(refusal(&[Reject::Gpus {
                need: job.request_gpus,
                usable: u32::try_from(usable.len()).unwrap_or(u32::MAX),
            }]));
        }
        Ok(usable.into_iter().take(need).collect())
    }

    /// Fills in the job's match-time values (`$$(attr)`,
    /// `$$(attr:default)`, `$$([expr])` in its arguments, environment and
    /// attributes) from this host's machine ad, as HTCondor does when a job
    /// is matched. `Err` names a value this host cannot give.
    pub(super) fn fill_match_time(&self, id: JobId, d: &mut JobDescription) -> Result<(), String> {
        let has = |s: &String| s.contains("$$(");
        if !(d.arguments.iter().any(has)
            || d.environment.values().any(has)
            || d.custom_attrs.values().any(has))
        {
            return Ok(());
        }
        let now_unix = crate::clock::now_secs() as i64;
        let machine = {
            let guests = self.lock_guests();
            machine_ad(&self.ad_of(&guests, *self.owner.borrow(), now_unix, None))
        };
        let job = gleaner_proto::job_ad::description_ad(id, d);
        let fill = |s: &mut String| -> Result<(), String> {
            *s = substitute_in(s, &job, &machine, now_unix)?;
            Ok(())
        };
        d.arguments.iter_mut().try_for_each(fill)?;
        d.environment.values_mut().try_for_each(fill)?;
        d.custom_attrs.values_mut().try_for_each(fill)?;
        Ok(())
    }

    /// The fit check of `job` here now (`guests` locked by the caller):
    /// `Err` is the refusal to send.
    pub(super) fn fit(
        &self,
        guests: &HashMap<GuestKey, Arc<GuestEntry>>,
        job: &JobDescription,
        reusing: Option<&str>,
    ) -> Result<(), (RejectReason, String)> {
        let now_unix = crate::clock::now_secs() as i64;
        let ad = self.ad_of(guests, *self.owner.borrow(), now_unix, reusing);
        admit(&ad, self.policy().lingers(), job, now_unix).map_err(|r| refusal(&r))
    }
}

/// Whether `job` fits the host whose current ad is `ad` at UNIX second
/// `now_unix` ([`fit::check`]; licences are the coordinator's to count).
/// A host whose eviction policy lingers takes guests while its owner is
/// active: Linger-Longer and Linger-Forever use "semi-available" nodes (Ryu
/// & Hollingsworth, seeds/002_34f613b0a80e1e58.txt L238), where the other
/// policies would evict the guest at once (Mutka 1988, seeds/
/// 000_14c1149197e96532.txt L583).
pub fn admit(
    ad: &StationAd,
    lingers: bool,
    job: &JobDescription,
    now_unix: i64,
) -> Result<(), Vec<Reject>> {
    let machine = machine_ad(ad);
    let mut host = HostView::of_ad(ad, &machine, 0, false);
    if lingers {
        host.state = OwnerState::Av;
    }
    fit::check(&JobView::of(job), &host, &LicenceBook::default(), now_unix)
}

/// The wire's reason (the first reject's) and every reject in words.
pub fn refusal(rejects: &[Reject]) -> (RejectReason, String) {
    let reason = rejects
        .first()
        .map_or(RejectReason::NoResources, Reject::placement_reason);
    (reason, fit::explain(rejects))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> StationAd {
        StationAd {
            cpus: 2,
            memory_mb: 1024,
            disk_free_kb: 1 << 20,
            ..crate::host::machine_ad::bare("h")
        }
    }

    #[test]
    fn a_lingering_host_takes_guests_while_its_owner_is_active() {
        let mut ad = host();
        ad.state = OwnerState::Na;
        let job = JobDescription::new("alice", "/bin/true");
        let r = admit(&ad, false, &job, 0).unwrap_err();
        assert_eq!(
            refusal(&r),
            (
                RejectReason::OwnerActive,
                "owner active (station NA)".to_string()
            )
        );
        assert_eq!(admit(&ad, true, &job, 0), Ok(()));
    }

    #[test]
    fn the_first_reject_is_the_reason_and_all_are_in_the_words() {
        let mut ad = host();
        ad.policy.deny_users = vec!["mallory".into()];
        let mut job = JobDescription::new("mallory", "/bin/true");
        job.request_memory_mb = Some(4096);
        let (reason, words) = refusal(&admit(&ad, false, &job, 0).unwrap_err());
        assert_eq!(reason, RejectReason::RequirementsUnmet);
        assert_eq!(
            words,
            "station policy does not admit user mallory; memory: needs 4096 MiB, 1024 MiB offered"
        );
    }
}
