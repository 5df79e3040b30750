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
//! The same checks explain a job that does not run (`glean q --analyze`):
//! [`check`] returns every failing clause, not just the first.

use gleaner_classad::Ad;
use gleaner_core::detector::OwnerState;
use gleaner_core::dmw::{HostLoad, HostSpec, Score};
use gleaner_proto::job::JobDescription;
use gleaner_proto::machine::{JobClass, class_ad, machine_ad};
use gleaner_proto::wire::StationAd;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// One failing conjunct of the job's `Requirements`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Clause {
    pub expr: String,
    pub value: String,
}

/// Why a host does not take a class now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reject {
    /// The owner is using the station (NA).
    OwnerActive,
    /// The station never hosts guests.
    SubmitOnly,
    /// These conjuncts of the job's requirements are not true here.
    Requirements {
        clauses: Vec<Clause>,
    },
    /// The station's `START` expression is not true for this job.
    Start {
        expr: String,
        value: String,
    },
    /// The station's policy does not admit this owner.
    UserDenied {
        user: String,
    },
    /// Outside the station's operating windows.
    WindowClosed {
        windows: Vec<String>,
    },
    Cpus {
        need: u32,
        free: u32,
    },
    Memory {
        need_mb: u64,
        have_mb: u64,
    },
    Disk {
        need_kb: u64,
        have_kb: u64,
    },
    /// The station runs as many guests as its policy allows.
    GuestLimit {
        limit: u32,
        guests: u32,
    },
    /// A job was just placed there (DMW's embargo).
    Embargo,
    /// The host evicted jobs of this class recently (resource feedback).
    Avoided,
    /// A floating licence is used up pool-wide.
    Licence {
        name: String,
        limit: u32,
        in_use: u32,
        need: u32,
    },
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reject::OwnerActive => write!(f, "owner active (station NA)"),
            Reject::SubmitOnly => write!(f, "station is submit-only"),
            Reject::Requirements { clauses } => {
                write!(f, "requirements:")?;
                for c in clauses {
                    write!(f, " [{} is {}]", c.expr, c.value)?;
                }
                Ok(())
            }
            Reject::Start { expr, value } => write!(f, "station START ({expr}) is {value}"),
            Reject::UserDenied { user } => write!(f, "station policy does not admit user {user}"),
            Reject::WindowClosed { windows } => {
                write!(f, "outside operating windows ({})", windows.join("; "))
            }
            Reject::Cpus { need, free } => write!(f, "cpus: needs {need}, {free} free"),
            Reject::Memory { need_mb, have_mb } => {
                write!(f, "memory: needs {need_mb} MiB, {have_mb} MiB offered")
            }
            Reject::Disk { need_kb, have_kb } => {
                write!(f, "disk: needs {need_kb} KiB, {have_kb} KiB free")
            }
            Reject::GuestLimit { limit, guests } => {
                write!(f, "guest limit: {guests} of {limit} running or claimed")
            }
            Reject::Embargo => write!(f, "embargoed after a recent placement"),
            Reject::Avoided => write!(f, "evicted these jobs recently; avoided for now"),
            Reject::Licence {
                name,
                limit,
                in_use,
                need,
            } => write!(
                f,
                "licence {name} exhausted: {in_use} of {limit} in use, needs {need}"
            ),
        }
    }
}

/// What the coordinator knows about a host beyond its ad.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostExtra {
    /// Claims granted on it and not yet seen running.
    pub pending: u32,
    pub embargoed: bool,
}

/// Pool-wide floating licences: limits from the coordinator's
/// configuration and units in use (running guests plus pending claims).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LicenceBook {
    pub limits: BTreeMap<String, u32>,
    pub in_use: BTreeMap<String, u32>,
}

impl LicenceBook {
    /// The first licence of `want` that lacks units; names without a limit
    /// are unlimited, as in HTCondor without `CONCURRENCY_LIMIT_DEFAULT`.
    pub fn shortage(&self, want: &[(String, u32)]) -> Option<Reject> {
        want.iter().find_map(|(name, need)| {
            let limit = *self.limits.get(name)?;
            let in_use = self.in_use.get(name).copied().unwrap_or(0);
            (in_use.saturating_add(*need) > limit).then(|| Reject::Licence {
                name: name.clone(),
                limit,
                in_use,
                need: *need,
            })
        })
    }

    pub fn take(&mut self, want: &[(String, u32)]) {
        for (name, n) in want {
            *self.in_use.entry(name.clone()).or_default() += n;
        }
    }
}

/// Free nodes of a host: CPUs of an AV host that no guest or claim holds
/// (the same count as the pool's `free_on`).
pub fn free_nodes(ad: &StationAd, extra: HostExtra) -> u32 {
    if ad.state != OwnerState::Av || ad.submit_only {
        return 0;
    }
    ad.cpus
        .saturating_sub(ad.running_guests.len() as u32)
        .saturating_sub(extra.pending)
}

/// The guest limit: the policy's, else one guest per CPU (DMW's job limit
/// "usually = #CPUs", L1291).
pub fn guest_limit(ad: &StationAd) -> u32 {
    ad.policy
        .max_guests
        .unwrap_or_else(|| ad.cpus.max(ad.running_guests.len() as u32).max(1))
}

/// DMW's placement score of a host for one more job: the expected CPU
/// share β·n/max(n, λ+1) scaled by the memory factor σ_μ/120, with λ the
/// guests running or claimed there and μ the memory offered to guests.
pub fn sigma(ad: &StationAd, extra: HostExtra) -> f64 {
    let guests = ad.running_guests.len() as u32 + extra.pending;
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

/// A host as the matchmaker sees it.
pub struct HostView<'a> {
    pub ad: &'a StationAd,
    pub machine: Ad,
    pub extra: HostExtra,
}

impl<'a> HostView<'a> {
    pub fn new(ad: &'a StationAd, extra: HostExtra) -> Self {
        HostView {
            ad,
            machine: machine_ad(ad),
            extra,
        }
    }
}

fn truthy(v: &gleaner_classad::Value) -> bool {
    match v {
        gleaner_classad::Value::Bool(b) => *b,
        gleaner_classad::Value::Int(i) => *i != 0,
        gleaner_classad::Value::Real(r) => *r != 0.0,
        _ => false,
    }
}

/// Every reason `host` does not take a job of `class` at UNIX second
/// `now_unix`; empty when it fits. `job` is [`class_ad`] of the class.
pub fn check(
    class: &JobClass,
    job: &Ad,
    host: &HostView<'_>,
    licences: &LicenceBook,
    now_unix: i64,
) -> Vec<Reject> {
    let ad = host.ad;
    let mut out = Vec::new();
    if ad.submit_only {
        out.push(Reject::SubmitOnly);
    } else if ad.state != OwnerState::Av {
        out.push(Reject::OwnerActive);
    }
    // The job's side, clause by clause.
    if let Some(req) = job.get(gleaner_classad::matching::REQUIREMENTS) {
        let clauses: Vec<Clause> =
            gleaner_classad::analyze_requirements(req, job, &host.machine, now_unix)
                .into_iter()
                .filter(|c| c.blocks_match)
                .map(|c| Clause {
                    expr: c.expr,
                    value: c.value,
                })
                .collect();
        if !clauses.is_empty() {
            out.push(Reject::Requirements { clauses });
        }
    }
    // The machine's side: START.
    let ctx = gleaner_classad::EvalContext::new(now_unix)
        .with_my(&host.machine)
        .with_target(job);
    let start = ctx.eval_attr(gleaner_classad::matching::REQUIREMENTS);
    if !truthy(&start) {
        out.push(Reject::Start {
            expr: ad.policy.start.clone().unwrap_or_else(|| "true".into()),
            value: start.unparse(),
        });
    }
    if !ad.policy.user_filter().admits(&class.owner) {
        out.push(Reject::UserDenied {
            user: class.owner.clone(),
        });
    }
    if !ad.policy.window_open(now_unix) {
        out.push(Reject::WindowClosed {
            windows: ad.policy.windows.clone(),
        });
    }
    let free = free_nodes(ad, host.extra);
    let need = class.request_cpus.max(1);
    if !ad.submit_only && ad.state == OwnerState::Av && free < need {
        out.push(Reject::Cpus { need, free });
    }
    if let Some(m) = class.request_memory_mb
        && m > ad.memory_mb
    {
        out.push(Reject::Memory {
            need_mb: m,
            have_mb: ad.memory_mb,
        });
    }
    if let Some(d) = class.request_disk_kb
        && d > ad.disk_free_kb
    {
        out.push(Reject::Disk {
            need_kb: d,
            have_kb: ad.disk_free_kb,
        });
    }
    let limit = guest_limit(ad);
    let guests = ad.running_guests.len() as u32 + host.extra.pending;
    if guests >= limit {
        out.push(Reject::GuestLimit { limit, guests });
    }
    if host.extra.embargoed {
        out.push(Reject::Embargo);
    }
    if class.avoid_hosts.contains(&ad.name) {
        out.push(Reject::Avoided);
    }
    if let Some(r) = licences.shortage(&class.licences()) {
        out.push(r);
    }
    out
}

/// The best host for `class` among `hosts` (indices into it), by the job's
/// rank, then σ, then name; `None` if none fits.
pub fn best_host(
    class: &JobClass,
    job: &Ad,
    hosts: &[HostView<'_>],
    licences: &LicenceBook,
    now_unix: i64,
) -> Option<usize> {
    let mut best: Option<(usize, f64, f64)> = None;
    for (i, h) in hosts.iter().enumerate() {
        if !check(class, job, h, licences, now_unix).is_empty() {
            continue;
        }
        let r = gleaner_classad::rank(job, &h.machine, now_unix);
        let s = sigma(h.ad, h.extra);
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
    let class = JobClass::of(job);
    let jad = class_ad(&class);
    let book = view.licence_book();
    view.stations
        .iter()
        .map(|e| {
            let h = HostView::new(
                &e.ad,
                HostExtra {
                    pending: e.pending_claims,
                    embargoed: e.embargoed,
                },
            );
            StationVerdict {
                station: e.ad.name.clone(),
                rejects: check(&class, &jad, &h, &book, view.now_unix),
                rank: gleaner_classad::rank(&jad, &h.machine, view.now_unix),
                sigma: sigma(&e.ad, h.extra),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
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
        }
    }

    fn class(req: Option<&str>, mem: Option<u64>, lic: &[&str]) -> JobClass {
        let mut d = JobDescription::new("alice", "/bin/true");
        d.requirements = req.map(str::to_string);
        d.request_memory_mb = mem;
        d.concurrency_limits = lic.iter().map(|s| s.to_string()).collect();
        JobClass::of(&d)
    }

    #[test]
    fn every_failing_clause_is_reported() {
        let mut a = host("small", 1, 512, 1.0);
        a.policy.deny_users = vec!["alice".into()];
        a.policy.windows = vec!["Mon 00:00-00:01".into()];
        a.policy.start = Some("TARGET.RequestMemory < 100".into());
        let c = class(Some("Memory >= 1024 && Arch == \"X86_64\""), Some(256), &[]);
        let h = HostView::new(&a, HostExtra::default());
        let r = check(&c, &class_ad(&c), &h, &LicenceBook::default(), 3 * 86_400);
        let kinds: Vec<String> = r.iter().map(|r| r.to_string()).collect();
        assert_eq!(r.len(), 4, "{kinds:?}");
        assert!(matches!(&r[0], Reject::Requirements { clauses } if clauses.len() == 1));
        assert!(matches!(r[1], Reject::Start { .. }));
        assert!(matches!(r[2], Reject::UserDenied { .. }));
        assert!(matches!(r[3], Reject::WindowClosed { .. }));
    }

    #[test]
    fn a_host_that_evicted_a_job_is_not_offered_to_it() {
        let a = host("x1", 1, 1024, 1.0);
        let b = host("x2", 1, 1024, 1.0);
        let d = JobDescription::new("alice", "/bin/true");
        let plain = JobClass::of(&d);
        let c = JobClass::avoiding(&d, vec!["x1".into()]);
        assert_ne!(c.key, plain.key, "avoidance makes its own class");
        let hosts = [
            HostView::new(&a, HostExtra::default()),
            HostView::new(&b, HostExtra::default()),
        ];
        let book = LicenceBook::default();
        let r = check(&c, &class_ad(&c), &hosts[0], &book, 0);
        assert_eq!(r, vec![Reject::Avoided]);
        assert_eq!(best_host(&c, &class_ad(&c), &hosts, &book, 0), Some(1));
        assert!(check(&plain, &class_ad(&plain), &hosts[0], &book, 0).is_empty());
    }

    #[test]
    fn resources_limit_embargo_and_licences() {
        let mut a = host("h", 2, 1024, 1.0);
        a.disk_free_kb = 10;
        let mut d = JobDescription::new("alice", "/bin/true");
        d.request_memory_mb = Some(2048);
        d.request_disk_kb = Some(100);
        d.request_cpus = 3;
        d.concurrency_limits = vec!["matlab:2".into()];
        let c = JobClass::of(&d);
        let mut book = LicenceBook::default();
        book.limits.insert("matlab".into(), 2);
        book.in_use.insert("matlab".into(), 1);
        let h = HostView::new(
            &a,
            HostExtra {
                pending: 2,
                embargoed: true,
            },
        );
        let r = check(&c, &class_ad(&c), &h, &book, 0);
        assert!(r.contains(&Reject::Cpus { need: 3, free: 0 }));
        assert!(r.contains(&Reject::Memory {
            need_mb: 2048,
            have_mb: 1024
        }));
        assert!(r.contains(&Reject::Disk {
            need_kb: 100,
            have_kb: 10
        }));
        assert!(r.contains(&Reject::GuestLimit {
            limit: 2,
            guests: 2
        }));
        assert!(r.contains(&Reject::Embargo));
        assert!(r.contains(&Reject::Licence {
            name: "matlab".into(),
            limit: 2,
            in_use: 1,
            need: 2
        }));
    }

    #[test]
    fn rank_then_sigma_choose_the_host() {
        let slow = host("slow", 1, 4096, 1.0);
        let fast = host("fast", 1, 4096, 3.0);
        let mut big = host("big", 1, 65536, 0.5);
        big.attrs.insert("HasMatlab".into(), "true".into());
        let hosts = [&slow, &fast, &big];
        let views: Vec<HostView<'_>> = hosts
            .iter()
            .map(|a| HostView::new(a, HostExtra::default()))
            .collect();
        let book = LicenceBook::default();
        let c = class(None, None, &[]);
        assert_eq!(
            best_host(&c, &class_ad(&c), &views, &book, 0),
            Some(1),
            "fastest by σ"
        );
        let mut d = JobDescription::new("alice", "/bin/true");
        d.rank = Some("Memory".into());
        let c = JobClass::of(&d);
        assert_eq!(
            best_host(&c, &class_ad(&c), &views, &book, 0),
            Some(2),
            "rank first"
        );
        let c = class(Some("HasMatlab =?= true"), None, &[]);
        assert_eq!(best_host(&c, &class_ad(&c), &views, &book, 0), Some(2));
        let c = class(Some("Memory > 100000"), None, &[]);
        assert_eq!(best_host(&c, &class_ad(&c), &views, &book, 0), None);
    }

    #[test]
    fn sigma_is_memory_and_load_aware() {
        let a = host("a", 2, 4096, 2.0);
        let idle = sigma(&a, HostExtra::default());
        assert!((idle - 2.0).abs() < 1e-9, "{idle}");
        // One claimed: λ = 1, still ≤ n → same share.
        let one = sigma(
            &a,
            HostExtra {
                pending: 1,
                embargoed: false,
            },
        );
        assert!((one - 2.0).abs() < 1e-9);
        let two = sigma(
            &a,
            HostExtra {
                pending: 2,
                embargoed: false,
            },
        );
        assert!((two - 2.0 * 2.0 / 3.0).abs() < 1e-9, "{two}");
        let full = host("t", 2, 0, 2.0);
        assert_eq!(
            sigma(&full, HostExtra::default()),
            0.0,
            "no memory, no score"
        );
        let small = host("s", 2, 4, 2.0);
        assert!(sigma(&small, HostExtra::default()) < idle);
    }
}
