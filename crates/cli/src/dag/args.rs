//! condor_submit_dag's command line: HTCondor's flags, matched as
//! HTCondor matches them (any case; any prefix that picks exactly the
//! flag the case-insensitively sorted table puts first at or after it, so
//! `-DoRecov` is `-DoRecovery` and `-no` is `-no_recurse`), plus
//! Gleaner's `--dry-run` and `--json`. A flag given with two dashes is
//! read as with one.

use gleaner_station::home::dagman::DagOptions;

/// condor_submit_dag's command line, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub files: Vec<String>,
    pub options: DagOptions,
    /// `-no_submit` or `--dry-run`.
    pub dry_run: bool,
    /// `--json`: the plan as JSON.
    pub json: bool,
}

/// What a flag does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flag {
    /// Sets an option from the next argument.
    Value(Opt),
    /// Sets an option, no argument.
    Switch(Opt),
    /// Accepted and ignored (why), with or without an argument.
    Ignored(&'static str, bool),
    /// Refused (why).
    Refused(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opt {
    MaxIdle,
    MaxJobs,
    MaxPre,
    MaxPost,
    MaxHold,
    Priority,
    AutoRescue,
    DoRescueFrom,
    BatchName,
    Append,
    InsertSubFile,
    Config,
    Notification,
    RescueFile,
    LoadSave,
    OutfileDir,
    IncludeEnv,
    InsertEnv,
    DagFile,
    Force,
    NoSubmit,
    DryRun,
    UseDagDir,
    AlwaysRunPost,
    DontAlwaysRunPost,
    ImportEnv,
    SuppressNotification,
    DontSuppressNotification,
}

const REMOTE: &str = "a DAG is submitted to your own station (the one `glean submit` uses); \
                      use --station or GLEAN_HOME to pick another";

/// HTCondor 25's flags (condor_submit_dag and condor_dagman share them),
/// lower case.
const FLAGS: &[(&str, Flag)] = &[
    ("-a", Flag::Value(Opt::Append)),
    (
        "-allowversionmismatch",
        Flag::Ignored("there is one version", false),
    ),
    ("-alwaysrunpost", Flag::Switch(Opt::AlwaysRunPost)),
    ("-append", Flag::Value(Opt::Append)),
    ("-autorescue", Flag::Value(Opt::AutoRescue)),
    ("-batch-name", Flag::Value(Opt::BatchName)),
    ("-config", Flag::Value(Opt::Config)),
    ("-csdversion", Flag::Ignored("there is one version", true)),
    ("-dag", Flag::Value(Opt::DagFile)),
    (
        "-dagman",
        Flag::Ignored("the station is the DAG manager", true),
    ),
    (
        "-debug",
        Flag::Ignored("dagman.out has one level of detail", true),
    ),
    (
        "-do_recurse",
        Flag::Ignored("sub-DAGs are read by the station when they start", false),
    ),
    (
        "-dont_suppress_notification",
        Flag::Switch(Opt::DontSuppressNotification),
    ),
    ("-dontalwaysrunpost", Flag::Switch(Opt::DontAlwaysRunPost)),
    (
        "-dorecovery",
        Flag::Ignored("a DAG always recovers from the station's records", false),
    ),
    ("-dorescuefrom", Flag::Value(Opt::DoRescueFrom)),
    (
        "-dot",
        Flag::Refused(
            "-dot (dump the DOT file and exit) is condor_dagman's; use the DAG's DOT command",
        ),
    ),
    ("-dryrun", Flag::Switch(Opt::DryRun)),
    ("-f", Flag::Switch(Opt::Force)),
    ("-force", Flag::Switch(Opt::Force)),
    ("-import_env", Flag::Switch(Opt::ImportEnv)),
    ("-include_env", Flag::Value(Opt::IncludeEnv)),
    ("-insert_env", Flag::Value(Opt::InsertEnv)),
    ("-insert_sub_file", Flag::Value(Opt::InsertSubFile)),
    ("-load_save", Flag::Value(Opt::LoadSave)),
    (
        "-lockfile",
        Flag::Ignored("the station keeps its own records", true),
    ),
    ("-maxhold", Flag::Value(Opt::MaxHold)),
    ("-maxidle", Flag::Value(Opt::MaxIdle)),
    ("-maxjobs", Flag::Value(Opt::MaxJobs)),
    ("-maxpost", Flag::Value(Opt::MaxPost)),
    ("-maxpre", Flag::Value(Opt::MaxPre)),
    (
        "-no_recurse",
        Flag::Ignored("sub-DAGs are read by the station when they start", false),
    ),
    ("-no_submit", Flag::Switch(Opt::NoSubmit)),
    ("-notification", Flag::Value(Opt::Notification)),
    ("-outfile_dir", Flag::Value(Opt::OutfileDir)),
    ("-priority", Flag::Value(Opt::Priority)),
    ("-r", Flag::Refused(REMOTE)),
    ("-remote", Flag::Refused(REMOTE)),
    ("-rescuefile", Flag::Value(Opt::RescueFile)),
    ("-schedd-address-file", Flag::Refused(REMOTE)),
    ("-schedd-daemon-ad-file", Flag::Refused(REMOTE)),
    ("-setuponly", Flag::Switch(Opt::DryRun)),
    (
        "-submitmethod",
        Flag::Ignored("the station submits node jobs itself", true),
    ),
    (
        "-suppress_notification",
        Flag::Switch(Opt::SuppressNotification),
    ),
    (
        "-update_submit",
        Flag::Ignored("Gleaner writes no .condor.sub file", false),
    ),
    ("-usedagdir", Flag::Switch(Opt::UseDagDir)),
    (
        "-v",
        Flag::Ignored("messages are as detailed as they are", false),
    ),
    (
        "-valgrind",
        Flag::Ignored(
            "there is no condor_dagman process to run under valgrind",
            false,
        ),
    ),
    (
        "-verbose",
        Flag::Ignored("messages are as detailed as they are", false),
    ),
];

/// The flag `given` (lower case, one leading dash) stands for: the first
/// flag at or after it in order, if `given` is a prefix of it.
fn resolve(given: &str) -> Option<(&'static str, Flag)> {
    let i = FLAGS.partition_point(|(f, _)| *f < given);
    FLAGS.get(i).filter(|(f, _)| f.starts_with(given)).copied()
}

const USAGE: &str = "usage: glean dag submit [condor_submit_dag options] FILE.dag [FILE2.dag …] \
     (options: -maxidle N, -maxjobs N, -maxpre N, -maxpost N, -maxhold N, -f, -no_submit, \
     -batch-name NAME, -append CMD, -insert_sub_file FILE, -config FILE, -notification WHEN, \
     -AutoRescue 0|1, -DoRescueFrom N, -RescueFile FILE, -load_save FILE, -UseDagDir, \
     -AlwaysRunPost, -DontAlwaysRunPost, -priority N, -outfile_dir DIR, -import_env, \
     -include_env VARS, -insert_env K=V;…, --dry-run, --json)";

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse::<T>()
        .map_err(|_| format!("{flag} {v:?}: not a number"))
}

/// Parses condor_submit_dag's arguments.
pub fn parse_args(args: &[String]) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') || a == "-" {
            p.files.push(a.clone());
            continue;
        }
        let lower = a.to_ascii_lowercase();
        let (given, inline) = match lower.split_once('=') {
            // `--maxjobs=3`: Gleaner's spelling with the value attached.
            Some((f, _)) if lower.starts_with("--") => {
                let at = f.len() + 1;
                (f.to_string(), a.get(at..).map(String::from))
            }
            _ => (lower.clone(), None),
        };
        let given = given
            .strip_prefix('-')
            .filter(|g| g.starts_with('-'))
            .unwrap_or(&given);
        match given {
            "--dry-run" | "-dry-run" => {
                p.dry_run = true;
                continue;
            }
            "--json" | "-json" => {
                p.json = true;
                continue;
            }
            "-help" | "-h" | "--help" => return Err(USAGE.into()),
            _ => {}
        }
        let Some((full, flag)) = resolve(given) else {
            return Err(format!("unknown option {a:?}; {USAGE}"));
        };
        let o = &mut p.options;
        match flag {
            Flag::Refused(why) => return Err(format!("{full}: {why}")),
            Flag::Ignored(_, takes) => {
                if takes {
                    i += 1;
                }
            }
            Flag::Switch(opt) => match opt {
                Opt::Force => o.force = true,
                Opt::NoSubmit | Opt::DryRun => p.dry_run = true,
                Opt::UseDagDir => o.use_dag_dir = true,
                Opt::AlwaysRunPost => o.always_run_post = Some(true),
                Opt::DontAlwaysRunPost => o.always_run_post = Some(false),
                Opt::ImportEnv => o.import_env = true,
                Opt::SuppressNotification => o.suppress_notification = Some(true),
                Opt::DontSuppressNotification => o.suppress_notification = Some(false),
                _ => {}
            },
            Flag::Value(opt) => {
                let numeric = matches!(
                    opt,
                    Opt::MaxIdle
                        | Opt::MaxJobs
                        | Opt::MaxPre
                        | Opt::MaxPost
                        | Opt::MaxHold
                        | Opt::Priority
                        | Opt::AutoRescue
                        | Opt::DoRescueFrom
                );
                let v = match inline.clone() {
                    Some(v) => v,
                    None => {
                        let v = args.get(i).filter(|v| numeric || !v.starts_with('-'));
                        let v = v.ok_or_else(|| format!("{full} ({a}) needs a value"))?;
                        i += 1;
                        v.clone()
                    }
                };
                match opt {
                    Opt::MaxIdle => o.max_idle = Some(number(full, &v)?),
                    Opt::MaxJobs => o.max_jobs = Some(number(full, &v)?),
                    Opt::MaxPre => o.max_pre = Some(number(full, &v)?),
                    Opt::MaxPost => o.max_post = Some(number(full, &v)?),
                    Opt::MaxHold => o.max_hold = Some(number(full, &v)?),
                    Opt::Priority => o.priority = Some(number(full, &v)?),
                    Opt::AutoRescue => o.auto_rescue = Some(number::<i64>(full, &v)? != 0),
                    Opt::DoRescueFrom => o.do_rescue_from = Some(number(full, &v)?),
                    Opt::BatchName => o.batch_name = Some(v),
                    Opt::Append => o.append.push(v),
                    Opt::InsertSubFile => o.insert_sub_file = Some(v),
                    Opt::Config => o.config = Some(v),
                    Opt::Notification => o.notification = Some(v),
                    Opt::RescueFile => o.rescue_file = Some(v),
                    Opt::LoadSave => o.load_save = Some(v),
                    Opt::OutfileDir => o.outfile_dir = Some(v),
                    Opt::DagFile => p.files.push(v),
                    Opt::IncludeEnv => o.include_env.extend(
                        v.split(',')
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(String::from),
                    ),
                    Opt::InsertEnv => {
                        for kv in v.split(';').map(str::trim).filter(|s| !s.is_empty()) {
                            let (k, val) = kv
                                .split_once('=')
                                .ok_or_else(|| format!("{full} {kv:?}: expected KEY=VALUE"))?;
                            o.insert_env.push((k.trim().to_string(), val.to_string()));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    if p.files.is_empty() {
        return Err(format!("no DAG file given; {USAGE}"));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn table_is_sorted() {
        assert!(FLAGS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn condor_submit_dag_spelling() {
        let p = parse_args(&args(
            "-MaxIdle 5 --maxjobs=3 -f -batch-name nightly -append accounting_group=x -DoRescueFrom 2 -no_submit a.dag b.dag",
        ))
        .unwrap();
        assert_eq!(p.files, ["a.dag", "b.dag"]);
        assert_eq!(p.options.max_idle, Some(5));
        assert_eq!(p.options.max_jobs, Some(3));
        assert!(p.options.force && p.dry_run);
        assert_eq!(p.options.batch_name.as_deref(), Some("nightly"));
        assert_eq!(p.options.do_rescue_from, Some(2));
        assert_eq!(p.options.append, ["accounting_group=x"]);
        assert!(parse_args(&args("-maxidle x a.dag")).is_err());
        assert!(
            parse_args(&args("-bogus a.dag"))
                .unwrap_err()
                .contains("unknown option")
        );
        assert!(
            parse_args(&args("-maxidle 3"))
                .unwrap_err()
                .contains("no DAG file")
        );
        assert!(parse_args(&args("-verbose -update_submit a.dag")).is_ok());
        assert!(
            parse_args(&args("-remote s a.dag"))
                .unwrap_err()
                .contains("own station")
        );
    }

    #[test]
    fn prefixes_as_htcondor_reads_them() {
        // HTCondor's tests spell flags these ways.
        let p = parse_args(&args(
            "-v -DoRecov -AutoRescue 0 -MaxPre 1 -usedagdir x.dag",
        ))
        .unwrap();
        assert_eq!(p.options.auto_rescue, Some(false));
        assert_eq!(p.options.max_pre, Some(1));
        assert!(p.options.use_dag_dir);
        let p = parse_args(&args("-maxj 2 -no_s -AlwaysRunPost x.dag")).unwrap();
        assert_eq!(p.options.max_jobs, Some(2));
        assert!(p.dry_run);
        assert_eq!(p.options.always_run_post, Some(true));
        // `-allowlogerror` is no flag of HTCondor 25: the first flag at or
        // after it is -allowversionmismatch, of which it is no prefix.
        assert!(parse_args(&args("-allowlogerror x.dag")).is_err());
        // A string value may not look like a flag; a number may be negative.
        assert!(parse_args(&args("-batch-name -f x.dag")).is_err());
        assert_eq!(
            parse_args(&args("-priority -5 x.dag"))
                .unwrap()
                .options
                .priority,
            Some(-5)
        );
        assert_eq!(
            parse_args(&args("-dag a.dag b.dag")).unwrap().files,
            ["a.dag", "b.dag"]
        );
    }
}
