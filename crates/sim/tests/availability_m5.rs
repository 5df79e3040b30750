//! M5 reproduces Table 1's per-station spread (Mutka & Livny 1987,
//! seeds/003_0d675f08666827bf.txt L243–261), which M2's identical stations
//! cannot. Table 3's busy-hour tail (L314–326) is not met by the unfitted
//! starting point (results/profile/summary.md reports it as missed); this
//! test pins what it does meet so that a refit cannot lose it.

use gleaner_sim::availability::{Model, Trace, month_start};
use gleaner_sim::experiments::profile::{PAPER_TABLE1, profile};

fn station_averages(model: &Model, seed: u64) -> (Vec<f64>, f64) {
    let horizon = month_start(5);
    let trace = Trace::generate(model, seed, 13, horizon);
    let p = profile("m", &trace, horizon, true);
    let avgs: Vec<f64> = p
        .monthly
        .iter()
        .map(|row| {
            let v: Vec<f64> = row.iter().copied().filter(|x| !x.is_nan()).collect();
            v.iter().sum::<f64>() / v.len() as f64
        })
        .collect();
    (avgs, p.overall_av)
}

fn paper_average(s: usize) -> f64 {
    let v: Vec<f64> = PAPER_TABLE1[s]
        .iter()
        .copied()
        .filter(|x| !x.is_nan())
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn m5_has_the_papers_station_spread() {
    let (avgs, overall) = station_averages(&Model::M5(Box::default()), 1);
    let (avgs_m2, _) = station_averages(&Model::parse("m2").unwrap(), 1);
    eprintln!("m5 overall {overall:.1}, stations {avgs:.0?}; m2 {avgs_m2:.0?}");
    // Table 1's System row: 69–74 % by month (L258).
    assert!((66.0..=76.0).contains(&overall), "overall {overall:.1}");
    // Every station but one within 5 points of its average (29 % to 90 %);
    // station 6 is 10–12 points low on these seeds (reported as missed in
    // results/profile/summary.md). M2's stations are all alike and miss
    // the extremes by far more.
    let mut m2_worst = 0.0f64;
    let mut misses = Vec::new();
    for (s, a) in avgs.iter().enumerate() {
        let paper = paper_average(s);
        if (a - paper).abs() > 5.0 {
            misses.push((s + 1, *a, paper));
        }
        assert!(
            (a - paper).abs() <= 13.0,
            "station {}: {a:.1} vs {paper:.1}",
            s + 1
        );
        m2_worst = m2_worst.max((avgs_m2[s] - paper).abs());
    }
    assert!(
        misses.len() <= 1,
        "stations off by more than 5 points: {misses:?}"
    );
    assert!(
        m2_worst > 20.0,
        "m2's worst station is only {m2_worst:.1} off"
    );
}
