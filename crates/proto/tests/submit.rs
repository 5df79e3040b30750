//! Submit-description parser: good files, macros, queue forms, and error
//! reporting with line numbers.

use gleaner_proto::job::{ShouldTransferFiles, WhenToTransferOutput};
use gleaner_proto::submit::{
    ClusterSubmission, SubmitContext, SubmitErrorKind, SubmitErrors, parse_submit,
};
use std::collections::BTreeMap;

fn ctx() -> SubmitContext {
    let mut env = BTreeMap::new();
    env.insert("HOME".to_string(), "/home/alice".to_string());
    env.insert("DATA".to_string(), "/data/run7".to_string());
    env.insert("UNUSED".to_string(), "secret".to_string());
    SubmitContext::new("job.sub", "alice").with_env(env)
}

fn parse(text: &str) -> Result<ClusterSubmission, SubmitErrors> {
    parse_submit(text, &ctx())
}

fn errors(text: &str) -> SubmitErrors {
    match parse(text) {
        Ok(_) => panic!("expected errors for:\n{text}"),
        Err(e) => e,
    }
}

fn lines_of(e: &SubmitErrors) -> Vec<usize> {
    e.0.iter().map(|e| e.line).collect()
}

#[test]
fn full_file_with_every_key() {
    let text = r#"
# A complete vanilla job.
Universe       = vanilla
Executable     = /usr/bin/sim
Arguments      = "--seed $(Process) 'two words' 'it''s'"
Environment    = "A=1 B='x y'"
input          = in.dat
output         = out.$(Cluster).$(Process)
error          = err.$(Cluster).$(Process)
log            = sim.log
initialdir     = run$(Process)
should_transfer_files   = YES
when_to_transfer_output = ON_EXIT_OR_EVICT
transfer_input_files    = a.txt, b.txt,c.txt
transfer_output_files   = result.dat
request_cpus   = 2
request_memory = 2GB
request_disk   = 512MB
request_gpus   = 0
requirements   = (OpSys == "LINUX") && (Memory > 1024)
rank           = KFlops
checkpoint_exit_code      = 85
transfer_checkpoint_files = ckpt.bin
concurrency_limits = license_a, license_b
max_retries    = 3
nice_user      = true
accounting_group = physics
batch_name     = sweep
priority       = 5
+ProjectName   = "Gleaner"
MY.Department  = "CS"
queue 2
"#;
    let sub = parse(text).expect("valid file");
    assert_eq!(sub.proc_count(), 2);
    let jobs = sub.expand(42).expect("expands");
    assert_eq!(jobs.len(), 2);
    let j = &jobs[1];
    assert_eq!(j.owner, "alice");
    assert_eq!(j.executable, "/usr/bin/sim");
    assert_eq!(j.arguments, vec!["--seed", "1", "two words", "it's"]);
    assert_eq!(j.environment.get("A").map(String::as_str), Some("1"));
    assert_eq!(j.environment.get("B").map(String::as_str), Some("x y"));
    assert_eq!(j.input.as_deref(), Some("in.dat"));
    assert_eq!(j.output.as_deref(), Some("out.42.1"));
    assert_eq!(j.error.as_deref(), Some("err.42.1"));
    assert_eq!(j.log.as_deref(), Some("sim.log"));
    assert_eq!(j.iwd.as_deref(), Some("run1"));
    assert_eq!(j.should_transfer_files, ShouldTransferFiles::Yes);
    assert_eq!(
        j.when_to_transfer_output,
        WhenToTransferOutput::OnExitOrEvict
    );
    assert_eq!(j.transfer_input_files, vec!["a.txt", "b.txt", "c.txt"]);
    assert_eq!(
        j.transfer_output_files,
        Some(vec!["result.dat".to_string()])
    );
    assert_eq!(j.request_cpus, 2);
    assert_eq!(j.request_memory_mb, Some(2048));
    assert_eq!(j.request_disk_kb, Some(512 * 1024));
    assert_eq!(
        j.requirements.as_deref(),
        Some(r#"(OpSys == "LINUX") && (Memory > 1024)"#)
    );
    assert_eq!(j.rank.as_deref(), Some("KFlops"));
    assert_eq!(j.checkpoint_exit_code, Some(85));
    assert_eq!(j.transfer_checkpoint_files, vec!["ckpt.bin"]);
    assert_eq!(j.concurrency_limits, vec!["license_a", "license_b"]);
    assert_eq!(j.max_retries, Some(3));
    assert!(j.nice_user);
    assert_eq!(j.accounting_group.as_deref(), Some("physics"));
    assert_eq!(j.batch_name.as_deref(), Some("sweep"));
    assert_eq!(j.priority, 5);
    assert_eq!(
        j.custom_attrs.get("ProjectName").map(String::as_str),
        Some("\"Gleaner\"")
    );
    assert_eq!(
        j.custom_attrs.get("Department").map(String::as_str),
        Some("\"CS\"")
    );
    assert_eq!(jobs[0].arguments[1], "0");
    assert_eq!(jobs[0].output.as_deref(), Some("out.42.0"));
}

#[test]
fn minimal_file_uses_defaults() {
    let sub = parse("executable = /bin/true\nqueue\n").unwrap();
    let jobs = sub.expand(1).unwrap();
    assert_eq!(jobs.len(), 1);
    let j = &jobs[0];
    assert_eq!(j.request_cpus, 1);
    assert_eq!(j.request_memory_mb, None);
    assert!(j.arguments.is_empty());
    assert_eq!(j.transfer_output_files, None);
    assert_eq!(j.should_transfer_files, ShouldTransferFiles::Yes);
}

#[test]
fn queue_n_expands_process_and_cluster_later() {
    let sub = parse(
        "executable = a.out\narguments = $(Process) $(ProcId) $(Cluster).$(ClusterId)\nqueue 5\n",
    )
    .unwrap();
    assert_eq!(sub.proc_count(), 5);
    for cluster in [7u64, 123_456] {
        let jobs = sub.expand(cluster).unwrap();
        for (i, j) in jobs.iter().enumerate() {
            let c = cluster.to_string();
            assert_eq!(
                j.arguments,
                vec![i.to_string(), i.to_string(), format!("{c}.{c}")]
            );
        }
    }
}

#[test]
fn keys_are_case_insensitive_and_macros_too() {
    let sub =
        parse("EXECUTABLE = x\nMyVar = hello\nArguments = $(myvar) $(MYVAR)\nQueue\n").unwrap();
    let j = &sub.expand(1).unwrap()[0];
    assert_eq!(j.arguments, vec!["hello", "hello"]);
}

#[test]
fn user_macros_are_lazy_and_nested() {
    let text = "base = /scratch/$(sub)\nsub = run_$(Process)\nexecutable = x\noutput = $(base)/out\nqueue 2\n";
    let jobs = parse(text).unwrap().expand(3).unwrap();
    assert_eq!(jobs[1].output.as_deref(), Some("/scratch/run_1/out"));
}

#[test]
fn assignments_between_queue_statements_apply_to_later_ones() {
    let text = "executable = x\narguments = first\nqueue 2\narguments = second\nqueue\n";
    let jobs = parse(text).unwrap().expand(1).unwrap();
    let args: Vec<_> = jobs.iter().map(|j| j.arguments[0].as_str()).collect();
    assert_eq!(args, vec!["first", "first", "second"]);
}

#[test]
fn line_continuation_joins_lines() {
    let text = "executable = x\narguments = a \\\n  b \\\n  c\nqueue\n";
    let j = &parse(text).unwrap().expand(1).unwrap()[0];
    assert_eq!(j.arguments, vec!["a", "b", "c"]);
}

#[test]
fn env_macro_reads_injected_environment() {
    let text = "executable = $ENV(HOME)/bin/x\ninput = $ENV(DATA)/in\noutput = $ENV(NOPE:fallback)\nqueue\n";
    let sub = parse(text).unwrap();
    let j = &sub.expand(1).unwrap()[0];
    assert_eq!(j.executable, "/home/alice/bin/x");
    assert_eq!(j.input.as_deref(), Some("/data/run7/in"));
    assert_eq!(j.output.as_deref(), Some("fallback"));
    // Only referenced variables travel with the submission.
    let json = serde_json::to_string(&sub).unwrap();
    assert!(!json.contains("secret"));
}

#[test]
fn getenv_copies_environment_under_explicit_entries() {
    let text = "executable = x\ngetenv = true\nenvironment = HOME=/tmp;X=1\nqueue\n";
    let j = &parse(text).unwrap().expand(1).unwrap()[0];
    assert_eq!(j.environment.get("HOME").map(String::as_str), Some("/tmp"));
    assert_eq!(
        j.environment.get("DATA").map(String::as_str),
        Some("/data/run7")
    );
    assert_eq!(j.environment.get("X").map(String::as_str), Some("1"));
}

#[test]
fn match_time_macros_and_dollar_pass_through() {
    let text = "executable = x\nrequirements = Arch == \"$$(Arch)\"\narguments = cost$(DOLLAR)5 a$b\nqueue\n";
    let j = &parse(text).unwrap().expand(1).unwrap()[0];
    assert_eq!(j.requirements.as_deref(), Some("Arch == \"$$(Arch)\""));
    assert_eq!(j.arguments, vec!["cost$5", "a$b"]);
}

#[test]
fn queue_in_and_from_lists() {
    let text =
        "executable = x\narguments = $(name) $(Step) $(ItemIndex)\nqueue 2 name in (alpha, beta)\n";
    let jobs = parse(text).unwrap().expand(1).unwrap();
    let args: Vec<String> = jobs.iter().map(|j| j.arguments.join(" ")).collect();
    assert_eq!(args, vec!["alpha 0 0", "alpha 1 0", "beta 0 1", "beta 1 1"]);

    let text = "executable = x\narguments = $(a) $(b)\nqueue a, b from (\n  1 one\n  # comment\n  2 two words\n)\narguments = z\noutput = after\nqueue\n";
    let jobs = parse(text).unwrap().expand(1).unwrap();
    assert_eq!(jobs.len(), 3);
    assert_eq!(jobs[0].arguments, vec!["1", "one"]);
    assert_eq!(jobs[1].arguments, vec!["2", "two", "words"]);
    assert_eq!(jobs[2].output.as_deref(), Some("after"));

    let text = "executable = x\narguments = $(Item)\nqueue in (p q r)\n";
    let jobs = parse(text).unwrap().expand(1).unwrap();
    let args: Vec<_> = jobs.iter().map(|j| j.arguments[0].clone()).collect();
    assert_eq!(args, vec!["p", "q", "r"]);
    // A `from` list has one item per line, as HTCondor reads it.
    let text = "executable = x\narguments = \"'$(Item)'\"\nqueue from (p q r)\n";
    let jobs = parse(text).unwrap().expand(1).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].arguments, ["p q r"]);
}

#[test]
fn queue_count_may_be_a_macro() {
    let jobs = parse("n = 3\nexecutable = x\nqueue $(n)\n")
        .unwrap()
        .expand(1)
        .unwrap();
    assert_eq!(jobs.len(), 3);
}

#[test]
fn unknown_command_is_a_warning_with_suggestion_and_exact_message() {
    // HTCondor takes an unknown key for a macro and warns that it is
    // unused; so does Gleaner, with the closest command.
    let s = parse("# header\n\n\nuniverse = vanilla\nqueue_later = 1\n\nexecutable = /bin/x\nexectuable = /bin/y\nqueue\n")
        .unwrap();
    let msgs: Vec<String> = s.warnings().iter().map(|w| w.to_string()).collect();
    assert!(
        msgs.contains(
            &"job.sub:8: warning: \"exectuable\" is not a submit command and nothing refers to \
              it: it has no effect, as in HTCondor (did you mean \"executable\"?)"
                .to_string()
        ),
        "{msgs:?}"
    );
    // Unrelated unknown key: no suggestion.
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("job.sub:5: warning: \"queue_later\"") && !m.contains("mean")),
        "{msgs:?}"
    );
    // A typo in the executable's key still leaves the job without one.
    let e = errors("exectuable = /bin/x\nqueue\n");
    assert_eq!(e.0[0].kind, SubmitErrorKind::MissingExecutable);
}

#[test]
fn all_errors_are_collected_with_line_numbers() {
    let text = "\
executable = /bin/x
this line has no equals
request_memory = 5 parsecs
request_cpus = 0
universe = docker
arguments = \"unterminated
+9bad = 1
output = $(undefined_macro)
queue abc
checkpoint_exit_code = 300
queue
";
    let e = errors(text);
    // Line 8's undefined macro expands to nothing, as in HTCondor (a
    // warning, below).
    assert_eq!(lines_of(&e), vec![2, 3, 4, 5, 6, 7, 9, 10], "{e}");
    assert!(matches!(e.0[0].kind, SubmitErrorKind::Malformed(_)));
    assert!(matches!(e.0[1].kind, SubmitErrorKind::BadValue { .. }));
    assert!(matches!(e.0[3].kind, SubmitErrorKind::Unsupported(_)));
    assert!(e.0[3].to_string().contains("universe \"docker\""), "{e}");
    assert!(matches!(e.0[5].kind, SubmitErrorKind::BadAttribute(_)));
    assert!(matches!(e.0[6].kind, SubmitErrorKind::BadQueue(_)));
    let s = parse("executable = x\noutput = $(undefined_macro)\nqueue\n").unwrap();
    assert!(
        s.warnings()[0]
            .to_string()
            .starts_with("job.sub:2: warning: $(undefined_macro) is not defined"),
        "{:?}",
        s.warnings()
    );
    assert_eq!(s.expand(1).unwrap()[0].output, None);
    // The Display form lists one problem per line.
    assert_eq!(e.to_string().lines().count(), e.0.len());
}

#[test]
fn expressions_are_syntax_checked() {
    let e = errors(
        "executable = x\nrequirements = (Memory > 1024\nrank = KFlops +\n+Good = \"ok\"\n+Bad = 1 +* 2\nqueue\n",
    );
    assert_eq!(lines_of(&e), vec![2, 3, 5], "{e}");
    assert!(
        e.to_string()
            .contains("invalid value for requirements: not a valid expression")
    );
    // Match-time macros are allowed inside expressions.
    parse("executable = x\nrequirements = Arch == $$(Arch) && Name =!= \"$$(Name)\"\nqueue\n")
        .unwrap();
}

#[test]
fn errors_in_procs_are_reported_once() {
    let e = errors("executable = x\nrequest_cpus = $(Process)\nqueue 3\n");
    // Proc 0 gives request_cpus = 0 (invalid); 1 and 2 are fine.
    assert_eq!(lines_of(&e), vec![2]);
    // A request that is neither a number nor an expression.
    let e = errors("executable = x\nrequest_cpus = 1 +\nqueue 50\n");
    assert_eq!(e.0.len(), 1);
}

#[test]
fn missing_pieces() {
    let e = errors("executable = x\n");
    assert_eq!(e.0[0].kind, SubmitErrorKind::NoQueue);
    assert_eq!(
        e.0[0].to_string(),
        "job.sub: no queue statement: nothing to submit"
    );

    let e = errors("arguments = 1\nqueue\n");
    assert_eq!(e.0[0].kind, SubmitErrorKind::MissingExecutable);
    assert_eq!(e.0[0].line, 2);

    let e = errors("executable = x\nqueue\narguments = a \\");
    assert_eq!(e.0[0].kind, SubmitErrorKind::DanglingContinuation);

    let e = errors("executable = x\nqueue name in (a b\nqueue\n");
    assert!(matches!(e.0[0].kind, SubmitErrorKind::BadQueue(_)), "{e}");

    let e = errors("executable = x\noutput = $ENV(NOT_SET)\nqueue\n");
    assert_eq!(e.0[0].kind, SubmitErrorKind::UndefinedEnv("NOT_SET".into()));
    assert_eq!(e.0[0].line, 2);
}

#[test]
fn recursive_and_builtin_macros_are_errors() {
    let e = errors("a = $(b)\nb = $(a)\nexecutable = $(a)\nqueue\n");
    assert!(
        e.0.iter()
            .any(|e| matches!(e.kind, SubmitErrorKind::RecursiveMacro(_))),
        "{e}"
    );
    let e = errors("Process = 3\nexecutable = x\nqueue\n");
    assert_eq!(
        e.0[0].kind,
        SubmitErrorKind::BuiltinRedefined("Process".into())
    );
}

#[test]
fn unsupported_queue_forms() {
    let e = errors("executable = x\nqueue f matching *.dat\n");
    assert!(matches!(e.0[0].kind, SubmitErrorKind::Unsupported(_)));
    let e = errors("executable = x\nqueue f from list.txt\n");
    assert!(matches!(e.0[0].kind, SubmitErrorKind::Unsupported(_)));
    let e = errors("executable = x\nqueue 1000000\n");
    assert!(matches!(e.0[0].kind, SubmitErrorKind::BadQueue(_)));
}

#[test]
fn submission_round_trips_through_json() {
    let sub = parse("executable = x\narguments = $(Cluster)\nqueue 2\n").unwrap();
    let json = serde_json::to_string(&sub).unwrap();
    let back: ClusterSubmission = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sub);
    assert_eq!(back.expand(9).unwrap()[1].arguments, vec!["9"]);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The parser never panics, whatever it is fed.
        #[test]
        fn never_panics(text in "(?s).{0,400}") {
            let _ = parse(&text);
        }

        /// Nor on plausible-looking garbage built from submit-file pieces.
        #[test]
        fn never_panics_on_submit_like_text(
            parts in prop::collection::vec(
                prop_oneof![
                    Just("executable = x\n".to_string()),
                    Just("queue".to_string()),
                    Just(" 3".to_string()),
                    Just(" in (".to_string()),
                    Just(")".to_string()),
                    Just("$(".to_string()),
                    Just("$ENV(".to_string()),
                    Just("$$(".to_string()),
                    Just("\\\n".to_string()),
                    Just("\n".to_string()),
                    Just("=".to_string()),
                    Just("+".to_string()),
                    Just("\"".to_string()),
                    Just("'".to_string()),
                    "[a-zA-Z_ ]{0,8}",
                ],
                0..40,
            )
        ) {
            let text: String = parts.concat();
            if let Ok(sub) = parse(&text) {
                // Whatever validated expands with the probe's id.
                prop_assert!(sub.expand(1).is_ok());
            }
        }
    }
}

#[test]
fn checkpoint_interval_is_seconds_and_positive() {
    let text = "executable = a\ncheckpoint_exit_code = 85\ncheckpoint_interval = 60\nqueue\n";
    let jobs = parse(text).unwrap().expand(1).unwrap();
    assert_eq!(jobs[0].checkpoint_interval_secs, Some(60));
    for bad in ["0", "soon", "-5"] {
        let e = errors(&format!(
            "executable = a\ncheckpoint_interval = {bad}\nqueue\n"
        ));
        assert_eq!(lines_of(&e), vec![2], "{e}");
    }
}

#[test]
fn checkpoint_method_selects_criu_and_refuses_mixing() {
    use gleaner_proto::job::CheckpointMethod;
    let text = "executable = a\ncheckpoint_method = CRIU\ncheckpoint_interval = 30\nqueue\n";
    let jobs = parse(text).unwrap().expand(1).unwrap();
    assert_eq!(jobs[0].checkpoint_method, CheckpointMethod::Criu);
    let jobs = parse("executable = a\nqueue\n").unwrap().expand(1).unwrap();
    assert_eq!(jobs[0].checkpoint_method, CheckpointMethod::Auto);
    let e = errors("executable = a\ncheckpoint_method = magic\nqueue\n");
    assert_eq!(lines_of(&e), vec![2], "{e}");
    // The error names the checkpoint_method line, whatever the order.
    let e = errors("executable = a\ncheckpoint_method = criu\ncheckpoint_exit_code = 85\nqueue\n");
    assert_eq!(lines_of(&e), vec![2], "{e}");
    assert!(e.to_string().contains("checkpoint_exit_code"), "{e}");
}

/// The job's hold/release policy keys are stored under HTCondor's job-ad
/// names, checked as expressions.
#[test]
fn policy_keys_become_job_ad_expressions() {
    let text = "executable = a.sh\n\
                on_exit_hold = ExitCode =!= 0\n\
                on_exit_hold_reason = \"bad exit\"\n\
                on_exit_hold_subcode = 4\n\
                periodic_hold = CurrentTime - QDate > 3600\n\
                periodic_release = HoldReasonCode == 6 && NumJobStarts < 3\n\
                queue\n";
    let jobs = parse(text).expect("valid").expand(1).expect("expands");
    let a = &jobs[0].custom_attrs;
    assert_eq!(a["OnExitHold"], "ExitCode =!= 0");
    assert_eq!(a["OnExitHoldReason"], "\"bad exit\"");
    assert_eq!(a["OnExitHoldSubCode"], "4");
    assert_eq!(a["PeriodicHold"], "CurrentTime - QDate > 3600");
    assert_eq!(
        a["PeriodicRelease"],
        "HoldReasonCode == 6 && NumJobStarts < 3"
    );
    let e = errors("executable = a.sh\nperiodic_release = (1 +\nqueue\n");
    assert_eq!(lines_of(&e), vec![2]);
}
