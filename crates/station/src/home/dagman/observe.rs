//! What the queue says about a node's jobs, as the run's events: each
//! job's state now against what the run last heard of it. Comparing
//! states (not reading a log) makes observing idempotent: after a crash
//! the same comparison gives the events not yet taken in.

use crate::queue::JobRecord;
use gleaner_core::dag::run::{Event, Exit, JobChange, Proc};
use gleaner_proto::job::JobState;

/// A job's state as the run counts it.
pub fn proc_of(state: &JobState) -> Proc {
    match state {
        JobState::Idle => Proc::Idle,
        JobState::Running | JobState::Suspended => Proc::Running,
        JobState::Held { .. } => Proc::Held,
        JobState::Completed { exit_code } => Proc::Exited(*exit_code),
        JobState::Removed => Proc::Aborted,
    }
}

fn exit_of(code: i32) -> Exit {
    if code < 0 {
        Exit::Signal(-code)
    } else {
        Exit::Code(code)
    }
}

/// The events that take node `node` from `known` (the run's view of its
/// jobs, by proc) to `now` (the queue's jobs of its cluster).
pub fn events(node: usize, known: &[Proc], now: &[JobRecord]) -> Vec<Event> {
    let mut out = Vec::new();
    for r in now {
        let p = r.id.proc as usize;
        let Some(&old) = known.get(p) else { continue };
        if old.is_done() {
            continue;
        }
        let new = proc_of(&r.state);
        if new == old {
            continue;
        }
        let proc = r.id.proc;
        let mut ev = |change| out.push(Event::Job { node, proc, change });
        // A job seen only once it ended (or was held) still ran.
        let ran = r.started_at.is_some() || r.run_count > 0;
        match new {
            Proc::Running => {
                if old == Proc::Held {
                    ev(JobChange::Released);
                }
                ev(JobChange::Started);
            }
            Proc::Idle => match old {
                Proc::Held => ev(JobChange::Released),
                Proc::Running => ev(JobChange::Evicted),
                _ => {}
            },
            Proc::Held => ev(JobChange::Held),
            Proc::Exited(code) => {
                if old != Proc::Running && ran {
                    if old == Proc::Held {
                        ev(JobChange::Released);
                    }
                    ev(JobChange::Started);
                }
                ev(JobChange::Ended(exit_of(code)));
            }
            Proc::Aborted => ev(JobChange::Aborted),
        }
    }
    out
}
