//! The `profile` experiment: Mutka & Livny 1987a's availability profile
//! (seeds/003_0d675f08666827bf.txt; thesis Chapter 3,
//! seeds/000_14c1149197e96532.txt L345–557) computed on synthetic traces —
//! or on a recorded trace given with `--trace`.
//!
//! Setup as in the paper: 13 stations over 5 months (1 Sep – 31 Jan, 153
//! days); stations 12 and 13 are observed September–November only (P:L142).
//! For each availability model (M2, M3, M4 by default; `--model` picks one)
//! we compute the analogues of Table 1 (monthly availability), Table 2
//! (hourly utilisation histograms), Table 3 (system utilisation SU_l over
//! the 11 full-period stations), the least-squares hyperexponential weights
//! with the paper's fixed means (AV 3/25/300, NA 7/55 with the 7-minute
//! floor), label statistics and the longest low-availability periods, and
//! put them beside the published values.
//!
//! `opts.quick` changes nothing (the whole experiment takes well under a
//! second); `opts.seeds` is ignored: one trace per model from `opts.seed`.

use super::{Check, ExperimentOpts, ExperimentReport};
use crate::SimError;
use crate::availability::{Interval, MONTH_NAMES, Model, Source, State, Trace, month_start};
use crate::metrics::{
    LabelStats, cov, ecdf_lt_t_plus_1, fit_weights, hourly_utilisation, label_stats, lengths_mins,
    longest_with_fewer_av, max_deviation, mean, monthly_availability, system_utilisation,
};
use crate::plot::{self, BarGroup, Series};
use gleaner_core::time::{Dur, Time};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Table 1 of P (P:L243–261): % AV per station (rows) and month Sep–Jan;
/// NaN where a station was not monitored.
pub const PAPER_TABLE1: [[f64; 5]; 13] = [
    [89.0, 80.0, 81.0, 88.0, 84.0],
    [86.0, 89.0, 91.0, 94.0, 90.0],
    [73.0, 28.0, 26.0, 63.0, 67.0],
    [87.0, 84.0, 85.0, 86.0, 81.0],
    [21.0, 0.0, 45.0, 45.0, 32.0],
    [78.0, 81.0, 74.0, 63.0, 69.0],
    [67.0, 27.0, 87.0, 57.0, 91.0],
    [85.0, 72.0, 70.0, 70.0, 47.0],
    [79.0, 88.0, 83.0, 85.0, 80.0],
    [82.0, 89.0, 82.0, 80.0, 78.0],
    [81.0, 84.0, 86.0, 81.0, 86.0],
    [3.0, 96.0, 17.0, f64::NAN, f64::NAN],
    [80.0, 86.0, 75.0, f64::NAN, f64::NAN],
];
/// Table 1 "System" row (P:L258).
pub const PAPER_SYSTEM: [f64; 5] = [70.0, 70.0, 69.0, 74.0, 73.0];
/// Table 2 "Average" row (P:L302): % of hours per NA-share bin.
pub const PAPER_TABLE2_AVG: [f64; 10] = [53.0, 10.0, 4.0, 3.0, 2.0, 2.0, 2.0, 1.0, 2.0, 21.0];
/// Table 3 (P:L314–326): SU_60, SU_30, SU_10, SU_1 columns.
pub const PAPER_TABLE3: [[f64; 10]; 4] = [
    [6.0, 28.1, 28.2, 16.2, 8.7, 6.5, 4.4, 1.6, 0.3, 0.0],
    [8.4, 25.2, 29.1, 15.3, 8.8, 6.7, 4.4, 1.7, 0.4, 0.1],
    [13.0, 24.4, 24.7, 15.4, 8.9, 6.4, 4.3, 2.1, 0.8, 0.1],
    [18.0, 24.6, 22.7, 13.4, 7.8, 5.7, 4.0, 2.3, 1.1, 0.4],
];
/// SU window lengths in minutes (Table 3).
pub const SU_WINDOWS: [u64; 4] = [60, 30, 10, 1];
const BIN_LABELS: [&str; 10] = [
    "0-10", "10-20", "20-30", "30-40", "40-50", "50-60", "60-70", "70-80", "80-90", "90-100",
];

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
}

/// The paper's observation windows: 5 months for stations 1–11, 3 months
/// (Sep–Nov) for stations 12 and 13 (P:L142).
fn observed_until(station: usize, full: Time) -> Time {
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
    }
}

fn f2(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        String::new()
    }
}

fn write(dir: &Path, name: &str, text: &str, files: &mut Vec<PathBuf>) -> Result<(), SimError> {
    let p = dir.join(name);
    std::fs::write(&p, text).map_err(|e| SimError::io(&p, e))?;
    files.push(PathBuf::from(name));
    Ok(())
}

fn tables_csv(p: &Profile) -> (String, String, String) {
    let months = p.system.len();
    let mut t1 = String::from("station");
    for m in 0..months {
        let _ = write!(t1, ",{}", MONTH_NAMES[m % 12]);
    }
    t1.push_str(",average,cov\n");
    for (s, row) in p.monthly.iter().enumerate() {
        let _ = write!(t1, "{}", s + 1);
        for v in row {
            let _ = write!(t1, ",{}", f2(*v));
        }
        let avg = mean(row.iter().copied()).unwrap_or(f64::NAN);
        let _ = writeln!(t1, ",{},{}", f2(avg), f2(cov(row).unwrap_or(f64::NAN)));
    }
    let _ = write!(t1, "system");
    for v in &p.system {
        let _ = write!(t1, ",{}", f2(*v));
    }
    let _ = writeln!(
        t1,
        ",{},{}",
        f2(mean(p.system.iter().copied()).unwrap_or(f64::NAN)),
        f2(cov(&p.system).unwrap_or(f64::NAN))
    );
    let mut t2 = format!("station,{}\n", BIN_LABELS.join(","));
    for (s, row) in p.table2.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|v| f2(*v)).collect();
        let _ = writeln!(t2, "{},{}", s + 1, cells.join(","));
    }
    let cells: Vec<String> = p.table2_avg.iter().map(|v| f2(*v)).collect();
    let _ = writeln!(t2, "average,{}", cells.join(","));
    let mut t3 =
        String::from("utilisation,su60,su30,su10,su1,paper_su60,paper_su30,paper_su10,paper_su1\n");
    for b in 0..10 {
        let _ = writeln!(
            t3,
            "{},{},{},{},{},{},{},{},{}",
            BIN_LABELS[b],
            f2(p.table3[0][b]),
            f2(p.table3[1][b]),
            f2(p.table3[2][b]),
            f2(p.table3[3][b]),
            PAPER_TABLE3[0][b],
            PAPER_TABLE3[1][b],
            PAPER_TABLE3[2][b],
            PAPER_TABLE3[3][b]
        );
    }
    (t1, t2, t3)
}

fn w(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.3}"))
        .collect::<Vec<_>>()
        .join("/")
}

fn summary(profiles: &[Profile], seed: u64, days: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Availability profile (Mutka & Livny 1987a; Mutka 1988 Ch. 3)\n"
    );
    let _ = writeln!(
        s,
        "13 stations, {days:.0} days from Monday 1 Sep (stations 12–13 observed Sep–Nov only, as in P:L142); seed {seed}. Paper values from P Tables 1–3 (P:L243–326) and Eq. 2/3 (P:L184, L190).\n"
    );
    let _ = writeln!(s, "## Headline numbers\n");
    let mut hdr = String::from("| Quantity | Paper |");
    let mut sep = String::from("|---|---|");
    for p in profiles {
        let _ = write!(hdr, " {} |", p.label);
        sep.push_str("---|");
    }
    let _ = writeln!(s, "{hdr}\n{sep}");
    let row = |name: &str, paper: &str, f: &dyn Fn(&Profile) -> String| {
        let mut r = format!("| {name} | {paper} |");
        for p in profiles {
            let _ = write!(r, " {} |", f(p));
        }
        r
    };
    let lines = [
        row(
            "System availability (mean of System row) %",
            "71 (70–74)",
            &|p| format!("{:.1}", mean(p.system.iter().copied()).unwrap_or(f64::NAN)),
        ),
        row("Time-weighted availability %", "≈ 70–71", &|p| {
            format!("{:.1}", p.overall_av)
        }),
        row(
            "Mean AV / NA interval (min)",
            "≈ 100 / 40 (S:L156); Eq. 2/3 means 84 / 24.3",
            &|p| format!("{:.1} / {:.1}", p.mean_av, p.mean_na),
        ),
        row(
            "Table 2 Average: hours NA < 10 % / ≥ 90 %",
            "53 / 21",
            &|p| format!("{:.1} / {:.1}", p.table2_avg[0], p.table2_avg[9]),
        ),
        row("SU_60 < 40 % (cumulative)", "78.5", &|p| {
            format!("{:.1}", p.table3[0][..4].iter().sum::<f64>())
        }),
        row("SU_60 ≥ 50 %", "12.8", &|p| {
            format!("{:.1}", p.table3[0][5..].iter().sum::<f64>())
        }),
        row("Fitted AV weights (3/25/300)", "0.32/0.44/0.24", &|p| {
            w(&p.av_weights)
        }),
        row(
            "AV fit max dev. below/above beyond 5 min",
            "2.5 % / 1.0 %",
            &|p| format!("{:.1} % / {:.1} %", 100.0 * p.av_dev.0, 100.0 * p.av_dev.1),
        ),
        row("Fitted NA weights (7/55, floor 7)", "0.68/0.32", &|p| {
            w(&p.na_weights)
        }),
        row(
            "NA fit max dev. below/above beyond 7 min",
            "1.0 % / 1.5 %",
            &|p| format!("{:.1} % / {:.1} %", 100.0 * p.na_dev.0, 100.0 * p.na_dev.1),
        ),
        row("AV labels S/M/L %", "41/36/23", &|p| {
            format!(
                "{:.0}/{:.0}/{:.0}",
                100.0 * p.labels.av[0],
                100.0 * p.labels.av[1],
                100.0 * p.labels.av[2]
            )
        }),
        row("NA labels S/L %", "74/26", &|p| {
            format!(
                "{:.0}/{:.0}",
                100.0 * p.labels.na[0],
                100.0 * p.labels.na[1]
            )
        }),
        row("AV→AV diagonal S/M/L", "0.64/0.52/0.48", &|p| {
            format!(
                "{:.2}/{:.2}/{:.2}",
                p.labels.av_av[0][0], p.labels.av_av[1][1], p.labels.av_av[2][2]
            )
        }),
        row("corr(AV, next NA)", "very small positive", &|p| {
            format!("{:.3}", p.labels.corr_av_na)
        }),
        row(
            "Longest period with 0 / <2 / <3 AV stations (min)",
            "10 / 25 / 120",
            &|p| {
                format!(
                    "{:.0} / {:.0} / {:.0}",
                    p.longest[0], p.longest[1], p.longest[2]
                )
            },
        ),
    ];
    for l in lines {
        let _ = writeln!(s, "{l}");
    }
    for p in profiles {
        let _ = writeln!(s, "\n## {} — Table 1 analogue (% AV)\n", p.label);
        let _ = writeln!(
            s,
            "| Station | Sep | Oct | Nov | Dec | Jan | Paper avg | Ours avg |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
        for (i, r) in p.monthly.iter().enumerate() {
            let cells: Vec<String> = (0..5)
                .map(|m| r.get(m).map_or(String::new(), |v| f2(*v)))
                .collect();
            let paper =
                mean(PAPER_TABLE1.get(i).map_or(vec![], |x| x.to_vec())).unwrap_or(f64::NAN);
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {:.1} |",
                i + 1,
                cells.join(" | "),
                paper,
                mean(r.iter().copied()).unwrap_or(f64::NAN)
            );
        }
        let sys: Vec<String> = p.system.iter().take(5).map(|v| f2(*v)).collect();
        let _ = writeln!(
            s,
            "| System | {} | 71 | {:.1} |",
            sys.join(" | "),
            mean(p.system.iter().copied()).unwrap_or(f64::NAN)
        );
        let _ = writeln!(
            s,
            "\nTable 2 Average row (ours vs paper, % of hours per NA-share bin):\n"
        );
        let _ = writeln!(s, "| | {} |", BIN_LABELS.join(" | "));
        let _ = writeln!(s, "|---|{}", "---|".repeat(10));
        let ours: Vec<String> = p.table2_avg.iter().map(|v| format!("{v:.1}")).collect();
        let paper: Vec<String> = PAPER_TABLE2_AVG.iter().map(|v| format!("{v:.0}")).collect();
        let _ = writeln!(
            s,
            "| ours | {} |\n| paper | {} |",
            ours.join(" | "),
            paper.join(" | ")
        );
        let _ = writeln!(s, "\nTable 3 (SU_l, % of windows; ours / paper):\n");
        let _ = writeln!(s, "| p | SU_60 | SU_30 | SU_10 | SU_1 |");
        let _ = writeln!(s, "|---|---|---|---|---|");
        for b in 0..10 {
            let _ = writeln!(
                s,
                "| {} | {:.1} / {} | {:.1} / {} | {:.1} / {} | {:.1} / {} |",
                BIN_LABELS[b],
                p.table3[0][b],
                PAPER_TABLE3[0][b],
                p.table3[1][b],
                PAPER_TABLE3[1][b],
                p.table3[2][b],
                PAPER_TABLE3[2][b],
                p.table3[3][b],
                PAPER_TABLE3[3][b]
            );
        }
    }
    let _ = writeln!(s, "\n## Where the synthetic statistics differ, and why\n");
    let _ = writeln!(
        s,
        "- **M2 is too available** (≈ 77.6 % vs 70–71 %): Eq. 2/3 were fitted to interval *counts*, not to time-weighted availability; their renewal process is AV 83.96/(83.96+24.25) = 77.6 % of the time (spec §0 item 3, B3). The fitted weights recover Eq. 2/3 almost exactly, as they must.\n\
- **M3** keeps M2's marginals (our off-diagonals have Eq. 2/3's weights as stationary law), so it has the same availability gap; it adds AV→AV persistence. Its *label* diagonals come out weaker than the component diagonals because exponential components straddle the 9/75-minute thresholds (spec §1.9).\n\
- **Identical, time-homogeneous stations (M1–M3) cannot produce** the bimodal hourly utilisation of Table 2 (21 % of hours ≥ 90 % NA) or the SU_60 tail: with NA means of 7 and 55 minutes a whole busy hour is rare. **M4** (per-station availability calibrated to Table 1, plus weekday/weekend hour-of-day modulation) closes the availability gap by construction and moves Table 2 and the SU tails towards the paper; compare the columns above. M4's modulation profile is ours (the paper's Figs 10/11 have no numbers), so its hour-level shape is an assumption, not a fit."
    );
    s
}

/// `glean sim profile`.
pub fn run(opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    let t0 = Instant::now();
    let horizon = month_start(5); // Sep–Jan, 153 days
    let mut traces: Vec<(String, Trace, Time, bool)> = Vec::new();
    match Source::from_opts(
        opts.trace.as_deref(),
        opts.model.as_deref(),
        Model::default(),
    )? {
        Source::Trace(t) => {
            let end = t.end();
            traces.push(("trace".into(), (*t).clone(), end, false));
        }
        Source::Model(m) if opts.model.is_some() => {
            let t = Trace::generate(&m, opts.seed, 13, horizon);
            traces.push((m.name(), t, horizon, true));
        }
        Source::Model(_) => {
            for name in ["m2", "m3", "m4"] {
                let m = Model::parse(name)?;
                let t = Trace::generate(&m, opts.seed, 13, horizon);
                traces.push((m.name(), t, horizon, true));
            }
        }
    }
    opts.progress.set_length(traces.len() as u64);
    let mut files = Vec::new();
    let mut profiles = Vec::new();
    let mut events = 0u64;
    for (label, trace, until, paper_windows) in &traces {
        opts.progress.message(&format!("profile: {label}"));
        events += trace.stations.iter().map(|v| v.len() as u64).sum::<u64>();
        let p = profile(label, trace, *until, *paper_windows);
        let tag = label
            .split_whitespace()
            .next()
            .unwrap_or("trace")
            .to_string();
        let (t1, t2, t3) = tables_csv(&p);
        write(&opts.out, &format!("table1_{tag}.csv"), &t1, &mut files)?;
        write(&opts.out, &format!("table2_{tag}.csv"), &t2, &mut files)?;
        write(&opts.out, &format!("table3_{tag}.csv"), &t3, &mut files)?;
        // Figures: SU_60 and Table 2 averages vs the paper, ECDFs.
        let cats: Vec<String> = BIN_LABELS.iter().map(|s| s.to_string()).collect();
        let name = format!("su60_{tag}.svg");
        plot::bar_chart(
            &opts.out.join(&name),
            &format!("SU_60, {label} vs paper (Table 3)"),
            "system utilisation %",
            "% of hours",
            &cats,
            &[
                BarGroup {
                    name: label.clone(),
                    values: p.table3[0].to_vec(),
                },
                BarGroup {
                    name: "paper".into(),
                    values: PAPER_TABLE3[0].to_vec(),
                },
            ],
        )?;
        files.push(PathBuf::from(name));
        let name = format!("hourly_util_{tag}.svg");
        plot::bar_chart(
            &opts.out.join(&name),
            &format!("Hourly station utilisation, {label} vs paper (Table 2 average)"),
            "NA share of the hour %",
            "% of hours",
            &cats,
            &[
                BarGroup {
                    name: label.clone(),
                    values: p.table2_avg.to_vec(),
                },
                BarGroup {
                    name: "paper".into(),
                    values: PAPER_TABLE2_AVG.to_vec(),
                },
            ],
        )?;
        files.push(PathBuf::from(name));
        let stations: Vec<Vec<Interval>> = (0..trace.stations.len())
            .map(|s| trace.contiguous(s, *until))
            .collect();
        let eq2 = crate::availability::M2::default();
        for (st, kind, model_cdf) in [
            (
                State::Av,
                "av",
                Box::new(move |t: f64| eq2.av().cdf(t)) as Box<dyn Fn(f64) -> f64>,
            ),
            (
                State::Na,
                "na",
                Box::new(|t: f64| {
                    if t < 7.0 {
                        0.0
                    } else {
                        crate::availability::M2::default().na_raw().cdf(t)
                    }
                }),
            ),
        ] {
            let e = ecdf_lt_t_plus_1(&lengths_mins(&stations, st), 600);
            let name = format!("ecdf_{kind}_{tag}.svg");
            plot::line_chart(
                &opts.out.join(&name),
                &format!(
                    "{} interval lengths, {label} (\"< t+1\" ECDF) vs Eq. {}",
                    kind.to_uppercase(),
                    if kind == "av" { 2 } else { 3 }
                ),
                "t (minutes)",
                "fraction < t+1",
                &[
                    Series::new(label.clone(), e.clone()),
                    Series::new(
                        "paper equation",
                        e.iter().map(|&(t, _)| (t, model_cdf(t + 1.0))).collect(),
                    ),
                ],
            )?;
            files.push(PathBuf::from(name));
        }
        profiles.push(p);
        opts.progress.advance(1);
    }
    // Fits and labels across models.
    let mut fits = String::from(
        "model,av_w3,av_w25,av_w300,av_dev_below,av_dev_above,na_w7,na_w55,na_dev_below,na_dev_above,mean_av_min,mean_na_min,av_short,av_medium,av_long,na_short,na_long,avav_ss,avav_mm,avav_ll,nana_ss,nana_ll,corr_av_na,longest_0_min,longest_lt2_min,longest_lt3_min,overall_av_pct\n",
    );
    for p in &profiles {
        let g = |v: &Vec<f64>, i: usize| v.get(i).copied().unwrap_or(f64::NAN);
        let _ = writeln!(
            fits,
            "{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.2},{:.2},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.1},{:.1},{:.1},{:.2}",
            p.label.replace(',', ";"),
            g(&p.av_weights, 0),
            g(&p.av_weights, 1),
            g(&p.av_weights, 2),
            p.av_dev.0,
            p.av_dev.1,
            g(&p.na_weights, 0),
            g(&p.na_weights, 1),
            p.na_dev.0,
            p.na_dev.1,
            p.mean_av,
            p.mean_na,
            p.labels.av[0],
            p.labels.av[1],
            p.labels.av[2],
            p.labels.na[0],
            p.labels.na[1],
            p.labels.av_av[0][0],
            p.labels.av_av[1][1],
            p.labels.av_av[2][2],
            p.labels.na_na[0][0],
            p.labels.na_na[1][1],
            p.labels.corr_av_na,
            p.longest[0],
            p.longest[1],
            p.longest[2],
            p.overall_av
        );
    }
    write(&opts.out, "fits.csv", &fits, &mut files)?;
    let days = traces.first().map_or(0.0, |t| t.2.as_secs_f64() / 86_400.0);
    write(
        &opts.out,
        "summary.md",
        &summary(&profiles, opts.seed, days),
        &mut files,
    )?;
    // Checks: what the models are designed to reproduce.
    let mut checks = Vec::new();
    for p in &profiles {
        let sys = mean(p.system.iter().copied()).unwrap_or(f64::NAN);
        if p.label == "m2" || p.label == "m3" {
            checks.push(Check {
                name: format!("{}: fitted AV weights ≈ Eq. 2 (±0.03)", p.label),
                passed: p.av_weights.len() == 3
                    && p.av_weights
                        .iter()
                        .zip([0.32, 0.44, 0.24])
                        .all(|(a, b)| (a - b).abs() <= 0.03),
                detail: w(&p.av_weights),
            });
            checks.push(Check {
                name: format!("{}: fitted NA weights ≈ Eq. 3 (±0.03)", p.label),
                passed: p.na_weights.len() == 2
                    && p.na_weights
                        .iter()
                        .zip([0.68, 0.32])
                        .all(|(a, b)| (a - b).abs() <= 0.03),
                detail: w(&p.na_weights),
            });
            checks.push(Check {
                name: format!(
                    "{}: time-weighted availability ≈ 77.6 % (known gap B3, ±2.5 pp)",
                    p.label
                ),
                passed: (p.overall_av - 77.6).abs() <= 2.5,
                detail: format!("{:.1} %", p.overall_av),
            });
        }
        if p.label == "m4" {
            checks.push(Check {
                name: "m4: system availability within 4 pp of the paper's 71 %".into(),
                passed: (sys - 71.0).abs() <= 4.0,
                detail: format!("{sys:.1} %"),
            });
        }
    }
    Ok(ExperimentReport {
        name: "profile",
        files,
        events,
        elapsed: t0.elapsed(),
        checks,
    })
}
