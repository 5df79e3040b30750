//! Deferred and CronTab jobs at their home (HTCondor manual, "Time
//! Scheduling for Job Execution"; the rules in `gleaner_core::cron`).
//!
//! The queue keeps each such job's `DeferralTime` (`not_before`) and the
//! time it may be matched from (`match_from`, `DeferralPrepTime` earlier):
//! an idle job is offered to the pool only from then on
//! (`JobQueue::matchable_idle_ids`), and the host starts the program at
//! the deferral time, not before (`host::starter::run::deferral`). This
//! loop, once a second, tells the coordinator when a job becomes
//! matchable, and acts on one still waiting in the queue after its
//! window: a cron job moves to its schedule's next time (it "must wait
//! for the next execution time"), any other is held with
//! `HoldReasonCode` 20, as HTCondor holds a job that missed its deferred
//! execution time.

use super::Home;
use super::user_log::{UserEvent, spawn_user_log};
use crate::clock::now;
use crate::queue::JobRecord;
use crate::schedule::{cron_spec, next_cron_start, window_secs};
use gleaner_core::cron::{Deferral, deferral};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobState};
use gleaner_proto::wire::hold_code;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often the waiting jobs are looked at.
const PERIOD: Duration = Duration::from_secs(1);

fn secs(t: Time) -> i64 {
    i64::try_from(t.as_micros() / 1_000_000).unwrap_or(i64::MAX)
}

/// The description a job is placed with: a deferred or cron job carries
/// its computed `DeferralTime` in seconds, which its host waits for.
pub(crate) fn placed_description(job: &JobRecord) -> JobDescription {
    let mut d = job.description.clone();
    if let Some(t) = job.not_before {
        d.custom_attrs
            .insert("DeferralTime".into(), secs(t).to_string());
    }
    d
}

/// What the loop does with one waiting job now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing.
    Wait,
    /// It became matchable since the last pass: tell the coordinator.
    Announce,
    /// A cron job that missed its window: its next time.
    Reschedule(crate::schedule::Start),
    /// Missed: hold it, with this reason.
    Hold(String),
}

/// Decides for one idle job with a start time, at `now`, the last pass
/// having been at `last`.
pub(crate) fn step(r: &JobRecord, now: Time, last: Time) -> Step {
    let Some(at) = r.not_before else {
        return Step::Wait;
    };
    let window = window_secs(&r.description);
    match deferral(secs(now), secs(at), window) {
        Deferral::Missed => {
            if cron_spec(&r.description).is_some() {
                match next_cron_start(&r.description, now) {
                    Some(s) => Step::Reschedule(s),
                    None => Step::Hold("its cron schedule has no next time".into()),
                }
            } else {
                Step::Hold(format!(
                    "Job missed its deferred execution time: it was not matched by {} s after \
                     its DeferralTime (deferral_window)",
                    window
                ))
            }
        }
        _ => match r.match_from {
            Some(m) if m > last && m <= now => Step::Announce,
            _ => Step::Wait,
        },
    }
}

/// Runs the loop until shutdown.
pub(crate) async fn run_loop(home: Arc<Home>, mut shutdown: watch::Receiver<bool>) {
    let mut last = now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PERIOD) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        let at = now();
        pass(&home, at, last);
        last = at;
    }
}

fn pass(home: &Arc<Home>, at: Time, last: Time) {
    let waiting = match home.queue().scheduled_idle() {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "timing: cannot read the waiting jobs");
            return;
        }
    };
    let placing = home.remote.placing();
    let mut news = false;
    for r in waiting.iter().filter(|r| !placing.contains(&r.id)) {
        match step(r, at, last) {
            Step::Wait => {}
            Step::Announce => news = true,
            Step::Reschedule(s) => {
                if let Err(e) = home.queue().set_schedule(r.id, Some(s)) {
                    tracing::warn!(job = %r.id, error = %e, "cannot reschedule a cron job");
                } else {
                    tracing::info!(job = %r.id, at = secs(s.at), "cron job missed its window; next run scheduled");
                }
            }
            Step::Hold(reason) => {
                let code = hold_code::MISSED_DEFERRED_EXECUTION_TIME;
                let held = {
                    let mut q = home.queue();
                    q.transition(
                        r.id,
                        JobState::Held {
                            reason: reason.clone(),
                        },
                        &reason,
                        at,
                    )
                    .and_then(|_| q.set_hold_code(r.id, code, 0))
                };
                if held.is_ok() {
                    tracing::info!(job = %r.id, "deferred job missed its window: held");
                    let ev = UserEvent::Held {
                        reason,
                        code,
                        subcode: 0,
                    };
                    spawn_user_log(home, r.id, at, ev);
                    news = true;
                }
            }
        }
    }
    if news {
        home.news.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_proto::job::JobId;

    fn record(attrs: &[(&str, &str)], not_before: u64, match_from: u64) -> JobRecord {
        let mut d = JobDescription::new("alice", "/bin/true");
        for (k, v) in attrs {
            d.custom_attrs.insert((*k).into(), (*v).into());
        }
        JobRecord {
            id: JobId::new(1, 0),
            owner: "alice".into(),
            description: d,
            state: JobState::Idle,
            submitted_at: Time::from_secs(1_000),
            updated_at: Time::from_secs(1_000),
            started_at: None,
            finished_at: None,
            run_count: 0,
            host: None,
            start_failures: 0,
            hold_code: None,
            hold_subcode: None,
            completions: 0,
            not_before: Some(Time::from_secs(not_before)),
            match_from: Some(Time::from_secs(match_from)),
        }
    }

    #[test]
    fn announced_once_when_matchable_then_held_after_the_window() {
        let r = record(&[("DeferralWindow", "30")], 2_000, 1_700);
        let t = Time::from_secs;
        assert_eq!(step(&r, t(1_600), t(1_599)), Step::Wait);
        assert_eq!(step(&r, t(1_700), t(1_699)), Step::Announce);
        assert_eq!(step(&r, t(1_701), t(1_700)), Step::Wait);
        assert_eq!(step(&r, t(2_030), t(2_029)), Step::Wait);
        assert!(matches!(step(&r, t(2_031), t(2_030)), Step::Hold(_)));
    }

    #[test]
    fn a_cron_job_that_missed_its_window_waits_for_the_next_time() {
        let r = record(&[("CronMinute", "\"*\"")], 2_000, 2_000);
        match step(&r, Time::from_secs(2_100), Time::from_secs(2_099)) {
            Step::Reschedule(s) => assert!(s.at > Time::from_secs(2_100)),
            other => panic!("{other:?}"),
        }
    }
}
