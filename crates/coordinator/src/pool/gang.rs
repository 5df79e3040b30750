//! Gang placement for parallel jobs (`machine_count = k`): a home's class
//! of gang members is granted all the nodes one of its jobs needs in one
//! step, or nothing (never a partial gang holding nodes while it waits for
//! the rest). Which nodes is `gleaner_core::gang` (LL-k: k idle nodes;
//! reconfiguration: the shape's floor of the idle count, at least
//! `gang_min`; Ryu & Hollingsworth §5, seeds/002_34f613b0a80e1e58.txt
//! L286), the same code the simulator's LL-k study runs. Each member goes
//! to its own host, among the free hosts the class fits, best σ first.
//! Every member node is held by the home as any guest's: Up-Down charges
//! it to the home station from the hosts' ads.

use super::Pool;
use super::effects::{Message, Outbox};
use gleaner_core::alloc::StationId;
use gleaner_core::dmw::Pass;
use gleaner_core::gang::NodeView;
use gleaner_core::time::Time;
use gleaner_proto::fit;
use gleaner_proto::wire::{GangNode, Grant};

/// The free hosts a gang may use, as the gang policy sees them: each an
/// idle node (a free host's owner is away), numbered in the order given.
pub(crate) fn node_views(hosts: usize) -> Vec<NodeView> {
    (0..hosts)
        .map(|i| NodeView {
            id: u32::try_from(i).unwrap_or(u32::MAX),
            idle: true,
            utilisation: 0.0,
            busy: false,
        })
        .collect()
}

/// How many whole gangs of a class still wait for a grant: the class's
/// idle members (`count`; a home advertises only the members of gangs
/// whose members are all idle) make `count / k` jobs, less the gangs
/// granted and not yet seen placed (`pending` claims). Each such gang took
/// at least `fewest` nodes, so at most `pending / fewest` gangs are
/// pending: counting that many never grants a job twice (a reconfigured
/// gang of fewer than k nodes leaves no stray members to grant).
pub(crate) fn gangs_left(count: u32, pending: u32, k: u32, fewest: u32) -> u32 {
    (count / k.max(1)).saturating_sub(pending / fewest.max(1))
}

impl Pool {
    /// Whole gangs of `job`'s class (a gang class) still waiting.
    fn gangs_waiting(&self, home: StationId, job: &fit::JobView) -> u32 {
        let Some(g) = job.class.gang else { return 0 };
        let left = self.class_left(home, job);
        let pending = job.class.count.saturating_sub(left);
        gangs_left(job.class.count, pending, g.machine_count, g.fewest())
    }

    /// Whether `home` has a gang class with a whole gang waiting.
    pub(super) fn has_gangs(&self, home: StationId) -> bool {
        self.stations
            .get(&home)
            .is_some_and(|k| k.jobs.iter().any(|j| self.gangs_waiting(home, j) > 0))
    }

    /// Grants `to` the nodes of one of its waiting gangs (queue order), all
    /// in one grant; false when no gang can start now (and nothing was
    /// granted).
    pub(super) fn place_gang(
        &mut self,
        to: StationId,
        pass: Pass,
        now: Time,
        out: &mut Outbox,
    ) -> bool {
        let Some(k) = self.stations.get(&to) else {
            return false;
        };
        let book = self.licence_book();
        let unix = Self::unix(now);
        // The free hosts, best σ first (`host_order`).
        let order: Vec<StationId> = self.free_order.iter().map(|(_, h)| h).collect();
        let mut chosen = None;
        for job in &k.jobs {
            let Some(gang) = job.class.gang else { continue };
            if self.gangs_waiting(to, job) == 0 || self.waits_for_grace(job, &book, now) {
                continue;
            }
            // One member per host: the hosts this class fits now.
            let fitting: Vec<StationId> = order
                .iter()
                .filter_map(|&h| {
                    let c = self.candidate(h, pass, now)?;
                    (self.partition_allows(h, Some(&job.class.owner))
                        && fit::fits(job, &c.fit, &book, unix))
                    .then_some(h)
                })
                .collect();
            let Some(p) = gang.policy().place(&node_views(fitting.len())) else {
                tracing::debug!(
                    to = self.name(to),
                    class = %job.class.key,
                    fitting = fitting.len(),
                    needs = gang.fewest(),
                    "gang waits: too few free hosts fit"
                );
                continue;
            };
            let hosts: Vec<StationId> = p
                .nodes
                .iter()
                .filter_map(|&i| fitting.get(i as usize).copied())
                .collect();
            chosen = Some((job.class.key.clone(), job.class.licences(), hosts));
            break;
        }
        let Some((class, licences, hosts)) = chosen else {
            return false;
        };
        let mut members = Vec::with_capacity(hosts.len());
        for &h in &hosts {
            match self.mint_claim(h, to, Some(class.clone()), licences.clone(), now) {
                Ok(m) => members.push(GangNode {
                    host: self.name(h).to_string(),
                    host_address: self
                        .stations
                        .get(&h)
                        .map(|k| k.ad.address.clone())
                        .unwrap_or_default(),
                    claim_id: m.id,
                    nonce: Some(m.nonce),
                }),
                Err(e) => {
                    // All or nothing: the claims minted so far are void.
                    tracing::error!(host = self.name(h), error = %e, "cannot mint a gang member's claim; gang not granted");
                    let void: Vec<String> =
                        members.iter().filter_map(|m| m.nonce.clone()).collect();
                    self.void_claims(&void);
                    return false;
                }
            }
        }
        out.persist_claims |= !licences.is_empty();
        for &h in &hosts {
            self.embargoes
                .entry(h)
                .or_default()
                .on_grant(now, self.timing.embargo);
        }
        tracing::info!(to = self.name(to), %class, members = members.len(), "gang granted");
        let Some(first) = members.first().cloned() else {
            return false;
        };
        out.messages.push(Message::Grant {
            to: self.name(to).to_string(),
            grant: Grant {
                host: first.host,
                host_address: first.host_address,
                claim_id: first.claim_id,
                class: Some(class),
                nonce: first.nonce,
                gang: members,
            },
        });
        true
    }

    /// Whether enough hosts of `hosts` could ever take the gang of `job`
    /// for it to count as demand (a gang larger than the pool is no
    /// demand: Up-Down must not preempt for it).
    pub(super) fn gang_could_fit(
        &self,
        job: &fit::JobView,
        hosts: &[crate::matchmaker::Candidate<'_>],
        book: &fit::LicenceBook,
        unix: i64,
    ) -> bool {
        match job.class.gang {
            None => true,
            Some(g) => {
                let n = hosts
                    .iter()
                    .filter(|h| fit::could_fit(job, &h.fit, book, unix))
                    .count();
                u32::try_from(n).unwrap_or(u32::MAX) >= g.fewest()
            }
        }
    }
}
