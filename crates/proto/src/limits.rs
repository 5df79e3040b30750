//! Limits on everything a user controls in a submission (issue 14, item 2).
//!
//! One place for the numbers, used by the submit parser and macro expander
//! (which the CLI runs before sending, and the station runs again on what it
//! receives: it never trusts the client), and by [`check_description`],
//! which every expanded job description passes before it is queued.
//!
//! The expander enforces its limits *while* it expands, before it
//! allocates: a doubling macro (`m2 = $(m1)$(m1)`, … `arguments = $(m30)`)
//! is refused after about a megabyte of work instead of asking for
//! gigabytes.

use crate::job::JobDescription;
use std::fmt;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// Most procs one submission may queue. Bounds memory on a typo like
/// `queue 10000000000`. HTCondor's schedd has a knob of the same kind
/// (`MAX_JOBS_PER_SUBMISSION`); 100 000 is what Gleaner's CLI always used.
pub const MAX_PROCS: u64 = 100_000;

/// Largest submit file read, bytes. A file listing 100 000 items of ~80
/// characters fits; anything larger is generated and belongs in several
/// submissions.
pub const MAX_SUBMIT_FILE_BYTES: u64 = 8 * MIB;

/// Largest parsed submission, bytes (as counted by the parser: every
/// assignment in force at each `queue` statement, every proc's item
/// binding, the environment the file reads). This is what the CLI sends and
/// what the station holds while it expands; `queue 100000 in (…)` with a
/// large item would otherwise be copied once per proc.
pub const MAX_SUBMISSION_BYTES: u64 = 32 * MIB;

/// Largest single value, as written or after macro expansion, bytes. No
/// key needs more: arguments and environment together are held to
/// [`MAX_ARGS_ENV_BYTES`], which is the same.
pub const MAX_VALUE_BYTES: usize = MIB as usize;

/// Macro text the expander may produce for one whole submission (every
/// key of every proc, nested references included), bytes. Bounds CPU time
/// for clusters whose values are each within [`MAX_VALUE_BYTES`]. A
/// 100 000-proc cluster with 20 keys of 100 bytes uses 200 MB.
pub const MAX_EXPANSION_BYTES: u64 = 512 * MIB;

/// What one macro reference costs against [`MAX_EXPANSION_BYTES`] besides
/// its text, so that references to empty macros are not free.
pub const REFERENCE_COST: u64 = 16;

/// Expanded macros remembered per proc, bytes: a macro used many times is
/// expanded once, and what is remembered stays bounded.
pub const MAX_MEMO_BYTES: usize = 16 * MIB as usize;

/// Longest path (`executable`, `input`, `output`, `error`, `log`,
/// `initialdir`, each transfer file), bytes: Linux's `PATH_MAX` counts
/// the terminating NUL in 4096.
pub const MAX_PATH_BYTES: usize = 4095;

/// Longest single argument or `NAME=VALUE` environment entry, bytes:
/// Linux's `MAX_ARG_STRLEN` (32 pages, terminating NUL included). A longer
/// one makes `execve` fail with E2BIG on every host.
pub const MAX_ARG_BYTES: usize = 32 * 4096 - 1;

/// Arguments and environment of one job together, bytes (each string
/// counted with its NUL). Linux refuses `execve` beyond a quarter of the
/// stack limit (2 MiB with the usual 8 MiB stack); the starter adds
/// variables of its own, so users get half.
pub const MAX_ARGS_ENV_BYTES: usize = MIB as usize;

/// Longest ClassAd expression (`requirements`, `rank`, a custom
/// attribute), bytes. The matchmaker evaluates them for every machine.
pub const MAX_EXPRESSION_BYTES: usize = 64 * KIB as usize;

/// Largest job description, bytes (as counted by [`description_bytes`]).
/// The queue stores it, `glean q` shows it and it travels to every host.
pub const MAX_DESCRIPTION_BYTES: usize = 4 * MIB as usize;

/// All the job descriptions of one submission together, bytes: what the
/// station holds in memory and writes to its queue in one transaction.
pub const MAX_CLUSTER_BYTES: u64 = 256 * MIB;

/// Longest submit file name carried in a submission (it is repeated in
/// every error message), bytes.
pub const MAX_FILE_NAME_BYTES: usize = 4096;

/// `n` bytes for people: `812 B`, `64 KiB`, `2.1 MiB`.
pub fn human_bytes(n: u64) -> String {
    if n < KIB {
        return format!("{n} B");
    }
    let (unit, div) = if n < MIB {
        ("KiB", KIB)
    } else if n < 1024 * MIB {
        ("MiB", MIB)
    } else {
        ("GiB", 1024 * MIB)
    };
    let x = format!("{:.1}", n as f64 / div as f64);
    format!("{} {unit}", x.strip_suffix(".0").unwrap_or(&x))
}

/// One problem with a job description: the field, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldProblem {
    /// The submit key it comes from (`arguments`, `environment`, …; a
    /// custom attribute as `+Name`).
    pub field: String,
    pub reason: String,
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// "`size`, more than the `limit` limit", in bytes when rounding would
/// make the two look equal.
pub fn over_limit(size: u64, limit: u64) -> String {
    too_big(size as usize, limit as usize, "")
}

fn too_big(size: usize, limit: usize, what: &str) -> String {
    let (s, l) = (human_bytes(size as u64), human_bytes(limit as u64));
    if s == l {
        format!("{size} bytes, more than the {limit}-byte limit{what}")
    } else {
        format!("{s}, more than the {l} limit{what}")
    }
}

/// Bytes of a description as the limits count them: every string with a
/// small overhead per entry (close to its JSON size, computed without
/// serialising it).
pub fn description_bytes(d: &JobDescription) -> usize {
    const ENTRY: usize = 8;
    let s = |x: &str| x.len() + ENTRY;
    let o = |x: &Option<String>| x.as_deref().map_or(0, s);
    let v = |x: &[String]| x.iter().map(|a| s(a)).sum::<usize>();
    let m = |x: &std::collections::BTreeMap<String, String>| {
        x.iter().map(|(k, val)| s(k) + s(val)).sum::<usize>()
    };
    // Fixed-size fields and key names.
    const FIXED: usize = 640;
    FIXED
        + s(&d.owner)
        + s(&d.executable)
        + v(&d.arguments)
        + m(&d.environment)
        + o(&d.input)
        + o(&d.output)
        + o(&d.error)
        + o(&d.log)
        + o(&d.iwd)
        + v(&d.transfer_input_files)
        + d.transfer_output_files.as_deref().map_or(0, v)
        + o(&d.requirements)
        + o(&d.rank)
        + v(&d.transfer_checkpoint_files)
        + v(&d.concurrency_limits)
        + o(&d.accounting_group)
        + o(&d.batch_name)
        + m(&d.custom_attrs)
}

/// Checks a string the operating system will receive (a path, an argument,
/// an environment entry): no NUL byte, which no system call can carry.
fn os_string(field: &str, what: &str, value: &str, out: &mut Vec<FieldProblem>) -> bool {
    if value.contains('\0') {
        out.push(FieldProblem {
            field: field.to_string(),
            reason: format!("{what} contains a NUL byte, which no program can receive"),
        });
        return false;
    }
    true
}

fn path(field: &str, value: &str, out: &mut Vec<FieldProblem>) {
    if os_string(field, "the path", value, out) && value.len() > MAX_PATH_BYTES {
        out.push(FieldProblem {
            field: field.to_string(),
            reason: too_big(value.len(), MAX_PATH_BYTES, " for a path (PATH_MAX)"),
        });
    }
}

/// Every problem of a job description that would make it impossible to
/// run, or too large to keep: NUL bytes in what the system receives,
/// arguments and environment beyond what `execve` takes, paths beyond
/// `PATH_MAX`, environment names that cannot be names, oversize
/// expressions and descriptions. Empty when the description is fine.
pub fn check_description(d: &JobDescription) -> Vec<FieldProblem> {
    let mut out = Vec::new();
    if d.executable.is_empty() {
        out.push(FieldProblem {
            field: "executable".into(),
            reason: "empty".into(),
        });
    }
    path("executable", &d.executable, &mut out);
    for (field, p) in [
        ("input", &d.input),
        ("output", &d.output),
        ("error", &d.error),
        ("log", &d.log),
        ("initialdir", &d.iwd),
    ] {
        if let Some(p) = p {
            path(field, p, &mut out);
        }
    }
    for (field, list) in [
        ("transfer_input_files", Some(&d.transfer_input_files)),
        ("transfer_output_files", d.transfer_output_files.as_ref()),
        (
            "transfer_checkpoint_files",
            Some(&d.transfer_checkpoint_files),
        ),
    ] {
        for p in list.into_iter().flatten() {
            path(field, p, &mut out);
        }
    }

    let mut args_env = 0usize;
    for (i, a) in d.arguments.iter().enumerate() {
        let what = format!("argument {}", i + 1);
        if os_string("arguments", &what, a, &mut out) && a.len() > MAX_ARG_BYTES {
            out.push(FieldProblem {
                field: "arguments".into(),
                reason: format!(
                    "{what} is {}",
                    too_big(a.len(), MAX_ARG_BYTES, " for one argument (MAX_ARG_STRLEN)")
                ),
            });
        }
        args_env += a.len() + 1;
    }
    let args_only = args_env;
    for (k, v) in &d.environment {
        let what = format!("variable {k:?}");
        if k.is_empty() || k.contains('=') {
            out.push(FieldProblem {
                field: "environment".into(),
                reason: format!("{what}: a name must be non-empty and without '='"),
            });
        }
        let ok = os_string("environment", &what, k, &mut out)
            && os_string("environment", &what, v, &mut out);
        let entry = k.len() + 1 + v.len();
        if ok && entry > MAX_ARG_BYTES {
            out.push(FieldProblem {
                field: "environment".into(),
                reason: format!(
                    "{what} is {}",
                    too_big(entry, MAX_ARG_BYTES, " for one entry (MAX_ARG_STRLEN)")
                ),
            });
        }
        args_env += entry + 1;
    }
    if args_env > MAX_ARGS_ENV_BYTES {
        // Name the part that is the larger share.
        let field = if args_only * 2 >= args_env {
            "arguments"
        } else {
            "environment"
        };
        out.push(FieldProblem {
            field: field.into(),
            reason: format!(
                "arguments and environment together are {}",
                too_big(args_env, MAX_ARGS_ENV_BYTES, "")
            ),
        });
    }

    for (field, e) in [("requirements", &d.requirements), ("rank", &d.rank)] {
        if let Some(e) = e
            && e.len() > MAX_EXPRESSION_BYTES
        {
            out.push(FieldProblem {
                field: field.into(),
                reason: too_big(e.len(), MAX_EXPRESSION_BYTES, " for an expression"),
            });
        }
    }
    for (name, e) in &d.custom_attrs {
        if e.len() > MAX_EXPRESSION_BYTES {
            out.push(FieldProblem {
                field: format!("+{name}"),
                reason: too_big(e.len(), MAX_EXPRESSION_BYTES, " for an expression"),
            });
        }
    }
    // Only when nothing above explains it: the whole is then the problem.
    let total = description_bytes(d);
    if out.is_empty() && total > MAX_DESCRIPTION_BYTES {
        out.push(FieldProblem {
            field: "description".into(),
            reason: too_big(total, MAX_DESCRIPTION_BYTES, " for one job"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(812), "812 B");
        assert_eq!(human_bytes(64 * 1024), "64 KiB");
        assert_eq!(human_bytes(2_202_009), "2.1 MiB");
        assert_eq!(human_bytes(1 << 30), "1 GiB");
    }

    #[test]
    fn a_plain_description_passes() {
        let mut d = JobDescription::new("alice", "/bin/echo");
        d.arguments = vec!["hi".into()];
        d.environment.insert("A".into(), "1".into());
        assert_eq!(check_description(&d), vec![]);
    }

    #[test]
    fn impossible_values_name_their_field() {
        let mut d = JobDescription::new("alice", "/bin/e\0cho");
        d.arguments = vec!["ok".into(), "x".repeat(MAX_ARG_BYTES + 1)];
        d.environment.insert("A=B".into(), "1".into());
        d.output = Some("o\0ut".into());
        let p = check_description(&d);
        let fields: Vec<&str> = p.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["executable", "output", "arguments", "environment"]);
        assert!(p[0].reason.contains("NUL"), "{}", p[0]);
        assert!(
            p[2].to_string()
                == "arguments: argument 2 is 131072 bytes, more than the 131071-byte limit for one argument (MAX_ARG_STRLEN)",
            "{}",
            p[2]
        );
    }

    #[test]
    fn arguments_and_environment_share_one_budget() {
        let mut d = JobDescription::new("alice", "/bin/echo");
        d.arguments = (0..20).map(|_| "y".repeat(100_000)).collect();
        let p = check_description(&d);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].field, "arguments");
        assert!(
            p[0].reason.contains("1.9 MiB, more than the 1 MiB limit"),
            "{}",
            p[0]
        );
    }
}
