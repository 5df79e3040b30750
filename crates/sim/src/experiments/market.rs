//! B11: the free market against FCFS and Pre-Allocated Capacity with one
//! heavy and several light reservers (Mutka 1988 §6.3.1,
//! seeds/000_14c1149197e96532.txt L993–1064; spec mutka-thesis.md B11).
//! The thesis has no numbers here ("evaluation ... left for future work",
//! L261, L1257): these are ours, produced by the coordinator's reservation
//! role (`gleaner_coordinator::pool::partition::Partition`, its market
//! and binding), every request a one-row session through
//! `Partition::sync` as `glean reserve` sends it.
//!
//! Pool: 23 stations, 40 % reservable every hour (9 machines), Table 6.4
//! parameters, 4 weeks (`--quick`: 2). Users:
//! - **heavy** (station s0): every midnight books all of day d+3 in 4-hour
//!   blocks for 1..=9 machines with 2nd class while its P lasts; every hour
//!   it books the leftovers of the next slot with 3rd class;
//! - **six light users** (s1–s6): each makes a request every 4 days on
//!   average (Poisson), 26–72 h ahead, for 2–4 working hours, 1..=2 or 3
//!   machines, 2nd class (1st class one time in five).
//!
//! Under PAC each station may hold 9 machine-slots a day (`pac_quota`: the
//! day's capacity, 9 × 24, split over the 23 stations).

use super::report::{Report, f};
use super::reserve_role::{ad, quiet, request, role};
use super::{ExperimentOpts, ExperimentReport, variant};
use crate::SimError;
use crate::papers::T;
use crate::plot::{BarGroup, bar_chart};
use gleaner_coordinator::reserve_config::{AmountConfig, PolicyName, ReservationsConfig};
use gleaner_core::reservation::{Class, Request};
use gleaner_core::rng::{Rng, substream};
use gleaner_core::time::Time;
use std::collections::BTreeMap;
use std::fmt::Write as _;

const STATIONS: usize = 23;
const LIGHT: usize = 6;
const H: u64 = 3_600_000_000;

#[derive(Clone, Debug, Default)]
struct Outcome {
    light_requests: u64,
    light_accepted: u64,
    /// Machine-slots held when the slot began, by (light?, class).
    held: BTreeMap<(bool, u8), u64>,
    light_wanted: u64,
    capacity: u64,
    events: u64,
}

fn hour(h: u64) -> Time {
    Time(h * H)
}

/// A light user's planned request: made at `at`.
#[derive(Clone, Debug)]
struct Planned {
    at: u64,
    req: Request,
}

fn light_plan(seed: u64, days: u64) -> Vec<Planned> {
    let mut v = Vec::new();
    for u in 1..=LIGHT {
        let mut rng = substream(seed, 100 + u as u64);
        let mut t = 0.0f64;
        loop {
            // Exponential gaps, mean 4 days: light users reserve rarely.
            let x: f64 = rng.random::<f64>().max(1e-12);
            t += -96.0 * x.ln();
            let at = t as u64;
            if at + 80 >= days * 24 {
                break;
            }
            let lead: u64 = rng.random_range(26..=72);
            let mut start = at + lead;
            // Working hours: 9–17, moved to the next working day's 9:00.
            let hod = start % 24;
            if !(9..=14).contains(&hod) {
                start = (start / 24 + u64::from(hod > 14)) * 24 + 9;
            }
            let hours: u64 = rng.random_range(2..=4);
            let upper: u32 = rng.random_range(2..=3);
            let class = if rng.random_range(0..5) == 0 {
                Class::First
            } else {
                Class::Second
            };
            v.push(Planned {
                at,
                req: Request {
                    user: format!("light{u}"),
                    start: hour(start),
                    stop: hour(start + hours),
                    lower: 1,
                    upper,
                    class,
                    specific: vec![],
                    preempt: true,
                },
            });
        }
    }
    v.sort_by_key(|p| (p.at, p.req.user.clone()));
    v
}

/// The pool's `[reservations]` section under `policy`: Table 6.4's
/// parameters, the stations' owners (s0 the heavy user's, s1–s6 the light
/// users', the rest other owners').
fn pool_config(policy: PolicyName, income: f64) -> ReservationsConfig {
    let owners = (0..STATIONS)
        .map(|i| {
            let owner = match i {
                0 => "heavy".to_string(),
                1..=LIGHT => format!("light{i}"),
                _ => format!("owner{i}"),
            };
            (format!("s{i}"), owner)
        })
        .collect();
    let base = ReservationsConfig::default();
    ReservationsConfig {
        policy,
        pac_quota: 9,
        owners,
        daily_income: AmountConfig {
            fixed: base.daily_income.fixed * income,
            per_workstation: base.daily_income.per_workstation * income,
        },
        ..base
    }
}

fn simulate(policy: PolicyName, seed: u64, days: u64, income: f64) -> Result<Outcome, SimError> {
    let mut p = role(&pool_config(policy, income), seed)?;
    // Every station advertises itself available: B11 is about admission,
    // not about owners coming back.
    for i in 0..STATIONS {
        p.observe(&format!("s{i}"), ad(true), Time::ZERO);
    }
    let plan = light_plan(seed, days);
    let mut next = 0usize;
    let mut o = Outcome::default();
    let mut row = 0u64;
    for h in 0..days * 24 {
        let now = hour(h);
        p.advance(now);
        // Measure the slot that begins now (from day 3 on: before that the
        // heavy user had no chance to book).
        if h >= 72 {
            let m = p.market();
            o.capacity += u64::from(m.capacity(h));
            for r in m.active_in(h) {
                let light = r.user.starts_with("light");
                *o.held.entry((light, r.class.number())).or_insert(0) += u64::from(r.held(h));
            }
        }
        // The heavy user: every midnight all of day d+3 with 2nd class
        // while its P lasts; every hour the leftovers of the next slot
        // ahead with 3rd class (NP comes back as its slots expire, L1050).
        let hod = h % 24;
        let mut heavy = |start: u64, len: u64, class: Class, o: &mut Outcome| {
            let req = Request {
                user: "heavy".into(),
                start: hour(start),
                stop: hour(start + len),
                lower: 1,
                upper: 9,
                class,
                specific: vec![],
                preempt: true,
            };
            o.events += 1;
            row += 1;
            request(&mut p, row, req, now);
        };
        if hod == 0 {
            for block in 0..6 {
                heavy((h / 24 + 3) * 24 + block * 4, 4, Class::Second, &mut o);
            }
        }
        heavy(h + 1, 1, Class::Third, &mut o);
        // Light users due now.
        while next < plan.len() && plan[next].at <= h {
            let pl = &plan[next];
            next += 1;
            o.events += 1;
            o.light_requests += 1;
            o.light_wanted += u64::from(pl.req.upper) * (pl.req.stop.0 - pl.req.start.0) / H;
            row += 1;
            if request(&mut p, row, pl.req.clone(), now).accepted {
                o.light_accepted += 1;
            }
        }
        if let Err(e) = p.market().check_invariants() {
            return Err(SimError::Param {
                name: "market invariant".into(),
                msg: e,
            });
        }
    }
    Ok(o)
}

pub fn run(opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    let mut rep = Report::new(opts);
    let days = if opts.quick { 14 } else { 28 };
    // Variant: the free-market arm admits first come, first served.
    let fm = if variant("market", opts)? == Some("fcfs-as-market") {
        PolicyName::Fcfs
    } else {
        PolicyName::FreeMarket
    };
    let policies = [
        ("free market", fm),
        ("FCFS", PolicyName::Fcfs),
        ("PAC", PolicyName::Pac),
    ];
    opts.progress
        .set_length(u64::from(opts.seeds) * policies.len() as u64);
    let mut sums: Vec<Outcome> = vec![Outcome::default(); policies.len()];
    let mut csv = String::from(
        "policy,seed,light_requests,light_accepted,light_wanted_slots,light_slots_c1,light_slots_c2,heavy_slots_c1,heavy_slots_c2,heavy_slots_c3,capacity_slots,unused_pct\n",
    );
    for s in 0..opts.seeds {
        let seed = opts.seed + u64::from(s);
        for (pi, (name, pol)) in policies.iter().enumerate() {
            let o = quiet(|| simulate(*pol, seed, days, 1.0))?;
            let g = |k: (bool, u8)| o.held.get(&k).copied().unwrap_or(0);
            let used: u64 = o.held.values().sum();
            let _ = writeln!(
                csv,
                "{name},{seed},{},{},{},{},{},{},{},{},{},{:.2}",
                o.light_requests,
                o.light_accepted,
                o.light_wanted,
                g((true, 1)),
                g((true, 2)),
                g((false, 1)),
                g((false, 2)),
                g((false, 3)),
                o.capacity,
                100.0 * (1.0 - used as f64 / o.capacity.max(1) as f64)
            );
            let t = &mut sums[pi];
            t.light_requests += o.light_requests;
            t.light_accepted += o.light_accepted;
            t.light_wanted += o.light_wanted;
            t.capacity += o.capacity;
            t.events += o.events;
            for (k, v) in o.held {
                *t.held.entry(k).or_insert(0) += v;
            }
            rep.events += o.events;
            opts.progress.advance(1);
        }
    }
    rep.write("market.csv", &csv)?;

    let g = |o: &Outcome, k: (bool, u8)| o.held.get(&k).copied().unwrap_or(0) as f64;
    let light_slots = |o: &Outcome| g(o, (true, 1)) + g(o, (true, 2)) + g(o, (true, 3));
    let heavy_slots = |o: &Outcome| g(o, (false, 1)) + g(o, (false, 2)) + g(o, (false, 3));
    let accept = |o: &Outcome| 100.0 * o.light_accepted as f64 / o.light_requests.max(1) as f64;
    let served = |o: &Outcome| 100.0 * light_slots(o) / o.light_wanted.max(1) as f64;
    let unused =
        |o: &Outcome| 100.0 * (1.0 - (light_slots(o) + heavy_slots(o)) / o.capacity.max(1) as f64);
    let third = |o: &Outcome| 100.0 * g(o, (false, 3)) / heavy_slots(o).max(1.0);

    let md = &mut rep.md;
    let _ = writeln!(
        md,
        "# market: free market vs FCFS vs Pre-Allocated Capacity (Mutka 1988 §6.3.1, B11)\n\n\
         23 stations, 40 % reservable (9 machines an hour), Table 6.4 parameters, {days} days × \
         {} seeds from {}. One heavy user books all of day d+3 every midnight (2nd class while \
         its P lasts) and every hour the leftovers of the next slot (3rd class); six light users \
         each ask every 4 days on average, 26–72 h ahead, for 2–4 working hours of 2–3 \
         machines (1st class one time in five, else 2nd). Measured from day 3 on, machine-slots \
         held when each slot began (after every preemption). **The thesis has no numbers for \
         this experiment** (L261, L1257): these are ours.\n",
        opts.seeds, opts.seed
    );
    let _ = writeln!(
        md,
        "| policy | light requests accepted % | light machine-slots held / asked % | light slots (1st/2nd) | heavy slots (1st/2nd/3rd) | heavy 3rd-class share % | reservable capacity unused % |\n|---|---|---|---|---|---|---|"
    );
    for (pi, (name, _)) in policies.iter().enumerate() {
        let o = &sums[pi];
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {:.0}/{:.0} | {:.0}/{:.0}/{:.0} | {} | {} |",
            f(accept(o), 1),
            f(served(o), 1),
            g(o, (true, 1)),
            g(o, (true, 2)),
            g(o, (false, 1)),
            g(o, (false, 2)),
            g(o, (false, 3)),
            f(third(o), 1),
            f(unused(o), 1)
        );
    }
    let cats: Vec<String> = policies.iter().map(|p| p.0.to_string()).collect();
    let p = rep.path("market.svg");
    bar_chart(
        &p,
        "B11: light users served and capacity unused",
        "policy",
        "%",
        &cats,
        &[
            BarGroup {
                name: "light requests accepted %".into(),
                values: sums.iter().map(accept).collect(),
            },
            BarGroup {
                name: "light slots held / asked %".into(),
                values: sums.iter().map(served).collect(),
            },
            BarGroup {
                name: "capacity unused %".into(),
                values: sums.iter().map(unused).collect(),
            },
        ],
    )?;
    // The daily income is not in the thesis (L1052 names it, Table 6.4
    // gives no amount): the free market's claims across incomes.
    let incomes: &[f64] = if opts.quick { &[] } else { &INCOMES };
    let mut by_income: Vec<(f64, Outcome)> = Vec::new();
    for &inc in incomes {
        let mut t = Outcome::default();
        for s in 0..opts.seeds {
            let o = quiet(|| simulate(fm, opts.seed + u64::from(s), days, inc))?;
            t.light_requests += o.light_requests;
            t.light_accepted += o.light_accepted;
            t.light_wanted += o.light_wanted;
            t.capacity += o.capacity;
            rep.events += o.events;
            for (k, v) in o.held {
                *t.held.entry(k).or_insert(0) += v;
            }
        }
        by_income.push((inc, t));
    }
    let light_ok = |o: &Outcome| accept(o) >= 90.0 && served(o) >= 80.0;
    let third_ok = |o: &Outcome| third(o) >= 50.0 && unused(o) <= 10.0;
    if !by_income.is_empty() {
        let _ = writeln!(
            rep.md,
            "\n## Sensitivity: the daily income (not in the thesis)\n\n\
             Table 6.4 gives the initial money and the income cap (N and 3N, L1036–1038) but not \
             the daily allotment (L1052); ours is N/7. The free market at other incomes:\n\n\
             | daily income | light accepted % | light held / asked % | heavy 3rd-class share % | unused % |\n|---|---|---|---|---|"
        );
        for (inc, o) in &by_income {
            let _ = writeln!(
                rep.md,
                "| {} N/7 | {} | {} | {} | {} |",
                inc,
                f(accept(o), 1),
                f(served(o), 1),
                f(third(o), 1),
                f(unused(o), 1)
            );
        }
    }
    let across = |ok: &dyn Fn(&Outcome) -> bool| -> (bool, String) {
        if by_income.is_empty() {
            return (true, String::new());
        }
        let held: Vec<String> = by_income
            .iter()
            .filter(|(_, o)| ok(o))
            .map(|(i, _)| format!("{i}"))
            .collect();
        (
            held.len() == by_income.len(),
            format!(
                "; holds at daily incomes {} of {:?} × N/7",
                if held.is_empty() {
                    "none".into()
                } else {
                    held.join(", ")
                },
                INCOMES
            ),
        )
    };
    let (fm, fcfs, pac) = (&sums[0], &sums[1], &sums[2]);
    let (all_l, where_l) = across(&light_ok);
    rep.claim(
        "free market: light users get their 1st/2nd-class slots despite the heavy user",
        format!("{T} L857, L997, L1064"),
        "\"gives priority to light users when they want to reserve slots\"; \"rewards those who use the system infrequently with high priority to capacity\"",
        format!("accepted {} %, held/asked {} %{where_l}", f(accept(fm), 1), f(served(fm), 1)),
        "≥ 90 % accepted and ≥ 80 % of the asked slots held (ours), at every daily income",
        light_ok(fm) && all_l,
    );
    let (all_t, where_t) = across(&third_ok);
    rep.claim(
        "free market: the heavy user fills leftovers with 3rd class",
        format!("{T} L1027, L1064"),
        "\"Heavy users that consume all of their P money use 3rd class reservations to obtain available slots that are otherwise unused\"",
        format!("3rd class {} % of its slots; {} % unused{where_t}", f(third(fm), 1), f(unused(fm), 1)),
        "≥ 50 % of the heavy user's slots 3rd class, ≤ 10 % unused (ours), at every daily income",
        third_ok(fm) && all_t,
    );
    rep.claim(
        "FCFS: the heavy user shuts light users out",
        format!("{T} L995"),
        "\"This strategy lets a heavy user access as much capacity as she would like and therefore deny reservation requests of light users\"",
        format!("light accepted {} % (free market {} %)", f(accept(fcfs), 1), f(accept(fm), 1)),
        "at least 50 points below the free market (ours)",
        accept(fcfs) <= accept(fm) - 50.0,
    );
    rep.claim(
        "PAC: reservable capacity wasted",
        format!("{T} L995"),
        "\"reservable capacity is often wasted when light users do not reserve their quota\"",
        format!(
            "unused {} % (free market {} %)",
            f(unused(pac), 1),
            f(unused(fm), 1)
        ),
        "at least 30 points more unused than the free market (ours)",
        unused(pac) >= unused(fm) + 30.0,
    );
    rep.claims_table();
    rep.finish("market")
}

/// Daily incomes of the sensitivity table, in units of N/7 (the default).
const INCOMES: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 7.0];
