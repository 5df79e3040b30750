//! Reading a submit file into statements: continuation lines, comments,
//! `include : FILE` (nested, each line still named by its own file), and
//! the `if`/`elif`/`else`/`endif` blocks of HTCondor's submit language
//! (whose conditions the parser evaluates, since they see the macros
//! defined so far).
//!
//! Files are read through [`SubmitFs`], so that the station, which never
//! reads a user's files for them, gets submissions whose includes were
//! resolved by the CLI.

use super::SubmitErrorKind;
use crate::limits::{MAX_SUBMIT_FILE_BYTES, human_bytes};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// How deep includes may nest (HTCondor stops runaway nesting too).
pub(super) const MAX_INCLUDE_DEPTH: usize = 10;

/// Where the parser reads what a submit file refers to: `include`d files,
/// `queue … from FILE` lists and `queue … matching` globs. Paths are
/// relative to the submit file's directory.
pub trait SubmitFs {
    /// The text of a file (at most `limit` bytes; longer is an error).
    fn read(&self, path: &Path, limit: u64) -> Result<String, String>;
    /// The paths (as the pattern names them) matching a glob, sorted, with
    /// whether each is a directory.
    fn glob(&self, pattern: &str) -> Result<Vec<(String, bool)>, String>;
    /// Whether `path` (relative to the submit file's directory, or
    /// absolute) is a directory; `None` when this file system cannot tell.
    fn is_dir(&self, path: &Path) -> Option<bool> {
        let _ = path;
        None
    }
}

/// [`SubmitFs`] over the local file system, relative to `dir`.
#[derive(Clone, Debug)]
pub struct LocalFs {
    pub dir: PathBuf,
}

impl SubmitFs for LocalFs {
    fn read(&self, path: &Path, limit: u64) -> Result<String, String> {
        use std::io::Read;
        let full = self.dir.join(path);
        let f = std::fs::File::open(&full)
            .map_err(|e| format!("cannot read {}: {e}", full.display()))?;
        let mut bytes = Vec::new();
        f.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read {}: {e}", full.display()))?;
        if bytes.len() as u64 > limit {
            return Err(format!(
                "{} is larger than {}",
                full.display(),
                human_bytes(limit)
            ));
        }
        String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", full.display()))
    }

    fn glob(&self, pattern: &str) -> Result<Vec<(String, bool)>, String> {
        super::glob::glob(&self.dir, pattern)
    }

    fn is_dir(&self, path: &Path) -> Option<bool> {
        Some(self.dir.join(path).is_dir())
    }
}

/// One logical line (continuations joined) and where it starts.
#[derive(Clone, Debug)]
pub(super) struct Line {
    /// The included file it comes from (`None`: the submit file itself).
    pub(super) file: Option<Rc<str>>,
    pub(super) line: usize,
    pub(super) text: String,
}

struct Frame {
    file: Option<Rc<str>>,
    lines: Vec<(usize, String)>,
    pos: usize,
}

/// One open `if`.
struct Cond {
    /// Lines are read in the current branch.
    active: bool,
    /// Some branch of this `if` was taken already.
    taken: bool,
    /// The `if` itself sits in read lines.
    outer: bool,
    seen_else: bool,
    at: (Option<Rc<str>>, usize),
}

/// A problem found while reading, with its place.
pub(super) struct ReadError {
    pub(super) file: Option<Rc<str>>,
    pub(super) line: usize,
    pub(super) kind: SubmitErrorKind,
}

/// The lines of a submit file and what it includes, conditionals applied.
pub(super) struct Reader<'a> {
    stack: Vec<Frame>,
    conds: Vec<Cond>,
    fs: Option<&'a dyn SubmitFs>,
    /// Bytes read so far, included files counted.
    read: u64,
    pub(super) errors: Vec<ReadError>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(text: &str, fs: Option<&'a dyn SubmitFs>) -> Self {
        let mut errors = Vec::new();
        let lines = logical_lines(text, None, &mut errors);
        Reader {
            stack: vec![Frame {
                file: None,
                lines,
                pos: 0,
            }],
            conds: Vec::new(),
            fs,
            read: text.len() as u64,
            errors,
        }
    }

    fn error(&mut self, file: Option<Rc<str>>, line: usize, kind: SubmitErrorKind) {
        self.errors.push(ReadError { file, line, kind });
    }

    /// The next line as written, conditionals and includes not applied
    /// (the items of a multi-line `queue` list).
    pub(super) fn next_raw(&mut self) -> Option<Line> {
        loop {
            let top = self.stack.last_mut()?;
            if top.pos < top.lines.len() {
                let (n, t) = top.lines[top.pos].clone();
                top.pos += 1;
                return Some(Line {
                    file: top.file.clone(),
                    line: n,
                    text: t,
                });
            }
            if self.stack.len() == 1 {
                return None;
            }
            self.stack.pop();
        }
    }

    /// The next statement line to act on: blank lines and comments are
    /// skipped, `include` is followed, `if` blocks are decided with `cond`
    /// (which gets the condition's text and says whether it holds).
    pub(super) fn next(
        &mut self,
        mut cond: impl FnMut(&str) -> Result<bool, SubmitErrorKind>,
    ) -> Option<Line> {
        loop {
            let Some(l) = self.next_raw() else {
                self.finish();
                return None;
            };
            let t = l.text.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let active = self.conds.last().is_none_or(|c| c.active);
            if let Some(rest) = keyword(t, "if") {
                let holds = active && self.holds(&l, rest, &mut cond);
                self.conds.push(Cond {
                    active: active && holds,
                    taken: holds,
                    outer: active,
                    seen_else: false,
                    at: (l.file.clone(), l.line),
                });
                continue;
            }
            if let Some(rest) = keyword(t, "elif") {
                let Some(c) = self.conds.last() else {
                    self.error(l.file, l.line, bad_if("elif without if"));
                    continue;
                };
                if c.seen_else {
                    self.error(l.file, l.line, bad_if("elif after else"));
                    continue;
                }
                let (outer, taken) = (c.outer, c.taken);
                let holds = outer && !taken && self.holds(&l, rest, &mut cond);
                if let Some(c) = self.conds.last_mut() {
                    c.active = outer && !taken && holds;
                    c.taken |= holds;
                }
                continue;
            }
            if let Some(rest) = keyword(t, "else") {
                if !rest.is_empty() {
                    self.error(l.file.clone(), l.line, bad_if("text after else"));
                }
                match self.conds.last_mut() {
                    Some(c) if !c.seen_else => {
                        c.seen_else = true;
                        c.active = c.outer && !c.taken;
                        c.taken = true;
                    }
                    Some(_) => self.error(l.file, l.line, bad_if("a second else")),
                    None => self.error(l.file, l.line, bad_if("else without if")),
                }
                continue;
            }
            if let Some(rest) = keyword(t, "endif") {
                if !rest.is_empty() {
                    self.error(l.file.clone(), l.line, bad_if("text after endif"));
                }
                if self.conds.pop().is_none() {
                    self.error(l.file, l.line, bad_if("endif without if"));
                }
                continue;
            }
            if !active {
                continue;
            }
            if let Some(spec) = include_spec(t) {
                self.include(&l, spec);
                continue;
            }
            return Some(l);
        }
    }

    /// Whether the condition `text` of line `l` holds (a bad condition is
    /// reported, and does not).
    fn holds(
        &mut self,
        l: &Line,
        text: &str,
        cond: &mut impl FnMut(&str) -> Result<bool, SubmitErrorKind>,
    ) -> bool {
        cond(text).unwrap_or_else(|kind| {
            self.error(l.file.clone(), l.line, kind);
            false
        })
    }

    /// Reports `if` blocks left open at the end.
    fn finish(&mut self) {
        while let Some(c) = self.conds.pop() {
            self.error(c.at.0, c.at.1, bad_if("if without endif"));
        }
    }

    fn include(&mut self, at: &Line, spec: Include) {
        let (optional, target) = match spec {
            Include::File { optional, path } => (optional, path),
            Include::Command => {
                self.error(
                    at.file.clone(),
                    at.line,
                    SubmitErrorKind::Unsupported(
                        "including a command's output is not supported; run it and include \
                         the file it writes"
                            .into(),
                    ),
                );
                return;
            }
        };
        if target.is_empty() {
            self.error(
                at.file.clone(),
                at.line,
                SubmitErrorKind::BadValue {
                    key: "include".into(),
                    reason: "no file named".into(),
                },
            );
            return;
        }
        let Some(fs) = self.fs else {
            self.error(
                at.file.clone(),
                at.line,
                SubmitErrorKind::Unsupported(format!(
                    "include : {target}: included files are read where the submit file is \
                     read (by glean submit)"
                )),
            );
            return;
        };
        if self.stack.len() > MAX_INCLUDE_DEPTH {
            self.error(
                at.file.clone(),
                at.line,
                SubmitErrorKind::TooLarge(format!(
                    "includes nested more than {MAX_INCLUDE_DEPTH} deep"
                )),
            );
            return;
        }
        let limit = MAX_SUBMIT_FILE_BYTES.saturating_sub(self.read);
        match fs.read(Path::new(&target), limit) {
            Ok(text) => {
                self.read = self.read.saturating_add(text.len() as u64);
                let name: Rc<str> = Rc::from(target.as_str());
                let mut errors = Vec::new();
                let lines = logical_lines(&text, Some(name.clone()), &mut errors);
                self.errors.extend(errors);
                self.stack.push(Frame {
                    file: Some(name),
                    lines,
                    pos: 0,
                });
            }
            Err(_) if optional => {}
            Err(why) => self.error(
                at.file.clone(),
                at.line,
                SubmitErrorKind::BadValue {
                    key: "include".into(),
                    reason: why,
                },
            ),
        }
    }
}

fn bad_if(what: &str) -> SubmitErrorKind {
    SubmitErrorKind::BadConditional(what.to_string())
}

/// `rest` after keyword `kw` if `t` starts with it as a whole word.
pub(super) fn keyword<'t>(t: &'t str, kw: &str) -> Option<&'t str> {
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

enum Include {
    File { optional: bool, path: String },
    Command,
}

/// `include : FILE`, `include ifexist : FILE`, `include command : CMD`, or
/// `include : CMD |`.
fn include_spec(t: &str) -> Option<Include> {
    let head = t.get(..7)?;
    if !head.eq_ignore_ascii_case("include") {
        return None;
    }
    let rest = t[7..].trim_start();
    let (opts, target) = rest.split_once(':')?;
    let opts = opts.trim().to_ascii_lowercase();
    let target = target.trim();
    match opts.as_str() {
        "" | "ifexist" => {
            if let Some(cmd) = target.strip_suffix('|') {
                let _ = cmd;
                return Some(Include::Command);
            }
            Some(Include::File {
                optional: opts == "ifexist",
                path: target.to_string(),
            })
        }
        "command" => Some(Include::Command),
        _ => None,
    }
}

/// Joins continuation lines; each logical line keeps its first line number.
fn logical_lines(
    text: &str,
    file: Option<Rc<str>>,
    errors: &mut Vec<ReadError>,
) -> Vec<(usize, String)> {
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
        errors.push(ReadError {
            file,
            line: last.max(start),
            kind: SubmitErrorKind::DanglingContinuation,
        });
        out.push((start, acc));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str, defined: &[&str]) -> (Vec<String>, Vec<String>) {
        let mut r = Reader::new(text, None);
        let mut out = Vec::new();
        while let Some(l) = r.next(|c| {
            let c = c.trim();
            Ok(match c.strip_prefix("defined ") {
                Some(n) => defined.contains(&n.trim()),
                None => c == "true",
            })
        }) {
            out.push(l.text.trim().to_string());
        }
        let errs = r
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.line, e.kind))
            .collect();
        (out, errs)
    }

    #[test]
    fn if_elif_else_pick_one_branch_and_nest() {
        let text = "if defined A\na = 1\nelif defined B\nb = 1\nelse\nc = 1\nendif\n\
                    if true\n if defined B\n  d = 1\n else\n  e = 1\n endif\nendif\n";
        assert_eq!(read_all(text, &["A"]).0, ["a = 1", "e = 1"]);
        assert_eq!(read_all(text, &["B"]).0, ["b = 1", "d = 1"]);
        assert_eq!(read_all(text, &[]).0, ["c = 1", "e = 1"]);
    }

    #[test]
    fn unbalanced_conditionals_are_errors_with_lines() {
        let (_, errs) = read_all("x = 1\nelse\nendif\nif true\n", &[]);
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].starts_with("2: "), "{errs:?}");
        assert!(errs[2].starts_with("4: ") && errs[2].contains("without endif"));
    }

    #[test]
    fn include_needs_a_file_system() {
        let (_, errs) = read_all("include : other.sub\n", &[]);
        assert!(errs[0].contains("included files"), "{errs:?}");
        let (_, errs) = read_all("include : make-it.sh |\n", &[]);
        assert!(errs[0].contains("command"), "{errs:?}");
    }
}
