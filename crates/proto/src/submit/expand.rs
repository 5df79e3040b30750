//! Macro expansion, bounded while it runs.
//!
//! Every byte the expander is about to append is checked first against
//! the limit for one value ([`MAX_VALUE_BYTES`]) and charged to a budget
//! shared by the whole submission ([`MAX_EXPANSION_BYTES`]), so a
//! doubling macro is refused after about a megabyte of work rather than
//! after asking for gigabytes. A user macro is expanded once per proc and
//! remembered (up to [`MAX_MEMO_BYTES`]): a chain of references to empty
//! macros costs one expansion per macro, not two to the power of its depth.

use super::functions::{self, closing_paren, function_at};
use super::{Assignment, ProcBinding, SubmitErrorKind};
use crate::limits::{
    MAX_EXPANSION_BYTES, MAX_MEMO_BYTES, MAX_VALUE_BYTES, REFERENCE_COST, human_bytes,
};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// Deepest nesting of macro references (cycles are found as such, not by
/// depth). Each level holds at most one value of `MAX_VALUE_BYTES`.
const MAX_DEPTH: usize = 32;

/// The macro text one submission may still produce.
pub(super) struct Budget {
    used: Cell<u64>,
    limit: u64,
}

impl Budget {
    pub(super) fn new() -> Budget {
        Budget::with_limit(MAX_EXPANSION_BYTES)
    }

    pub(super) fn with_limit(limit: u64) -> Budget {
        Budget {
            used: Cell::new(0),
            limit,
        }
    }

    pub(super) fn exhausted(&self) -> bool {
        self.used.get() > self.limit
    }

    fn charge(&self, n: u64) -> Result<(), SubmitErrorKind> {
        let used = self.used.get().saturating_add(n);
        self.used.set(used);
        if used > self.limit {
            return Err(SubmitErrorKind::TooLarge(format!(
                "expanding the submission's macros produces more than {} of text, the limit \
                 for one submission (fewer procs, or shorter values)",
                human_bytes(self.limit)
            )));
        }
        Ok(())
    }
}

/// Per-proc built-in macro values.
pub(super) struct Builtins<'a> {
    pub(super) cluster: u64,
    pub(super) process: u32,
    pub(super) binding: &'a ProcBinding,
    /// A parallel job's member rank (`$(Node)`); `None` otherwise.
    pub(super) node: Option<u32>,
}

/// What a name refers to.
enum Found<'a> {
    /// A built-in: cheap, not remembered.
    Builtin(String),
    /// A queue variable's value, whose own macros expand too (`queue
    /// executable from (…)` with `$Fp(SUBMIT_FILE)x` as an item), as in
    /// HTCondor.
    Item(&'a str),
    /// A user assignment, expanded once per proc.
    Var(&'a str),
}

/// Macro expansion over one snapshot of the variable table.
pub(super) struct Expander<'a> {
    pub(super) vars: &'a BTreeMap<String, Assignment>,
    pub(super) env: &'a BTreeMap<String, String>,
    /// `None` while parsing `queue` counts, where no proc exists yet.
    pub(super) builtins: Option<Builtins<'a>>,
    budget: &'a Budget,
    /// Lower-case name → its expansion, for this proc.
    memo: RefCell<HashMap<String, Rc<str>>>,
    memo_bytes: Cell<usize>,
    /// User macros being expanded, outermost first: one met again is a
    /// cycle.
    active: RefCell<Vec<String>>,
    /// Macros referred to without being defined (they expand to nothing,
    /// as in HTCondor; the parser warns about each).
    pub(super) undefined: RefCell<BTreeSet<String>>,
    /// State of this proc's random numbers (`$RANDOM_INTEGER()`).
    rng: Cell<u64>,
    /// The submit file's directory (`$Ff()`).
    dir: Option<&'a str>,
    /// The nesting depth of the function macro being called: the macros
    /// it reads by name nest below it (`MAX_DEPTH` holds through them).
    call_depth: Cell<usize>,
}

impl<'a> Expander<'a> {
    pub(super) fn new(
        vars: &'a BTreeMap<String, Assignment>,
        env: &'a BTreeMap<String, String>,
        builtins: Option<Builtins<'a>>,
        budget: &'a Budget,
    ) -> Self {
        Expander {
            vars,
            env,
            builtins,
            budget,
            memo: RefCell::new(HashMap::new()),
            memo_bytes: Cell::new(0),
            active: RefCell::new(Vec::new()),
            undefined: RefCell::new(BTreeSet::new()),
            rng: Cell::new(0),
            dir: None,
            call_depth: Cell::new(0),
        }
    }

    /// Seeds this proc's random numbers from the submission's seed and the
    /// proc number, so every expansion of a submission draws the same.
    pub(super) fn with_seed(self, seed: u64) -> Self {
        let process = self
            .builtins
            .as_ref()
            .map_or(u64::MAX, |b| u64::from(b.process));
        self.rng
            .set(seed ^ process.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        self
    }

    /// The submit file's directory, for `$Ff()`.
    pub(super) fn with_dir(mut self, dir: Option<&'a str>) -> Self {
        self.dir = dir;
        self
    }

    fn lookup(&self, lower: &str) -> Option<Found<'a>> {
        if lower == "dollar" {
            return Some(Found::Builtin("$".into()));
        }
        if let Some(b) = &self.builtins {
            let v = match lower {
                "cluster" | "clusterid" => Some(b.cluster.to_string()),
                "process" | "procid" => Some(b.process.to_string()),
                // HTCondor's `$(JobId)`: `$(ClusterId).$(ProcId)`.
                "jobid" => Some(format!("{}.{}", b.cluster, b.process)),
                "step" => Some(b.binding.step.to_string()),
                "node" => b.node.map(|n| n.to_string()),
                "itemindex" | "row" => Some(b.binding.item_index.to_string()),
                _ => None,
            };
            if let Some(v) = v {
                return Some(Found::Builtin(v));
            }
            let items: &'a BTreeMap<String, String> = &b.binding.items;
            if let Some(v) = items.get(lower) {
                return Some(Found::Item(v.as_str()));
            }
        }
        let vars: &'a BTreeMap<String, Assignment> = self.vars;
        match vars.get(lower) {
            Some(a) => Some(Found::Var(a.value.as_str())),
            // HTCondor's configuration constants for the platform, which
            // submit files test (`$CHOICE(IsWindows, …)`).
            None => match lower {
                "iswindows" => Some(Found::Builtin("false".into())),
                "islinux" => Some(Found::Builtin("true".into())),
                _ => None,
            },
        }
    }

    /// Appends `s` to `out` if the value stays within its limit and the
    /// submission's budget allows.
    fn put(&self, out: &mut String, s: &str) -> Result<(), SubmitErrorKind> {
        if out.len().saturating_add(s.len()) > MAX_VALUE_BYTES {
            return Err(SubmitErrorKind::ValueTooLarge {
                key: String::new(),
                via: None,
                limit: MAX_VALUE_BYTES as u64,
            });
        }
        self.budget.charge(s.len() as u64)?;
        out.push_str(s);
        Ok(())
    }

    /// The expansion of user macro `lower` (whose text is `text`), from
    /// memory if this proc expanded it before.
    fn expand_var(
        &self,
        lower: &str,
        text: &str,
        depth: usize,
    ) -> Result<Rc<str>, SubmitErrorKind> {
        if let Some(v) = self.memo.borrow().get(lower) {
            return Ok(v.clone());
        }
        if self.active.borrow().iter().any(|a| a == lower) {
            return Err(SubmitErrorKind::RecursiveMacro(lower.to_string()));
        }
        self.active.borrow_mut().push(lower.to_string());
        let r = self.expand(text, depth);
        self.active.borrow_mut().pop();
        let v: Rc<str> = Rc::from(r?);
        let bytes = self.memo_bytes.get() + v.len();
        if bytes <= MAX_MEMO_BYTES {
            self.memo_bytes.set(bytes);
            self.memo.borrow_mut().insert(lower.to_string(), v.clone());
        }
        Ok(v)
    }

    /// Expands every macro in `s`.
    pub(super) fn expand(&self, s: &str, depth: usize) -> Result<String, SubmitErrorKind> {
        if depth > MAX_DEPTH {
            return Err(SubmitErrorKind::TooDeep(MAX_DEPTH));
        }
        let unclosed = |tail: &str| {
            let shown: String = tail.chars().take(40).collect();
            SubmitErrorKind::BadMacro(format!("unclosed \"{shown}\""))
        };
        let mut out = String::new();
        let mut rest = s;
        while let Some(p) = rest.find('$') {
            self.put(&mut out, &rest[..p])?;
            let tail = &rest[p..];
            if let Some(after) = tail.strip_prefix("$$(") {
                // Match-time substitution: copied through for the matchmaker.
                let end = after.find(')').ok_or_else(|| unclosed(tail))?;
                self.put(&mut out, &tail[..3 + end + 1])?;
                rest = &after[end + 1..];
            } else if let Some(after) = tail.strip_prefix("$ENV(") {
                let end = closing_paren(after).ok_or_else(|| unclosed(tail))?;
                self.budget.charge(REFERENCE_COST)?;
                let (name, default) = split_default(&after[..end]);
                match self.env.get(name) {
                    Some(v) => self.put(&mut out, v)?,
                    None => match default {
                        Some(d) => {
                            let v = self.expand(d, depth + 1)?;
                            self.put(&mut out, &v)?;
                        }
                        None => return Err(SubmitErrorKind::UndefinedEnv(name.to_string())),
                    },
                }
                rest = &after[end + 1..];
            } else if let Some(after) = tail.strip_prefix("$(") {
                let end = closing_paren(after).ok_or_else(|| unclosed(tail))?;
                self.budget.charge(REFERENCE_COST)?;
                let (name, default) = split_default(&after[..end]);
                if !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    || name.is_empty()
                {
                    return Err(SubmitErrorKind::BadMacro(format!("$({})", &after[..end])));
                }
                let lower = name.to_ascii_lowercase();
                let rename = |e: SubmitErrorKind| match e {
                    SubmitErrorKind::RecursiveMacro(_) => {
                        SubmitErrorKind::RecursiveMacro(name.to_string())
                    }
                    // The innermost macro that grew too large is named
                    // (a value that grows too large by adding it is not).
                    SubmitErrorKind::ValueTooLarge {
                        key,
                        via: None,
                        limit,
                    } => SubmitErrorKind::ValueTooLarge {
                        key,
                        via: Some(format!("$({name})")),
                        limit,
                    },
                    other => other,
                };
                match self.lookup(&lower) {
                    Some(Found::Builtin(v)) => self.put(&mut out, &v)?,
                    Some(Found::Item(v)) if !v.contains('$') => self.put(&mut out, v)?,
                    Some(Found::Item(text)) | Some(Found::Var(text)) => {
                        let v = self.expand_var(&lower, text, depth + 1).map_err(rename)?;
                        self.put(&mut out, &v)?;
                    }
                    None => match default {
                        Some(d) => {
                            let v = self.expand(d, depth + 1)?;
                            self.put(&mut out, &v)?;
                        }
                        // HTCondor expands an undefined macro to nothing.
                        None => {
                            self.undefined.borrow_mut().insert(name.to_string());
                        }
                    },
                }
                rest = &after[end + 1..];
            } else if let Some((func, len)) = function_at(&tail[1..]) {
                // A function macro: its arguments are expanded first.
                let after = &tail[1 + len + 1..];
                let end = closing_paren(after).ok_or_else(|| unclosed(tail))?;
                self.budget.charge(REFERENCE_COST)?;
                let args = self.expand(&after[..end], depth + 1)?;
                let outer = self.call_depth.replace(depth + 1);
                let v = functions::call(func, &args, self);
                self.call_depth.set(outer);
                let v = v?;
                self.put(&mut out, &v)?;
                rest = &after[end + 1..];
            } else {
                self.put(&mut out, "$")?;
                rest = &tail[1..];
            }
        }
        self.put(&mut out, rest)?;
        Ok(out)
    }
}

fn split_default(s: &str) -> (&str, Option<&str>) {
    match s.split_once(':') {
        Some((n, d)) => (n.trim(), Some(d)),
        None => (s.trim(), None),
    }
}

impl functions::Env for Expander<'_> {
    fn macro_value(&self, name: &str) -> Result<Option<String>, SubmitErrorKind> {
        let lower = name.to_ascii_lowercase();
        match self.lookup(&lower) {
            Some(Found::Builtin(v)) => Ok(Some(v)),
            Some(Found::Item(text)) | Some(Found::Var(text)) => Ok(Some(
                self.expand_var(&lower, text, self.call_depth.get() + 1)?
                    .to_string(),
            )),
            None => Ok(None),
        }
    }

    fn random(&self) -> u64 {
        // SplitMix64: small, and good enough to pick among choices.
        let s = self.rng.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        self.rng.set(s);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn dir(&self) -> Option<&str> {
        self.dir
    }
}
