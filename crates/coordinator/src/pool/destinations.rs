//! Destinations for Linger-Longer: is there somewhere a guest could go?
//!
//! A host's eviction ladder migrates a lingering guest only to a free idle
//! node (Ryu & Hollingsworth, seeds/002_34f613b0a80e1e58.txt L85–93:
//! Linger-Longer migrates when the linger time is up *and* an idle node is
//! available). The host cannot see the pool, so the coordinator answers in
//! every advertise reply, per guest the host runs, whether a free AV node
//! that would take that guest exists now ([`Destination`]).
//!
//! What "would take" means is the fit check of `gleaner_proto::fit` in a
//! regular pass (embargo and guest limits hold), against every host but the
//! guest's own, with the guest's licence units counted as free (they move
//! with it). The guest's job is its class as the host reports it
//! ([`GuestInfo::class`]: requirements, resource requests, licences), so a
//! guest that needs 4 GiB or a licensed program is offered only a host that
//! would take it. A host too old to report the class is answered from the
//! guest's owner and licences alone. Only hosts with a free node are looked
//! at, and the guests' jobs are built only when there is one, once per
//! change of the host's ad, so a busy pool costs no ClassAd.

use super::Pool;
use super::claims::guest_licences;
use gleaner_core::alloc::StationId;
use gleaner_core::dmw::Pass;
use gleaner_core::time::Time;
use gleaner_proto::fit::{self, HostView, JobView, LicenceBook};
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::wire::{Destination, GuestInfo};

/// The job of a running guest: its class as its host reports it, else
/// what older hosts report (owner and licences). Its own host is skipped by
/// the caller, and a move is no reason to avoid any other.
fn guest_job(g: &GuestInfo) -> JobView {
    let class = match &g.class {
        Some(c) => JobClass {
            count: 1,
            avoid_hosts: Vec::new(),
            ..c.clone()
        },
        None => JobClass {
            owner: g.owner.clone(),
            request_cpus: 1,
            concurrency_limits: g.concurrency_limits.clone(),
            count: 1,
            ..JobClass::default()
        },
    };
    JobView::of_class(class)
}

/// `book` with `units` given back.
fn released(book: &LicenceBook, units: &[(String, u32)]) -> LicenceBook {
    let mut b = book.clone();
    for (name, n) in units {
        if let Some(v) = b.in_use.get_mut(name) {
            *v = v.saturating_sub(*n);
        }
    }
    b
}

impl Pool {
    /// For each guest of `host`, whether another host would take it now.
    pub(super) fn destinations(&self, host: StationId, now: Time) -> Vec<Destination> {
        let Some(k) = self.stations.get(&host) else {
            return Vec::new();
        };
        if k.ad.running_guests.is_empty() {
            return Vec::new();
        }
        // Somewhere to go: a free node on another host. Only then are the
        // licences counted and the guests' jobs built.
        let open = self.free_hosts.iter().any(|&h| h != host).then(|| {
            let jobs = k
                .guest_jobs
                .get_or_init(|| k.ad.running_guests.iter().map(guest_job).collect());
            (self.licence_book(), jobs)
        });
        k.ad.running_guests
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let available = open.as_ref().is_some_and(|(book, jobs)| {
                    jobs.get(i).is_some_and(|job| {
                        let units = guest_licences(g);
                        if units.is_empty() {
                            self.would_take(host, job, book, now)
                        } else {
                            self.would_take(host, job, &released(book, &units), now)
                        }
                    })
                });
                Destination {
                    job: g.job,
                    home: g.home.clone(),
                    available,
                }
            })
            .collect()
    }

    /// Whether a free node on a host other than `host` would take `job`.
    fn would_take(&self, host: StationId, job: &JobView, book: &LicenceBook, now: Time) -> bool {
        let unix = Self::unix(now);
        self.free_hosts.iter().any(|&h| {
            if h == host {
                return false;
            }
            let Some(other) = self.stations.get(&h) else {
                return false;
            };
            let view = HostView::of_ad(
                &other.ad,
                other,
                self.pending_on(h),
                self.embargoed(h, now, Pass::Regular),
            );
            fit::fits(job, &view, book, unix)
        })
    }
}
