//! The job's own hold and release policy, evaluated by the home as
//! HTCondor's schedd does: `on_exit_hold` when the job exits,
//! `periodic_hold` and `periodic_release` every `POLICY_PERIOD` while it
//! waits, runs or is held. The expressions are ClassAds over the job's ad
//! ([`job_ad`]), with HTCondor's attribute names.
//!
//! A hold by policy has `HoldReasonCode` 3 (`JOB_POLICY`) and the job's
//! `..._subcode` as subcode; its reason is the job's `..._reason`, or the
//! expression that fired.

use super::Home;
use super::user_log::{UserEvent, spawn_user_log};
use crate::clock::now;
use crate::queue::JobRecord;
use gleaner_classad::{Ad, EvalContext};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobState, JobStateKind};
use gleaner_proto::wire::hold_code;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often `periodic_hold` and `periodic_release` are evaluated
/// (HTCondor's `PERIODIC_EXPR_INTERVAL` defaults to 60 s; a workstation
/// pool's queues are small).
const POLICY_PERIOD: Duration = Duration::from_secs(10);

/// A hold the job's policy asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PolicyHold {
    pub(crate) reason: String,
    pub(crate) subcode: i32,
}

/// What `periodic_*` asks for a job now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Periodic {
    Hold(PolicyHold),
    Release,
}

fn unix_secs(t: Time) -> i64 {
    i64::try_from(t.as_micros() / 1_000_000).unwrap_or(i64::MAX)
}

/// The job's ClassAd ([`gleaner_proto::job_ad`], HTCondor's names) at
/// `at`, with `exit_code` when the job has just exited.
pub(crate) fn job_ad(r: &JobRecord, exit_code: Option<i32>, at: Time) -> Ad {
    let mut ad = gleaner_proto::job_ad::job_ad(&super::user::info(r), &r.description, &[]);
    ad.insert_int("CurrentTime", unix_secs(at));
    if let Some(c) = exit_code {
        ad.insert_int("ExitCode", i64::from(c));
        ad.insert_bool("ExitBySignal", c < 0);
    }
    ad
}

fn is_true(ctx: &EvalContext, attr: &str) -> bool {
    ctx.eval_attr(attr).as_bool() == Some(true)
}

/// The hold `attr` asks for, if its expression is true.
fn hold_if(
    ad: &Ad,
    at: Time,
    attr: &str,
    reason_attr: &str,
    subcode_attr: &str,
) -> Option<PolicyHold> {
    let ctx = EvalContext::new(unix_secs(at)).with_my(ad);
    if !is_true(&ctx, attr) {
        return None;
    }
    let expr = ad
        .get(attr)
        .map(gleaner_classad::unparse_expr)
        .unwrap_or_default();
    let reason = ctx
        .eval_attr(reason_attr)
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            format!("The job attribute {attr} expression '{expr}' evaluated to TRUE")
        });
    let subcode = ctx.eval_attr(subcode_attr).as_f64().map_or(0, |v| v as i32);
    Some(PolicyHold { reason, subcode })
}

/// `on_exit_hold`, for a job that just exited with `exit_code`.
pub(crate) fn on_exit_hold(r: &JobRecord, exit_code: i32, at: Time) -> Option<PolicyHold> {
    if !r.description.custom_attrs.contains_key("OnExitHold") {
        return None;
    }
    let ad = job_ad(r, Some(exit_code), at);
    hold_if(
        &ad,
        at,
        "OnExitHold",
        "OnExitHoldReason",
        "OnExitHoldSubCode",
    )
}

/// `periodic_release` for a held job, `periodic_hold` for one that waits
/// or runs.
pub(crate) fn periodic(r: &JobRecord, at: Time) -> Option<Periodic> {
    let attrs = &r.description.custom_attrs;
    match r.state.kind() {
        JobStateKind::Held if attrs.contains_key("PeriodicRelease") => {
            let ad = job_ad(r, None, at);
            let ctx = EvalContext::new(unix_secs(at)).with_my(&ad);
            is_true(&ctx, "PeriodicRelease").then_some(Periodic::Release)
        }
        JobStateKind::Idle | JobStateKind::Running | JobStateKind::Suspended
            if attrs.contains_key("PeriodicHold") =>
        {
            let ad = job_ad(r, None, at);
            hold_if(
                &ad,
                at,
                "PeriodicHold",
                "PeriodicHoldReason",
                "PeriodicHoldSubCode",
            )
            .map(Periodic::Hold)
        }
        _ => None,
    }
}

/// Evaluates `periodic_hold`/`periodic_release` of the queue's jobs every
/// `POLICY_PERIOD`.
pub(crate) async fn run_loop(home: Arc<Home>, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(POLICY_PERIOD) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        pass(&home).await;
    }
}

/// One evaluation over the jobs that have a periodic expression.
pub(crate) async fn pass(home: &Arc<Home>) {
    let at = now();
    // The active jobs that have a periodic expression, and only those: a
    // queue of 100 000 plain jobs is not read every pass.
    let jobs = match home
        .queue()
        .active_with_attrs(&["PeriodicHold", "PeriodicRelease"])
    {
        Ok(j) => j,
        Err(e) => {
            tracing::warn!(error = %e, "job policy: cannot read the queue");
            return;
        }
    };
    for r in &jobs {
        match periodic(r, at) {
            Some(Periodic::Release) => {
                let detail = "released by the job's periodic_release";
                if home
                    .queue()
                    .transition(r.id, JobState::Idle, detail, at)
                    .is_ok()
                {
                    tracing::info!(job = %r.id, "periodic_release");
                    let reason = detail.to_string();
                    spawn_user_log(home, r.id, at, UserEvent::Released { reason });
                    home.news.notify_one();
                }
            }
            Some(Periodic::Hold(h)) => {
                let held = JobState::Held {
                    reason: h.reason.clone(),
                };
                let moved = {
                    let mut q = home.queue();
                    q.transition(r.id, held, "held by the job's periodic_hold", at)
                        .and_then(|_| q.set_hold_code(r.id, hold_code::JOB_POLICY, h.subcode))
                };
                if moved.is_ok() {
                    tracing::info!(job = %r.id, reason = %h.reason, "periodic_hold");
                    if matches!(
                        r.state.kind(),
                        JobStateKind::Running | JobStateKind::Suspended
                    ) {
                        super::schedd::spawn_vacate(home, r.id, "held by periodic_hold");
                    }
                    super::runs::retire_run(home, r.id);
                    let event = UserEvent::Held {
                        reason: h.reason.clone(),
                        code: hold_code::JOB_POLICY,
                        subcode: h.subcode,
                    };
                    spawn_user_log(home, r.id, at, event);
                    home.news.notify_one();
                }
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_proto::job::{JobDescription, JobId};

    fn record(state: JobState, attrs: &[(&str, &str)]) -> JobRecord {
        let mut d = JobDescription::new("alice", "/bin/true");
        for (k, v) in attrs {
            d.custom_attrs.insert((*k).into(), (*v).into());
        }
        JobRecord {
            id: JobId::new(4, 1),
            owner: "alice".into(),
            description: d,
            state,
            submitted_at: Time::from_secs(1_000),
            updated_at: Time::from_secs(2_000),
            started_at: Some(Time::from_secs(1_500)),
            finished_at: None,
            run_count: 2,
            host: None,
            start_failures: 0,
            hold_code: None,
            hold_subcode: None,
        }
    }

    #[test]
    fn on_exit_hold_sees_the_exit_code_and_gives_reason_and_subcode() {
        let r = record(
            JobState::Running,
            &[
                ("OnExitHold", "ExitCode != 0"),
                ("OnExitHoldReason", "strcat(\"exit \", ExitCode)"),
                ("OnExitHoldSubCode", "ExitCode"),
            ],
        );
        assert_eq!(on_exit_hold(&r, 0, Time::from_secs(3_000)), None);
        assert_eq!(
            on_exit_hold(&r, 42, Time::from_secs(3_000)),
            Some(PolicyHold {
                reason: "exit 42".into(),
                subcode: 42
            })
        );
        // Without a reason: HTCondor's wording, naming the expression.
        let r = record(JobState::Running, &[("OnExitHold", "ExitCode == 3")]);
        let h = on_exit_hold(&r, 3, Time::from_secs(3_000)).unwrap();
        assert!(h.reason.contains("OnExitHold"), "{h:?}");
        assert_eq!(h.subcode, 0);
        // No expression, no hold.
        assert_eq!(
            on_exit_hold(&record(JobState::Running, &[]), 1, Time::ZERO),
            None
        );
    }

    #[test]
    fn periodic_release_uses_hold_code_and_the_injected_time() {
        let mut r = record(
            JobState::Held {
                reason: "failed to start".into(),
            },
            &[(
                "PeriodicRelease",
                "HoldReasonCode == 6 && NumJobStarts < 5 && CurrentTime - EnteredCurrentStatus > 60",
            )],
        );
        r.hold_code = Some(6);
        r.hold_subcode = Some(7);
        // 30 s after the hold: not yet.
        assert_eq!(periodic(&r, Time::from_secs(2_030)), None);
        assert_eq!(
            periodic(&r, Time::from_secs(2_061)),
            Some(Periodic::Release)
        );
        // A hold of another kind is left alone.
        r.hold_code = Some(1);
        assert_eq!(periodic(&r, Time::from_secs(2_061)), None);
        // A job that is not held is not released.
        let idle = record(JobState::Idle, &[("PeriodicRelease", "true")]);
        assert_eq!(periodic(&idle, Time::from_secs(2_061)), None);
    }

    #[test]
    fn periodic_hold_on_a_waiting_job() {
        let r = record(
            JobState::Idle,
            &[
                ("PeriodicHold", "CurrentTime - QDate > 3600"),
                ("PeriodicHoldSubCode", "9"),
            ],
        );
        assert_eq!(periodic(&r, Time::from_secs(2_000)), None);
        match periodic(&r, Time::from_secs(10_000)) {
            Some(Periodic::Hold(h)) => assert_eq!(h.subcode, 9),
            other => panic!("{other:?}"),
        }
    }
}
