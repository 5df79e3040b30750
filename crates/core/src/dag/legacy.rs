//! Gleaner's earlier DAG text format and rescue record (`JOB`, `PARENT`,
//! `PRIORITY_PARENT`, `RETRY`, `VARS`; `DAG`/`DONE`/`ATTEMPTS` rescue
//! files), kept while the station's DAG manager moves to HTCondor's
//! language ([`super::load`], [`super::run`]).

use super::graph::{Dag, DagBuilder, DagError, Dependence, NodeId, Progress, RescueRetries};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.chars().any(char::is_whitespace)
        && !name.eq_ignore_ascii_case("PARENT")
        && !name.eq_ignore_ascii_case("CHILD")
}

impl<P> Dag<P> {
    /// The rescue record of the current state.
    pub fn rescue(&self) -> Rescue {
        let p = self.progress();
        Rescue {
            dag: None,
            done: p.done,
            attempts: p.attempts,
        }
    }

    /// Applies a rescue record to a freshly built DAG.
    pub fn apply_rescue(
        &mut self,
        rescue: &Rescue,
        retries: RescueRetries,
    ) -> Result<(), DagError> {
        let p = Progress {
            done: rescue.done.clone(),
            attempts: rescue.attempts.clone(),
        };
        self.apply_progress(&p, retries)
    }
}

/// Payload of a node read from a DAG file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The submit description file named on the `JOB` line.
    pub submit: String,
    /// `VARS` macros, for substitution into the submit description.
    pub vars: BTreeMap<String, String>,
}

/// What went wrong on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("{0}")]
    Syntax(String),
    #[error("unknown keyword {0:?}")]
    UnknownKeyword(String),
    #[error("invalid node name {0:?}")]
    InvalidName(String),
    #[error("node {name:?} already declared on line {first_line}")]
    DuplicateNode { name: String, first_line: usize },
    #[error("unknown node {0:?}")]
    UnknownNode(String),
    #[error("{what} for {name:?} already given on line {first_line}")]
    Duplicate {
        what: &'static str,
        name: String,
        first_line: usize,
    },
    #[error("dependency cycle: {0}")]
    Cycle(String),
}

/// One error with its 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    pub line: usize,
    pub kind: ParseErrorKind,
}

/// All errors of one file, in line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseErrors(pub Vec<ParseError>);

impl fmt::Display for ParseErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseErrors {}

fn syntax(line: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        line,
        kind: ParseErrorKind::Syntax(msg.into()),
    }
}

/// Splits a line into its keyword and the rest; `None` for blank lines and
/// `#` comments.
fn keyword(raw: &str) -> Option<(String, &str)> {
    let t = raw.trim();
    if t.is_empty() || t.starts_with('#') {
        return None;
    }
    let (kw, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
    Some((kw.to_ascii_uppercase(), rest.trim()))
}

/// Parses `key="value" key2="value2"` (at least one pair). Inside values,
/// `\"` is a quote and `\\` a backslash; other characters are literal.
fn parse_vars(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|&c| c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        let key_ok = key
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !key_ok {
            return Err(format!(
                "invalid VARS key {key:?}: letters, digits and _ only, not starting with a digit"
            ));
        }
        if chars.next() != Some('=') {
            return Err(format!("VARS key {key:?} must be followed by =\"value\""));
        }
        if chars.next() != Some('"') {
            return Err(format!("VARS value of {key:?} must be in double quotes"));
        }
        let mut value = String::new();
        let mut closed = false;
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    closed = true;
                    break;
                }
                '\\' => match chars.next_if(|&n| n == '"' || n == '\\') {
                    Some(n) => value.push(n),
                    None => value.push('\\'),
                },
                c => value.push(c),
            }
        }
        if !closed {
            return Err(format!("unterminated VARS value of {key:?}"));
        }
        if chars.peek().is_some_and(|c| !c.is_whitespace()) {
            return Err(format!("VARS value of {key:?} must be followed by a space"));
        }
        out.push((key, value));
    }
    if out.is_empty() {
        return Err("VARS needs at least one key=\"value\"".into());
    }
    Ok(out)
}

/// Splits `a b CHILD c d` into parents and children.
fn parent_child(rest: &str, kw: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let Some(pos) = toks.iter().position(|t| t.eq_ignore_ascii_case("CHILD")) else {
        return Err(format!("{kw} needs CHILD: {kw} p1 p2 … CHILD c1 c2 …"));
    };
    let parents: Vec<String> = toks[..pos].iter().map(|s| s.to_string()).collect();
    let children: Vec<String> = toks[pos + 1..].iter().map(|s| s.to_string()).collect();
    if parents.is_empty() {
        return Err(format!("{kw} needs at least one parent before CHILD"));
    }
    if children.is_empty() {
        return Err(format!("{kw} needs at least one child after CHILD"));
    }
    if let Some(extra) = children.iter().find(|t| t.eq_ignore_ascii_case("CHILD")) {
        return Err(format!("{kw}: {extra} appears twice"));
    }
    Ok((parents, children))
}

/// A parsed `VARS` line: line number, node name, key/value pairs.
type VarsLine = (usize, String, Vec<(String, String)>);

/// Parses a DAG file (format: `docs/dag-format.md`). Statements may come in
/// any order. Either the whole DAG is returned or every error found, each
/// with its line number.
pub fn parse_dag(text: &str) -> Result<Dag<JobSpec>, ParseErrors> {
    let mut errors = Vec::new();
    // name -> (line, submit)
    let mut jobs: Vec<(usize, String, String)> = Vec::new();
    let mut job_line: BTreeMap<String, usize> = BTreeMap::new();
    let mut edges: Vec<(usize, Vec<String>, Vec<String>, Dependence)> = Vec::new();
    let mut retries: Vec<(usize, String, u32)> = Vec::new();
    let mut vars: Vec<VarsLine> = Vec::new();

    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let Some((kw, rest)) = keyword(raw) else {
            continue;
        };
        match kw.as_str() {
            "JOB" => {
                let toks: Vec<&str> = rest.split_whitespace().collect();
                match toks.as_slice() {
                    [name, submit] => {
                        if !valid_name(name) {
                            errors.push(ParseError {
                                line,
                                kind: ParseErrorKind::InvalidName(name.to_string()),
                            });
                        } else if let Some(&first_line) = job_line.get(*name) {
                            errors.push(ParseError {
                                line,
                                kind: ParseErrorKind::DuplicateNode {
                                    name: name.to_string(),
                                    first_line,
                                },
                            });
                        } else {
                            job_line.insert(name.to_string(), line);
                            jobs.push((line, name.to_string(), submit.to_string()));
                        }
                    }
                    _ => errors.push(syntax(line, "expected: JOB <name> <submit-file>")),
                }
            }
            "PARENT" | "PRIORITY_PARENT" => {
                let dep = if kw == "PARENT" {
                    Dependence::Data
                } else {
                    Dependence::Priority
                };
                match parent_child(rest, &kw) {
                    Ok((p, c)) => edges.push((line, p, c, dep)),
                    Err(m) => errors.push(syntax(line, m)),
                }
            }
            "RETRY" => {
                let toks: Vec<&str> = rest.split_whitespace().collect();
                match toks.as_slice() {
                    [name, n] => match n.parse::<u32>() {
                        Ok(n) => retries.push((line, name.to_string(), n)),
                        Err(_) => errors.push(syntax(
                            line,
                            format!("RETRY count {n:?} is not a non-negative integer"),
                        )),
                    },
                    _ => errors.push(syntax(line, "expected: RETRY <name> <count>")),
                }
            }
            "VARS" => {
                let (name, kv) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                if name.is_empty() {
                    errors.push(syntax(line, "expected: VARS <name> key=\"value\" …"));
                } else {
                    match parse_vars(kv) {
                        Ok(pairs) => vars.push((line, name.to_string(), pairs)),
                        Err(m) => errors.push(syntax(line, m)),
                    }
                }
            }
            _ => errors.push(ParseError {
                line,
                kind: ParseErrorKind::UnknownKeyword(kw),
            }),
        }
    }

    let unknown = |line: usize, name: &str| ParseError {
        line,
        kind: ParseErrorKind::UnknownNode(name.to_string()),
    };

    let mut specs: BTreeMap<String, (JobSpec, u32)> = jobs
        .iter()
        .map(|(_, name, submit)| {
            (
                name.clone(),
                (
                    JobSpec {
                        submit: submit.clone(),
                        vars: BTreeMap::new(),
                    },
                    0,
                ),
            )
        })
        .collect();

    let mut retry_line: BTreeMap<String, usize> = BTreeMap::new();
    for (line, name, n) in &retries {
        match specs.get_mut(name) {
            None => errors.push(unknown(*line, name)),
            Some(spec) => {
                if let Some(&first_line) = retry_line.get(name) {
                    errors.push(ParseError {
                        line: *line,
                        kind: ParseErrorKind::Duplicate {
                            what: "RETRY",
                            name: name.clone(),
                            first_line,
                        },
                    });
                } else {
                    retry_line.insert(name.clone(), *line);
                    spec.1 = *n;
                }
            }
        }
    }

    let mut var_line: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (line, name, pairs) in &vars {
        let Some(spec) = specs.get_mut(name) else {
            errors.push(unknown(*line, name));
            continue;
        };
        for (k, v) in pairs {
            let key = (name.clone(), k.clone());
            if let Some(&first_line) = var_line.get(&key) {
                errors.push(ParseError {
                    line: *line,
                    kind: ParseErrorKind::Duplicate {
                        what: "VARS key",
                        name: format!("{name}.{k}"),
                        first_line,
                    },
                });
            } else {
                var_line.insert(key, *line);
                spec.0.vars.insert(k.clone(), v.clone());
            }
        }
    }

    let mut builder = DagBuilder::new();
    for (_, name, _) in &jobs {
        if let Some((spec, r)) = specs.remove(name) {
            // Names were validated and deduplicated above.
            if let Err(e) = builder.add_node(name.clone(), spec, r) {
                errors.push(syntax(
                    job_line.get(name).copied().unwrap_or(0),
                    e.to_string(),
                ));
            }
        }
    }
    // First line declaring each (parent, child) pair, to place cycle errors.
    let mut edge_line: BTreeMap<(NodeId, NodeId), usize> = BTreeMap::new();
    for (line, parents, children, dep) in &edges {
        for name in parents.iter().chain(children) {
            if builder.id(name).is_none() {
                errors.push(unknown(*line, name));
            }
        }
        for p in parents {
            for c in children {
                if let (Some(pi), Some(ci)) = (builder.id(p), builder.id(c)) {
                    edge_line.entry((pi, ci)).or_insert(*line);
                    if builder.add_edge(pi, ci, *dep).is_err() {
                        errors.push(syntax(*line, "internal: bad edge"));
                    }
                }
            }
        }
    }

    let ids_by_name = builder.names();
    match builder.build() {
        Ok(dag) if errors.is_empty() => Ok(dag),
        Ok(_) => {
            errors.sort_by_key(|e| e.line);
            Err(ParseErrors(errors))
        }
        Err(DagError::Cycle(path)) => {
            // Report the cycle at the line of its last edge, which closes it.
            let ids: Vec<Option<NodeId>> =
                path.iter().map(|n| ids_by_name.get(n).copied()).collect();
            let line = ids
                .windows(2)
                .filter_map(|w| match (w[0], w[1]) {
                    (Some(a), Some(b)) => edge_line.get(&(a, b)).copied(),
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            errors.push(ParseError {
                line,
                kind: ParseErrorKind::Cycle(path.join(" -> ")),
            });
            errors.sort_by_key(|e| e.line);
            Err(ParseErrors(errors))
        }
        Err(e) => {
            errors.push(syntax(0, e.to_string()));
            errors.sort_by_key(|e| e.line);
            Err(ParseErrors(errors))
        }
    }
}

/// A rescue record: which nodes are done and how many failed attempts each
/// node has used, by node name. Text format in `docs/dag-format.md`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rescue {
    /// The DAG file this record belongs to (`DAG <path>` line), so that
    /// `glean dag submit RESCUE` can find it. A relative path is relative to
    /// the rescue file's directory. Optional: records without it are applied
    /// by callers that already know the DAG.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dag: Option<String>,
    pub done: BTreeSet<String>,
    /// Failed attempts per node (nodes with none are omitted).
    pub attempts: BTreeMap<String, u32>,
}

impl Rescue {
    /// The text form: a header comment, the `DAG path` line if known, then
    /// `DONE name` lines and `ATTEMPTS name n` lines, sorted by name.
    pub fn to_text(&self) -> String {
        let mut s = String::from("# Gleaner DAG rescue file, format 1\n");
        if let Some(d) = &self.dag {
            s.push_str("DAG ");
            s.push_str(d);
            s.push('\n');
        }
        for n in &self.done {
            s.push_str("DONE ");
            s.push_str(n);
            s.push('\n');
        }
        for (n, a) in &self.attempts {
            s.push_str(&format!("ATTEMPTS {n} {a}\n"));
        }
        s
    }

    /// Whether `text` is a rescue record rather than a DAG file: its first
    /// statement is `DAG`, `DONE` or `ATTEMPTS` (none of which a DAG file
    /// may use).
    pub fn looks_like(text: &str) -> bool {
        text.lines()
            .find_map(keyword)
            .is_some_and(|(kw, _)| matches!(kw.as_str(), "DAG" | "DONE" | "ATTEMPTS"))
    }

    /// Parses the text form; all errors with line numbers, or the record.
    pub fn parse(text: &str) -> Result<Rescue, ParseErrors> {
        let mut errors = Vec::new();
        let mut r = Rescue::default();
        let mut done_line: BTreeMap<String, usize> = BTreeMap::new();
        let mut att_line: BTreeMap<String, usize> = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let Some((kw, rest)) = keyword(raw) else {
                continue;
            };
            let toks: Vec<&str> = rest.split_whitespace().collect();
            match (kw.as_str(), toks.as_slice()) {
                // The path is the rest of the line, so it may hold spaces.
                ("DAG", [_, ..]) => {
                    if r.dag.is_some() {
                        errors.push(syntax(line, "DAG given twice"));
                    } else {
                        r.dag = Some(rest.to_string());
                    }
                }
                ("DAG", _) => errors.push(syntax(line, "expected: DAG <dag-file>")),
                ("DONE", [name]) => {
                    if let Some(&first_line) = done_line.get(*name) {
                        errors.push(ParseError {
                            line,
                            kind: ParseErrorKind::Duplicate {
                                what: "DONE",
                                name: name.to_string(),
                                first_line,
                            },
                        });
                    } else {
                        done_line.insert(name.to_string(), line);
                        r.done.insert(name.to_string());
                    }
                }
                ("DONE", _) => errors.push(syntax(line, "expected: DONE <name>")),
                ("ATTEMPTS", [name, n]) => match n.parse::<u32>() {
                    Ok(n) => {
                        if let Some(&first_line) = att_line.get(*name) {
                            errors.push(ParseError {
                                line,
                                kind: ParseErrorKind::Duplicate {
                                    what: "ATTEMPTS",
                                    name: name.to_string(),
                                    first_line,
                                },
                            });
                        } else {
                            att_line.insert(name.to_string(), line);
                            if n > 0 {
                                r.attempts.insert(name.to_string(), n);
                            }
                        }
                    }
                    Err(_) => errors.push(syntax(
                        line,
                        format!("ATTEMPTS count {n:?} is not a non-negative integer"),
                    )),
                },
                ("ATTEMPTS", _) => errors.push(syntax(line, "expected: ATTEMPTS <name> <count>")),
                _ => errors.push(ParseError {
                    line,
                    kind: ParseErrorKind::UnknownKeyword(kw),
                }),
            }
        }
        if errors.is_empty() {
            Ok(r)
        } else {
            Err(ParseErrors(errors))
        }
    }
}
