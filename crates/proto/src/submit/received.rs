//! What a station checks on a submission it receives: the CLI parses and
//! validates the file, but anything can be posted to `/v1/submit`, so the
//! station checks again what the parser guarantees (the same limits, keys
//! of the parser's shape) before it expands anything; expanding applies
//! the same table of commands (`keys.rs`) as the parser, so a refused
//! command is refused here too. Problems name the submit file and line,
//! as the parser's do.

use super::{
    Assignment, BUILTINS, ClusterSubmission, ErrorSink, ProcBinding, SubmitErrorKind, SubmitErrors,
    custom_attr_name, is_identifier, is_key, submission_too_large, too_many_procs,
};
use crate::limits::{
    MAX_ARGS_ENV_BYTES, MAX_FILE_NAME_BYTES, MAX_PROCS, MAX_SUBMISSION_BYTES, MAX_VALUE_BYTES,
    over_limit,
};
use std::collections::BTreeMap;

/// Overhead counted per stored entry, near its JSON encoding's.
const ENTRY: u64 = 32;

/// Bytes of a variable table as the submission limit counts them.
pub(super) fn vars_bytes(vars: &BTreeMap<String, Assignment>) -> u64 {
    vars.iter()
        .map(|(k, a)| (k.len() + a.name.len() + a.value.len()) as u64 + ENTRY)
        .sum()
}

/// Bytes of one proc's binding.
pub(super) fn binding_bytes(b: &ProcBinding) -> u64 {
    ENTRY
        + b.items
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64 + ENTRY)
            .sum::<u64>()
}

pub(super) fn procs_bytes(procs: &[ProcBinding]) -> u64 {
    procs.iter().map(binding_bytes).sum()
}

/// The table key the parser files an assignment named `name` under.
fn table_key(name: &str) -> Option<String> {
    if let Some(attr) = custom_attr_name(name) {
        return is_identifier(attr).then(|| format!("+{}", attr.to_ascii_lowercase()));
    }
    let lower = name.to_ascii_lowercase();
    (is_key(name) && !BUILTINS.contains(&lower.as_str())).then_some(lower)
}

impl ClusterSubmission {
    /// Checks a submission as received: its size, its number of procs, each
    /// value's size, and its keys (known, custom `+Attr`, or a macro some
    /// `$(…)` refers to, as [`super::parse_submit`] requires). Every
    /// problem is returned, with its line.
    pub fn check(&self) -> Result<(), SubmitErrors> {
        let file: String = if self.file_name.len() > MAX_FILE_NAME_BYTES {
            let cut: String = self.file_name.chars().take(64).collect();
            format!("{cut}…")
        } else {
            self.file_name.clone()
        };
        let mut errs = ErrorSink::new(&file);
        let long_name =
            |f: &Option<String>| f.as_ref().is_some_and(|f| f.len() > MAX_FILE_NAME_BYTES);
        if self.file_name.len() > MAX_FILE_NAME_BYTES
            || self
                .dir
                .as_ref()
                .is_some_and(|d| d.len() > MAX_FILE_NAME_BYTES)
            || self
                .batches
                .iter()
                .any(|b| long_name(&b.file) || b.vars.values().any(|a| long_name(&a.file)))
        {
            errs.push(
                0,
                SubmitErrorKind::TooLarge(format!(
                    "a file name is longer than {} bytes",
                    MAX_FILE_NAME_BYTES
                )),
            );
        }
        let procs: u64 = self.batches.iter().map(|b| b.procs.len() as u64).sum();
        if procs > MAX_PROCS {
            errs.push(0, too_many_procs());
        }
        let env_bytes: u64 = self
            .env
            .iter()
            .map(|(k, v)| (k.len() + v.len() + 2) as u64)
            .sum();
        if env_bytes > MAX_ARGS_ENV_BYTES as u64 {
            errs.push(
                0,
                SubmitErrorKind::TooLarge(format!(
                    "the environment the file reads is {} for a job's arguments and \
                     environment",
                    over_limit(env_bytes, MAX_ARGS_ENV_BYTES as u64)
                )),
            );
        }
        let stored: u64 = self
            .batches
            .iter()
            .map(|b| vars_bytes(&b.vars) + procs_bytes(&b.procs) + b.statement.len() as u64)
            .sum::<u64>()
            + env_bytes;
        // Each value first: a single oversize value is named.
        for b in &self.batches {
            for a in b.vars.values() {
                if a.value.len() > MAX_VALUE_BYTES {
                    errs.push_at(
                        a,
                        SubmitErrorKind::TooLarge(format!(
                            "the value of {} is {} for one value",
                            a.name,
                            over_limit(a.value.len() as u64, MAX_VALUE_BYTES as u64)
                        )),
                    );
                }
            }
            for (name, v) in b.procs.iter().flat_map(|p| &p.items) {
                if v.len() > MAX_VALUE_BYTES {
                    errs.push_file(
                        b.file.as_deref(),
                        b.line,
                        SubmitErrorKind::TooLarge(format!(
                            "an item of {name} is {} for one value",
                            over_limit(v.len() as u64, MAX_VALUE_BYTES as u64)
                        )),
                    );
                    break;
                }
            }
        }
        if errs.is_empty() && stored > MAX_SUBMISSION_BYTES {
            errs.push(0, submission_too_large());
        }
        // Sizes and shapes first: nothing below should scan a huge body.
        if !errs.is_empty() {
            return errs.finish();
        }

        for b in &self.batches {
            for (key, a) in &b.vars {
                match table_key(&a.name) {
                    Some(k) if &k == key => {}
                    _ => {
                        let shown: String = a.name.chars().take(64).collect();
                        errs.push_at(a, SubmitErrorKind::Malformed(shown));
                    }
                }
            }
            for p in &b.procs {
                for name in p.items.keys() {
                    if !is_identifier(name) || BUILTINS.contains(&name.as_str()) {
                        let shown: String = name.chars().take(64).collect();
                        errs.push_file(
                            b.file.as_deref(),
                            b.line,
                            SubmitErrorKind::BadQueue(format!(
                                "\"{shown}\" is not a variable name"
                            )),
                        );
                    }
                }
            }
        }
        errs.finish()
    }
}
