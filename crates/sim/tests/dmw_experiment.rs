//! DMW's multi-user and heterogeneous experiments (`glean sim dmw`,
//! Neeracher 1998 §7.7 L2861–2881 and §4.5.3 L1305–1331), quick mode.

use gleaner_sim::experiments::dmw::{
    HETERO_HOSTS, MULTI_HOSTS, Placement, SMALL_PARALLEL, USERS, dependences_respected,
    large_parallel, simulate,
};
use gleaner_sim::experiments::{self, ExperimentOpts};

const ARBITRATED: Placement = Placement::Arbitrated { speed_aware: true };
const BLIND: Placement = Placement::Arbitrated { speed_aware: false };

/// The umpire never puts two jobs on a limit-1 host and gives the three users
/// equal shares of the running jobs while all three compete.
#[test]
fn arbitrated_respects_limits_and_is_fair() {
    for seed in 1..=3 {
        let r = simulate(&MULTI_HOSTS, USERS, &SMALL_PARALLEL, ARBITRATED, seed).unwrap();
        assert_eq!(r.max_jobs_per_host(), 1, "seed {seed}: {:?}", r.hosts);
        assert!(r.hosts.iter().all(|h| h.over_limit == 0.0));
        for s in r.shares() {
            assert!(
                (s - 1.0 / 3.0).abs() <= 0.1,
                "seed {seed}: shares {:?}",
                r.shares()
            );
        }
        assert!(r.jain() >= 0.95, "seed {seed}: Jain {}", r.jain());
        assert!(dependences_respected(&r));
        assert_eq!(r.jobs.len(), USERS * 6);
    }
}

/// Every scheduler reads the same stale view and picks the same best host:
/// limits are exceeded and different users start on one host together.
#[test]
fn uncoordinated_herds_onto_the_same_host() {
    for seed in 1..=3 {
        let r = simulate(
            &MULTI_HOSTS,
            USERS,
            &SMALL_PARALLEL,
            Placement::Uncoordinated,
            seed,
        )
        .unwrap();
        assert!(r.max_jobs_per_host() > 1, "seed {seed}: {:?}", r.hosts);
        assert!(r.herd_starts() > 0, "seed {seed}: {:?}", r.hosts);
        assert!(dependences_respected(&r));
    }
}

/// Knowing β, the umpire fills fast hosts first and the schedule ends sooner.
#[test]
fn speed_aware_placement_shortens_the_makespan() {
    let shape = large_parallel(8);
    let (mut aware, mut blind) = (0.0, 0.0);
    for seed in 1..=3 {
        let a = simulate(&HETERO_HOSTS, 1, &shape, ARBITRATED, seed).unwrap();
        let b = simulate(&HETERO_HOSTS, 1, &shape, BLIND, seed).unwrap();
        for (r, _) in [(&a, 0), (&b, 1)] {
            for (h, d) in r.hosts.iter().zip(HETERO_HOSTS.iter()) {
                assert!(h.max_jobs <= d.limit, "{}: {}", d.name, h.max_jobs);
            }
        }
        aware += a.makespan();
        blind += b.makespan();
    }
    assert!(aware < blind, "aware {aware} vs blind {blind}");
}

/// Same seed, same bytes; the experiment's own checks pass in quick mode.
#[test]
fn experiment_is_deterministic_and_passes() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let o1 = ExperimentOpts {
        quick: true,
        ..ExperimentOpts::new(d1.path(), 3, 1)
    };
    let o2 = ExperimentOpts {
        quick: true,
        ..ExperimentOpts::new(d2.path(), 3, 1)
    };
    let rep = experiments::run("dmw", &o1).unwrap();
    for c in &rep.checks {
        eprintln!(
            "{} {}: {}",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    assert!(rep.all_passed());
    experiments::run("dmw", &o2).unwrap();
    for f in [
        "dmw_multi.csv",
        "dmw_multi_hosts.csv",
        "dmw_hetero.csv",
        "summary.md",
    ] {
        let a = std::fs::read(d1.path().join(f)).unwrap();
        let b = std::fs::read(d2.path().join(f)).unwrap();
        assert_eq!(a, b, "{f} differs between runs");
    }
    assert!(d1.path().join("dmw_multi_host_max.svg").exists());
}
