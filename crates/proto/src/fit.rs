//! Does this job fit this host now? One typed check, and one renderer.
//!
//! The coordinator's matchmaker asks it for every (job class, host) pair,
//! the host asks it again when a placement arrives (the host re-checks with
//! its own, fresher numbers), and `glean q --analyze` renders its answer.
//! [`check`] returns every failing condition, not just the first, so an
//! explanation names them all:
//!
//! - the owner is using the host (NA), or the host never hosts guests;
//! - the job's `Requirements`, clause by clause (ClassAd matching);
//! - the host's `START` with the job as `TARGET`;
//! - the host's user lists and operating windows
//!   ([`gleaner_core::owner_rules`]);
//! - free CPUs, memory and disk;
//! - DMW's global job limit and embargo ([`gleaner_core::dmw::rules`],
//!   Neeracher 1998 L1111, L1287–1291);
//! - hosts the job must avoid for now (they evicted it, DMW's resource
//!   feedback);
//! - pool-wide floating licences.
//!
//! Nothing here reads a clock: the caller passes UNIX seconds for windows and
//! ClassAd `time()`.

use crate::job::JobDescription;
use crate::matchmaking::{JobClass, PolicyAd, class_ad};
use crate::requests::{self, Amounts, Requests};
use crate::wire::{RejectReason, StationAd};
use gleaner_classad::Ad;
use gleaner_core::detector::OwnerState;
use gleaner_core::dmw::{Room, job_limit};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// One failing conjunct of the job's `Requirements`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Clause {
    pub expr: String,
    pub value: String,
}

/// Why a host does not take a job now.
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
    /// Fewer GPUs here than the job asks for (`RequestGPUs`), or fewer
    /// that satisfy its `RequireGPUs`.
    Gpus {
        need: u32,
        usable: u32,
    },
    /// A request written as an expression gives no amount on this machine
    /// (`RequestMemory` undefined, …).
    Request {
        attr: String,
        value: String,
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

impl Reject {
    /// Whether the reason is about capacity that a leaving guest frees (the
    /// coordinator asks this of preemption targets).
    pub fn is_capacity(&self) -> bool {
        matches!(
            self,
            Reject::Cpus { .. } | Reject::Gpus { .. } | Reject::GuestLimit { .. } | Reject::Embargo
        )
    }

    /// Whether the reason is about who is using the host now (its owner,
    /// guests or a recent placement) rather than about the job and the host
    /// themselves: it passes without anything changing in the job's or the
    /// host's description.
    pub fn is_occupancy(&self) -> bool {
        self.is_capacity() || matches!(self, Reject::OwnerActive)
    }

    /// The reason a host gives the home when it refuses a placement for
    /// this reject ([`crate::wire::PlacementResponse::Rejected`]).
    pub fn placement_reason(&self) -> RejectReason {
        match self {
            Reject::OwnerActive => RejectReason::OwnerActive,
            Reject::SubmitOnly
            | Reject::Cpus { .. }
            | Reject::Memory { .. }
            | Reject::Disk { .. }
            | Reject::Gpus { .. }
            | Reject::GuestLimit { .. }
            | Reject::Embargo
            | Reject::Licence { .. } => RejectReason::NoResources,
            Reject::Requirements { .. }
            | Reject::Start { .. }
            | Reject::UserDenied { .. }
            | Reject::WindowClosed { .. }
            | Reject::Request { .. }
            | Reject::Avoided => RejectReason::RequirementsUnmet,
        }
    }
}

/// The one rendering of a reject into words (`glean q --analyze`, the
/// host's refusal message).
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
            Reject::Gpus { need, usable } => {
                write!(f, "gpus: needs {need}, {usable} usable")
            }
            Reject::Request { attr, value } => write!(f, "{attr} is {value} here"),
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

/// Every reject in words, one sentence (`"; "`-separated); empty for none.
pub fn explain(rejects: &[Reject]) -> String {
    rejects
        .iter()
        .map(Reject::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Pool-wide floating licences: limits from the coordinator's configuration
/// and units in use (running guests plus pending claims). A host checking a
/// placement passes an empty book: licences are the coordinator's to count.
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

/// A job as the check sees it: its class and the class's job ClassAd.
#[derive(Clone, Debug)]
pub struct JobView {
    pub class: JobClass,
    pub ad: Ad,
}

impl JobView {
    pub fn of_class(class: JobClass) -> Self {
        let ad = class_ad(&class);
        JobView { class, ad }
    }

    /// One job's view (a class of one).
    pub fn of(job: &JobDescription) -> Self {
        Self::of_class(JobClass::of(job))
    }
}

/// Where a check gets a host's machine ClassAd, when it first needs it:
/// the coordinator brings the free disk of the machine ads it keeps up to
/// date only for the hosts a check reads, and most of 10 000 hosts are
/// only counted.
pub trait MachineSource {
    fn machine_ad(&self) -> &Ad;
}

impl MachineSource for Ad {
    fn machine_ad(&self) -> &Ad {
        self
    }
}

impl std::fmt::Debug for dyn MachineSource + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.machine_ad().fmt(f)
    }
}

/// A host as the check sees it, now.
#[derive(Clone, Debug)]
pub struct HostView<'a> {
    pub name: &'a str,
    /// The owner state as it counts for a new placement. A host whose
    /// eviction policy lingers accepts guests while its owner is active
    /// (Ryu & Hollingsworth's semi-available nodes) and passes `Av`.
    pub state: OwnerState,
    pub submit_only: bool,
    pub policy: &'a PolicyAd,
    /// The host's machine ClassAd ([`crate::matchmaking::machine_ad`]);
    /// read it with [`HostView::machine`].
    pub machine: &'a dyn MachineSource,
    /// CPUs no guest holds or is promised.
    pub free_cpus: u32,
    /// Memory a new guest may use, MiB.
    pub memory_mb: u64,
    /// Disk a new guest may use, KiB.
    pub disk_free_kb: u64,
    /// Guests (running and promised), the job limit and the embargo.
    pub room: Room,
}

impl<'a> HostView<'a> {
    /// The coordinator's view of an advertised host, whose machine ad is
    /// `machine`: `pending` claims are granted there and not yet running;
    /// `embargoed` is the host's [`gleaner_core::dmw::Embargo`] as it holds
    /// for the asking pass.
    pub fn of_ad(
        ad: &'a StationAd,
        machine: &'a dyn MachineSource,
        pending: u32,
        embargoed: bool,
    ) -> Self {
        // A claim its host holds idle between two jobs occupies a node too.
        let guests = ad.occupied();
        HostView {
            name: &ad.name,
            state: ad.state,
            submit_only: ad.submit_only,
            policy: &ad.policy,
            machine,
            free_cpus: ad.cpus.saturating_sub(guests).saturating_sub(pending),
            memory_mb: ad.memory_mb,
            disk_free_kb: ad.disk_free_kb,
            room: Room {
                jobs: guests.saturating_add(pending),
                limit: job_limit(ad.policy.max_guests, ad.cpus),
                embargoed,
                dysfunctional: false,
            },
        }
    }

    /// The host's machine ClassAd.
    pub fn machine(&self) -> &'a Ad {
        self.machine.machine_ad()
    }

    /// The machine ClassAd when `needed`, else an empty ad (a check that
    /// needs nothing of the machine does not make the coordinator bring its
    /// ad up to date).
    fn machine_if(&self, needed: bool) -> &'a Ad {
        static EMPTY: std::sync::OnceLock<Ad> = std::sync::OnceLock::new();
        if needed {
            self.machine()
        } else {
            EMPTY.get_or_init(Ad::new)
        }
    }

    /// Whether the host takes guests at all now (AV and not submit-only).
    pub fn hosting(&self) -> bool {
        !self.submit_only && self.state == OwnerState::Av
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

/// Whether `job` fits `host` at UNIX second `now_unix`: `Err` lists every
/// reason it does not, in a fixed order (owner state, requirements, START,
/// users, windows, cpus, memory, disk, guest limit, embargo, avoided host,
/// licences).
pub fn check(
    job: &JobView,
    host: &HostView<'_>,
    licences: &LicenceBook,
    now_unix: i64,
) -> Result<(), Vec<Reject>> {
    let v = verdict(job, host, licences, now_unix, Mode::All);
    if v.is_empty() { Ok(()) } else { Err(v) }
}

/// `check(…).is_ok()`, faster: it stops at the first reason, trying the
/// cheap ones before any ClassAd is evaluated (the matchmaker asks this for
/// every pair in every pass).
pub fn fits(job: &JobView, host: &HostView<'_>, licences: &LicenceBook, now_unix: i64) -> bool {
    verdict(job, host, licences, now_unix, Mode::First).is_empty()
}

/// Whether `job` would fit `host` once the host's occupancy allowed it:
/// `check` failing for [`Reject::is_occupancy`] reasons only. A job that
/// could fit some host is demand the allocator must see even while every
/// such host is busy, or nobody would ever preempt for it.
pub fn could_fit(
    job: &JobView,
    host: &HostView<'_>,
    licences: &LicenceBook,
    now_unix: i64,
) -> bool {
    verdict(job, host, licences, now_unix, Mode::FirstIgnoringOccupancy).is_empty()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every reason.
    All,
    /// At most one reason, cheap conditions first.
    First,
    /// As `First`, not counting occupancy reasons.
    FirstIgnoringOccupancy,
}

/// The reasons `job` does not fit `host`, as `mode` asks.
fn verdict(
    job: &JobView,
    host: &HostView<'_>,
    licences: &LicenceBook,
    now_unix: i64,
    mode: Mode,
) -> Vec<Reject> {
    let first_only = mode != Mode::All;
    let class = &job.class;
    let policy = host.policy;
    let owner = if host.submit_only {
        Some(Reject::SubmitOnly)
    } else if host.state != OwnerState::Av {
        Some(Reject::OwnerActive)
    } else {
        None
    };
    // Empty lists admit everybody and empty windows are always open; saying
    // so here spares the common case building the lists' rules.
    let everybody = policy.allow_users.is_empty() && policy.deny_users.is_empty();
    let users =
        (!everybody && !policy.user_filter().admits(&class.owner)).then(|| Reject::UserDenied {
            user: class.owner.clone(),
        });
    let windows = (!policy.windows.is_empty() && !policy.window_open(now_unix)).then(|| {
        Reject::WindowClosed {
            windows: policy.windows.clone(),
        }
    });
    // The requests' amounts here: constants, or expressions evaluated
    // against this machine (which only then is read).
    let requests = Requests::of_class(class);
    let (amounts, unmeasured) = match requests::amounts(
        requests,
        &job.ad,
        host.machine_if(!class.request_exprs.is_empty()),
        now_unix,
    ) {
        Ok(a) => (a, None),
        Err(e) => (
            Amounts {
                cpus: class.request_cpus.max(1),
                ..Amounts::default()
            },
            Some(Reject::Request {
                attr: e.attr,
                value: e.value,
            }),
        ),
    };
    let need = amounts.cpus.max(1);
    let cpus = (host.hosting() && host.free_cpus < need).then_some(Reject::Cpus {
        need,
        free: host.free_cpus,
    });
    let memory = amounts
        .memory_mb
        .filter(|&m| m > host.memory_mb)
        .map(|m| Reject::Memory {
            need_mb: m,
            have_mb: host.memory_mb,
        });
    let disk = amounts
        .disk_kb
        .filter(|&d| d > host.disk_free_kb)
        .map(|d| Reject::Disk {
            need_kb: d,
            have_kb: host.disk_free_kb,
        });
    // DMW's rules: the job limit holds in every pass, the embargo as the
    // caller's pass decided when it filled `room.embargoed`.
    let limit = gleaner_core::dmw::at_job_limit(host.room.jobs, host.room.limit).then_some(
        Reject::GuestLimit {
            limit: host.room.limit,
            guests: host.room.jobs,
        },
    );
    let embargo = host.room.embargoed.then_some(Reject::Embargo);
    let avoided = class
        .avoid_hosts
        .iter()
        .any(|h| h == host.name)
        .then_some(Reject::Avoided);
    let licence = if class.concurrency_limits.is_empty() {
        None
    } else {
        licences.shortage(&class.licences())
    };
    if first_only {
        let cheap = [
            &owner,
            &users,
            &windows,
            &unmeasured,
            &cpus,
            &memory,
            &disk,
            &limit,
            &embargo,
            &avoided,
            &licence,
        ];
        let counts = |r: &&Reject| mode == Mode::First || !r.is_occupancy();
        if let Some(r) = cheap.into_iter().flatten().find(counts) {
            return vec![r.clone()];
        }
    }
    // The job's side: a plain evaluation when one reason is enough, clause
    // by clause (for the explanation) otherwise.
    if first_only
        && job
            .ad
            .get(gleaner_classad::matching::REQUIREMENTS)
            .is_some()
    {
        let req = gleaner_classad::EvalContext::new(now_unix)
            .with_my(&job.ad)
            .with_target(host.machine())
            .eval_attr(gleaner_classad::matching::REQUIREMENTS);
        if !truthy(&req) {
            return vec![Reject::Requirements {
                clauses: Vec::new(),
            }];
        }
    }
    let requirements = if first_only {
        None
    } else {
        job.ad
            .get(gleaner_classad::matching::REQUIREMENTS)
            .and_then(|req| {
                let clauses: Vec<Clause> =
                    gleaner_classad::analyze_requirements(req, &job.ad, host.machine(), now_unix)
                        .into_iter()
                        .filter(|c| c.blocks_match)
                        .map(|c| Clause {
                            expr: c.expr,
                            value: c.value,
                        })
                        .collect();
                (!clauses.is_empty()).then_some(Reject::Requirements { clauses })
            })
    };
    // GPUs: as many usable ones as the job asks for (`crate::gpus`).
    let gpus = (amounts.gpus > 0)
        .then(|| crate::gpus::usable_count(&job.ad, host.machine(), now_unix))
        .filter(|usable| *usable < amounts.gpus)
        .map(|usable| Reject::Gpus {
            need: amounts.gpus,
            usable,
        });
    if first_only
        && let Some(r) = &gpus
        && (mode == Mode::First || !r.is_occupancy())
    {
        return vec![r.clone()];
    }
    // The machine's side: START.
    let start = gleaner_classad::EvalContext::new(now_unix)
        .with_my(host.machine())
        .with_target(&job.ad)
        .eval_attr(gleaner_classad::matching::REQUIREMENTS);
    let start = (!truthy(&start)).then(|| Reject::Start {
        expr: policy.start.clone().unwrap_or_else(|| "true".into()),
        value: start.unparse(),
    });
    [
        owner,
        requirements,
        start,
        users,
        windows,
        unmeasured,
        cpus,
        memory,
        disk,
        gpus,
        limit,
        embargo,
        avoided,
        licence,
    ]
    .into_iter()
    .flatten()
    .filter(|r| mode != Mode::FirstIgnoringOccupancy || !r.is_occupancy())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matchmaking::machine_ad;
    use crate::wire::{Demand, PROTOCOL_VERSION};
    use gleaner_core::time::Time;

    fn host(name: &str, cpus: u32, mem: u64) -> StationAd {
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
            speed: 1.0,
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

    /// The fit check of `v` on the host advertising `a`, with `placing`
    /// placements in flight, at time 0.
    fn check_on(
        a: &StationAd,
        v: &JobView,
        placing: u32,
        book: &LicenceBook,
    ) -> Result<(), Vec<Reject>> {
        check(
            v,
            &HostView::of_ad(a, &machine_ad(a), placing, false),
            book,
            0,
        )
    }

    fn job(req: Option<&str>) -> JobDescription {
        let mut d = JobDescription::new("alice", "/bin/true");
        d.requirements = req.map(str::to_string);
        d
    }

    #[test]
    fn every_failing_clause_is_reported_in_order() {
        let mut a = host("small", 1, 512);
        a.policy.deny_users = vec!["alice".into()];
        a.policy.windows = vec!["Mon 00:00-00:01".into()];
        a.policy.start = Some("TARGET.RequestMemory < 100".into());
        let mut d = job(Some("Memory >= 1024 && Arch == \"X86_64\""));
        d.request_memory_mb = Some(256);
        let r = check(
            &JobView::of(&d),
            &HostView::of_ad(&a, &machine_ad(&a), 0, false),
            &LicenceBook::default(),
            3 * 86_400,
        )
        .unwrap_err();
        assert_eq!(r.len(), 4, "{}", explain(&r));
        assert!(matches!(&r[0], Reject::Requirements { clauses } if clauses.len() == 1));
        assert!(matches!(r[1], Reject::Start { .. }));
        assert!(matches!(r[2], Reject::UserDenied { .. }));
        assert!(matches!(r[3], Reject::WindowClosed { .. }));
        let words = explain(&r);
        assert!(words.contains("Memory >= 1024 is false"), "{words}");
        assert!(words.contains("user alice"), "{words}");
    }

    #[test]
    fn resources_limit_embargo_avoidance_and_licences() {
        let mut a = host("h", 2, 1024);
        a.disk_free_kb = 10;
        let mut d = job(None);
        d.request_memory_mb = Some(2048);
        d.request_disk_kb = Some(100);
        d.request_cpus = 3;
        d.concurrency_limits = vec!["matlab:2".into()];
        let v = JobView::of_class(JobClass::avoiding(&d, vec!["h".into()]));
        let mut book = LicenceBook::default();
        book.limits.insert("matlab".into(), 2);
        book.in_use.insert("matlab".into(), 1);
        let r = check(&v, &HostView::of_ad(&a, &machine_ad(&a), 2, true), &book, 0).unwrap_err();
        assert_eq!(
            r,
            vec![
                Reject::Cpus { need: 3, free: 0 },
                Reject::Memory {
                    need_mb: 2048,
                    have_mb: 1024
                },
                Reject::Disk {
                    need_kb: 100,
                    have_kb: 10
                },
                Reject::GuestLimit {
                    limit: 2,
                    guests: 2
                },
                Reject::Embargo,
                Reject::Avoided,
                Reject::Licence {
                    name: "matlab".into(),
                    limit: 2,
                    in_use: 1,
                    need: 2
                },
            ]
        );
        assert_eq!(
            r.iter().filter(|r| r.is_capacity()).count(),
            3,
            "cpus, limit, embargo"
        );
    }

    #[test]
    fn an_idle_host_takes_a_plain_job_and_an_na_one_does_not() {
        let mut a = host("h", 1, 1024);
        let v = JobView::of(&job(None));
        let book = LicenceBook::default();
        assert_eq!(check_on(&a, &v, 0, &book), Ok(()));
        a.state = OwnerState::Na;
        assert_eq!(check_on(&a, &v, 0, &book), Err(vec![Reject::OwnerActive]));
        a.submit_only = true;
        assert_eq!(check_on(&a, &v, 0, &book), Err(vec![Reject::SubmitOnly]));
    }

    #[test]
    fn the_policy_guest_limit_binds_below_the_cpus() {
        let mut a = host("h", 4, 1024);
        a.policy.max_guests = Some(1);
        let v = JobView::of(&job(None));
        let book = LicenceBook::default();
        assert_eq!(check_on(&a, &v, 0, &book), Ok(()));
        assert_eq!(
            check_on(&a, &v, 1, &book),
            Err(vec![Reject::GuestLimit {
                limit: 1,
                guests: 1
            }])
        );
    }

    #[test]
    fn a_host_refusal_names_the_first_reason_in_words() {
        let mut a = host("h", 1, 512);
        a.state = OwnerState::Na;
        let mut d = job(None);
        d.request_memory_mb = Some(1024);
        let m = machine_ad(&a);
        let r = check(
            &JobView::of(&d),
            &HostView::of_ad(&a, &m, 0, false),
            &LicenceBook::default(),
            0,
        )
        .unwrap_err();
        assert_eq!(r[0].placement_reason(), RejectReason::OwnerActive);
        assert_eq!(r[1].placement_reason(), RejectReason::NoResources);
        assert_eq!(
            explain(&r),
            "owner active (station NA); memory: needs 1024 MiB, 512 MiB offered"
        );
    }

    #[test]
    fn request_expressions_and_gpus_are_judged_against_the_machine() {
        let mut a = host("h", 4, 4096);
        let mut d = job(None);
        d.request_exprs.memory = Some("TARGET.Memory / 2".into());
        d.request_exprs.cpus = Some("Cpus > 2 ? 2 : Cpus".into());
        let v = JobView::of(&d);
        assert_eq!(check_on(&a, &v, 0, &LicenceBook::default()), Ok(()));
        // Two placements in flight leave two CPUs: the job asks for two.
        assert_eq!(check_on(&a, &v, 2, &LicenceBook::default()), Ok(()));
        assert_eq!(
            check_on(&a, &v, 3, &LicenceBook::default()),
            Err(vec![Reject::Cpus { need: 2, free: 1 }])
        );
        d.request_exprs.memory = Some("NoSuchAttr * 2".into());
        let r = check_on(&a, &JobView::of(&d), 0, &LicenceBook::default()).unwrap_err();
        assert_eq!(
            r,
            vec![Reject::Request {
                attr: "RequestMemory".into(),
                value: "undefined".into()
            }]
        );
        assert_eq!(explain(&r), "RequestMemory is undefined here");
        // GPUs: the machine's free devices that satisfy RequireGPUs.
        let mut g = job(None);
        g.request_gpus = 1;
        g.request_exprs.require_gpus = Some("Capability >= 8".into());
        let gv = JobView::of(&g);
        assert_eq!(
            check_on(&a, &gv, 0, &LicenceBook::default()),
            Err(vec![Reject::Gpus { need: 1, usable: 0 }])
        );
        let devices = [
            crate::gpus::Gpu {
                id: "GPU-a".into(),
                capability: Some(7.5),
                ..Default::default()
            },
            crate::gpus::Gpu {
                id: "GPU-b".into(),
                capability: Some(8.6),
                ..Default::default()
            },
        ];
        a.attrs = crate::gpus::machine_attrs(&devices, &["GPU-a", "GPU-b"]);
        assert_eq!(check_on(&a, &gv, 0, &LicenceBook::default()), Ok(()));
        a.attrs = crate::gpus::machine_attrs(&devices, &["GPU-a"]);
        let r = check_on(&a, &gv, 0, &LicenceBook::default()).unwrap_err();
        assert_eq!(r, vec![Reject::Gpus { need: 1, usable: 0 }]);
        assert!(r[0].is_capacity(), "a leaving guest frees its GPU");
        // The FAQ's GPU-if-there-is-one request asks for none without one.
        let mut faq = job(None);
        faq.request_exprs.gpus =
            Some("countMatches(RequireGPUs, AvailableGPUs) >= 1 ? 1 : 0".into());
        faq.request_exprs.require_gpus = Some("Capability > 8".into());
        assert_eq!(
            check_on(&a, &JobView::of(&faq), 0, &LicenceBook::default()),
            Ok(())
        );
    }

    #[test]
    fn rejects_round_trip_as_json() {
        let r = Reject::Licence {
            name: "m".into(),
            limit: 1,
            in_use: 1,
            need: 1,
        };
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains("\"reason\":\"licence\""), "{s}");
        assert_eq!(serde_json::from_str::<Reject>(&s).unwrap(), r);
    }

    proptest::proptest! {
        /// The fast answer is the full check's answer, whatever fails.
        #[test]
        fn fits_agrees_with_check(
            na in proptest::bool::ANY,
            cpus in 0u32..4, guests in 0u32..3, pending in 0u32..3,
            mem in 0u64..4096, disk in 0u64..4096,
            max_guests in proptest::option::of(1u32..4),
            embargoed in proptest::bool::ANY,
            deny in proptest::bool::ANY,
            window in 0usize..3,
            start in 0usize..3,
            req in 0usize..4,
            need_cpus in 1u32..3,
            need_mem in proptest::option::of(0u64..4096),
            need_disk in proptest::option::of(0u64..4096),
            avoid in proptest::bool::ANY,
            lic_used in 0u32..3,
        ) {
            let mut a = host("h", cpus, mem);
            a.state = if na { OwnerState::Na } else { OwnerState::Av };
            a.disk_free_kb = disk;
            a.policy.max_guests = max_guests;
            if deny { a.policy.deny_users = vec!["alice".into()]; }
            a.policy.windows = match window {
                0 => vec![],
                1 => vec!["* 00:00-24:00".into()],
                _ => vec!["Mon 00:00-00:01".into()],
            };
            a.policy.start = match start {
                0 => None,
                1 => Some("TARGET.RequestCpus < 2".into()),
                _ => Some("false".into()),
            };
            for i in 0..guests {
                a.running_guests.push(crate::wire::GuestInfo {
                    job: crate::job::JobId::new(u64::from(i) + 1, 0),
                    home: "x".into(),
                    owner: "x".into(),
                    since: Time::ZERO,
                    suspended: false,
                    concurrency_limits: Vec::new(),
                    class: None,
                });
            }
            let mut d = job(match req {
                0 => None,
                1 => Some("Memory >= 1024"),
                2 => Some("Arch == \"X86_64\" && Disk > 100"),
                _ => Some("Nonsense >"),
            });
            d.request_cpus = need_cpus;
            d.request_memory_mb = need_mem;
            d.request_disk_kb = need_disk;
            d.concurrency_limits = vec!["m".into()];
            let hosts = if avoid { vec!["h".to_string()] } else { vec![] };
            let v = JobView::of_class(JobClass::avoiding(&d, hosts));
            let mut book = LicenceBook::default();
            book.limits.insert("m".into(), 2);
            book.in_use.insert("m".into(), lic_used);
            let m = machine_ad(&a);
            let h = HostView::of_ad(&a, &m, pending, embargoed);
            for t in [0i64, 3 * 86_400 + 7_200] {
                let all = check(&v, &h, &book, t).err().unwrap_or_default();
                proptest::prop_assert_eq!(fits(&v, &h, &book, t), all.is_empty());
                proptest::prop_assert_eq!(
                    could_fit(&v, &h, &book, t),
                    all.iter().all(Reject::is_occupancy)
                );
            }
        }
    }
}
