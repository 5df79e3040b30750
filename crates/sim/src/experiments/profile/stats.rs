//! The Chapter 3 profile of a trace (Mutka & Livny 1987,
//! seeds/003_0d675f08666827bf.txt): Tables 1–3, the fitted mixtures, the
//! interval labels, the longest stretches with few stations AV, and the
//! hour-of-week shapes the text gives for Figs 10 and 11.

use crate::availability::{Interval, State, Trace, day_of_week, hour_of_day, month_start};
use crate::metrics::{
    LabelStats, ecdf_lt_t_plus_1, fit_weights, hourly_utilisation, label_stats, lengths_mins,
    longest_with_fewer_av, max_deviation, mean, monthly_availability, system_utilisation, time_in,
};
use crate::papers::SU_WINDOWS;
use gleaner_core::time::{Dur, Time};

/// Everything computed for one trace.
#[derive(Clone, Debug)]
pub struct Profile {
    pub label: String,
    /// % AV per station and month (NaN where not observed).
    pub monthly: Vec<Vec<f64>>,
    /// System row: mean over stations present each month.
    pub system: Vec<f64>,
    pub table2: Vec<[f64; 10]>,
    pub table2_avg: [f64; 10],
    /// SU_l for l in [`SU_WINDOWS`] (full-period stations only).
    pub table3: [[f64; 10]; 4],
    /// Fitted AV weights (means 3/25/300) and NA weights (7/55, floor 7).
    pub av_weights: Vec<f64>,
    pub na_weights: Vec<f64>,
    /// Max deviation (below, above) of the fitted AV curve beyond 5 min and
    /// of the NA curve beyond 7 min.
    pub av_dev: (f64, f64),
    pub na_dev: (f64, f64),
    pub mean_av: f64,
    pub mean_na: f64,
    pub labels: LabelStats,
    /// Longest period with fewer than 1, 2, 3 AV stations (minutes).
    pub longest: [f64; 3],
    pub overall_av: f64,
    /// Largest hourly average number of NA stations (full-period stations;
    /// P:L306: "never … greater than 9").
    pub max_hour_na: f64,
    /// System availability (%) on weekdays 14–17 h (P:L241: "dropped to
    /// about 50 % between 2-4 in the afternoon").
    pub weekday_afternoon_av: f64,
    /// System availability (%) on weekdays 8–10 h ("early in the morning
    /// the system availability was large", P:L241).
    pub weekday_morning_av: f64,
    /// System availability (%) on weekends (P:L241: "between 70-80 %").
    pub weekend_av: f64,
    /// The weekend hour of day with the lowest system availability
    /// (P:L266: busiest 14–17 h).
    pub weekend_busiest_hour: f64,
    /// Largest deviation (points) of a month's System row from its mean
    /// (P:L239: "steady within 3 % deviation").
    pub system_max_dev: f64,
}

/// The paper's observation windows: 5 months for stations 1–11, 3 months
/// (Sep–Nov) for stations 12 and 13 (P:L142).
pub(super) fn observed_until(station: usize, full: Time) -> Time {
    if station >= 11 {
        month_start(3).min(full)
    } else {
        full
    }
}

/// Computes the profile of `trace` observed over `[0, horizon)`.
/// `paper_windows`: apply the 12/13 Sep–Nov truncation.
pub fn profile(label: &str, trace: &Trace, horizon: Time, paper_windows: bool) -> Profile {
    let n = trace.stations.len();
    let ends: Vec<Time> = (0..n)
        .map(|s| {
            if paper_windows {
                observed_until(s, horizon)
            } else {
                horizon
            }
        })
        .collect();
    let stations: Vec<Vec<Interval>> = (0..n).map(|s| trace.contiguous(s, ends[s])).collect();
    // Table 1.
    let mut monthly = monthly_availability(&stations, horizon);
    for (s, row) in monthly.iter_mut().enumerate() {
        for (m, v) in row.iter_mut().enumerate() {
            if month_start(m) >= ends[s] {
                *v = f64::NAN;
            }
        }
    }
    let months = monthly.first().map_or(0, Vec::len);
    let system: Vec<f64> = (0..months)
        .map(|m| mean(monthly.iter().map(|r| r[m])).unwrap_or(f64::NAN))
        .collect();
    // Table 2.
    let table2: Vec<[f64; 10]> = (0..n)
        .map(|s| hourly_utilisation(&stations[s], ends[s]))
        .collect();
    let mut table2_avg = [0.0; 10];
    for (b, v) in table2_avg.iter_mut().enumerate() {
        *v = mean(table2.iter().map(|r| r[b])).unwrap_or(f64::NAN);
    }
    // Table 3 over the full-period stations (T:L401: "the 11 stations that
    // were monitored for the entire measurement period").
    let full: Vec<Vec<Interval>> = (0..n)
        .filter(|&s| ends[s] == horizon)
        .map(|s| stations[s].clone())
        .collect();
    let mut table3 = [[0.0; 10]; 4];
    for (i, l) in SU_WINDOWS.iter().enumerate() {
        table3[i] = system_utilisation(&full, Dur::from_mins(*l), horizon);
    }
    // Interval statistics: drop the artificial first/last pieces cut by the
    // observation window (they are not complete intervals).
    let inner: Vec<Vec<Interval>> = stations
        .iter()
        .zip(&ends)
        .map(|(v, &e)| {
            v.iter()
                .copied()
                .filter(|iv| iv.start > Time::ZERO && iv.end < e)
                .collect()
        })
        .collect();
    let av_len = lengths_mins(&inner, State::Av);
    let na_len = lengths_mins(&inner, State::Na);
    let av_e = ecdf_lt_t_plus_1(&av_len, 600);
    let na_e = ecdf_lt_t_plus_1(&na_len, 600);
    let av_fit = fit_weights(&av_e, &[3.0, 25.0, 300.0], 0.0);
    let na_fit = fit_weights(&na_e, &[7.0, 55.0], 7.0);
    let av_dev = av_fit
        .as_ref()
        .map(|h| max_deviation(&av_e, |t| h.cdf(t), 5.0))
        .unwrap_or((f64::NAN, f64::NAN));
    let na_dev = na_fit
        .as_ref()
        .map(|h| max_deviation(&na_e, |t| if t < 7.0 { 0.0 } else { h.cdf(t) }, 7.0))
        .unwrap_or((f64::NAN, f64::NAN));
    let longest = [1usize, 2, 3].map(|k| longest_with_fewer_av(&full, k, horizon).as_mins_f64());
    let clock = clock_stats(&full, horizon);
    let max_hour_na = max_hour_na(&full, horizon);
    let sys_mean = mean(system.iter().copied()).unwrap_or(f64::NAN);
    let system_max_dev = system
        .iter()
        .filter(|v| v.is_finite())
        .map(|v| (v - sys_mean).abs())
        .fold(0.0f64, f64::max);
    let (mut av_t, mut tot) = (0u64, 0u64);
    for v in &stations {
        for iv in v {
            tot += iv.len().0;
            if iv.state == State::Av {
                av_t += iv.len().0;
            }
        }
    }
    Profile {
        label: label.to_string(),
        monthly,
        system,
        table2,
        table2_avg,
        table3,
        av_weights: av_fit.map(|h| h.weights).unwrap_or_default(),
        na_weights: na_fit.map(|h| h.weights).unwrap_or_default(),
        av_dev,
        na_dev,
        mean_av: mean(av_len.iter().copied()).unwrap_or(f64::NAN),
        mean_na: mean(na_len.iter().copied()).unwrap_or(f64::NAN),
        labels: label_stats(&inner),
        longest,
        overall_av: if tot == 0 {
            f64::NAN
        } else {
            100.0 * av_t as f64 / tot as f64
        },
        max_hour_na,
        weekday_afternoon_av: clock.0,
        weekday_morning_av: clock.1,
        weekend_av: clock.2,
        weekend_busiest_hour: clock.3,
        system_max_dev,
    }
}

/// System availability (%) by hour of week over the full-period stations:
/// (weekdays 14–17 h, weekdays 8–10 h, weekends, the weekend hour of day
/// with the least).
fn clock_stats(stations: &[Vec<Interval>], horizon: Time) -> (f64, f64, f64, f64) {
    let hour = 3_600_000_000u64;
    // [weekday?][hour of day] → (AV µs, total µs)
    let mut acc = [[(0f64, 0f64); 24]; 2];
    for ivs in stations {
        for h in 0..horizon.0 / hour {
            let a = Time(h * hour);
            let b = Time((h + 1) * hour);
            let av = time_in(ivs, State::Av, a, b).0 as f64;
            let we = usize::from(day_of_week(a) >= 5);
            let c = &mut acc[we][hour_of_day(a) as usize];
            c.0 += av;
            c.1 += hour as f64;
        }
    }
    let share = |we: usize, hs: std::ops::Range<usize>| {
        let (a, t) = hs.fold((0.0, 0.0), |(a, t), h| (a + acc[we][h].0, t + acc[we][h].1));
        if t > 0.0 { 100.0 * a / t } else { f64::NAN }
    };
    let busiest = (0..24)
        .min_by(|&x, &y| share(1, x..x + 1).total_cmp(&share(1, y..y + 1)))
        .unwrap_or(0);
    (
        share(0, 14..17),
        share(0, 8..10),
        share(1, 0..24),
        busiest as f64,
    )
}

/// Largest hourly average number of NA stations.
fn max_hour_na(stations: &[Vec<Interval>], horizon: Time) -> f64 {
    let hour = 3_600_000_000u64;
    (0..horizon.0 / hour)
        .map(|h| {
            let (a, b) = (Time(h * hour), Time((h + 1) * hour));
            stations
                .iter()
                .map(|ivs| time_in(ivs, State::Na, a, b).0 as f64 / hour as f64)
                .sum::<f64>()
        })
        .fold(0.0f64, f64::max)
}
