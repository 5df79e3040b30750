//! Every availability number the papers state, as a claim a model can
//! meet or miss: what it says, where (seed file and line), the printed
//! value, how it is read (about, at least, at most, between), and how to
//! measure it on a profile. `m5_fit` minimises the distance to them, the
//! `profile` experiment tabulates them for M2–M5, and the tests hold the
//! fitted M5 to them.
//!
//! **Tolerance.** A model meets a claim when its mean over seeds is
//! within `rounding + 2·sd` of the paper's value (or on the right side of
//! it, for "at least"/"at most"): `rounding` is half the precision the
//! paper prints, `sd` the statistic's standard deviation across the
//! model's seeds. The paper's own trace is one sample of the same size, so
//! a model whose mean is within two of its standard deviations could have
//! produced the paper's number.

use super::Profile;
use super::month23::Month23;
use crate::papers::{self, P, S, T};

/// How a claim is read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Want {
    /// About the printed value.
    About,
    /// At least the printed value.
    AtLeast,
    /// At most the printed value.
    AtMost,
    /// Between two values (inclusive).
    Between(f64, f64),
}

/// One statement of a paper about availability.
pub struct Claim<S> {
    pub id: String,
    pub what: String,
    /// Seed file and lines.
    pub source: String,
    /// The value the paper prints (for `Between`, the midpoint).
    pub paper: f64,
    /// How the paper says it.
    pub printed: String,
    pub want: Want,
    /// Half the printed precision.
    pub rounding: f64,
    /// Weight in `m5_fit`'s distance (0: reported, not fitted).
    pub weight: f64,
    pub get: Box<dyn Fn(&S) -> f64 + Send + Sync>,
}

impl<S> Claim<S> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        id: impl Into<String>,
        what: impl Into<String>,
        source: impl Into<String>,
        paper: f64,
        printed: impl Into<String>,
        want: Want,
        rounding: f64,
        weight: f64,
        get: impl Fn(&S) -> f64 + Send + Sync + 'static,
    ) -> Self {
        Claim {
            id: id.into(),
            what: what.into(),
            source: source.into(),
            paper,
            printed: printed.into(),
            want,
            rounding,
            weight,
            get: Box::new(get),
        }
    }

    /// How far `value` is outside what the claim allows, in units of `tol`
    /// (0 when met).
    pub fn excess(&self, value: f64, tol: f64) -> f64 {
        if !value.is_finite() {
            return 10.0;
        }
        let tol = tol.max(1e-9);
        let d = match self.want {
            Want::About => (value - self.paper).abs() - tol,
            Want::AtLeast => self.paper - tol - value,
            Want::AtMost => value - self.paper - tol,
            Want::Between(lo, hi) => (lo - tol - value).max(value - hi - tol),
        };
        d.max(0.0) / tol
    }

    /// The fit's distance term for `value` with scale `scale`: the squared
    /// difference for "about", the squared violation otherwise.
    pub fn loss(&self, value: f64, scale: f64) -> f64 {
        if !value.is_finite() {
            return 100.0 * self.weight;
        }
        let s = scale.max(1e-9);
        let d = match self.want {
            Want::About => (value - self.paper) / s,
            Want::AtLeast => ((self.paper - value) / s).max(0.0),
            Want::AtMost => ((value - self.paper) / s).max(0.0),
            Want::Between(lo, hi) => ((lo - value).max(value - hi) / s).max(0.0),
        };
        self.weight * d * d
    }

    /// The tolerance for a model whose statistic has standard deviation
    /// `sd` across seeds.
    pub fn tolerance(&self, sd: f64) -> f64 {
        self.rounding + 2.0 * if sd.is_finite() { sd } else { 0.0 }
    }
}

/// Mean and standard deviation (n − 1) of `v`'s finite values.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let x: Vec<f64> = v.iter().copied().filter(|a| a.is_finite()).collect();
    if x.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = x.iter().sum::<f64>() / x.len() as f64;
    if x.len() < 2 {
        return (m, 0.0);
    }
    let var = x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64;
    (m, var.sqrt())
}

/// One claim evaluated on a model's seeds.
#[derive(Clone, Debug)]
pub struct Verdict {
    pub mean: f64,
    pub sd: f64,
    pub tol: f64,
    pub met: bool,
}

/// Evaluates `claim` on the statistics of several seeds.
pub fn verdict<S>(claim: &Claim<S>, stats: &[S]) -> Verdict {
    let v: Vec<f64> = stats.iter().map(|s| (claim.get)(s)).collect();
    let (mean, sd) = mean_sd(&v);
    let tol = claim.tolerance(sd);
    Verdict {
        mean,
        sd,
        tol,
        met: claim.excess(mean, tol) == 0.0,
    }
}

const BINS: [&str; 10] = [
    "0-10", "10-20", "20-30", "30-40", "40-50", "50-60", "60-70", "70-80", "80-90", "90-100",
];

fn station_avg(p: &Profile, i: usize) -> f64 {
    p.monthly
        .get(i)
        .map_or(f64::NAN, |r| papers::finite_mean(r))
}

/// The claims of Mutka & Livny 1987 (and the thesis's Chapter 3, which
/// repeats them) about the 13 stations.
pub fn mutka87() -> Vec<Claim<Profile>> {
    let mut v: Vec<Claim<Profile>> = Vec::new();
    for i in 0..13 {
        v.push(Claim::new(
            format!("t1_station{}", i + 1),
            format!("Table 1: station {} % AV (average)", i + 1),
            format!("{P} L{}", 245 + i),
            papers::TABLE1_AVERAGE[i],
            format!("{}", papers::TABLE1_AVERAGE[i]),
            Want::About,
            0.5,
            0.2,
            move |p: &Profile| station_avg(p, i),
        ));
    }
    v.push(Claim::new(
        "t1_system",
        "Table 1: system availability (System row average) %",
        format!("{P} L258"),
        71.0,
        "71",
        Want::About,
        0.5,
        1.0,
        |p: &Profile| papers::finite_mean(&p.system),
    ));
    v.push(Claim::new(
        "t1_steady",
        "system availability month to month: largest deviation from its average, points",
        format!("{P} L239"),
        3.0,
        "steady within 3 % deviation",
        Want::AtMost,
        0.5,
        0.5,
        |p: &Profile| p.system_max_dev,
    ));
    for (b, label) in BINS.iter().enumerate() {
        v.push(Claim::new(
            format!("t2_avg_{label}"),
            format!("Table 2 Average: % of station-hours {label} % NA"),
            format!("{P} L301"),
            papers::TABLE2_AVERAGE[b],
            format!("{}", papers::TABLE2_AVERAGE[b]),
            Want::About,
            0.5,
            0.3,
            move |p: &Profile| p.table2_avg[b],
        ));
    }
    let cols = ["SU_60", "SU_30", "SU_10", "SU_1"];
    for (c, col) in cols.iter().enumerate() {
        for (b, label) in BINS.iter().enumerate() {
            v.push(Claim::new(
                format!("t3_{}_{label}", col.to_lowercase()),
                format!("Table 3: % of {col} windows {label} % utilised"),
                format!("{P} L{}", 315 + b),
                papers::TABLE3[c][b],
                format!("{}", papers::TABLE3[c][b]),
                Want::About,
                0.05,
                if c == 0 { 1.0 } else { 0.4 },
                move |p: &Profile| p.table3[c][b],
            ));
        }
    }
    v.push(Claim::new(
        "su60_lt40",
        "hours with SU_60 < 40 % (\"almost 80 %\"; Table 3 sums to 78.5)",
        format!("{P} L282, L315–318"),
        78.5,
        "almost 80",
        Want::About,
        0.2,
        2.0,
        |p: &Profile| p.table3[0][..4].iter().sum(),
    ));
    v.push(Claim::new(
        "su60_ge50",
        "hours with SU_60 ≥ 50 % (Table 3's tail)",
        format!("{P} L320–324"),
        12.8,
        "12.8",
        Want::About,
        0.2,
        3.0,
        |p: &Profile| p.table3[0][5..].iter().sum(),
    ));
    v.push(Claim::new(
        "su60_ge70",
        "hours with SU_60 ≥ 70 % (Table 3's tail)",
        format!("{P} L322–324"),
        1.9,
        "1.9",
        Want::About,
        0.2,
        3.0,
        |p: &Profile| p.table3[0][7..].iter().sum(),
    ));
    v.push(Claim::new(
        "max_hour_na",
        "largest hourly average number of NA stations (of 11)",
        format!("{P} L306"),
        9.0,
        "never greater than 9",
        Want::AtMost,
        0.0,
        2.0,
        |p: &Profile| p.max_hour_na,
    ));
    for (k, (paper, printed, round)) in [
        (10.0, "10 minutes", 0.5),
        (25.0, "25 minutes", 0.5),
        (120.0, "2 hours", 30.0),
    ]
    .into_iter()
    .enumerate()
    {
        let what = match k {
            0 => "longest period with no station AV, min",
            1 => "longest wait for 2 stations AV, min",
            _ => "longest wait for 3 stations AV, min",
        };
        v.push(Claim::new(
            format!("longest_lt{}", k + 1),
            what,
            format!("{P} L280"),
            paper,
            printed,
            Want::About,
            round,
            1.0,
            move |p: &Profile| p.longest[k],
        ));
    }
    for (i, w) in [0.32, 0.44, 0.24].into_iter().enumerate() {
        let m = [3, 25, 300][i];
        v.push(Claim::new(
            format!("av_weight_{m}"),
            format!("least-squares AV weight of the {m}-minute component"),
            format!("{P} L184"),
            w,
            format!("{w}"),
            Want::About,
            0.005,
            1.0,
            move |p: &Profile| p.av_weights.get(i).copied().unwrap_or(f64::NAN),
        ));
    }
    for (i, w) in [0.68, 0.32].into_iter().enumerate() {
        let m = [7, 55][i];
        v.push(Claim::new(
            format!("na_weight_{m}"),
            format!("least-squares NA weight of the {m}-minute component"),
            format!("{P} L192"),
            w,
            format!("{w}"),
            Want::About,
            0.005,
            1.0,
            move |p: &Profile| p.na_weights.get(i).copied().unwrap_or(f64::NAN),
        ));
    }
    for (id, what, paper, get) in [
        (
            "av_dev_below",
            "AV fit: largest deviation below the data beyond 5 min, %",
            2.5,
            Box::new(|p: &Profile| 100.0 * p.av_dev.0)
                as Box<dyn Fn(&Profile) -> f64 + Send + Sync>,
        ),
        (
            "av_dev_above",
            "AV fit: largest deviation above the data beyond 5 min, %",
            1.0,
            Box::new(|p: &Profile| 100.0 * p.av_dev.1),
        ),
        (
            "na_dev_below",
            "NA fit: largest deviation below the data beyond 7 min, %",
            1.0,
            Box::new(|p: &Profile| 100.0 * p.na_dev.0),
        ),
        (
            "na_dev_above",
            "NA fit: largest deviation above the data beyond 7 min, %",
            1.5,
            Box::new(|p: &Profile| 100.0 * p.na_dev.1),
        ),
    ] {
        v.push(Claim {
            id: id.into(),
            what: what.into(),
            source: format!("{P} L196"),
            paper,
            printed: format!("approximately {paper} %"),
            want: Want::About,
            rounding: 0.25,
            weight: 0.0,
            get,
        });
    }
    for (i, (paper, lab)) in [(41.0, "short"), (36.0, "medium"), (23.0, "long")]
        .into_iter()
        .enumerate()
    {
        v.push(Claim::new(
            format!("av_label_{lab}"),
            format!("% of AV periods labelled {lab} (< 9, 9–75, > 75 min)"),
            format!("{P} L220"),
            paper,
            format!("{paper}"),
            Want::About,
            0.5,
            0.5,
            move |p: &Profile| 100.0 * p.labels.av[i],
        ));
    }
    for (i, (paper, lab)) in [(74.0, "short"), (26.0, "long")].into_iter().enumerate() {
        v.push(Claim::new(
            format!("na_label_{lab}"),
            format!("% of NA periods labelled {lab} (< 21 min or more)"),
            format!("{P} L220"),
            paper,
            format!("{paper}"),
            Want::About,
            0.5,
            0.5,
            move |p: &Profile| 100.0 * p.labels.na[i],
        ));
    }
    for (i, (paper, lab)) in [(64.0, "short"), (52.0, "medium"), (48.0, "long")]
        .into_iter()
        .enumerate()
    {
        v.push(Claim::new(
            format!("av_av_{lab}"),
            format!("% of {lab} AV periods followed by a {lab} one"),
            format!("{P} L224"),
            paper,
            format!("{paper}"),
            Want::About,
            0.5,
            0.5,
            move |p: &Profile| 100.0 * p.labels.av_av[i][i],
        ));
    }
    v.push(Claim::new(
        "na_na_short",
        "P(short NA | short NA) − P(short NA | long NA), points",
        format!("{P} L224"),
        5.0,
        "only slightly more",
        Want::Between(0.0, 10.0),
        0.0,
        0.3,
        |p: &Profile| 100.0 * (p.labels.na_na[0][0] - p.labels.na_na[1][0]),
    ));
    v.push(Claim::new(
        "corr_av_na",
        "correlation of an AV length and the next NA length",
        format!("{P} L222"),
        0.05,
        "a very small positive value",
        Want::Between(0.0, 0.1),
        0.0,
        0.3,
        |p: &Profile| p.labels.corr_av_na,
    ));
    v.push(Claim::new(
        "mean_av",
        "mean AV period, min",
        format!("{S} L156"),
        100.0,
        "about 100 minutes",
        Want::About,
        5.0,
        0.5,
        |p: &Profile| p.mean_av,
    ));
    v.push(Claim::new(
        "mean_na",
        "mean NA period, min",
        format!("{S} L156"),
        40.0,
        "about 40 minutes",
        Want::About,
        5.0,
        0.5,
        |p: &Profile| p.mean_na,
    ));
    v.push(Claim::new(
        "weekday_afternoon",
        "weekday system availability 14–17 h, %",
        format!("{P} L241"),
        50.0,
        "dropped to about 50 % between 2-4 in the afternoon",
        Want::About,
        5.0,
        1.0,
        |p: &Profile| p.weekday_afternoon_av,
    ));
    v.push(Claim::new(
        "weekday_morning_above_afternoon",
        "weekday availability 8–10 h minus 14–17 h, points",
        format!("{P} L241"),
        0.0,
        "early in the morning … large, and then dropped",
        Want::AtLeast,
        0.0,
        0.5,
        |p: &Profile| p.weekday_morning_av - p.weekday_afternoon_av,
    ));
    v.push(Claim::new(
        "weekend",
        "weekend system availability, %",
        format!("{P} L241"),
        75.0,
        "between 70-80 %",
        Want::Between(70.0, 80.0),
        0.0,
        1.0,
        |p: &Profile| p.weekend_av,
    ));
    v.push(Claim::new(
        "weekend_busiest",
        "weekend hour of day with the least availability",
        format!("{P} L266"),
        15.0,
        "between 2pm and 5pm (14-17 hour)",
        Want::Between(14.0, 16.0),
        0.0,
        0.3,
        |p: &Profile| p.weekend_busiest_hour,
    ));
    v.push(Claim::new(
        "overall",
        "time-weighted availability, %",
        format!("{P} L114, L357"),
        70.0,
        "approximately 70 %",
        Want::About,
        2.5,
        0.5,
        |p: &Profile| p.overall_av,
    ));
    v
}

/// Table 6.2's column sums and mean of the longest intervals, from its
/// rows (the printed totals of the > 24 h and > 48 h columns do not match
/// their rows; spec mutka-thesis.md §4.5).
fn table6_2_sums() -> ([f64; 3], f64) {
    let mut s = [0.0; 3];
    let mut longest = 0.0;
    for r in papers::TABLE6_2 {
        for i in 0..3 {
            s[i] += r[i];
        }
        longest += r[3];
    }
    (s, longest / 23.0)
}

/// The claims of the thesis about its 23-station month (§6.2, Chapter 5).
pub fn month23() -> Vec<Claim<Month23>> {
    let mut v: Vec<Claim<Month23>> = Vec::new();
    let names = [
        "weekday day",
        "weekday evening",
        "weekday night",
        "weekend day",
        "weekend evening",
        "weekend night",
    ];
    for (c, name) in names.iter().enumerate() {
        let col = papers::TABLE6_1.iter().map(|r| r[c]).sum::<f64>() / 23.0;
        v.push(Claim::new(
            format!("t61_avg_{c}"),
            format!(
                "Table 6.1: mean % NA, {name} (column mean of the rows; printed {})",
                papers::TABLE6_1_AVERAGE[c]
            ),
            format!("{T} L910–933"),
            (col * 10.0).round() / 10.0,
            format!("{:.1}", col),
            Want::About,
            0.05,
            0.5,
            move |m: &Month23| m.cell_avg[c],
        ));
    }
    let (sums, longest_mean) = table6_2_sums();
    for (i, (lim, printed)) in [
        (10, "410"),
        (24, "146 printed, rows sum to 95"),
        (48, "57 printed, rows sum to 52"),
    ]
    .into_iter()
    .enumerate()
    {
        v.push(Claim::new(
            format!("t62_over_{lim}h"),
            format!("Table 6.2: AV intervals > {lim} h, all stations, per month"),
            format!("{T} L945–968"),
            sums[i],
            printed,
            Want::About,
            0.5,
            1.0,
            move |m: &Month23| m.long_totals[i],
        ));
    }
    v.push(Claim::new(
        "t62_longest_mean",
        "Table 6.2: mean over stations of the longest AV interval, h",
        format!("{T} L945–967"),
        (longest_mean * 10.0).round() / 10.0,
        format!("{longest_mean:.1} (mean of the column)"),
        Want::About,
        0.05,
        1.0,
        |m: &Month23| m.longest_mean,
    ));
    v.push(Claim::new(
        "t62_longest_max",
        "longest AV interval of any station, h",
        format!("{T} L902, L958"),
        277.0,
        "over 11 days (277 hours)",
        Want::About,
        0.5,
        0.5,
        |m: &Month23| m.longest_max,
    ));
    v.push(Claim::new(
        "t62_over_48h_stations",
        "stations with an AV interval over 48 h",
        format!("{T} L902"),
        21.0,
        "all but two stations",
        Want::About,
        0.0,
        0.5,
        |m: &Month23| m.stations_over_48h,
    ));
    v.push(Claim::new(
        "fig61_min",
        "Fig. 6.1: lowest hourly availability, %",
        format!("{T} L869"),
        40.0,
        "40 % of the machines were always available",
        Want::AtLeast,
        0.0,
        2.0,
        |m: &Month23| m.hourly_min,
    ));
    v.push(Claim::new(
        "fig61_ge60",
        "Fig. 6.1: % of hours with availability ≥ 60 %",
        format!("{T} L869"),
        50.0,
        "the 60 % availability occurred the majority of the time",
        Want::AtLeast,
        0.0,
        1.0,
        |m: &Month23| m.hours_ge_60,
    ));
    v.push(Claim::new(
        "fig61_lt50",
        "Fig. 6.1: % of hours with availability < 50 % (\"rarely\": at most 5 %, ours)",
        format!("{T} L869"),
        5.0,
        "the valleys rarely went lower than 50 %",
        Want::AtMost,
        0.0,
        1.0,
        |m: &Month23| m.hours_lt_50,
    ));
    v.push(Claim::new(
        "fig61_max",
        "Fig. 6.1: highest hourly availability, % (\"well above 70 %\": at least 75, ours)",
        format!("{T} L869"),
        75.0,
        "the peaks were well above 70 %",
        Want::AtLeast,
        0.0,
        0.5,
        |m: &Month23| m.hourly_max,
    ));
    v.push(Claim::new(
        "fig62_ge60",
        "Fig. 6.2: % of time with ≥ 60 % of the stations AV",
        format!("{T} L881"),
        80.0,
        "more than 80 %",
        Want::AtLeast,
        0.0,
        1.0,
        |m: &Month23| m.level_ge[1],
    ));
    v.push(Claim::new(
        "fig62_ge80",
        "Fig. 6.2: % of time with ≥ 80 % of the stations AV",
        format!("{T} L881"),
        40.0,
        "as much as 40 % of the time",
        Want::About,
        5.0,
        1.0,
        |m: &Month23| m.level_ge[2],
    ));
    for (p, (paper, printed, want, round)) in [
        (20.0, "only 20 % of the time", Want::About, 5.0),
        (70.0, "70 % certainty in the evening", Want::About, 5.0),
        (
            95.0,
            "nearly 100 % certainty during the night",
            Want::AtLeast,
            0.0,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let name = ["day (8–17 h)", "evening (17–24 h)", "night (0–8 h)"][p];
        v.push(Claim::new(
            format!("fig62_ge80_{}", ["day", "evening", "night"][p]),
            format!("Fig. 6.2: % of {name} with ≥ 80 % of the stations AV"),
            format!("{T} L881"),
            paper,
            printed,
            want,
            round,
            1.0,
            move |m: &Month23| m.level80_by_period[p],
        ));
    }
    v.push(Claim::new(
        "fig62_ge40",
        "% of time with ≥ 40 % of the stations AV (the errors of a 40 % partition, T:L883)",
        format!("{T} L869, L883"),
        100.0,
        "40 % of the machines were always available",
        Want::AtLeast,
        0.5,
        1.0,
        |m: &Month23| m.level_ge[0],
    ));
    v.push(Claim::new(
        "ch5_av_hours",
        "AV machine-hours of 23 stations in 30 days",
        format!("{T} L791"),
        12438.0,
        "12438 hours were available",
        Want::About,
        0.5,
        0.5,
        |m: &Month23| m.av_machine_hours,
    ));
    v.push(Claim::new(
        "ch5_local",
        "mean local utilisation (NA share), %",
        format!("{T} L799"),
        25.0,
        "on the average, local utilization for the month was 25 %",
        Want::About,
        0.5,
        0.5,
        |m: &Month23| m.local_utilisation,
    ));
    v
}
