//! The guest eviction ladder: scripted sequences per policy, and property
//! tests of the owner-protection invariant.

use gleaner_core::eviction::{
    Action, CheckpointThenKillConfig, Condor1988Config, Estimates, EvictionLadder, EvictionPolicy,
    GuestState, ImmediateEvictionConfig, LadderEvent, LingerForeverConfig, LingerLongerConfig,
    NoDestination, PauseAndMigrateConfig,
};
use gleaner_core::time::{Dur, Time};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

fn secs(s: u64) -> Time {
    Time::from_secs(s)
}

fn migrate(checkpoint_first: bool) -> Action {
    Action::Migrate { checkpoint_first }
}
fn vacate(checkpoint_first: bool) -> Action {
    Action::Vacate { checkpoint_first }
}

/// A guest placed at t = 0 on an idle node.
fn placed(policy: EvictionPolicy) -> EvictionLadder {
    let mut g = EvictionLadder::new(policy, Time::ZERO);
    assert_eq!(g.state(), GuestState::Queued);
    assert_eq!(g.on_placed(Time::ZERO, false), vec![Action::RunNormal]);
    assert_eq!(g.state(), GuestState::Running);
    g
}

/// Runs `events` in time order, firing timers strictly before each event
/// (a deadline equal to an event's time loses to the event), and then any
/// deadline up to `until`. Returns every action with its time.
fn drive(
    g: &mut EvictionLadder,
    events: &[(Time, LadderEvent)],
    until: Time,
) -> Vec<(Time, Action)> {
    let mut out = Vec::new();
    let fire_before =
        |g: &mut EvictionLadder, t: Time, incl: bool, out: &mut Vec<(Time, Action)>| {
            while let Some(d) = g.next_deadline() {
                if d < t || (incl && d == t) {
                    out.extend(g.on_timer(d).into_iter().map(|a| (d, a)));
                } else {
                    break;
                }
            }
        };
    for &(t, ev) in events {
        fire_before(g, t, false, &mut out);
        out.extend(g.handle(t, ev).into_iter().map(|a| (t, a)));
    }
    fire_before(g, until, true, &mut out);
    out
}

fn lingering_policy() -> EvictionPolicy {
    EvictionPolicy::LingerLonger(LingerLongerConfig {
        initial_estimates: Estimates {
            h: 0.2,
            l: 0.0,
            t_migr: Dur::from_secs(6),
        },
        ..LingerLongerConfig::default()
    })
}

// ----- Immediate-Eviction --------------------------------------------------

#[test]
fn ie_migrates_at_once_when_a_destination_exists() {
    let mut g = placed(EvictionPolicy::from_name("ie").unwrap());
    assert!(g.on_destination(secs(50), true).is_empty());
    assert_eq!(g.on_owner_active(secs(100)), vec![migrate(false)]);
    assert_eq!(g.state(), GuestState::Migrating);
    assert!(!g.violates_owner_priority());
    assert_eq!(g.on_placed(secs(130), false), vec![Action::RunNormal]);
    let t = g.time_in_state(secs(200));
    assert_eq!(t.running, Dur::from_secs(170));
    assert_eq!(t.migrating, Dur::from_secs(30));
    assert_eq!(g.counters().migrations, 1);
}

#[test]
fn ie_without_destination_vacates_or_waits() {
    let mut g = placed(default_ie());
    assert_eq!(g.on_owner_active(secs(100)), vec![vacate(false)]);
    assert_eq!(g.state(), GuestState::Vacated);
    assert_eq!(g.counters().vacates, 1);
    // The image goes home with the job: nothing is lost.
    assert_eq!(g.counters().lost_run_time, Dur::ZERO);
    assert_eq!(g.on_placed(secs(300), false), vec![Action::RunNormal]);
    assert_eq!(g.time_in_state(secs(300)).vacated, Dur::from_secs(200));

    let wait = EvictionPolicy::ImmediateEviction(ImmediateEvictionConfig {
        checkpoint_first: true,
        no_destination: NoDestination::Wait,
    });
    let mut g = placed(wait);
    assert_eq!(g.on_owner_active(secs(100)), vec![Action::Suspend]);
    assert!(g.awaiting_destination());
    assert_eq!(g.next_deadline(), None);
    assert_eq!(g.on_destination(secs(140), true), vec![migrate(true)]);
    // ... or the owner leaves first and the guest resumes in place.
    let mut g = placed(wait);
    g.on_owner_active(secs(100));
    assert_eq!(g.on_owner_idle(secs(400)), vec![Action::Resume]);
    assert_eq!(g.state(), GuestState::Running);
}

fn default_ie() -> EvictionPolicy {
    EvictionPolicy::ImmediateEviction(ImmediateEvictionConfig::default())
}

// ----- Pause-and-Migrate ---------------------------------------------------

#[test]
fn pm_resumes_in_place_after_a_short_episode() {
    let mut g = placed(EvictionPolicy::PauseAndMigrate(
        PauseAndMigrateConfig::default(),
    ));
    g.on_destination(Time::ZERO, true);
    let acts = drive(
        &mut g,
        &[
            (secs(100), LadderEvent::OwnerActive),
            (secs(150), LadderEvent::OwnerIdle),
        ],
        secs(1000),
    );
    assert_eq!(
        acts,
        vec![(secs(100), Action::Suspend), (secs(150), Action::Resume)]
    );
    let t = g.time_in_state(secs(1000));
    assert_eq!(t.suspended, Dur::from_secs(50), "no progress while paused");
    assert_eq!(t.running, Dur::from_secs(950));
}

#[test]
fn pm_migrates_after_the_pause() {
    let cfg = PauseAndMigrateConfig {
        pause: Dur::from_secs(30),
        ..PauseAndMigrateConfig::default()
    };
    let mut g = placed(EvictionPolicy::PauseAndMigrate(cfg));
    g.on_destination(Time::ZERO, true);
    assert_eq!(g.on_owner_active(secs(100)), vec![Action::Suspend]);
    assert_eq!(g.next_deadline(), Some(secs(130)));
    assert!(
        g.on_timer(secs(129)).is_empty(),
        "early timer calls are harmless"
    );
    assert_eq!(g.on_timer(secs(130)), vec![migrate(false)]);
    // Without a destination the default is to vacate to the home queue.
    let mut g = placed(EvictionPolicy::PauseAndMigrate(cfg));
    g.on_owner_active(secs(100));
    assert_eq!(g.on_timer(secs(200)), vec![vacate(false)]);
    // An owner leaving exactly at the end of the pause wins over the timer.
    let mut g = placed(EvictionPolicy::PauseAndMigrate(cfg));
    g.on_owner_active(secs(100));
    assert_eq!(g.on_owner_idle(secs(130)), vec![Action::Resume]);
}

// ----- Linger-Longer -------------------------------------------------------

#[test]
fn ll_episode_shorter_than_linger_time_never_migrates() {
    // h = 0.2, l = 0, T_migr = 6 s: T_lingr = 30 s (spec R1).
    let mut g = placed(lingering_policy());
    g.on_destination(Time::ZERO, true);
    assert_eq!(g.on_owner_active(secs(100)), vec![Action::LowerPriority]);
    assert_eq!(g.state(), GuestState::Lingering);
    assert_eq!(g.next_deadline(), Some(secs(130)));
    let acts = drive(&mut g, &[(secs(129), LadderEvent::OwnerIdle)], secs(1000));
    assert_eq!(acts, vec![(secs(129), Action::RunNormal)]);
    assert_eq!(g.counters().migrations, 0);
    assert_eq!(g.time_in_state(secs(1000)).lingering, Dur::from_secs(29));
}

#[test]
fn ll_migrates_at_linger_time_when_a_node_is_free() {
    let mut g = placed(lingering_policy());
    g.on_destination(Time::ZERO, true);
    let acts = drive(&mut g, &[(secs(100), LadderEvent::OwnerActive)], secs(1000));
    assert_eq!(
        acts,
        vec![
            (secs(100), Action::LowerPriority),
            (secs(130), migrate(false))
        ]
    );
}

#[test]
fn ll_keeps_lingering_without_a_free_node_and_is_reoffered() {
    let mut g = placed(lingering_policy());
    g.on_owner_active(secs(100));
    assert!(g.on_timer(secs(130)).is_empty());
    assert_eq!(g.state(), GuestState::Lingering);
    assert!(g.awaiting_destination());
    assert_eq!(g.next_deadline(), None);
    assert!(g.on_destination(secs(500), false).is_empty());
    assert_eq!(g.on_destination(secs(600), true), vec![migrate(false)]);
    assert_eq!(g.time_in_state(secs(600)).lingering, Dur::from_secs(500));
}

#[test]
fn ll_never_migrates_when_h_le_l() {
    let mut g = placed(lingering_policy());
    g.on_destination(Time::ZERO, true);
    g.on_estimates(
        secs(1),
        Estimates {
            h: 0.3,
            l: 0.3,
            t_migr: Dur::from_secs(6),
        },
    );
    g.on_owner_active(secs(100));
    assert_eq!(g.next_deadline(), None);
    let acts = drive(
        &mut g,
        &[(secs(100_000), LadderEvent::Timer)],
        secs(200_000),
    );
    assert!(acts.is_empty());
    assert_eq!(g.state(), GuestState::Lingering);
}

#[test]
fn ll_recomputes_linger_time_from_the_latest_estimates() {
    let mut g = placed(lingering_policy());
    g.on_destination(Time::ZERO, true);
    g.on_owner_active(secs(100));
    assert_eq!(g.next_deadline(), Some(secs(130)));
    let est = |h: f64| Estimates {
        h,
        l: 0.0,
        t_migr: Dur::from_secs(6),
    };
    // h = 0.5: T_lingr = 12 s, age 10 s: not yet.
    assert!(g.on_estimates(secs(110), est(0.5)).is_empty());
    assert_eq!(g.next_deadline(), Some(secs(112)));
    // h = 0.05: T_lingr = 120 s; the old deadline is gone.
    assert!(g.on_estimates(secs(111), est(0.05)).is_empty());
    assert_eq!(g.next_deadline(), Some(secs(220)));
    // h = 1: T_lingr = 6 s < age 20 s: migrate now.
    assert_eq!(g.on_estimates(secs(120), est(1.0)), vec![migrate(false)]);
}

#[test]
fn ll_near_finished_guard() {
    let policy = EvictionPolicy::LingerLonger(LingerLongerConfig {
        near_finished_guard: true,
        ..match lingering_policy() {
            EvictionPolicy::LingerLonger(c) => c,
            _ => unreachable!(),
        }
    });
    let mut g = placed(policy);
    g.on_destination(Time::ZERO, true);
    // Threshold: 6 s · 0.8 · 1 / 0.2 = 24 s of remaining work.
    g.on_remaining_work(Time::ZERO, Some(Dur::from_secs(20)));
    g.on_owner_active(secs(100));
    assert!(g.on_timer(secs(130)).is_empty(), "nearly done: stay");
    assert!(g.awaiting_destination());
    assert_eq!(
        g.on_remaining_work(secs(140), Some(Dur::from_secs(500))),
        vec![migrate(false)]
    );
}

#[test]
fn ll_may_start_on_a_busy_node() {
    let mut g = EvictionLadder::new(lingering_policy(), Time::ZERO);
    assert_eq!(g.on_placed(secs(5), true), vec![Action::LowerPriority]);
    assert_eq!(g.state(), GuestState::Lingering);
    assert_eq!(g.next_deadline(), Some(secs(35)));
    assert_eq!(g.time_in_state(secs(35)).queued, Dur::from_secs(5));
}

// ----- Linger-Forever ------------------------------------------------------

#[test]
fn lf_lingers_and_never_leaves() {
    let mut g = placed(EvictionPolicy::LingerForever(LingerForeverConfig {}));
    g.on_destination(Time::ZERO, true);
    let mut events = Vec::new();
    for k in 0..20u64 {
        events.push((secs(1000 * k + 100), LadderEvent::OwnerActive));
        events.push((secs(1000 * k + 900), LadderEvent::OwnerIdle));
    }
    let acts = drive(&mut g, &events, secs(30_000));
    assert_eq!(acts.len(), 40);
    for (i, (_, a)) in acts.iter().enumerate() {
        let want = if i % 2 == 0 {
            Action::LowerPriority
        } else {
            Action::RunNormal
        };
        assert_eq!(*a, want);
    }
    assert_eq!(g.next_deadline(), None);
    assert_eq!(
        g.time_in_state(secs(30_000)).lingering,
        Dur::from_secs(16_000)
    );
}

// ----- Condor 1988 ---------------------------------------------------------

#[test]
fn condor_three_minute_burst_causes_no_migration() {
    // Mutka 1988 L841; spec mutka-thesis.md R3.
    let mut g = placed(EvictionPolicy::default());
    g.on_destination(Time::ZERO, true);
    let acts = drive(
        &mut g,
        &[
            (secs(1000), LadderEvent::OwnerActive),
            (secs(1180), LadderEvent::OwnerIdle),
        ],
        secs(5000),
    );
    assert_eq!(
        acts,
        vec![(secs(1000), Action::Suspend), (secs(1180), Action::Resume)]
    );
    assert_eq!(g.counters().migrations + g.counters().vacates, 0);
}

#[test]
fn condor_six_minute_burst_causes_exactly_one_move() {
    for dest in [true, false] {
        let mut g = placed(EvictionPolicy::default());
        g.on_destination(Time::ZERO, dest);
        let acts = drive(
            &mut g,
            &[
                (secs(1000), LadderEvent::OwnerActive),
                (secs(1360), LadderEvent::OwnerIdle),
            ],
            secs(5000),
        );
        let moved = if dest { migrate(true) } else { vacate(true) };
        assert_eq!(
            acts,
            vec![(secs(1000), Action::Suspend), (secs(1300), moved)],
            "destination free: {dest}"
        );
        let c = g.counters();
        assert_eq!(c.migrations + c.vacates, 1);
        assert_eq!(c.checkpoints, 1);
        assert_eq!(c.lost_run_time, Dur::ZERO);
    }
}

#[test]
fn condor_owner_back_at_exactly_five_minutes_keeps_the_job() {
    let mut g = placed(EvictionPolicy::default());
    let acts = drive(
        &mut g,
        &[
            (secs(1000), LadderEvent::OwnerActive),
            (secs(1300), LadderEvent::OwnerIdle),
        ],
        secs(5000),
    );
    assert_eq!(acts.last(), Some(&(secs(1300), Action::Resume)));
}

#[test]
fn condor_grace_is_configurable() {
    let p = EvictionPolicy::Condor1988(Condor1988Config {
        grace: Dur::from_secs(60),
        ..Condor1988Config::default()
    });
    let mut g = placed(p);
    g.on_owner_active(secs(10));
    assert_eq!(g.next_deadline(), Some(secs(70)));
}

// ----- Checkpoint-then-kill -------------------------------------------------

#[test]
fn ctk_checkpoints_periodically_and_kills_on_return() {
    let p = EvictionPolicy::CheckpointThenKill(CheckpointThenKillConfig::default());
    let mut g = placed(p);
    assert_eq!(g.next_deadline(), Some(secs(1800)));
    let acts = drive(
        &mut g,
        &[(secs(4000), LadderEvent::OwnerActive)],
        secs(5000),
    );
    assert_eq!(
        acts,
        vec![
            (secs(1800), Action::Checkpoint),
            (secs(3600), Action::Checkpoint),
            (secs(4000), Action::Kill),
        ]
    );
    assert_eq!(g.state(), GuestState::Killed);
    // Mutka 1988 L841: only the work since the last checkpoint is lost.
    assert_eq!(g.counters().lost_run_time, Dur::from_secs(400));
    assert_eq!(g.counters().checkpoints, 2);
    // Restart elsewhere from the checkpoint; the timer starts again.
    assert_eq!(g.on_placed(secs(4100), false), vec![Action::RunNormal]);
    assert_eq!(g.next_deadline(), Some(secs(5900)));
    assert_eq!(g.time_in_state(secs(4100)).killed, Dur::from_secs(100));
}

#[test]
fn overdue_timers_fire_before_a_later_event() {
    let p = EvictionPolicy::CheckpointThenKill(CheckpointThenKillConfig {
        interval: Dur::from_secs(100),
    });
    let mut g = placed(p);
    // The caller forgot on_timer: the overdue checkpoints collapse into one
    // at the latest due instant (300 s), so the kill loses only 50 s.
    let acts = g.on_owner_active(secs(350));
    assert_eq!(acts, vec![Action::Checkpoint, Action::Kill]);
    assert_eq!(g.counters().lost_run_time, Dur::from_secs(50));
    assert_eq!(g.counters().checkpoints, 1);
    // A deadline equal to the event time loses to the event.
    let mut g = placed(p);
    assert_eq!(
        g.on_owner_active(secs(200)),
        vec![Action::Checkpoint, Action::Kill]
    );
    assert_eq!(g.counters().lost_run_time, Dur::from_secs(100));
}

// ----- configuration ---------------------------------------------------------

#[test]
fn policy_config_serde() {
    for name in EvictionPolicy::NAMES {
        let p = EvictionPolicy::from_name(name).unwrap();
        assert_eq!(p.name(), name);
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(&format!("\"policy\":\"{name}\"")), "{json}");
        let back: EvictionPolicy = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        let minimal: EvictionPolicy =
            serde_json::from_str(&format!("{{\"policy\":\"{name}\"}}")).unwrap();
        assert_eq!(minimal, p, "defaults fill every field");
    }
    let p: EvictionPolicy =
        serde_json::from_str(r#"{"policy":"pause_and_migrate","pause":30000000}"#).unwrap();
    assert_eq!(
        p,
        EvictionPolicy::PauseAndMigrate(PauseAndMigrateConfig {
            pause: Dur::from_secs(30),
            ..PauseAndMigrateConfig::default()
        })
    );
    let p: EvictionPolicy =
        serde_json::from_str(r#"{"policy":"immediate_eviction","no_destination":"wait"}"#).unwrap();
    assert_eq!(
        p,
        EvictionPolicy::ImmediateEviction(ImmediateEvictionConfig {
            checkpoint_first: false,
            no_destination: NoDestination::Wait,
        })
    );
    assert!(
        serde_json::from_str::<EvictionPolicy>(r#"{"policy":"linger_forever","x":1}"#).is_err()
    );
    assert!(
        serde_json::from_str::<EvictionPolicy>(r#"{"policy":"condor1988","grase":1}"#).is_err()
    );
    assert!(serde_json::from_str::<EvictionPolicy>(r#"{"policy":"fifo"}"#).is_err());
    assert_eq!(
        EvictionPolicy::from_name("Linger-Longer"),
        EvictionPolicy::from_name("ll")
    );
    assert_eq!(EvictionPolicy::from_name("nope"), None);
}

#[test]
fn finished_is_terminal() {
    let mut g = placed(EvictionPolicy::default());
    assert!(g.on_finished(secs(10)).is_empty());
    assert!(g.on_owner_active(secs(20)).is_empty());
    assert!(g.on_placed(secs(30), false).is_empty());
    assert_eq!(g.state(), GuestState::Finished);
    assert_eq!(g.time_in_state(secs(100)).total(), Dur::from_secs(10));
}

// ----- property tests --------------------------------------------------------

fn any_policy() -> impl Strategy<Value = EvictionPolicy> {
    let nd = prop_oneof![Just(NoDestination::Vacate), Just(NoDestination::Wait)];
    prop_oneof![
        (any::<bool>(), nd.clone()).prop_map(|(c, n)| EvictionPolicy::ImmediateEviction(
            ImmediateEvictionConfig {
                checkpoint_first: c,
                no_destination: n
            }
        )),
        (0u64..200, any::<bool>(), nd.clone()).prop_map(|(p, c, n)| {
            EvictionPolicy::PauseAndMigrate(PauseAndMigrateConfig {
                pause: Dur::from_secs(p),
                checkpoint_first: c,
                no_destination: n,
            })
        }),
        (any::<bool>(), 0.0f64..1.0, 0.0f64..0.5, 0u64..60).prop_map(|(g, h, l, m)| {
            EvictionPolicy::LingerLonger(LingerLongerConfig {
                checkpoint_first: false,
                near_finished_guard: g,
                initial_estimates: Estimates {
                    h,
                    l,
                    t_migr: Dur::from_secs(m),
                },
            })
        }),
        Just(EvictionPolicy::LingerForever(LingerForeverConfig {})),
        (0u64..600, any::<bool>(), nd).prop_map(|(g, c, n)| {
            EvictionPolicy::Condor1988(Condor1988Config {
                grace: Dur::from_secs(g),
                checkpoint_first: c,
                no_destination: n,
            })
        }),
        (0u64..600).prop_map(
            |i| EvictionPolicy::CheckpointThenKill(CheckpointThenKillConfig {
                interval: Dur::from_secs(i)
            })
        ),
    ]
}

#[derive(Clone, Debug)]
enum Ev {
    Ladder(LadderEvent),
    /// Jump to the next deadline and fire it.
    AtDeadline,
}

fn any_event() -> impl Strategy<Value = Ev> {
    prop_oneof![
        4 => Just(Ev::Ladder(LadderEvent::OwnerActive)),
        4 => Just(Ev::Ladder(LadderEvent::OwnerIdle)),
        2 => any::<bool>().prop_map(|o| Ev::Ladder(LadderEvent::Placed { owner_active: o })),
        2 => Just(Ev::Ladder(LadderEvent::Timer)),
        3 => Just(Ev::AtDeadline),
        2 => any::<bool>().prop_map(|d| Ev::Ladder(LadderEvent::Destination(d))),
        1 => (proptest::num::f64::ANY, 0.0f64..1.0, 0u64..100).prop_map(|(h, l, m)| Ev::Ladder(
            LadderEvent::Estimates(Estimates { h, l, t_migr: Dur::from_secs(m) })
        )),
        1 => proptest::option::of(0u64..1000).prop_map(|w| Ev::Ladder(
            LadderEvent::RemainingWork(w.map(Dur::from_secs))
        )),
        1 => Just(Ev::Ladder(LadderEvent::Requeued)),
    ]
}

/// The guest process as the caller would see it after applying actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proc {
    Absent,
    Starting,
    Normal,
    Low,
    Stopped,
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        rng_seed: RngSeed::Fixed(0x0065_7669_6374),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The guest is never at normal priority while the owner of its node is
    /// active; Linger-Forever never leaves a node; time in state adds up.
    #[test]
    fn never_normal_priority_while_owner_active(
        policy in any_policy(),
        events in proptest::collection::vec((0u64..400, any_event()), 1..200),
    ) {
        let lf = matches!(policy, EvictionPolicy::LingerForever(_));
        let start = Time::from_secs(7);
        let mut g = EvictionLadder::new(policy, start);
        let mut now = start;
        let mut proc = Proc::Absent;
        let mut owner_active = false;
        for (dt, ev) in events {
            now += Dur::from_secs(dt);
            let (acts, ev) = match ev {
                Ev::AtDeadline => {
                    if let Some(d) = g.next_deadline() {
                        now = now.max(d);
                    }
                    (g.on_timer(now), LadderEvent::Timer)
                }
                Ev::Ladder(e) => {
                    let was_off_node = !g.state().on_node();
                    let acts = g.handle(now, e);
                    if let LadderEvent::Placed { owner_active: o } = e
                        && was_off_node
                        && g.state() != GuestState::Finished
                    {
                        owner_active = o;
                        proc = Proc::Starting;
                    }
                    (acts, e)
                }
            };
            match ev {
                LadderEvent::OwnerActive => owner_active = true,
                LadderEvent::OwnerIdle => owner_active = false,
                _ => {}
            }
            let n_acts = acts.len();
            for (i, a) in acts.into_iter().enumerate() {
                if lf {
                    prop_assert!(!a.leaves_node(), "LF left a node: {a:?}");
                }
                match a {
                    Action::RunNormal => {
                        prop_assert!(!owner_active);
                        prop_assert!(matches!(proc, Proc::Starting | Proc::Low), "{proc:?}");
                        proc = Proc::Normal;
                    }
                    Action::LowerPriority => {
                        prop_assert!(matches!(proc, Proc::Starting | Proc::Normal));
                        proc = Proc::Low;
                    }
                    Action::Suspend => {
                        prop_assert!(matches!(proc, Proc::Starting | Proc::Normal));
                        proc = Proc::Stopped;
                    }
                    Action::Resume => {
                        prop_assert!(!owner_active);
                        prop_assert_eq!(proc, Proc::Stopped);
                        proc = Proc::Normal;
                    }
                    Action::Checkpoint => prop_assert!(proc != Proc::Absent),
                    Action::Migrate { .. } | Action::Vacate { .. } | Action::Kill => {
                        prop_assert!(proc != Proc::Absent);
                        proc = Proc::Absent;
                        // An overdue timer fired inside a placement call took
                        // the guest off its old node; the rest of the actions
                        // belong to the new placement.
                        if let LadderEvent::Placed { owner_active: o } = ev
                            && i + 1 < n_acts
                        {
                            proc = Proc::Starting;
                            owner_active = o;
                        }
                    }
                }
            }
            let on_node = g.state().on_node();
            prop_assert!(proc != Proc::Starting, "placement produced no action");
            prop_assert_eq!(on_node, matches!(proc, Proc::Normal | Proc::Low | Proc::Stopped));
            if on_node {
                prop_assert_eq!(g.owner_active(), owner_active);
                prop_assert!(!(owner_active && proc == Proc::Normal));
            }
            prop_assert!(!g.violates_owner_priority());
            if g.state() != GuestState::Finished {
                prop_assert_eq!(g.time_in_state(now).total(), now - start);
            }
            if let Some(d) = g.next_deadline() {
                // A deadline in the past would have fired already; one at
                // `now` only survives a non-timer event.
                if matches!(ev, LadderEvent::Timer) {
                    prop_assert!(d > now, "{d} vs {now}");
                } else {
                    prop_assert!(d >= now, "{d} vs {now}");
                }
            }
        }
        let c = g.counters();
        if lf {
            prop_assert_eq!(c.migrations + c.vacates + c.kills, 0);
        }
        if !matches!(g.policy(), EvictionPolicy::CheckpointThenKill(_)) {
            // Only Mutka's kill loses work; moves carry the image along.
            prop_assert_eq!(c.kills, 0);
            prop_assert_eq!(c.lost_run_time, Dur::ZERO);
        }
    }
}
