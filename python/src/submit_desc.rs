//! The `Submit` object of HTCondor's Python API: an ordered mapping of
//! submit commands to their (unexpanded) values, with the arguments of one
//! queue statement and its inline items. What it means is decided by
//! Gleaner's submit parser (`gleaner_proto::submit`) when it is submitted,
//! expanded or asked for its items; this module only reads and writes its
//! text as HTCondor's `htcondor2.Submit` does.
//!
//! Reading a text (`Submit("""…""")`): `#` comment lines and blank lines
//! are skipped, a trailing `\` joins the next line, `+Attr` is kept as
//! `MY.Attr`, the first `queue` statement gives the queue arguments (and
//! the lines of a `from (` … `)` block its items; later queue statements
//! are ignored, as HTCondor's object does). `include` and `if` lines are
//! refused: they need a submit file.
//!
//! Writing (`str(submit)`): `key = value` lines in order, then `queue`
//! with its arguments.

use std::fmt;

/// Why a text is not a `Submit` description, or an item is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DescError(pub String);

/// A submit description as the Python API holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubmitDesc {
    /// Commands in the order first set; names as first written.
    entries: Vec<(String, String)>,
    /// What follows `queue` (empty: a bare `queue`).
    qargs: String,
    /// Rows of a `queue … from (` block read from the text.
    inline_items: Option<Vec<String>>,
}

/// `+Attr` as the `MY.Attr` it means.
fn canonical_key(key: &str) -> String {
    match key.strip_prefix('+') {
        Some(attr) => format!("MY.{attr}"),
        None => key.to_string(),
    }
}

/// The arguments of a queue statement: `queue` itself stripped.
pub fn strip_queue(args: &str) -> &str {
    let t = args.trim();
    match t.get(..5) {
        Some(w)
            if w.eq_ignore_ascii_case("queue")
                && t[5..].chars().next().is_none_or(char::is_whitespace) =>
        {
            t[5..].trim()
        }
        _ => t,
    }
}

impl SubmitDesc {
    pub fn new() -> Self {
        SubmitDesc::default()
    }

    /// Reads a submit description text.
    pub fn parse(text: &str) -> Result<SubmitDesc, DescError> {
        let mut d = SubmitDesc::new();
        let mut lines = logical_lines(text).into_iter().peekable();
        let mut queued = false;
        while let Some((line_no, line)) = lines.next() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let first = t
                .split(|c: char| c.is_whitespace() || c == ':' || c == '=')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            if first == "queue" && !t[5..].trim_start().starts_with('=') {
                let args = t[5..].trim().to_string();
                // A `from (` block's rows follow up to a line with `)`.
                let block = args.ends_with('(') && !args.contains(')');
                let mut rows = Vec::new();
                if block {
                    let mut closed = false;
                    for (_, l) in lines.by_ref() {
                        if l.trim().starts_with(')') {
                            closed = true;
                            break;
                        }
                        rows.push(l);
                    }
                    if !closed {
                        return Err(DescError(format!(
                            "line {line_no}: the queue statement's item list is missing its \
                             closing \")\""
                        )));
                    }
                }
                if !queued {
                    queued = true;
                    d.qargs = args;
                    d.inline_items = block.then_some(rows);
                }
                continue;
            }
            if matches!(
                first.as_str(),
                "include" | "if" | "elif" | "else" | "endif" | "error" | "warning"
            ) {
                return Err(DescError(format!(
                    "line {line_no}: \"{first}\" is not supported in a Submit description \
                     (write a submit file and use it with condor_submit or glean submit)"
                )));
            }
            let Some((k, v)) = t.split_once('=') else {
                return Err(DescError(format!(
                    "line {line_no}: expected \"key = value\" or \"queue\", found {t:?}"
                )));
            };
            let key = k.trim();
            if key.is_empty() {
                return Err(DescError(format!("line {line_no}: a value with no key")));
            }
            d.set(key, v.trim());
        }
        Ok(d)
    }

    /// The value of `key` (case-insensitive; `+Attr` is `MY.Attr`).
    pub fn get(&self, key: &str) -> Option<&str> {
        let key = canonical_key(key);
        self.entries
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(&key))
            .map(|(_, v)| v.as_str())
    }

    /// Sets `key`; an existing key keeps its place and spelling.
    pub fn set(&mut self, key: &str, value: &str) {
        let key = canonical_key(key);
        match self
            .entries
            .iter_mut()
            .find(|(k, _)| k.eq_ignore_ascii_case(&key))
        {
            Some((_, v)) => *v = value.to_string(),
            None => self.entries.push((key, value.to_string())),
        }
    }

    /// Removes `key`; false when it was not there.
    pub fn remove(&mut self, key: &str) -> bool {
        let key = canonical_key(key);
        let before = self.entries.len();
        self.entries.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
        self.entries.len() != before
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The queue statement's arguments (`getQArgs`).
    pub fn qargs(&self) -> &str {
        &self.qargs
    }

    /// Replaces the queue statement's arguments (`setQArgs`, and the
    /// `queue=` argument of `Submit()`); a leading `queue` is dropped.
    /// Arguments that open a `from (` block take their rows from the
    /// lines after the first.
    pub fn set_qargs(&mut self, args: &str) -> Result<(), DescError> {
        let args = strip_queue(args);
        let mut lines = args.lines();
        let first = lines.next().unwrap_or("").trim().to_string();
        if first.ends_with('(') && !first.contains(')') {
            let mut rows = Vec::new();
            let mut closed = false;
            for l in lines {
                if l.trim().starts_with(')') {
                    closed = true;
                    break;
                }
                rows.push(l.to_string());
            }
            if !closed {
                return Err(DescError(
                    "the queue statement's item list is missing its closing \")\"".into(),
                ));
            }
            self.inline_items = Some(rows);
        } else if args.contains('\n') {
            return Err(DescError(
                "queue arguments must be one line (or a \"from (\" block)".into(),
            ));
        } else {
            self.inline_items = None;
        }
        self.qargs = first;
        Ok(())
    }

    /// The submit text of the commands alone.
    pub fn commands_text(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.entries {
            s.push_str(k);
            s.push_str(" = ");
            s.push_str(v);
            s.push('\n');
        }
        s
    }

    /// The whole submit text Gleaner's parser reads for a submission
    /// queued by `statement` (the queue arguments, possibly replaced)
    /// with `items` as the rows of its `from (` block, if any.
    pub fn submit_text(&self, statement: &str, items: Option<&[String]>) -> String {
        let mut s = self.commands_text();
        s.push_str("queue");
        if !statement.is_empty() {
            s.push(' ');
            s.push_str(statement);
        }
        s.push('\n');
        if let Some(rows) = items {
            for r in rows {
                s.push_str(r);
                s.push('\n');
            }
            s.push_str(")\n");
        }
        s
    }

    /// The text of this description's own queue statement, with the rows
    /// of its block if it has one.
    pub fn own_submit_text(&self) -> String {
        self.submit_text(&self.qargs, self.inline_items.as_deref())
    }

    /// The rows of the queue statement's inline `from (` block.
    pub fn inline_items(&self) -> Option<&[String]> {
        self.inline_items.as_deref()
    }
}

impl fmt::Display for SubmitDesc {
    /// As `str(htcondor2.Submit)`: the commands, then `queue ARGS`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.commands_text())?;
        if self.qargs.is_empty() {
            f.write_str("queue\n")
        } else {
            writeln!(f, "queue {}", self.qargs)
        }
    }
}

/// Lines joined at trailing backslashes, numbered by their first line.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let (no, mut acc) = pending.take().unwrap_or((i + 1, String::new()));
        match line.strip_suffix('\\') {
            Some(head) => {
                acc.push_str(head);
                pending = Some((no, acc));
            }
            None => {
                acc.push_str(line);
                out.push((no, acc));
            }
        }
    }
    if let Some(p) = pending {
        out.push(p);
    }
    out
}

/// What a submission queues: the queue statement's arguments after the
/// overrides `Schedd.submit` allows, and the rows of its item block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuePlan {
    pub statement: String,
    pub rows: Option<Vec<String>>,
    /// Item variables named as submit commands (`output`, `arguments`):
    /// as with HTCondor, each item's value is that command's for its job,
    /// so the description gets `name = $(name)` for each.
    pub commands: Vec<String>,
}

impl QueuePlan {
    /// `desc` with the commands the items set taken from them.
    pub fn apply_commands(&self, desc: &SubmitDesc) -> SubmitDesc {
        let mut d = desc.clone();
        for k in &self.commands {
            d.set(k, &format!("$({k})"));
        }
        d
    }
}

/// Item data as Python gives it to `Schedd.submit(itemdata=…)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemData {
    /// Strings: each one row of `queue … from (`.
    Lines(Vec<String>),
    /// Dicts: the first one's keys name the variables; each dict a row
    /// of its values (in the first dict's key order) separated by the
    /// ASCII unit separator.
    Dicts {
        keys: Vec<String>,
        rows: Vec<Vec<String>>,
    },
}

fn check_item(s: &str) -> Result<(), DescError> {
    if s.contains('\n') || s.contains('\x1f') {
        return Err(DescError(
            "item data may not contain newlines or the ASCII unit separator (\\x1F)".into(),
        ));
    }
    Ok(())
}

fn is_var_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Splits `args` into its count (if it starts with one) and the rest.
fn split_count(args: &str) -> (Option<&str>, &str) {
    let t = args.trim();
    let end = t.find(char::is_whitespace).unwrap_or(t.len());
    let first = &t[..end];
    let is_count =
        !first.is_empty() && (first.chars().all(|c| c.is_ascii_digit()) || first.starts_with("$("));
    if is_count {
        (Some(first), t[end..].trim())
    } else {
        (None, t)
    }
}

/// The variables named in queue arguments before `from`/`in`/`matching`
/// (after the count).
fn statement_vars(rest: &str) -> Vec<String> {
    let lower = rest.to_ascii_lowercase();
    let cut = [" from", " in", " matching", "from ", "in ", "matching "]
        .iter()
        .filter_map(|w| lower.find(w))
        .min()
        .unwrap_or(rest.len());
    rest[..cut]
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

/// How `Schedd.submit(description, count, itemdata, queue)` queues:
/// `queue` replaces the description's statement (and excludes the other
/// two); `count` > 0 replaces the statement's count; `itemdata` supplies
/// (or replaces) the items of a `from` statement, naming the variables
/// itself when given dicts.
pub fn queue_plan(
    desc: &SubmitDesc,
    count: u32,
    itemdata: Option<&ItemData>,
    queue: Option<&str>,
) -> Result<QueuePlan, DescError> {
    if let Some(q) = queue {
        if count > 0 || itemdata.is_some() {
            return Err(DescError(
                "queue= cannot be combined with count= or itemdata=".into(),
            ));
        }
        let mut d = desc.clone();
        d.set_qargs(q)?;
        return Ok(QueuePlan {
            statement: d.qargs,
            rows: d.inline_items,
            commands: Vec::new(),
        });
    }
    let (own_count, rest) = split_count(&desc.qargs);
    let count_text = if count > 0 {
        Some(count.to_string())
    } else {
        own_count.map(str::to_string)
    };
    let with_count = |rest: &str| match &count_text {
        Some(c) if rest.is_empty() => c.clone(),
        Some(c) => format!("{c} {rest}"),
        None => rest.to_string(),
    };
    let Some(items) = itemdata else {
        return Ok(QueuePlan {
            statement: with_count(rest),
            rows: desc.inline_items.clone(),
            commands: Vec::new(),
        });
    };
    let (vars, rows): (Vec<String>, Vec<String>) = match items {
        ItemData::Lines(lines) => {
            for l in lines {
                check_item(l)?;
            }
            let vars = statement_vars(rest);
            (vars, lines.iter().map(|l| l.trim().to_string()).collect())
        }
        ItemData::Dicts { keys, rows } => {
            for k in keys {
                if !is_var_name(k) {
                    return Err(DescError(format!(
                        "item data key {k:?} is not a submit variable name"
                    )));
                }
            }
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                for v in r {
                    check_item(v)?;
                }
                let mut row = r.iter().map(|v| v.trim()).collect::<Vec<_>>().join("\x1f");
                // One variable: the separator keeps the row whole (blanks
                // and commas included).
                if keys.len() == 1 {
                    row.push('\x1f');
                }
                out.push(row);
            }
            (keys.clone(), out)
        }
    };
    let commands = vars
        .iter()
        .filter(|v| gleaner_proto::submit::is_command(v))
        .cloned()
        .collect();
    let names = if vars.is_empty() {
        String::new()
    } else {
        format!("{} ", vars.join(","))
    };
    Ok(QueuePlan {
        statement: with_count(&format!("{names}from (")),
        rows: Some(rows),
        commands,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected texts read off HTCondor 25's `htcondor2.Submit`.
    #[test]
    fn reads_and_writes_as_htcondor() {
        let d = SubmitDesc::parse(
            "\nexecutable = /bin/sleep\narguments = 5\n+Foo = \"bar\"\nMY.Bar = 3\nqueue 3 x in (a, b)\n",
        )
        .unwrap();
        assert_eq!(
            d.to_string(),
            "executable = /bin/sleep\narguments = 5\nMY.Foo = \"bar\"\nMY.Bar = 3\nqueue 3 x in (a, b)\n"
        );
        assert_eq!(d.qargs(), "3 x in (a, b)");
        let d = SubmitDesc::parse(
            "executable = x\n  arguments  =   a b  \n# comment\nrequest_memory=1\\\n024\n",
        )
        .unwrap();
        assert_eq!(
            d.to_string(),
            "executable = x\narguments = a b\nrequest_memory = 1024\nqueue\n"
        );
        let d =
            SubmitDesc::parse("executable=/bin/true\nqueue a,b from (\n x 1\n y 2\n)\n").unwrap();
        assert_eq!(d.qargs(), "a,b from (");
        assert_eq!(d.inline_items().unwrap(), [" x 1", " y 2"]);
        assert!(SubmitDesc::parse("executable=x\ninclude : /etc/hostname\n").is_err());
        assert!(SubmitDesc::parse("executable=x\nqueue from (\n a\n").is_err());
    }

    #[test]
    fn keys_are_case_insensitive_and_keep_their_first_spelling() {
        let mut d = SubmitDesc::new();
        d.set("foo", "1");
        d.set("Bar", "2");
        d.set("FOO", "3");
        assert_eq!(d.get("foo"), Some("3"));
        assert_eq!(d.get("bar"), Some("2"));
        assert_eq!(d.to_string(), "foo = 3\nBar = 2\nqueue\n");
        d.set("+y", "2");
        assert_eq!(d.get("MY.y"), Some("2"));
        assert!(d.remove("BAR"));
        assert!(!d.remove("bar"));
        assert_eq!(d.keys().collect::<Vec<_>>(), ["foo", "MY.y"]);
    }

    #[test]
    fn submit_overrides() {
        let mut d = SubmitDesc::new();
        d.set("executable", "/bin/true");
        d.set_qargs("3 x in (a, b)").unwrap();
        let p = queue_plan(&d, 0, None, None).unwrap();
        assert_eq!(p.statement, "3 x in (a, b)");
        let p = queue_plan(&d, 5, None, None).unwrap();
        assert_eq!(p.statement, "5 x in (a, b)");
        let p = queue_plan(&d, 0, None, Some("queue 2")).unwrap();
        assert_eq!(p.statement, "2");
        assert!(queue_plan(&d, 1, None, Some("2")).is_err());
        let items = ItemData::Dicts {
            keys: vec!["input_file".into(), "name".into()],
            rows: vec![vec!["/a b.txt".into(), "a b.txt".into()]],
        };
        let mut plain = SubmitDesc::new();
        plain.set("executable", "/bin/cat");
        let p = queue_plan(&plain, 0, Some(&items), None).unwrap();
        assert_eq!(p.statement, "input_file,name from (");
        assert_eq!(p.rows.unwrap(), ["/a b.txt\x1fa b.txt"]);
        let lines = ItemData::Lines(vec![" 1 2 ".into()]);
        let mut named = plain.clone();
        named.set_qargs("a, b from x.txt").unwrap();
        let p = queue_plan(&named, 2, Some(&lines), None).unwrap();
        assert_eq!(p.statement, "2 a,b from (");
        assert_eq!(p.rows.unwrap(), ["1 2"]);
        let bad = ItemData::Lines(vec!["a\nb".into()]);
        assert!(queue_plan(&plain, 0, Some(&bad), None).is_err());
    }

    // HTCondor's bindings: an item variable named as a submit command
    // sets that command for its job (falconry submits this way).
    #[test]
    fn items_named_as_commands_set_them() {
        let mut d = SubmitDesc::new();
        d.set("executable", "/bin/echo");
        d.set("output", "default.out");
        let items = ItemData::Dicts {
            keys: vec!["Output".into(), "arguments".into(), "word".into()],
            rows: vec![vec!["a.out".into(), "a".into(), "x".into()]],
        };
        let p = queue_plan(&d, 0, Some(&items), None).unwrap();
        assert_eq!(p.commands, ["Output", "arguments"]);
        let text = p
            .apply_commands(&d)
            .submit_text(&p.statement, p.rows.as_deref());
        let sub = gleaner_proto::submit::parse_submit(
            &text,
            &gleaner_proto::submit::SubmitContext::new("t.sub", "alice"),
        )
        .unwrap();
        let jobs = sub.expand(7).unwrap();
        assert_eq!(jobs.len(), 1);
        let job = format!("{:?}", jobs[0]);
        assert!(job.contains("a.out"), "{job}");
        assert!(!job.contains("default.out"), "{job}");
    }
}
