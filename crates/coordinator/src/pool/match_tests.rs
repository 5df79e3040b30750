//! Matchmaking in the pool: requirements, guest limits, embargo, licences
//! (also across a restart) and the progress guarantee, driven with an
//! injected clock.

use super::*;
use crate::CoordinatorConfig;
use crate::mailbox::Served;
use gleaner_core::alloc::AllocatorKind;
use gleaner_core::time::Dur;
use gleaner_proto::job::JobDescription;
use gleaner_proto::job::JobId;
use gleaner_proto::matchmaking::{JobClass, parse_limits};
use gleaner_proto::wire::{Grant, GuestInfo};

const T0_WALL: u64 = 1_763_337_600;

struct Sim {
    pool: Served,
    t0: Time,
    now: u64,
    hosts: BTreeMap<String, StationAd>,
    homes: BTreeMap<String, StationAd>,
    next_job: u64,
    max_licensed: u32,
}

fn config(embargo: f64, licences: &[(&str, u32)]) -> CoordinatorConfig {
    CoordinatorConfig {
        startup_grace_secs: Some(0.0),
        advertise_period_secs: 10,
        embargo_secs: Some(embargo),
        licences: licences.iter().map(|(n, l)| (n.to_string(), *l)).collect(),
        ..CoordinatorConfig::default()
    }
}

fn new_pool(cfg: &CoordinatorConfig, claims: &ClaimsState, t0: Time) -> Served {
    Served::new(
        Pool::new(
            cfg.timing().unwrap(),
            Box::new(UnsignedClaims),
            &cfg.allocator,
            7,
            &FairnessState::default(),
            t0,
        )
        .with_licences(&cfg.licences, claims, t0),
    )
}

fn station(name: &str, cpus: u32, mem: u64) -> StationAd {
    let mut a = crate::matchmaker::tests::host(name, cpus, mem, 1.0);
    a.execute_only = true;
    a
}

fn home(name: &str) -> StationAd {
    let mut a = crate::matchmaker::tests::host(name, 0, 0, 1.0);
    a.submit_only = true;
    a.state = OwnerState::Na;
    a
}

fn job(owner: &str, req: Option<&str>, lic: &[&str]) -> JobDescription {
    let mut d = JobDescription::new(owner, "/bin/true");
    d.requirements = req.map(str::to_string);
    d.concurrency_limits = lic.iter().map(|s| s.to_string()).collect();
    d
}

impl Sim {
    fn new(cfg: CoordinatorConfig) -> Sim {
        let t0 = Time::from_secs(T0_WALL);
        Sim {
            pool: new_pool(&cfg, &ClaimsState::default(), t0),
            t0,
            now: 0,
            hosts: BTreeMap::new(),
            homes: BTreeMap::new(),
            next_job: 1,
            max_licensed: 0,
        }
    }

    fn instant(&self) -> Time {
        self.t0 + Dur::from_secs(self.now)
    }

    fn submit(&mut self, home_name: &str, d: &JobDescription, n: u32) {
        let h = self
            .homes
            .entry(home_name.to_string())
            .or_insert_with(|| home(home_name));
        let c = JobClass::of(d);
        match h.classes.iter_mut().find(|x| x.key == c.key) {
            Some(x) => x.count += n,
            None => h.classes.push(JobClass { count: n, ..c }),
        }
        h.demand.idle_jobs += n;
    }

    /// The home places a job of the granted class on the host, as the
    /// station daemon does.
    fn use_grant(&mut self, home_name: &str, g: &Grant) {
        let Some(h) = self.homes.get_mut(home_name) else {
            return;
        };
        let Some(c) = h
            .classes
            .iter_mut()
            .find(|c| Some(&c.key) == g.class.as_ref() && c.count > 0)
        else {
            return;
        };
        c.count -= 1;
        let lic = c.concurrency_limits.clone();
        let owner = c.owner.clone();
        h.demand.idle_jobs -= 1;
        h.demand.remote_jobs += 1;
        h.classes.retain(|c| c.count > 0);
        let id = self.next_job;
        self.next_job += 1;
        if let Some(host) = self.hosts.get_mut(&g.host) {
            host.running_guests.push(GuestInfo {
                job: JobId::new(id, 0),
                home: home_name.to_string(),
                owner,
                since: Time::ZERO,
                suspended: false,
                concurrency_limits: lic,
                class: None,
            });
        }
    }

    /// Every guest on `host` finishes.
    fn finish_all(&mut self, host: &str) {
        let gone: Vec<GuestInfo> = self
            .hosts
            .get_mut(host)
            .map(|h| std::mem::take(&mut h.running_guests))
            .unwrap_or_default();
        for g in gone {
            if let Some(h) = self.homes.get_mut(&g.home) {
                h.demand.remote_jobs -= 1;
            }
        }
    }

    fn licensed_running(&self, name: &str) -> u32 {
        self.hosts
            .values()
            .flat_map(|h| &h.running_guests)
            .map(|g| {
                parse_limits(&g.concurrency_limits)
                    .unwrap_or_default()
                    .iter()
                    .filter(|(n, _)| n == name)
                    .map(|(_, k)| *k)
                    .sum::<u32>()
            })
            .sum()
    }

    /// One second: every station advertises, grants are used at once, the
    /// pool ticks every 5 s. Returns the grants by home.
    fn step(&mut self) -> Vec<(String, Grant)> {
        self.now += 1;
        let t = self.instant();
        let mut got = Vec::new();
        let hosts: Vec<StationAd> = self.hosts.values().cloned().collect();
        for h in hosts {
            self.pool.advertise(h, t);
        }
        let homes: Vec<StationAd> = self.homes.values().cloned().collect();
        for h in homes {
            let name = h.name.clone();
            for g in self.pool.advertise(h, t).grants {
                self.use_grant(&name, &g);
                got.push((name.clone(), g));
            }
            self.max_licensed = self.max_licensed.max(self.licensed_running("matlab"));
            let in_use = self
                .pool
                .pool()
                .licences_in_use()
                .get("matlab")
                .copied()
                .unwrap_or(0);
            self.max_licensed = self.max_licensed.max(in_use);
        }
        if self.now.is_multiple_of(5) {
            self.pool.tick(t);
        }
        got
    }

    fn run(&mut self, secs: u64) -> Vec<(String, Grant)> {
        (0..secs).flat_map(|_| self.step()).collect()
    }
}

#[test]
fn jobs_run_only_where_requirements_and_resources_allow() {
    let mut s = Sim::new(config(0.0, &[]));
    s.hosts.insert("big".into(), station("big", 2, 8192));
    s.hosts.insert("small".into(), station("small", 2, 1024));
    let mut m = station("lab", 1, 2048);
    m.attrs.insert("HasMatlab".into(), "true".into());
    s.hosts.insert("lab".into(), m);
    s.submit("a", &job("alice", Some("Memory >= 4096"), &[]), 3);
    s.submit("b", &job("bob", Some("HasMatlab =?= true"), &[]), 2);
    let mut big_mem = job("carol", None, &[]);
    big_mem.request_memory_mb = Some(100_000);
    s.submit("c", &big_mem, 1);
    let grants = s.run(30);
    for (home, g) in &grants {
        match home.as_str() {
            "a" => assert_eq!(g.host, "big"),
            "b" => assert_eq!(g.host, "lab"),
            other => panic!("{other} got {g:?}"),
        }
    }
    assert_eq!(grants.iter().filter(|(h, _)| h == "a").count(), 2, "2 cpus");
    assert_eq!(grants.iter().filter(|(h, _)| h == "b").count(), 1, "1 cpu");
}

#[test]
fn licences_are_never_exceeded_by_concurrent_homes() {
    let mut s = Sim::new(config(0.0, &[("matlab", 2)]));
    for h in ["h1", "h2", "h3", "h4"] {
        s.hosts.insert(h.into(), station(h, 2, 4096));
    }
    for home in ["a", "b", "c"] {
        s.submit(home, &job(home, None, &["MATLAB"]), 3);
        s.submit(home, &job(home, None, &[]), 1);
    }
    s.run(20);
    assert_eq!(s.licensed_running("matlab"), 2);
    assert!(s.max_licensed <= 2, "peak {}", s.max_licensed);
    // The unlicensed jobs all ran meanwhile.
    let unlicensed: usize = s
        .hosts
        .values()
        .flat_map(|h| &h.running_guests)
        .filter(|g| g.concurrency_limits.is_empty())
        .count();
    assert_eq!(unlicensed, 3);
    // Licences come back when their holders finish, one host at a time.
    for h in ["h1", "h2", "h3", "h4"] {
        s.finish_all(h);
        s.run(5);
        assert!(s.max_licensed <= 2, "peak {}", s.max_licensed);
    }
    let two_units = job("a", None, &["matlab:2"]);
    s.submit("a", &two_units, 1);
    s.run(20);
    assert!(s.max_licensed <= 2);
}

#[test]
fn a_restart_counts_persisted_claims_and_waits_for_ads() {
    let cfg = config(0.0, &[("matlab", 2)]);
    let mut s = Sim::new(cfg.clone());
    s.hosts.insert("h1".into(), station("h1", 4, 4096));
    s.submit("a", &job("alice", None, &["matlab"]), 4);
    // Grants are issued but the home has not placed yet: claims pending.
    let mut n = 0;
    for i in 1..=4u64 {
        let t = s.t0 + Dur::from_secs(5 * i);
        s.pool.advertise(s.hosts["h1"].clone(), t);
        s.pool.tick(t);
        n += s.pool.advertise(s.homes["a"].clone(), t).grants.len();
    }
    assert_eq!(n, 2, "the licence limit");
    assert!(s.pool.take_claims_dirty());
    let saved = s.pool.saved_claims();
    assert_eq!(saved.claims.len(), 2);

    // A new coordinator from the saved claims: both licences still held.
    let t1 = s.t0 + Dur::from_secs(21);
    let mut p = new_pool(&cfg, &saved, t1);
    assert_eq!(p.pool().licences_in_use().get("matlab"), Some(&2));
    p.advertise(s.hosts["h1"].clone(), t1);
    let r = p.advertise(s.homes["a"].clone(), t1);
    p.tick(t1);
    assert!(r.grants.is_empty());
    assert!(p.advertise(s.homes["a"].clone(), t1).grants.is_empty());
    // Once the claims expire unused, the licences are free again.
    let t2 = t1 + Dur::from_secs(40);
    p.advertise(s.hosts["h1"].clone(), t2);
    p.advertise(s.homes["a"].clone(), t2);
    p.tick(t2);
    let g = p.advertise(s.homes["a"].clone(), t2).grants;
    // Both licences at once (the default `per_pass`).
    assert_eq!(g.len(), 2, "{g:?}");

    // Without saved claims but with a grace, licensed grants wait for the
    // hosts' ads, which show two licensed guests.
    let graced = CoordinatorConfig {
        startup_grace_secs: Some(10.0),
        ..cfg.clone()
    };
    let mut p = new_pool(&graced, &ClaimsState::default(), t1);
    let r = p.advertise(s.homes["a"].clone(), t1);
    p.tick(t1);
    assert!(r.grants.is_empty());
    assert!(p.advertise(s.homes["a"].clone(), t1).grants.is_empty());
    let mut h = s.hosts["h1"].clone();
    for i in 0..2 {
        h.running_guests.push(GuestInfo {
            job: JobId::new(100 + i, 0),
            home: "a".into(),
            owner: "alice".into(),
            since: Time::ZERO,
            suspended: false,
            concurrency_limits: vec!["matlab".into()],
            class: None,
        });
    }
    let later = t1 + Dur::from_secs(11);
    p.advertise(h, later);
    p.tick(later);
    assert!(
        p.advertise(s.homes["a"].clone(), later).grants.is_empty(),
        "both licences are in use by running guests"
    );
    assert_eq!(p.pool().licences_in_use().get("matlab"), Some(&2));
}

#[test]
fn a_claim_settles_when_its_guest_replaces_an_older_one_in_one_ad() {
    let mut s = Sim::new(config(0.0, &[("matlab", 2)]));
    let mut h = station("h1", 4, 4096);
    let guest = |id: u64| GuestInfo {
        job: JobId::new(id, 0),
        home: "a".into(),
        owner: "alice".into(),
        since: Time::ZERO,
        suspended: false,
        concurrency_limits: vec!["matlab".into()],
        class: None,
    };
    h.running_guests.push(guest(100));
    s.hosts.insert("h1".into(), h.clone());
    s.submit("a", &job("alice", None, &["matlab"]), 1);
    let t = s.t0;
    s.pool.advertise(h.clone(), t);
    s.pool.advertise(s.homes["a"].clone(), t);
    s.pool.tick(t);
    let g = s.pool.advertise(s.homes["a"].clone(), t).grants;
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(s.pool.pool().licences_in_use().get("matlab"), Some(&2));
    // Between two ads, guest 100 ends and the granted job 101 starts: the
    // host still shows one licensed guest of home a, but it is the claim's.
    let t = t + Dur::from_secs(1);
    let mut a = s.homes["a"].clone();
    a.classes.clear();
    a.demand.idle_jobs = 0;
    a.demand.remote_jobs = 1;
    s.pool.advertise(a, t);
    h.running_guests = vec![guest(101)];
    s.pool.advertise(h, t);
    assert_eq!(s.pool.pool().licences_in_use().get("matlab"), Some(&1));
}

#[test]
fn embargo_holds_until_a_guest_leaves_or_it_expires() {
    let mut s = Sim::new(config(30.0, &[]));
    s.hosts.insert("h".into(), station("h", 4, 4096));
    s.submit("a", &job("alice", None, &[]), 4);
    let g = s.run(10);
    assert_eq!(g.len(), 1, "one placement, then embargoed");
    let e = s.pool.ads(s.instant());
    assert!(e.stations.iter().any(|x| x.ad.name == "h" && x.embargoed));
    s.finish_all("h");
    let g = s.run(3);
    assert_eq!(g.len(), 1, "a finished guest lifts the embargo");
    let g = s.run(40);
    assert_eq!(g.len(), 1, "then the 30 s embargo expires once");
}

#[test]
fn guest_limit_and_policy_are_respected() {
    let mut s = Sim::new(config(0.0, &[]));
    let mut h = station("h", 4, 4096);
    h.policy.max_guests = Some(1);
    h.policy.deny_users = vec!["mallory".into()];
    s.hosts.insert("h".into(), h);
    let mut closed = station("night", 4, 4096);
    // 2025-11-17 is a Monday; the test clock starts at midnight UTC.
    closed.policy.windows = vec!["Mon 18:00-20:00".into()];
    s.hosts.insert("night".into(), closed);
    s.submit("m", &job("mallory", None, &[]), 2);
    s.submit("a", &job("alice", None, &[]), 3);
    let g = s.run(20);
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!((g[0].0.as_str(), g[0].1.host.as_str()), ("a", "h"));
}

#[test]
fn progress_guarantee_despite_embargo() {
    let mut s = Sim::new(config(1000.0, &[]));
    s.hosts.insert("h".into(), station("h", 2, 4096));
    s.submit("a", &job("alice", None, &[]), 2);
    assert_eq!(s.run(7).len(), 1);
    s.submit("b", &job("bob", None, &[]), 1);
    let g = s.run(6);
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(
        g[0].0, "b",
        "b has nothing running: it gets the embargoed host"
    );
}

/// The guarantee takes no node from anyone (Neeracher 1998 L1203 apportions
/// free hosts only; `gleaner_core::dmw::rules`): under a non-preemptive
/// allocator, a station whose only fitting host is held waits, and gets the
/// host once it is free again.
#[test]
fn progress_guarantee_never_preempts() {
    let mut cfg = config(0.0, &[]);
    cfg.allocator = gleaner_core::alloc::AllocatorConfig::default_for(AllocatorKind::Random);
    let mut s = Sim::new(cfg);
    s.hosts.insert("x".into(), station("x", 1, 4096));
    s.hosts.insert("y".into(), station("y", 1, 4096));
    s.submit("a", &job("alice", None, &[]), 2);
    assert_eq!(s.run(7).len(), 2);
    // b's job fits only x, which a holds along with y.
    s.submit("b", &job("bob", Some("Name == \"x\""), &[]), 1);
    for _ in 0..10 {
        s.now += 1;
        let t = s.instant();
        s.pool.tick(t);
        s.pool.advertise(s.homes["b"].clone(), t);
        let r = s.pool.advertise(s.homes["a"].clone(), t);
        assert!(r.preemptions.is_empty(), "{:?}", r.preemptions);
    }
    // x frees up; b, with nothing running, gets it.
    s.finish_all("x");
    let g = s.run(3);
    assert!(g.iter().any(|(h, g)| h == "b" && g.host == "x"), "{g:?}");
}

/// The guarantee may ignore the embargo but never a full host's limit.
#[test]
fn progress_guarantee_respects_the_guest_limit() {
    let mut s = Sim::new(config(1000.0, &[]));
    let mut h = station("h", 2, 4096);
    h.policy.max_guests = Some(1);
    s.hosts.insert("h".into(), h);
    s.submit("a", &job("alice", None, &[]), 1);
    assert_eq!(s.run(7).len(), 1);
    s.submit("b", &job("bob", None, &[]), 1);
    assert!(s.run(10).is_empty(), "h is at its guest limit of 1");
}

/// Under `progress_guarantee = "ignore_thresholds"` the embargo holds for
/// the guarantee too.
#[test]
fn progress_guarantee_can_be_told_to_respect_the_embargo() {
    let mut cfg = config(1000.0, &[]);
    cfg.progress_guarantee = gleaner_core::dmw::ProgressGuarantee::IgnoreThresholds;
    let mut s = Sim::new(cfg);
    s.hosts.insert("h".into(), station("h", 2, 4096));
    s.submit("a", &job("alice", None, &[]), 2);
    assert_eq!(s.run(7).len(), 1);
    s.submit("b", &job("bob", None, &[]), 1);
    assert!(s.run(6).is_empty(), "embargoed for 1000 s");
}

/// A station whose jobs fit only a busy host still counts as waiting (so
/// Up-Down can preempt for it), but a free node it cannot use goes to a
/// station whose jobs fit it instead of staying idle.
#[test]
fn a_free_node_the_favoured_station_cannot_use_goes_to_the_next() {
    let mut s = Sim::new(config(0.0, &[]));
    s.hosts.insert("x".into(), station("x", 1, 4096));
    s.hosts.insert("z".into(), station("z", 1, 4096));
    // b runs on x, c on z.
    s.submit("b", &job("bob", Some("Name == \"x\""), &[]), 1);
    s.submit("c", &job("carol", Some("Name == \"z\""), &[]), 1);
    assert_eq!(s.run(7).len(), 2);
    // a wants only x and waits; c has a plain job waiting as well.
    s.submit("a", &job("alice", Some("Name == \"x\""), &[]), 1);
    s.submit("c", &job("carol", None, &[]), 1);
    s.run(3);
    // A free host y appears: a, with the lowest index, cannot use it.
    s.hosts.insert("y".into(), station("y", 1, 4096));
    let g = s.run(6);
    assert!(
        g.iter().any(|(h, g)| h == "c" && g.host == "y"),
        "y must not stay idle: {g:?}"
    );
}
