//! The `queue` statement in all its HTCondor forms (the manual's "Using
//! the Power and Flexibility of the Queue Command"):
//!
//! ```text
//! queue [<int expr>]
//! queue [<int expr>] [<var>] in [slice] <items>            items inline, or ( … ) over lines
//! queue [<int expr>] [<vars>] from [slice] <file> | ( … )  one item per line, split over the vars
//! queue [<int expr>] [<var>] matching [files|dirs] [slice] <globs>
//! ```
//!
//! The items are known when the file is parsed (files are read and globs
//! matched by the CLI, through [`SubmitFs`]); each proc keeps its own
//! binding of the variables.

use super::expand::Expander;
use super::source::{Reader, SubmitFs};
use super::{BUILTINS, ProcBinding, SubmitErrorKind, is_identifier, received};
use crate::limits::{MAX_PROCS, MAX_SUBMIT_FILE_BYTES};
use std::collections::BTreeMap;
use std::path::Path;

/// A Python-style slice `[start:stop:step]` over the items.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slice {
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
}

impl Slice {
    fn parse(s: &str) -> Result<Slice, SubmitErrorKind> {
        let inner = s
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .ok_or_else(|| bad(format!("\"{s}\" is not a slice [start:stop:step]")))?;
        let parts: Vec<&str> = inner.split(':').collect();
        if parts.len() > 3 {
            return Err(bad(format!("\"{s}\" is not a slice [start:stop:step]")));
        }
        let num = |p: Option<&&str>| -> Result<Option<i64>, SubmitErrorKind> {
            match p.map(|t| t.trim()) {
                None | Some("") => Ok(None),
                Some(t) => t
                    .parse()
                    .map(Some)
                    .map_err(|_| bad(format!("\"{t}\" in slice \"{s}\" is not a number"))),
            }
        };
        let slice = Slice {
            start: num(parts.first())?,
            stop: num(parts.get(1))?,
            step: num(parts.get(2))?,
        };
        if slice.step.is_some_and(|s| s <= 0) {
            return Err(bad(format!(
                "slice \"{s}\": the step must be positive (HTCondor allows no negative steps)"
            )));
        }
        Ok(slice)
    }

    /// The indices of a list of `len` items the slice selects.
    fn indices(&self, len: usize) -> Vec<usize> {
        let n = len as i64;
        let clamp = |v: i64| if v < 0 { (n + v).max(0) } else { v.min(n) };
        let start = self.start.map_or(0, clamp);
        let stop = self.stop.map_or(n, clamp);
        let step = self.step.unwrap_or(1).max(1);
        let mut out = Vec::new();
        let mut i = start;
        while i < stop {
            out.push(i as usize);
            i += step;
        }
        out
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    In,
    From,
    Matching { files: bool, dirs: bool },
}

fn bad(msg: impl Into<String>) -> SubmitErrorKind {
    SubmitErrorKind::BadQueue(msg.into())
}

pub(super) fn too_many_procs() -> SubmitErrorKind {
    bad(format!("more than {MAX_PROCS} jobs in one submission"))
}

/// Byte offset of the first whole word of `s` (outside parentheses) that
/// is one of the queue keywords, and the keyword.
fn find_keyword(s: &str) -> Option<(usize, Mode, usize)> {
    let mut depth = 0usize;
    let mut word_start: Option<usize> = None;
    let check = |start: usize, end: usize| -> Option<(usize, Mode, usize)> {
        let w = &s[start..end];
        let m = if w.eq_ignore_ascii_case("in") {
            Mode::In
        } else if w.eq_ignore_ascii_case("from") {
            Mode::From
        } else if w.eq_ignore_ascii_case("matching") {
            Mode::Matching {
                files: true,
                dirs: true,
            }
        } else {
            return None;
        };
        Some((start, m, w.len()))
    };
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let boundary = c.is_whitespace() || c == ',';
        if boundary || depth > 0 {
            if let Some(st) = word_start.take()
                && let Some(hit) = check(st, i)
            {
                return Some(hit);
            }
        } else if word_start.is_none() && !"([)]".contains(c) {
            word_start = Some(i);
        }
    }
    word_start.and_then(|st| check(st, s.len()))
}

/// What the parser needs to read a queue statement.
pub(super) struct QueueCtx<'a, 'r> {
    pub(super) reader: &'a mut Reader<'r>,
    pub(super) expander: &'a Expander<'a>,
    pub(super) fs: Option<&'a dyn SubmitFs>,
    /// What the submission may still grow by (bytes).
    pub(super) room: u64,
}

/// Expands the macros of a piece of the statement (`queue $(n)`).
fn expand(ctx: &QueueCtx<'_, '_>, text: &str) -> Result<String, SubmitErrorKind> {
    ctx.expander.expand(text, 0).map_err(|e| match e {
        SubmitErrorKind::ValueTooLarge { via, limit, .. } => SubmitErrorKind::ValueTooLarge {
            key: "queue".into(),
            via,
            limit,
        },
        e => bad(e.to_string()),
    })
}

/// The procs of the queue statement whose text after `queue` is `rest`.
pub(super) fn parse_queue(
    rest: &str,
    ctx: &mut QueueCtx<'_, '_>,
) -> Result<Vec<ProcBinding>, SubmitErrorKind> {
    let rest = rest.trim();
    let (head, tail) = match find_keyword(rest) {
        Some((at, mode, len)) => (&rest[..at], Some((mode, rest[at + len..].trim()))),
        None => (rest, None),
    };
    // The count, then the variable names.
    let head = head.trim();
    let (count_text, var_text) = match head.split_once(char::is_whitespace) {
        _ if tail.is_none() => (head, ""),
        Some((first, more)) if !looks_like_names(first) => (first, more),
        _ if !looks_like_names(head) => (head, ""),
        _ => ("", head),
    };
    let count = if count_text.is_empty() {
        1
    } else {
        let text = expand(ctx, count_text)?;
        count_value(&text)?
    };
    if count > MAX_PROCS {
        return Err(too_many_procs());
    }
    let count = u32::try_from(count).map_err(|_| too_many_procs())?;
    let Some((mut mode, tail)) = tail else {
        let empty = ProcBinding::default();
        if u64::from(count).saturating_mul(received::binding_bytes(&empty)) > ctx.room {
            return Err(super::submission_too_large());
        }
        return Ok((0..count)
            .map(|step| ProcBinding {
                step,
                ..ProcBinding::default()
            })
            .collect());
    };

    let mut vars: Vec<String> = var_text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    for v in &vars {
        if !is_identifier(v) {
            return Err(bad(format!("\"{v}\" is not a variable name")));
        }
        if BUILTINS.contains(&v.to_ascii_lowercase().as_str()) {
            return Err(SubmitErrorKind::BuiltinRedefined(v.clone()));
        }
    }
    if vars.is_empty() {
        vars.push("Item".to_string());
    }
    if mode != Mode::From && vars.len() > 1 {
        return Err(bad(
            "several variables need \"from\": one item per line, split over the variables",
        ));
    }

    // `matching files|dirs|any`, then a slice.
    let mut tail = tail.trim();
    if let Mode::Matching { .. } = mode {
        let word_end = tail.find(char::is_whitespace).unwrap_or(tail.len());
        let w = tail[..word_end].to_ascii_lowercase();
        let filter = match w.as_str() {
            "files" => Some((true, false)),
            "dirs" => Some((false, true)),
            "any" => Some((true, true)),
            _ => None,
        };
        if let Some((files, dirs)) = filter {
            mode = Mode::Matching { files, dirs };
            tail = tail[word_end..].trim();
        }
    }
    let mut slice = Slice::default();
    if tail.starts_with('[') {
        let end = tail
            .find(']')
            .ok_or_else(|| bad("slice is missing its closing \"]\""))?;
        slice = Slice::parse(&tail[..=end])?;
        tail = tail[end + 1..].trim();
    }

    // The items: ( … ) on this line or over lines, a file, or inline.
    let mut rows: Vec<String> = Vec::new();
    // Rows read from a file are items as they are, `#` lines too (as
    // HTCondor reads them); in the submit file, `#` starts a comment.
    let mut from_file = false;
    if let Some(after) = tail.strip_prefix('(') {
        if let Some(close) = after.rfind(')') {
            if !after[close + 1..].trim().is_empty() {
                return Err(bad("unexpected text after \")\""));
            }
            rows.push(after[..close].to_string());
        } else {
            if !after.trim().is_empty() {
                rows.push(after.to_string());
            }
            let mut closed = false;
            let mut bytes = 0u64;
            while let Some(l) = ctx.reader.next_raw() {
                let t = l.text.trim();
                if t.starts_with(')') {
                    closed = true;
                    break;
                }
                bytes = bytes.saturating_add(l.text.len() as u64);
                if bytes > ctx.room {
                    return Err(super::submission_too_large());
                }
                rows.push(l.text);
            }
            if !closed {
                return Err(bad("item list is missing its closing \")\""));
            }
        }
    } else if mode == Mode::From {
        let name = expand(ctx, tail)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("\"from\" needs a file or ( … ) list of items"));
        }
        if name.ends_with('|') {
            return Err(SubmitErrorKind::Unsupported(
                "\"queue … from COMMAND |\" is not supported; run the command and queue from \
                 the file it writes"
                    .into(),
            ));
        }
        let fs = ctx.fs.ok_or_else(|| {
            SubmitErrorKind::Unsupported(format!(
                "\"queue … from {name}\": the file is read where the submit file is read (by \
                 glean submit)"
            ))
        })?;
        let limit = MAX_SUBMIT_FILE_BYTES.min(ctx.room);
        let text = fs
            .read(Path::new(name), limit)
            .map_err(|e| bad(format!("from {name}: {e}")))?;
        rows.extend(text.lines().map(str::to_string));
        from_file = true;
    } else if !tail.is_empty() {
        rows.push(tail.to_string());
    }

    // One entry per item (rows split for `in` and `matching`).
    let mut items: Vec<String> = Vec::new();
    match mode {
        Mode::From => {
            for r in rows {
                let t = r.trim();
                if t.is_empty() || (t.starts_with('#') && !from_file) {
                    continue;
                }
                items.push(t.to_string());
            }
        }
        Mode::In => {
            for r in rows {
                if r.trim_start().starts_with('#') {
                    continue;
                }
                items.extend(split_words(&r));
            }
        }
        Mode::Matching { files, dirs } => {
            let fs = ctx.fs.ok_or_else(|| {
                SubmitErrorKind::Unsupported(
                    "\"queue … matching\": files are matched where the submit file is read (by \
                     glean submit)"
                        .into(),
                )
            })?;
            let mut seen = std::collections::BTreeSet::new();
            for r in rows {
                for pattern in split_words(&r) {
                    let pattern = expand(ctx, &pattern)?;
                    for (path, is_dir) in fs.glob(&pattern).map_err(bad)? {
                        if (is_dir && dirs || !is_dir && files) && seen.insert(path.clone()) {
                            items.push(path);
                        }
                        if items.len() as u64 > MAX_PROCS {
                            return Err(too_many_procs());
                        }
                    }
                }
            }
        }
    }

    let mut procs = Vec::new();
    let mut used: u64 = 0;
    for index in slice.indices(items.len()) {
        let bound = bind(&vars, &items[index]);
        let item_index = u32::try_from(index).unwrap_or(u32::MAX);
        if procs.len() as u64 + u64::from(count) > MAX_PROCS {
            return Err(too_many_procs());
        }
        let one = received::binding_bytes(&ProcBinding {
            step: 0,
            item_index,
            items: bound.clone(),
        });
        used = used.saturating_add(one.saturating_mul(u64::from(count)));
        if used > ctx.room {
            return Err(super::submission_too_large());
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

/// True if `s` is a list of variable names (`x`, `a,b`).
fn looks_like_names(s: &str) -> bool {
    !s.is_empty()
        && s.split(',')
            .filter(|p| !p.trim().is_empty())
            .all(|p| is_identifier(p.trim()))
}

/// The count of `queue <int expr>`: an integer ClassAd expression.
fn count_value(text: &str) -> Result<u64, SubmitErrorKind> {
    let t = text.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let not_count = || bad(format!("\"{t}\" is not a job count"));
    let e = gleaner_classad::parse_expr(t).map_err(|_| not_count())?;
    let v = gleaner_classad::EvalContext::new(0).eval(&e);
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= MAX_PROCS as f64 + 1.0 => Ok(n as u64),
        Some(n) if n > MAX_PROCS as f64 => Err(too_many_procs()),
        _ => Err(not_count()),
    }
}

/// Items of one `in` or `matching` row: separated by commas and/or
/// whitespace.
fn split_words(s: &str) -> Vec<String> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Binds one item to the variables: a single variable takes the whole
/// item; with several, each but the last takes one field (ended by a
/// comma or whitespace) and the last takes the rest of the line, as
/// HTCondor splits `queue a,b from` rows. A row holding the ASCII unit
/// separator (0x1F) is split at it alone, each field trimmed: that is how
/// HTCondor's Python bindings pass item data whose values hold blanks or
/// commas.
fn bind(vars: &[String], item: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if item.contains('\x1f') {
        let mut fields = item.split('\x1f');
        for v in vars {
            let value = fields.next().unwrap_or("").trim().to_string();
            out.insert(v.to_ascii_lowercase(), value);
        }
        return out;
    }
    if vars.len() == 1 {
        out.insert(vars[0].to_ascii_lowercase(), item.trim().to_string());
        return out;
    }
    let mut rest = item.trim();
    for (i, v) in vars.iter().enumerate() {
        let value = if i + 1 == vars.len() {
            rest.trim().to_string()
        } else {
            let end = rest
                .find(|c: char| c == ',' || c.is_whitespace())
                .unwrap_or(rest.len());
            let field = rest[..end].to_string();
            rest = rest[end..].trim_start();
            if let Some(r) = rest.strip_prefix(',') {
                rest = r.trim_start();
            }
            field
        };
        out.insert(v.to_ascii_lowercase(), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_select_like_python() {
        let s = Slice::parse("[1:3]").unwrap();
        assert_eq!(s.indices(4), [1, 2]);
        assert_eq!(Slice::parse("[::2]").unwrap().indices(5), [0, 2, 4]);
        assert_eq!(Slice::parse("[1:]").unwrap().indices(3), [1, 2]);
        assert_eq!(Slice::parse("[-2:]").unwrap().indices(5), [3, 4]);
        assert!(Slice::parse("[::-1]").is_err());
        assert!(Slice::parse("[a:b]").is_err());
    }

    #[test]
    fn unit_separators_split_rows_exactly() {
        let vars = ["a".to_string(), "b".to_string()];
        let m = bind(&vars, " x y, z \x1f 1 2 ");
        assert_eq!(m["a"], "x y, z");
        assert_eq!(m["b"], "1 2");
        // Fewer fields than variables: the rest are empty.
        assert_eq!(bind(&vars, "only\x1f")["b"], "");
    }

    #[test]
    fn rows_split_over_variables_as_htcondor_does() {
        // What htcondor2.Submit.itemdata() gives for the same rows.
        let vars = ["a".to_string(), "b".to_string()];
        let b = bind(&vars, "  x  y, z w");
        assert_eq!(b["a"], "x");
        assert_eq!(b["b"], "y, z w");
        let b = bind(&vars, "p,q");
        assert_eq!((b["a"].as_str(), b["b"].as_str()), ("p", "q"));
        let b = bind(&vars, "r");
        assert_eq!((b["a"].as_str(), b["b"].as_str()), ("r", ""));
        let three = ["a".into(), "b".into(), "c".into()];
        let b = bind(&three, "1 2");
        assert_eq!((b["b"].as_str(), b["c"].as_str()), ("2", ""));
    }

    #[test]
    fn keywords_are_whole_words() {
        assert!(find_keyword("3 x in (a)").is_some());
        assert!(find_keyword("input,arguments from (").is_some());
        assert!(find_keyword("infile").is_none());
        assert!(find_keyword("5").is_none());
        assert_eq!(count_value("2*3").unwrap(), 6);
        assert!(count_value("many").is_err());
    }
}
