//! The HTCondor submit language behind `glean submit FILE`: every command
//! of the vanilla universe (`submit/keys.rs` says what Gleaner does with
//! each), macros and function macros, `include`, `if`/`elif`/`else`, and
//! every form of `queue`.
//!
//! Parsing happens in two steps because the cluster id is only known once
//! the station's queue assigns it:
//!
//! 1. [`parse_submit`] reads the file (and what it includes, through
//!    [`SubmitFs`]), records every assignment and `queue` statement with
//!    its items, and validates the whole file by expanding it once with a
//!    probe cluster id. Every problem is collected with its file and line;
//!    if there is any, nothing is returned. Commands Gleaner records but
//!    does not act on, and keys that are no command, give warnings.
//! 2. [`ClusterSubmission::expand`] expands the macros again with the real
//!    cluster id and yields one [`JobDescription`] per proc. The queue calls
//!    it inside the transaction that allocates the id.
//!
//! Syntax (HTCondor's `condor_submit` manual page and users' manual):
//! - `key = value` lines; keys are case-insensitive; `#` starts a comment
//!   line; a trailing `\` continues the line. Most commands also answer to
//!   the name of the job-ad attribute they set (`OnExitHold`, `CronMinute`).
//! - Macros `$(name)`, `$(name:default)`, `$ENV(NAME[:default])`, the
//!   built-ins `$(Cluster)`/`$(ClusterId)`, `$(Process)`/`$(ProcId)`, `$(JobId)`,
//!   `$(Step)`, `$(ItemIndex)`/`$(Row)`, `$(Item)`, `$(DOLLAR)`, and the
//!   function macros `$INT()`, `$REAL()`, `$F[fpduwnxbqa]()`, `$DIRNAME()`,
//!   `$BASENAME()`, `$CHOICE()`, `$SUBSTR()`, `$RANDOM_INTEGER()`,
//!   `$RANDOM_CHOICE()`, `$EVAL()`. Macros expand lazily at queue time, so
//!   a definition may refer to one made later in the file; an undefined
//!   macro expands to nothing (with a warning), as in HTCondor. `$$(attr)`
//!   and `$$(attr:default)` are filled in from the matched machine when
//!   the job is placed (`submit/matchtime.rs`).
//! - `include : FILE` (and `include ifexist : FILE`); `if`/`elif`/`else`/
//!   `endif` with `defined NAME`, `version >= X.Y`, booleans, `$(macro)`
//!   and ClassAd expressions as conditions.
//! - `queue [N] [vars] [in|from|matching …]` with items inline, over
//!   lines, from a file or from file globs, and Python slices
//!   (`submit/queue.rs`). Several `queue` statements add procs to the same
//!   cluster; assignments between them apply to later ones only.
//! - `+Attr = expr` and `MY.Attr = expr` custom attributes; `request_NAME`
//!   for a machine resource Gleaner has no key for.

use crate::job::JobDescription;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

mod args_env;
mod build;
mod expand;
mod functions;
mod glob;
pub mod inspect;
pub(crate) mod keys;
pub mod matchtime;
mod parallel;
mod queue;
mod received;
mod resources;
mod retry_request;
mod source;
mod transfer;

pub use build::{parse_size, policy_attr};
pub use source::{LocalFs, SubmitFs};

use crate::limits::{
    MAX_CLUSTER_BYTES, MAX_SUBMISSION_BYTES, MAX_SUBMIT_FILE_BYTES, description_bytes, human_bytes,
    over_limit,
};
use expand::{Budget, Builtins, Expander};
use queue::{QueueCtx, too_many_procs};
use source::{Reader, keyword};

pub use crate::limits::MAX_PROCS;

/// Whether `key` (any case) is a submit command (or one of its aliases)
/// rather than a user's macro.
pub fn is_command(key: &str) -> bool {
    keys::lookup(key).is_some()
}

/// Cluster id used to validate a file before the real one is known.
const PROBE_CLUSTER: u64 = 1;

/// The HTCondor version whose submit language this is, for `if version`.
pub const HTCONDOR_VERSION: (u32, u32, u32) = (25, 0, 0);

/// Macro names the parser defines for every proc (lower case).
const BUILTINS: &[&str] = &[
    "cluster",
    "clusterid",
    "process",
    "procid",
    "jobid",
    "step",
    "itemindex",
    "row",
    "dollar",
];

/// What the caller knows that the file does not: its name for messages, the
/// submitting user, the environment `$ENV()` and `getenv` read (injected
/// rather than read from the process, for tests), where the file's own
/// references are read from, command-line definitions and the seed of its
/// random choices.
#[derive(Clone, Debug, Default)]
pub struct SubmitContext {
    pub file_name: String,
    pub owner: String,
    pub env: BTreeMap<String, String>,
    /// The submit file's directory: `include`, `queue … from FILE` and
    /// `queue … matching` read there. `None` refuses them (the station
    /// reads no user's files for a submission).
    pub dir: Option<PathBuf>,
    /// `KEY=VALUE` from the command line (`condor_submit X=3 file`),
    /// defined before the file's first line (`+Attr`/`My.Attr` keys set
    /// job attributes).
    pub defines: Vec<(String, String)>,
    /// Definitions made after the file is read, just before each `queue`
    /// statement (DAGMan's `VARS … APPEND` and its own attributes).
    pub appends: Vec<(String, String)>,
    /// Seed of `$RANDOM_INTEGER()` and `$RANDOM_CHOICE()`.
    pub seed: u64,
}

impl SubmitContext {
    pub fn new(file_name: impl Into<String>, owner: impl Into<String>) -> Self {
        SubmitContext {
            file_name: file_name.into(),
            owner: owner.into(),
            ..Default::default()
        }
    }

    pub fn with_env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = env;
        self
    }

    pub fn with_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    pub fn with_defines(mut self, defines: Vec<(String, String)>) -> Self {
        self.defines = defines;
        self
    }

    pub fn with_appends(mut self, appends: Vec<(String, String)>) -> Self {
        self.appends = appends;
        self
    }

    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
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

/// Something accepted that the user should know about: a command Gleaner
/// records but does not act on, a key that is no command, an undefined
/// macro.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SubmitWarning {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for SubmitWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: warning: {}", self.file, self.line, self.message)
    }
}

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
    #[error("{0}")]
    BadConditional(String),
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
    /// The included file it was written in (`None`: the submit file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    /// Its place in reading order (the latest of two spellings of one
    /// command wins).
    #[serde(default)]
    seq: u32,
}

/// The variables a `queue` statement binds for one proc.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    /// What followed `queue` on its line, for the references it makes
    /// (`queue $(n)`).
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
    /// Seed of the random function macros.
    #[serde(default)]
    seed: u64,
    /// The submit file's directory as the CLI saw it (`$Ff()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dir: Option<String>,
    /// What the parser warned about (not sent to the station).
    #[serde(skip)]
    warnings: Vec<SubmitWarning>,
}

impl ClusterSubmission {
    /// Number of procs (jobs) the cluster will have.
    pub fn proc_count(&self) -> u32 {
        let n = self.batches.len();
        self.batches
            .iter()
            .map(|b| parallel::jobs_of(b, n, &self.env))
            .fold(0u32, u32::saturating_add)
    }

    /// What the parser warned about, in line order.
    pub fn warnings(&self) -> &[SubmitWarning] {
        &self.warnings
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
        self.expand_checked(cluster).map(|(d, _)| d)
    }

    /// [`Self::expand_each`] collected, with the warnings, of a submission
    /// already checked (or made by the parser, which enforces the same
    /// limits while it parses).
    fn expand_checked(
        &self,
        cluster: u64,
    ) -> Result<(Vec<JobDescription>, Vec<SubmitWarning>), SubmitErrors> {
        let mut out = Vec::new();
        self.expand_each_checked(cluster, |d| {
            out.push(d);
            Ok::<(), std::convert::Infallible>(())
        })
        .map_err(|e| match e {
            ExpandError::Submit(e) => e,
            ExpandError::Sink(never) => match never {},
        })
        .map(|warnings| (out, warnings))
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
        self.expand_each_checked(cluster, each).map(|_warnings| ())
    }

    fn expand_each_checked<E>(
        &self,
        cluster: u64,
        mut each: impl FnMut(JobDescription) -> Result<(), E>,
    ) -> Result<Vec<SubmitWarning>, ExpandError<E>> {
        let mut errs = ErrorSink::new(&self.file_name);
        let mut process: u32 = 0;
        let budget = Budget::new();
        let mut total: u64 = 0;
        let n_batches = self.batches.len();
        'all: for batch in &self.batches {
            // A parallel job's one proc becomes its machine_count members.
            let gang = match parallel::gang_of(batch, n_batches, &self.env) {
                Ok(g) => g,
                Err(e) => {
                    errs.push_file(e.file.as_deref(), e.line, e.kind);
                    continue;
                }
            };
            let ranks: Vec<Option<u32>> = match gang {
                Some(g) => (0..g.machine_count).map(Some).collect(),
                None => vec![None],
            };
            for (binding, node) in batch
                .procs
                .iter()
                .flat_map(|b| ranks.iter().map(move |r| (b, *r)))
            {
                let ctx = Expander::new(
                    &batch.vars,
                    &self.env,
                    Some(Builtins {
                        cluster,
                        process,
                        binding,
                        node,
                    }),
                    &budget,
                )
                .with_seed(self.seed)
                .with_dir(self.dir.as_deref());
                let built = build::build_description(
                    &ctx,
                    (batch.file.as_deref(), batch.line),
                    process,
                    &self.owner,
                    &mut errs,
                );
                if budget.exhausted() {
                    break 'all;
                }
                if let Some(mut d) = built {
                    if let (Some(gang), Some(rank)) = (gang, node) {
                        d.universe = crate::job::Universe::Parallel;
                        d.gang = Some(crate::job::GangMember { gang, rank });
                    }
                    total = total.saturating_add(description_bytes(&d) as u64);
                    if total > MAX_CLUSTER_BYTES {
                        errs.push_file(
                            batch.file.as_deref(),
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
        let warnings = errs.warnings.iter().cloned().collect();
        errs.finish()
            .map(|()| warnings)
            .map_err(ExpandError::Submit)
    }
}

/// Why [`ClusterSubmission::expand_each`] stopped: the submission, or the
/// receiver of the descriptions.
#[derive(Debug)]
pub enum ExpandError<E> {
    Submit(SubmitErrors),
    Sink(E),
}

/// Evaluates the condition of an `if`/`elif` line against the macros
/// defined so far.
fn condition(
    text: &str,
    vars: &BTreeMap<String, Assignment>,
    env: &BTreeMap<String, String>,
) -> Result<bool, SubmitErrorKind> {
    let t = text.trim();
    let bad = |why: String| SubmitErrorKind::BadConditional(format!("if {t}: {why}"));
    if let Some(rest) = t.strip_prefix('!') {
        return condition(rest, vars, env).map(|b| !b);
    }
    if let Some(name) = keyword(t, "defined") {
        let n = name.trim().to_ascii_lowercase();
        return Ok(!n.is_empty() && vars.contains_key(&n));
    }
    if let Some(rest) = keyword(t, "version") {
        return version_condition(rest).map_err(bad);
    }
    let budget = Budget::new();
    let expander = Expander::new(vars, env, None, &budget);
    let v = expander.expand(t, 0).map_err(|e| bad(e.to_string()))?;
    let v = v.trim();
    if v.is_empty() {
        return Ok(false);
    }
    if let Some(b) = build::parse_bool(v) {
        return Ok(b);
    }
    let e = gleaner_classad::parse_expr(v)
        .map_err(|_| bad(format!("\"{v}\" is not a simple boolean")))?;
    let r = gleaner_classad::EvalContext::new(0).eval(&e);
    if let Some(b) = r.as_bool() {
        return Ok(b);
    }
    match r.as_f64() {
        Some(n) => Ok(n != 0.0),
        None => Err(bad(format!("\"{v}\" is not a simple boolean"))),
    }
}

/// `version OP X.Y[.Z]` against [`HTCONDOR_VERSION`]; `X.Y` equals any
/// `X.Y.z`.
fn version_condition(rest: &str) -> Result<bool, String> {
    let rest = rest.trim();
    let op_len = rest
        .find(|c: char| !"<>=!".contains(c))
        .unwrap_or(rest.len());
    let (op, v) = (&rest[..op_len], rest[op_len..].trim());
    let parts: Vec<u32> = v
        .split('.')
        .map(|p| p.parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("\"{v}\" is not a version (X.Y or X.Y.Z)"))?;
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("\"{v}\" is not a version (X.Y or X.Y.Z)"));
    }
    let me = [HTCONDOR_VERSION.0, HTCONDOR_VERSION.1, HTCONDOR_VERSION.2];
    let ord = me[..parts.len()].cmp(&parts[..]);
    use std::cmp::Ordering::*;
    Ok(match op {
        "==" => ord == Equal,
        "!=" => ord != Equal,
        ">=" => ord != Less,
        "<=" => ord != Greater,
        ">" => ord == Greater,
        "<" => ord == Less,
        _ => {
            return Err(format!(
                "\"{op}\" is not a comparison (==, !=, >=, <=, >, <)"
            ));
        }
    })
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
    let local = ctx.dir.as_ref().map(|d| LocalFs { dir: d.clone() });
    let fs: Option<&dyn SubmitFs> = local.as_ref().map(|l| l as &dyn SubmitFs);
    let mut reader = Reader::new(text, fs);

    let mut vars: BTreeMap<String, Assignment> = BTreeMap::new();
    // Every assignment ever made, for the unused-key warnings.
    let mut all_assignments: Vec<Assignment> = Vec::new();
    let mut batches: Vec<QueueBatch> = Vec::new();
    // `queue` lines may use macros too (`queue $(n)`).
    let mut queue_lines: Vec<String> = Vec::new();
    let mut total_procs: u64 = 0;
    // Bytes of the parsed submission so far (see `MAX_SUBMISSION_BYTES`).
    let mut stored: u64 = 0;
    let mut seq: u32 = 0;

    // `$(SUBMIT_FILE)`, as condor_submit defines it (a default the file
    // may override): the file's path, absolute since Gleaner reads the
    // file's references beside it.
    if let Some(dir) = &ctx.dir {
        let base = std::path::Path::new(&ctx.file_name)
            .file_name()
            .map(|b| dir.join(b))
            .unwrap_or_else(|| dir.clone());
        vars.insert(
            "submit_file".into(),
            Assignment {
                name: "SUBMIT_FILE".into(),
                value: base.to_string_lossy().into_owned(),
                line: 0,
                file: None,
                seq,
            },
        );
        seq += 1;
    }
    // Command-line definitions first, as line 0 of the file.
    for (k, v) in &ctx.defines {
        match define_key(k) {
            Some(key) => {
                let a = Assignment {
                    name: k.trim().to_string(),
                    value: v.trim().to_string(),
                    line: 0,
                    file: None,
                    seq,
                };
                seq += 1;
                vars.insert(key, a);
            }
            None => errs.push(
                0,
                SubmitErrorKind::Malformed(format!("{k}={v} (a definition on the command line)")),
            ),
        }
    }

    loop {
        let env = &ctx.env;
        let snapshot = &vars;
        let Some(l) = reader.next(|c| condition(c, snapshot, env)) else {
            break;
        };
        let file = l.file.as_deref().map(str::to_string);
        let line_no = l.line;
        let t = l.text.trim().to_string();
        if let Some(rest) = keyword(&t, "queue") {
            // Definitions the caller makes after the file's own.
            for (k, v) in &ctx.appends {
                if let Some(key) = define_key(k) {
                    let a = Assignment {
                        name: k.trim().to_string(),
                        value: v.trim().to_string(),
                        line: 0,
                        file: None,
                        seq,
                    };
                    seq = seq.saturating_add(1);
                    vars.insert(key, a);
                }
            }
            queue_lines.push(rest.to_string());
            let vars_size = received::vars_bytes(&vars);
            let room = MAX_SUBMISSION_BYTES.saturating_sub(stored.saturating_add(vars_size));
            let budget = Budget::new();
            let expander = Expander::new(&vars, &ctx.env, None, &budget);
            let mut qctx = QueueCtx {
                reader: &mut reader,
                expander: &expander,
                fs,
                room,
            };
            match queue::parse_queue(rest, &mut qctx) {
                Ok(procs) => {
                    total_procs = total_procs.saturating_add(procs.len() as u64);
                    if total_procs > MAX_PROCS {
                        errs.push_file(file.as_deref(), line_no, too_many_procs());
                    } else {
                        stored = stored
                            .saturating_add(vars_size)
                            .saturating_add(received::procs_bytes(&procs));
                        batches.push(QueueBatch {
                            line: line_no,
                            file: file.clone(),
                            statement: rest.to_string(),
                            vars: vars.clone(),
                            procs,
                        });
                    }
                }
                Err(kind) => errs.push_file(file.as_deref(), line_no, kind),
            }
            continue;
        }
        let Some((k, v)) = t.split_once('=') else {
            errs.push_file(
                file.as_deref(),
                line_no,
                SubmitErrorKind::Malformed(t.clone()),
            );
            continue;
        };
        let key = k.trim();
        let value = v.trim().to_string();
        let table_key = if let Some(attr) = custom_attr_name(key) {
            if !is_identifier(attr) {
                errs.push_file(
                    file.as_deref(),
                    line_no,
                    SubmitErrorKind::BadAttribute(attr.to_string()),
                );
                continue;
            }
            format!("+{}", attr.to_ascii_lowercase())
        } else {
            if !is_key(key) {
                errs.push_file(
                    file.as_deref(),
                    line_no,
                    SubmitErrorKind::Malformed(t.clone()),
                );
                continue;
            }
            let lower = key.to_ascii_lowercase();
            if BUILTINS.contains(&lower.as_str()) {
                errs.push_file(
                    file.as_deref(),
                    line_no,
                    SubmitErrorKind::BuiltinRedefined(key.to_string()),
                );
                continue;
            }
            lower
        };
        // A macro that names itself refers to its value so far, expanded
        // now (`foo = $(foo) bar`), as HTCondor does.
        let value = if table_key.starts_with('+') {
            value
        } else {
            expand_self(
                &value,
                &table_key,
                vars.get(&table_key).map(|a| a.value.as_str()),
            )
        };
        let a = Assignment {
            name: key.to_string(),
            value,
            line: line_no,
            file,
            seq,
        };
        seq = seq.saturating_add(1);
        all_assignments.push(a.clone());
        vars.insert(table_key, a);
    }
    for e in std::mem::take(&mut reader.errors) {
        errs.push_file(e.file.as_deref(), e.line, e.kind);
    }

    // A key that is no command and that nothing refers to does nothing:
    // HTCondor warns about it ("is it a typo?"), and so do we.
    let referenced = referenced_macros(&all_assignments, &batches, &queue_lines);
    for a in &all_assignments {
        let lower = a.name.to_ascii_lowercase();
        if custom_attr_name(&a.name).is_some()
            || keys::lookup(&lower).is_some()
            || keys::custom_request(&a.name).is_some()
            || keys::refused_prefix(&lower).is_some()
            || referenced.contains(&lower)
        {
            continue;
        }
        let hint = suggest(&lower)
            .map(|s| format!(" (did you mean \"{s}\"?)"))
            .unwrap_or_default();
        errs.warn_file(
            a.file.as_deref(),
            a.line,
            format!(
                "\"{}\" is not a submit command and nothing refers to it: it has no effect, as \
                 in HTCondor{hint}",
                a.name
            ),
        );
    }

    if batches.is_empty() && errs.is_empty() {
        errs.push(0, SubmitErrorKind::NoQueue);
    }

    let uses_getenv = all_assignments
        .iter()
        .any(|a| matches!(keys::canonical(&a.name).as_str(), "getenv"));
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

    let mut sub = ClusterSubmission {
        file_name: ctx.file_name.clone(),
        owner: ctx.owner.clone(),
        env,
        batches,
        seed: ctx.seed,
        dir: ctx.dir.as_ref().map(|d| d.to_string_lossy().into_owned()),
        warnings: Vec::new(),
    };
    // Every problem at once: the received-submission checks (as the
    // station will make them) and those of a trial expansion.
    if let Err(e) = sub.check() {
        errs.extend(e.0);
    }
    match sub.expand_checked(PROBE_CLUSTER) {
        Ok((descs, w)) => {
            errs.warnings.extend(w);
            if let Some(fs) = fs {
                check_initialdirs(&sub, &descs, fs, &mut errs);
            }
        }
        Err(e) => errs.extend(e.0),
    }
    let warnings: Vec<SubmitWarning> = errs.warnings.iter().cloned().collect();
    errs.finish().map(|()| {
        sub.warnings = warnings;
        sub
    })
}

/// Refuses an `initialdir` that is not a directory, as condor_submit does
/// ("No such directory"), naming the line that set it. Checked with the
/// probe cluster id: the station checks again, as the job's owner, with
/// the real one.
fn check_initialdirs(
    sub: &ClusterSubmission,
    descs: &[JobDescription],
    fs: &dyn SubmitFs,
    errs: &mut ErrorSink,
) {
    let mut seen = BTreeSet::new();
    let mut descs = descs.iter();
    let n = sub.batches.len();
    for batch in &sub.batches {
        let jobs = parallel::jobs_of(batch, n, &sub.env);
        // The assignment that set it: the latest of the command's names,
        // or the queue statement when its items name it.
        let set_by = batch
            .vars
            .values()
            .filter(|a| keys::canonical(&a.name) == "initialdir")
            .max_by_key(|a| a.seq)
            .map(|a| (a.file.clone(), a.line, a.name.clone()));
        let from_items = batch
            .procs
            .iter()
            .any(|p| p.items.keys().any(|k| keys::canonical(k) == "initialdir"));
        for d in descs.by_ref().take(jobs as usize) {
            let Some(iwd) = &d.iwd else { continue };
            if !seen.insert(iwd.clone()) || fs.is_dir(std::path::Path::new(iwd)) != Some(false) {
                continue;
            }
            let (file, line, key) = match (&set_by, from_items) {
                (Some(s), false) => s.clone(),
                _ => (batch.file.clone(), batch.line, "initialdir".to_string()),
            };
            let shown = match &sub.dir {
                Some(dir) if !iwd.starts_with('/') => {
                    format!("{}/{iwd}", dir.trim_end_matches('/'))
                }
                _ => iwd.clone(),
            };
            errs.push_file(
                file.as_deref(),
                line,
                SubmitErrorKind::BadValue {
                    key,
                    reason: format!("no such directory: {shown}"),
                },
            );
        }
    }
}

/// Collects errors and warnings, dropping duplicates (each proc re-reports
/// the same bad line) and sorting by file and line.
struct ErrorSink {
    file: String,
    errors: BTreeSet<SubmitError>,
    warnings: BTreeSet<SubmitWarning>,
    /// (line, field) of the job-field problems reported: each once.
    fields: BTreeSet<(usize, String)>,
}

impl ErrorSink {
    fn new(file: &str) -> Self {
        ErrorSink {
            file: file.to_string(),
            errors: BTreeSet::new(),
            warnings: BTreeSet::new(),
            fields: BTreeSet::new(),
        }
    }
    /// The name a problem in `file` (an included file, or the submit file)
    /// is reported under.
    fn name(&self, file: Option<&str>) -> String {
        file.map_or_else(|| self.file.clone(), str::to_string)
    }
    /// Pushes a [`SubmitErrorKind::BadField`] unless that field of that
    /// line was reported for an earlier proc.
    fn push_field(&mut self, file: Option<&str>, line: usize, kind: SubmitErrorKind) {
        if let SubmitErrorKind::BadField { field, .. } = &kind
            && !self.fields.insert((line, field.clone()))
        {
            return;
        }
        self.push_file(file, line, kind);
    }
    fn push(&mut self, line: usize, kind: SubmitErrorKind) {
        self.push_file(None, line, kind);
    }
    fn push_file(&mut self, file: Option<&str>, line: usize, kind: SubmitErrorKind) {
        self.errors.insert(SubmitError {
            file: self.name(file),
            line,
            kind,
        });
    }
    /// A problem with assignment `a`, at its place.
    fn push_at(&mut self, a: &Assignment, kind: SubmitErrorKind) {
        self.push_file(a.file.as_deref(), a.line, kind);
    }
    fn warn_file(&mut self, file: Option<&str>, line: usize, message: String) {
        self.warnings.insert(SubmitWarning {
            file: self.name(file),
            line,
            message,
        });
    }
    fn warn_at(&mut self, a: &Assignment, message: String) {
        self.warn_file(a.file.as_deref(), a.line, message);
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

/// A key as submit files write them: letters, digits, `_` and `.`.
fn is_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// The table key of a definition made by the caller (`KEY`, `+Attr` or
/// `My.Attr`), `None` if it is no valid key.
fn define_key(k: &str) -> Option<String> {
    let k = k.trim();
    if let Some(attr) = custom_attr_name(k) {
        return is_identifier(attr).then(|| format!("+{}", attr.to_ascii_lowercase()));
    }
    let lower = k.to_ascii_lowercase();
    (is_key(k) && !BUILTINS.contains(&lower.as_str())).then_some(lower)
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

/// Lower-case names used as `$(name)` or `$(name:default)` anywhere, and
/// as the arguments of function macros (`$INT(MyIndex)`).
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

/// Adds the lower-case names `s` uses as `$(name)`, `$(name:default)`, or
/// as a bare-name argument of a function macro.
fn referenced_macros_in(s: &str, out: &mut BTreeSet<String>) {
    let mut rest = s;
    while let Some(p) = rest.find('$') {
        let after = &rest[p + 1..];
        if let Some(inner) = after.strip_prefix('(') {
            let end = inner.find([')', ':']).unwrap_or(inner.len());
            out.insert(inner[..end].trim().to_ascii_lowercase());
        } else if let Some((_, len)) = functions::function_at(after) {
            let inner = &after[len + 1..];
            let end = functions::closing_paren(inner).unwrap_or(inner.len());
            for arg in functions::split_args(&inner[..end]) {
                out.insert(arg.to_ascii_lowercase());
            }
        }
        rest = after;
    }
}

/// `value` with its references to macro `lower` (`$(name)`,
/// `$(name:default)`, any case) replaced by `previous`, the macro's value
/// before this assignment (its default, or nothing, when there was none).
fn expand_self(value: &str, lower: &str, previous: Option<&str>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(p) = rest.find("$(") {
        let inner = &rest[p + 2..];
        let Some(end) = functions::closing_paren(inner) else {
            break;
        };
        let (name, default) = match inner[..end].split_once(':') {
            Some((n, d)) => (n.trim(), Some(d)),
            None => (inner[..end].trim(), None),
        };
        out.push_str(&rest[..p]);
        // `$$(name)` is a match-time value, not a macro.
        let match_time = rest[..p].ends_with('$');
        if name.eq_ignore_ascii_case(lower) && !match_time {
            out.push_str(previous.or(default).unwrap_or(""));
        } else {
            out.push_str(&rest[p..p + 2 + end + 1]);
        }
        rest = &inner[end + 1..];
    }
    out.push_str(rest);
    out
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

/// The closest command, if close enough to be a plausible typo.
fn suggest(name: &str) -> Option<String> {
    let limit = (name.len() / 3).max(2);
    keys::all_names()
        .map(|k| (edit_distance(name, k), k))
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
    fn version_conditions() {
        assert!(version_condition(">= 8.1.6").unwrap());
        assert!(version_condition("== 25.0").unwrap());
        assert!(!version_condition("< 9").unwrap());
        assert!(version_condition("~ 1").is_err());
        assert!(version_condition(">= x").is_err());
    }
}
