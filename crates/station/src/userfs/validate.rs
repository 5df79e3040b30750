//! Submit-time checks of a job's paths, as the job's owner, with the same
//! code the home later uses to open them (issue 12: "paths are validated
//! at submit time with the same code").
//!
//! Relative paths are resolved against `initialdir` (which the user API
//! has already made absolute). When `initialdir` itself is unusable, only
//! that is reported for the relative paths: each of them would fail for
//! the same reason.

use super::error::{Op, PathError, PathErrorKind};
use super::{AsUser, UserFs, UserFsError};
use gleaner_proto::job::JobDescription;
use std::fmt;
use std::path::{Path, PathBuf};

/// One path of a job the owner could not use, named by its submit key.
#[derive(Debug)]
pub struct PathProblem {
    /// The submit key: `executable`, `input`, `transfer_input_files`,
    /// `initialdir`, `output`, `error`, `log`, `transfer_output_files`.
    pub key: &'static str,
    /// The value as written (one entry, for the list keys).
    pub value: String,
    pub error: UserFsError,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.key, self.value, self.error)
    }
}

/// Checks, as `fs`'s user, that the job's executable (when transferred),
/// `input` and `transfer_input_files` are readable regular files, that
/// `initialdir` is a directory the user may enter, and that `output`,
/// `error`, `log` and the files of `transfer_output_files` (delivered into
/// `initialdir` under their base names) can be written or created. Changes
/// nothing on disk. The outer error means the checks could not run at all.
pub fn validate_job(fs: &UserFs, d: &JobDescription) -> Result<Vec<PathProblem>, UserFsError> {
    let d = d.clone();
    fs.run(move |u| Ok(check_all(u, &d)))
}

/// What a key's path must allow.
#[derive(Clone, Copy)]
enum Need {
    Read,
    Write,
}

fn check_all(u: &AsUser<'_>, d: &JobDescription) -> Vec<PathProblem> {
    let mut problems = Vec::new();
    let iwd = d.iwd.as_deref();
    let iwd_ok = match iwd {
        Some(dir) => match u.check_dir(Path::new(dir)) {
            Ok(()) => true,
            Err(error) => {
                problems.push(PathProblem {
                    key: "initialdir",
                    value: dir.to_string(),
                    error,
                });
                false
            }
        },
        None => false,
    };
    let mut check = |key: &'static str, value: &str, need: Need| {
        if !value.starts_with('/') && iwd.is_some() && !iwd_ok {
            return; // initialdir is already reported
        }
        let path = resolve(iwd, value);
        let res = match need {
            Need::Read => u.check_readable(&path),
            Need::Write => u.check_writable(&path),
        };
        if let Err(error) = res {
            problems.push(PathProblem {
                key,
                value: value.to_string(),
                error,
            });
        }
    };
    if d.transfer_executable {
        check("executable", &d.executable, Need::Read);
    }
    // Standard files that are not transferred are not opened at home.
    if let Some(i) = d.input.as_ref().filter(|_| !d.untransferred.input) {
        check("input", i, Need::Read);
    }
    for f in &d.transfer_input_files {
        check("transfer_input_files", f, Need::Read);
    }
    if let Some(o) = d.output.as_ref().filter(|_| !d.untransferred.output) {
        check("output", o, Need::Write);
    }
    if let Some(e) = d.error.as_ref().filter(|_| !d.untransferred.error) {
        check("error", e, Need::Write);
    }
    if let Some(l) = &d.log {
        check("log", l, Need::Write);
    }
    // Output files land in initialdir under their base names; with no
    // initialdir they stay in the spool, so there is nothing to check.
    if let (Some(dir), true) = (iwd, iwd_ok) {
        for f in d.transfer_output_files.iter().flatten() {
            let base = f.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            if base.is_empty() || base == "." || base == ".." {
                problems.push(PathProblem {
                    key: "transfer_output_files",
                    value: f.clone(),
                    error: UserFsError::Path(PathError {
                        op: Op::Create,
                        path: PathBuf::from(f),
                        user: u.user().name.clone(),
                        at: None,
                        kind: PathErrorKind::NotRegular("directory name"),
                    }),
                });
                continue;
            }
            let dest = Path::new(dir).join(base);
            if let Err(error) = u.check_writable(&dest) {
                problems.push(PathProblem {
                    key: "transfer_output_files",
                    value: f.clone(),
                    error,
                });
            }
        }
    }
    problems
}

/// `value` made absolute against `iwd`. A relative value with no
/// initial directory stays relative, and is refused as such.
fn resolve(iwd: Option<&str>, value: &str) -> PathBuf {
    match iwd {
        Some(dir) if !value.starts_with('/') => Path::new(dir).join(value),
        _ => PathBuf::from(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_initial_directory() {
        assert_eq!(
            resolve(Some("/home/a/job"), "out"),
            PathBuf::from("/home/a/job/out")
        );
        // `..` is kept: the walk resolves it on the real directories.
        assert_eq!(
            resolve(Some("/home/a/job"), "../../../../tmp/x"),
            PathBuf::from("/home/a/job/../../../../tmp/x")
        );
        assert_eq!(
            resolve(Some("/home/a"), "/etc/shadow"),
            PathBuf::from("/etc/shadow")
        );
        assert_eq!(resolve(None, "out"), PathBuf::from("out"));
    }
}
