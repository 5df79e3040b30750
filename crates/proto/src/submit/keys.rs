//! Every submit command of HTCondor's vanilla universe (the `condor_submit`
//! manual page), and what Gleaner does with it: implements it, records it
//! in the job ad under HTCondor's attribute name and says in a warning why
//! it has no effect here, or refuses it where accepting it would silently
//! change what the user expects. One table, used by the parser, by the
//! station's check of a received submission and by `glean submit
//! --dry-run`.
//!
//! Keys are case-insensitive. Most commands also answer to the name of the
//! job-ad attribute they set (`OnExitHold`, `CronMinute`, `KillSig`), as
//! `condor_submit` looks both up; the aliases below are the ones HTCondor
//! 25 honours (checked against its own submit code, see
//! `crates/proto/tests/htcondor_corpus.rs`).

/// How a recorded value becomes a job-ad value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// A string, as written (`NotifyUser = "a@b"`).
    Str,
    /// A list of words (commas or blanks between them), written as one
    /// string joined by commas (`EmailAttributes = "a,b"`).
    List,
    /// A ClassAd expression (`MaxJobRetirementTime = 60 * 60`).
    Expr,
    /// true or false.
    Bool,
    /// `notification`: never 0, always 1, complete 2, error 3.
    Notification,
    /// A size with an optional unit, in KiB (`image_size = 2GB`).
    SizeKib,
}

/// What Gleaner does with a command.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Handling {
    /// Implemented with its meaning (`build.rs`).
    Implemented,
    /// Recorded in the job ad as `attr`; a warning gives `why` unless the
    /// value (lower case) is one of `quiet` (what Gleaner does anyway).
    Recorded {
        attr: &'static str,
        form: Form,
        why: &'static str,
        quiet: &'static [&'static str],
    },
    /// Accepted, nothing recorded (HTCondor records nothing either); a
    /// warning gives `why` unless the value is one of `quiet`.
    Accepted {
        why: &'static str,
        quiet: &'static [&'static str],
    },
    /// Accepted quietly (and recorded as `record`, if any) when the value
    /// (lower case) is one of `ok`, refused otherwise with `why`.
    RefusedUnless {
        ok: &'static [&'static str],
        why: &'static str,
        record: Option<(&'static str, Form)>,
    },
    /// Refused: `why`.
    Refused { why: &'static str },
}

/// One submit command.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Command {
    pub(crate) name: &'static str,
    /// Other names (lower case) it is known by.
    pub(crate) aliases: &'static [&'static str],
    pub(crate) handling: Handling,
}

const fn imp(name: &'static str, aliases: &'static [&'static str]) -> Command {
    Command {
        name,
        aliases,
        handling: Handling::Implemented,
    }
}

const fn rec(
    name: &'static str,
    aliases: &'static [&'static str],
    attr: &'static str,
    form: Form,
    why: &'static str,
    quiet: &'static [&'static str],
) -> Command {
    Command {
        name,
        aliases,
        handling: Handling::Recorded {
            attr,
            form,
            why,
            quiet,
        },
    }
}

const fn acc(name: &'static str, why: &'static str, quiet: &'static [&'static str]) -> Command {
    Command {
        name,
        aliases: &[],
        handling: Handling::Accepted { why, quiet },
    }
}

const fn unless(name: &'static str, ok: &'static [&'static str], why: &'static str) -> Command {
    Command {
        name,
        aliases: &[],
        handling: Handling::RefusedUnless {
            ok,
            why,
            record: None,
        },
    }
}

/// [`unless`], recording the harmless value as `attr`.
const fn unless_rec(
    name: &'static str,
    ok: &'static [&'static str],
    why: &'static str,
    attr: &'static str,
    form: Form,
) -> Command {
    Command {
        name,
        aliases: &[],
        handling: Handling::RefusedUnless {
            ok,
            why,
            record: Some((attr, form)),
        },
    }
}

const fn refuse(name: &'static str, why: &'static str) -> Command {
    Command {
        name,
        aliases: &[],
        handling: Handling::Refused { why },
    }
}

const FALSE: &[&str] = &["false", "no", "0", "f", "n"];
const TRUE: &[&str] = &["true", "yes", "1", "t", "y"];
const NONE: &[&str] = &[];

const NO_MAIL: &str = "Gleaner sends no mail; follow jobs with `glean watch` or the user log";
const NO_ENCRYPTION: &str =
    "Gleaner has no per-file encryption; files travel over the pool's connections as configured";
const OWN_LIMITS: &str = "the stations' own limits on transfers apply";
const STANDARD_ONLY: &str =
    "a standard-universe command, which HTCondor's vanilla universe ignores too";
const CREDENTIALS: &str = "Gleaner forwards no credentials to guests";
const GRID: &str = "a grid-universe command; Gleaner runs vanilla jobs only";
const VM: &str = "a vm-universe command; Gleaner runs vanilla jobs only";
const CONTAINER: &str =
    "container and docker jobs are not supported; Gleaner runs vanilla jobs only";
const JAVA: &str = "a java-universe command; Gleaner runs vanilla jobs only";
const OUTPUT_PLACES: &str = "outputs come back to the directories the submit file names; moving them elsewhere is not supported";

/// The table. Aliases are lower case.
pub(crate) const COMMANDS: &[Command] = &[
    // What and where the job is.
    imp("universe", &[]),
    imp("executable", &[]),
    imp("arguments", &["args"]),
    imp("arguments2", &[]),
    imp("allow_arguments_v1", &[]),
    imp("environment", &[]),
    imp("env", &[]),
    imp("environment2", &[]),
    imp("allow_environment_v1", &[]),
    imp("getenv", &["get_env"]),
    imp("input", &["stdin"]),
    imp("output", &["stdout"]),
    imp("error", &["stderr"]),
    imp("log", &[]),
    imp("initialdir", &["initial_dir", "iwd", "job_iwd"]),
    imp("should_transfer_files", &[]),
    imp("when_to_transfer_output", &[]),
    imp("transfer_executable", &[]),
    imp("transfer_input_files", &["transferinputfiles"]),
    imp("transfer_output_files", &["transferoutputfiles"]),
    imp("transfer_checkpoint_files", &[]),
    imp("transfer_input", &["transferin"]),
    imp("transfer_output", &["transferout"]),
    imp("transfer_error", &["transfererr"]),
    // Matching.
    imp("request_cpus", &[]),
    imp("request_memory", &[]),
    imp("request_disk", &[]),
    imp("request_gpus", &[]),
    imp("require_gpus", &[]),
    imp("gpus_minimum_capability", &[]),
    imp("gpus_maximum_capability", &[]),
    imp("gpus_minimum_memory", &[]),
    imp("gpus_minimum_runtime", &[]),
    imp("retry_request_memory", &[]),
    imp("retry_request_memory_max", &[]),
    imp("retry_request_memory_increase", &[]),
    imp("retry_request_disk", &[]),
    imp("requirements", &[]),
    imp("rank", &[]),
    imp("concurrency_limits", &[]),
    // Checkpoints (the last two are Gleaner's own).
    imp("checkpoint_exit_code", &[]),
    imp("checkpoint_interval", &[]),
    imp("checkpoint_method", &[]),
    // The parallel universe (HTCondor's `machine_count`) and Gleaner's
    // own gang keys (docs/jobs.md, "Parallel jobs").
    imp("machine_count", &["machinecount"]),
    imp("gang_policy", &[]),
    imp("gang_on_eviction", &[]),
    imp("gang_min", &[]),
    imp("gang_shape", &[]),
    // Policy.
    imp("hold", &[]),
    imp("priority", &["prio", "jobprio"]),
    imp("max_retries", &[]),
    imp("retry_until", &[]),
    imp("success_exit_code", &[]),
    imp("on_exit_hold", &["onexithold"]),
    imp("on_exit_hold_reason", &[]),
    imp("on_exit_hold_subcode", &[]),
    imp("on_exit_remove", &["onexitremove"]),
    imp("periodic_hold", &["periodichold"]),
    imp("periodic_hold_reason", &[]),
    imp("periodic_hold_subcode", &[]),
    imp("periodic_release", &["periodicrelease"]),
    imp("periodic_remove", &["periodicremove"]),
    imp("periodic_vacate", &[]),
    imp("allowed_job_duration", &[]),
    imp("allowed_execute_duration", &[]),
    // Time.
    imp("deferral_time", &["deferraltime"]),
    imp("deferral_window", &["deferralwindow"]),
    imp("deferral_prep_time", &["deferralpreptime"]),
    imp("cron_minute", &["cronminute"]),
    imp("cron_hour", &["cronhour"]),
    imp("cron_day_of_month", &["crondayofmonth"]),
    imp("cron_month", &["cronmonth"]),
    imp("cron_day_of_week", &["crondayofweek"]),
    imp("cron_window", &["cronwindow"]),
    imp("cron_prep_time", &["cronpreptime"]),
    // Leaving a host.
    imp("job_lease_duration", &["jobleaseduration"]),
    imp("job_max_vacate_time", &["jobmaxvacatetime"]),
    imp("kill_sig", &["killsig"]),
    imp("remove_kill_sig", &[]),
    imp("hold_kill_sig", &[]),
    imp("kill_sig_timeout", &[]),
    imp("want_graceful_removal", &["wantgracefulremoval"]),
    rec(
        "max_job_retirement_time",
        &["maxjobretirementtime"],
        "MaxJobRetirementTime",
        Form::Expr,
        "recorded only: on a workstation the owner comes first, and the owner's eviction ladder \
         decides how long a guest may stay after the owner returns (docs/jobs.md)",
        &["0"],
    ),
    // Who the job is for.
    imp("nice_user", &["niceuser"]),
    imp("accounting_group", &[]),
    imp("accounting_group_user", &[]),
    imp("batch_name", &["jobbatchname"]),
    imp("description", &[]),
    imp("submit_event_notes", &[]),
    imp("dagman_job_id", &[]),
    // Recorded, ignored.
    rec(
        "notification",
        &[],
        "JobNotification",
        Form::Notification,
        NO_MAIL,
        &["never"],
    ),
    rec("notify_user", &[], "NotifyUser", Form::Str, NO_MAIL, NONE),
    rec(
        "email_attributes",
        &[],
        "EmailAttributes",
        Form::List,
        NO_MAIL,
        NONE,
    ),
    rec(
        "coresize",
        &["core_size"],
        "CoreSize",
        Form::Expr,
        "Gleaner neither sets a guest's core-file limit nor brings core files back",
        &["0"],
    ),
    rec(
        "stack_size",
        &[],
        "StackSize",
        Form::Expr,
        STANDARD_ONLY,
        NONE,
    ),
    rec(
        "log_xml",
        &[],
        "UserLogUseXML",
        Form::Bool,
        "the user log is written in HTCondor's text format",
        FALSE,
    ),
    rec(
        "dagman_log",
        &[],
        "DAGManNodesLog",
        Form::Str,
        "Gleaner's DAG manager keeps its own records (`glean dag status`)",
        NONE,
    ),
    rec(
        "encrypt_input_files",
        &[],
        "EncryptInputFiles",
        Form::Str,
        NO_ENCRYPTION,
        NONE,
    ),
    rec(
        "encrypt_output_files",
        &[],
        "EncryptOutputFiles",
        Form::Str,
        NO_ENCRYPTION,
        NONE,
    ),
    rec(
        "dont_encrypt_input_files",
        &[],
        "DontEncryptInputFiles",
        Form::Str,
        NO_ENCRYPTION,
        NONE,
    ),
    rec(
        "dont_encrypt_output_files",
        &[],
        "DontEncryptOutputFiles",
        Form::Str,
        NO_ENCRYPTION,
        NONE,
    ),
    rec(
        "match_list_length",
        &[],
        "LastMatchListLength",
        Form::Expr,
        "Gleaner keeps no list of past matches",
        NONE,
    ),
    rec(
        "max_transfer_input_mb",
        &[],
        "MaxTransferInputMB",
        Form::Expr,
        OWN_LIMITS,
        NONE,
    ),
    rec(
        "max_transfer_output_mb",
        &[],
        "MaxTransferOutputMB",
        Form::Expr,
        OWN_LIMITS,
        NONE,
    ),
    rec(
        "image_size",
        &[],
        "ImageSize",
        Form::SizeKib,
        "matching uses request_memory",
        NONE,
    ),
    rec(
        "leave_in_queue",
        &["leavejobinqueue"],
        "LeaveJobInQueue",
        Form::Expr,
        "finished jobs leave the queue for `glean history`",
        FALSE,
    ),
    rec(
        "job_machine_attrs",
        &[],
        "JobMachineAttrs",
        Form::Str,
        "Gleaner copies no machine attributes into the job ad",
        NONE,
    ),
    rec(
        "job_ad_information_attrs",
        &[],
        "JobAdInformationAttrs",
        Form::Str,
        "the user log's events carry no extra job attributes",
        NONE,
    ),
    rec(
        "ulog_execute_attrs",
        &[],
        "UserLogExecuteEventAttrs",
        Form::Str,
        "the user log's events carry no extra job attributes",
        NONE,
    ),
    rec(
        "submit_event_user_notes",
        &[],
        "SubmitEventUserNotes",
        Form::Str,
        "the user log's submit event carries submit_event_notes only",
        NONE,
    ),
    rec(
        "want_io_proxy",
        &[],
        "WantIOProxy",
        Form::Bool,
        "Gleaner has no Chirp I/O proxy",
        FALSE,
    ),
    rec(
        "keep_claim_idle",
        &[],
        "KeepClaimIdle",
        Form::Expr,
        "a host is given back as soon as the job ends",
        NONE,
    ),
    rec(
        "next_job_start_delay",
        &[],
        "NextJobStartDelay",
        Form::Expr,
        "the home places at most one job per placement interval anyway",
        NONE,
    ),
    rec(
        "starter_debug",
        &[],
        "JobStarterDebug",
        Form::Str,
        "the starter's logging is the station's",
        NONE,
    ),
    rec(
        "load_profile",
        &[],
        "LoadProfile",
        Form::Bool,
        "a Windows-only command",
        FALSE,
    ),
    rec(
        "erase_output_and_error_on_restart",
        &[],
        "EraseOutputAndErrorOnRestart",
        Form::Bool,
        "a run that starts from scratch always starts with empty stdout and stderr (docs/jobs.md)",
        TRUE,
    ),
    unless_rec(
        "encrypt_execute_directory",
        FALSE,
        "the sandbox is not encrypted on the host; Gleaner cannot honour encrypt_execute_directory",
        "EncryptExecuteDirectory",
        Form::Bool,
    ),
    unless_rec(
        "want_job_networking",
        TRUE,
        "Gleaner does not cut guests off the network; want_job_networking = false cannot be honoured",
        "WantJobNetworking",
        Form::Bool,
    ),
    unless_rec(
        "run_as_owner",
        FALSE,
        "guests always run under a slot account of their own on the host, never as you (docs/security.md)",
        "RunAsOwner",
        Form::Bool,
    ),
    unless_rec(
        "noop_job",
        FALSE,
        "Gleaner runs every job it queues; noop jobs are not supported",
        "IsNoopJob",
        Form::Expr,
    ),
    rec(
        "max_idle",
        &["materialize_max_idle"],
        "JobMaterializeMaxIdle",
        Form::Expr,
        "every proc of a submission is queued at once",
        NONE,
    ),
    unless_rec(
        "preserve_relative_paths",
        FALSE,
        "transferred files land in the top of the sandbox; preserve_relative_paths is not supported",
        "PreserveRelativePaths",
        Form::Bool,
    ),
    // Accepted, nothing recorded.
    acc(
        "copy_to_spool",
        "the executable is read from your directory when each run starts",
        FALSE,
    ),
    acc(
        "stream_output",
        "stdout comes home while the job runs anyway (`glean tail`)",
        NONE,
    ),
    acc(
        "stream_error",
        "stderr comes home while the job runs anyway (`glean tail --stderr`)",
        NONE,
    ),
    acc(
        "stream_input",
        "the input is transferred with the sandbox",
        FALSE,
    ),
    acc(
        "skip_filechecks",
        "",
        &["true", "false", "yes", "no", "1", "0", "t", "f", "y", "n"],
    ),
    acc(
        "max_materialize",
        "every proc of a submission is queued at once",
        NONE,
    ),
    acc("jobset", "Gleaner has no job sets", NONE),
    acc(
        "transfer_files",
        "an obsolete command that HTCondor ignores too; use should_transfer_files",
        NONE,
    ),
    acc("want_checkpoint", STANDARD_ONLY, NONE),
    acc("want_remote_io", STANDARD_ONLY, NONE),
    acc("file_remaps", STANDARD_ONLY, NONE),
    acc("buffer_files", STANDARD_ONLY, NONE),
    acc("buffer_size", STANDARD_ONLY, NONE),
    acc("buffer_block_size", STANDARD_ONLY, NONE),
    acc("fetch_files", STANDARD_ONLY, NONE),
    acc("compress_files", STANDARD_ONLY, NONE),
    acc("append_files", STANDARD_ONLY, NONE),
    acc("local_files", STANDARD_ONLY, NONE),
    acc(
        "starter_log",
        "the starter's logging is the station's",
        NONE,
    ),
    acc(
        "mount_under_scratch",
        "every guest has a private sandbox",
        NONE,
    ),
    acc(
        "rendezvousdir",
        "Gleaner needs no rendezvous directory",
        NONE,
    ),
    acc("suspend_job_at_exec", "a job starts running at once", FALSE),
    acc(
        "interactive_executable",
        "Gleaner has no interactive jobs",
        NONE,
    ),
    acc("interactive_args", "Gleaner has no interactive jobs", NONE),
    acc(
        "exit_requirements",
        "an obsolete command; use on_exit_remove",
        NONE,
    ),
    rec(
        "skip_if_dataflow",
        &[],
        "SkipIfDataflow",
        Form::Bool,
        "Gleaner runs every job it queues",
        FALSE,
    ),
    rec(
        "remote_initialdir",
        &["remoteiwd"],
        "RemoteIwd",
        Form::Str,
        "a guest runs in its own sandbox on the host, whatever directory is named",
        NONE,
    ),
    unless_rec(
        "wantparallelscheduling",
        FALSE,
        "Gleaner schedules a job's nodes together only in the parallel universe: write \
         universe = parallel and machine_count",
        "WantParallelScheduling",
        Form::Bool,
    ),
    acc("on_evict_checks", "evictions are the owner's", NONE),
    // Refused when not harmless.
    unless("send_credential", FALSE, CREDENTIALS),
    unless("use_x509userproxy", FALSE, CREDENTIALS),
    unless("use_scitokens", FALSE, CREDENTIALS),
    unless("use_scitoken", FALSE, CREDENTIALS),
    // Refused.
    refuse("x509userproxy", CREDENTIALS),
    refuse("scitokens_file", CREDENTIALS),
    refuse("use_oauth_services", CREDENTIALS),
    refuse("delegate_job_gsi_credentials_lifetime", CREDENTIALS),
    refuse("output_destination", OUTPUT_PLACES),
    refuse("output_directory", OUTPUT_PLACES),
    refuse("transfer_output_remaps", OUTPUT_PLACES),
    refuse(
        "transfer_plugins",
        "file-transfer plugins (URLs) are not supported",
    ),
    refuse(
        "checkpoint_destination",
        "checkpoints are kept at the job's home; other destinations are not supported",
    ),
    refuse("manifest", "job manifests are not supported"),
    refuse("manifest_dir", "job manifests are not supported"),
    refuse("grid_resource", GRID),
    refuse("docker_image", CONTAINER),
    refuse("container_image", CONTAINER),
    refuse("docker_network_type", CONTAINER),
    refuse("docker_pull_policy", CONTAINER),
    refuse("docker_override_entrypoint", CONTAINER),
    refuse("docker_send_credentials", CONTAINER),
    refuse("container_service_names", CONTAINER),
    refuse("container_target_dir", CONTAINER),
    refuse("transfer_container", CONTAINER),
    refuse("container_is_common", CONTAINER),
    refuse("jar_files", JAVA),
    refuse("java_vm_args", JAVA),
    refuse("java_vm_arguments", JAVA),
    refuse(
        "parallel_script_shadow",
        "Gleaner runs no wrapper script for parallel jobs; the members learn their peers from \
         GLEANER_PEERS",
    ),
    refuse(
        "parallel_script_starter",
        "Gleaner runs no wrapper script for parallel jobs; the members learn their peers from \
         GLEANER_PEERS",
    ),
    refuse("tool_daemon_cmd", "tool daemons are not supported"),
    refuse("tool_daemon_args", "tool daemons are not supported"),
    refuse("tool_daemon_arguments", "tool daemons are not supported"),
    refuse("tool_daemon_input", "tool daemons are not supported"),
    refuse("tool_daemon_output", "tool daemons are not supported"),
    refuse("tool_daemon_error", "tool daemons are not supported"),
    refuse(
        "shell",
        "shell jobs are not supported; make the command your executable",
    ),
    refuse(
        "cuda_version",
        "write the CUDA runtime the job needs as gpus_minimum_runtime (or in require_gpus)",
    ),
    refuse(
        "public_input_files",
        "inputs come from your directory only (Gleaner has no HTTP cache for public inputs); \
         list them in transfer_input_files",
    ),
    refuse(
        "common_input_files",
        "shared input files are not supported; list them in transfer_input_files",
    ),
];

/// Prefixes of whole families of commands Gleaner refuses, and why.
const REFUSED_PREFIXES: &[(&str, &str)] = &[
    ("ec2_", GRID),
    ("gce_", GRID),
    ("azure_", GRID),
    ("arc_", GRID),
    ("batch_extra_submit_args", GRID),
    ("batch_project", GRID),
    ("batch_queue", GRID),
    ("batch_runtime", GRID),
    ("globus_", GRID),
    ("nordugrid_", GRID),
    ("cream_", GRID),
    ("unicore_", GRID),
    ("boinc_", GRID),
    ("remote_", GRID),
    ("aws_", GRID),
    ("s3_", GRID),
    ("gs_", GRID),
    ("cloud_label_", GRID),
    ("vm_", VM),
    ("xen_", VM),
    ("docker_", CONTAINER),
    ("container_", CONTAINER),
];

/// HTCondor 25's universes, and what Gleaner says about each.
pub(crate) fn universe_refusal(universe: &str) -> Option<String> {
    let u = universe.to_ascii_lowercase();
    let why = match u.as_str() {
        "vanilla" | "parallel" | "scheduler" | "local" => return None,
        "mpi" => "it is the old name of the parallel universe: write universe = parallel",
        "standard" => "HTCondor itself no longer supports it",
        "java" => "Gleaner runs no Java virtual machine for jobs; make java your executable",
        "docker" | "container" => "container jobs are not supported",
        "grid" => "Gleaner does not forward jobs to other batch systems",
        "vm" => "Gleaner runs no virtual machines",
        _ => {
            return Some(format!(
                "universe \"{universe}\" is not an HTCondor universe (Gleaner runs vanilla, parallel, local and scheduler jobs)"
            ));
        }
    };
    Some(format!(
        "universe \"{universe}\" is not supported: {why} (Gleaner runs vanilla, parallel, local and scheduler jobs)"
    ))
}

/// The command a key (any case) names.
pub(crate) fn lookup(key: &str) -> Option<&'static Command> {
    let k = key.to_ascii_lowercase();
    COMMANDS
        .iter()
        .find(|c| c.name == k || c.aliases.contains(&k.as_str()))
}

/// Why a key of a refused family is refused.
pub(crate) fn refused_prefix(key: &str) -> Option<&'static str> {
    let k = key.to_ascii_lowercase();
    REFUSED_PREFIXES
        .iter()
        .find(|(p, _)| k.starts_with(p))
        .map(|(_, why)| *why)
}

/// The resource of a `request_<name>` key that is not one Gleaner knows
/// (`request_Boats` → `Boats`), keeping its case as written.
pub(crate) fn custom_request(key: &str) -> Option<&str> {
    let head = key.get(..8)?;
    if !head.eq_ignore_ascii_case("request_") {
        return None;
    }
    let name = &key[8..];
    let known = ["cpus", "memory", "disk", "gpus"];
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && !known.iter().any(|k| name.eq_ignore_ascii_case(k));
    ok.then_some(name)
}

/// The command's canonical name for a key (lower case): its own name for
/// an alias, the key otherwise.
pub(crate) fn canonical(key: &str) -> String {
    match lookup(key) {
        Some(c) => c.name.to_string(),
        None => key.to_ascii_lowercase(),
    }
}

/// Every command name and alias, for suggestions.
pub(crate) fn all_names() -> impl Iterator<Item = &'static str> {
    COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lower_case() {
        let mut seen = std::collections::BTreeSet::new();
        for n in all_names() {
            assert_eq!(n, n.to_ascii_lowercase(), "{n}");
            assert!(seen.insert(n), "{n} twice");
        }
    }

    #[test]
    fn aliases_and_prefixes() {
        assert_eq!(lookup("CronMinute").map(|c| c.name), Some("cron_minute"));
        assert_eq!(lookup("Notification").map(|c| c.name), Some("notification"));
        assert!(refused_prefix("EC2_ami_id").is_some());
        assert_eq!(custom_request("request_Boats"), Some("Boats"));
        assert_eq!(custom_request("request_memory"), None);
        assert!(universe_refusal("Vanilla").is_none());
        assert!(universe_refusal("parallel").is_none());
        assert!(
            universe_refusal("mpi")
                .unwrap()
                .contains("universe = parallel")
        );
    }
}
