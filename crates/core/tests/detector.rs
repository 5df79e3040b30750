//! Owner-activity detector: Mutka 1988 §3.2 (spec mutka-thesis.md §2.1,
//! mutka-livny-1987.md R-MON-1..4) and the Linger-Longer profiles.

use gleaner_core::detector::{
    Detector, DetectorConfig, DetectorProfile, OwnerSample, OwnerState, Transition, TransitionCause,
};
use gleaner_core::time::{Dur, Time};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

const QUIET: f64 = 0.0;
const BUSY: f64 = 0.5;

fn secs(s: u64) -> Time {
    Time::from_secs(s)
}

/// Samples at every `next_sample_due` until (and including) `until`, with
/// the load given by `load(t)` and no input source.
fn run_until(d: &mut Detector, until: Time, load: impl Fn(Time) -> f64) {
    while d.next_sample_due() <= until {
        let t = d.next_sample_due();
        d.sample(t, &OwnerSample::cpu(load(t)));
    }
}

/// A Mutka detector that has just become AV at t = 300 s.
fn available_detector() -> Detector {
    let mut d = Detector::new(DetectorConfig::default(), Time::ZERO);
    run_until(&mut d, secs(300), |_| QUIET);
    assert_eq!(d.state(), OwnerState::Av);
    assert_eq!(d.state_since(), secs(300));
    d
}

fn na_intervals(history: &[Transition]) -> Vec<(Time, Time)> {
    let mut out = Vec::new();
    let mut start = None;
    for t in history {
        match t.to {
            OwnerState::Na => start = start.or(Some(t.at)),
            OwnerState::Av => {
                if let Some(s) = start.take() {
                    out.push((s, t.at));
                }
            }
        }
    }
    out
}

#[test]
fn starts_na_and_becomes_av_after_the_full_wait() {
    let mut d = Detector::new(DetectorConfig::default(), Time::ZERO);
    assert_eq!(d.state(), OwnerState::Na);
    assert_eq!(d.next_sample_due(), Time::ZERO);
    // Sampling every 60 s while NA (Mutka 1988 L353).
    d.sample(Time::ZERO, &OwnerSample::cpu(QUIET));
    assert_eq!(d.next_sample_due(), secs(60));
    run_until(&mut d, secs(240), |_| QUIET);
    assert_eq!(d.state(), OwnerState::Na, "4 quiet minutes are not enough");
    let t = d.sample(secs(300), &OwnerSample::cpu(QUIET));
    assert_eq!(
        t,
        Some(Transition {
            at: secs(300),
            to: OwnerState::Av,
            cause: TransitionCause::QuietWait
        })
    );
    // Sampling every 30 s while AV.
    assert_eq!(d.next_sample_due(), secs(330));
}

#[test]
fn burst_at_zero_keeps_na_until_five_quiet_minutes() {
    // spec mutka-thesis.md R1: a burst at t = 0, load decays below the
    // threshold after 150 s (Mutka 1988 L353: 2–3 min of decay).
    let mut d = Detector::new(DetectorConfig::default(), Time::ZERO);
    let load = |t: Time| if t < secs(150) { 0.01 } else { 0.001 };
    run_until(&mut d, secs(420), load);
    assert_eq!(d.state(), OwnerState::Na);
    run_until(&mut d, secs(480), load);
    // First quiet sample at 180 s, AV 5 min later: 8 min after the burst,
    // in line with the ≈ 7 min of the paper.
    assert_eq!(d.state(), OwnerState::Av);
    assert_eq!(d.state_since(), secs(480));
}

#[test]
fn threshold_is_a_quarter_percent() {
    let mut d = available_detector();
    d.sample(secs(330), &OwnerSample::cpu(0.0024));
    assert_eq!(d.state(), OwnerState::Av);
    d.sample(secs(360), &OwnerSample::cpu(0.0026));
    assert_eq!(d.state(), OwnerState::Na);
}

#[test]
fn input_event_while_av_gives_na_at_the_next_sample() {
    // R-MON-1 test: one input event at t0 in AV → NA by t0 + 30 s, then AV
    // again only after the wait. Sampled path only (no on_activity call).
    let mut d = available_detector();
    let t0 = secs(310);
    let since = |t: Time| OwnerSample {
        owner_cpu: QUIET,
        since_input: Some(t - t0),
        load_avg: None,
    };
    assert_eq!(d.next_sample_due(), secs(330));
    let tr = d.sample(secs(330), &since(secs(330))).unwrap();
    assert_eq!(tr.to, OwnerState::Na);
    assert_eq!(tr.cause, TransitionCause::Input);
    assert!(tr.at - t0 <= Dur::from_secs(30));
    // No further input: the old input is not "since the previous sample".
    while d.state() == OwnerState::Na {
        let t = d.next_sample_due();
        d.sample(t, &since(t));
    }
    // First quiet sample at 390 s, AV at 690 s.
    assert_eq!(d.state_since(), secs(690));
    assert!(d.state_since() - secs(330) >= Dur::from_mins(5));
}

#[test]
fn load_rise_while_av_gives_na_at_that_sample() {
    let mut d = available_detector();
    let tr = d.sample(secs(330), &OwnerSample::cpu(BUSY)).unwrap();
    assert_eq!(
        (tr.at, tr.to, tr.cause),
        (secs(330), OwnerState::Na, TransitionCause::CpuLoad)
    );
    assert_eq!(d.next_sample_due(), secs(390));
}

#[test]
fn activity_event_between_samples_is_immediate_and_restarts_the_wait() {
    let mut d = available_detector();
    let tr = d.on_activity(Time::from_millis(312_345)).unwrap();
    assert_eq!(tr.to, OwnerState::Na);
    assert_eq!(tr.at, Time::from_millis(312_345));
    assert_eq!(tr.cause, TransitionCause::ActivityEvent);
    // Further events while NA change nothing but restart the wait.
    run_until(&mut d, secs(380), |_| QUIET);
    assert_eq!(d.on_activity(secs(400)), None);
    run_until(&mut d, secs(1000), |_| QUIET);
    let na = na_intervals(&d.history().copied().collect::<Vec<_>>());
    let (start, end) = *na.last().unwrap();
    assert_eq!(start, Time::from_millis(312_345));
    // Samples continue on the old grid (300 + k·60); first quiet one after
    // the 400 s event is at 420 s, so AV at 720 s.
    assert_eq!(end, secs(720));
}

#[test]
fn monitoring_gap_counts_as_na() {
    let mut d = available_detector();
    // No sample for 10 minutes (> max_sample_gap of 3 min).
    let tr = d.sample(secs(900), &OwnerSample::cpu(QUIET)).unwrap();
    assert_eq!(tr.cause, TransitionCause::MonitorGap);
    assert_eq!(tr.to, OwnerState::Na);
    assert_eq!(
        tr.at,
        secs(300),
        "NA from the last time the monitor was seen"
    );
    run_until(&mut d, secs(1200), |_| QUIET);
    assert_eq!(d.state(), OwnerState::Av);
    assert_eq!(d.state_since(), secs(1200));
}

#[test]
fn reported_gap_counts_as_na() {
    let mut d = available_detector();
    let tr = d.report_gap(secs(320), secs(500)).unwrap();
    assert_eq!((tr.at, tr.to), (secs(320), OwnerState::Na));
    assert_eq!(d.next_sample_due(), secs(560));
    run_until(&mut d, secs(860), |_| QUIET);
    assert_eq!(d.state_since(), secs(860));
    // A gap while NA adds no transition.
    let mut d = Detector::new(DetectorConfig::default(), Time::ZERO);
    assert_eq!(d.report_gap(secs(10), secs(20)), None);
}

#[test]
fn keeps_the_last_100_transitions() {
    // Mutka 1988 L355: the monitor keeps the last 100 state changes.
    let mut d = Detector::new(DetectorConfig::default(), Time::ZERO);
    let mut t = 0u64;
    for _ in 0..80 {
        // Quiet until AV, then one busy AV sample.
        while d.state() == OwnerState::Na {
            t = d.next_sample_due().as_micros() / 1_000_000;
            d.sample(secs(t), &OwnerSample::cpu(QUIET));
        }
        t += 30;
        d.sample(secs(t), &OwnerSample::cpu(BUSY));
    }
    assert_eq!(d.transitions_total(), 161); // start + 80 × (AV, NA)
    let h: Vec<Transition> = d.history().copied().collect();
    assert_eq!(h.len(), 100);
    assert_eq!(h.last().unwrap().at, secs(t));
    assert_eq!(h.last().unwrap().to, OwnerState::Na);
    for w in h.windows(2) {
        assert!(w[0].at <= w[1].at);
        assert_ne!(w[0].to, w[1].to, "states alternate");
    }
    // Configurable capacity.
    let cfg = DetectorConfig {
        history_capacity: 3,
        ..DetectorConfig::default()
    };
    let mut d = Detector::new(cfg, Time::ZERO);
    for k in 0..10 {
        d.on_activity(secs(k));
    }
    assert_eq!(d.history().len(), 1);
    assert_eq!(d.config().history_capacity, 3);
}

#[test]
fn linger_longer_profile() {
    // Ryu & Hollingsworth L126: idle ⇔ CPU < 10 % and no input for 60 s.
    let mut d = Detector::with_profile(DetectorProfile::LingerLonger, Time::ZERO);
    let s = |cpu: f64, idle: u64| OwnerSample {
        owner_cpu: cpu,
        since_input: Some(Dur::from_secs(idle)),
        load_avg: None,
    };
    d.sample(Time::ZERO, &s(0.05, 30));
    assert_eq!(d.state(), OwnerState::Na, "input 30 s ago");
    d.sample(secs(2), &s(0.05, 61));
    assert_eq!(d.state(), OwnerState::Av, "no extra wait beyond the 60 s");
    assert_eq!(d.next_sample_due(), secs(4));
    d.sample(secs(4), &s(0.15, 63));
    assert_eq!(d.state(), OwnerState::Na, "CPU above 10 %");
}

#[test]
fn load_average_profile() {
    // Ryu & Hollingsworth L160: busy if input or load average > 0.3.
    let mut d = Detector::with_profile(DetectorProfile::LoadAvg03, Time::ZERO);
    let s = |la: f64, idle: u64| OwnerSample {
        owner_cpu: 1.0, // ignored by this profile
        since_input: Some(Dur::from_secs(idle)),
        load_avg: Some(la),
    };
    d.sample(Time::ZERO, &s(0.29, 1000));
    assert_eq!(d.state(), OwnerState::Av);
    d.sample(secs(30), &s(0.31, 1030));
    assert_eq!(d.state(), OwnerState::Na);
    d.sample(secs(90), &s(0.1, 1090));
    assert_eq!(d.state(), OwnerState::Av);
    d.sample(secs(120), &s(0.1, 10));
    assert_eq!(d.state(), OwnerState::Na, "input since the last sample");
}

#[test]
fn config_serde_defaults_and_unknown_fields() {
    let c: DetectorConfig = serde_json::from_str(r#"{"idle_wait": 60000000}"#).unwrap();
    assert_eq!(c.idle_wait, Dur::from_secs(60));
    assert_eq!(c.cpu_threshold, Some(0.0025));
    assert!(serde_json::from_str::<DetectorConfig>(r#"{"idle_wiat": 1}"#).is_err());
    for p in [
        DetectorProfile::Mutka1988,
        DetectorProfile::LingerLonger,
        DetectorProfile::LoadAvg03,
    ] {
        let c = p.config();
        let back: DetectorConfig =
            serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }
    let p: DetectorProfile = serde_json::from_str(r#""linger_longer""#).unwrap();
    assert_eq!(p, DetectorProfile::LingerLonger);
}

#[test]
fn time_never_runs_backwards() {
    let mut d = available_detector();
    d.sample(secs(100), &OwnerSample::cpu(BUSY));
    assert_eq!(d.state(), OwnerState::Na);
    assert_eq!(d.state_since(), secs(300));
}

#[derive(Clone, Debug)]
enum Step {
    Sample {
        cpu: f64,
        input_ago: Option<u64>,
        load: Option<f64>,
    },
    Activity,
    Gap(u64),
}

fn step() -> impl Strategy<Value = (u64, Step)> {
    let sample = (
        prop_oneof![Just(0.0), Just(0.001), Just(0.002), Just(0.004), Just(0.2)],
        proptest::option::of(0u64..400),
        proptest::option::of(prop_oneof![Just(0.1), Just(0.5)]),
    )
        .prop_map(|(cpu, input_ago, load)| Step::Sample {
            cpu,
            input_ago,
            load,
        });
    let kind = prop_oneof![
        8 => sample,
        1 => Just(Step::Activity),
        1 => (1u64..600).prop_map(Step::Gap),
    ];
    // Mostly on-time samples (offset 0), sometimes early, late or very late.
    (
        prop_oneof![4 => Just(0u64), 2 => 1u64..90, 1 => 90u64..900],
        kind,
    )
}

fn profile() -> impl Strategy<Value = DetectorConfig> {
    prop_oneof![
        Just(DetectorProfile::Mutka1988.config()),
        Just(DetectorProfile::LingerLonger.config()),
        Just(DetectorProfile::LoadAvg03.config()),
        (1u64..600, 1u64..120, 1u64..120).prop_map(|(w, na, av)| DetectorConfig {
            idle_wait: Dur::from_secs(w),
            sample_period_na: Dur::from_secs(na),
            sample_period_av: Dur::from_secs(av),
            ..DetectorConfig::default()
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: RngSeed::Fixed(0x6c65_616e_6572),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// No NA interval is shorter than the idle wait, whatever the trace
    /// (R-MON-1), and the history is ordered and alternating.
    #[test]
    fn no_na_interval_shorter_than_the_wait(
        mut cfg in profile(),
        steps in proptest::collection::vec(step(), 1..300),
    ) {
        cfg.history_capacity = 10_000;
        let wait = cfg.idle_wait;
        let mut d = Detector::new(cfg, Time::ZERO);
        let mut now = Time::ZERO;
        for (offset, s) in steps {
            match s {
                Step::Sample { cpu, input_ago, load } => {
                    now = d.next_sample_due().max(now) + Dur::from_secs(offset);
                    let sample = OwnerSample {
                        owner_cpu: cpu,
                        since_input: input_ago.map(Dur::from_secs),
                        load_avg: load,
                    };
                    let busy_cpu = cpu > d.config().cpu_threshold.unwrap_or(f64::INFINITY);
                    d.sample(now, &sample);
                    if busy_cpu {
                        prop_assert_eq!(d.state(), OwnerState::Na);
                    }
                }
                Step::Activity => {
                    now += Dur::from_secs(offset);
                    d.on_activity(now);
                    prop_assert_eq!(d.state(), OwnerState::Na);
                }
                Step::Gap(len) => {
                    let start = now + Dur::from_secs(offset);
                    now = start + Dur::from_secs(len);
                    d.report_gap(start, now);
                    prop_assert_eq!(d.state(), OwnerState::Na);
                }
            }
        }
        let h: Vec<Transition> = d.history().copied().collect();
        for w in h.windows(2) {
            prop_assert!(w[0].at <= w[1].at);
            prop_assert_ne!(w[0].to, w[1].to);
        }
        for (start, end) in na_intervals(&h) {
            prop_assert!(end - start >= wait, "NA {start}..{end} shorter than {wait}");
        }
    }
}
