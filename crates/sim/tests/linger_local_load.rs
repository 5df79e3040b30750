//! Tests of Linger-Longer's two-level local workload model
//! (gleaner_sim::local_load; Ryu & Hollingsworth §2, spec R11–R12, B8).

use gleaner_core::detector::DetectorProfile;
use gleaner_core::rng::{seeded, substream};
use gleaner_sim::local_load::{
    BurstTable, CoarseSample, CoarseTrace, FineLoad, SyntheticParams, WINDOW_SECS, load_coarse_csv,
    synthetic_trace, synthetic_trace_at, trace_stats, write_coarse_csv,
};
use std::sync::Arc;

/// R12 acceptance: over long runs the generated mean utilisation per 2-s
/// window matches the coarse input, at every level (including between the
/// 21 table levels and at the 0 %/100 % edges), and the run-burst rate is
/// finite and positive for interior levels.
#[test]
fn generated_utilisation_matches_coarse_input_per_level() {
    let table = Arc::new(BurstTable::default_table());
    let mut rng = seeded(11);
    for &u in &[0.0, 0.02, 0.05, 0.1, 0.237, 0.5, 0.8, 0.95, 0.99, 1.0] {
        let mut fine = FineLoad::new(table.clone());
        let windows = 20_000;
        let (mut busy, mut bursts) = (0.0, 0u64);
        for _ in 0..windows {
            let w = fine.window(u, &mut rng);
            assert!(w.busy >= 0.0 && w.busy <= WINDOW_SECS + 1e-9);
            busy += w.busy;
            bursts += u64::from(w.bursts);
        }
        let got = busy / (windows as f64 * WINDOW_SECS);
        assert!(
            (got - u).abs() < 0.01 + 0.02 * u,
            "level {u}: generated {got}"
        );
        if u > 0.0 && u < 1.0 {
            assert!(bursts > 0, "level {u}: no run bursts");
        }
    }
}

/// R12 acceptance on a realistic, changing coarse trace: the mean generated
/// utilisation over all windows matches the trace's mean, and so does the
/// mean over the windows of each coarse utilisation decile.
#[test]
fn generated_utilisation_tracks_a_changing_trace() {
    let p = SyntheticParams::default();
    let trace = synthetic_trace("m", &p, 200_000, &mut seeded(5)).unwrap();
    let mut fine = FineLoad::new(Arc::new(BurstTable::default_table()));
    let mut rng = substream(5, 1);
    let mut by_bin = [(0.0f64, 0.0f64, 0usize); 10];
    for s in &trace.samples {
        let w = fine.window(s.cpu, &mut rng);
        let b = ((s.cpu * 10.0) as usize).min(9);
        by_bin[b].0 += s.cpu;
        by_bin[b].1 += w.busy / WINDOW_SECS;
        by_bin[b].2 += 1;
    }
    let (tin, tout): (f64, f64) = by_bin
        .iter()
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert!(
        (tin - tout).abs() / tin < 0.02,
        "mean in {tin} vs out {tout}"
    );
    for (k, (i, o, n)) in by_bin.iter().enumerate() {
        if *n > 2000 {
            let (mi, mo) = (i / *n as f64, o / *n as f64);
            assert!(
                (mi - mo).abs() < 0.02,
                "decile {k}: coarse {mi} vs generated {mo}"
            );
        }
    }
}

/// B8: the default synthetic generator reproduces the Berkeley statistics
/// the paper reports (nonidle 46 %, CPU < 10 % 82 %, 10–80 % 13 %, ≥ 80 % 7 %;
/// L128–L138), within a few points (the paper's numbers sum to 102 %).
#[test]
fn synthetic_traces_match_berkeley_statistics() {
    let p = SyntheticParams::default();
    let n = 128;
    let traces: Vec<CoarseTrace> = (0..n)
        .map(|i| {
            let q = (i as f64 + 0.5) / n as f64;
            synthetic_trace_at(&format!("m{i}"), &p, q, 21_600, &mut substream(9, i)).unwrap()
        })
        .collect();
    let st = trace_stats(&traces, &DetectorProfile::LingerLonger.config());
    eprintln!("{st:?}");
    assert!((st.nonidle - 0.46).abs() < 0.04, "{st:?}");
    assert!((st.low - 0.81).abs() < 0.03, "{st:?}");
    assert!((st.mid - 0.13).abs() < 0.03, "{st:?}");
    assert!((st.high - 0.07).abs() < 0.02, "{st:?}");
}

/// R11: a measured trace round-trips through the documented CSV format, and
/// a malformed file is rejected with its line number.
#[test]
fn coarse_csv_round_trip_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    let t = CoarseTrace {
        machine: "ws1".into(),
        samples: vec![
            CoarseSample {
                cpu: 0.25,
                keyboard: true,
            },
            CoarseSample {
                cpu: 0.0,
                keyboard: false,
            },
        ],
    };
    write_coarse_csv(std::slice::from_ref(&t), &path).unwrap();
    assert_eq!(load_coarse_csv(&path).unwrap(), vec![t]);
    std::fs::write(
        &path,
        "machine,time_s,cpu,keyboard\nws1,0,0.5,1\nws1,2,zz,0\n",
    )
    .unwrap();
    let e = load_coarse_csv(&path).unwrap_err().to_string();
    assert!(e.contains("line 3") && e.contains("t.csv"), "{e}");
}

/// A measured burst table loads from CSV (ms units) and interpolates
/// linearly between the two nearest levels; a bad row names its line.
#[test]
fn burst_table_csv() {
    let text = "util_pct,run_mean_ms,run_var_ms2,idle_mean_ms,idle_var_ms2\n\
                0,10,100,0,0\n50,20,400,20,1600\n100,0,0,5,25\n";
    let t = BurstTable::parse_csv(text, "tab").unwrap();
    let p = t.params_at(0.25);
    assert!((p.run_mean - 0.015).abs() < 1e-12, "{p:?}");
    // Edge segment: idle mean from the utilisation identity.
    assert!((p.idle_mean - 0.045).abs() < 1e-12, "{p:?}");
    let p = t.params_at(0.5);
    assert!((p.idle_mean - 0.020).abs() < 1e-12, "{p:?}");
    let e = BurstTable::parse_csv(
        "util_pct,run_mean_ms,run_var_ms2,idle_mean_ms,idle_var_ms2\n0,1,1,x,0\n",
        "tab",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("line 2"), "{e}");
}
