//! The free market's rules, one scenario each (Mutka 1988 §6.3.1,
//! seeds/000_14c1149197e96532.txt L1023–1068, Tables 6.3/6.4).

use gleaner_core::reservation::params::{NpCancellation, PreemptOn, RefundBoundary};
use gleaner_core::reservation::refund::refund_rate;
use gleaner_core::reservation::session::{RequestEntry, RequestOp};
use gleaner_core::reservation::{
    AdmissionPolicy, Calendar, Class, Market, MarketError, MarketParams, MaskState, Money, Rate,
    Request, Window,
};
use gleaner_core::time::{Dur, Time};

const H: u64 = 3_600_000_000;

fn hour(h: u64) -> Time {
    Time(h * H)
}

/// `n` stations s0…, owner uK linked to sK; 40 % reservable (Table 6.4
/// defaults otherwise); simulator calendar.
fn market_with(n: usize, f: impl FnOnce(&mut MarketParams)) -> Market {
    let mut p = MarketParams {
        calendar: Calendar::SIM,
        ..MarketParams::default()
    };
    f(&mut p);
    let mut m = Market::new(p).unwrap();
    for i in 0..n {
        m.add_station(&format!("s{i}"), &format!("u{i}"), false)
            .unwrap();
    }
    m.advance(Time(0));
    m
}

fn market(n: usize) -> Market {
    market_with(n, |_| {})
}

fn req(user: &str, start_h: u64, hours: u64, lower: u32, upper: u32, class: Class) -> Request {
    Request {
        user: user.into(),
        start: hour(start_h),
        stop: hour(start_h + hours),
        lower,
        upper,
        class,
        specific: vec![],
        preempt: false,
    }
}

fn p_of(m: &Market, s: &str) -> Money {
    m.station(s).unwrap().accounts.p()
}

#[test]
fn table_6_4_defaults() {
    let p = MarketParams::default();
    assert_eq!(p.preemptable_time_period, Dur::from_hours(24));
    assert_eq!(p.discount_rate, Rate::percent(50));
    assert_eq!(
        (p.first_class_rate, p.second_class_rate, p.third_class_rate),
        (Money::units(2), Money::units(1), Money::units(1))
    );
    assert_eq!(p.maximum_income.resolve(23), Money::units(69));
    assert_eq!(p.initial_p_money.resolve(23), Money::units(23));
    assert_eq!(p.initial_np_money.resolve(23), Money::units(23));
    assert_eq!(
        [
            p.early_cancel_time,
            p.middle_cancel_time,
            p.late_cancel_time,
            p.last_cancel_time
        ],
        [
            Dur::from_hours(72),
            Dur::from_hours(48),
            Dur::from_hours(24),
            Dur::from_hours(2)
        ]
    );
    assert_eq!(
        [
            p.early_cancel_rate,
            p.middle_cancel_rate,
            p.late_cancel_rate,
            p.last_cancel_rate
        ],
        [
            Rate::percent(90),
            Rate::percent(75),
            Rate::percent(50),
            Rate::percent(25)
        ]
    );
    assert_eq!(p.preemption_fee_rate, Rate::percent(50));
}

#[test]
fn refunds_follow_the_table_at_each_boundary() {
    let p = MarketParams::default();
    let us = Dur(1);
    let d = |h: u64| Dur::from_hours(h);
    let cases = [
        (d(72) + us, Some(90)),
        (d(72), Some(75)),
        (d(48) + us, Some(75)),
        (d(48), Some(50)),
        (d(24) + us, Some(50)),
        (d(24), Some(25)),
        (d(2), Some(25)),
        (Dur(d(2).0 - 1), None),
        (Dur::ZERO, None),
    ];
    for (lead, want) in cases {
        assert_eq!(
            refund_rate(&p, lead),
            want.map(Rate::percent),
            "lead {lead:?}"
        );
    }
    let mut q = p.clone();
    q.open.refund_boundary = RefundBoundary::AtLeast;
    assert_eq!(refund_rate(&q, d(72)), Some(Rate::percent(90)));
    assert_eq!(refund_rate(&q, d(48)), Some(Rate::percent(75)));
    assert_eq!(refund_rate(&q, d(24)), Some(Rate::percent(50)));
    assert_eq!(refund_rate(&q, Dur(d(2).0 - 1)), None);
}

#[test]
fn bounds_the_most_up_to_upper_and_nothing_below_lower() {
    // 10 stations, 40 %: 4 machines an hour.
    let mut m = market(10);
    assert_eq!(m.capacity(100), 4);
    let g = m
        .reserve(&req("u0", 100, 2, 2, 6, Class::Second), Time(0))
        .unwrap();
    assert_eq!(g.machines, 4);
    assert_eq!(g.paid, Money::units(8));
    assert_eq!(p_of(&m, "s0"), Money::units(2));
    let before = m.clone();
    let e = m
        .reserve(&req("u1", 101, 1, 1, 1, Class::Second), Time(0))
        .unwrap_err();
    assert_eq!(
        e,
        MarketError::Unavailable {
            lower: 1,
            available: 0
        }
    );
    assert_eq!(m, before, "a refusal changes nothing");
    m.check_invariants().unwrap();
}

#[test]
fn spending_takes_capital_gains_first() {
    // A 1st-class preemption gives s1 a capital gain; then s1 spends it
    // before its income money (L1058).
    let mut m = market(10);
    m.reserve(&req("u1", 100, 1, 1, 4, Class::Second), Time(0))
        .unwrap();
    let g = m
        .reserve(&req("u0", 100, 1, 1, 1, Class::First), Time(0))
        .unwrap();
    assert_eq!(g.fees, Money::from_f64(0.5));
    let acc = m.station("s1").unwrap().accounts;
    assert_eq!(acc.p_g, Money::from_f64(0.5));
    m.reserve(&req("u1", 120, 1, 1, 1, Class::Second), Time(0))
        .unwrap();
    let acc = m.station("s1").unwrap().accounts;
    assert_eq!(acc.p_g, Money::ZERO);
    // 10 − 4 paid + 1 refunded − 0.5 after the 0.5 of gains.
    assert_eq!(acc.p_d, Money::from_f64(6.5));
    m.check_invariants().unwrap();
}

#[test]
fn first_preempts_second_pays_the_fee_and_the_victim_is_refunded() {
    let mut m = market(10);
    let v = m
        .reserve(&req("u1", 100, 2, 2, 4, Class::Second), Time(0))
        .unwrap();
    let s1 = p_of(&m, "s1");
    let g = m
        .reserve(&req("u0", 100, 2, 2, 2, Class::First), Time(0))
        .unwrap();
    assert_eq!(g.machines, 2);
    // 2 machines × 2 slots at 2 P, plus ½ × 1 P per preempted slot.
    assert_eq!(g.paid, Money::units(8));
    assert_eq!(g.fees, Money::units(2));
    assert_eq!(p_of(&m, "s0"), Money::units(10 - 8 - 2));
    let n = &g.preempted[0];
    assert_eq!((n.reservation, n.slots, n.whole), (v.id, 4, false));
    // Refund of the 4 lost slots (1 P each) and the 2 P fee as a gain.
    assert_eq!(p_of(&m, "s1"), s1 + Money::units(4) + Money::units(2));
    assert_eq!(m.reservation(v.id).unwrap().machines(), 2);
    m.check_invariants().unwrap();
}

#[test]
fn a_victim_pushed_below_its_lower_bound_goes_entirely() {
    let mut m = market(10);
    let v = m
        .reserve(&req("u1", 100, 2, 4, 4, Class::Second), Time(0))
        .unwrap();
    let g = m
        .reserve(&req("u0", 101, 1, 1, 1, Class::First), Time(0))
        .unwrap();
    assert!(g.preempted[0].whole);
    assert!(m.reservation(v.id).is_none());
    assert_eq!(p_of(&m, "s1"), Money::units(10) + Money::from_f64(0.5));
    m.check_invariants().unwrap();
}

#[test]
fn first_class_is_never_preempted() {
    let mut m = market(10);
    m.reserve(&req("u1", 100, 1, 4, 4, Class::First), Time(0))
        .unwrap();
    let e = m
        .reserve(&req("u0", 100, 1, 1, 1, Class::First), Time(0))
        .unwrap_err();
    assert!(matches!(e, MarketError::Unavailable { .. }), "{e}");
}

#[test]
fn nothing_is_preempted_inside_the_lock() {
    let mut m = market(10);
    m.reserve(&req("u1", 100, 1, 4, 4, Class::Second), Time(0))
        .unwrap();
    // Exactly Preemptable_Time_Period (1 day) before its start: locked.
    let at = hour(100 - 24);
    let e = m
        .reserve(&req("u0", 100, 1, 1, 1, Class::First), at)
        .unwrap_err();
    assert!(matches!(e, MarketError::Unavailable { .. }), "{e}");
    // One microsecond earlier it could still be preempted.
    let ok = m.reserve(&req("u0", 100, 1, 1, 1, Class::First), Time(at.0 - 1));
    assert!(ok.is_ok());
}

#[test]
fn third_class_yields_to_second_and_to_richer_third() {
    let mut m = market(10);
    let np0 = m.station("s1").unwrap().accounts.np;
    let t = m
        .reserve(&req("u1", 100, 1, 1, 4, Class::Third), Time(0))
        .unwrap();
    assert_eq!(m.station("s1").unwrap().accounts.np, np0 - Money::units(4));
    // s2 has 10 NP, s1 6: s2's 3rd class may preempt s1's.
    let g = m
        .reserve(&req("u2", 100, 1, 1, 1, Class::Third), Time(0))
        .unwrap();
    assert_eq!(g.preempted[0].reservation, t.id);
    assert_eq!(g.fees, Money::ZERO);
    // s1 (now 7 NP) cannot take back from s2 (9 NP).
    let e = m
        .reserve(&req("u1", 100, 1, 1, 1, Class::Third), Time(0))
        .unwrap_err();
    assert!(matches!(e, MarketError::Unavailable { .. }), "{e}");
    // 2nd class preempts 3rd with no fee; the NP comes back.
    let g = m
        .reserve(&req("u3", 100, 1, 4, 4, Class::Second), Time(0))
        .unwrap();
    assert_eq!(g.fees, Money::ZERO);
    assert_eq!(g.preempted.len(), 2);
    assert_eq!(m.station("s1").unwrap().accounts.np, np0);
    m.check_invariants().unwrap();
}

#[test]
fn cancellation_refund_and_resale_discount_match_the_worked_example() {
    // A 2nd-class slot (1 P) cancelled 2.5 days ahead: 75 % back; a later
    // buyer pays 1 − ½ × 0.25 = 0.875 and the canceller gets 0.125 more
    // (spec mutka-thesis.md §2.9, L1060–1062).
    let mut m = market(10);
    let r = m
        .reserve(&req("u1", 100, 1, 4, 4, Class::Second), Time(0))
        .unwrap();
    let now = hour(100 - 60);
    let before = p_of(&m, "s1");
    let c = m.cancel(r.id, "u1", Some(1), now).unwrap();
    assert_eq!(c.rate, Rate::percent(75));
    assert_eq!(c.refund, Money::from_f64(0.75));
    assert_eq!(p_of(&m, "s1"), before + Money::from_f64(0.75));
    let g = m
        .reserve(&req("u2", 100, 1, 1, 1, Class::Second), now)
        .unwrap();
    assert_eq!(g.paid, Money::from_f64(0.875));
    assert_eq!(g.discount, Money::from_f64(0.125));
    assert_eq!(p_of(&m, "s1"), before + Money::from_f64(0.875));
    // Within Last_cancel_time of the start: refused.
    let e = m.cancel(r.id, "u1", None, hour(99)).unwrap_err();
    assert_eq!(e, MarketError::TooLate);
    assert_eq!(
        m.cancel(r.id, "u2", None, now).unwrap_err(),
        MarketError::NotYours(r.id)
    );
    m.check_invariants().unwrap();
}

#[test]
fn np_is_returned_whole_by_default_and_after_stop_under_the_schedule() {
    let mut m = market(10);
    let r = m
        .reserve(&req("u1", 100, 2, 2, 2, Class::Third), Time(0))
        .unwrap();
    m.cancel(r.id, "u1", None, hour(90)).unwrap();
    assert_eq!(m.station("s1").unwrap().accounts.np, Money::units(10));

    let mut m = market_with(10, |p| {
        p.open.np_cancellation = NpCancellation::ScheduleUntilStop
    });
    let r = m
        .reserve(&req("u1", 100, 2, 2, 2, Class::Third), Time(0))
        .unwrap();
    let c = m.cancel(r.id, "u1", None, hour(90)).unwrap();
    assert_eq!(c.refund, Money::units(1)); // 25 % of 4 NP
    assert_eq!(m.station("s1").unwrap().accounts.np, Money::units(7));
    m.check_invariants().unwrap();
    m.advance(hour(102));
    assert_eq!(m.station("s1").unwrap().accounts.np, Money::units(10));
    m.check_invariants().unwrap();
}

#[test]
fn income_is_paid_daily_and_capped() {
    let mut m = market_with(7, |p| {
        p.daily_income = gleaner_core::reservation::MoneyAmount::fixed(Money::units(1));
    }); // income 1 P a day, cap 21
    m.advance(hour(24));
    assert_eq!(p_of(&m, "s0"), Money::units(8));
    m.advance(hour(24 * 100));
    assert_eq!(m.station("s0").unwrap().accounts.p_d, Money::units(21));
    m.check_invariants().unwrap();
}

#[test]
fn specific_stations_only_where_donated() {
    let mut m = market(10);
    let mut r = req("u0", 100, 2, 1, 1, Class::Second);
    r.specific = vec!["s5".into()];
    assert_eq!(
        m.reserve(&r, Time(0)).unwrap_err(),
        MarketError::NotDonated {
            station: "s5".into()
        }
    );
    // Hours 100–101 are day 4 (Friday) 4:00–6:00; donate M-F 20:00-6:00.
    m.set_donation(
        "s5",
        None,
        vec![Window {
            first_day: 0,
            last_day: 4,
            from_min: 20 * 60,
            to_min: 6 * 60,
        }],
    )
    .unwrap();
    let g = m.reserve(&r, Time(0)).unwrap();
    assert_eq!(g.stations, vec!["s5".to_string()]);
    assert_eq!(m.mask(100)[5], ("s5".into(), MaskState::ReservedSpecific));
    // Donated capacity adds to the share: 40 % of 9 = 3, plus s5.
    assert_eq!(m.capacity(100), 4);
    let mut r2 = req("u1", 100, 1, 1, 1, Class::Second);
    r2.specific = vec!["s5".into()];
    assert!(m.reserve(&r2, Time(0)).is_err(), "2nd does not preempt 2nd");
    r2.class = Class::First;
    let g2 = m.reserve(&r2, Time(0)).unwrap();
    assert_eq!(g2.preempted.len(), 1);
    m.check_invariants().unwrap();
}

#[test]
fn preempting_only_when_asked_is_a_setting() {
    let mut m = market_with(10, |p| p.open.preempt_on = PreemptOn::WhenAsked);
    m.reserve(&req("u1", 100, 1, 4, 4, Class::Second), Time(0))
        .unwrap();
    let mut r = req("u0", 100, 1, 1, 1, Class::First);
    assert!(m.reserve(&r, Time(0)).is_err());
    r.preempt = true;
    assert!(m.reserve(&r, Time(0)).is_ok());
}

#[test]
fn fcfs_lets_the_first_take_everything_and_pac_enforces_the_quota() {
    let mut m = market_with(10, |p| p.policy = AdmissionPolicy::Fcfs);
    m.reserve(&req("u0", 100, 10, 4, 4, Class::Second), Time(0))
        .unwrap();
    assert!(
        m.reserve(&req("u1", 100, 1, 1, 1, Class::First), Time(0))
            .is_err()
    );
    assert_eq!(p_of(&m, "s0"), Money::units(10), "no money moves");

    let mut m = market_with(10, |p| p.policy = AdmissionPolicy::Pac { quota: 6 });
    let g = m
        .reserve(&req("u0", 100, 2, 1, 4, Class::Second), Time(0))
        .unwrap();
    assert_eq!(g.machines, 3);
    assert_eq!(
        m.reserve(&req("u0", 102, 1, 1, 1, Class::Second), Time(0))
            .unwrap_err(),
        MarketError::Quota {
            station: "s0".into(),
            quota: 6
        }
    );
    m.check_invariants().unwrap();
}

#[test]
fn a_session_syncs_rows_in_order() {
    let mut m = market(10);
    let rows = vec![
        RequestEntry {
            row: 5,
            op: RequestOp::Add(req("u0", 100, 3, 2, 3, Class::Second)),
        },
        RequestEntry {
            row: 6,
            op: RequestOp::Add(req("u0", 100, 3, 4, 4, Class::Second)),
        },
        RequestEntry {
            row: 7,
            op: RequestOp::Add(req("u9", 100, 1, 1, 1, Class::Second)),
        },
    ];
    let acks = m.sync("u0", &rows, Time(0));
    assert!(acks[0].accepted && acks[0].machines == 3);
    assert!(!acks[1].accepted && acks[1].error.is_some());
    assert!(!acks[2].accepted, "a row for another user");
    let id = acks[0].reservation.unwrap();
    let del = vec![RequestEntry {
        row: 8,
        op: RequestOp::Delete {
            reservation: id,
            machines: None,
        },
    }];
    assert!(m.sync("u0", &del, hour(1))[0].accepted);
    assert!(m.reservations_of("u0").is_empty());
}

#[test]
fn state_survives_a_round_trip_through_json() {
    let mut m = market(10);
    m.reserve(&req("u1", 100, 2, 1, 2, Class::Second), Time(0))
        .unwrap();
    m.reserve(&req("u2", 100, 2, 1, 2, Class::Third), Time(0))
        .unwrap();
    let text = serde_json::to_string(&m).unwrap();
    let back: Market = serde_json::from_str(&text).unwrap();
    assert_eq!(back, m);
    back.validate_loaded().unwrap();
    // A tampered file is refused with the broken invariant named.
    let bad = text.replacen("\"revenue\":0", "\"revenue\":7", 1);
    assert_ne!(bad, text);
    let tampered: Market = serde_json::from_str(&bad).unwrap();
    assert!(matches!(
        tampered.validate_loaded(),
        Err(MarketError::Corrupt(_))
    ));
}
