//! DMW's placement rules (`gleaner_core::dmw::rules`), shared by the UMol
//! arbiter and the production coordinator: embargo (Neeracher 1998 L1111),
//! job limits (L1287–1291) and the progress guarantee (L1016, L1203).

use gleaner_core::dmw::{
    Embargo, Pass, ProgressGuarantee, Room, at_job_limit, job_limit, needs_progress,
};
use gleaner_core::time::{Dur, Time};
use proptest::prelude::*;

fn guarantee() -> impl Strategy<Value = ProgressGuarantee> {
    prop_oneof![
        Just(ProgressGuarantee::Off),
        Just(ProgressGuarantee::IgnoreThresholds),
        Just(ProgressGuarantee::IgnoreThresholdsAndEmbargo),
    ]
}

fn pass() -> impl Strategy<Value = Pass> {
    prop_oneof![Just(Pass::Regular), guarantee().prop_map(Pass::Progress)]
}

proptest! {
    /// An embargo holds from the grant for its length, and a job's end
    /// lifts it at once.
    #[test]
    fn embargo_holds_for_its_length_until_a_job_ends(
        at in 0u64..1_000_000, len in 0u64..10_000, q in 0u64..2_000_000,
    ) {
        let mut e = Embargo::default();
        prop_assert!(!e.active(Time::from_secs(q)));
        e.on_grant(Time::from_secs(at), Dur::from_secs(len));
        // Time only moves forward for its callers; the embargo ends at
        // `at + len`.
        prop_assert_eq!(e.active(Time::from_secs(q)), len > 0 && q < at + len);
        e.on_job_end();
        prop_assert!(!e.active(Time::from_secs(q)));
    }

    /// No pass ever exceeds a job limit or uses a dysfunctional host; only
    /// the embargo-ignoring guarantee uses an embargoed one; a host the
    /// regular pass may use, every guarantee pass may use too.
    #[test]
    fn rooms_follow_the_pass_rules(
        jobs in 0u32..6, limit in 0u32..6, embargoed in any::<bool>(),
        dysfunctional in any::<bool>(), p in pass(),
    ) {
        let room = Room { jobs, limit, embargoed, dysfunctional };
        if room.admits(p) {
            prop_assert!(!at_job_limit(jobs, limit));
            prop_assert!(jobs < limit);
            prop_assert!(!dysfunctional);
            prop_assert!(!embargoed || p == Pass::Progress(ProgressGuarantee::IgnoreThresholdsAndEmbargo));
        }
        if room.admits(Pass::Regular) {
            for g in [ProgressGuarantee::Off, ProgressGuarantee::IgnoreThresholds,
                      ProgressGuarantee::IgnoreThresholdsAndEmbargo] {
                prop_assert!(room.admits(Pass::Progress(g)));
            }
        }
        let free = Room { embargoed: false, ..room };
        prop_assert_eq!(
            room.admits(Pass::Progress(ProgressGuarantee::IgnoreThresholdsAndEmbargo)),
            free.admits(Pass::Regular)
        );
    }

    /// The limit is the configured one, else the CPUs, and never below one.
    #[test]
    fn job_limits_default_to_the_cpus(cpus in 0u32..64, conf in proptest::option::of(0u32..64)) {
        let l = job_limit(conf, cpus);
        prop_assert!(l >= 1);
        match conf {
            Some(n) => prop_assert_eq!(l, n.max(1)),
            None => prop_assert_eq!(l, cpus.max(1)),
        }
    }

    /// Only a scheduler with work, nothing running and nothing promised is
    /// owed the guarantee, and the guarantee never preempts.
    #[test]
    fn the_guarantee_is_owed_only_to_the_idle(
        work in any::<bool>(), running in 0u32..4, promised in 0u32..4, g in guarantee(),
    ) {
        prop_assert_eq!(needs_progress(work, running, promised), work && running == 0 && promised == 0);
        prop_assert!(!g.may_preempt());
        prop_assert_eq!(g.enabled(), g != ProgressGuarantee::Off);
        prop_assert!(!g.ignores_embargo() || g.enabled());
    }
}
