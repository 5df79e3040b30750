//! The job ClassAd of a job, with HTCondor's attribute names: the one
//! place that maps a Gleaner job record to the names users script against
//! (`glean q|history -l`, `-af ATTR…` and `-constraint EXPR`) and that the
//! home evaluates the job's own policy over (`on_exit_hold`,
//! `periodic_release`, …).
//!
//! Names and codes follow HTCondor's job ads (`JobStatus` 1 idle, 2
//! running, 3 removed, 4 completed, 5 held, 7 suspended; times in seconds
//! since the UNIX epoch; `RequestMemory` MiB, `RequestDisk` KiB).

use crate::api::{EventInfo, JobDetail, JobInfo};
use crate::job::{
    JobDescription, JobEventKind, JobState, ShouldTransferFiles, WhenToTransferOutput,
};
use gleaner_classad::Ad;
use gleaner_core::time::Time;

fn secs(t: Time) -> i64 {
    i64::try_from(t.as_micros() / 1_000_000).unwrap_or(i64::MAX)
}

/// `expr` as an expression, or as a string when it does not parse (so
/// that it is still shown, and compares as the text it is).
fn insert_expr_or_string(ad: &mut Ad, name: &str, expr: &str) {
    if ad.insert(name, expr).is_err() {
        ad.insert_str(name, expr);
    }
}

/// The job ad of one job as the API gives it.
pub fn detail_ad(d: &JobDetail) -> Ad {
    job_ad(&d.job, &d.description, &d.events)
}

/// The job ad of one job: its record, description and history (`events`
/// empty: not known, and `NumCkpts` is left out).
pub fn job_ad(j: &JobInfo, desc: &JobDescription, events: &[EventInfo]) -> Ad {
    let mut ad = Ad::new();
    // `+Attr` lines first: Gleaner's own attributes below take precedence,
    // as HTCondor's submit does for the attributes it sets itself.
    for (k, v) in &desc.custom_attrs {
        insert_expr_or_string(&mut ad, k, v);
    }
    ad.insert_str("MyType", "Job");
    ad.insert_str("TargetType", "Machine");
    ad.insert_int("ClusterId", i64::try_from(j.id.cluster).unwrap_or(i64::MAX));
    ad.insert_int("ProcId", i64::from(j.id.proc));
    ad.insert_int("JobStatus", i64::from(j.state.kind().code()));
    ad.insert_str("Owner", &j.owner);
    ad.insert_str("User", &j.owner);
    ad.insert_int("QDate", secs(j.submitted_at));
    ad.insert_int("EnteredCurrentStatus", secs(j.updated_at));
    ad.insert_int("NumJobStarts", i64::from(j.run_count));
    if let Some(t) = j.started_at {
        ad.insert_int("JobStartDate", secs(t));
        ad.insert_int("JobCurrentStartDate", secs(t));
    }
    // HTCondor's CompletionDate is for completed jobs only.
    if let (Some(t), JobState::Completed { .. }) = (j.finished_at, &j.state) {
        ad.insert_int("CompletionDate", secs(t));
    }
    // RemoteHost only while the job is on a host, LastRemoteHost after.
    if let Some(h) = &j.host {
        match j.state {
            JobState::Running | JobState::Suspended => ad.insert_str("RemoteHost", h),
            _ => ad.insert_str("LastRemoteHost", h),
        }
    }
    match &j.state {
        JobState::Held { reason } => {
            ad.insert_str("HoldReason", reason);
            // A hold with no code of its own was a user's (1, UserRequest).
            ad.insert_int("HoldReasonCode", i64::from(j.hold_code.unwrap_or(1)));
            ad.insert_int("HoldReasonSubCode", i64::from(j.hold_subcode.unwrap_or(0)));
        }
        JobState::Completed { exit_code } => {
            ad.insert_bool("ExitBySignal", *exit_code < 0);
            if *exit_code >= 0 {
                ad.insert_int("ExitCode", i64::from(*exit_code));
            } else {
                ad.insert_int("ExitSignal", i64::from(exit_code.unsigned_abs()));
            }
        }
        _ => {}
    }
    if !events.is_empty() {
        let ckpts = events
            .iter()
            .filter(|e| {
                e.kind == JobEventKind::Checkpointed && !e.detail.starts_with("checkpoint rejected")
            })
            .count();
        ad.insert_int("NumCkpts", i64::try_from(ckpts).unwrap_or(i64::MAX));
    }
    // Gleaner's own: failed starts in a row (HTCondor has no such count).
    ad.insert_int("NumStartFailures", i64::from(j.start_failures));
    // HTCondor's codes: vanilla 5, scheduler 7, parallel 11 (with its
    // MachineCount; a member's rank is its ProcId), local 12.
    match desc.gang {
        Some(m) => {
            ad.insert_int("JobUniverse", 11);
            ad.insert_int("MachineCount", i64::from(m.gang.machine_count));
            ad.insert_int("MinHosts", i64::from(m.gang.fewest()));
            ad.insert_int("MaxHosts", i64::from(m.gang.machine_count));
        }
        None => ad.insert_int("JobUniverse", desc.universe.code()),
    }
    ad.insert_str("Cmd", &desc.executable);
    insert_arguments(&mut ad, desc);
    insert_environment(&mut ad, desc);
    ad.insert_int("NumJobCompletions", i64::from(j.completions));
    if let Some(t) = j.not_before {
        ad.insert_int("DeferralTime", secs(t));
    }
    if let Some(v) = &desc.iwd {
        ad.insert_str("Iwd", v);
    }
    for (name, v) in [
        ("In", &desc.input),
        ("Out", &desc.output),
        ("Err", &desc.error),
        ("UserLog", &desc.log),
        ("AcctGroup", &desc.accounting_group),
        ("JobBatchName", &desc.batch_name),
    ] {
        if let Some(v) = v {
            ad.insert_str(name, v);
        }
    }
    // File transfer, as HTCondor names it (Gleaner always transfers by
    // default: stations share no file system).
    ad.insert_str(
        "ShouldTransferFiles",
        match desc.should_transfer_files {
            ShouldTransferFiles::Yes => "YES",
            ShouldTransferFiles::No => "NO",
            ShouldTransferFiles::IfNeeded => "IF_NEEDED",
        },
    );
    // With no transfer at all there is no time to transfer at.
    if desc.should_transfer_files != ShouldTransferFiles::No {
        ad.insert_str(
            "WhenToTransferOutput",
            match desc.when_to_transfer_output {
                WhenToTransferOutput::OnExit => "ON_EXIT",
                WhenToTransferOutput::OnExitOrEvict => "ON_EXIT_OR_EVICT",
                WhenToTransferOutput::OnSuccess => "ON_SUCCESS",
            },
        );
    }
    // A standard file that is not transferred (none given, or
    // `transfer_input = false`, …), as HTCondor marks it.
    for (name, file, skipped) in [
        ("TransferIn", &desc.input, desc.untransferred.input),
        ("TransferOut", &desc.output, desc.untransferred.output),
        ("TransferErr", &desc.error, desc.untransferred.error),
    ] {
        if skipped || file.as_deref().is_none_or(|f| f == "/dev/null") {
            ad.insert_bool(name, false);
        }
    }
    if !desc.transfer_input_files.is_empty() {
        ad.insert_str("TransferInput", &desc.transfer_input_files.join(","));
    }
    if let Some(out) = &desc.transfer_output_files {
        ad.insert_str("TransferOutput", &out.join(","));
    }
    if !desc.transfer_checkpoint_files.is_empty() {
        ad.insert_str(
            "TransferCheckpoint",
            &desc.transfer_checkpoint_files.join(","),
        );
    }
    if !desc.transfer_executable {
        ad.insert_bool("TransferExecutable", false);
    }
    // The same writer as the matchmaker's class ad (`matchmaking::class_ad`).
    crate::requests::insert(&mut ad, crate::requests::Requests::of(desc));
    insert_expr_or_string(
        &mut ad,
        "Requirements",
        desc.requirements.as_deref().unwrap_or("true"),
    );
    if let Some(r) = &desc.rank {
        insert_expr_or_string(&mut ad, "Rank", r);
    }
    ad.insert_int("JobPrio", i64::from(desc.priority));
    ad.insert_bool("NiceUser", desc.nice_user);
    if !desc.concurrency_limits.is_empty() {
        ad.insert_str("ConcurrencyLimits", &desc.concurrency_limits.join(","));
    }
    if let Some(c) = desc.checkpoint_exit_code {
        ad.insert_int("SuccessCheckpointExitCode", i64::from(c));
        // HTCondor's starter acts on the exit code only with this set.
        ad.insert_bool("WantFTOnCheckpoint", true);
    }
    if let Some(m) = desc.max_retries {
        ad.insert_int("JobMaxRetries", i64::from(m));
    }
    for (name, amount) in &desc.custom_requests {
        insert_expr_or_string(&mut ad, &format!("Request{name}"), amount);
    }
    ad
}

/// The job's arguments as HTCondor's submit writes them: `Args` (V1 raw)
/// when the file used V1 syntax and V1 can hold them, else `Arguments`
/// (V2 raw, `crate::args`).
fn insert_arguments(ad: &mut Ad, desc: &JobDescription) {
    match desc
        .arguments_v1
        .then(|| crate::args::join_v1_raw(&desc.arguments))
        .flatten()
    {
        Some(v1) => ad.insert_str("Args", &v1),
        None => ad.insert_str("Arguments", &crate::args::join_v2_raw(&desc.arguments)),
    }
}

/// The job's environment as HTCondor's submit writes it: `Env` and
/// `EnvDelim` (V1) when the file used `env` in V1 syntax, else
/// `Environment` (V2 raw), always present.
fn insert_environment(ad: &mut Ad, desc: &JobDescription) {
    if desc.environment_v1
        && let Ok(v1) = crate::args::env_v1_raw(&desc.environment)
    {
        ad.insert_str("Env", &v1);
        ad.insert_str("EnvDelim", &crate::args::ENV_V1_DELIMITER.to_string());
        return;
    }
    ad.insert_str("Environment", &crate::args::env_v2_raw(&desc.environment));
}

/// The ad of job `id` as its description alone says (an idle job of
/// `owner`, times unknown): what a host evaluates a job's match-time
/// `$$([expression])` in, as HTCondor's schedd evaluates it in the job ad.
pub fn description_ad(id: crate::job::JobId, desc: &JobDescription) -> Ad {
    let info = JobInfo {
        id,
        owner: desc.owner.clone(),
        state: JobState::Idle,
        submitted_at: Time::ZERO,
        updated_at: Time::ZERO,
        started_at: None,
        finished_at: None,
        run_count: 0,
        host: None,
        cmd: desc.executable.clone(),
        start_failures: 0,
        hold_code: None,
        hold_subcode: None,
        completions: 0,
        not_before: None,
    };
    job_ad(&info, desc, &[])
}

/// The job ads a submission would queue as cluster `cluster` at `qdate`
/// (`glean submit --dry-run`, HTCondor's `condor_submit -dry-run`): each
/// proc's, idle or held as its `hold` says, with its initial directory
/// resolved against `submit_dir` as the station resolves it.
pub fn submission_ads(
    sub: &crate::submit::ClusterSubmission,
    cluster: u64,
    qdate: Time,
    submit_dir: Option<&str>,
) -> Result<Vec<Ad>, crate::submit::SubmitErrors> {
    let descs = sub.expand(cluster)?;
    let mut ads = Vec::with_capacity(descs.len());
    for (proc, mut d) in descs.into_iter().enumerate() {
        d.owner = sub.owner.clone();
        crate::job::resolve_submit_paths(&mut d, submit_dir);
        let (state, hold_code) = if d.hold {
            (
                JobState::Held {
                    reason: "submitted on hold at user's request".into(),
                },
                Some(crate::wire::hold_code::SUBMITTED_ON_HOLD),
            )
        } else {
            (JobState::Idle, None)
        };
        let info = JobInfo {
            id: crate::job::JobId::new(cluster, u32::try_from(proc).unwrap_or(u32::MAX)),
            owner: sub.owner.clone(),
            state,
            submitted_at: qdate,
            updated_at: qdate,
            started_at: None,
            finished_at: None,
            run_count: 0,
            host: None,
            cmd: d.executable.clone(),
            start_failures: 0,
            hold_code,
            hold_subcode: hold_code.map(|_| 0),
            completions: 0,
            not_before: None,
        };
        ads.push(job_ad(&info, &d, &[]));
    }
    Ok(ads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobId;
    use gleaner_classad::{EvalContext, parse_expr};

    fn detail(state: JobState) -> JobDetail {
        let mut description = JobDescription::new("alice", "/bin/sleep");
        description.arguments = vec!["60".into()];
        description.request_memory_mb = Some(512);
        description
            .custom_attrs
            .insert("Project".into(), "\"blue\"".into());
        JobDetail {
            job: JobInfo {
                id: JobId::new(12, 3),
                owner: "alice".into(),
                state,
                submitted_at: Time::from_secs(1_763_707_800),
                updated_at: Time::from_secs(1_763_707_900),
                started_at: None,
                finished_at: None,
                run_count: 0,
                host: Some("x1".into()),
                cmd: "/bin/sleep 60".into(),
                start_failures: 0,
                hold_code: None,
                hold_subcode: None,
                completions: 0,
                not_before: None,
            },
            description,
            events: Vec::new(),
        }
    }

    fn eval(ad: &Ad, expr: &str) -> String {
        let mut ctx = EvalContext::new(0);
        ctx.my = Some(ad.clone());
        ctx.eval(&parse_expr(expr).unwrap()).unparse()
    }

    #[test]
    fn htcondor_names_and_codes() {
        let ad = detail_ad(&detail(JobState::Held {
            reason: "held by alice".into(),
        }));
        assert_eq!(eval(&ad, "ClusterId"), "12");
        assert_eq!(eval(&ad, "ProcId"), "3");
        assert_eq!(eval(&ad, "JobStatus"), "5");
        assert_eq!(eval(&ad, "HoldReason"), "\"held by alice\"");
        assert_eq!(eval(&ad, "QDate"), "1763707800");
        assert_eq!(eval(&ad, "RequestMemory"), "512");
        assert_eq!(eval(&ad, "Project"), "\"blue\"");
        assert_eq!(eval(&ad, "RemoteHost"), "undefined");
        assert_eq!(eval(&ad, "LastRemoteHost"), "\"x1\"");
        let running = detail_ad(&detail(JobState::Running));
        assert_eq!(eval(&running, "RemoteHost"), "\"x1\"");
        assert_eq!(eval(&running, "JobStatus"), "2");
    }
}
