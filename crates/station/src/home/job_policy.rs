//! The job's own policy, evaluated by the home as HTCondor's schedd does:
//! `on_exit_hold` and `on_exit_remove` when the job exits (the latter
//! composed by the submit file's `max_retries`, `retry_until` and
//! `success_exit_code`); `periodic_hold`, `periodic_remove`,
//! `periodic_vacate`, `allowed_job_duration` and
//! `allowed_execute_duration` every `POLICY_PERIOD` while it waits or
//! runs, `periodic_release` and `periodic_remove` while it is held. The
//! expressions are ClassAds over the job's ad ([`job_ad`]), with
//! HTCondor's attribute names.
//!
//! A hold by policy has `HoldReasonCode` 3 (`JOB_POLICY`) and the job's
//! `..._subcode` as subcode; its reason is the job's `..._reason`, or the
//! expression that fired. A job over its allowed duration is held with
//! code 46 (47 for the execute duration), as in HTCondor.

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
    /// A hold with its own `HoldReasonCode` (an allowed duration).
    HoldCode(PolicyHold, u32),
    Release,
    /// `periodic_remove`: the reason.
    Remove(String),
    /// `periodic_vacate`: back to the queue.
    Vacate(String),
}

/// What becomes of a job that just exited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OnExit {
    /// Completed: it leaves the queue.
    Complete,
    /// Held by `on_exit_hold`.
    Hold(PolicyHold),
    /// Back to the queue: `on_exit_remove` is false (a retry, a cron job's
    /// next run); the reason in HTCondor's words.
    Requeue(String),
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
        // As HTCondor: a job killed by a signal has ExitSignal, not an
        // ExitCode; the exit being judged counts as a completion.
        ad.insert_bool("ExitBySignal", c < 0);
        if c >= 0 {
            ad.insert_int("ExitCode", i64::from(c));
        } else {
            ad.remove("ExitCode");
            ad.insert_int("ExitSignal", i64::from(c.unsigned_abs()));
        }
        ad.insert_int("NumJobCompletions", i64::from(r.completions) + 1);
    }
    ad
}

/// True if `attr` evaluates to false (or 0): an undefined `on_exit_remove`
/// removes the job, as HTCondor's default does.
fn is_false(ctx: &EvalContext, attr: &str) -> bool {
    let v = ctx.eval_attr(attr);
    v.as_bool() == Some(false) || (v.as_bool().is_none() && v.as_f64() == Some(0.0))
}

/// `on_exit_hold`, then `on_exit_remove`, for a job that just exited with
/// `exit_code` (negative: killed by that signal).
pub(crate) fn on_exit(r: &JobRecord, exit_code: i32, at: Time) -> OnExit {
    if let Some(h) = on_exit_hold(r, exit_code, at) {
        return OnExit::Hold(h);
    }
    if !r.description.custom_attrs.contains_key("OnExitRemove") {
        return OnExit::Complete;
    }
    let ad = job_ad(r, Some(exit_code), at);
    let ctx = EvalContext::new(unix_secs(at)).with_my(&ad);
    if !is_false(&ctx, "OnExitRemove") {
        return OnExit::Complete;
    }
    let expr = ad
        .get("OnExitRemove")
        .map(gleaner_classad::unparse_expr)
        .unwrap_or_default();
    let mut why = format!("The OnExitRemove expression '{expr}' evaluated to FALSE");
    if let Some(max) = r.description.max_retries {
        why.push_str(&format!(
            " (exit {} of at most {})",
            r.completions + 1,
            u64::from(max) + 1
        ));
    }
    OnExit::Requeue(why)
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

/// The periodic expressions, in HTCondor's order: `periodic_remove`
/// first, then `periodic_hold` (and the allowed durations) for a job that
/// waits or runs, `periodic_release` for a held one, `periodic_vacate`
/// for a running one.
pub(crate) fn periodic(r: &JobRecord, at: Time) -> Option<Periodic> {
    const ATTRS: [&str; 6] = [
        "PeriodicRemove",
        "PeriodicHold",
        "PeriodicRelease",
        "PeriodicVacate",
        "AllowedJobDuration",
        "AllowedExecuteDuration",
    ];
    let attrs = &r.description.custom_attrs;
    if !ATTRS.iter().any(|a| attrs.contains_key(*a)) {
        return None;
    }
    let ad = job_ad(r, None, at);
    let ctx = EvalContext::new(unix_secs(at)).with_my(&ad);
    let kind = r.state.kind();
    if kind.is_terminal() {
        return None;
    }
    if is_true(&ctx, "PeriodicRemove") {
        let expr = ad
            .get("PeriodicRemove")
            .map(gleaner_classad::unparse_expr)
            .unwrap_or_default();
        return Some(Periodic::Remove(format!(
            "The job attribute PeriodicRemove expression '{expr}' evaluated to TRUE"
        )));
    }
    match kind {
        JobStateKind::Held => is_true(&ctx, "PeriodicRelease").then_some(Periodic::Release),
        JobStateKind::Idle | JobStateKind::Running | JobStateKind::Suspended => {
            if let Some(h) = hold_if(
                &ad,
                at,
                "PeriodicHold",
                "PeriodicHoldReason",
                "PeriodicHoldSubCode",
            ) {
                return Some(Periodic::Hold(h));
            }
            if kind != JobStateKind::Idle
                && let Some(h) = over_duration(r, &ctx, at)
            {
                return Some(h);
            }
            (kind != JobStateKind::Idle && is_true(&ctx, "PeriodicVacate")).then(|| {
                Periodic::Vacate("The job attribute PeriodicVacate evaluated to TRUE".into())
            })
        }
        _ => None,
    }
}

/// A running job past `allowed_job_duration` (since this run's start) or
/// `allowed_execute_duration` (the same, as Gleaner does not time the
/// transfers apart): held with HTCondor's codes 46 and 47.
fn over_duration(r: &JobRecord, ctx: &EvalContext, at: Time) -> Option<Periodic> {
    let started = r.started_at?;
    let ran = unix_secs(at).saturating_sub(unix_secs(started));
    for (attr, code) in [
        ("AllowedJobDuration", hold_code::JOB_DURATION_EXCEEDED),
        ("AllowedExecuteDuration", hold_code::JOB_EXECUTE_EXCEEDED),
    ] {
        let Some(limit) = ctx.eval_attr(attr).as_f64() else {
            continue;
        };
        if ran as f64 > limit {
            let h = PolicyHold {
                reason: format!("The job exceeded its {attr} of {limit} seconds"),
                subcode: 0,
            };
            return Some(Periodic::HoldCode(h, code));
        }
    }
    None
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

/// Removes `r` for its `periodic_remove` (a running job is killed as
/// `glean rm` kills it).
fn periodic_remove(home: &Arc<Home>, r: &JobRecord, reason: String, at: Time) {
    let removed = home
        .queue()
        .transition(r.id, JobState::Removed, &reason, at);
    if removed.is_err() {
        return;
    }
    tracing::info!(job = %r.id, "periodic_remove");
    if matches!(
        r.state.kind(),
        JobStateKind::Running | JobStateKind::Suspended
    ) {
        super::schedd::spawn_vacate_as(home, r.id, &reason, "remove");
        super::runs::retire_run(home, r.id);
    }
    spawn_user_log(home, r.id, at, UserEvent::Aborted { reason });
    home.news.notify_one();
}

/// Holds `r` for its policy with `code`.
fn policy_hold(home: &Arc<Home>, r: &JobRecord, h: &PolicyHold, code: u32, at: Time) {
    let held = JobState::Held {
        reason: h.reason.clone(),
    };
    let moved = {
        let mut q = home.queue();
        q.transition(r.id, held, "held by the job's policy", at)
            .and_then(|_| q.set_hold_code(r.id, code, h.subcode))
    };
    if moved.is_ok() {
        tracing::info!(job = %r.id, reason = %h.reason, code, "job policy hold");
        if matches!(
            r.state.kind(),
            JobStateKind::Running | JobStateKind::Suspended
        ) {
            super::schedd::spawn_vacate_as(home, r.id, "held by its policy", "hold");
        }
        super::runs::retire_run(home, r.id);
        let event = UserEvent::Held {
            reason: h.reason.clone(),
            code,
            subcode: h.subcode,
        };
        spawn_user_log(home, r.id, at, event);
        home.news.notify_one();
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
            Some(Periodic::Hold(h)) => policy_hold(home, r, &h, hold_code::JOB_POLICY, at),
            Some(Periodic::HoldCode(h, code)) => policy_hold(home, r, &h, code, at),
            Some(Periodic::Remove(reason)) => periodic_remove(home, r, reason, at),
            Some(Periodic::Vacate(reason)) => {
                // The host reports the eviction and the job goes back to
                // the queue then, as for any vacate.
                tracing::info!(job = %r.id, "periodic_vacate");
                super::schedd::spawn_vacate(home, r.id, &reason);
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
            completions: 0,
            not_before: None,
            match_from: None,
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
    fn on_exit_remove_requeues_until_the_retries_are_spent() {
        // What the submit file's max_retries = 2 makes (HTCondor's form).
        let mut r = record(
            JobState::Running,
            &[
                (
                    "OnExitRemove",
                    "NumJobCompletions > JobMaxRetries || ExitCode is 0",
                ),
                ("OnExitHold", "false"),
            ],
        );
        r.description.max_retries = Some(2);
        let at = Time::from_secs(3_000);
        assert_eq!(on_exit(&r, 0, at), OnExit::Complete);
        match on_exit(&r, 1, at) {
            OnExit::Requeue(why) => assert!(why.contains("exit 1 of at most 3"), "{why}"),
            other => panic!("{other:?}"),
        }
        r.completions = 2;
        assert_eq!(on_exit(&r, 1, at), OnExit::Complete, "third exit: spent");
        // Killed by a signal: no ExitCode, so not a success; retried.
        r.completions = 0;
        assert!(matches!(on_exit(&r, -9, at), OnExit::Requeue(_)));
        // on_exit_hold comes first.
        r.description
            .custom_attrs
            .insert("OnExitHold".into(), "ExitCode == 1".into());
        assert!(matches!(on_exit(&r, 1, at), OnExit::Hold(_)));
    }

    #[test]
    fn periodic_remove_and_allowed_duration() {
        let r = record(
            JobState::Idle,
            &[("PeriodicRemove", "CurrentTime - QDate > 60")],
        );
        assert_eq!(periodic(&r, Time::from_secs(1_030)), None);
        assert!(matches!(
            periodic(&r, Time::from_secs(1_061)),
            Some(Periodic::Remove(_))
        ));
        // Started at 1 500: 100 s allowed.
        let r = record(JobState::Running, &[("AllowedJobDuration", "100")]);
        assert_eq!(periodic(&r, Time::from_secs(1_590)), None);
        match periodic(&r, Time::from_secs(1_601)) {
            Some(Periodic::HoldCode(_, code)) => {
                assert_eq!(code, hold_code::JOB_DURATION_EXCEEDED)
            }
            other => panic!("{other:?}"),
        }
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
