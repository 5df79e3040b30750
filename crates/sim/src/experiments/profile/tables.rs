//! The profile's output files: the Table 1–3 CSVs, the figures against
//! the paper, the fitted mixtures, and the per-model detail tables of the
//! summary.

use super::{PAPER_TABLE1, PAPER_TABLE2_AVG, PAPER_TABLE3, Profile};
use crate::SimError;
use crate::availability::{Interval, MONTH_NAMES, State, Trace};
use crate::metrics::{cov, ecdf_lt_t_plus_1, lengths_mins, mean};
use crate::plot::{self, BarGroup, Series};
use gleaner_core::time::Time;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub(super) const BIN_LABELS: [&str; 10] = [
    "0-10", "10-20", "20-30", "30-40", "40-50", "50-60", "60-70", "70-80", "80-90", "90-100",
];

pub(super) fn f2(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        String::new()
    }
}

pub(super) fn write(
    dir: &Path,
    name: &str,
    text: &str,
    files: &mut Vec<PathBuf>,
) -> Result<(), SimError> {
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

/// The Table 1–3 analogues of one profile, in markdown.
pub(super) fn details_md(p: &Profile) -> String {
    let mut s = String::new();
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
        let paper = mean(PAPER_TABLE1.get(i).map_or(vec![], |x| x.to_vec())).unwrap_or(f64::NAN);
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

    s
}

/// Writes one profile's CSVs and figures (tagged `tag`).
pub(super) fn files_of(
    out: &Path,
    label: &str,
    tag: &str,
    p: &Profile,
    trace: &Trace,
    until: Time,
    files: &mut Vec<PathBuf>,
) -> Result<(), SimError> {
    let label = label.to_string();
    let (t1, t2, t3) = tables_csv(p);
    write(out, &format!("table1_{tag}.csv"), &t1, files)?;
    write(out, &format!("table2_{tag}.csv"), &t2, files)?;
    write(out, &format!("table3_{tag}.csv"), &t3, files)?;
    // Figures: SU_60 and Table 2 averages vs the paper, ECDFs.
    let cats: Vec<String> = BIN_LABELS.iter().map(|s| s.to_string()).collect();
    let name = format!("su60_{tag}.svg");
    plot::bar_chart(
        &out.join(&name),
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
        &out.join(&name),
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
        .map(|s| trace.contiguous(s, until))
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
            &out.join(&name),
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
    Ok(())
}

/// The fitted mixtures and label statistics of every profile, as CSV.
pub(super) fn fits_csv(profiles: &[&Profile]) -> String {
    let mut fits = String::from(
        "model,av_w3,av_w25,av_w300,av_dev_below,av_dev_above,na_w7,na_w55,na_dev_below,na_dev_above,mean_av_min,mean_na_min,av_short,av_medium,av_long,na_short,na_long,avav_ss,avav_mm,avav_ll,nana_ss,nana_ll,corr_av_na,longest_0_min,longest_lt2_min,longest_lt3_min,overall_av_pct\n",
    );
    for p in profiles {
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
    fits
}
