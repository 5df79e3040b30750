//! B10: replacing reserved machines whose owners return (Mutka 1988 §6.2,
//! seeds/000_14c1149197e96532.txt L883–895, Figs 6.3–6.5; spec
//! mutka-thesis.md B10).
//!
//! Each hour a partition of `share × N` machines is reserved (0–40 % of 23
//! stations, L883) and bound to AV stations when the hour begins; when a
//! reserved machine's owner returns, an unreserved AV station replaces it,
//! chosen by **Longest-Free** or **Random**; with none free the hour
//! counts as an error. All of that is the coordinator's reservation role,
//! `gleaner_coordinator::pool::partition::Partition`, one per (rule,
//! share), fed every station's ads and each hour's reservation through the
//! reserve API's entry point (`super::reserve_role`). We report the preemption rate (replacements per
//! hour, Fig. 6.3), Longest-Free's weekday rate by day/evening/night (Fig.
//! 6.4), the share of reservation users preempted per hour (Fig. 6.5: each
//! hour 1..=k users, each reserved machine given to one at random, L895),
//! and the error probability beside `1 − P(availability level)` (L883).
//!
//! Availability: `m5-23` by default (the thesis's own 23 stations, Table
//! 6.1, fitted to the month's statistics, `availability::m5`), 28 days per
//! seed; `--model`/`--trace` override. `--quick`: 7 days.
//!
//! Each claim of §6.2 is checked with its wording and a tolerance stated
//! in the summary; the error probability is reported by hour of day beside
//! the availability levels of Fig. 6.2 (T:L881), from which the thesis
//! derives it (T:L883). Variants: `random-as-longest-free` (the
//! Longest-Free arm replaces at random), `busy-pool` (stations AV half the
//! time).

use super::profile::claims::mean_sd;
use super::report::{Report, f};
use super::reserve_role::quiet;
use super::{ExperimentOpts, ExperimentReport, variant};
use crate::SimError;
use crate::availability::{M1, Model, Source};
use crate::papers::T;
use crate::plot::{Series, line_chart};
use gleaner_core::reservation::replacement::ReplacementRule;
use gleaner_core::time::Time;
use sim::{Levels, PERIODS, Tally, simulate};
use std::fmt::Write as _;

mod sim;

const STATIONS: u32 = 23;
const SHARES: [u32; 9] = [0, 5, 10, 15, 20, 25, 30, 35, 40];
const HOUR: u64 = 3_600_000_000;
const RULES: [ReplacementRule; 2] = [ReplacementRule::LongestFree, ReplacementRule::Random];

fn rate(t: &Tally) -> f64 {
    t.preemptions as f64 / t.hours.max(1) as f64
}

fn pct(a: u64, b: u64) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

/// The sum of the seeds' tallies of one (rule, share).
fn total(all: &[Vec<Vec<Tally>>], ri: usize, si: usize) -> Tally {
    let mut t = Tally::default();
    for s in all {
        let x = &s[ri][si];
        t.hours += x.hours;
        t.preemptions += x.preemptions;
        t.error_hours += x.error_hours;
        t.below_level += x.below_level;
        t.users += x.users;
        t.users_hit += x.users_hit;
        for p in 0..3 {
            t.weekday[p].0 += x.weekday[p].0;
            t.weekday[p].1 += x.weekday[p].1;
            t.weekday[p].2 += x.weekday[p].2;
            t.weekday[p].3 += x.weekday[p].3;
            t.weekday_hit[p] += x.weekday_hit[p];
        }
        for h in 0..24 {
            t.by_hour[h].0 += x.by_hour[h].0;
            t.by_hour[h].1 += x.by_hour[h].1;
            t.by_hour[h].2 += x.by_hour[h].2;
        }
    }
    t
}

/// Mean and standard deviation over seeds of `g` of one (rule, share).
fn over_seeds(
    all: &[Vec<Vec<Tally>>],
    ri: usize,
    si: usize,
    g: impl Fn(&Tally) -> f64,
) -> (f64, f64) {
    mean_sd(&all.iter().map(|s| g(&s[ri][si])).collect::<Vec<_>>())
}

pub fn run(opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    let mut rep = Report::new(opts);
    let days = if opts.quick { 7 } else { 28 };
    let horizon = Time(days * 24 * HOUR);
    let var = variant("reservations", opts)?;
    let default = match var {
        Some("busy-pool") => Model::M1(M1 {
            av_mean: 60.0,
            na_mean: 60.0,
        }),
        _ => Model::parse("m5-23")?,
    };
    let source = Source::from_opts(opts.trace.as_deref(), opts.model.as_deref(), default)?;
    let rules = match var {
        Some("random-as-longest-free") => [ReplacementRule::Random, ReplacementRule::Random],
        _ => RULES,
    };
    opts.progress
        .set_length(u64::from(opts.seeds) * days * 24 * (rules.len() * SHARES.len()) as u64);
    let mut events = 0u64;
    let (all, levels) = quiet(|| simulate(opts, rules, &source, days, horizon, &mut events))?;
    rep.events = events;
    let tallies: Vec<Vec<Tally>> = (0..rules.len())
        .map(|ri| (0..SHARES.len()).map(|si| total(&all, ri, si)).collect())
        .collect();
    write_files(&mut rep, &tallies, &levels)?;
    summary(&mut rep, opts, &source, days, &tallies, &levels);
    claims(&mut rep, &all, &tallies);
    rep.claims_table();
    let _ = writeln!(
        rep.md,
        "\nTolerances: \"significantly lower\" is read as lower by more than twice the \
         seed-to-seed standard deviation of the difference; \"extremely low\" and \"little or \
         no interference\" as at least four weekday evening (night) hours in five without any \
         replacement in the 40 % partition (ours); \"few users\" as at most one user in ten \
         (ours); \"always available\" as errors within half a point plus twice their \
         seed-to-seed standard deviation of zero."
    );
    rep.finish("reservations")
}

/// The checks: each claim of §6.2 (T:L855, L869, L881–895).
fn claims(rep: &mut Report, all: &[Vec<Vec<Tally>>], tallies: &[Vec<Tally>]) {
    let last = SHARES.len() - 1;
    // Fig. 6.3: Longest-Free significantly lower at every share.
    let mut worst: Option<(u32, f64, f64)> = None;
    let mut ok = true;
    for si in 1..SHARES.len() {
        let d: Vec<f64> = all
            .iter()
            .map(|s| rate(&s[1][si]) - rate(&s[0][si]))
            .collect();
        let (m, sd) = mean_sd(&d);
        let sig = m > 2.0 * sd.max(1e-9) / (all.len() as f64).sqrt().max(1.0) && m > 0.0;
        ok &= sig;
        let z = m / sd.max(1e-9);
        if worst.is_none_or(|w| z < w.1) {
            worst = Some((SHARES[si], z, m));
        }
    }
    let (ws, wz, wm) = worst.unwrap_or((0, f64::NAN, f64::NAN));
    rep.claim(
        "Longest-Free preempts less than Random at every reserved share (Fig. 6.3)",
        format!("{T} L893"),
        "\"significantly lower preemption rates for all percentages of reservable workstations\"",
        format!(
            "worst at {ws} %: Random − LF = {} /h ({} seed sd)",
            f(wm, 3),
            f(wz, 1)
        ),
        "difference > 2 standard errors at every share",
        ok,
    );
    // Fig. 6.4: evening and night "extremely low".
    let t40 = &tallies[0][last];
    let quiet_share = |p: usize| 100.0 - pct(t40.weekday_hit[p], t40.weekday[p].0);
    let rate_p = |p: usize| t40.weekday[p].1 as f64 / t40.weekday[p].0.max(1) as f64;
    for (p, name) in [(1usize, "evening"), (2, "night")] {
        rep.claim(
            format!("weekday {name}: 40 % partition rarely preempted, Longest-Free (Fig. 6.4)"),
            format!("{T} L893"),
            "\"extremely low preemption rates … users could reserve large partitions with little or no interference\"",
            format!(
                "{} % of {name} hours without a replacement ({} /h; day {} /h)",
                f(quiet_share(p), 1),
                f(rate_p(p), 3),
                f(rate_p(0), 3)
            ),
            "≥ 80 % of hours without one (ours)",
            quiet_share(p) >= 80.0,
        );
    }
    // Fig. 6.5: few users preempted evenings, nights, and small daytime
    // partitions.
    let users = |si: usize, p: usize| {
        let t = &tallies[0][si];
        pct(t.weekday[p].3, t.weekday[p].2)
    };
    for (si, p, name) in [
        (last, 1usize, "evening, 40 % reserved"),
        (last, 2, "night, 40 % reserved"),
        (1, 0, "day, 5 % reserved"),
    ] {
        rep.claim(
            format!("few reservation users preempted: {name} (Fig. 6.5)"),
            format!("{T} L895"),
            "\"few users experienced preemptions in the evening and night hours, and few preemptions occurred during the day when a small percentage of workstations were reserved\"",
            format!("{} % of users", f(users(si, p), 1)),
            "≤ 10 % (ours)",
            users(si, p) <= 10.0,
        );
    }
    // Errors: 40 % always available, so no errors up to 40 % (T:L869,
    // L883).
    let (m, sd) = over_seeds(all, 0, last, |t| pct(t.error_hours, t.hours));
    let tol = 0.5 + 2.0 * sd;
    rep.claim(
        "error probability of a 40 % partition ≈ 0 (40 % always available; errors = 100 % − P(level))",
        format!("{T} L869, L883"),
        "\"40 % of the machines were always available\"; \"the probability of errors corresponds to 100 % minus the availability levels\"",
        format!("{} % of hours (Longest-Free)", f(m, 2)),
        format!("≤ {} (0.5 + 2 sd)", f(tol, 2)),
        m <= tol,
    );
    // The hour of day: the night's errors at 40 % ≈ 0 (P(≥ 80 %) ≈ 100 %
    // at night, T:L881).
}

fn write_files(
    rep: &mut Report,
    tallies: &[Vec<Tally>],
    levels: &[Levels],
) -> Result<(), SimError> {
    let mut csv = String::from(
        "rule,share_pct,machines,hours,preemptions_per_hour,error_prob_pct,below_level_pct,users_preempted_pct,wd_day_rate,wd_evening_rate,wd_night_rate,wd_day_users_pct,wd_evening_users_pct,wd_night_users_pct,wd_evening_quiet_pct,wd_night_quiet_pct\n",
    );
    for (ri, rule) in RULES.iter().enumerate() {
        for (si, share) in SHARES.iter().enumerate() {
            let t = &tallies[ri][si];
            let k = (f64::from(*share) / 100.0 * f64::from(STATIONS)).round();
            let w = |p: usize| t.weekday[p].1 as f64 / t.weekday[p].0.max(1) as f64;
            let wu = |p: usize| pct(t.weekday[p].3, t.weekday[p].2);
            let q = |p: usize| 100.0 - pct(t.weekday_hit[p], t.weekday[p].0);
            let _ = writeln!(
                csv,
                "{:?},{share},{k},{},{:.4},{:.3},{:.3},{:.3},{:.4},{:.4},{:.4},{:.3},{:.3},{:.3},{:.3},{:.3}",
                rule,
                t.hours,
                rate(t),
                pct(t.error_hours, t.hours),
                pct(t.below_level, t.hours),
                pct(t.users_hit, t.users),
                w(0),
                w(1),
                w(2),
                wu(0),
                wu(1),
                wu(2),
                q(1),
                q(2)
            );
        }
    }
    rep.write("reservations.csv", &csv)?;
    let lv = mean_levels(levels);
    let mut hours = String::from(
        "rule,share_pct,hour_of_day,hours,preemptions_per_hour,error_prob_pct,level40_pct,level60_pct,level80_pct\n",
    );
    for (ri, rule) in RULES.iter().enumerate() {
        for (si, share) in SHARES.iter().enumerate() {
            for (h, (n, p, e)) in tallies[ri][si].by_hour.iter().enumerate() {
                let _ = writeln!(
                    hours,
                    "{rule:?},{share},{h},{n},{:.4},{:.3},{:.2},{:.2},{:.2}",
                    *p as f64 / (*n).max(1) as f64,
                    pct(*e, *n),
                    lv[0][h],
                    lv[1][h],
                    lv[2][h]
                );
            }
        }
    }
    rep.write("reservations_by_hour.csv", &hours)?;
    let last = SHARES.len() - 1;
    let by_hour = |ri: usize| -> Vec<(f64, f64)> {
        tallies[ri][last]
            .by_hour
            .iter()
            .enumerate()
            .map(|(h, (n, p, _))| (h as f64, *p as f64 / (*n).max(1) as f64))
            .collect()
    };
    let p = rep.path("preemption_rate_by_hour.svg");
    line_chart(
        &p,
        "Preemption rate by hour of day, 40 % reserved",
        "hour of day",
        "replacements per hour",
        &[
            Series::new("Longest-Free", by_hour(0)),
            Series::new("Random", by_hour(1)),
        ],
    )?;
    let xs = |g: &dyn Fn(&Tally) -> f64, ri: usize| -> Vec<(f64, f64)> {
        SHARES
            .iter()
            .zip(&tallies[ri])
            .map(|(s, t)| (f64::from(*s), g(t)))
            .collect()
    };
    let p = rep.path("fig6_3_preemption_rate.svg");
    line_chart(
        &p,
        "Fig. 6.3: average hourly preemption rate",
        "reserved share of stations (%)",
        "replacements per hour",
        &[
            Series::new("Longest-Free", xs(&rate, 0)),
            Series::new("Random", xs(&rate, 1)),
        ],
    )?;
    let p = rep.path("fig6_4_weekday_preemption_rate.svg");
    let per = |pi: usize| move |t: &Tally| t.weekday[pi].1 as f64 / t.weekday[pi].0.max(1) as f64;
    line_chart(
        &p,
        "Fig. 6.4: weekday preemption rate, Longest-Free",
        "reserved share of stations (%)",
        "replacements per hour",
        &(0..3)
            .map(|pi| Series::new(PERIODS[pi], xs(&per(pi), 0)))
            .collect::<Vec<_>>(),
    )?;
    let p = rep.path("fig6_5_users_preempted.svg");
    let uper = |pi: usize| move |t: &Tally| pct(t.weekday[pi].3, t.weekday[pi].2);
    line_chart(
        &p,
        "Fig. 6.5: % of reservation users preempted, Longest-Free",
        "reserved share of stations (%)",
        "% of users preempted per hour",
        &(0..3)
            .map(|pi| Series::new(PERIODS[pi], xs(&uper(pi), 0)))
            .collect::<Vec<_>>(),
    )?;
    let p = rep.path("error_probability_by_hour.svg");
    let err_h = |si: usize| -> Vec<(f64, f64)> {
        tallies[0][si]
            .by_hour
            .iter()
            .enumerate()
            .map(|(h, (n, _, e))| (h as f64, pct(*e, *n)))
            .collect()
    };
    line_chart(
        &p,
        "Error probability by hour of day (Longest-Free) beside 100 % − P(level)",
        "hour of day",
        "% of hours",
        &[
            Series::new("errors, 20 % reserved", err_h(4)),
            Series::new("errors, 40 % reserved", err_h(last)),
            Series::new(
                "100 % − P(≥ 60 % AV)",
                (0..24).map(|h| (h as f64, 100.0 - lv[1][h])).collect(),
            ),
            Series::new(
                "100 % − P(≥ 80 % AV)",
                (0..24).map(|h| (h as f64, 100.0 - lv[2][h])).collect(),
            ),
        ],
    )?;
    Ok(())
}

fn mean_levels(levels: &[Levels]) -> Levels {
    let mut out = [[0f64; 24]; 3];
    for lv in levels {
        for l in 0..3 {
            for h in 0..24 {
                out[l][h] += lv[l][h] / levels.len().max(1) as f64;
            }
        }
    }
    out
}

fn summary(
    rep: &mut Report,
    opts: &ExperimentOpts,
    source: &Source,
    days: u64,
    tallies: &[Vec<Tally>],
    levels: &[Levels],
) {
    let md = &mut rep.md;
    let _ = writeln!(
        md,
        "# reservations: Longest-Free vs Random replacement (Mutka 1988 §6.2, Figs 6.3–6.5)\n\n\
         {STATIONS} stations, {} ({} days × {} seeds from {}); each hour a partition of \
         share × {STATIONS} machines is bound when the hour begins and every owner return \
         inside the hour is replaced by the rule, all by the coordinator's reservation role \
         (`gleaner_coordinator::pool::partition::Partition`). The thesis's curves are plots; \
         its text gives their shape and two numbers (T:L869, L881), which the claims below \
         test.\n",
        source.describe(),
        days,
        opts.seeds,
        opts.seed
    );
    let _ = writeln!(
        md,
        "| share | machines | LF rate /h | Random rate /h | LF/Random | errors LF % | errors Random % | min AV < k in the hour % | users preempted LF % |\n|---|---|---|---|---|---|---|---|---|"
    );
    for (si, share) in SHARES.iter().enumerate() {
        let (a, b) = (&tallies[0][si], &tallies[1][si]);
        let k = (f64::from(*share) / 100.0 * f64::from(STATIONS)).round();
        let _ = writeln!(
            md,
            "| {share} % | {k} | {} | {} | {} | {} | {} | {} | {} |",
            f(rate(a), 3),
            f(rate(b), 3),
            f(rate(a) / rate(b), 2),
            f(pct(a.error_hours, a.hours), 2),
            f(pct(b.error_hours, b.hours), 2),
            f(pct(a.below_level, a.hours), 2),
            f(pct(a.users_hit, a.users), 1)
        );
    }
    let _ = writeln!(
        md,
        "\nWeekday Longest-Free rate by period (Fig. 6.4), hours without a replacement, and users preempted (Fig. 6.5):\n\n\
         | share | day rate | evening rate | night rate | evening hours quiet % | night hours quiet % | day users % | evening users % | night users % |\n|---|---|---|---|---|---|---|---|---|"
    );
    for (si, share) in SHARES.iter().enumerate().skip(1) {
        let t = &tallies[0][si];
        let w = |p: usize| t.weekday[p].1 as f64 / t.weekday[p].0.max(1) as f64;
        let wu = |p: usize| pct(t.weekday[p].3, t.weekday[p].2);
        let q = |p: usize| 100.0 - pct(t.weekday_hit[p], t.weekday[p].0);
        let _ = writeln!(
            md,
            "| {share} % | {} | {} | {} | {} | {} | {} | {} | {} |",
            f(w(0), 3),
            f(w(1), 3),
            f(w(2), 3),
            f(q(1), 1),
            f(q(2), 1),
            f(wu(0), 1),
            f(wu(1), 1),
            f(wu(2), 1)
        );
    }
    // The error probability by hour of day beside Fig. 6.2's levels.
    let lv = mean_levels(levels);
    let _ = writeln!(
        md,
        "\n## Error probability by hour of day (Longest-Free) and the availability levels of Fig. 6.2\n\n\
         The thesis derives the error probability of a partition from how often that share of \
         the stations is AV (T:L883: errors = 100 % − P(level)), and states the levels by period \
         (T:L881): ≥ 80 % AV nearly 100 % of the night, 70 % of the evening, 20 % of the day; \
         ≥ 60 % AV more than 80 % of the time; 40 % of the stations always AV (T:L869).\n\n\
         | hour | errors 20 % % | errors 40 % % | P(≥ 40 % AV) % | P(≥ 60 % AV) % | P(≥ 80 % AV) % | thesis P(≥ 80 %) |\n|---|---|---|---|---|---|---|"
    );
    let last = SHARES.len() - 1;
    // `h` indexes the tallies, the levels and the thesis's periods alike.
    #[allow(clippy::needless_range_loop)]
    for h in 0..24 {
        let e = |si: usize| {
            let (n, _, e) = tallies[0][si].by_hour[h];
            pct(e, n)
        };
        let thesis = match h {
            8..=16 => "≈ 20 (day)",
            17..=23 => "≈ 70 (evening)",
            _ => "≈ 100 (night)",
        };
        let _ = writeln!(
            md,
            "| {h} | {} | {} | {} | {} | {} | {thesis} |",
            f(e(4), 2),
            f(e(last), 2),
            f(lv[0][h], 1),
            f(lv[1][h], 1),
            f(lv[2][h], 1)
        );
    }
}
