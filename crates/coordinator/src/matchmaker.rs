//! Matchmaking, free of I/O: which hosts a class of jobs may use, and which
//! of them is best.
//!
//! Up-Down (in [`crate::pool`]) decides *which station* gets capacity and
//! whom to preempt; this module decides *where* and *for which class*: a
//! host fits a class when the job's `Requirements` and the machine's `START`
//! hold (ClassAd matching), the station's policy admits the owner now
//! (windows, user lists), resources suffice (free node, CPUs, memory, disk),
//! the host is below its guest limit and not embargoed, and the class's
//! floating licences are available. Among fitting hosts the job's `Rank`
//! decides, then DMW's placement score σ (Neeracher 1998,
//! seeds/001_c7470f9b5ea54797.txt L1311–1319 for σ_λ = β·n/max(n, λ+1),
//! L1192–1196 for σ_μ; combined by [`gleaner_core::dmw::Score`]), then the
//! name, so every choice is deterministic.
//!
//! Whether a host fits is the one typed check of `gleaner_proto::fit`, which
//! the host repeats when the placement arrives; the same check explains a
//! job that does not run (`glean q --analyze`, [`analyze`]), listing every
//! failing condition, not just the first.

use gleaner_core::dmw::{HostLoad, HostSpec, Score};
use gleaner_proto::fit::{self, HostView, JobView};
use gleaner_proto::job::JobDescription;
use gleaner_proto::matchmaking::machine_ad;
use gleaner_proto::wire::StationAd;
use serde::{Deserialize, Serialize};

pub use gleaner_proto::fit::{Clause, LicenceBook, Reject};

/// DMW's placement score of a host for one more job: the expected CPU
/// share β·n/max(n, λ+1) scaled by the memory factor σ_μ/120, with λ the
/// guests running or claimed there and μ the memory offered to guests.
pub fn sigma(ad: &StationAd, pending: u32) -> f64 {
    let guests = ad.occupied() + pending;
    let n = ad.cpus.max(guests).max(1);
    let speed = if ad.speed > 0.0 { ad.speed } else { 1.0 };
    Score::default().sigma(
        &HostSpec::new(speed, n),
        &HostLoad {
            load: f64::from(guests),
            free_mem_kb: ad.memory_mb as f64 * 1024.0,
        },
    )
}

/// A host the matchmaker may choose: its ad, the claims pending on it, and
/// how the fit check sees it.
pub struct Candidate<'a> {
    pub ad: &'a StationAd,
    pub pending: u32,
    pub fit: HostView<'a>,
}

/// The best host for `job` among `hosts` (an index into it), by the job's
/// rank, then σ, then name; `None` if none fits ([`fit::fits`]).
///
/// A job without a `Rank` ranks every host 0, so the best is the fitting
/// host with the highest σ: hosts are tried in that order and the first
/// that fits wins, which costs one ClassAd evaluation in a pool of alike
/// hosts instead of one per host.
pub fn best_host(
    job: &JobView,
    hosts: &[Candidate<'_>],
    licences: &LicenceBook,
    now_unix: i64,
) -> Option<usize> {
    if job.ad.get(gleaner_classad::matching::RANK).is_none() {
        let mut order: Vec<(f64, usize)> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| (sigma(h.ad, h.pending), i))
            .collect();
        order.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| hosts[a.1].ad.name.cmp(&hosts[b.1].ad.name))
        });
        return order
            .into_iter()
            .find(|&(_, i)| fit::fits(job, &hosts[i].fit, licences, now_unix))
            .map(|(_, i)| i);
    }
    let mut best: Option<(usize, f64, f64)> = None;
    for (i, h) in hosts.iter().enumerate() {
        if !fit::fits(job, &h.fit, licences, now_unix) {
            continue;
        }
        let r = gleaner_classad::rank(&job.ad, h.fit.machine(), now_unix);
        let s = sigma(h.ad, h.pending);
        let better = match best {
            None => true,
            Some((j, br, bs)) => {
                r > br || (r == br && (s > bs || (s == bs && h.ad.name < hosts[j].ad.name)))
            }
        };
        if better {
            best = Some((i, r, s));
        }
    }
    best.map(|(i, _, _)| i)
}

/// One station's verdict for `glean q --analyze`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StationVerdict {
    pub station: String,
    /// Empty when the job could be placed there now.
    pub rejects: Vec<Reject>,
    /// The job's rank of the station and its σ (for matching stations).
    pub rank: f64,
    pub sigma: f64,
}

/// The coordinator's view for `glean q --analyze` (`GET /v1/ads`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AdsView {
    pub now_unix: i64,
    pub stations: Vec<AdEntry>,
    #[serde(default)]
    pub licences: Vec<LicenceUse>,
}

/// One station's ad with what the coordinator adds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdEntry {
    pub ad: StationAd,
    #[serde(default)]
    pub pending_claims: u32,
    #[serde(default)]
    pub embargoed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LicenceUse {
    pub name: String,
    pub limit: u32,
    pub in_use: u32,
}

impl AdsView {
    pub fn licence_book(&self) -> LicenceBook {
        LicenceBook {
            limits: self
                .licences
                .iter()
                .map(|l| (l.name.clone(), l.limit))
                .collect(),
            in_use: self
                .licences
                .iter()
                .map(|l| (l.name.clone(), l.in_use))
                .collect(),
        }
    }
}

/// Explains, station by station, whether `job` could run there now.
pub fn analyze(job: &JobDescription, view: &AdsView) -> Vec<StationVerdict> {
    let job = JobView::of(job);
    let book = view.licence_book();
    view.stations
        .iter()
        .map(|e| {
            let machine = machine_ad(&e.ad);
            let h = HostView::of_ad(&e.ad, &machine, e.pending_claims, e.embargoed);
            StationVerdict {
                station: e.ad.name.clone(),
                rejects: fit::check(&job, &h, &book, view.now_unix)
                    .err()
                    .unwrap_or_default(),
                rank: gleaner_classad::rank(&job.ad, &machine, view.now_unix),
                sigma: sigma(&e.ad, e.pending_claims),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use gleaner_core::detector::OwnerState;
    use gleaner_core::time::Time;
    use gleaner_proto::wire::{Demand, PROTOCOL_VERSION};

    pub(crate) fn host(name: &str, cpus: u32, mem: u64, speed: f64) -> StationAd {
        StationAd {
            protocol: PROTOCOL_VERSION,
            name: name.into(),
            address: String::new(),
            state: OwnerState::Av,
            cpus,
            memory_mb: mem,
            disk_free_kb: 1 << 30,
            arch: "X86_64".into(),
            opsys: "LINUX".into(),
            speed,
            running_guests: Vec::new(),
            attrs: Default::default(),
            demand: Demand::default(),
            policy: Default::default(),
            classes: Vec::new(),
            submit_only: false,
            execute_only: false,
            sequence: 0,
            sent_at: Time::ZERO,
            claims_used: Vec::new(),
            claims_held: Vec::new(),
            summary: None,
        }
    }

    fn class(req: Option<&str>) -> JobView {
        let mut d = JobDescription::new("alice", "/bin/true");
        d.requirements = req.map(str::to_string);
        JobView::of(&d)
    }

    fn best(job: &JobView, ads: &[&StationAd]) -> Option<usize> {
        let machines: Vec<_> = ads.iter().map(|a| machine_ad(a)).collect();
        let hosts: Vec<Candidate<'_>> = ads
            .iter()
            .zip(&machines)
            .map(|(a, m)| Candidate {
                ad: a,
                pending: 0,
                fit: HostView::of_ad(a, m, 0, false),
            })
            .collect();
        best_host(job, &hosts, &LicenceBook::default(), 0)
    }

    #[test]
    fn a_host_that_evicted_a_job_is_not_offered_to_it() {
        let a = host("x1", 1, 1024, 1.0);
        let b = host("x2", 1, 1024, 1.0);
        let d = JobDescription::new("alice", "/bin/true");
        let plain = JobView::of(&d);
        let c = JobView::of_class(gleaner_proto::matchmaking::JobClass::avoiding(
            &d,
            vec!["x1".into()],
        ));
        assert_ne!(
            c.class.key, plain.class.key,
            "avoidance makes its own class"
        );
        assert_eq!(best(&c, &[&a, &b]), Some(1));
        assert_eq!(best(&plain, &[&a, &b]), Some(0));
    }

    #[test]
    fn rank_then_sigma_choose_the_host() {
        let slow = host("slow", 1, 4096, 1.0);
        let fast = host("fast", 1, 4096, 3.0);
        let mut big = host("big", 1, 65536, 0.5);
        big.attrs.insert("HasMatlab".into(), "true".into());
        let hosts = [&slow, &fast, &big];
        assert_eq!(best(&class(None), &hosts), Some(1), "fastest by σ");
        let mut d = JobDescription::new("alice", "/bin/true");
        d.rank = Some("Memory".into());
        assert_eq!(best(&JobView::of(&d), &hosts), Some(2), "rank first");
        assert_eq!(best(&class(Some("HasMatlab =?= true")), &hosts), Some(2));
        assert_eq!(best(&class(Some("Memory > 100000")), &hosts), None);
    }

    #[test]
    fn sigma_is_memory_and_load_aware() {
        let a = host("a", 2, 4096, 2.0);
        let idle = sigma(&a, 0);
        assert!((idle - 2.0).abs() < 1e-9, "{idle}");
        // One claimed: λ = 1, still ≤ n → same share.
        assert!((sigma(&a, 1) - 2.0).abs() < 1e-9);
        let two = sigma(&a, 2);
        assert!((two - 2.0 * 2.0 / 3.0).abs() < 1e-9, "{two}");
        let full = host("t", 2, 0, 2.0);
        assert_eq!(sigma(&full, 0), 0.0, "no memory, no score");
        let small = host("s", 2, 4, 2.0);
        assert!(sigma(&small, 0) < idle);
    }

    #[test]
    fn analyze_lists_every_station_with_its_rejects() {
        let a = host("a", 1, 4096, 1.0);
        let mut b = host("b", 1, 4096, 1.0);
        b.state = OwnerState::Na;
        let view = AdsView {
            now_unix: 0,
            stations: vec![
                AdEntry {
                    ad: a,
                    pending_claims: 0,
                    embargoed: false,
                },
                AdEntry {
                    ad: b,
                    pending_claims: 0,
                    embargoed: true,
                },
            ],
            licences: Vec::new(),
        };
        let v = analyze(&JobDescription::new("alice", "/bin/true"), &view);
        assert!(v[0].rejects.is_empty());
        assert_eq!(v[1].rejects, vec![Reject::OwnerActive, Reject::Embargo]);
    }
}
