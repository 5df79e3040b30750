//! One proc's job description from the assignments in force at its
//! `queue` statement: each command (`keys.rs`) given its meaning, recorded
//! under HTCondor's attribute name, or refused; then what HTCondor's
//! submit composes from several commands (`OnExitRemove` from
//! `max_retries`, `retry_until`, `success_exit_code` and
//! `on_exit_remove`; `AccountingGroup`; the deferral defaults).

use super::args_env::{self, ArgsEnv};
use super::expand::Expander;
use super::keys::{self, Form, Handling};
use super::resources::{self, Resources};
use super::transfer::{self, Transfer};
use super::{Assignment, ErrorSink, SubmitErrorKind, custom_attr_name};
use crate::job::{CheckpointMethod, JobDescription, Universe, signal_name, signal_number};
use crate::limits::check_description;
use gleaner_classad::quote_string;
use std::collections::BTreeMap;

/// Expression-valued policy commands and the attribute each sets.
const POLICY: &[(&str, &str)] = &[
    ("on_exit_hold", "OnExitHold"),
    ("on_exit_hold_reason", "OnExitHoldReason"),
    ("on_exit_hold_subcode", "OnExitHoldSubCode"),
    ("periodic_hold", "PeriodicHold"),
    ("periodic_hold_reason", "PeriodicHoldReason"),
    ("periodic_hold_subcode", "PeriodicHoldSubCode"),
    ("periodic_release", "PeriodicRelease"),
    ("periodic_remove", "PeriodicRemove"),
    ("periodic_vacate", "PeriodicVacate"),
    ("allowed_job_duration", "AllowedJobDuration"),
    ("allowed_execute_duration", "AllowedExecuteDuration"),
    ("deferral_time", "DeferralTime"),
    ("dagman_job_id", "DAGManJobId"),
];

/// The cron commands and their attributes.
const CRON: &[(&str, &str, gleaner_core::cron::Field)] = &[
    (
        "cron_minute",
        "CronMinute",
        gleaner_core::cron::Field::Minute,
    ),
    ("cron_hour", "CronHour", gleaner_core::cron::Field::Hour),
    (
        "cron_day_of_month",
        "CronDayOfMonth",
        gleaner_core::cron::Field::DayOfMonth,
    ),
    ("cron_month", "CronMonth", gleaner_core::cron::Field::Month),
    (
        "cron_day_of_week",
        "CronDayOfWeek",
        gleaner_core::cron::Field::DayOfWeek,
    ),
];

/// HTCondor's default `DeferralPrepTime` (seconds) for deferred and cron
/// jobs, as its submit records it.
const DEFAULT_PREP_TIME: &str = "300";

/// The job attribute the policy command `key` sets (`on_exit_hold` →
/// `OnExitHold`), as HTCondor's condor_submit names it.
pub fn policy_attr(key: &str) -> Option<&'static str> {
    POLICY
        .iter()
        .chain([("on_exit_remove", "OnExitRemove")].iter())
        .find(|(k, _)| *k == key)
        .map(|(_, a)| *a)
}

/// Parses `true`/`false` as submit files write them.
pub(super) fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" | "t" | "y" => Some(true),
        "false" | "no" | "0" | "f" | "n" => Some(false),
        _ => None,
    }
}

/// A comma- (or whitespace-) separated file or name list.
pub(super) fn split_list(v: &str) -> Vec<String> {
    v.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// Parses `2GB`, `512 MB`, `1.5G`, `100` (in `default_unit` bytes) into a
/// whole number of `target_unit` bytes, rounding up. Units are binary, as in
/// HTCondor.
pub fn parse_size(value: &str, default_unit: u64, target_unit: u64) -> Result<u64, String> {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = (&v[..split], v[split..].trim());
    let n: f64 = num
        .parse()
        .map_err(|_| format!("\"{value}\" is not a size (e.g. 512MB, 2GB)"))?;
    let mult = match unit.to_ascii_uppercase().as_str() {
        "" => default_unit,
        "B" => 1,
        "K" | "KB" | "KIB" => KIB,
        "M" | "MB" | "MIB" => MIB,
        "G" | "GB" | "GIB" => 1024 * MIB,
        "T" | "TB" | "TIB" => 1024 * 1024 * MIB,
        _ => return Err(format!("unknown unit \"{unit}\" (use K, M, G or T)")),
    };
    let bytes = n * mult as f64;
    let units = (bytes / target_unit as f64).ceil();
    if !units.is_finite() || units < 0.0 || units >= u64::MAX as f64 {
        return Err(format!("\"{value}\" is out of range"));
    }
    Ok(units as u64)
}

/// Checks that a ClassAd expression parses, so that a typo in
/// `requirements` is reported at submit time with its line rather than
/// leaving the job unmatched forever. `$$(attr)` placeholders are filled in
/// at match time, so they are replaced by a neutral literal for the check.
pub(super) fn check_expression(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Ok(());
    }
    let probe = super::matchtime::neutral(text)?;
    gleaner_classad::parse_expr(&probe)
        .map(|_| ())
        .map_err(|e| format!("not a valid expression: {e}"))
}

/// A constant whole number of seconds (`2 * 3`, `3600`) or why not.
fn seconds(text: &str) -> Result<u64, String> {
    let e =
        gleaner_classad::parse_expr(text).map_err(|e| format!("not a valid expression: {e}"))?;
    let v = gleaner_classad::EvalContext::new(0).eval(&e);
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.is_finite() && n < 1e12 => Ok(n.trunc() as u64),
        _ => Err(format!("\"{text}\" is not a number of seconds")),
    }
}

/// A value in the job ad's form for a recorded command.
fn encode(form: Form, value: &str) -> Result<String, String> {
    match form {
        Form::Str => Ok(quote_string(value)),
        Form::List => Ok(quote_string(&split_list(value).join(","))),
        Form::Expr => gleaner_classad::parse_expr(value)
            .map(|_| value.to_string())
            .map_err(|e| format!("not a valid expression: {e}")),
        Form::Bool => parse_bool(value)
            .map(|b| b.to_string())
            .ok_or_else(|| format!("\"{value}\" is not true or false")),
        Form::Notification => match value.to_ascii_lowercase().as_str() {
            "never" => Ok("0".into()),
            "always" => Ok("1".into()),
            "complete" => Ok("2".into()),
            "error" => Ok("3".into()),
            _ => Err(format!(
                "\"{value}\" (expected never, always, complete or error)"
            )),
        },
        Form::SizeKib => parse_size(value, KIB, KIB).map(|n| n.to_string()),
    }
}

/// What the commands of one proc say, gathered before the description is
/// put together.
#[derive(Default)]
struct Gathered {
    args_env: ArgsEnv,
    transfer: Transfer,
    resources: Resources,
    retry_until: Option<String>,
    success_exit_code: Option<i32>,
    on_exit_remove: Option<String>,
    deferral_window: Option<(bool, String)>,
    prep_time: Option<(bool, String)>,
    custom: Vec<(String, String)>,
}

/// Builds one proc's description, reporting bad values against the line of
/// their assignment. Returns `None` if any error was found.
pub(super) fn build_description(
    ex: &Expander<'_>,
    queue_at: (Option<&str>, usize),
    process: u32,
    owner: &str,
    errs: &mut ErrorSink,
) -> Option<JobDescription> {
    let before = errs.errors.len();
    let mut d = JobDescription::new(owner, "");
    let mut g = Gathered::default();

    // A queue variable named like a command sets it (`queue input in A,
    // B`), over what the file assigned, as in HTCondor.
    let from_items: Vec<Assignment> = ex
        .builtins
        .as_ref()
        .map(|b| {
            b.binding
                .items
                .keys()
                .filter(|k| keys::lookup(k).is_some())
                .map(|k| Assignment {
                    name: k.clone(),
                    value: format!("$({k})"),
                    line: queue_at.1,
                    file: queue_at.0.map(str::to_string),
                    seq: u32::MAX,
                })
                .collect()
        })
        .unwrap_or_default();
    // Each command once: under aliases, the assignment made last counts.
    let mut effective: BTreeMap<String, &Assignment> = BTreeMap::new();
    for a in ex.vars.values().chain(from_items.iter()) {
        let key = if custom_attr_name(&a.name).is_some() {
            format!("+{}", a.name.to_ascii_lowercase())
        } else {
            keys::canonical(&a.name)
        };
        match effective.get(&key) {
            Some(prev) if prev.seq > a.seq => {}
            _ => {
                effective.insert(key, a);
            }
        }
    }

    for (key, a) in &effective {
        let value = match ex.expand(&a.value, 0) {
            Ok(v) => v.trim().to_string(),
            Err(SubmitErrorKind::ValueTooLarge { via, limit, .. }) => {
                let key = a.name.clone();
                errs.push_at(a, SubmitErrorKind::ValueTooLarge { key, via, limit });
                continue;
            }
            Err(kind) => {
                errs.push_at(a, kind);
                continue;
            }
        };
        for name in std::mem::take(&mut *ex.undefined.borrow_mut()) {
            errs.warn_at(
                a,
                format!(
                    "$({name}) is not defined; it expands to nothing, as in HTCondor \
                     (write $({name}:default) to give a value)"
                ),
            );
        }
        apply(key, &value, a, &mut d, &mut g, errs);
    }

    std::mem::take(&mut g.args_env).finish(ex.env, &mut d, errs);
    std::mem::take(&mut g.transfer).finish(&mut d, errs);
    g.resources.finish(&mut d, errs);
    compose_policy(&mut d, &g);
    compose_accounting(&mut d, owner, &effective, errs);
    compose_deferral(&mut d, &g);
    // condor_submit records the file it read, as `$(SUBMIT_FILE)` says.
    if let Some(a) = ex.vars.get("submit_file")
        && let Ok(v) = ex.expand(&a.value, 0)
        && !v.trim().is_empty()
    {
        d.custom_attrs
            .insert("JobSubmitFile".into(), quote_string(v.trim()));
    }
    // `+Attr` last: the user's own attribute wins, as in HTCondor.
    for (k, v) in g.custom {
        d.custom_attrs.insert(k, v);
    }

    // A CRIU dump already holds the whole process: a job exit code that
    // means "checkpointed" would make two methods fight over one run.
    if d.checkpoint_method == CheckpointMethod::Criu
        && d.checkpoint_exit_code.is_some()
        && let Some(a) = effective.get("checkpoint_method")
    {
        errs.push_at(
            a,
            SubmitErrorKind::BadValue {
                key: a.name.clone(),
                reason: "criu cannot be combined with checkpoint_exit_code".into(),
            },
        );
    }
    if d.executable.is_empty() && !effective.contains_key("executable") {
        errs.push_file(queue_at.0, queue_at.1, SubmitErrorKind::MissingExecutable);
    }
    if errs.errors.len() != before {
        return None;
    }
    // Values no host could run, or too large to keep: each field is
    // reported once, for the first proc that has the problem.
    let problems = check_description(&d);
    if problems.is_empty() {
        return Some(d);
    }
    for p in problems {
        let key = match p.field.as_str() {
            "initialdir" if !effective.contains_key("initialdir") => "iwd".to_string(),
            "environment" if !effective.contains_key("environment") => "getenv".to_string(),
            f => f.to_ascii_lowercase(),
        };
        let kind = SubmitErrorKind::BadField {
            field: p.field,
            process,
            reason: p.reason,
        };
        match effective.get(&keys::canonical(&key)) {
            Some(a) => errs.push_field(a.file.as_deref(), a.line, kind),
            None => errs.push_field(queue_at.0, queue_at.1, kind),
        }
    }
    None
}

/// An invalid value of assignment `a`, and why.
fn bad_value(errs: &mut ErrorSink, a: &Assignment, reason: String) {
    errs.push_at(
        a,
        SubmitErrorKind::BadValue {
            key: a.name.clone(),
            reason,
        },
    );
}

/// One command's meaning.
fn apply(
    key: &str,
    value: &str,
    a: &Assignment,
    d: &mut JobDescription,
    g: &mut Gathered,
    errs: &mut ErrorSink,
) {
    let bad = |errs: &mut ErrorSink, reason: String| bad_value(errs, a, reason);
    if let Some(attr) = custom_attr_name(&a.name) {
        if value.is_empty() {
            bad(errs, "a custom attribute needs an expression".into());
        } else if let Err(reason) = check_expression(value) {
            bad(errs, reason);
        } else {
            g.custom.push((attr.to_string(), value.to_string()));
        }
        return;
    }
    if let Some(name) = keys::custom_request(&a.name) {
        match check_expression(value) {
            Ok(()) if !value.is_empty() => {
                d.custom_requests
                    .insert(name.to_string(), value.to_string());
            }
            Ok(()) => bad(errs, "needs an amount".into()),
            Err(r) => bad(errs, r),
        }
        return;
    }
    if keys::lookup(key).is_none()
        && let Some(why) = keys::refused_prefix(key)
    {
        errs.push_at(
            a,
            SubmitErrorKind::Unsupported(format!("{} is not supported: {why}", a.name)),
        );
        return;
    }
    let Some(cmd) = keys::lookup(key) else {
        // A user macro: used only through $(…).
        return;
    };
    let lower = value.to_ascii_lowercase();
    match cmd.handling {
        Handling::Implemented => implemented(cmd.name, value, a, d, g, errs),
        Handling::Recorded {
            attr,
            form,
            why,
            quiet,
        } => match encode(form, value) {
            Ok(v) => {
                d.custom_attrs.insert(attr.to_string(), v);
                if !quiet.contains(&lower.as_str()) {
                    errs.warn_at(
                        a,
                        format!("{} is recorded as {attr} but has no effect: {why}", a.name),
                    );
                }
            }
            Err(r) => bad(errs, r),
        },
        Handling::Accepted { why, quiet } => {
            if !quiet.contains(&lower.as_str()) {
                errs.warn_at(a, format!("{} has no effect: {why}", a.name));
            }
        }
        Handling::RefusedUnless { ok, why, record } => {
            if ok.contains(&lower.as_str()) {
                if let Some((attr, form)) = record
                    && let Ok(v) = encode(form, value)
                {
                    d.custom_attrs.insert(attr.to_string(), v);
                }
            } else {
                errs.push_at(
                    a,
                    SubmitErrorKind::Unsupported(format!("{} = {value}: {why}", a.name)),
                );
            }
        }
        Handling::Refused { why } => errs.push_at(
            a,
            SubmitErrorKind::Unsupported(format!("{} is not supported: {why}", a.name)),
        ),
    }
}

/// The commands Gleaner implements.
fn implemented(
    name: &str,
    value: &str,
    a: &Assignment,
    d: &mut JobDescription,
    g: &mut Gathered,
    errs: &mut ErrorSink,
) {
    let bad = |errs: &mut ErrorSink, reason: String| bad_value(errs, a, reason);
    let opt = |v: &str| (!v.is_empty()).then(|| v.to_string());
    let record = |d: &mut JobDescription, attr: &str, v: String| {
        d.custom_attrs.insert(attr.to_string(), v);
    };
    if let Some(attr) = POLICY.iter().find(|(k, _)| *k == name).map(|(_, a)| *a) {
        if value.is_empty() {
            bad(errs, "needs an expression".into());
        } else if let Err(reason) = check_expression(value) {
            bad(errs, reason);
        } else {
            record(d, attr, value.to_string());
        }
        return;
    }
    if let Some((_, attr, field)) = CRON.iter().find(|(k, _, _)| *k == name) {
        match gleaner_core::cron::Spec::parse_field(*field, value) {
            Ok(_) => record(d, attr, quote_string(value)),
            Err(e) => bad(errs, e.to_string()),
        }
        return;
    }
    match name {
        "universe" => match keys::universe_refusal(value) {
            // Parallel: set with the member's gang (`parallel.rs`).
            None => {
                d.universe = match value.to_ascii_lowercase().as_str() {
                    "local" => Universe::Local,
                    "scheduler" => Universe::Scheduler,
                    _ => Universe::Vanilla,
                }
            }
            Some(why) => errs.push_at(a, SubmitErrorKind::Unsupported(why)),
        },
        // Checked once per submission, with the gang (`parallel.rs`).
        "machine_count" | "gang_policy" | "gang_on_eviction" | "gang_min" | "gang_shape" => {}
        "executable" => {
            if value.is_empty() {
                bad(errs, "empty".into());
            } else {
                d.executable = value.to_string();
            }
        }
        n if args_env::COMMANDS.contains(&n) => g.args_env.gather(n, value, a, errs),
        "input" => d.input = opt(value),
        "output" => d.output = opt(value),
        "error" => d.error = opt(value),
        "log" => d.log = opt(value),
        "initialdir" => d.iwd = opt(value),
        "transfer_executable" => match parse_bool(value) {
            Some(b) => d.transfer_executable = b,
            None => bad(errs, format!("\"{value}\" is not true or false")),
        },
        n if transfer::COMMANDS.contains(&n) => g.transfer.gather(n, value, a, d, errs),
        "transfer_checkpoint_files" => d.transfer_checkpoint_files = split_list(value),
        "concurrency_limits" => {
            // HTCondor's limits are case-insensitive; its ad keeps them in
            // lower case.
            d.concurrency_limits = split_list(&value.to_ascii_lowercase());
            if let Err(r) = crate::matchmaking::parse_limits(&d.concurrency_limits) {
                bad(errs, r);
            }
        }
        n if resources::COMMANDS.contains(&n) => g.resources.gather(n, value, a),
        "requirements" | "rank" => {
            if let Err(reason) = check_expression(value) {
                bad(errs, reason);
            } else if name == "rank" {
                d.rank = opt(value);
            } else {
                d.requirements = opt(value);
            }
        }
        "checkpoint_exit_code" => match value.parse::<i32>() {
            Ok(n) if (0..=255).contains(&n) => d.checkpoint_exit_code = Some(n),
            _ => bad(errs, format!("\"{value}\" is not an exit code (0-255)")),
        },
        "checkpoint_interval" => match value.parse::<u64>() {
            Ok(n) if n >= 1 => d.checkpoint_interval_secs = Some(n),
            _ => bad(
                errs,
                format!("\"{value}\" is not a positive number of seconds"),
            ),
        },
        "checkpoint_method" => match value.to_ascii_lowercase().as_str() {
            "auto" | "self" => d.checkpoint_method = CheckpointMethod::Auto,
            "criu" => d.checkpoint_method = CheckpointMethod::Criu,
            _ => bad(errs, format!("\"{value}\" (expected auto, self or criu)")),
        },
        "hold" => match parse_bool(value) {
            Some(b) => d.hold = b,
            None => bad(errs, format!("\"{value}\" is not true or false")),
        },
        "priority" => match value.parse::<i32>() {
            Ok(n) => d.priority = n,
            // HTCondor keeps the whole part of a fraction.
            Err(_) => match value.parse::<f64>() {
                Ok(f) if f.is_finite() && f.abs() < 2e9 => d.priority = f.trunc() as i32,
                _ => bad(errs, format!("\"{value}\" is not a whole number")),
            },
        },
        "max_retries" => match value.parse::<u32>() {
            Ok(n) => d.max_retries = Some(n),
            _ => bad(errs, format!("\"{value}\" is not a whole number")),
        },
        "retry_until" => {
            if let Ok(code) = value.parse::<i32>() {
                g.retry_until = Some(format!("ExitCode == {code}"));
            } else if value.is_empty() {
                bad(errs, "needs an expression or an exit code".into());
            } else if let Err(r) = check_expression(value) {
                bad(errs, r);
            } else {
                g.retry_until = Some(value.to_string());
            }
        }
        "success_exit_code" => match value.parse::<i32>() {
            Ok(n) => {
                g.success_exit_code = Some(n);
                record(d, "JobSuccessExitCode", n.to_string());
            }
            _ => bad(errs, format!("\"{value}\" is not an exit code")),
        },
        "on_exit_remove" => {
            if value.is_empty() {
                bad(errs, "needs an expression".into());
            } else if let Err(r) = check_expression(value) {
                bad(errs, r);
            } else {
                g.on_exit_remove = Some(value.to_string());
            }
        }
        "deferral_window" | "cron_window" | "deferral_prep_time" | "cron_prep_time" => {
            match seconds(value) {
                Ok(_) => {
                    let slot = if name.ends_with("window") {
                        &mut g.deferral_window
                    } else {
                        &mut g.prep_time
                    };
                    // The cron_ command wins over the deferral_ one, as in
                    // HTCondor.
                    let from_cron = name.starts_with("cron");
                    if slot.as_ref().is_none_or(|(c, _)| !c || from_cron) {
                        *slot = Some((from_cron, value.to_string()));
                    }
                }
                Err(r) => bad(errs, r),
            }
        }
        "job_lease_duration" | "job_max_vacate_time" | "kill_sig_timeout" => match seconds(value) {
            Ok(n) => {
                let attr = match name {
                    "job_lease_duration" => {
                        d.job_lease_duration = Some(n);
                        "JobLeaseDuration"
                    }
                    "job_max_vacate_time" => {
                        d.job_max_vacate_time = Some(n);
                        "JobMaxVacateTime"
                    }
                    _ => {
                        // The older name of job_max_vacate_time.
                        d.job_max_vacate_time.get_or_insert(n);
                        "KillSigTimeout"
                    }
                };
                record(d, attr, value.to_string());
            }
            Err(r) => bad(errs, r),
        },
        "kill_sig" | "remove_kill_sig" | "hold_kill_sig" => match signal_number(value) {
            Some(n) => {
                let (slot, attr) = match name {
                    "kill_sig" => (&mut d.kill_sig, "KillSig"),
                    "remove_kill_sig" => (&mut d.remove_kill_sig, "RemoveKillSig"),
                    _ => (&mut d.hold_kill_sig, "HoldKillSig"),
                };
                *slot = Some(n);
                let shown = signal_name(n).unwrap_or("SIGTERM");
                record(d, attr, quote_string(shown));
            }
            None => bad(errs, format!("invalid signal {value}")),
        },
        "want_graceful_removal" => match parse_bool(value) {
            Some(b) => {
                d.want_graceful_removal = b;
                record(d, "WantGracefulRemoval", b.to_string());
            }
            // HTCondor takes an expression too, and records it. Gleaner
            // decides once, with its value now (no job attribute is known
            // yet: one it names is undefined, and undefined is false).
            None => match gleaner_classad::parse_expr(value) {
                Ok(e) => {
                    let now = gleaner_classad::EvalContext::new(0).eval(&e);
                    d.want_graceful_removal = matches!(now, gleaner_classad::Value::Bool(true));
                    record(d, "WantGracefulRemoval", value.to_string());
                    if !matches!(now, gleaner_classad::Value::Bool(_)) {
                        errs.warn_at(
                            a,
                            format!(
                                "{} = {value} is recorded, and is {} now: Gleaner decides \
                                 graceful removal once, at submit time",
                                a.name, d.want_graceful_removal
                            ),
                        );
                    }
                }
                Err(e) => bad(errs, format!("not true, false or an expression: {e}")),
            },
        },
        "nice_user" => match parse_bool(value) {
            Some(b) => d.nice_user = b,
            None => bad(errs, format!("\"{value}\" is not true or false")),
        },
        "accounting_group" => {
            if value.is_empty()
                || !value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            {
                bad(
                    errs,
                    format!("\"{value}\" is not a group name (letters, digits, '.', '_', '-')"),
                );
            } else {
                d.accounting_group = Some(value.to_string());
            }
        }
        "accounting_group_user" => d.accounting_group_user = opt(value),
        "batch_name" => d.batch_name = opt(value),
        "description" => record(d, "JobDescription", quote_string(value)),
        "submit_event_notes" => record(d, "SubmitEventNotes", quote_string(value)),
        _ => {}
    }
}

/// HTCondor's `OnExitRemove` for jobs that retry: removed once the run
/// succeeds (`success_exit_code`, else 0), `retry_until` holds, or
/// `max_retries` (default 2) reruns are spent; `on_exit_remove` is or-ed
/// on. Written as HTCondor's submit writes it.
fn compose_policy(d: &mut JobDescription, g: &Gathered) {
    let retries =
        d.max_retries.is_some() || g.retry_until.is_some() || g.success_exit_code.is_some();
    if !retries {
        if let Some(r) = &g.on_exit_remove {
            d.custom_attrs.insert("OnExitRemove".into(), r.clone());
        }
        return;
    }
    d.max_retries.get_or_insert(2);
    let success = if g.success_exit_code.is_some() {
        "JobSuccessExitCode"
    } else {
        "0"
    };
    let mut e = format!("NumJobCompletions > JobMaxRetries || ExitCode is {success}");
    for extra in [&g.retry_until, &g.on_exit_remove].into_iter().flatten() {
        e.push_str(&format!(" || {}", parenthesized(extra)));
    }
    d.custom_attrs.insert("OnExitRemove".into(), e);
    d.custom_attrs
        .entry("OnExitHold".into())
        .or_insert_with(|| "false".into());
}

/// `e` in parentheses unless it is one comparison or simpler (so that `||`
/// around it keeps its meaning; HTCondor's printout has none there).
fn parenthesized(e: &str) -> String {
    let risky = e.contains('?') || e.contains("||");
    if risky {
        format!("({e})")
    } else {
        e.to_string()
    }
}

/// `AcctGroup`, `AcctGroupUser` and `AccountingGroup` as HTCondor writes
/// them. `accounting_group_user` may only name the submitter: the name is
/// recorded wherever usage is accounted, and another user's would charge
/// them (docs/jobs.md).
fn compose_accounting(
    d: &mut JobDescription,
    owner: &str,
    effective: &BTreeMap<String, &Assignment>,
    errs: &mut ErrorSink,
) {
    if let Some(u) = &d.accounting_group_user
        && !owner.is_empty()
        && u != owner
        && let Some(a) = effective.get("accounting_group_user")
    {
        errs.push_at(
            a,
            SubmitErrorKind::BadValue {
                key: a.name.clone(),
                reason: format!(
                    "\"{u}\" is not you ({owner}): accounting_group_user may only name the \
                     submitting user"
                ),
            },
        );
        return;
    }
    let group = d
        .accounting_group
        .clone()
        .or_else(|| d.nice_user.then(|| "nice-user".to_string()));
    if group.is_none() && d.accounting_group_user.is_none() {
        return;
    }
    let user = d
        .accounting_group_user
        .clone()
        .unwrap_or_else(|| owner.to_string());
    if d.nice_user {
        d.custom_attrs
            .entry("MaxJobRetirementTime".into())
            .or_insert_with(|| "0".into());
    }
    d.custom_attrs
        .insert("AcctGroupUser".into(), quote_string(&user));
    let full = match &group {
        Some(gr) => {
            d.custom_attrs.insert("AcctGroup".into(), quote_string(gr));
            format!("{gr}.{user}")
        }
        None => user,
    };
    d.custom_attrs
        .insert("AccountingGroup".into(), quote_string(&full));
}

/// A deferred or cron job gets `DeferralWindow` (default 0) and
/// `DeferralPrepTime` (default 300 s), as HTCondor records them.
fn compose_deferral(d: &mut JobDescription, g: &Gathered) {
    let deferred = d.custom_attrs.contains_key("DeferralTime")
        || CRON
            .iter()
            .any(|(_, attr, _)| d.custom_attrs.contains_key(*attr));
    if !deferred {
        return;
    }
    let window = g.deferral_window.as_ref().map_or("0", |(_, v)| v.as_str());
    let prep = g
        .prep_time
        .as_ref()
        .map_or(DEFAULT_PREP_TIME, |(_, v)| v.as_str());
    d.custom_attrs
        .insert("DeferralWindow".into(), window.to_string());
    d.custom_attrs
        .insert("DeferralPrepTime".into(), prep.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2GB", MIB, MIB), Ok(2048));
        assert_eq!(parse_size("512", MIB, MIB), Ok(512));
        assert_eq!(parse_size("1.5 G", MIB, MIB), Ok(1536));
        assert_eq!(parse_size("1MB", KIB, KIB), Ok(1024));
        assert_eq!(parse_size("1", KIB, KIB), Ok(1));
        assert!(parse_size("lots", MIB, MIB).is_err());
        assert!(parse_size("5 parsecs", MIB, MIB).is_err());
    }
}
