//! HTCondor's submit language, construct by construct (issue 19): every
//! `queue` form, `include`, `if`/`elif`/`else`, the function macros,
//! match-time `$$()`, command-line definitions, and what is refused or
//! warned about. (`htcondor_corpus.rs` compares whole files with
//! HTCondor's own submit code.)

use gleaner_proto::job::JobDescription;
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::submit::{
    ClusterSubmission, SubmitContext, SubmitErrors, matchtime, parse_submit,
};
use std::path::Path;

fn ctx() -> SubmitContext {
    SubmitContext::new("job.sub", "alice")
}

fn parse_in(dir: &Path, text: &str) -> Result<ClusterSubmission, SubmitErrors> {
    parse_submit(text, &ctx().with_dir(dir))
}

fn jobs(text: &str) -> Vec<JobDescription> {
    parse_submit(text, &ctx()).unwrap().expand(9).unwrap()
}

fn args(jobs: &[JobDescription]) -> Vec<String> {
    jobs.iter().map(|j| j.arguments.join(" ")).collect()
}

#[test]
fn every_queue_form() {
    // queue N, with an expression count.
    assert_eq!(jobs("executable = x\nqueue\n").len(), 1);
    assert_eq!(jobs("executable = x\nqueue 0\n").len(), 0);
    assert_eq!(jobs("executable = x\nn = 3\nqueue $(n) * 2\n").len(), 6);
    // in: inline, comma and/or space separated, and over lines.
    let j = jobs(
        "executable = x\narguments = $(Item) $(ItemIndex) $(Step) $(Process)\nqueue 2 in a, b\n",
    );
    assert_eq!(args(&j), ["a 0 0 0", "a 0 1 1", "b 1 0 2", "b 1 1 3"]);
    let j = jobs("executable = x\narguments = $(v)\nqueue v in (\n  a b\n  # skipped\n  c\n)\n");
    assert_eq!(args(&j), ["a", "b", "c"]);
    // A slice keeps the item's index in the whole list.
    let j = jobs("executable = x\narguments = $(x) $(ItemIndex)\nqueue x in [1:4:2] (a b c d e)\n");
    assert_eq!(args(&j), ["b 1", "d 3"]);
    // from: rows split over several variables, the last takes the rest.
    let j = jobs(
        "executable = x\narguments = $(a)|$(b)\nqueue a,b from (\n  x  y, z w\n  p,q\n  r\n)\n",
    );
    assert_eq!(args(&j), ["x|y, z w", "p|q", "r|"]);
    // A queue variable named like a command sets it.
    let j = jobs("executable = x\nqueue input,arguments from (\n  f1, -a 1\n)\n");
    assert_eq!(j[0].input.as_deref(), Some("f1"));
    assert_eq!(j[0].arguments, ["-a", "1"]);
}

#[test]
fn queue_from_a_file_and_matching_read_beside_the_submit_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("rows.txt"), "one 1\ntwo 2\n").unwrap();
    for f in ["b.dat", "a.dat", "c.txt"] {
        std::fs::write(d.path().join(f), "").unwrap();
    }
    std::fs::create_dir(d.path().join("sub.dir")).unwrap();
    let s = parse_in(
        d.path(),
        "executable = x\narguments = $(n) $(v)\nqueue n,v from rows.txt\n",
    )
    .unwrap();
    assert_eq!(args(&s.expand(1).unwrap()), ["one 1", "two 2"]);
    let s = parse_in(
        d.path(),
        "executable = x\ntransfer_input_files = $(f)\nqueue f matching files *.dat *.dir\n",
    )
    .unwrap();
    let files: Vec<_> = s
        .expand(1)
        .unwrap()
        .iter()
        .map(|j| j.transfer_input_files.join(","))
        .collect();
    assert_eq!(files, ["a.dat", "b.dat"]);
    let s = parse_in(
        d.path(),
        "executable = x\ninitialdir = $(d)\nqueue d matching dirs *\n",
    )
    .unwrap();
    assert_eq!(s.expand(1).unwrap()[0].iwd.as_deref(), Some("sub.dir/"));
    // A missing file is an error naming it, at the queue line.
    let e = parse_in(d.path(), "executable = x\nqueue v from nothing.txt\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("job.sub:2: invalid queue statement: from nothing.txt"),
        "{e}"
    );
    // Without a directory (the station), files are never read.
    let e = parse_submit("executable = x\nqueue v from rows.txt\n", &ctx()).unwrap_err();
    assert!(
        e.to_string().contains("read where the submit file is read"),
        "{e}"
    );
    // A command's output is not run.
    let e = parse_in(d.path(), "executable = x\nqueue v from ls |\n").unwrap_err();
    assert!(e.to_string().contains("COMMAND |"), "{e}");
}

#[test]
fn include_nests_and_problems_name_the_included_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("a.inc"),
        "include : b.inc\narguments = from-a\n",
    )
    .unwrap();
    std::fs::write(d.path().join("b.inc"), "executable = /bin/echo\n").unwrap();
    std::fs::write(
        d.path().join("bad.inc"),
        "executable = x\nrequest_cpus = 0\n",
    )
    .unwrap();
    std::fs::write(d.path().join("loop.inc"), "include : loop.inc\n").unwrap();
    let s = parse_in(d.path(), "INCLUDE : a.inc\nqueue\n").unwrap();
    let j = s.expand(1).unwrap();
    assert_eq!(
        (j[0].executable.as_str(), j[0].arguments[0].as_str()),
        ("/bin/echo", "from-a")
    );
    let e = parse_in(d.path(), "include : bad.inc\nqueue\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "bad.inc:2: invalid value for request_cpus: \"0\" is not a positive whole number"
    );
    let e = parse_in(d.path(), "executable = x\ninclude : loop.inc\nqueue\n").unwrap_err();
    assert!(e.to_string().contains("nested more than 10 deep"), "{e}");
    let e = parse_in(d.path(), "executable = x\ninclude : none.inc\nqueue\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("job.sub:2: invalid value for include: cannot read"),
        "{e}"
    );
    parse_in(
        d.path(),
        "executable = x\ninclude ifexist : none.inc\nqueue\n",
    )
    .unwrap();
}

#[test]
fn conditionals() {
    let text = "executable = x
if defined X
  arguments = -n $(X)
elif $(Fast:false)
  arguments = fast
elif ! defined Slow
  arguments = normal
else
  arguments = slow
endif
if version >= 8.1.6
  priority = 3
endif
queue
";
    let run = |defines: &[(&str, &str)]| {
        let c = ctx().with_defines(
            defines
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        let j = parse_submit(text, &c).unwrap().expand(1).unwrap();
        (j[0].arguments.join(" "), j[0].priority)
    };
    assert_eq!(run(&[("X", "3")]), ("-n 3".into(), 3));
    assert_eq!(run(&[("Fast", "true")]), ("fast".into(), 3));
    assert_eq!(run(&[]), ("normal".into(), 3));
    assert_eq!(run(&[("Slow", "1")]), ("slow".into(), 3));
    // A condition that is no boolean, and a block left open, are errors.
    let e = parse_submit(
        "executable = x\nif $(Mode:fast)\nendif\nif true\nqueue\n",
        &ctx(),
    )
    .unwrap_err();
    let msgs = e.to_string();
    assert!(
        msgs.contains("job.sub:2: if $(Mode:fast): \"fast\" is not a simple boolean"),
        "{msgs}"
    );
    assert!(msgs.contains("job.sub:4: if without endif"), "{msgs}");
}

#[test]
fn function_macros() {
    let j = jobs(
        "executable = x
Name = abcdef
Index = $(Process) + 1
Files = in.dat, mid.dat
arguments = $INT(Index,%04d) $REAL(Index,%.2f) $SUBSTR(Name, 1, 3) $CHOICE(Process, Files) $Fn(/d/run.tar.gz) $Fx(/d/run.tar.gz) $Fp(/d/x) $BASENAME(/a/b.c) $EVAL(6 * 7)
queue 2
",
    );
    assert_eq!(
        args(&j),
        [
            "0001 1.00 bcd in.dat run.tar .gz /d/ b.c 42",
            "0002 2.00 bcd mid.dat run.tar .gz /d/ b.c 42"
        ]
    );
    // Random choices are the submission's: the same seed, the same draw
    // in every expansion (the CLI's check, the station's, --dry-run).
    let text = "executable = x\narguments = $RANDOM_INTEGER(0, 1000, 10) $RANDOM_CHOICE(a,b,c)\nqueue 20\n";
    let draw = |seed: u64| {
        let s = parse_submit(text, &ctx().with_seed(seed)).unwrap();
        (args(&s.expand(1).unwrap()), args(&s.expand(2).unwrap()))
    };
    let (a, b) = draw(7);
    assert_eq!(a, b);
    assert_eq!(draw(7).0, a);
    assert_ne!(draw(8).0, a);
    for line in &a {
        let (n, c) = line.split_once(' ').unwrap();
        let n: u32 = n.parse().unwrap();
        assert!(n <= 1000 && n.is_multiple_of(10), "{line}");
        assert!(["a", "b", "c"].contains(&c), "{line}");
    }
    // HTCondor's platform constants, as its own test jobs use them.
    let j = jobs(
        "executable = $CHOICE(IsWindows,/bin/echo,appendmsg)\narguments = $(IsLinux)\nqueue\n",
    );
    assert_eq!(j[0].executable, "/bin/echo");
    assert_eq!(args(&j), ["true"]);
    // Bad uses name the line.
    let e = parse_submit(
        "executable = x\narguments = $CHOICE(5, a, b)\nqueue\n",
        &ctx(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("job.sub:2: malformed macro reference: $CHOICE(5, a, b)"),
        "{e}"
    );
}

#[test]
fn match_time_values_wait_for_the_machine() {
    let j = jobs(
        "executable = x\narguments = \"os=$$(OpSys) mem=$$(Memory:?)\"\nrequirements = Arch == $$(Arch)\nqueue\n",
    );
    assert_eq!(j[0].arguments, ["os=$$(OpSys)", "mem=$$(Memory:?)"]);
    // Matching needs machines that have OpSys (no default), and compares
    // Arch with the machine's own.
    let class = JobClass::of(&j[0]);
    let req = class.requirements.unwrap();
    assert!(req.contains("(Arch == TARGET.Arch)"), "{req}");
    assert!(req.contains("(TARGET.OpSys =!= undefined)"), "{req}");
    assert!(!req.contains("Memory =!="), "{req}");
    // The host fills them in from its ad.
    let mut machine = gleaner_classad::Ad::new();
    machine.insert_str("OpSys", "LINUX");
    let filled: Vec<String> = j[0]
        .arguments
        .iter()
        .map(|a| matchtime::substitute(a, &machine, 0).unwrap())
        .collect();
    assert_eq!(filled, ["os=LINUX", "mem=?"]);
}

#[test]
fn every_command_is_implemented_recorded_or_refused() {
    // Recorded with a warning saying why it has no effect.
    let s = parse_submit(
        "executable = x\nnotification = complete\nnotify_user = me@here\ncoresize = 0\nqueue\n",
        &ctx(),
    )
    .unwrap();
    let w: Vec<String> = s.warnings().iter().map(|w| w.to_string()).collect();
    assert_eq!(
        w.len(),
        2,
        "coresize = 0 is what Gleaner does anyway: {w:?}"
    );
    assert!(w[0].starts_with("job.sub:2: warning: notification is recorded as JobNotification"));
    let ad = &s.expand(1).unwrap()[0].custom_attrs;
    assert_eq!(ad["JobNotification"], "2");
    assert_eq!(ad["NotifyUser"], "\"me@here\"");
    // notification = never: what Gleaner does; no warning.
    let s = parse_submit("executable = x\nNotification = NEVER\nqueue\n", &ctx()).unwrap();
    assert!(s.warnings().is_empty());
    // Refused where accepting would change what the user expects.
    for (line, what) in [
        ("universe = docker", "universe \"docker\" is not supported"),
        ("x509userproxy = /tmp/p", "Gleaner forwards no credentials"),
        ("transfer_output_remaps = \"a=b\"", "outputs come back"),
        ("run_as_owner = true", "slot account"),
        (
            "machine_count = 2",
            "machine_count needs universe = parallel",
        ),
        ("ec2_ami_id = ami-1", "grid-universe"),
    ] {
        let e = parse_submit(&format!("executable = x\n{line}\nqueue\n"), &ctx()).unwrap_err();
        assert!(
            e.to_string().starts_with("job.sub:2: ") && e.to_string().contains(what),
            "{line}: {e}"
        );
    }
    // Keys are case-insensitive; attribute names are aliases.
    let j = jobs("Executable = x\nHOLD = True\nCronMinute = */5\nOnExitRemove = false\nqueue\n");
    assert!(j[0].hold);
    assert_eq!(j[0].custom_attrs["CronMinute"], "\"*/5\"");
    assert_eq!(j[0].custom_attrs["OnExitRemove"], "false");
    assert_eq!(j[0].custom_attrs["DeferralPrepTime"], "300");
    let e = parse_submit("executable = x\ncron_hour = 25\nqueue\n", &ctx()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "job.sub:2: invalid value for cron_hour: cron_hour \"25\": 25 is outside 0-23"
    );
}

#[test]
fn retries_compose_on_exit_remove_as_htcondor_does() {
    let j = jobs("executable = x\nmax_retries = 3\nretry_until = 7\nqueue\n");
    assert_eq!(j[0].max_retries, Some(3));
    assert_eq!(
        j[0].custom_attrs["OnExitRemove"],
        "NumJobCompletions > JobMaxRetries || ExitCode is 0 || ExitCode == 7"
    );
    assert_eq!(j[0].custom_attrs["OnExitHold"], "false");
    let j = jobs("executable = x\nsuccess_exit_code = 4\nqueue\n");
    assert_eq!(j[0].max_retries, Some(2), "HTCondor's default");
}

#[test]
fn accounting_group_user_names_only_the_submitter() {
    let j =
        jobs("executable = x\naccounting_group = physics\naccounting_group_user = alice\nqueue\n");
    assert_eq!(j[0].custom_attrs["AccountingGroup"], "\"physics.alice\"");
    let e = parse_submit(
        "executable = x\naccounting_group = physics\naccounting_group_user = bob\nqueue\n",
        &ctx(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "job.sub:3: invalid value for accounting_group_user: \"bob\" is not you (alice): \
         accounting_group_user may only name the submitting user"
    );
}

#[test]
fn function_macros_nest_no_deeper_than_macros() {
    // A chain of macros through $INT() stops at the nesting limit instead
    // of running the stack out.
    let mut text = String::new();
    for i in 0..5_000 {
        text.push_str(&format!("m{i} = $INT(m{})\n", i + 1));
    }
    text.push_str("m5000 = 1\nexecutable = x\narguments = $(m0)\nqueue\n");
    let e = parse_submit(&text, &ctx()).unwrap_err();
    assert!(e.to_string().contains("nested more than 32 deep"), "{e}");
}

#[test]
fn a_macro_bomb_is_still_refused_quickly() {
    let mut text = String::from("m0 = xxxxxxxx\n");
    for i in 1..=40 {
        text.push_str(&format!("m{i} = $(m{})$(m{})\n", i - 1, i - 1));
    }
    text.push_str("executable = x\narguments = $INT(3) $SUBSTR(m40, 0, 2)\nqueue\n");
    // Through a function macro's argument too (submit_limits.rs measures
    // the plain case).
    let e = parse_submit(&text, &ctx()).unwrap_err();
    assert!(e.to_string().contains("expands to more than 1 MiB"), "{e}");
}

/// The parallel universe: `machine_count = k` members become procs 0..k-1
/// of the cluster, `$(Node)` is each one's rank, and the gang keys are
/// checked with file and line.
#[test]
fn parallel_jobs_become_one_proc_per_member() {
    use gleaner_core::gang::{OnEviction, Shape};
    use gleaner_proto::job::{GangPolicyKind, Universe};
    let text = "universe = parallel\nexecutable = x\nmachine_count = 3\n\
                output = out.$(Node)\ngang_on_eviction = vacate\nqueue\n";
    let s = parse_submit(text, &ctx()).unwrap();
    assert_eq!(s.proc_count(), 3);
    let j = s.expand(7).unwrap();
    assert_eq!(j.len(), 3);
    for (rank, d) in j.iter().enumerate() {
        assert_eq!(d.universe, Universe::Parallel);
        let m = d.gang.unwrap();
        assert_eq!(m.rank, rank as u32);
        assert_eq!(m.gang.machine_count, 3);
        assert_eq!(m.gang.policy, GangPolicyKind::Linger);
        assert_eq!(m.gang.on_eviction, OnEviction::Vacate);
        assert_eq!(d.output.as_deref(), Some(format!("out.{rank}").as_str()));
    }
    // All members are one class: the coordinator places them together.
    let classes = JobClass::group(&j);
    assert_eq!(classes.len(), 1);
    assert_eq!(classes[0].count, 3);
    assert_eq!(classes[0].gang.unwrap().machine_count, 3);
    // A vanilla job is no gang and its class says so.
    assert!(jobs("executable = x\nqueue\n")[0].gang.is_none());

    let r = parse_submit(
        "universe = parallel\nexecutable = x\nmachine_count = 8\ngang_policy = linger\n\
         gang_on_eviction = suspend\nqueue\n",
        &ctx(),
    )
    .unwrap()
    .expand(1)
    .unwrap();
    let g = r[0].gang.unwrap().gang;
    assert_eq!(g.policy, GangPolicyKind::Linger);
    assert_eq!((g.min, g.shape), (1, Shape::Any));
    assert_eq!(g.on_eviction, OnEviction::Suspend);

    // Reconfiguration (Ryu & Hollingsworth §7): from gang_min to
    // machine_count members, shaped.
    let r = parse_submit(
        "universe = parallel\nexecutable = x\nmachine_count = 8\ngang_policy = reconfigure\n\
         gang_min = 2\ngang_shape = power_of_two\ngang_on_eviction = vacate\nqueue\n",
        &ctx(),
    )
    .unwrap()
    .expand(1)
    .unwrap();
    assert_eq!(r.len(), 8);
    let g = r[0].gang.unwrap().gang;
    assert_eq!(g.policy, GangPolicyKind::Reconfigure);
    assert_eq!((g.min, g.shape), (2, Shape::PowerOfTwo));
    assert_eq!(g.on_eviction, OnEviction::Vacate);
    assert_eq!(g.fewest(), 2);
    assert!(g.policy().runs_on(4) && !g.policy().runs_on(3));

    for (text, what) in [
        (
            "universe = parallel\nexecutable = x\nmachine_count = 0\nqueue\n",
            "job.sub:3: invalid value for machine_count",
        ),
        (
            "universe = parallel\nexecutable = x\nmachine_count = 65\nqueue\n",
            "from 1 to 64",
        ),
        (
            "universe = parallel\nexecutable = x\nmachine_count = three\nqueue\n",
            "job.sub:3: invalid value for machine_count",
        ),
        (
            "universe = parallel\nexecutable = x\nqueue\n",
            "job.sub:1: invalid value for universe: universe = parallel needs machine_count",
        ),
        (
            "universe = parallel\nexecutable = x\nmachine_count = 2\nqueue 2\n",
            "job.sub:4: ",
        ),
        (
            "executable = x\ngang_policy = linger\nqueue\n",
            "job.sub:2: invalid value for gang_policy: gang_policy needs universe = parallel",
        ),
        (
            "universe = parallel\nexecutable = x\nmachine_count = 2\ngang_policy = fast\nqueue\n",
            "job.sub:4: invalid value for gang_policy",
        ),
        (
            "universe = parallel\nexecutable = x\nmachine_count = 2\ngang_min = 1\nqueue\n",
            "gang_min applies to gang_policy = reconfigure only",
        ),
        (
            "universe = parallel\nexecutable = x\nmachine_count = 3\ngang_policy = reconfigure\n\
             gang_min = 4\nqueue\n",
            "job.sub:5: invalid value for gang_min: expected a whole number from 1 to 3",
        ),
        (
            "universe = parallel\nexecutable = x\nmachine_count = 3\ngang_policy = reconfigure\n\
             gang_shape = hexagon\nqueue\n",
            "job.sub:5: invalid value for gang_shape",
        ),
        (
            "universe = parallel\nexecutable = x\nmachine_count = 3\ngang_policy = reconfigure\n\
             gang_min = 3\ngang_shape = power_of_two\nqueue\n",
            "job.sub:5: invalid value for gang_min: no member count from gang_min 3 to \
             machine_count 3 fits gang_shape",
        ),
    ] {
        let e = parse_submit(text, &ctx()).unwrap_err().to_string();
        assert!(e.contains(what), "{text}: {e}");
    }
}

/// Any argument list and environment, written in a submit file in the new
/// syntax, come out of the job ad as they went in (HTCondor's raw V2
/// `Arguments`/`Environment`, read back with HTCondor's rules), and the
/// description the host launches the guest from (its argv and
/// environment) holds them unchanged.
mod argv_round_trip {
    use super::*;
    use gleaner_classad::EvalContext;
    use gleaner_core::time::Time;
    use gleaner_proto::args::{join_v2_raw, parse_environment_syntax, split_v2_raw, v2_quoted};
    use gleaner_proto::job_ad::submission_ads;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The ad's string attribute `name`.
    fn ad_string(ad: &gleaner_classad::Ad, name: &str) -> Option<String> {
        ad.get(name)
            .and_then(|e| EvalContext::new(0).eval(e).as_str().map(str::to_string))
    }

    /// Printable text without `$` (which the submit language expands in
    /// any value, as HTCondor's does).
    const TEXT: &str = "[ -#%-~]{0,10}";

    proptest! {
        #[test]
        fn arguments_and_environment_survive_the_job_ad(
            argv in prop::collection::vec(TEXT, 0..6),
            env in prop::collection::btree_map("[A-Za-z_][A-Za-z0-9_]{0,6}", TEXT, 0..4),
        ) {
            let env_words: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let text = format!(
                "executable = x\narguments = {}\nenvironment = {}\nqueue\n",
                v2_quoted(&argv),
                v2_quoted(&env_words)
            );
            let sub = parse_submit(&text, &ctx()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let descs = sub.expand(1).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&descs[0].arguments, &argv);
            prop_assert_eq!(&descs[0].environment, &env);
            let ads = submission_ads(&sub, 1, Time::from_secs(0), None)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let raw = ad_string(&ads[0], "Arguments").unwrap_or_default();
            prop_assert_eq!(&raw, &join_v2_raw(&argv));
            prop_assert_eq!(split_v2_raw(&raw).map_err(|e| TestCaseError::fail(e.to_string()))?, argv);
            prop_assert!(ads[0].get("Args").is_none());
            let raw = ad_string(&ads[0], "Environment").unwrap_or_default();
            let (back, _) = parse_environment_syntax(&format!("\"{}\"", raw.replace('"', "\"\"")))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back: BTreeMap<String, String> = back.into_iter().collect();
            prop_assert_eq!(back, env);
        }
    }
}
