//! One seed of B10: the hours of every (rule, share) arm driven through
//! the coordinator's reservation role, and the availability levels of the
//! trace by hour of day.

use super::{HOUR, SHARES, STATIONS};
use crate::SimError;
use crate::availability::{Interval, Source, State, Trace, day_of_week, hour_of_day};
use crate::experiments::ExperimentOpts;
use crate::experiments::reserve_role::{ad, request, role};
use gleaner_coordinator::pool::partition::Partition;
use gleaner_coordinator::reserve_config::{AmountConfig, ReservationsConfig, ShareConfig};
use gleaner_core::reservation::replacement::ReplacementRule;
use gleaner_core::reservation::{Class, Request};
use gleaner_core::rng::{Rng, substream};
use gleaner_core::time::{Dur, Time};
use std::collections::{BTreeMap, BTreeSet};

/// Streams of the arms' roles (their Random rule), apart from the hours'.
const ARM_STREAM: u64 = 1 << 48;

/// Period of a weekday hour (L900: day 8–17, evening 17–24, night 0–8).
pub(super) fn period(h: u32) -> usize {
    match h {
        8..=16 => 0,
        17..=23 => 1,
        _ => 2,
    }
}
pub(super) const PERIODS: [&str; 3] = ["day", "evening", "night"];

/// Totals for one (rule, share) of one seed.
#[derive(Clone, Debug, Default)]
pub(super) struct Tally {
    pub hours: u64,
    pub preemptions: u64,
    pub error_hours: u64,
    /// Hours whose minimum AV count fell below k (the thesis's error).
    pub below_level: u64,
    pub users: u64,
    pub users_hit: u64,
    /// Weekday [period] → (hours, preemptions, users, users hit).
    pub weekday: [(u64, u64, u64, u64); 3],
    /// Weekday [period] → hours with at least one replacement.
    pub weekday_hit: [u64; 3],
    /// Hour of day (all days) → (hours, preemptions, error hours).
    pub by_hour: [(u64, u64, u64); 24],
}

/// What one hour of one (rule, share) arm counted.
pub(super) struct Hour {
    pub preemptions: u64,
    pub error: bool,
    pub users: u64,
    pub users_hit: u64,
    pub below_level: bool,
}

/// The reserver: one user whose account is the first station's.
pub(super) const RESERVER: &str = "reserver";

/// The `[reservations]` section of one arm: every machine reservable (the
/// arm's `k` is what is asked for), reservations free (money is not what
/// B10 studies), one-hour slots, the arm's replacement rule.
pub(super) fn arm_config(rule: ReplacementRule, first_station: &str) -> ReservationsConfig {
    let zero = AmountConfig {
        fixed: 0.0,
        per_workstation: 0.0,
    };
    ReservationsConfig {
        slot_secs: HOUR / 1_000_000,
        reservable_share: ShareConfig::All(1.0),
        first_class_rate: 0.0,
        second_class_rate: 0.0,
        third_class_rate: 0.0,
        initial_p_money: zero,
        initial_np_money: zero,
        replacement: rule,
        accounts: [(RESERVER.to_string(), first_station.to_string())].into(),
        ..ReservationsConfig::default()
    }
}

/// One hour of one arm, driven through the coordinator's reservation role
/// `p`: the ads at `t0` (the stations' states when the hour begins), a
/// reservation of `k` machines for the hour made at `t0` (the role binds
/// them by its rule), then every ad inside the hour (a bound station whose
/// owner returns is replaced by the rule, or counted an error). `rng`
/// only spreads the bound machines over the hour's users (Fig. 6.5).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_hour(
    p: &mut Partition,
    names: &[String],
    at_start: &[(Time, u32, State)],
    inside: &[(Time, u32, State)],
    t0: Time,
    k: u32,
    row: u64,
    rng: &mut gleaner_core::rng::PolicyRng,
) -> Result<Hour, SimError> {
    let name = |s: u32| names[s as usize].as_str();
    for (t, s, state) in at_start {
        p.observe(name(*s), ad(*state == State::Av), *t);
    }
    let before = p.stats();
    if k > 0 {
        let req = Request {
            user: RESERVER.into(),
            start: t0,
            stop: t0 + Dur(HOUR),
            lower: k,
            upper: k,
            class: Class::Second,
            specific: vec![],
            preempt: true,
        };
        let ack = request(p, row, req, t0);
        if !ack.accepted {
            return Err(SimError::Param {
                name: "reservation".into(),
                msg: format!(
                    "the role refused {k} machines at {t0}: {}",
                    ack.error.unwrap_or_default()
                ),
            });
        }
    } else {
        p.advance(t0);
    }
    let mut min_av = p.av_since().len();
    // Users of this hour (Fig. 6.5): 1..=k, machines given out at random.
    let users = if k == 0 { 0 } else { rng.random_range(1..=k) };
    let index = |n: &str| names.iter().position(|x| x == n);
    let mut owner_of: BTreeMap<usize, u32> = BTreeMap::new();
    for (st, _) in p.bound() {
        if let Some(i) = index(&st) {
            owner_of.insert(i, rng.random_range(0..users.max(1)));
        }
    }
    let mut hit = BTreeSet::new();
    for (t, s, state) in inside {
        let rebound = p.observe(name(*s), ad(*state == State::Av), *t);
        match state {
            State::Na => {
                min_av = min_av.min(p.av_since().len());
                let user = owner_of.remove(&(*s as usize));
                for (_, by) in rebound.replaced.iter().filter(|(w, _)| w == name(*s)) {
                    if let Some(u) = user {
                        hit.insert(u);
                        if let Some(i) = by.as_deref().and_then(index) {
                            owner_of.insert(i, u);
                        }
                    }
                }
            }
            State::Av => {
                // A station coming back fills a machine the hour lacked.
                if p.holder(name(*s)).is_some() {
                    owner_of.insert(*s as usize, rng.random_range(0..users.max(1)));
                }
            }
        }
    }
    let after = p.stats();
    Ok(Hour {
        preemptions: after.withdrawals - before.withdrawals,
        error: after.errors > before.errors,
        users: u64::from(users),
        users_hit: hit.len() as u64,
        below_level: (min_av as u32) < k,
    })
}

/// Per seed, per arm, per share: the tallies; and each seed's levels.
type SeedTallies = (Vec<Vec<Vec<Tally>>>, Vec<Levels>);

/// Every seed's hours for every arm: `tallies[seed][rule][share]`, and per
/// seed the share of each hour of day spent with at least 40, 60 and 80 %
/// of the stations AV (Fig. 6.2's levels).
pub(super) fn simulate(
    opts: &ExperimentOpts,
    rules: [ReplacementRule; 2],
    source: &Source,
    days: u64,
    horizon: Time,
    events: &mut u64,
) -> Result<SeedTallies, SimError> {
    let mut all = Vec::new();
    let mut levels = Vec::new();
    for i in 0..opts.seeds {
        let mut tallies = vec![vec![Tally::default(); SHARES.len()]; rules.len()];
        let seed = opts.seed + u64::from(i);
        let trace = match source {
            Source::Model(m) => Trace::generate(m, seed, STATIONS, horizon),
            Source::Trace(t) => (**t).clone(),
        };
        let n = trace.stations.len();
        let stations: Vec<Vec<Interval>> = (0..n).map(|s| trace.contiguous(s, horizon)).collect();
        *events += stations.iter().map(|v| v.len() as u64).sum::<u64>();
        levels.push(levels_by_hour(&stations, horizon));
        // Zero-padded names: the role breaks Longest-Free ties by name.
        let width = n.saturating_sub(1).to_string().len();
        let names: Vec<String> = (0..n).map(|s| format!("s{s:0width$}")).collect();
        // Every ad: a station's state changes at the start of each interval.
        let mut ads: Vec<(Time, u32, State)> = stations
            .iter()
            .enumerate()
            .flat_map(|(s, ivs)| ivs.iter().map(move |iv| (iv.start, s as u32, iv.state)))
            .collect();
        ads.sort();
        let first = names.first().map_or("", String::as_str);
        let mut arms: Vec<Vec<Partition>> = Vec::with_capacity(rules.len());
        // The arm's stream is its position, so a variant that swaps a
        // rule draws the same numbers as the arm it replaces.
        for (ri, rule) in rules.iter().enumerate() {
            let mut row = Vec::with_capacity(SHARES.len());
            for si in 0..SHARES.len() {
                let role_seed =
                    substream(seed, ARM_STREAM | ((ri as u64) << 8) | si as u64).random::<u64>();
                row.push(role(&arm_config(*rule, first), role_seed)?);
            }
            arms.push(row);
        }
        let mut cursor = 0usize;
        for h in 0..days * 24 {
            let t0 = Time(h * HOUR);
            let t1 = t0 + Dur(HOUR);
            let mid = cursor + ads[cursor..].partition_point(|a| a.0 <= t0);
            let end = mid + ads[mid..].partition_point(|a| a.0 < t1);
            let (at_start, inside) = (&ads[cursor..mid], &ads[mid..end]);
            cursor = end;
            let hod = hour_of_day(t0);
            let weekday = day_of_week(t0) < 5;
            for (ri, arm) in arms.iter_mut().enumerate() {
                for (si, share) in SHARES.iter().enumerate() {
                    let k = (f64::from(*share) / 100.0 * n as f64).round() as u32;
                    let mut rng = substream(seed, (h << 16) | ((ri as u64) << 8) | si as u64);
                    let o = run_hour(&mut arm[si], &names, at_start, inside, t0, k, h, &mut rng)?;
                    let (pre, err, users, hit, below) =
                        (o.preemptions, o.error, o.users, o.users_hit, o.below_level);
                    let t = &mut tallies[ri][si];
                    t.hours += 1;
                    t.preemptions += pre;
                    t.error_hours += u64::from(err);
                    t.below_level += u64::from(below);
                    t.users += users;
                    t.users_hit += hit;
                    let bh = &mut t.by_hour[hod as usize];
                    bh.0 += 1;
                    bh.1 += pre;
                    bh.2 += u64::from(err);
                    if weekday {
                        let w = &mut t.weekday[period(hod)];
                        w.0 += 1;
                        w.1 += pre;
                        w.2 += users;
                        w.3 += hit;
                        t.weekday_hit[period(hod)] += u64::from(pre > 0);
                    }
                }
            }
            opts.progress.advance((rules.len() * SHARES.len()) as u64);
        }
        all.push(tallies);
    }
    Ok((all, levels))
}

/// Per hour of day, the share of time with at least 40, 60 and 80 % of
/// the stations AV: `[level][hour]`, %.
pub(super) type Levels = [[f64; 24]; 3];

fn levels_by_hour(stations: &[Vec<Interval>], horizon: Time) -> Levels {
    let n = stations.len() as f64;
    let mut ev: Vec<(Time, i64)> = Vec::new();
    for ivs in stations {
        for iv in ivs.iter().filter(|iv| iv.state == State::Av) {
            ev.push((iv.start, 1));
            ev.push((iv.end.min(horizon), -1));
        }
    }
    ev.sort();
    let (mut at, mut tot) = ([[0f64; 24]; 3], [0f64; 24]);
    let mut count = 0i64;
    let mut t = Time::ZERO;
    let mut i = 0;
    while t < horizon {
        while i < ev.len() && ev[i].0 <= t {
            count += ev[i].1;
            i += 1;
        }
        let next_ev = ev.get(i).map_or(horizon, |e| e.0).min(horizon);
        let next = Time((t.0 / HOUR + 1) * HOUR)
            .min(next_ev)
            .max(Time(t.0 + 1));
        let h = hour_of_day(t) as usize;
        let d = next.since(t).0 as f64;
        tot[h] += d;
        for (l, lev) in [0.4, 0.6, 0.8].iter().enumerate() {
            if count as f64 >= lev * n - 1e-9 {
                at[l][h] += d;
            }
        }
        t = next;
    }
    let mut out = [[0f64; 24]; 3];
    for l in 0..3 {
        for h in 0..24 {
            out[l][h] = 100.0 * at[l][h] / tot[h].max(1.0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::reserve_role::role;

    const MIN: u64 = 60_000_000;

    /// The hour's counts are the coordinator role's decisions: Longest-Free
    /// as `Partition` applies it picks each replacement, its
    /// `ReplacementStats` are what the hour reports, and the machine a
    /// user lost follows the role's replacement (Fig. 6.5).
    #[test]
    fn an_hour_counts_what_the_role_decided() {
        let names: Vec<String> = ["s0", "s1", "s2"].map(String::from).to_vec();
        let mut p = role(&arm_config(ReplacementRule::LongestFree, "s0"), 7).unwrap();
        // AV since 0, 20 and 10 minutes: Longest-Free order s0, s2, s1.
        for (s, m) in [(0u32, 0u64), (1, 20), (2, 10)] {
            p.observe(&names[s as usize], ad(true), Time(m * MIN));
        }
        let t0 = Time(HOUR);
        let inside = [
            (Time(HOUR + 5 * MIN), 0, State::Na),
            (Time(HOUR + 10 * MIN), 2, State::Na),
        ];
        let mut rng = gleaner_core::rng::seeded(1);
        let o = run_hour(&mut p, &names, &[], &inside, t0, 1, 1, &mut rng).unwrap();
        // s0 (bound) → s2 (AV longest of the rest) → s1.
        assert_eq!(p.holder("s1"), Some(RESERVER));
        let stats = p.stats();
        assert_eq!((stats.withdrawals, stats.replaced, stats.errors), (2, 2, 0));
        assert_eq!(o.preemptions, 2);
        assert!(!o.error);
        assert_eq!((o.users, o.users_hit), (1, 1));
        assert!(!o.below_level);

        // Next hour: two machines, one AV station: the role's bind error is
        // the hour's error, and so is its withdrawal with none free.
        let t0 = Time(2 * HOUR);
        let inside = [(Time(2 * HOUR + MIN), 1, State::Na)];
        let o = run_hour(&mut p, &names, &[], &inside, t0, 2, 2, &mut rng).unwrap();
        let stats = p.stats();
        assert_eq!((stats.withdrawals, stats.replaced, stats.errors), (3, 2, 2));
        assert_eq!(o.preemptions, 1);
        assert!(o.error && o.below_level);
        assert_eq!(p.holder("s1"), None);
    }
}
