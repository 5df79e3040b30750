//! Properties of the free market over random sequences of requests,
//! cancellations, preemptions and expiries (issue 17; Mutka 1988 §6.3.1):
//! after every step money is conserved and NP held + committed is each
//! station's endowment (L1050); no 1st-class reservation is ever preempted;
//! nothing is preempted inside Preemptable_Time_Period (L1056); every
//! cancellation refunds at the schedule's rate (L1060); no reservation
//! holds fewer machines than its lower bound (L1068); a refusal changes
//! nothing. Deterministic: proptest's seed is fixed in the config.

use gleaner_core::reservation::params::{LockFrom, NpCancellation, PreemptOn, RefundAccount};
use gleaner_core::reservation::refund::refund_rate;
use gleaner_core::reservation::{
    AdmissionPolicy, Calendar, Class, Market, MarketParams, Money, MoneyAmount, Request, Window,
};
use gleaner_core::time::{Dur, Time};
use proptest::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Coverage: the random sequences must actually preempt and pay fees.
static PREEMPTIONS: AtomicU64 = AtomicU64::new(0);
static FEES: AtomicU64 = AtomicU64::new(0);
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const H: u64 = 3_600_000_000;
const STATIONS: usize = 8;

#[derive(Clone, Debug)]
enum Op {
    Reserve {
        user: usize,
        lead_h: u64,
        hours: u64,
        lower: u32,
        extra: u32,
        class: u8,
        specific: Vec<usize>,
    },
    Cancel {
        pick: usize,
        machines: Option<u32>,
        by_owner: bool,
    },
    Advance {
        hours: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..STATIONS + 1, 0u64..72, 1u64..4, 1u32..4, 0u32..3, 1u8..4,
              prop_oneof![4 => Just(vec![]), 1 => prop::collection::vec(0..2usize, 1..3)])
            .prop_map(|(user, lead_h, hours, mut lower, extra, class, mut specific)| {
                specific.sort();
                specific.dedup();
                if !specific.is_empty() {
                    lower = lower.min(specific.len() as u32);
                }
                Op::Reserve { user, lead_h, hours, lower, extra, class, specific }
            }),
        2 => (0usize..50, prop::option::of(1u32..3), any::<bool>())
            .prop_map(|(pick, machines, by_owner)| Op::Cancel { pick, machines, by_owner }),
        2 => (0u64..30).prop_map(|hours| Op::Advance { hours }),
    ]
}

fn build(policy: AdmissionPolicy, variant: u8) -> Market {
    let mut p = MarketParams {
        calendar: Calendar::SIM,
        policy,
        // More money than Table 6.4 so that long sequences keep trading.
        initial_p_money: MoneyAmount::per_workstation(Money::units(4)),
        ..MarketParams::default()
    };
    // Exercise the open questions' alternatives too.
    if variant & 1 == 1 {
        p.open.np_cancellation = NpCancellation::ScheduleUntilStop;
        p.open.refund_account = RefundAccount::Gains;
    }
    if variant & 2 == 2 {
        p.open.lock_from = LockFrom::EachSlot;
        p.open.refund_preempted = false;
    }
    if variant & 4 == 4 {
        p.open.preempt_on = PreemptOn::WhenAsked;
    }
    let mut m = Market::new(p).unwrap();
    for i in 0..STATIONS {
        m.add_station(&format!("s{i}"), &format!("u{i}"), false)
            .unwrap();
    }
    // Two donated stations: s0 always (public-like global donation), s1
    // nights.
    m.set_donation("s0", Some(Time(10_000 * H)), vec![])
        .unwrap();
    m.set_donation(
        "s1",
        None,
        vec![Window {
            first_day: 0,
            last_day: 6,
            from_min: 18 * 60,
            to_min: 8 * 60,
        }],
    )
    .unwrap();
    m.link_user("guest", "s2").unwrap();
    m.advance(Time(0));
    m
}

fn run(policy: AdmissionPolicy, variant: u8, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut m = build(policy, variant);
    let mut now = Time(0);
    let mut ids: Vec<u64> = Vec::new();
    let mut firsts: Vec<u64> = Vec::new();
    for op in ops {
        match op {
            Op::Reserve {
                user,
                lead_h,
                hours,
                lower,
                extra,
                class,
                specific,
            } => {
                let start_slot = now.0 / H + 1 + lead_h;
                let user = if *user == STATIONS {
                    "guest".to_string()
                } else {
                    format!("u{user}")
                };
                let class = Class::from_number(*class).unwrap();
                let req = Request {
                    user,
                    start: Time(start_slot * H),
                    stop: Time((start_slot + hours) * H),
                    lower: *lower,
                    upper: lower + extra,
                    class,
                    specific: specific.iter().map(|i| format!("s{i}")).collect(),
                    preempt: lead_h % 2 == 0,
                };
                let before = m.clone();
                // Which victims are locked now: record their lock state.
                match m.reserve(&req, now) {
                    Ok(g) => {
                        PREEMPTIONS.fetch_add(g.preempted.len() as u64, Ordering::Relaxed);
                        if g.fees > Money::ZERO {
                            FEES.fetch_add(1, Ordering::Relaxed);
                        }
                        ids.push(g.id);
                        if class == Class::First {
                            firsts.push(g.id);
                        }
                        prop_assert!(g.machines >= req.lower && g.machines <= req.upper);
                        for n in &g.preempted {
                            let v = before.reservation(n.reservation).unwrap();
                            prop_assert!(v.class != Class::First, "1st class preempted");
                            // The lock: lead to the reservation's (or the
                            // lost slot's) start exceeds the period.
                            let lead = Time(v.start * H).since(now);
                            if before.params().open.lock_from == LockFrom::ReservationStart {
                                prop_assert!(
                                    lead > Dur::from_hours(24),
                                    "preempted inside the lock"
                                );
                            } else {
                                prop_assert!(Time(v.stop * H).since(now) > Dur::from_hours(24));
                            }
                            prop_assert!(policy == AdmissionPolicy::FreeMarket);
                        }
                    }
                    Err(_) => prop_assert_eq!(&m, &before, "a refusal changed the state"),
                }
            }
            Op::Cancel {
                pick,
                machines,
                by_owner,
            } => {
                if ids.is_empty() {
                    continue;
                }
                let id = ids[pick % ids.len()];
                let Some(r) = m.reservation(id).cloned() else {
                    continue;
                };
                let user = if *by_owner {
                    r.user.clone()
                } else {
                    "nobody".to_string()
                };
                let before = m.clone();
                match m.cancel(id, &user, *machines, now) {
                    Ok(c) => {
                        prop_assert!(*by_owner);
                        if policy == AdmissionPolicy::FreeMarket {
                            let want = refund_rate(m.params(), Time(r.start * H).since(now));
                            prop_assert_eq!(Some(c.rate), want);
                        }
                    }
                    Err(_) => prop_assert_eq!(&m, &before),
                }
            }
            Op::Advance { hours } => {
                now += Dur::from_hours(*hours);
                m.advance(now);
            }
        }
        if let Err(e) = m.check_invariants() {
            return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
        }
        // A 1st-class reservation is never shortened by anyone but its
        // owner: if still listed before its stop, it holds what it got.
        for id in &firsts {
            if let Some(r) = m.reservation(*id) {
                prop_assert!(r.machines() >= r.lower);
            }
        }
    }
    // Everything expires in the end; all NP comes home.
    now += Dur::from_hours(24 * 60);
    m.advance(now);
    m.check_invariants().map_err(TestCaseError::fail)?;
    for (name, st) in m.stations() {
        prop_assert_eq!(st.accounts.np, st.np_endowment, "{}", name);
    }
    prop_assert!(m.reservation_list().is_empty());
    Ok(())
}

fn runner(cases: u32, seed: u8) -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    )
}

#[test]
fn free_market_invariants_hold_over_random_sequences() {
    for variant in 0..8u8 {
        let mut r = runner(128, 17 + variant);
        r.run(&prop::collection::vec(op(), 1..60), |ops| {
            run(AdmissionPolicy::FreeMarket, variant, &ops)
        })
        .unwrap();
    }
    let (p, f) = (
        PREEMPTIONS.load(Ordering::Relaxed),
        FEES.load(Ordering::Relaxed),
    );
    eprintln!("exercised {p} preemptions, {f} requests paying fees");
    assert!(
        p > 150 && f > 40,
        "too few preemptions exercised: {p} preemptions, {f} with fees"
    );
}

#[test]
fn baselines_keep_their_invariants() {
    for policy in [AdmissionPolicy::Fcfs, AdmissionPolicy::Pac { quota: 12 }] {
        let mut r = runner(64, 3);
        r.run(&prop::collection::vec(op(), 1..60), |ops| {
            run(policy, 0, &ops)
        })
        .unwrap();
    }
}
