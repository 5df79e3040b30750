//! Linger-Longer formulas (Ryu & Hollingsworth, seeds/002_34f613b0a80e1e58.txt
//! L69–L87; spec linger-longer.md §7.1 R1–R4).

use gleaner_core::linger::{
    MigrationCost, completion_delta, linger_expired, linger_factor, linger_time,
    migration_beats_staying, migration_pays_off, predicted_episode_total,
};
use gleaner_core::time::Dur;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

#[test]
fn r1_h_0_2_l_0_t_migr_6s_gives_30s() {
    // The Fig. 8 value of the paper (footnote 5, L195) with T_migr = 6 s.
    assert_eq!(linger_time(0.2, 0.0, Dur::from_secs(6)), Dur::from_secs(30));
}

#[test]
fn r1_h_0_5_l_0_gives_twice_t_migr() {
    for s in [1u64, 6, 21, 3600] {
        let t = Dur::from_secs(s);
        assert_eq!(linger_time(0.5, 0.0, t), Dur::from_secs(2 * s));
    }
}

#[test]
fn r1_h_le_l_never_migrates() {
    let t = Dur::from_secs(10);
    assert_eq!(linger_time(0.3, 0.3, t), Dur::MAX);
    assert_eq!(linger_time(0.1, 0.4, t), Dur::MAX);
    assert_eq!(linger_factor(0.3, 0.3), None);
    // Whatever the episode age, the rule never says "migrate".
    assert!(!linger_expired(Dur::MAX, 0.3, 0.3, t));
    assert!(!migration_pays_off(Dur::MAX, Dur::ZERO, t, 0.2, 0.2));
}

#[test]
fn r4_episode_shorter_than_linger_time_never_migrates() {
    let t_migr = Dur::from_secs(6);
    let t_lingr = linger_time(0.2, 0.0, t_migr);
    for age in [0, 1, 10, 29] {
        assert!(!linger_expired(Dur::from_secs(age), 0.2, 0.0, t_migr));
    }
    assert!(!linger_expired(
        t_lingr - Dur::from_micros(1),
        0.2,
        0.0,
        t_migr
    ));
    assert!(linger_expired(t_lingr, 0.2, 0.0, t_migr));
    // With the 2×age predictor (L81) the episode is predicted to pay off
    // exactly from T_lingr on: 2·T_lingr ≥ T_lingr + k·T_migr.
    let age = t_lingr;
    assert!(migration_pays_off(
        predicted_episode_total(age),
        age,
        t_migr,
        0.2,
        0.0
    ));
    let younger = t_lingr - Dur::from_secs(1);
    assert!(!migration_pays_off(
        predicted_episode_total(younger),
        younger,
        t_migr,
        0.2,
        0.0
    ));
}

#[test]
fn r3_eight_mb_at_three_mbit_is_21_33_s() {
    let c = MigrationCost::default();
    assert_eq!(c.image_bytes, 8_000_000);
    assert_eq!(c.bandwidth_bytes_per_s, 375_000.0);
    assert_eq!(c.transfer(), Dur::from_micros(21_333_333));
    assert_eq!(c.t_migr(), c.transfer());
    let with_fixed = MigrationCost {
        suspend: Dur::from_secs(1),
        resume: Dur::from_secs(2),
        ..c
    };
    assert_eq!(with_fixed.t_migr(), Dur::from_micros(24_333_333));
    // The spec's derived example: h = 0.2 gives T_lingr ≈ 107 s.
    let t = linger_time(0.2, 0.0, c.t_migr());
    assert!((t.as_secs_f64() - 106.67).abs() < 0.01, "{t}");
}

#[test]
fn migration_cost_edge_cases() {
    let zero_bw = MigrationCost {
        bandwidth_bytes_per_s: 0.0,
        ..MigrationCost::default()
    };
    assert_eq!(zero_bw.t_migr(), Dur::MAX);
    assert_eq!(linger_time(0.5, 0.0, zero_bw.t_migr()), Dur::MAX);
    let empty = MigrationCost {
        image_bytes: 0,
        bandwidth_bytes_per_s: f64::NAN,
        ..MigrationCost::default()
    };
    assert_eq!(empty.t_migr(), Dur::ZERO);
    assert_eq!(MigrationCost::mbit_per_s(10.0), 1_250_000.0);
    let c: MigrationCost = serde_json::from_str(r#"{"image_bytes": 4000000}"#).unwrap();
    assert_eq!(c.transfer(), Dur::from_micros(10_666_667));
    assert!(serde_json::from_str::<MigrationCost>(r#"{"size": 1}"#).is_err());
}

#[test]
fn near_finished_guard() {
    // h = 0.5, l = 0, T_migr = 10 s: threshold = 10·0.5·1/0.5 = 10 s of work.
    let t = Dur::from_secs(10);
    assert!(!migration_beats_staying(Dur::from_secs(10), t, 0.5, 0.0));
    assert!(migration_beats_staying(Dur::from_secs(11), t, 0.5, 0.0));
    // An owner at 100 %: staying never finishes, so any work favours moving.
    assert!(migration_beats_staying(Dur::from_micros(1), t, 1.0, 0.0));
    assert!(!migration_beats_staying(Dur::MAX, t, 0.2, 0.3));
}

#[test]
fn completion_delta_matches_hand_computation() {
    // T_nidle = 100, T_lingr = 10, T_migr = 20, h = 0.5, l = 0:
    // (100-10)·0.5 − (100-10-20) = 45 − 70 = −25 s (migration wins).
    let d = completion_delta(
        Dur::from_secs(100),
        Dur::from_secs(10),
        Dur::from_secs(20),
        0.5,
        0.0,
    );
    assert!((d + 25.0).abs() < 1e-9);
    assert_eq!(
        completion_delta(Dur::ZERO, Dur::ZERO, Dur::ZERO, 0.5, 1.0),
        f64::INFINITY
    );
    assert!(completion_delta(Dur::ZERO, Dur::ZERO, Dur::ZERO, f64::NAN, 0.0).is_nan());
}

/// Foreign CPU work done by t_f under Eq. 1, for the single-episode timeline.
fn work_static(t0: f64, t1: f64, t4: f64, tf1: f64, h: f64, l: f64) -> f64 {
    (1.0 - l) * (t1 - t0) + (1.0 - h) * (t4 - t1) + (1.0 - l) * (tf1 - t4)
}
fn work_migrated(t0: f64, t1: f64, t2: f64, t3: f64, tf2: f64, h: f64, l: f64) -> f64 {
    (1.0 - l) * (t1 - t0) + (1.0 - h) * (t2 - t1) + (1.0 - l) * (tf2 - t3)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        rng_seed: RngSeed::Fixed(0x6c69_6e67_6572),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Spec R2: for random t0 < t1 < t2 < t3 < t4 < t_f1, Eq. 3 holds iff the
    /// Eq. 1-balanced completion with migration t_f2 is ≤ t_f1.
    #[test]
    fn r2_eq3_agrees_with_eq1_and_eq2(
        gaps in proptest::array::uniform5(1u64..1_000_000_000),
        h in 0.0f64..=1.0,
        l in 0.0f64..0.999,
    ) {
        let mut t = [0u64; 6];
        for i in 0..5 {
            t[i + 1] = t[i] + gaps[i];
        }
        let [t0, t1, t2, t3, t4, tf1] = t.map(|x| x as f64 / 1e6);
        let (t_nidle, t_lingr, t_migr) = (
            Dur::from_micros(t[4] - t[1]),
            Dur::from_micros(t[2] - t[1]),
            Dur::from_micros(t[3] - t[2]),
        );
        // Eq. 1: solve T_C,S = T_C,M for t_f2.
        let ws = work_static(t0, t1, t4, tf1, h, l);
        let base = work_migrated(t0, t1, t2, t3, t3, h, l);
        let tf2 = t3 + (ws - base) / (1.0 - l);
        prop_assert!((work_migrated(t0, t1, t2, t3, tf2, h, l) - ws).abs() <= 1e-6 * ws.max(1.0));
        // Eq. 2 gives the same difference.
        let delta = completion_delta(t_nidle, t_lingr, t_migr, h, l);
        prop_assert!((delta - (tf2 - tf1)).abs() <= 1e-6 * tf1.max(1.0), "{delta} vs {}", tf2 - tf1);
        // Eq. 3 decides the sign, away from the floating-point boundary.
        if (tf2 - tf1).abs() > 1e-6 * tf1.max(1.0) {
            prop_assert_eq!(migration_pays_off(t_nidle, t_lingr, t_migr, h, l), tf2 <= tf1);
        }
    }

    /// Eq. 4 is monotone: a busier owner (larger h) never lengthens the
    /// linger time, and nothing panics on any float.
    #[test]
    fn linger_time_is_monotone_in_h(
        h1 in 0.0f64..=1.0, h2 in 0.0f64..=1.0, l in 0.0f64..=1.0,
        t in 0u64..10_000_000_000,
        junk in proptest::num::f64::ANY,
    ) {
        let (lo, hi) = if h1 <= h2 { (h1, h2) } else { (h2, h1) };
        let t = Dur::from_micros(t);
        prop_assert!(linger_time(hi, l, t) <= linger_time(lo, l, t));
        let _ = linger_time(junk, junk, t);
        let _ = completion_delta(t, t, t, junk, l);
    }
}
