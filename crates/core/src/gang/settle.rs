//! A running gang as its home sees it: each member's state in the home's
//! queue and which members the home suspended itself; [`settle`] says what
//! the home does now. The home calls it after every report of a member,
//! at start (a restart resends what may not have arrived) and from time to
//! time, so that what it holds is rebuilt from durable state alone and a
//! home killed at any moment does the right thing when it comes back.
//!
//! What a member's owner coming back does to the gang is
//! [`GangPolicy::member_left`] (Ryu & Hollingsworth §7,
//! seeds/002_34f613b0a80e1e58.txt L286): LL-k suspends or vacates the whole
//! gang (`on_eviction`); reconfiguration shrinks it to the remaining idle
//! members (shaped, at least `min`), else suspends or vacates it.
//!
//! A run that ends without rank 0's exit (vacated) is no result: as in
//! HTCondor's parallel universe, where the job is one job and a node
//! evicted sends the whole job back to the queue to start again on all its
//! nodes (`ParallelShadow::shutDownLogic` kills every node still running
//! and the job is requeued whole), the members that exited before rank 0
//! in that run go back to the queue with the others ([`Plan::reopen`]).

use super::{GangAction, GangPolicy, NodeView};
use std::collections::BTreeMap;

/// A member of the gang's current run, as its home's queue has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member {
    /// Running on its host.
    Running,
    /// Stopped on its host: by its own owner's ladder, or by its home with
    /// the gang (a [`Hold`] says which).
    Suspended,
    /// Back in the queue: it left its host (evicted, vacated, its host
    /// lost) or never reached it.
    Idle,
    /// Exited (completed) before rank 0: out of this run, which goes on
    /// without it; back in the queue if the run ends without rank 0's
    /// exit ([`Plan::reopen`]).
    Exited,
    /// Out of the run for good: held or removed.
    Done,
}

impl Member {
    fn on_host(self) -> bool {
        matches!(self, Member::Running | Member::Suspended)
    }
}

/// A member its home suspended with its gang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Held: its host keeps it stopped until the home releases it.
    Held,
    /// Released; the home waits for its host's report that it runs.
    Releasing,
}

/// Why every member of a gang leaves its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VacateWhy {
    /// A member is back in the queue while others still run: the gang
    /// cannot go on without it, and is placed again whole.
    MemberLeft,
    /// A member's owner is back and `on_eviction = vacate`.
    OwnerBack,
    /// Reconfiguration: a member's owner is back, and the gang restarts on
    /// the idle nodes (here `members` of them remain; the placement may
    /// add free ones).
    Reconfigure { members: u32 },
}

/// What the home does now. Ranks are the members' ranks in the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Mark these [`Hold::Held`] and ask their hosts to hold them.
    pub hold: Vec<u32>,
    /// Mark these [`Hold::Releasing`] and ask their hosts to release them.
    pub release: Vec<u32>,
    /// Drop these members' marks (released and running again, or off
    /// their hosts).
    pub forget: Vec<u32>,
    /// Every member still on its host leaves it (checkpointing where the
    /// job checkpoints); the job waits in the queue to be placed again.
    pub vacate: Option<VacateWhy>,
    /// No member is on a host any more: the run is over (its marks go).
    pub ended: bool,
    /// With `ended`, when rank 0 is back in the queue (the run was
    /// vacated, not finished): these members, which exited before rank 0
    /// in it, go back to the queue too, so that the job runs again whole
    /// from the start.
    pub reopen: Vec<u32>,
}

/// What the home does with the gang run `run` (member `r` at index `r`)
/// of `policy`, given the members it suspended (`holds`). With `resend`
/// (at start, or when a request may have been lost) the holds and
/// releases already decided are asked for again: hosts take them
/// idempotently.
pub fn settle(
    policy: &GangPolicy,
    run: &[Member],
    holds: &BTreeMap<u32, Hold>,
    resend: bool,
) -> Plan {
    let member = |r: u32| run.get(r as usize).copied().unwrap_or(Member::Done);
    let mut plan = Plan {
        forget: holds
            .iter()
            .filter(|(r, h)| {
                let m = member(**r);
                !m.on_host() || (**h == Hold::Releasing && m == Member::Running)
            })
            .map(|(r, _)| *r)
            .collect(),
        ..Plan::default()
    };
    let ranks = || (0..run.len()).filter_map(|r| u32::try_from(r).ok());
    let on_host: Vec<u32> = ranks().filter(|r| member(*r).on_host()).collect();
    if on_host.is_empty() {
        plan.forget = holds.keys().copied().collect();
        plan.ended = true;
        if member(0) == Member::Idle {
            plan.reopen = ranks().filter(|r| member(*r) == Member::Exited).collect();
        }
        return plan;
    }
    if run.contains(&Member::Idle) {
        plan.vacate = Some(VacateWhy::MemberLeft);
        return plan;
    }
    // A member stopped on its host that its home did not hold: its own
    // owner is back.
    let back: Vec<u32> = on_host
        .iter()
        .copied()
        .filter(|r| member(*r) == Member::Suspended && !holds.contains_key(r))
        .collect();
    let marked = |want: Hold| -> Vec<u32> {
        holds
            .iter()
            .filter(|(r, h)| **h == want && member(**r).on_host())
            .map(|(r, _)| *r)
            .collect()
    };
    let Some(&first) = back.first() else {
        // Every owner is gone: the members held go on.
        plan.release = marked(Hold::Held);
        if resend {
            plan.release.extend(
                marked(Hold::Releasing)
                    .into_iter()
                    .filter(|r| member(*r) == Member::Suspended),
            );
            plan.release.sort_unstable();
        }
        return plan;
    };
    // The core's rule, on the members' nodes: idle unless their owner is
    // back. A home sees no free node of the pool; the placement that
    // follows a vacate takes any.
    let nodes: Vec<NodeView> = on_host
        .iter()
        .map(|&r| NodeView {
            id: r,
            idle: !back.contains(&r),
            utilisation: 0.0,
            busy: false,
        })
        .collect();
    match policy.member_left(&on_host, first, &nodes) {
        GangAction::Suspend => {
            plan.hold = on_host
                .iter()
                .copied()
                .filter(|r| !back.contains(r))
                // Asked again where the hold may not have arrived (resend),
                // or did not keep the member stopped: a release that
                // overtook it (a member released with the others, then
                // held again when a released member's own owner turns out
                // to be back, `home::gang`).
                .filter(|r| {
                    resend || holds.get(r) != Some(&Hold::Held) || member(*r) == Member::Running
                })
                .collect();
            plan.forget.retain(|r| !plan.hold.contains(r));
        }
        GangAction::Shrink { nodes } => {
            plan.vacate = Some(VacateWhy::Reconfigure {
                members: u32::try_from(nodes.len()).unwrap_or(u32::MAX),
            });
        }
        GangAction::Vacate | GangAction::Move { .. } => {
            plan.vacate = Some(VacateWhy::OwnerBack);
        }
        // Not reached: a member's ladder has ruled already.
        GangAction::Linger => {}
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gang::{OnEviction, Shape};
    use Member::{Done, Exited, Idle, Running, Suspended};
    use proptest::prelude::*;

    fn ll(on_eviction: OnEviction) -> GangPolicy {
        GangPolicy::LingerK {
            k: 3,
            linger_limit: 1.0,
            on_eviction,
        }
    }

    fn reconf(min: u32, shape: Shape, on_eviction: OnEviction) -> GangPolicy {
        GangPolicy::Reconfigure {
            max: 4,
            min,
            shape,
            on_eviction,
        }
    }

    fn holds(v: &[(u32, Hold)]) -> BTreeMap<u32, Hold> {
        v.iter().copied().collect()
    }

    #[test]
    fn an_owner_back_holds_the_others_until_it_leaves() {
        let p = ll(OnEviction::Suspend);
        let none = holds(&[]);
        // Member 1's ladder suspended it: hold 0 and 2.
        let plan = settle(&p, &[Running, Suspended, Running], &none, false);
        assert_eq!(plan.hold, vec![0, 2]);
        assert_eq!(plan.vacate, None);
        // Their hosts' echo: nothing more to do.
        let h = holds(&[(0, Hold::Held), (2, Hold::Held)]);
        let plan = settle(&p, &[Suspended, Suspended, Suspended], &h, false);
        assert_eq!(plan, Plan::default());
        // Resent at a restart.
        let plan = settle(&p, &[Suspended, Suspended, Suspended], &h, true);
        assert_eq!(plan.hold, vec![0, 2]);
        // The owner leaves: member 1 runs, 0 and 2 are released.
        let plan = settle(&p, &[Suspended, Running, Suspended], &h, false);
        assert_eq!(plan.release, vec![0, 2]);
        // Their echo drops the marks.
        let r = holds(&[(0, Hold::Releasing), (2, Hold::Releasing)]);
        let plan = settle(&p, &[Running, Running, Suspended], &r, false);
        assert_eq!(plan.forget, vec![0]);
        assert!(plan.release.is_empty());
        // ... unless lost in a restart: released again.
        let plan = settle(&p, &[Running, Running, Suspended], &r, true);
        assert_eq!(plan.release, vec![2]);
    }

    #[test]
    fn a_released_member_whose_own_owner_is_back_holds_the_gang_again() {
        let p = ll(OnEviction::Suspend);
        // Member 1's owner is back: 0 and 2 are held. Then 2's own owner
        // returns too, and 1's leaves: the home releases 0 and 2.
        let h = holds(&[(0, Hold::Held), (2, Hold::Held)]);
        let plan = settle(&p, &[Suspended, Running, Suspended], &h, false);
        assert_eq!(plan.release, vec![0, 2]);
        // 2's host answers that 2's own ladder keeps it stopped: its mark
        // goes, and 2 is a member whose owner is back like any other. 0
        // runs (released) and 1 runs: both are held again.
        let h = holds(&[(0, Hold::Releasing)]);
        let plan = settle(&p, &[Running, Running, Suspended], &h, false);
        assert_eq!(plan.hold, vec![0, 1]);
        assert!(plan.release.is_empty() && !plan.forget.contains(&0));
        // A hold the release overtook (marked held, yet running): asked
        // again; one that took effect is not.
        let h = holds(&[(0, Hold::Held), (1, Hold::Held)]);
        let plan = settle(&p, &[Running, Suspended, Suspended], &h, false);
        assert_eq!(plan.hold, vec![0]);
        // 2's owner leaves: 2 runs, 0 and 1 are released.
        let plan = settle(&p, &[Suspended, Suspended, Running], &h, false);
        assert_eq!(plan.release, vec![0, 1]);
    }

    #[test]
    fn vacate_and_a_member_that_left_send_the_gang_back() {
        let none = holds(&[]);
        let plan = settle(
            &ll(OnEviction::Vacate),
            &[Running, Suspended, Running],
            &none,
            false,
        );
        assert_eq!(plan.vacate, Some(VacateWhy::OwnerBack));
        let plan = settle(
            &ll(OnEviction::Suspend),
            &[Running, Idle, Running],
            &none,
            false,
        );
        assert_eq!(plan.vacate, Some(VacateWhy::MemberLeft));
        // All off their hosts: the run is over; a member that exited
        // before rank 0 does not stop the others.
        let h = holds(&[(2, Hold::Held)]);
        let plan = settle(&ll(OnEviction::Suspend), &[Idle, Idle, Idle], &h, false);
        assert!(plan.ended && plan.forget == vec![2] && plan.vacate.is_none());
        for gone in [Done, Exited] {
            let plan = settle(
                &ll(OnEviction::Suspend),
                &[Running, gone, Running],
                &none,
                false,
            );
            assert_eq!(plan, Plan::default());
        }
    }

    #[test]
    fn a_vacated_run_sends_the_members_that_exited_early_back_too() {
        let none = holds(&[]);
        let p = ll(OnEviction::Vacate);
        // Member 1 exited before rank 0; member 2's owner is back.
        let plan = settle(&p, &[Running, Exited, Suspended], &none, false);
        assert_eq!(plan.vacate, Some(VacateWhy::OwnerBack));
        assert!(plan.reopen.is_empty() && !plan.ended);
        // Rank 0 and 2 are back in the queue: 1 goes back with them.
        let plan = settle(&p, &[Idle, Exited, Idle], &none, false);
        assert!(plan.ended);
        assert_eq!(plan.reopen, vec![1]);
        // The job ended (rank 0 exited): nothing runs again.
        let plan = settle(&p, &[Exited, Exited, Idle], &none, false);
        assert!(plan.ended && plan.reopen.is_empty());
        // Removed or held with the job: nothing runs again either.
        let plan = settle(&p, &[Done, Exited, Done], &none, false);
        assert!(plan.ended && plan.reopen.is_empty());
    }

    #[test]
    fn reconfiguration_shrinks_to_the_remaining_idle_members() {
        let none = holds(&[]);
        // 3 members, one owner back: 2 remain idle.
        let p = reconf(1, Shape::Any, OnEviction::Suspend);
        let plan = settle(&p, &[Running, Running, Suspended], &none, false);
        assert_eq!(plan.vacate, Some(VacateWhy::Reconfigure { members: 2 }));
        // Powers of two: 3 remaining → 2.
        let p = reconf(1, Shape::PowerOfTwo, OnEviction::Suspend);
        let plan = settle(&p, &[Running, Suspended, Running, Running], &none, false);
        assert_eq!(plan.vacate, Some(VacateWhy::Reconfigure { members: 2 }));
        // Below gang_min: suspended (or vacated) whole.
        let p = reconf(3, Shape::Any, OnEviction::Suspend);
        let plan = settle(&p, &[Running, Running, Suspended], &none, false);
        assert_eq!((plan.hold, plan.vacate), (vec![0, 1], None));
        let p = reconf(3, Shape::Any, OnEviction::Vacate);
        let plan = settle(&p, &[Running, Running, Suspended], &none, false);
        assert_eq!(plan.vacate, Some(VacateWhy::OwnerBack));
    }

    fn member() -> impl Strategy<Value = Member> {
        prop_oneof![
            Just(Running),
            Just(Suspended),
            Just(Idle),
            Just(Exited),
            Just(Done)
        ]
    }

    fn hold() -> impl Strategy<Value = Option<Hold>> {
        prop_oneof![
            Just(None),
            Just(Some(Hold::Held)),
            Just(Some(Hold::Releasing))
        ]
    }

    fn policy() -> impl Strategy<Value = GangPolicy> {
        (any::<bool>(), 1u32..4, any::<bool>()).prop_map(|(re, min, vacate)| {
            let on_eviction = if vacate {
                OnEviction::Vacate
            } else {
                OnEviction::Suspend
            };
            if re {
                reconf(min, Shape::Any, on_eviction)
            } else {
                ll(on_eviction)
            }
        })
    }

    proptest! {
        /// Whatever the members' states and marks: a member whose own
        /// owner is back is never held nor released by its home; the home
        /// holds only members on their hosts and releases only members it
        /// held; it never holds and releases at once, nor holds or
        /// releases a gang it vacates; a run with nobody on a host is over
        /// and keeps no mark; LL-k never reconfigures.
        #[test]
        fn plans_are_consistent(
            p in policy(),
            run in proptest::collection::vec(member(), 1..6),
            marks in proptest::collection::vec(hold(), 6),
            resend in any::<bool>(),
        ) {
            let h: BTreeMap<u32, Hold> = marks
                .iter()
                .enumerate()
                .filter_map(|(r, m)| m.map(|m| (r as u32, m)))
                .collect();
            let plan = settle(&p, &run, &h, resend);
            let state = |r: u32| run.get(r as usize).copied().unwrap_or(Done);
            let back = |r: u32| state(r) == Suspended && !h.contains_key(&r);
            for r in &plan.hold {
                prop_assert!(state(*r).on_host() && !back(*r));
                prop_assert!(!plan.forget.contains(r));
            }
            for r in &plan.release {
                prop_assert!(h.contains_key(r) && state(*r).on_host());
            }
            prop_assert!(plan.hold.is_empty() || plan.release.is_empty());
            if plan.vacate.is_some() {
                prop_assert!(plan.hold.is_empty() && plan.release.is_empty());
            }
            let anyone = run.iter().any(|m| m.on_host());
            prop_assert_eq!(plan.ended, !anyone);
            if plan.ended {
                prop_assert_eq!(plan.forget.len(), h.len());
            }
            // Only a vacated run (rank 0 back in the queue) sends members
            // back, and exactly those that exited early: the job then runs
            // again with every member of the run.
            if plan.ended && state(0) == Idle {
                let exited: Vec<u32> = (0..run.len() as u32).filter(|r| state(*r) == Exited).collect();
                prop_assert_eq!(&plan.reopen, &exited);
            } else {
                prop_assert!(plan.reopen.is_empty());
            }
            if !plan.release.is_empty() {
                prop_assert!(!(0..run.len() as u32).any(back));
            }
            if let GangPolicy::LingerK { .. } = p {
                let reconfigured = matches!(plan.vacate, Some(VacateWhy::Reconfigure { .. }));
                prop_assert!(!reconfigured);
            }
            if let Some(VacateWhy::Reconfigure { members }) = plan.vacate {
                prop_assert!(p.runs_on(members));
            }
        }
    }
}
