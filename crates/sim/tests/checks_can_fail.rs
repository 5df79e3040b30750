//! Every experiment's `--strict` checks can fail: each experiment runs in
//! its quick configuration and again with a deliberately wrong design
//! choice (`--variant`: Random instead of Up-Down, no detector wait,
//! Longest-Free replaced at random, a busier pool, …). A check that the
//! right configuration passes must fail under the wrong one, and the wrong
//! run must not pass as a whole (what `glean sim NAME --strict` exits on).

use gleaner_sim::experiments::{self, Check, ExperimentOpts, ExperimentReport};

fn run(name: &str, variant: Option<&str>, model: Option<&str>, seeds: u32) -> ExperimentReport {
    let dir = tempfile::tempdir().unwrap();
    let opts = ExperimentOpts {
        quick: true,
        variant: variant.map(str::to_string),
        model: model.map(str::to_string),
        ..ExperimentOpts::new(dir.path(), seeds, 1)
    };
    experiments::run(name, &opts).unwrap()
}

fn find<'a>(r: &'a ExperimentReport, needle: &str) -> &'a Check {
    r.checks
        .iter()
        .find(|c| c.name.contains(needle))
        .unwrap_or_else(|| {
            panic!(
                "{}: no check containing {needle:?}: {:#?}",
                r.name, r.checks
            )
        })
}

/// `needle`'s check passes in `right` and fails in `wrong`, and `wrong`
/// fails `--strict`.
fn carries(right: &ExperimentReport, wrong: &ExperimentReport, needle: &str) {
    let (a, b) = (find(right, needle), find(wrong, needle));
    assert!(
        a.passed,
        "{}: the right configuration fails {:?}: {}",
        right.name, a.name, a.detail
    );
    assert!(
        !b.passed,
        "{}: the wrong configuration passes {:?}: {}",
        wrong.name, b.name, b.detail
    );
    assert!(!wrong.all_passed(), "{}: --strict would pass", wrong.name);
}

#[test]
fn updown_random_as_updown_loses_the_light_users() {
    let right = run("updown", None, None, 1);
    let wrong = run("updown", Some("random-as-updown"), None, 1);
    carries(&right, &wrong, "light RCWR nearly constant under Up-Down");
}

#[test]
fn pool_random_as_updown_loses_the_light_users() {
    let right = run("pool", None, None, 1);
    let wrong = run("pool", Some("random-as-updown"), None, 1);
    // The production coordinator's own light RCWR rises with K (its
    // summary explains why); the check it carries is the medium station's.
    let c = find(&wrong, "light RCWR nearly constant under Up-Down");
    assert!(!c.passed, "{}", c.detail);
    assert!(!wrong.all_passed());
    let _ = right;
}

#[test]
fn profile_m2_misses_the_station_spread_m5_has() {
    let right = run("profile", None, Some("m5"), 2);
    let wrong = run("profile", None, Some("m2"), 2);
    // M5 calibrates each station to Table 1; M2's identical stations
    // cannot give its spread. (M5 still misses Table 3's busy-hour tail,
    // results/profile/summary.md, so that check fails for both.)
    carries(&right, &wrong, "Table 1: station 5 % AV");
    carries(&right, &wrong, "Table 1: system availability");
}

// No test for `condor_month`: its check "in most cases light users did not
// wait at all" (more than half of the light jobs wait under 5 % of their
// demand) passes under Random allocation and on a pool AV only half the
// time (M1 60/60 min) too, so it cannot fail as configured; the summary's
// stricter "mean job wait ratio ≈ 0" check is the one that fails (light
// users do wait on the unfitted M5-23).

#[test]
fn reservations_random_replacement_and_a_busy_pool_fail() {
    let right = run("reservations", None, None, 2);
    let wrong = run("reservations", Some("random-as-longest-free"), None, 2);
    carries(&right, &wrong, "Longest-Free preempts less than Random");
    let busy = run("reservations", Some("busy-pool"), None, 2);
    carries(&right, &busy, "error probability of a 40 % partition");
}

#[test]
fn gang_with_idle_owners_lingers_for_free() {
    let right = run("gang", None, None, 2);
    let wrong = run("gang", Some("idle-owners"), None, 2);
    let c = find(
        &wrong,
        "above 50 % local use lingering slows the job dramatically",
    );
    assert!(!c.passed, "{}", c.detail);
    let r = find(
        &right,
        "above 50 % local use lingering slows the job dramatically",
    );
    assert!(r.passed, "{}", r.detail);
    assert!(!wrong.all_passed());
}

#[test]
fn owner_without_the_wait_or_the_suspension_fails() {
    let right = run("owner", None, None, 2);
    let no_wait = run("owner", Some("no-detector-wait"), None, 2);
    // "About 4 points" is not reproduced by the right configuration either
    // (+5.2 to +5.4 points on these seeds, results/owner/summary.md); the
    // wrong one must still fail it, with a gain further from the paper's.
    let gain = |r: &ExperimentReport| -> f64 {
        let d = &find(r, "availability rises about 4 points").detail;
        let v = d.split("model: +").nth(1).and_then(|t| t.split(' ').next());
        v.and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no gain in {d}"))
    };
    assert!(!find(&no_wait, "availability rises about 4 points").passed);
    assert!(!no_wait.all_passed());
    assert!(
        (gain(&no_wait) - 4.0).abs() > (gain(&right) - 4.0).abs(),
        "{} vs {}",
        gain(&no_wait),
        gain(&right)
    );
    let immediate = run("owner", Some("immediate-for-condor"), None, 2);
    carries(
        &right,
        &immediate,
        "suspending for 5 minutes avoids many migrations",
    );
}

#[test]
fn ps_toy_random_as_updown_is_unfair() {
    let right = run("ps_toy", None, None, 1);
    let wrong = run("ps_toy", Some("random-as-updown"), None, 1);
    carries(&right, &wrong, "past history");
}

#[test]
fn market_fcfs_shuts_the_light_users_out() {
    let right = run("market", None, None, 1);
    let wrong = run("market", Some("fcfs-as-market"), None, 1);
    carries(
        &right,
        &wrong,
        "free market: light users get their 1st/2nd-class slots",
    );
}

#[test]
fn linger_immediate_eviction_loses_the_job_time() {
    let right = run("linger", None, None, 1);
    let wrong = run("linger", Some("ie-as-ll"), None, 1);
    carries(&right, &wrong, "w1 ll avg job time");
}

#[test]
fn migration_immediate_eviction_never_lingers() {
    let right = run("migration", None, None, 1);
    let wrong = run("migration", Some("ie-as-ll"), None, 1);
    carries(&right, &wrong, "LL first below T_lingr");
}

#[test]
fn dmw_without_the_umpire_herds() {
    let right = run("dmw", None, None, 2);
    let wrong = run("dmw", Some("blind-as-aware"), None, 2);
    carries(
        &right,
        &wrong,
        "arbitrated placement enforces the job limit",
    );
    carries(&right, &wrong, "speed-aware σ shortens the makespan");
}

/// The throttle table is arithmetic, so it has no checks to fail; an
/// unknown variant is refused with the experiment's list.
#[test]
fn throttle_has_no_checks_and_unknown_variants_are_refused() {
    let r = run("throttle", None, None, 1);
    assert!(r.checks.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let opts = ExperimentOpts {
        quick: true,
        variant: Some("nonsense".into()),
        ..ExperimentOpts::new(dir.path(), 1, 1)
    };
    let e = experiments::run("gang", &opts).unwrap_err().to_string();
    assert!(e.contains("idle-owners"), "{e}");
}
