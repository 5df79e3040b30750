//! The thesis's 23-station month (Mutka 1988 §6.2 and Chapter 5,
//! seeds/000_14c1149197e96532.txt L791–801, L867–902) computed on a trace:
//! Table 6.1's hourly utilisation by weekday/weekend day, evening and
//! night, Table 6.2's long AV intervals, the hourly availability curve of
//! Fig. 6.1 and the availability levels of Fig. 6.2 as the text states
//! them, and the Condor month's available machine-hours and local
//! utilisation.

use crate::availability::{Interval, State, Trace, cell_of, hour_of_day};
use crate::metrics::time_in;
use crate::papers;
use gleaner_core::time::Time;

const HOUR: u64 = 3_600_000_000;

/// What the thesis states about a 23-station month, measured on a trace.
#[derive(Clone, Debug)]
pub struct Month23 {
    /// % NA per station and cell (Table 6.1's columns).
    pub cells: Vec<[f64; 6]>,
    /// Column means over stations.
    pub cell_avg: [f64; 6],
    /// Root mean square difference from Table 6.1's cells (stations cycle
    /// through the table's 23), points.
    pub cell_rmse: f64,
    /// Per station: AV intervals > 10, > 24, > 48 h, and the longest (h).
    pub long: Vec<[f64; 4]>,
    /// Totals of the three counts over stations, per 30 days.
    pub long_totals: [f64; 3],
    /// Mean over stations of the longest AV interval, hours.
    pub longest_mean: f64,
    /// The longest AV interval of any station, hours.
    pub longest_max: f64,
    /// Stations with an AV interval over 48 hours.
    pub stations_over_48h: f64,
    /// Hourly system availability (Fig. 6.1): its minimum, the share of
    /// hours ≥ 60 % and < 50 %, its maximum (all %).
    pub hourly_min: f64,
    pub hours_ge_60: f64,
    pub hours_lt_50: f64,
    pub hourly_max: f64,
    /// Share of time (%) with at least 40, 60, 80 % of the stations AV
    /// (Fig. 6.2), over the month and by period [day, evening, night].
    pub level_ge: [f64; 3],
    pub level80_by_period: [f64; 3],
    /// AV machine-hours per 30 days (Chapter 5: 12 438, T:L791).
    pub av_machine_hours: f64,
    /// Mean NA share, % ("local utilization for the month was 25 %",
    /// T:L799).
    pub local_utilisation: f64,
    /// Stations and days observed.
    pub stations: usize,
    pub days: f64,
}

/// The AV count of `stations` as a step function: (time, count) at every
/// change, starting at 0.
fn av_steps(stations: &[Vec<Interval>]) -> Vec<(Time, i64)> {
    let mut ev: Vec<(Time, i64)> = Vec::new();
    for ivs in stations {
        for iv in ivs.iter().filter(|iv| iv.state == State::Av) {
            ev.push((iv.start, 1));
            ev.push((iv.end, -1));
        }
    }
    ev.sort();
    let mut out: Vec<(Time, i64)> = vec![(Time::ZERO, 0)];
    let mut n = 0i64;
    for (t, d) in ev {
        n += d;
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = n,
            _ => out.push((t, n)),
        }
    }
    out
}

/// Period of an hour of day: 0 day (8–17), 1 evening (17–24), 2 night.
fn period(h: u32) -> usize {
    cell_of(Time(u64::from(h) * HOUR)) % 3
}

/// The month's statistics of `trace` over `[0, horizon)`.
pub fn month23(trace: &Trace, horizon: Time) -> Month23 {
    let n = trace.stations.len();
    let stations: Vec<Vec<Interval>> = (0..n).map(|s| trace.contiguous(s, horizon)).collect();
    let hours = horizon.0 / HOUR;
    let per30 = 30.0 * 24.0 / hours.max(1) as f64;
    // Table 6.1.
    let mut cells = Vec::with_capacity(n);
    for ivs in &stations {
        let (mut na, mut tot) = ([0f64; 6], [0f64; 6]);
        for h in 0..hours {
            let a = Time(h * HOUR);
            let c = cell_of(a);
            na[c] += time_in(ivs, State::Na, a, Time((h + 1) * HOUR)).0 as f64;
            tot[c] += HOUR as f64;
        }
        let mut row = [f64::NAN; 6];
        for c in 0..6 {
            if tot[c] > 0.0 {
                row[c] = 100.0 * na[c] / tot[c];
            }
        }
        cells.push(row);
    }
    let mut cell_avg = [0.0; 6];
    for (c, v) in cell_avg.iter_mut().enumerate() {
        *v = cells.iter().map(|r| r[c]).sum::<f64>() / n.max(1) as f64;
    }
    let (mut se, mut k) = (0.0, 0.0);
    for (s, row) in cells.iter().enumerate() {
        for (x, paper) in row.iter().zip(&papers::TABLE6_1[s % 23]).take(6) {
            if x.is_finite() {
                se += (x - paper).powi(2);
                k += 1.0;
            }
        }
    }
    // Table 6.2.
    let long: Vec<[f64; 4]> = stations
        .iter()
        .map(|ivs| {
            let mut r = [0.0f64; 4];
            for iv in ivs.iter().filter(|iv| iv.state == State::Av) {
                let h = iv.len().0 as f64 / HOUR as f64;
                for (i, lim) in [10.0, 24.0, 48.0].iter().enumerate() {
                    if h > *lim {
                        r[i] += 1.0;
                    }
                }
                r[3] = r[3].max(h);
            }
            r
        })
        .collect();
    let mut long_totals = [0.0; 3];
    for r in &long {
        for i in 0..3 {
            long_totals[i] += r[i] * per30;
        }
    }
    // Fig. 6.1: hourly availability.
    let hourly: Vec<f64> = (0..hours)
        .map(|h| {
            let (a, b) = (Time(h * HOUR), Time((h + 1) * HOUR));
            let av: f64 = stations
                .iter()
                .map(|ivs| time_in(ivs, State::Av, a, b).0 as f64)
                .sum();
            100.0 * av / (HOUR as f64 * n.max(1) as f64)
        })
        .collect();
    let share = |f: &dyn Fn(f64) -> bool| {
        100.0 * hourly.iter().filter(|x| f(**x)).count() as f64 / hourly.len().max(1) as f64
    };
    // Fig. 6.2: time at or above each level.
    let steps = av_steps(&stations);
    let levels = [0.4, 0.6, 0.8];
    let mut at = [[0f64; 3]; 3]; // [level][period]
    let mut per_tot = [0f64; 3];
    for (i, &(t, c)) in steps.iter().enumerate() {
        let end = steps.get(i + 1).map_or(horizon, |x| x.0).min(horizon);
        let mut u = t;
        while u < end {
            let next = Time((u.0 / HOUR + 1) * HOUR).min(end);
            let p = period(hour_of_day(u));
            let d = next.since(u).0 as f64;
            per_tot[p] += d;
            for (l, lev) in levels.iter().enumerate() {
                if c as f64 >= lev * n as f64 - 1e-9 {
                    at[l][p] += d;
                }
            }
            u = next;
        }
    }
    let tot: f64 = per_tot.iter().sum();
    let mut level_ge = [0.0; 3];
    for l in 0..3 {
        level_ge[l] = 100.0 * at[l].iter().sum::<f64>() / tot.max(1.0);
    }
    let mut level80_by_period = [0.0; 3];
    for p in 0..3 {
        level80_by_period[p] = 100.0 * at[2][p] / per_tot[p].max(1.0);
    }
    let av_h: f64 = stations
        .iter()
        .map(|ivs| time_in(ivs, State::Av, Time::ZERO, horizon).0 as f64 / HOUR as f64)
        .sum();
    Month23 {
        cells,
        cell_avg,
        cell_rmse: if k > 0.0 { (se / k).sqrt() } else { f64::NAN },
        longest_mean: long.iter().map(|r| r[3]).sum::<f64>() / n.max(1) as f64,
        longest_max: long.iter().map(|r| r[3]).fold(0.0, f64::max),
        stations_over_48h: long.iter().filter(|r| r[3] > 48.0).count() as f64,
        long,
        long_totals,
        hourly_min: hourly.iter().copied().fold(f64::INFINITY, f64::min),
        hours_ge_60: share(&|x| x >= 60.0),
        hours_lt_50: share(&|x| x < 50.0),
        hourly_max: hourly.iter().copied().fold(0.0, f64::max),
        level_ge,
        level80_by_period,
        av_machine_hours: av_h * per30,
        local_utilisation: 100.0 - 100.0 * av_h / (hours as f64 * n.max(1) as f64),
        stations: n,
        days: horizon.as_secs_f64() / 86_400.0,
    }
}
