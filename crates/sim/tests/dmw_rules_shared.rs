//! DMW's embargo, job limit and progress guarantee are one set of rules
//! (`gleaner_core::dmw::rules`), applied by the UMol arbiter that `glean sim
//! dmw` runs ([`Umpire`]) and by the production coordinator
//! (`gleaner_coordinator::Pool`, through `gleaner_proto::fit`). One scenario
//! drives both, and their decisions must agree step by step (Neeracher 1998,
//! seeds/001_c7470f9b5ea54797.txt L1111, L1203, L1287–1291).
//!
//! The pool uses a non-preemptive allocator (Random), so that any preemption
//! would have to come from the guarantee, which must never preempt.

use gleaner_coordinator::{CoordinatorConfig, Outbox, Pool, UnsignedClaims};
use gleaner_core::alloc::{AllocatorConfig, AllocatorKind};
use gleaner_core::detector::OwnerState;
use gleaner_core::dmw::{HostLoad, HostSpec, ProgressGuarantee, Umpire, UmpireConfig};
use gleaner_core::time::{Dur, Time};
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::wire::{Demand, GuestInfo, PROTOCOL_VERSION, StationAd};
use std::collections::BTreeMap;

const EMBARGO: u64 = 30;
const HOMES: [&str; 3] = ["a", "b", "c"];

fn ad(name: &str) -> StationAd {
    StationAd {
        protocol: PROTOCOL_VERSION,
        name: name.into(),
        address: String::new(),
        state: OwnerState::Av,
        cpus: 2,
        memory_mb: 4096,
        disk_free_kb: 1 << 20,
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

/// One host `h` with two CPUs (job limit 2) and three homes, seen by both
/// arbiters.
struct Both {
    umpire: Umpire,
    pool: Pool,
    host: StationAd,
    /// Idle jobs per home.
    idle: BTreeMap<&'static str, u32>,
    next_job: u64,
    t: Time,
}

impl Both {
    fn new(progress: ProgressGuarantee) -> Both {
        let mut umpire = Umpire::new(UmpireConfig {
            embargo: Dur::from_secs(EMBARGO),
            progress,
            ..UmpireConfig::default()
        });
        umpire.add_host(HostSpec::new(1.0, 2));
        let cfg = CoordinatorConfig {
            allocator: AllocatorConfig::default_for(AllocatorKind::Random),
            embargo_secs: Some(EMBARGO as f64),
            advertise_period_secs: 10,
            startup_grace_secs: Some(0.0),
            progress_guarantee: progress,
            ..CoordinatorConfig::default()
        };
        let t = Time::from_secs(1_000_000);
        let pool = Pool::from_config(&cfg, Box::new(UnsignedClaims), 1, t).unwrap();
        let mut host = ad("h");
        host.execute_only = true;
        Both {
            umpire,
            pool,
            host,
            idle: HOMES.iter().map(|h| (*h, 0)).collect(),
            next_job: 1,
            t,
        }
    }

    fn home_ad(&self, name: &str) -> StationAd {
        let mut a = ad(name);
        a.state = OwnerState::Na;
        a.submit_only = true;
        let idle = self.idle[name];
        let running = self
            .host
            .running_guests
            .iter()
            .filter(|g| g.home == name)
            .count() as u32;
        a.demand = Demand {
            idle_jobs: idle,
            remote_jobs: running,
        };
        if idle > 0 {
            let mut c = JobClass::of(&JobDescription::new(name, "/bin/true"));
            c.count = idle;
            a.classes = vec![c];
        }
        a
    }

    fn running(&self, home: &str) -> u32 {
        self.host
            .running_guests
            .iter()
            .filter(|g| g.home == home)
            .count() as u32
    }

    /// One step `secs` later: the umpire's schedulers with work ask for a
    /// host in turn (a, b, c); the pool hears every ad and runs its
    /// interval pass. Returns the homes each arbiter granted the host to,
    /// and the preemptions the pool asked for.
    fn step(&mut self, secs: u64) -> (Vec<&'static str>, Vec<&'static str>, usize) {
        self.t += Dur::from_secs(secs);
        let t = self.t;
        // The umpire.
        let mut by_umpire = Vec::new();
        for (s, home) in HOMES.iter().enumerate() {
            let work = self.idle[home] > 0;
            let hosts: Vec<u32> = if work { vec![0] } else { vec![] };
            self.umpire.set_useful(s as u32, hosts).unwrap();
            let jobs = self.host.running_guests.len() as f64 + by_umpire.len() as f64;
            self.umpire
                .set_load(
                    0,
                    HostLoad {
                        load: jobs,
                        free_mem_kb: 4e6,
                    },
                )
                .unwrap();
            if work && self.umpire.request(t, s as u32).is_some() {
                by_umpire.push(*home);
            }
        }
        // The pool.
        let mut out = Outbox::default();
        for home in HOMES {
            let a = self.home_ad(home);
            self.pool.advertise(a, t, &mut out);
        }
        self.pool.advertise(self.host.clone(), t, &mut out);
        self.pool.tick(t, &mut out);
        let by_pool: Vec<&'static str> = out
            .grants()
            .filter_map(|(to, g)| {
                assert_eq!(g.host, "h");
                HOMES.iter().find(|h| **h == to).copied()
            })
            .collect();
        let preemptions = out.preemptions().count();
        // The granted jobs start on the host (as both arbiters agreed).
        for home in &by_pool {
            *self.idle.get_mut(home).unwrap() -= 1;
            self.host.running_guests.push(GuestInfo {
                job: JobId::new(self.next_job, 0),
                home: home.to_string(),
                owner: home.to_string(),
                since: t,
                suspended: false,
                concurrency_limits: Vec::new(),
                class: None,
            });
            self.next_job += 1;
        }
        (by_umpire, by_pool, preemptions)
    }

    /// `home`'s first job on the host ends.
    fn finish(&mut self, home: &str) {
        let i = self
            .host
            .running_guests
            .iter()
            .position(|g| g.home == home)
            .unwrap();
        self.host.running_guests.remove(i);
        self.umpire
            .release(
                self.t,
                HOMES.iter().position(|h| *h == home).unwrap() as u32,
                0,
            )
            .unwrap();
    }
}

fn agree(b: &mut Both, secs: u64, want: &[&str], why: &str) {
    let (umpire, pool, preemptions) = b.step(secs);
    assert_eq!(umpire, want, "umpire: {why}");
    assert_eq!(pool, want, "pool: {why}");
    assert_eq!(preemptions, 0, "nothing preempts: {why}");
}

/// The default rule: the guarantee may use an embargoed host, never a full
/// one, and never preempts; a job's end lifts the embargo.
#[test]
fn umpire_and_coordinator_apply_the_same_dmw_rules() {
    let mut b = Both::new(ProgressGuarantee::IgnoreThresholdsAndEmbargo);
    b.idle.insert("a", 2);
    agree(&mut b, 0, &["a"], "a first placement");
    agree(&mut b, 1, &[], "the host is embargoed and a runs a job");
    b.idle.insert("b", 1);
    agree(
        &mut b,
        1,
        &["b"],
        "b has nothing running: the guarantee ignores the embargo",
    );
    assert_eq!(b.running("a") + b.running("b"), 2);
    // The host is at its job limit of 2 (its CPUs, L1291).
    b.idle.insert("a", 0);
    b.idle.insert("c", 1);
    agree(
        &mut b,
        1,
        &[],
        "c has nothing running, but the host is full: no guarantee beyond the limit, no preemption",
    );
    agree(&mut b, 60, &[], "still full after the embargo expired");
    b.finish("a");
    agree(&mut b, 1, &["c"], "a's job ended: room again");
}

/// With `ignore_thresholds`, the guarantee waits out the embargo in both.
#[test]
fn the_guarantee_that_respects_the_embargo_waits_in_both() {
    let mut b = Both::new(ProgressGuarantee::IgnoreThresholds);
    b.idle.insert("a", 1);
    agree(&mut b, 0, &["a"], "a first placement");
    b.idle.insert("b", 1);
    agree(&mut b, 2, &[], "embargoed; b waits");
    agree(&mut b, 10, &[], "still embargoed");
    agree(&mut b, EMBARGO, &["b"], "the embargo expired");
}

/// A job's end lifts the embargo in both (L1111).
#[test]
fn a_job_end_lifts_the_embargo_in_both() {
    let mut b = Both::new(ProgressGuarantee::Off);
    b.idle.insert("a", 1);
    agree(&mut b, 0, &["a"], "a first placement");
    b.idle.insert("b", 1);
    b.idle.insert("c", 1);
    agree(&mut b, 1, &[], "embargoed, and no guarantee");
    b.finish("a");
    b.idle.insert("c", 0);
    agree(&mut b, 1, &["b"], "the end of a's job lifted the embargo");
}

/// A station with nothing running and a host full of another station's
/// jobs waits in both: the guarantee takes no node (the coordinator used to
/// preempt a station holding two or more for it).
#[test]
fn the_guarantee_never_preempts_a_station_holding_two() {
    let mut b = Both::new(ProgressGuarantee::IgnoreThresholdsAndEmbargo);
    b.idle.insert("a", 2);
    agree(&mut b, 0, &["a"], "a first placement");
    agree(
        &mut b,
        EMBARGO,
        &["a"],
        "the embargo expired: a's second job",
    );
    assert_eq!(b.running("a"), 2);
    b.idle.insert("b", 1);
    for _ in 0..5 {
        agree(
            &mut b,
            10,
            &[],
            "b waits: the host is full, nobody is preempted",
        );
    }
    b.finish("a");
    agree(&mut b, 1, &["b"], "a job of a ended: b gets the node");
}
