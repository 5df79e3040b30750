//! The reservation partition in the pool (Mutka 1988 §6.2–6.3): reserved
//! stations run only their holder's jobs, the holder runs only there, an
//! owner's return is replaced by Longest-Free (or counted as an error),
//! driven with an injected clock. A property test checks the partition on
//! random sequences of owners coming and going, submissions and
//! reservations.

use super::partition::{Partition, Seen};
use super::*;
use crate::CoordinatorConfig;
use crate::mailbox::Served;
use crate::reserve_config::{ReservationsConfig, ShareConfig};
use gleaner_core::reservation::replacement::ReplacementRule;
use gleaner_core::reservation::session::{RequestEntry, RequestOp};
use gleaner_core::reservation::{Class, Request};
use gleaner_core::time::Dur;
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::wire::{Grant, GuestInfo};
use proptest::prelude::*;

/// Slot-aligned (a multiple of an hour).
const T0: u64 = 1_763_337_600;
const SLOT: u64 = 60;

fn res_config(rule: ReplacementRule) -> ReservationsConfig {
    ReservationsConfig {
        slot_secs: SLOT,
        reservable_share: ShareConfig::All(1.0),
        replacement: rule,
        // Enough money for the longer test reservations.
        initial_p_money: crate::reserve_config::AmountConfig {
            fixed: 0.0,
            per_workstation: 10.0,
        },
        accounts: [("alice", "h1"), ("bob", "h2"), ("carol", "h3")]
            .into_iter()
            .map(|(u, s)| (u.to_string(), s.to_string()))
            .collect(),
        ..ReservationsConfig::default()
    }
}

struct Sim {
    pool: Served,
    t: Time,
    hosts: BTreeMap<String, StationAd>,
    homes: BTreeMap<String, StationAd>,
    next_job: u64,
    /// Every grant: (host, owner of the granted class, holder of the host
    /// at that moment, whether the owner held stations then).
    log: Vec<(String, String, Option<String>, bool)>,
}

fn host(name: &str) -> StationAd {
    let mut a = crate::matchmaker::tests::host(name, 1, 1024, 1.0);
    a.execute_only = true;
    a
}

fn home(name: &str) -> StationAd {
    let mut a = crate::matchmaker::tests::host(name, 0, 0, 1.0);
    a.submit_only = true;
    a.state = OwnerState::Na;
    a
}

impl Sim {
    fn new(hosts: usize, rule: ReplacementRule) -> Sim {
        let cfg = CoordinatorConfig {
            startup_grace_secs: Some(0.0),
            advertise_period_secs: 10,
            embargo_secs: Some(0.0),
            ..CoordinatorConfig::default()
        };
        let t = Time::from_secs(T0);
        let part = Partition::new(&res_config(rule), 3, None).unwrap();
        let pool = Pool::new(
            cfg.timing().unwrap(),
            Box::new(UnsignedClaims),
            &cfg.allocator,
            7,
            &FairnessState::default(),
            t,
        )
        .with_partition(part);
        let mut s = Sim {
            pool: Served::new(pool),
            t,
            hosts: BTreeMap::new(),
            homes: BTreeMap::new(),
            next_job: 1,
            log: Vec::new(),
        };
        for i in 1..=hosts {
            let n = format!("h{i}");
            s.hosts.insert(n.clone(), host(&n));
        }
        for u in ["alice", "bob", "carol"] {
            let n = format!("home-{u}");
            s.homes.insert(n.clone(), home(&n));
        }
        s.step();
        s
    }

    fn partition(&self) -> &Partition {
        self.pool.partition().unwrap()
    }

    fn submit(&mut self, user: &str, n: u32) {
        let h = self.homes.get_mut(&format!("home-{user}")).unwrap();
        let c = JobClass::of(&JobDescription::new(user, "/bin/true"));
        match h.classes.iter_mut().find(|x| x.key == c.key) {
            Some(x) => x.count += n,
            None => h.classes.push(JobClass { count: n, ..c }),
        }
        h.demand.idle_jobs += n;
    }

    fn reserve(&mut self, user: &str, machines: u32, from_slot: u64, slots: u64) -> bool {
        let start = Time::from_secs(T0 + from_slot * SLOT);
        let stop = Time::from_secs(T0 + (from_slot + slots) * SLOT);
        let row = RequestEntry {
            row: 1,
            op: RequestOp::Add(Request {
                user: user.into(),
                start,
                stop,
                lower: machines,
                upper: machines,
                class: Class::Second,
                specific: vec![],
                preempt: false,
            }),
        };
        let t = self.t;
        let acks = self
            .pool
            .with_partition(t, |p| p.sync(user, &[row], t))
            .unwrap();
        acks[0].accepted
    }

    fn use_grant(&mut self, home_name: &str, g: &Grant) {
        let holder = self.partition().holder(&g.host).map(str::to_string);
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
        let owner = c.owner.clone();
        h.demand.idle_jobs -= 1;
        h.demand.remote_jobs += 1;
        h.classes.retain(|c| c.count > 0);
        let confined = self.pool.partition().unwrap().holds_any(&owner);
        self.log
            .push((g.host.clone(), owner.clone(), holder, confined));
        let id = self.next_job;
        self.next_job += 1;
        if let Some(host) = self.hosts.get_mut(&g.host) {
            host.running_guests.push(GuestInfo {
                job: JobId::new(id, 0),
                home: home_name.to_string(),
                owner,
                since: self.t,
                suspended: false,
                concurrency_limits: Vec::new(),
                class: None,
            });
        }
    }

    /// Preempted guests leave at once; a guest on an NA host is vacated by
    /// the host itself and requeued.
    fn vacate(&mut self, host: &str, job: JobId) {
        let Some(h) = self.hosts.get_mut(host) else {
            return;
        };
        let Some(i) = h.running_guests.iter().position(|g| g.job == job) else {
            return;
        };
        let g = h.running_guests.remove(i);
        let user = g.owner.clone();
        if let Some(home) = self.homes.get_mut(&g.home) {
            home.demand.remote_jobs -= 1;
        }
        self.submit(&user, 1);
    }

    fn set_owner(&mut self, host: &str, active: bool) {
        let jobs: Vec<JobId> = {
            let h = self.hosts.get_mut(host).unwrap();
            h.state = if active {
                OwnerState::Na
            } else {
                OwnerState::Av
            };
            if active {
                h.running_guests.iter().map(|g| g.job).collect()
            } else {
                Vec::new()
            }
        };
        for j in jobs {
            self.vacate(host, j);
        }
    }

    /// One second: every station advertises, grants are used and
    /// preemptions obeyed at once; a tick every 5 s.
    fn step(&mut self) {
        self.t += Dur::from_secs(1);
        let t = self.t;
        let mut replies = Vec::new();
        for h in self.hosts.values().cloned().collect::<Vec<_>>() {
            replies.push((h.name.clone(), self.pool.advertise(h, t)));
        }
        for h in self.homes.values().cloned().collect::<Vec<_>>() {
            replies.push((h.name.clone(), self.pool.advertise(h, t)));
        }
        if (t.as_micros() / 1_000_000).is_multiple_of(5) {
            self.pool.tick(t);
            for h in self.homes.values().cloned().collect::<Vec<_>>() {
                replies.push((h.name.clone(), self.pool.advertise(h, t)));
            }
        }
        for (name, r) in replies {
            for g in &r.grants {
                self.use_grant(&name, g);
            }
            for p in &r.preemptions {
                if let Some(j) = p.job {
                    self.vacate(&p.host, j);
                }
            }
        }
    }

    fn run(&mut self, secs: u64) {
        for _ in 0..secs {
            self.step();
        }
    }

    fn owners_on(&self, host: &str) -> Vec<String> {
        self.hosts[host]
            .running_guests
            .iter()
            .map(|g| g.owner.clone())
            .collect()
    }

    /// Whether any grant broke the partition.
    fn violations(&self) -> Vec<&(String, String, Option<String>, bool)> {
        self.log
            .iter()
            .filter(|(_, owner, holder, confined)| match holder {
                Some(h) => h != owner,
                None => *confined,
            })
            .collect()
    }
}

#[test]
fn reserved_stations_run_only_their_holders_jobs() {
    let mut s = Sim::new(4, ReplacementRule::LongestFree);
    s.submit("alice", 6);
    s.submit("bob", 6);
    assert!(s.reserve("alice", 2, 1, 2));
    s.run(30);
    // Before the slot: both users share the pool.
    let mut before: Vec<String> = (1..=4)
        .flat_map(|i| s.owners_on(&format!("h{i}")))
        .collect();
    before.sort();
    assert!(before.contains(&"alice".to_string()) && before.contains(&"bob".to_string()));
    // Into the reserved slot.
    s.run(SLOT);
    let bound: Vec<String> = s.partition().bound().into_iter().map(|b| b.0).collect();
    assert_eq!(bound.len(), 2, "two stations serve alice");
    for i in 1..=4 {
        let h = format!("h{i}");
        let owners = s.owners_on(&h);
        if bound.contains(&h) {
            assert!(owners.iter().all(|o| o == "alice"), "{h}: {owners:?}");
            assert!(!owners.is_empty(), "{h} idle while alice waits");
        } else {
            assert!(owners.iter().all(|o| o == "bob"), "{h}: {owners:?}");
        }
    }
    assert!(s.violations().is_empty(), "{:?}", s.violations());
    // After the reservation's two slots, the partition ends.
    s.run(2 * SLOT);
    assert!(s.partition().bound().is_empty());
    assert!(s.partition().market().reservation_list().is_empty());
}

#[test]
fn owner_return_is_replaced_by_the_longest_free_station() {
    let mut s = Sim::new(4, ReplacementRule::LongestFree);
    s.submit("alice", 4);
    assert!(s.reserve("alice", 2, 1, 3));
    // h4's owner comes and goes before the slot: h4 is the most recently
    // freed station, h3 has been free longest among the unbound ones.
    s.set_owner("h4", true);
    s.run(10);
    s.set_owner("h4", false);
    s.run(SLOT);
    let bound: Vec<String> = s.partition().bound().into_iter().map(|b| b.0).collect();
    assert_eq!(bound, vec!["h1".to_string(), "h2".to_string()]);
    s.set_owner("h1", true);
    s.step();
    let bound: Vec<String> = s.partition().bound().into_iter().map(|b| b.0).collect();
    assert_eq!(
        bound,
        vec!["h2".to_string(), "h3".to_string()],
        "Longest-Free picks h3"
    );
    let st = s.partition().stats();
    assert_eq!((st.withdrawals, st.replaced, st.errors), (1, 1, 0));
    s.run(5);
    assert_eq!(s.owners_on("h3"), vec!["alice".to_string()]);
    // Every other owner returns: nothing left to replace with, an error.
    s.set_owner("h4", true);
    s.set_owner("h3", true);
    s.set_owner("h2", true);
    s.step();
    // (Ads arrive one by one: a station whose own ad is not in yet may
    // stand in for a moment and be withdrawn in turn.)
    let st = s.partition().stats();
    assert!(st.withdrawals >= 3, "{st:?}");
    assert_eq!(st.withdrawals, st.replaced + st.errors);
    assert_eq!(st.errors, 2, "{st:?}");
    assert!(s.partition().bound().is_empty());
    // h1 back: it fills the reservation left short.
    s.set_owner("h1", false);
    s.step();
    assert_eq!(s.partition().bound().len(), 1);
}

#[test]
fn random_replacement_is_seeded() {
    let run = || {
        let mut s = Sim::new(6, ReplacementRule::Random);
        assert!(s.reserve("alice", 2, 1, 2));
        s.run(SLOT);
        let first = s.partition().bound();
        s.set_owner(&first[0].0, true);
        s.step();
        s.partition().bound()
    };
    assert_eq!(run(), run());
}

#[test]
fn a_station_joins_unless_submit_only_and_donation_follows_the_ad() {
    let mut s = Sim::new(2, ReplacementRule::LongestFree);
    let names: Vec<String> = s
        .partition()
        .market()
        .stations()
        .map(|(n, _)| n.to_string())
        .collect();
    assert_eq!(names, vec!["h1", "h2"]);
    s.hosts
        .get_mut("h2")
        .unwrap()
        .attrs
        .insert(super::partition::DONATED_ATTR.into(), "true".into());
    s.step();
    let slot = s.partition().market().slot_of(s.t);
    assert_eq!(s.partition().market().donated(slot), vec!["h2"]);
    // Specific stations only where donated (L974).
    let mut p = Partition::new(&res_config(ReplacementRule::LongestFree), 1, None).unwrap();
    let t = Time::from_secs(T0);
    for (n, d) in [("h1", false), ("h2", true)] {
        p.observe(
            n,
            Seen {
                hosting: true,
                donated: d,
            },
            t,
        );
    }
    let specific = |st: &str| RequestEntry {
        row: 1,
        op: RequestOp::Add(Request {
            user: "alice".into(),
            start: Time::from_secs(T0 + SLOT),
            stop: Time::from_secs(T0 + 2 * SLOT),
            lower: 1,
            upper: 1,
            class: Class::Second,
            specific: vec![st.to_string()],
            preempt: false,
        }),
    };
    assert!(!p.sync("alice", &[specific("h1")], t)[0].accepted);
    assert!(p.sync("alice", &[specific("h2")], t)[0].accepted);
    // Rows naming another user are refused.
    let mut row = specific("h2");
    if let RequestOp::Add(r) = &mut row.op {
        r.user = "bob".into();
    }
    assert!(!p.sync("alice", &[row], t)[0].accepted);
}

#[derive(Clone, Debug)]
enum Act {
    Submit(u8, u8),
    Owner(u8, bool),
    Reserve(u8, u8, u8, u8),
    Cancel(u8),
    Wait(u8),
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        (0..3u8, 1..4u8).prop_map(|(u, n)| Act::Submit(u, n)),
        (1..6u8, any::<bool>()).prop_map(|(h, a)| Act::Owner(h, a)),
        (0..3u8, 1..3u8, 0..3u8, 1..3u8).prop_map(|(u, m, f, n)| Act::Reserve(u, m, f, n)),
        (0..3u8).prop_map(Act::Cancel),
        (1..40u8).prop_map(Act::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        rng_seed: proptest::test_runner::RngSeed::Fixed(17),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// While a reservation is active, its stations never get another
    /// user's job, and its holder's jobs go nowhere else; running guests
    /// that break the partition are asked to leave within a pass.
    #[test]
    fn the_partition_holds(acts in proptest::collection::vec(act(), 1..30)) {
        let users = ["alice", "bob", "carol"];
        let mut s = Sim::new(5, ReplacementRule::LongestFree);
        for a in acts {
            match a {
                Act::Submit(u, n) => s.submit(users[u as usize], u32::from(n)),
                Act::Owner(h, active) => s.set_owner(&format!("h{h}"), active),
                Act::Reserve(u, m, f, n) => {
                    let slot = (s.t.as_micros() / 1_000_000 - T0) / SLOT + 1 + u64::from(f);
                    s.reserve(users[u as usize], u32::from(m), slot, u64::from(n));
                }
                Act::Cancel(u) => {
                    let user = users[u as usize];
                    let ids: Vec<u64> = s.partition().market().reservations_of(user).iter().map(|r| r.id).collect();
                    let t = s.t;
                    for id in ids {
                        let row = RequestEntry { row: 1, op: RequestOp::Delete { reservation: id, machines: None } };
                        s.pool.with_partition(t, |p| p.sync(user, &[row], t));
                    }
                }
                Act::Wait(n) => s.run(u64::from(n)),
            }
            s.step();
            prop_assert!(s.violations().is_empty(), "{:?}", s.violations());
            // After a pass and the delivery of its mail, running guests
            // obey the partition too (unless a slot began meanwhile).
            let slot = s.partition().market().slot_of(s.t);
            let t = s.t;
            s.pool.tick(t);
            s.step();
            let p = s.partition();
            if p.market().slot_of(s.t) != slot {
                continue;
            }
            for (name, h) in &s.hosts {
                if h.state != OwnerState::Av { continue; }
                for g in &h.running_guests {
                    prop_assert!(p.allows(name, Some(&g.owner)), "{} runs {}'s job; holder {:?}", name, g.owner, p.holder(name));
                }
            }
            prop_assert!(p.market().check_invariants().is_ok());
        }
    }
}

/// An owner returning at the instant its station's reserved hour ended is
/// no withdrawal from that hour: the role moves to the new slot first and
/// binds it from the stations AV then (Mutka 1988 L883: the error is an
/// hour's shortfall). A continuing reservation gets another machine, and
/// nothing is counted.
#[test]
fn an_owner_returning_as_the_slot_ends_is_no_withdrawal() {
    let ad = |hosting| Seen {
        hosting,
        donated: false,
    };
    let at = |slot: u64| Time::from_secs(T0 + slot * SLOT);
    let before = |secs: u64| Time::from_secs(T0 - secs);
    let after = |slot: u64, secs: u64| Time::from_secs(T0 + slot * SLOT + secs);
    let reserve = |p: &mut Partition, slots: u64| {
        let row = RequestEntry {
            row: 1,
            op: RequestOp::Add(Request {
                user: "alice".into(),
                start: at(0),
                stop: at(slots),
                lower: 1,
                upper: 1,
                class: Class::Second,
                specific: vec![],
                preempt: false,
            }),
        };
        assert!(p.sync("alice", &[row], at(0))[0].accepted);
    };
    for slots in [1, 2] {
        let mut p = Partition::new(&res_config(ReplacementRule::LongestFree), 1, None).unwrap();
        // h1 AV longest: Longest-Free binds it.
        p.observe("h1", ad(true), before(10));
        p.observe("h2", ad(true), before(5));
        reserve(&mut p, slots);
        assert_eq!(p.holder("h1"), Some("alice"));
        // h1's owner is back exactly when slot 1 begins.
        let r = p.observe("h1", ad(false), at(1));
        assert!(r.replaced.is_empty(), "{r:?}");
        assert_eq!(p.stats(), super::partition::ReplacementStats::default());
        let want = (slots == 2).then_some("alice");
        assert_eq!(p.holder("h2"), want, "slots {slots}");
        assert_eq!(p.holder("h1"), None);
        // Inside the slot the same return is a withdrawal, replaced.
        if slots == 2 {
            p.observe("h1", ad(true), after(1, 1));
            let r = p.observe("h2", ad(false), after(1, 2));
            assert_eq!(r.replaced, vec![("h2".to_string(), Some("h1".to_string()))]);
            assert_eq!(p.stats().withdrawals, 1);
            assert_eq!(p.stats().replaced, 1);
        }
    }
}
