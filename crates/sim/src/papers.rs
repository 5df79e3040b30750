//! The papers' availability data, in one place, each table cited by seed
//! file and line: the models fit to them (`availability::m5`) and the
//! experiments compare with them (`experiments::profile`).
//!
//! - P: Mutka & Livny 1987, "Profiling Workstations' Available Capacity",
//!   seeds/003_0d675f08666827bf.txt.
//! - T: Mutka 1988, the thesis, seeds/000_14c1149197e96532.txt.

/// The profiling paper's seed file.
pub const P: &str = "seeds/003_0d675f08666827bf.txt";
/// The thesis's seed file.
pub const T: &str = "seeds/000_14c1149197e96532.txt";
/// The scheduling paper (Mutka & Livny 1987b).
pub const S: &str = "seeds/004_8811df6e42c9e111.txt";
/// Ryu & Hollingsworth, Linger-Longer.
pub const LL: &str = "seeds/002_34f613b0a80e1e58.txt";
/// Neeracher 1998, DMW.
pub const DMW: &str = "seeds/001_c7470f9b5ea54797.txt";

/// Table 1 of P (P:L243–261): % AV per station (rows 1–13) and month
/// Sep–Jan; NaN where a station was not monitored (stations 12 and 13,
/// Sep–Nov only, P:L142).
pub const TABLE1: [[f64; 5]; 13] = [
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
/// Table 1's "Average" column (P:L245–257).
pub const TABLE1_AVERAGE: [f64; 13] = [
    84.0, 90.0, 51.0, 85.0, 29.0, 73.0, 66.0, 69.0, 83.0, 82.0, 84.0, 39.0, 80.0,
];
/// Table 1's "System" row (P:L258).
pub const TABLE1_SYSTEM: [f64; 5] = [70.0, 70.0, 69.0, 74.0, 73.0];
/// Table 2 of P (P:L286–302): % of hours per NA-share bin, per station.
pub const TABLE2: [[f64; 10]; 13] = [
    [72.0, 8.0, 3.0, 3.0, 2.0, 2.0, 2.0, 2.0, 3.0, 4.0],
    [72.0, 8.0, 3.0, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 3.0],
    [8.0, 44.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0, 2.0, 36.0],
    [73.0, 7.0, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 7.0],
    [10.0, 4.0, 8.0, 5.0, 4.0, 3.0, 3.0, 2.0, 4.0, 58.0],
    [46.0, 17.0, 7.0, 4.0, 2.0, 2.0, 4.0, 2.0, 3.0, 11.0],
    [59.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 31.0],
    [41.0, 13.0, 6.0, 5.0, 3.0, 3.0, 4.0, 3.0, 3.0, 18.0],
    [69.0, 5.0, 3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 2.0, 14.0],
    [59.0, 14.0, 5.0, 3.0, 2.0, 2.0, 2.0, 1.0, 2.0, 9.0],
    [67.0, 5.0, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0, 2.0, 19.0],
    [55.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 37.0],
    [58.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 31.0],
];
/// Table 2's "Average" row (P:L301).
pub const TABLE2_AVERAGE: [f64; 10] = [53.0, 10.0, 4.0, 3.0, 2.0, 2.0, 2.0, 1.0, 2.0, 21.0];
/// Table 3 of P (P:L314–324): SU_60, SU_30, SU_10, SU_1 columns, % of
/// windows per system-utilisation bin.
pub const TABLE3: [[f64; 10]; 4] = [
    [6.0, 28.1, 28.2, 16.2, 8.7, 6.5, 4.4, 1.6, 0.3, 0.0],
    [8.4, 25.2, 29.1, 15.3, 8.8, 6.7, 4.4, 1.7, 0.4, 0.1],
    [13.0, 24.4, 24.7, 15.4, 8.9, 6.4, 4.3, 2.1, 0.8, 0.1],
    [18.0, 24.6, 22.7, 13.4, 7.8, 5.7, 4.0, 2.3, 1.1, 0.4],
];
/// SU window lengths in minutes (Table 3's columns).
pub const SU_WINDOWS: [u64; 4] = [60, 30, 10, 1];

/// Table 6.1 of T (T:L906–933): hourly utilisation (% NA) of the 23
/// stations of the one-month study, weekday day (8–17 h), evening (17–24
/// h), night (0–8 h), then the same on weekends (T:L900 defines the
/// periods).
pub const TABLE6_1: [[f64; 6]; 23] = [
    [16.0, 14.0, 10.0, 0.0, 0.0, 0.0],
    [64.0, 58.0, 56.0, 51.0, 51.0, 50.0],
    [52.0, 48.0, 39.0, 44.0, 45.0, 50.0],
    [55.0, 26.0, 19.0, 0.0, 0.0, 0.0],
    [69.0, 12.0, 0.0, 10.0, 0.0, 0.0],
    [33.0, 15.0, 14.0, 25.0, 25.0, 25.0],
    [40.0, 39.0, 25.0, 24.0, 24.0, 33.0],
    [27.0, 16.0, 12.0, 4.0, 0.0, 2.0],
    [20.0, 4.0, 1.0, 4.0, 0.0, 2.0],
    [25.0, 10.0, 0.0, 7.0, 5.0, 0.0],
    [23.0, 30.0, 15.0, 2.0, 9.0, 12.0],
    [20.0, 2.0, 0.0, 0.0, 0.0, 0.0],
    [25.0, 6.0, 1.0, 14.0, 7.0, 0.0],
    [19.0, 12.0, 0.0, 0.0, 0.0, 0.0],
    [35.0, 23.0, 22.0, 20.0, 33.0, 13.0],
    [26.0, 3.0, 0.0, 5.0, 1.0, 8.0],
    [8.0, 11.0, 4.0, 3.0, 12.0, 2.0],
    [22.0, 2.0, 0.0, 3.0, 2.0, 0.0],
    [11.0, 8.0, 1.0, 5.0, 10.0, 6.0],
    [26.0, 16.0, 9.0, 32.0, 28.0, 25.0],
    [30.0, 32.0, 13.0, 17.0, 14.0, 3.0],
    [30.0, 37.0, 2.0, 15.0, 27.0, 0.0],
    [73.0, 72.0, 69.0, 50.0, 50.0, 57.0],
];
/// Table 6.1's "Average" row as printed (T:L933). The columns recompute to
/// 32.6, 21.6, 13.6, 14.6, 14.9, 12.5 (spec mutka-thesis.md §4.5).
pub const TABLE6_1_AVERAGE: [f64; 6] = [32.0, 20.0, 11.0, 14.0, 14.0, 12.0];
/// Table 6.2 of T (T:L941–967): per station, AV intervals longer than 10,
/// 24 and 48 hours, and the longest AV interval in hours.
pub const TABLE6_2: [[f64; 4]; 23] = [
    [11.0, 6.0, 7.0, 66.0],
    [13.0, 3.0, 1.0, 49.0],
    [14.0, 2.0, 1.0, 59.0],
    [16.0, 5.0, 3.0, 95.0],
    [22.0, 4.0, 2.0, 69.0],
    [14.0, 5.0, 4.0, 114.0],
    [15.0, 1.0, 1.0, 69.0],
    [14.0, 6.0, 4.0, 97.0],
    [20.0, 5.0, 4.0, 89.0],
    [20.0, 6.0, 1.0, 113.0],
    [23.0, 2.0, 2.0, 52.0],
    [19.0, 6.0, 4.0, 112.0],
    [25.0, 3.0, 2.0, 67.0],
    [12.0, 3.0, 3.0, 277.0],
    [21.0, 4.0, 2.0, 69.0],
    [21.0, 6.0, 2.0, 87.0],
    [22.0, 6.0, 1.0, 159.0],
    [23.0, 6.0, 2.0, 68.0],
    [14.0, 6.0, 3.0, 93.0],
    [18.0, 4.0, 2.0, 132.0],
    [23.0, 3.0, 1.0, 51.0],
    [24.0, 2.0, 0.0, 46.0],
    [6.0, 1.0, 0.0, 26.0],
];
/// Table 6.2's printed totals (T:L968): > 10 h, > 24 h, > 48 h. Only the
/// first matches its column (the others sum to 95 and 52).
pub const TABLE6_2_TOTALS: [f64; 3] = [410.0, 146.0, 57.0];

/// Mean of the finite values of `row`.
pub fn finite_mean(row: &[f64]) -> f64 {
    let v: Vec<f64> = row.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_agree_with_their_printed_summaries() {
        // Table 1: the Average column is each row's mean (rounded).
        for (row, avg) in TABLE1.iter().zip(TABLE1_AVERAGE) {
            assert!((finite_mean(row) - avg).abs() <= 0.6, "{row:?}");
        }
        // Table 6.2: the > 10 h column sums to its total.
        let s: f64 = TABLE6_2.iter().map(|r| r[0]).sum();
        assert_eq!(s, TABLE6_2_TOTALS[0]);
        // Table 6.1: column means near the printed Average row (the thesis
        // prints some 1–3 points low).
        for c in 0..6 {
            let m = TABLE6_1.iter().map(|r| r[c]).sum::<f64>() / 23.0;
            assert!((m - TABLE6_1_AVERAGE[c]).abs() <= 3.0, "column {c}: {m}");
        }
    }
}
