//! A proc's arguments and environment, from the commands that give them
//! (`arguments`/`args`, `arguments2`, `environment`, `env`,
//! `environment2`, the `allow_*_v1` switches and `getenv`), composed as
//! HTCondor's submit composes them: which command wins, which syntax the
//! job ad keeps (`crate::args`), and which of the submitter's variables
//! `getenv` brings.

use super::build::parse_bool;
use super::{Assignment, ErrorSink, SubmitErrorKind};
use crate::args::{
    Syntax, env_v1_raw, is_safe_env_v1, is_v2_quoted, parse_arguments_syntax,
    parse_environment_syntax,
};
use crate::job::JobDescription;
use std::collections::BTreeMap;

/// What `getenv` asks for.
#[derive(Default)]
enum Getenv {
    #[default]
    Nothing,
    Everything,
    /// Names and patterns to import (`white`) and not to (`black`, written
    /// with `!`), matched without regard to case, `*` a wildcard.
    Lists {
        white: Vec<String>,
        black: Vec<String>,
    },
}

/// The commands' values, gathered before they are composed.
#[derive(Default)]
pub(super) struct ArgsEnv {
    args1: Option<(String, Assignment)>,
    args2: Option<(String, Assignment)>,
    allow_args_v1: bool,
    environment: Option<(String, Assignment)>,
    env: Option<(String, Assignment)>,
    environment2: Option<(String, Assignment)>,
    allow_env_v1: bool,
    getenv: Getenv,
}

/// The commands this module composes.
pub(super) const COMMANDS: &[&str] = &[
    "arguments",
    "arguments2",
    "allow_arguments_v1",
    "environment",
    "env",
    "environment2",
    "allow_environment_v1",
    "getenv",
];

fn bad(errs: &mut ErrorSink, a: &Assignment, reason: String) {
    errs.push_at(
        a,
        SubmitErrorKind::BadValue {
            key: a.name.clone(),
            reason,
        },
    );
}

impl ArgsEnv {
    /// Records command `name` (one of [`COMMANDS`]) with its expanded
    /// value. An empty value counts as not given, as in HTCondor.
    pub(super) fn gather(&mut self, name: &str, value: &str, a: &Assignment, errs: &mut ErrorSink) {
        let given = || (!value.is_empty()).then(|| (value.to_string(), a.clone()));
        match name {
            "arguments" => self.args1 = given(),
            "arguments2" => self.args2 = given(),
            "environment" => self.environment = given(),
            "env" => self.env = given(),
            "environment2" => self.environment2 = given(),
            "allow_arguments_v1" | "allow_environment_v1" => match parse_bool(value) {
                Some(b) if name == "allow_arguments_v1" => self.allow_args_v1 = b,
                Some(b) => self.allow_env_v1 = b,
                None => bad(errs, a, format!("\"{value}\" is not true or false")),
            },
            "getenv" => match parse_bool(value) {
                Some(true) => self.getenv = Getenv::Everything,
                Some(false) => self.getenv = Getenv::Nothing,
                None => {
                    let (mut white, mut black) = (Vec::new(), Vec::new());
                    for item in value
                        .split([',', ';', ' ', '\t', '\r', '\n'])
                        .filter(|s| !s.is_empty())
                    {
                        match item.strip_prefix('!') {
                            Some(n) if !n.trim().is_empty() => black.push(n.trim().to_string()),
                            Some(_) => {}
                            None => white.push(item.to_string()),
                        }
                    }
                    self.getenv = Getenv::Lists { white, black };
                }
            },
            _ => {}
        }
    }

    /// Sets the description's arguments and environment; `submitter` is
    /// the environment `getenv` reads.
    pub(super) fn finish(
        self,
        submitter: &BTreeMap<String, String>,
        d: &mut JobDescription,
        errs: &mut ErrorSink,
    ) {
        self.finish_arguments(d, errs);
        self.finish_environment(submitter, d, errs);
    }

    fn finish_arguments(&self, d: &mut JobDescription, errs: &mut ErrorSink) {
        if let (Some(_), Some((_, a2))) = (&self.args1, &self.args2)
            && !self.allow_args_v1
        {
            bad(
                errs,
                a2,
                "both arguments and arguments2 are given: to give both (for older HTCondor \
                 versions), also set allow_arguments_v1 = true"
                    .into(),
            );
            return;
        }
        let (value, a, v2_only) = match (&self.args2, &self.args1) {
            (Some((v, a)), _) => (v, a, true),
            (None, Some((v, a))) => (v, a, false),
            (None, None) => return,
        };
        if v2_only && !is_v2_quoted(value) {
            bad(
                errs,
                a,
                "expecting a double-quoted value (the new syntax)".into(),
            );
            return;
        }
        match parse_arguments_syntax(value) {
            Ok((args, syntax)) => {
                d.arguments = args;
                d.arguments_v1 = syntax == Syntax::V1;
            }
            Err(e) => bad(errs, a, e.to_string()),
        }
    }

    fn finish_environment(
        &self,
        submitter: &BTreeMap<String, String>,
        d: &mut JobDescription,
        errs: &mut ErrorSink,
    ) {
        // `environment` wins over `env`; `environment2` is V2 only.
        let env1 = self.environment.as_ref().or(self.env.as_ref());
        if let (Some(_), Some((_, a2))) = (env1, &self.environment2)
            && !self.allow_env_v1
        {
            bad(
                errs,
                a2,
                "both environment and environment2 are given: to give both (for older HTCondor \
                 versions), also set allow_environment_v1 = true"
                    .into(),
            );
            return;
        }
        // The `env` command in V1 syntax is a wish for the V1 form in the
        // job ad (`Env`), as in HTCondor.
        let prefer_v1 = env1.is_some()
            && self.environment2.is_none()
            && self.env.as_ref().is_some_and(|(v, _)| !is_v2_quoted(v));
        let mut env = BTreeMap::new();
        let given = match (&self.environment2, env1) {
            (Some((v, a)), _) => Some((v, a, true)),
            (None, Some((v, a))) => Some((v, a, false)),
            (None, None) => None,
        };
        if let Some((value, a, v2_only)) = given {
            if v2_only && !is_v2_quoted(value) {
                bad(
                    errs,
                    a,
                    "expecting a double-quoted value (the new syntax)".into(),
                );
                return;
            }
            match parse_environment_syntax(value) {
                Ok((e, _)) => env = e,
                Err(e) => {
                    bad(errs, a, e.to_string());
                    return;
                }
            }
        }
        // The submitter's variables do not replace the file's; values the
        // job ad's form cannot hold are left out quietly, as HTCondor does
        // (a newline always; `;` too when the file gave `environment` or
        // `env` and no `environment2`).
        let v1_filter = env1.is_some() && self.environment2.is_none();
        for (k, v) in submitter {
            let wanted = match &self.getenv {
                Getenv::Nothing => false,
                Getenv::Everything => true,
                Getenv::Lists { white, black } => {
                    !black.iter().any(|p| wildcard(p, k))
                        && (white.is_empty() || white.iter().any(|p| wildcard(p, k)))
                }
            };
            if !wanted || env.contains_key(k) || v.contains('\n') {
                continue;
            }
            if v1_filter && !is_safe_env_v1(v) {
                continue;
            }
            env.insert(k.clone(), v.clone());
        }
        if prefer_v1
            && let Err(e) = env_v1_raw(&env)
            && let Some((_, a)) = &self.env
        {
            bad(errs, a, e.to_string());
            return;
        }
        d.environment = env;
        d.environment_v1 = prefer_v1;
    }
}

/// `*` wildcards, as `getenv` lists use them, without regard to case.
fn wildcard(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_lowercase().chars().collect();
    let n: Vec<char> = name.to_ascii_lowercase().chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getenv_wildcards_ignore_case() {
        assert!(wildcard("US*", "USER"));
        assert!(wildcard("path", "PATH"));
        assert!(wildcard("*cuda*", "MY_CUDA_HOME"));
        assert!(wildcard("*", "ANY"));
        assert!(!wildcard("US*", "HOME"));
        assert!(!wildcard("PATH", "PATHS"));
    }
}
