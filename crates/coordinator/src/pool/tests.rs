//! The pool's allocation basics, driven with an injected clock.

use super::*;
use crate::CoordinatorConfig;
use crate::mailbox::Served;
use gleaner_core::time::Dur;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{Demand, Destination, GuestInfo};

pub(super) fn pool(grace: f64) -> (Served, Time) {
    let cfg = CoordinatorConfig {
        startup_grace_secs: Some(grace),
        advertise_period_secs: 10,
        ..CoordinatorConfig::default()
    };
    let now = Time::from_secs(1_763_337_600);
    let p = Pool::new(
        cfg.timing().unwrap(),
        Box::new(UnsignedClaims),
        &cfg.allocator,
        7,
        &FairnessState::default(),
        now,
    );
    (Served::new(p), now)
}

pub(super) fn ad(name: &str, av: bool, cpus: u32, idle: u32, guests: &[(u64, &str)]) -> StationAd {
    StationAd {
        protocol: PROTOCOL_VERSION,
        name: name.into(),
        address: String::new(),
        state: if av { OwnerState::Av } else { OwnerState::Na },
        cpus,
        memory_mb: 0,
        disk_free_kb: 0,
        arch: String::new(),
        opsys: String::new(),
        speed: 0.0,
        running_guests: guests
            .iter()
            .map(|&(c, h)| GuestInfo {
                job: JobId::new(c, 0),
                home: h.into(),
                owner: String::new(),
                since: Time::ZERO,
                suspended: false,
                concurrency_limits: Vec::new(),
                class: None,
            })
            .collect(),
        attrs: Default::default(),
        demand: Demand {
            idle_jobs: idle,
            remote_jobs: 0,
        },
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

#[test]
fn grants_bounded_by_free_cpus_and_idle_jobs() {
    let (mut p, t0) = pool(0.0);
    p.advertise(ad("h", true, 3, 0, &[(1, "x")]), t0);
    let mut got = 0;
    for i in 1..8u64 {
        let t = t0 + Dur::from_secs(i);
        got += p.advertise(ad("a", false, 1, 5, &[]), t).grants.len();
        p.tick(t);
    }
    assert_eq!(got, 2, "3 cpus, 1 guest");
    let (mut p, t0) = pool(0.0);
    p.advertise(ad("h", true, 8, 0, &[]), t0);
    let mut got = 0;
    for i in 1..8u64 {
        let t = t0 + Dur::from_secs(i);
        got += p.advertise(ad("a", false, 1, 1, &[]), t).grants.len();
        p.tick(t);
    }
    assert_eq!(got, 1, "one idle job");
}

#[test]
fn replayed_ad_does_not_roll_back() {
    let (mut p, t0) = pool(0.0);
    let mut a = ad("h", true, 1, 0, &[]);
    a.sequence = 5;
    p.advertise(a, t0);
    let mut old = ad("h", false, 1, 0, &[]);
    old.sequence = 3;
    p.advertise(old, t0);
    assert_eq!(p.status(t0).stations[0].state, OwnerState::Av);
}

#[test]
fn no_preemption_during_startup_grace() {
    let (mut p, t0) = pool(100.0);
    for i in 1..6u64 {
        let t = t0 + Dur::from_secs(i);
        p.advertise(ad("h", true, 1, 0, &[(1, "heavy")]), t);
        p.advertise(ad("heavy", false, 1, 3, &[]), t);
        p.advertise(ad("light", false, 1, 1, &[]), t);
        p.tick(t);
    }
    let t = t0 + Dur::from_secs(6);
    let r = p.advertise(ad("heavy", false, 1, 3, &[]), t);
    assert!(r.preemptions.is_empty());
    // After the grace the next interval preempts.
    let t = t0 + Dur::from_secs(101);
    p.advertise(ad("h", true, 1, 0, &[(1, "heavy")]), t);
    p.advertise(ad("light", false, 1, 1, &[]), t);
    p.advertise(ad("heavy", false, 1, 3, &[]), t);
    p.tick(t);
    let r = p.advertise(ad("heavy", false, 1, 3, &[]), t);
    assert_eq!(r.preemptions.len(), 1);
}

/// A host whose own work ended offers its CPU again: a capacity event, so a
/// waiting station is granted it without waiting for the next interval.
#[test]
fn more_cpus_on_an_av_host_is_a_capacity_event() {
    let (mut p, t0) = pool(0.0);
    p.advertise(ad("h", true, 0, 0, &[]), t0);
    p.advertise(ad("a", false, 1, 1, &[]), t0);
    p.tick(t0);
    assert!(p.advertise(ad("a", false, 1, 1, &[]), t0).grants.is_empty());
    let t = t0 + Dur::from_secs(1);
    p.advertise(ad("h", true, 1, 0, &[]), t);
    assert_eq!(p.advertise(ad("a", false, 1, 1, &[]), t).grants.len(), 1);
}

/// Effects are data: a pass writes its grants into the outbox and sends
/// nothing itself.
#[test]
fn effects_come_back_in_the_outbox() {
    let cfg = CoordinatorConfig {
        startup_grace_secs: Some(0.0),
        ..CoordinatorConfig::default()
    };
    let t0 = Time::from_secs(10);
    let mut p = Pool::from_config(&cfg, Box::new(UnsignedClaims), 1, t0).unwrap();
    let mut out = Outbox::default();
    p.advertise(ad("h", true, 1, 0, &[]), t0, &mut out);
    let r = p.advertise(ad("a", false, 1, 1, &[]), t0, &mut out);
    assert!(r.grants.is_empty(), "the reply carries no mail");
    p.tick(t0, &mut out);
    let grants: Vec<_> = out.grants().collect();
    assert_eq!(grants.len(), 1, "{out:?}");
    assert_eq!(grants[0].0, "a");
    assert_eq!(grants[0].1.host, "h");
    let id = &grants[0].1.claim_id;
    assert!(id.starts_with("a>h#a-1-"), "unsigned, readable: {id}");
}

fn guest(job: u64, home: &str, owner: &str, lic: &[&str]) -> GuestInfo {
    GuestInfo {
        job: JobId::new(job, 0),
        home: home.into(),
        owner: owner.into(),
        since: Time::ZERO,
        suspended: false,
        concurrency_limits: lic.iter().map(|s| s.to_string()).collect(),
        class: None,
    }
}

fn host(name: &str, state: OwnerState, cpus: u32, guests: Vec<GuestInfo>) -> StationAd {
    let mut a = crate::matchmaker::tests::host(name, cpus, 4096, 1.0);
    a.state = state;
    a.running_guests = guests;
    a.execute_only = true;
    a
}

/// The advertise reply tells a host, per guest, whether a free AV node
/// that would take it exists now.
#[test]
fn destinations_name_each_guest_and_whether_a_free_node_would_take_it() {
    let (mut p, t0) = pool(0.0);
    let busy = |guests| host("h", OwnerState::Na, 2, guests);
    // No other host: nowhere to go; the host's own free CPU does not count.
    let r = p.advertise(busy(vec![guest(1, "a", "alice", &[])]), t0);
    assert_eq!(
        r.destinations,
        vec![Destination {
            job: JobId::new(1, 0),
            home: "a".into(),
            available: false
        }]
    );
    let mut h = busy(vec![guest(1, "a", "alice", &[])]);
    h.state = OwnerState::Av;
    let r = p.advertise(h, t0);
    assert!(!r.destinations[0].available, "not onto its own host");
    // A free AV host appears.
    p.advertise(host("x", OwnerState::Av, 1, vec![]), t0);
    let r = p.advertise(
        busy(vec![guest(1, "a", "alice", &[]), guest(2, "b", "bob", &[])]),
        t0,
    );
    assert!(r.destinations.iter().all(|d| d.available), "{r:?}");
    assert_eq!(r.destinations[1].home, "b");
    // x's policy denies bob; an NA or full x takes nobody.
    let mut x = host("x", OwnerState::Av, 1, vec![]);
    x.policy.deny_users = vec!["bob".into()];
    p.advertise(x, t0);
    let r = p.advertise(
        busy(vec![guest(1, "a", "alice", &[]), guest(2, "b", "bob", &[])]),
        t0,
    );
    let got: Vec<bool> = r.destinations.iter().map(|d| d.available).collect();
    assert_eq!(got, vec![true, false]);
    p.advertise(host("x", OwnerState::Na, 1, vec![]), t0);
    assert!(
        !p.advertise(busy(vec![guest(1, "a", "alice", &[])]), t0)
            .destinations[0]
            .available
    );
    p.advertise(
        host("x", OwnerState::Av, 1, vec![guest(9, "c", "carol", &[])]),
        t0,
    );
    assert!(
        !p.advertise(busy(vec![guest(1, "a", "alice", &[])]), t0)
            .destinations[0]
            .available
    );
}

/// A guest's licence units move with it: a licence it uses up itself does
/// not keep it from moving.
#[test]
fn a_guest_holding_the_last_licence_may_still_move() {
    let cfg = CoordinatorConfig {
        startup_grace_secs: Some(0.0),
        licences: [("matlab".to_string(), 1)].into(),
        ..CoordinatorConfig::default()
    };
    let t0 = Time::from_secs(10);
    let mut p = Pool::from_config(&cfg, Box::new(UnsignedClaims), 1, t0).unwrap();
    let mut out = Outbox::default();
    p.advertise(host("x", OwnerState::Av, 1, vec![]), t0, &mut out);
    let h = host(
        "h",
        OwnerState::Na,
        1,
        vec![guest(1, "a", "alice", &["matlab"])],
    );
    let r = p.advertise(h, t0, &mut out);
    assert!(r.destinations[0].available, "{r:?}");
    // Another guest holding the licence elsewhere: no unit for this one.
    let mut full = Pool::from_config(&cfg, Box::new(UnsignedClaims), 1, t0).unwrap();
    full.advertise(host("x", OwnerState::Av, 1, vec![]), t0, &mut out);
    let h = host(
        "h",
        OwnerState::Na,
        2,
        vec![
            guest(1, "a", "alice", &["matlab"]),
            guest(2, "b", "bob", &[]),
        ],
    );
    full.advertise(
        host(
            "y",
            OwnerState::Av,
            2,
            vec![guest(3, "c", "carol", &["matlab"])],
        ),
        t0,
        &mut out,
    );
    let r = full.advertise(h, t0, &mut out);
    let got: Vec<bool> = r.destinations.iter().map(|d| d.available).collect();
    assert_eq!(got, vec![false, true], "{r:?}");
}

/// The guest's class, as its host reports it, decides where it could go:
/// a destination must meet its requirements and have room for its
/// requests. Without a class (an older host) only the owner counts.
#[test]
fn a_destination_must_take_the_guest_as_it_is() {
    let (mut p, t0) = pool(0.0);
    let mut x = host("x", OwnerState::Av, 2, vec![]);
    x.memory_mb = 1024;
    x.attrs.insert("HasMatlab".into(), "true".into());
    p.advertise(x, t0);
    let with = |f: &dyn Fn(&mut gleaner_proto::job::JobDescription)| {
        let mut d = gleaner_proto::job::JobDescription::new("alice", "/bin/true");
        f(&mut d);
        let mut g = guest(1, "a", "alice", &[]);
        g.class = Some(gleaner_proto::matchmaking::JobClass::of(&d));
        g
    };
    let available = |p: &mut Served, g: GuestInfo| {
        p.advertise(host("h", OwnerState::Na, 1, vec![g]), t0)
            .destinations[0]
            .available
    };
    assert!(available(&mut p, guest(1, "a", "alice", &[])), "no class");
    assert!(available(&mut p, with(&|_| {})), "a plain job");
    assert!(available(
        &mut p,
        with(&|d| d.requirements = Some("HasMatlab".into()))
    ));
    assert!(!available(
        &mut p,
        with(&|d| d.requirements = Some("HasMatlab && Memory >= 2048".into()))
    ));
    assert!(!available(
        &mut p,
        with(&|d| d.request_memory_mb = Some(2048))
    ));
    assert!(!available(&mut p, with(&|d| d.request_cpus = 3)));
    // What the home avoids is the home's business.
    let mut g = with(&|_| {});
    if let Some(c) = g.class.as_mut() {
        c.avoid_hosts = vec!["x".into()];
    }
    assert!(available(&mut p, g));
}

/// The pool accounts every submitter's nodes across hosts, by
/// `SUBMITTER@HOME`; usage decays by the half-life once they end, and a
/// restarted coordinator (its `fairness.json`) remembers it.
#[test]
fn submitters_usage_is_accounted_pool_wide_and_survives_a_restart() {
    let (mut p, t0) = pool(0.0);
    let mut with_group = guest(3, "a", "ann", &[]);
    let mut class = gleaner_proto::matchmaking::JobClass::of(
        &gleaner_proto::job::JobDescription::new("ann", "/bin/true"),
    );
    class.owner = "ann".into();
    class.submitter = Some("physics.ann".into());
    with_group.class = Some(class);
    let hosts = |t: Time, p: &mut Served, busy: bool| {
        let guests = |v: Vec<GuestInfo>| if busy { v } else { Vec::new() };
        p.advertise(
            host(
                "h1",
                OwnerState::Av,
                4,
                guests(vec![guest(1, "a", "ann", &[]), guest(2, "b", "ann", &[])]),
            ),
            t,
        );
        p.advertise(
            host(
                "h2",
                OwnerState::Av,
                4,
                guests(vec![guest(1, "a", "bob", &[]), with_group.clone()]),
            ),
            t,
        );
    };
    // Four guests for three submitters at two homes, for 60 half-lives'
    // worth of ticks: usage reaches the nodes held.
    let mut t = t0;
    for _ in 0..200 {
        hosts(t, &mut p, true);
        p.tick(t);
        t += Dur::from_hours(12);
    }
    let rows = p.userprio().submitters;
    let got: Vec<(&str, u32)> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.nodes_held))
        .collect();
    assert_eq!(
        got,
        [
            ("ann@a", 1),
            ("ann@b", 1),
            ("bob@a", 1),
            ("physics.ann@a", 1)
        ],
        "the same Unix name at two homes is two submitters"
    );
    for r in &rows {
        assert!((r.usage - 1.0).abs() < 1e-6, "{r:?}");
        assert_eq!(r.name, format!("{}@{}", r.submitter, r.home));
    }
    // The guests end: one half-life later, half the usage is left.
    hosts(t, &mut p, false);
    p.tick(t);
    t += Dur::from_hours(24);
    hosts(t, &mut p, false);
    p.tick(t);
    let half = p.userprio().submitters;
    assert!(
        half.iter()
            .all(|r| r.nodes_held == 0 && (r.usage - 0.5).abs() < 1e-3),
        "{half:?}"
    );
    // A restart with the saved state: the same usage, decaying on.
    let saved = p.fairness();
    let text = serde_json::to_string(&saved).unwrap();
    let back: FairnessState = serde_json::from_str(&text).unwrap();
    assert_eq!(back, saved);
    let cfg = CoordinatorConfig::default();
    let mut again = Served::new(Pool::new(
        cfg.timing().unwrap(),
        Box::new(UnsignedClaims),
        &cfg.allocator,
        7,
        &back,
        t,
    ));
    assert_eq!(again.userprio().submitters, half);
    again.tick(t + Dur::from_hours(24));
    let quarter = again.userprio().submitters;
    assert!(
        quarter.iter().all(|r| (r.usage - 0.25).abs() < 1e-3),
        "{quarter:?}"
    );
}
