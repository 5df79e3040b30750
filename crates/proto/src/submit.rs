//! The HTCondor-style submit-description parser behind `glean submit FILE`.
//!
//! Parsing happens in two steps because the cluster id is only known once
//! the station's queue assigns it:
//!
//! 1. [`parse_submit`] reads the file, records every assignment and `queue`
//!    statement, and validates the whole file by expanding it once with a
//!    probe cluster id. Every problem is collected with its line number; if
//!    there is any, nothing is returned.
//! 2. [`ClusterSubmission::expand`] expands the macros again with the real
//!    cluster id and yields one [`JobDescription`] per proc. The queue calls
//!    it inside the transaction that allocates the id.
//!
//! Supported syntax (a subset of `condor_submit`):
//! - `key = value` lines; keys are case-insensitive; `#` starts a comment
//!   line; a trailing `\` continues the line.
//! - Macros `$(name)`, `$(name:default)`, `$ENV(NAME)`, `$ENV(NAME:default)`,
//!   built-ins `$(Cluster)`/`$(ClusterId)`, `$(Process)`/`$(ProcId)`,
//!   `$(Step)`, `$(ItemIndex)`/`$(Row)`, `$(Item)`, `$(DOLLAR)`. `$$(attr)`
//!   is left for match time. Macros expand lazily at queue time, so a
//!   definition may refer to one made later in the file.
//! - `queue`, `queue N`, `queue [N] var[,var…] in|from (items)`, with the
//!   item list inline or spanning lines up to a `)` line. Several `queue`
//!   statements add procs to the same cluster; assignments between them
//!   apply to later ones only.
//! - `+Attr = expr` and `MY.Attr = expr` custom attributes.
//!
//! Unlike `condor_submit`, an unknown key is an error unless some `$(…)`
//! refers to it (then it is a user macro), and an undefined macro is an
//! error unless it has a default: both catch typos before jobs run.

use crate::job::{
    CheckpointMethod, JobDescription, ShouldTransferFiles, Universe, WhenToTransferOutput,
    parse_arguments, parse_environment,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

mod expand;
mod received;

use crate::limits::{
    MAX_CLUSTER_BYTES, MAX_SUBMISSION_BYTES, MAX_SUBMIT_FILE_BYTES, check_description,
    description_bytes, human_bytes, over_limit,
};
use expand::{Budget, Builtins, Expander};

pub use crate::limits::MAX_PROCS;

/// Cluster id used to validate a file before the real one is known.
const PROBE_CLUSTER: u64 = 1;

/// The keys Gleaner understands (lower case).
pub const KNOWN_KEYS: &[&str] = &[
    "universe",
    "executable",
    "arguments",
    "environment",
    "getenv",
    "input",
    "output",
    "error",
    "log",
    "initialdir",
    "iwd",
    "should_transfer_files",
    "when_to_transfer_output",
    "transfer_executable",
    "transfer_input_files",
    "transfer_output_files",
    "request_cpus",
    "request_memory",
    "request_disk",
    "request_gpus",
    "requirements",
    "rank",
    "checkpoint_exit_code",
    "transfer_checkpoint_files",
    "checkpoint_interval",
    "checkpoint_method",
    "concurrency_limits",
    "max_retries",
    "on_exit_hold",
    "on_exit_hold_reason",
    "on_exit_hold_subcode",
    "periodic_hold",
    "periodic_hold_reason",
    "periodic_hold_subcode",
    "periodic_release",
    "nice_user",
    "accounting_group",
    "batch_name",
    "priority",
];

/// Macro names the parser defines for every proc (lower case).
const BUILTINS: &[&str] = &[
    "cluster",
    "clusterid",
    "process",
    "procid",
    "step",
    "itemindex",
    "row",
    "dollar",
];

/// What the caller knows that the file does not: its name for messages, the
/// submitting user, and the environment `$ENV()` and `getenv` read (injected
/// rather than read from the process, for tests).
#[derive(Clone, Debug, Default)]
pub struct SubmitContext {
    pub file_name: String,
    pub owner: String,
    pub env: BTreeMap<String, String>,
}

impl SubmitContext {
    pub fn new(file_name: impl Into<String>, owner: impl Into<String>) -> Self {
        SubmitContext {
            file_name: file_name.into(),
            owner: owner.into(),
            env: BTreeMap::new(),
        }
    }

    pub fn with_env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = env;
        self
    }
}

/// One problem in a submit file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SubmitError {
    pub file: String,
    /// 1-based; 0 when the problem concerns the whole file.
    pub line: usize,
    pub kind: SubmitErrorKind,
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.kind)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.kind)
        }
    }
}

impl std::error::Error for SubmitError {}

/// The kinds of submit-file problems.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, thiserror::Error,
)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SubmitErrorKind {
    #[error("unknown command \"{name}\"{}", suggestion.as_ref().map(|s| format!(" (did you mean \"{s}\"?)")).unwrap_or_default())]
    UnknownCommand {
        name: String,
        suggestion: Option<String>,
    },
    #[error("expected \"key = value\" or \"queue\", found \"{0}\"")]
    Malformed(String),
    #[error("invalid value for {key}: {reason}")]
    BadValue { key: String, reason: String },
    #[error("{0}")]
    Unsupported(String),
    #[error("undefined macro $({0})")]
    UndefinedMacro(String),
    #[error("environment variable {0} is not set (use $ENV({0}:default) for a fallback)")]
    UndefinedEnv(String),
    #[error("malformed macro reference: {0}")]
    BadMacro(String),
    #[error("macro $({0}) refers to itself")]
    RecursiveMacro(String),
    #[error("macros nested more than {0} deep")]
    TooDeep(usize),
    #[error("cannot redefine built-in macro {0}")]
    BuiltinRedefined(String),
    #[error("invalid queue statement: {0}")]
    BadQueue(String),
    #[error("invalid custom attribute name \"{0}\"")]
    BadAttribute(String),
    #[error("no queue statement: nothing to submit")]
    NoQueue,
    #[error("no executable given")]
    MissingExecutable,
    #[error("line continuation at the end of the file")]
    DanglingContinuation,
    /// A value that expands beyond [`crate::limits::MAX_VALUE_BYTES`]; `via`
    /// names the innermost macro through which it grew.
    #[error(
        "{key}{} expands to more than {}, the limit for one value",
        via.as_ref().map(|v| format!(" (through {v})")).unwrap_or_default(),
        human_bytes(*limit)
    )]
    ValueTooLarge {
        key: String,
        via: Option<String>,
        limit: u64,
    },
    /// A limit of [`crate::limits`] on the file or submission as a whole.
    #[error("{0}")]
    TooLarge(String),
    /// A value of one expanded job that no host could run, or too large
    /// (see [`crate::limits::check_description`]).
    #[error("{field} of proc {process}: {reason}")]
    BadField {
        field: String,
        process: u32,
        reason: String,
    },
}

/// All problems found in a submit file, in line order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitErrors(pub Vec<SubmitError>);

impl fmt::Display for SubmitErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SubmitErrors {}

/// One `key = value` as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Assignment {
    /// The key as written (keeps the case of `+Attr` names).
    name: String,
    value: String,
    line: usize,
}

/// The variables a `queue` statement binds for one proc.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ProcBinding {
    step: u32,
    item_index: u32,
    /// Lower-case variable name → value.
    items: BTreeMap<String, String>,
}

/// One `queue` statement with the assignments in force at that point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct QueueBatch {
    line: usize,
    /// What followed `queue` on its line, for the references it makes
    /// (`queue $(n)`): the station checks unknown keys as the parser does.
    #[serde(default)]
    statement: String,
    /// Lower-case key (`+name` for custom attributes) → assignment.
    vars: BTreeMap<String, Assignment>,
    procs: Vec<ProcBinding>,
}

/// A validated submit file, ready to be expanded once the cluster id is
/// known. Serialisable, so that the CLI can parse locally and send it to the
/// station, which expands it when it allocates the id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSubmission {
    pub file_name: String,
    pub owner: String,
    /// Only the environment variables the file reads (all if `getenv`).
    env: BTreeMap<String, String>,
    batches: Vec<QueueBatch>,
}

impl ClusterSubmission {
    /// Number of procs (jobs) the cluster will have.
    pub fn proc_count(&self) -> u32 {
        let n: usize = self.batches.iter().map(|b| b.procs.len()).sum();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Expands every proc with `$(Cluster)` = `cluster`. Element `i` is
    /// proc `i`. Validation in [`parse_submit`] used a probe id, so this only
    /// fails in contrived cases (e.g. a numeric key built from the cluster
    /// id that overflows).
    ///
    /// The submission is [checked](Self::check) first, as the station must
    /// not trust its sender; the limits of [`crate::limits`] hold while it
    /// expands (each value, all macro text, each description, all of them).
    pub fn expand(&self, cluster: u64) -> Result<Vec<JobDescription>, SubmitErrors> {
        self.check()?;
        self.expand_checked(cluster)
    }

    /// [`Self::expand_each`] collected.
    fn expand_checked(&self, cluster: u64) -> Result<Vec<JobDescription>, SubmitErrors> {
        let mut out = Vec::new();
        self.expand_each_checked(cluster, |d| {
            out.push(d);
            Ok::<(), std::convert::Infallible>(())
        })
        .map_err(|e| match e {
            ExpandError::Submit(e) => e,
            ExpandError::Sink(never) => match never {},
        })?;
        Ok(out)
    }

    /// [`Self::expand`], handing each description to `each` as soon as it
    /// is built instead of holding them all: a 100 000-proc cluster is
    /// expanded in the memory of one proc. The same limits hold; a problem
    /// found at a later proc comes after `each` saw the earlier ones (the
    /// caller's transaction then stores nothing).
    pub fn expand_each<E>(
        &self,
        cluster: u64,
        each: impl FnMut(JobDescription) -> Result<(), E>,
    ) -> Result<(), ExpandError<E>> {
        self.check().map_err(ExpandError::Submit)?;
        self.expand_each_checked(cluster, each)
    }

    fn expand_each_checked<E>(
        &self,
        cluster: u64,
        mut each: impl FnMut(JobDescription) -> Result<(), E>,
    ) -> Result<(), ExpandError<E>> {
        let mut errs = ErrorSink::new(&self.file_name);
        let mut process: u32 = 0;
        let budget = Budget::new();
        let mut total: u64 = 0;
        'all: for batch in &self.batches {
            for binding in &batch.procs {
                let ctx = Expander::new(
                    &batch.vars,
                    &self.env,
                    Some(Builtins {
                        cluster,
                        process,
                        binding,
                    }),
                    &budget,
                );
                let built = build_description(&ctx, batch.line, process, &self.owner, &mut errs);
                if budget.exhausted() {
                    break 'all;
                }
                if let Some(d) = built {
                    total = total.saturating_add(description_bytes(&d) as u64);
                    if total > MAX_CLUSTER_BYTES {
                        errs.push(
                            batch.line,
                            SubmitErrorKind::TooLarge(format!(
                                "the jobs of this submission take more than {} together, the \
                                 limit for one submission (at proc {process})",
                                human_bytes(MAX_CLUSTER_BYTES)
                            )),
                        );
                        break 'all;
                    }
                    // Only while nothing failed: after a problem the rest
                    // is expanded for its errors alone.
                    if errs.is_empty() {
                        each(d).map_err(ExpandError::Sink)?;
                    }
                }
                process = process.saturating_add(1);
            }
        }
        errs.finish().map_err(ExpandError::Submit)
    }
}

/// Why [`ClusterSubmission::expand_each`] stopped: the submission, or the
/// receiver of the descriptions.
#[derive(Debug)]
pub enum ExpandError<E> {
    Submit(SubmitErrors),
    Sink(E),
}

/// Parses and validates a submit file. On success every proc is known to
/// expand cleanly; on failure all problems are returned and nothing else.
pub fn parse_submit(text: &str, ctx: &SubmitContext) -> Result<ClusterSubmission, SubmitErrors> {
    let mut errs = ErrorSink::new(&ctx.file_name);
    if text.len() as u64 > MAX_SUBMIT_FILE_BYTES {
        return Err(SubmitErrors(vec![SubmitError {
            file: ctx.file_name.clone(),
            line: 0,
            kind: file_too_large(text.len() as u64),
        }]));
    }
    let lines = logical_lines(text, &mut errs);

    let mut vars: BTreeMap<String, Assignment> = BTreeMap::new();
    // Every assignment ever made, for the unknown-key check.
    let mut all_assignments: Vec<Assignment> = Vec::new();
    let mut batches: Vec<QueueBatch> = Vec::new();
    // `queue` lines may use macros too (`queue $(n)`).
    let mut queue_lines: Vec<String> = Vec::new();
    let mut total_procs: u64 = 0;
    // Bytes of the parsed submission so far (see `MAX_SUBMISSION_BYTES`).
    let mut stored: u64 = 0;

    let mut i = 0;
    while i < lines.len() {
        let (line_no, ref text) = lines[i];
        i += 1;
        let t = text.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(rest) = strip_keyword(t, "queue") {
            queue_lines.push(rest.to_string());
            let vars_size = received::vars_bytes(&vars);
            let room = MAX_SUBMISSION_BYTES.saturating_sub(stored.saturating_add(vars_size));
            match parse_queue(rest, &lines, &mut i, &vars, &ctx.env, room) {
                Ok(procs) => {
                    total_procs = total_procs.saturating_add(procs.len() as u64);
                    if total_procs > MAX_PROCS {
                        errs.push(line_no, too_many_procs());
                    } else {
                        stored = stored
                            .saturating_add(vars_size)
                            .saturating_add(received::procs_bytes(&procs));
                        batches.push(QueueBatch {
                            line: line_no,
                            statement: rest.to_string(),
                            vars: vars.clone(),
                            procs,
                        });
                    }
                }
                Err(kind) => errs.push(line_no, kind),
            }
            continue;
        }
        let Some((k, v)) = t.split_once('=') else {
            errs.push(line_no, SubmitErrorKind::Malformed(t.to_string()));
            continue;
        };
        let key = k.trim();
        let value = v.trim().to_string();
        let table_key = if let Some(attr) = custom_attr_name(key) {
            if !is_identifier(attr) {
                errs.push(line_no, SubmitErrorKind::BadAttribute(attr.to_string()));
                continue;
            }
            format!("+{}", attr.to_ascii_lowercase())
        } else {
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                errs.push(line_no, SubmitErrorKind::Malformed(t.to_string()));
                continue;
            }
            let lower = key.to_ascii_lowercase();
            if BUILTINS.contains(&lower.as_str()) {
                errs.push(line_no, SubmitErrorKind::BuiltinRedefined(key.to_string()));
                continue;
            }
            lower
        };
        let a = Assignment {
            name: key.to_string(),
            value,
            line: line_no,
        };
        all_assignments.push(a.clone());
        vars.insert(table_key, a);
    }

    // A key that is neither known nor referenced is most likely a typo.
    let referenced = referenced_macros(&all_assignments, &batches, &queue_lines);
    for a in &all_assignments {
        let lower = a.name.to_ascii_lowercase();
        if custom_attr_name(&a.name).is_some()
            || KNOWN_KEYS.contains(&lower.as_str())
            || referenced.contains(&lower)
        {
            continue;
        }
        errs.push(
            a.line,
            SubmitErrorKind::UnknownCommand {
                name: a.name.clone(),
                suggestion: suggest(&lower),
            },
        );
    }

    if batches.is_empty() && errs.is_empty() {
        errs.push(0, SubmitErrorKind::NoQueue);
    }

    let uses_getenv = all_assignments
        .iter()
        .any(|a| a.name.eq_ignore_ascii_case("getenv"));
    let env = if uses_getenv {
        ctx.env.clone()
    } else {
        let names = referenced_env(&all_assignments);
        ctx.env
            .iter()
            .filter(|(k, _)| names.contains(k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };

    let sub = ClusterSubmission {
        file_name: ctx.file_name.clone(),
        owner: ctx.owner.clone(),
        env,
        batches,
    };
    // Every problem at once: the received-submission checks (as the
    // station will make them) and those of a trial expansion.
    if let Err(e) = sub.check() {
        errs.extend(e.0);
    }
    if let Err(e) = sub.expand_checked(PROBE_CLUSTER) {
        errs.extend(e.0);
    }
    errs.finish().map(|()| sub)
}

/// Collects errors, dropping duplicates (each proc re-reports the same bad
/// line) and sorting by line.
struct ErrorSink {
    file: String,
    errors: BTreeSet<SubmitError>,
    /// (line, field) of the job-field problems reported: each once.
    fields: BTreeSet<(usize, String)>,
}

impl ErrorSink {
    fn new(file: &str) -> Self {
        ErrorSink {
            file: file.to_string(),
            errors: BTreeSet::new(),
            fields: BTreeSet::new(),
        }
    }
    /// Pushes a [`SubmitErrorKind::BadField`] unless that field of that
    /// line was reported for an earlier proc.
    fn push_field(&mut self, line: usize, kind: SubmitErrorKind) {
        if let SubmitErrorKind::BadField { field, .. } = &kind
            && !self.fields.insert((line, field.clone()))
        {
            return;
        }
        self.push(line, kind);
    }
    fn push(&mut self, line: usize, kind: SubmitErrorKind) {
        self.errors.insert(SubmitError {
            file: self.file.clone(),
            line,
            kind,
        });
    }
    fn extend(&mut self, errs: Vec<SubmitError>) {
        self.errors.extend(errs);
    }
    fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }
    fn finish(self) -> Result<(), SubmitErrors> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(SubmitErrors(self.errors.into_iter().collect()))
        }
    }
}

/// Joins continuation lines; each logical line keeps its first line number.
fn logical_lines(text: &str, errs: &mut ErrorSink) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    let mut last = 0;
    for (idx, raw) in text.lines().enumerate() {
        let n = idx + 1;
        last = n;
        let (start, mut acc) = pending.take().unwrap_or((n, String::new()));
        let trimmed_end = raw.trim_end();
        if let Some(body) = trimmed_end.strip_suffix('\\') {
            acc.push_str(body);
            acc.push(' ');
            pending = Some((start, acc));
        } else {
            acc.push_str(raw);
            out.push((start, acc));
        }
    }
    if let Some((start, acc)) = pending {
        errs.push(last.max(start), SubmitErrorKind::DanglingContinuation);
        out.push((start, acc));
    }
    out
}

/// `rest` after `kw` if `t` starts with the keyword as a whole word.
fn strip_keyword<'a>(t: &'a str, kw: &str) -> Option<&'a str> {
    let head = t.get(..kw.len())?;
    if !head.eq_ignore_ascii_case(kw) {
        return None;
    }
    let rest = &t[kw.len()..];
    match rest.chars().next() {
        None => Some(rest),
        Some(c) if c.is_whitespace() => Some(rest.trim()),
        _ => None,
    }
}

/// `Attr` from `+Attr` or `MY.Attr`.
fn custom_attr_name(key: &str) -> Option<&str> {
    if let Some(a) = key.strip_prefix('+') {
        return Some(a.trim());
    }
    let head = key.get(..3)?;
    if head.eq_ignore_ascii_case("my.") {
        return Some(&key[3..]);
    }
    None
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Parses what follows `queue`. May consume further lines for a multi-line
/// item list (`i` is advanced past the closing `)`).
///
/// `room` is what the submission may still grow by (see
/// [`MAX_SUBMISSION_BYTES`]): the procs are counted before they are made.
fn parse_queue(
    rest: &str,
    lines: &[(usize, String)],
    i: &mut usize,
    vars: &BTreeMap<String, Assignment>,
    env: &BTreeMap<String, String>,
    room: u64,
) -> Result<Vec<ProcBinding>, SubmitErrorKind> {
    let mut rest = rest.trim();
    // An optional count first; it may be a macro (`queue $(n)`).
    let mut count: u64 = 1;
    let first_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let first = &rest[..first_end];
    let is_keyword = |w: &str| {
        ["in", "from", "matching"]
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k))
    };
    if !first.is_empty()
        && (first.starts_with(|c: char| c.is_ascii_digit()) || first.starts_with("$("))
    {
        let budget = Budget::new();
        let expander = Expander::new(vars, env, None, &budget);
        let expanded = expander.expand(first, 0).map_err(|e| match e {
            SubmitErrorKind::ValueTooLarge { via, limit, .. } => SubmitErrorKind::ValueTooLarge {
                key: "queue".into(),
                via,
                limit,
            },
            e => SubmitErrorKind::BadQueue(e.to_string()),
        })?;
        count = expanded.trim().parse().map_err(|_| {
            SubmitErrorKind::BadQueue(format!("\"{}\" is not a job count", expanded.trim()))
        })?;
        if count > MAX_PROCS {
            return Err(too_many_procs());
        }
        rest = rest[first_end..].trim();
    }
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    if rest.is_empty() {
        let empty = ProcBinding {
            step: 0,
            item_index: 0,
            items: BTreeMap::new(),
        };
        if u64::from(count).saturating_mul(received::binding_bytes(&empty)) > room {
            return Err(submission_too_large());
        }
        return Ok((0..count)
            .map(|step| ProcBinding {
                step,
                item_index: 0,
                items: BTreeMap::new(),
            })
            .collect());
    }

    // `var[,var…] (in|from|matching) list`; the variable list may be empty.
    let words: Vec<&str> = rest.split_whitespace().collect();
    let Some(kw_pos) = words.iter().position(|w| is_keyword(w)) else {
        return Err(SubmitErrorKind::BadQueue(format!(
            "expected \"queue [N] [var] in|from (items)\", found \"{rest}\""
        )));
    };
    let kw = words[kw_pos].to_ascii_lowercase();
    let var_text = words[..kw_pos].join(" ");
    let mut var_names: Vec<String> = var_text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    for v in &var_names {
        if !is_identifier(v) {
            return Err(SubmitErrorKind::BadQueue(format!(
                "\"{v}\" is not a variable name"
            )));
        }
        if BUILTINS.contains(&v.to_ascii_lowercase().as_str()) {
            return Err(SubmitErrorKind::BuiltinRedefined(v.clone()));
        }
    }
    if var_names.is_empty() {
        var_names.push("Item".to_string());
    }
    if kw == "matching" {
        return Err(SubmitErrorKind::Unsupported(
            "\"queue … matching\" (file globbing) is not supported; list the items".into(),
        ));
    }
    // The list starts after the keyword.
    let kw_offset = keyword_offset(rest, kw_pos);
    let list = rest[kw_offset + kw.len()..].trim();
    let Some(after_paren) = list.strip_prefix('(') else {
        return Err(SubmitErrorKind::Unsupported(format!(
            "\"queue … {kw} FILE\" is not supported; give the items in parentheses"
        )));
    };
    let items: Vec<String> = if let Some(close) = after_paren.find(')') {
        if !after_paren[close + 1..].trim().is_empty() {
            return Err(SubmitErrorKind::BadQueue(
                "unexpected text after \")\"".into(),
            ));
        }
        split_inline_items(&after_paren[..close])
    } else {
        // Multi-line list: one item per line until a line starting with ')'.
        let mut items = split_inline_items(after_paren);
        let mut closed = false;
        while *i < lines.len() {
            let l = lines[*i].1.trim();
            *i += 1;
            if l.starts_with(')') {
                closed = true;
                break;
            }
            if !l.is_empty() && !l.starts_with('#') {
                items.push(l.to_string());
            }
        }
        if !closed {
            return Err(SubmitErrorKind::BadQueue(
                "item list is missing its closing \")\"".into(),
            ));
        }
        items
    };

    let mut procs = Vec::new();
    let mut used: u64 = 0;
    for (idx, item) in items.iter().enumerate() {
        let mut bound = BTreeMap::new();
        if var_names.len() == 1 {
            bound.insert(var_names[0].to_ascii_lowercase(), item.clone());
        } else {
            let fields: Vec<&str> = item
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .collect();
            for (vi, name) in var_names.iter().enumerate() {
                let val = if vi + 1 == var_names.len() {
                    fields.get(vi..).map(|f| f.join(" ")).unwrap_or_default()
                } else {
                    fields.get(vi).map(|s| s.to_string()).unwrap_or_default()
                };
                bound.insert(name.to_ascii_lowercase(), val);
            }
        }
        let item_index = u32::try_from(idx).unwrap_or(u32::MAX);
        if procs.len() as u64 + u64::from(count) > MAX_PROCS {
            return Err(too_many_procs());
        }
        let one = received::binding_bytes(&ProcBinding {
            step: 0,
            item_index,
            items: bound.clone(),
        });
        used = used.saturating_add(one.saturating_mul(u64::from(count)));
        if used > room {
            return Err(submission_too_large());
        }
        for step in 0..count {
            procs.push(ProcBinding {
                step,
                item_index,
                items: bound.clone(),
            });
        }
    }
    Ok(procs)
}

fn too_many_procs() -> SubmitErrorKind {
    SubmitErrorKind::BadQueue(format!("more than {MAX_PROCS} jobs in one submission"))
}

fn submission_too_large() -> SubmitErrorKind {
    SubmitErrorKind::TooLarge(format!(
        "the submission takes more than {} once parsed (every assignment of every queue \
         statement and every proc's items), the limit for one submission",
        human_bytes(MAX_SUBMISSION_BYTES)
    ))
}

/// The refusal of a file over [`MAX_SUBMIT_FILE_BYTES`].
pub fn file_too_large(size: u64) -> SubmitErrorKind {
    SubmitErrorKind::TooLarge(format!(
        "the file is {} for a submit file",
        over_limit(size, MAX_SUBMIT_FILE_BYTES)
    ))
}

/// Byte offset of the `n`th whitespace-separated word of `s`.
fn keyword_offset(s: &str, n: usize) -> usize {
    let mut seen = 0;
    let mut in_word = false;
    for (off, c) in s.char_indices() {
        if c.is_whitespace() {
            in_word = false;
        } else if !in_word {
            if seen == n {
                return off;
            }
            seen += 1;
            in_word = true;
        }
    }
    s.len()
}

/// Items of an inline list: comma-separated if there is a comma, else
/// whitespace-separated.
fn split_inline_items(s: &str) -> Vec<String> {
    let s = s.trim();
    if s.is_empty() {
        return Vec::new();
    }
    if s.contains(',') {
        s.split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    } else {
        s.split_whitespace().map(str::to_string).collect()
    }
}

/// Lower-case names used as `$(name)` or `$(name:default)` anywhere.
fn referenced_macros(
    assignments: &[Assignment],
    batches: &[QueueBatch],
    queue_lines: &[String],
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut scan = |s: &str| referenced_macros_in(s, &mut out);
    for a in assignments {
        scan(&a.value);
    }
    for q in queue_lines {
        scan(q);
    }
    for b in batches {
        for p in &b.procs {
            for v in p.items.values() {
                scan(v);
            }
        }
    }
    out
}

/// Adds the lower-case names `s` uses as `$(name)` or `$(name:default)`.
fn referenced_macros_in(s: &str, out: &mut BTreeSet<String>) {
    let mut rest = s;
    while let Some(p) = rest.find("$(") {
        let after = &rest[p + 2..];
        let end = after.find([')', ':']).unwrap_or(after.len());
        out.insert(after[..end].trim().to_ascii_lowercase());
        rest = after;
    }
}

/// Names used as `$ENV(NAME)`.
fn referenced_env(assignments: &[Assignment]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for a in assignments {
        let mut rest = a.value.as_str();
        while let Some(p) = rest.find("$ENV(") {
            let after = &rest[p + 5..];
            let end = after.find([')', ':']).unwrap_or(after.len());
            out.insert(after[..end].trim().to_string());
            rest = after;
        }
    }
    out
}

/// The closest known key, if close enough to be a plausible typo.
fn suggest(name: &str) -> Option<String> {
    let limit = (name.len() / 3).max(2);
    KNOWN_KEYS
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k.to_string())
}

/// Damerau-Levenshtein distance (optimal string alignment), so that a swap
/// of two letters counts as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// Builds one proc's description, reporting bad values against the line of
/// their assignment. Returns `None` if any error was found.
fn build_description(
    ex: &Expander<'_>,
    queue_line: usize,
    process: u32,
    owner: &str,
    errs: &mut ErrorSink,
) -> Option<JobDescription> {
    let before = errs.errors.len();
    let mut d = JobDescription::new(owner, "");
    let mut getenv_all = false;
    let mut getenv_names: Vec<String> = Vec::new();
    let mut explicit_env = BTreeMap::new();

    for (key, a) in ex.vars {
        let value = match ex.expand(&a.value, 0) {
            Ok(v) => v.trim().to_string(),
            Err(SubmitErrorKind::ValueTooLarge { via, limit, .. }) => {
                let key = a.name.clone();
                errs.push(a.line, SubmitErrorKind::ValueTooLarge { key, via, limit });
                continue;
            }
            Err(kind) => {
                errs.push(a.line, kind);
                continue;
            }
        };
        let mut bad = |reason: String| {
            errs.push(
                a.line,
                SubmitErrorKind::BadValue {
                    key: a.name.clone(),
                    reason,
                },
            )
        };
        if let Some(attr) = custom_attr_name(&a.name) {
            if value.is_empty() {
                bad("a custom attribute needs an expression".into());
            } else if let Err(reason) = check_expression(&value) {
                bad(reason);
            } else {
                d.custom_attrs.insert(attr.to_string(), value);
            }
            continue;
        }
        // The job's own hold/release policy: ClassAd expressions the home
        // evaluates, kept under HTCondor's job-ad names.
        if let Some(attr) = policy_attr(key) {
            if value.is_empty() {
                bad("needs an expression".into());
            } else if let Err(reason) = check_expression(&value) {
                bad(reason);
            } else {
                d.custom_attrs.insert(attr.to_string(), value);
            }
            continue;
        }
        let opt = |v: &str| (!v.is_empty()).then(|| v.to_string());
        match key.as_str() {
            "universe" => {
                if !value.eq_ignore_ascii_case("vanilla") {
                    errs.push(
                        a.line,
                        SubmitErrorKind::Unsupported(format!(
                            "universe \"{value}\" is not supported (Gleaner runs vanilla jobs only)"
                        )),
                    );
                } else {
                    d.universe = Universe::Vanilla;
                }
            }
            "executable" => {
                if value.is_empty() {
                    bad("empty".into());
                } else {
                    d.executable = value;
                }
            }
            "arguments" => match parse_arguments(&value) {
                Ok(v) => d.arguments = v,
                Err(e) => bad(e.to_string()),
            },
            "environment" => match parse_environment(&value) {
                Ok(v) => explicit_env = v,
                Err(e) => bad(e.to_string()),
            },
            "getenv" => match parse_bool(&value) {
                Some(b) => getenv_all = b,
                None => {
                    // HTCondor also accepts a list of variable names.
                    getenv_names = split_list(&value);
                    if getenv_names.iter().any(|n| !is_identifier(n)) {
                        bad("expected true, false or a list of variable names".into());
                    }
                }
            },
            "input" => d.input = opt(&value),
            "output" => d.output = opt(&value),
            "error" => d.error = opt(&value),
            "log" => d.log = opt(&value),
            "initialdir" | "iwd" => d.iwd = opt(&value),
            "should_transfer_files" => match value.to_ascii_uppercase().as_str() {
                "YES" | "TRUE" => d.should_transfer_files = ShouldTransferFiles::Yes,
                "NO" | "FALSE" => d.should_transfer_files = ShouldTransferFiles::No,
                "IF_NEEDED" => d.should_transfer_files = ShouldTransferFiles::IfNeeded,
                _ => bad(format!("\"{value}\" (expected YES, NO or IF_NEEDED)")),
            },
            "when_to_transfer_output" => match value.to_ascii_uppercase().as_str() {
                "ON_EXIT" => d.when_to_transfer_output = WhenToTransferOutput::OnExit,
                "ON_EXIT_OR_EVICT" => {
                    d.when_to_transfer_output = WhenToTransferOutput::OnExitOrEvict
                }
                "ON_SUCCESS" => d.when_to_transfer_output = WhenToTransferOutput::OnSuccess,
                _ => bad(format!(
                    "\"{value}\" (expected ON_EXIT, ON_EXIT_OR_EVICT or ON_SUCCESS)"
                )),
            },
            "transfer_executable" => match parse_bool(&value) {
                Some(b) => d.transfer_executable = b,
                None => bad(format!("\"{value}\" is not true or false")),
            },
            "transfer_input_files" => d.transfer_input_files = split_list(&value),
            "transfer_output_files" => d.transfer_output_files = Some(split_list(&value)),
            "transfer_checkpoint_files" => d.transfer_checkpoint_files = split_list(&value),
            "concurrency_limits" => {
                d.concurrency_limits = split_list(&value);
                if let Err(r) = crate::matchmaking::parse_limits(&d.concurrency_limits) {
                    bad(r);
                }
            }
            "request_cpus" => match value.parse::<u32>() {
                Ok(n) if n >= 1 => d.request_cpus = n,
                _ => bad(format!("\"{value}\" is not a positive whole number")),
            },
            "request_gpus" => match value.parse::<u32>() {
                Ok(n) => d.request_gpus = n,
                _ => bad(format!("\"{value}\" is not a whole number")),
            },
            "request_memory" => match parse_size(&value, MIB, MIB) {
                Ok(n) => d.request_memory_mb = Some(n),
                Err(r) => bad(r),
            },
            "request_disk" => match parse_size(&value, KIB, KIB) {
                Ok(n) => d.request_disk_kb = Some(n),
                Err(r) => bad(r),
            },
            "requirements" | "rank" => {
                if let Err(reason) = check_expression(&value) {
                    bad(reason);
                } else if key == "rank" {
                    d.rank = opt(&value);
                } else {
                    d.requirements = opt(&value);
                }
            }
            "checkpoint_exit_code" => match value.parse::<i32>() {
                Ok(n) if (0..=255).contains(&n) => d.checkpoint_exit_code = Some(n),
                _ => bad(format!("\"{value}\" is not an exit code (0-255)")),
            },
            "checkpoint_interval" => match value.parse::<u64>() {
                Ok(n) if n >= 1 => d.checkpoint_interval_secs = Some(n),
                _ => bad(format!("\"{value}\" is not a positive number of seconds")),
            },
            "checkpoint_method" => match value.to_ascii_lowercase().as_str() {
                "auto" | "self" => d.checkpoint_method = CheckpointMethod::Auto,
                "criu" => d.checkpoint_method = CheckpointMethod::Criu,
                _ => bad(format!("\"{value}\" (expected auto, self or criu)")),
            },
            "max_retries" => match value.parse::<u32>() {
                Ok(n) => d.max_retries = Some(n),
                _ => bad(format!("\"{value}\" is not a whole number")),
            },
            "nice_user" => match parse_bool(&value) {
                Some(b) => d.nice_user = b,
                None => bad(format!("\"{value}\" is not true or false")),
            },
            "accounting_group" => d.accounting_group = opt(&value),
            "batch_name" => d.batch_name = opt(&value),
            "priority" => match value.parse::<i32>() {
                Ok(n) => d.priority = n,
                _ => bad(format!("\"{value}\" is not a whole number")),
            },
            // User macros: used only through $(…).
            _ => {}
        }
    }

    // The submitter's environment first, explicit `environment` on top.
    if getenv_all {
        d.environment = ex.env.clone();
    } else {
        for n in &getenv_names {
            if let Some(v) = ex.env.get(n) {
                d.environment.insert(n.clone(), v.clone());
            }
        }
    }
    d.environment.extend(explicit_env);

    // A CRIU dump already holds the whole process: a job exit code that
    // means "checkpointed" would make two methods fight over one run.
    if d.checkpoint_method == CheckpointMethod::Criu
        && d.checkpoint_exit_code.is_some()
        && let Some(a) = ex.vars.get("checkpoint_method")
    {
        errs.push(
            a.line,
            SubmitErrorKind::BadValue {
                key: a.name.clone(),
                reason: "criu cannot be combined with checkpoint_exit_code".into(),
            },
        );
    }
    if d.executable.is_empty() && !ex.vars.contains_key("executable") {
        errs.push(queue_line, SubmitErrorKind::MissingExecutable);
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
            "initialdir" if !ex.vars.contains_key("initialdir") => "iwd".to_string(),
            "environment" if !ex.vars.contains_key("environment") => "getenv".to_string(),
            f => f.to_ascii_lowercase(),
        };
        let line = ex.vars.get(&key).map_or(queue_line, |a| a.line);
        errs.push_field(
            line,
            SubmitErrorKind::BadField {
                field: p.field,
                process,
                reason: p.reason,
            },
        );
    }
    None
}

/// Checks that a ClassAd expression parses, so that a typo in
/// `requirements` is reported at submit time with its line rather than
/// leaving the job unmatched forever. `$$(attr)` placeholders are filled in
/// at match time, so they are replaced by a neutral literal for the check.
fn check_expression(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Ok(());
    }
    let mut probe = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(p) = rest.find("$$(") {
        probe.push_str(&rest[..p]);
        let after = &rest[p + 3..];
        match after.find(')') {
            Some(end) => {
                probe.push_str("undefined");
                rest = &after[end + 1..];
            }
            None => return Err("unclosed $$(".into()),
        }
    }
    probe.push_str(rest);
    gleaner_classad::parse_expr(&probe)
        .map(|_| ())
        .map_err(|e| format!("not a valid expression: {e}"))
}

/// The job-ad attribute of a policy submit key (`on_exit_hold` →
/// `OnExitHold`), as HTCondor's condor_submit names it.
pub fn policy_attr(key: &str) -> Option<&'static str> {
    Some(match key {
        "on_exit_hold" => "OnExitHold",
        "on_exit_hold_reason" => "OnExitHoldReason",
        "on_exit_hold_subcode" => "OnExitHoldSubCode",
        "periodic_hold" => "PeriodicHold",
        "periodic_hold_reason" => "PeriodicHoldReason",
        "periodic_hold_subcode" => "PeriodicHoldSubCode",
        "periodic_release" => "PeriodicRelease",
        _ => return None,
    })
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

fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" | "t" | "y" => Some(true),
        "false" | "no" | "0" | "f" | "n" => Some(false),
        _ => None,
    }
}

/// A comma- (or whitespace-) separated file or name list.
fn split_list(v: &str) -> Vec<String> {
    v.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_swaps_once() {
        assert_eq!(edit_distance("exectuable", "executable"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("log", "log"), 0);
    }

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
