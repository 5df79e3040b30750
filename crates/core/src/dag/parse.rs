//! One DAG file's text into its commands ([`parse_file`]), every error
//! with its line: HTCondor 25's grammar (its `dag_parser.cpp` is the
//! reference for what each command accepts), plus Gleaner's
//! `PRIORITY_PARENT`.

use super::command::{
    Capture, Command, EdgeKind, Located, NodeCmd, NodeKind, Placement, ScriptCmd, ScriptKind,
    SubmitRef, ToleranceMode,
};
use super::lexer::{Lexer, Lines, Quotes, is_keyword};

/// A problem on one line of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

/// Names a node may not have (any case).
pub const RESERVED: [&str; 3] = ["PARENT", "CHILD", "ALL_NODES"];

/// The syntax of each command, for error messages.
fn syntax(keyword: &str) -> &'static str {
    match keyword {
        "JOB" => "JOB <name> <submit description> [DIR <directory>] [NOOP] [DONE]",
        "FINAL" => "FINAL <name> <submit description> [DIR <directory>] [NOOP]",
        "PROVISIONER" => "PROVISIONER <name> <submit description> [DIR <directory>] [NOOP]",
        "SERVICE" => "SERVICE <name> <submit description> [DIR <directory>] [NOOP]",
        "SUBDAG" => "SUBDAG EXTERNAL <name> <dag file> [DIR <directory>] [NOOP] [DONE]",
        "SPLICE" => "SPLICE <name> <dag file> [DIR <directory>]",
        "INCLUDE" => "INCLUDE <dag file>",
        "SUBMIT_DESCRIPTION" => "SUBMIT-DESCRIPTION <name> {  …lines…  }",
        "CATEGORY" => "CATEGORY <node> <category>",
        "PARENT" | "WEAK" => "[WEAK] PARENT p1 [p2 …] CHILD c1 [c2 …]",
        "PRIORITY_PARENT" => "PRIORITY_PARENT p1 [p2 …] CHILD c1 [c2 …]",
        "SCRIPT" => {
            "SCRIPT [DEFER <status> <time>] [DEBUG <file> STDOUT|STDERR|ALL] PRE|POST|HOLD <node> <executable> [arguments …]"
        }
        "RETRY" => "RETRY <node> <max retries> [UNLESS-EXIT <code>]",
        "ABORT_DAG_ON" => "ABORT-DAG-ON <node> <status> [RETURN <code>]",
        "VARS" => "VARS <node> [PREPEND|APPEND] key1=\"value1\" [key2=\"value2\" …]",
        "PRIORITY" => "PRIORITY <node> <value>",
        "PRE_SKIP" => "PRE_SKIP <node> <status>",
        "TOLERANCE" => "TOLERANCE <node> <value>[%] [FAIL-FAST|WAIT]",
        "DONE" => "DONE <node>",
        "MAXJOBS" => "MAXJOBS <category> <value>",
        "CONFIG" => "CONFIG <file>",
        "DOT" => {
            "DOT <file> [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE <header file>]"
        }
        "NODE_STATUS_FILE" => "NODE_STATUS_FILE <file> [<min update time>] [ALWAYS-UPDATE]",
        "JOBSTATE_LOG" => "JOBSTATE_LOG <file>",
        "SAVE_POINT_FILE" => "SAVE_POINT_FILE <node> [<file>]",
        "SET_JOB_ATTR" => "SET_JOB_ATTR <name> = <value>",
        "ENV" => "ENV GET <var> … | ENV SET <key>=<value>;…",
        "REJECT" => "REJECT",
        "CONNECT" => "CONNECT <splice 1> <splice 2>",
        "PIN_IN" => "PIN_IN <node> <pin number>",
        "PIN_OUT" => "PIN_OUT <node> <pin number>",
        _ => "",
    }
}

/// Every keyword, normalised (`-` as `_`, upper case).
const KEYWORDS: [&str; 32] = [
    "JOB",
    "FINAL",
    "PROVISIONER",
    "SERVICE",
    "SUBDAG",
    "SPLICE",
    "INCLUDE",
    "SUBMIT_DESCRIPTION",
    "CATEGORY",
    "PARENT",
    "WEAK",
    "PRIORITY_PARENT",
    "SCRIPT",
    "RETRY",
    "ABORT_DAG_ON",
    "VARS",
    "PRIORITY",
    "PRE_SKIP",
    "TOLERANCE",
    "DONE",
    "MAXJOBS",
    "CONFIG",
    "DOT",
    "NODE_STATUS_FILE",
    "JOBSTATE_LOG",
    "SAVE_POINT_FILE",
    "SET_JOB_ATTR",
    "ENV",
    "REJECT",
    "CONNECT",
    "PIN_IN",
    "PIN_OUT",
];

/// Keywords of older DAGMans that HTCondor 25 no longer has, with why.
fn retired(keyword: &str) -> Option<&'static str> {
    match keyword {
        "DATA" => Some(
            "DATA nodes ran Stork data-placement jobs, which HTCondor removed (HTCondor 25 \
             refuses DATA too); declare the transfer as a JOB node",
        ),
        _ => None,
    }
}

type Res<T> = Result<T, String>;

fn need(t: Res<Option<String>>, what: &str) -> Res<String> {
    t?.ok_or_else(|| what.to_string())
}

fn int(token: &str, what: &str) -> Res<i32> {
    token
        .parse::<i32>()
        .map_err(|_| format!("invalid {what} {token:?}: expected an integer"))
}

fn unsigned(token: &str, what: &str) -> Res<u32> {
    token
        .parse::<u32>()
        .map_err(|_| format!("invalid {what} {token:?}: expected a non-negative integer"))
}

fn no_more(lx: &mut Lexer) -> Res<()> {
    match lx.word()? {
        Some(t) => Err(format!("unexpected token {t:?}")),
        None => Ok(()),
    }
}

fn node_name(lx: &mut Lexer, allow_illegal: bool) -> Res<String> {
    let name = need(lx.word(), "missing node name")?;
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(&name)) {
        return Err(format!("node name {name:?} is a reserved word"));
    }
    if !allow_illegal && name.contains('+') {
        return Err(format!(
            "node name {name:?} contains '+', which DAGMan reserves for splice names"
        ));
    }
    Ok(name)
}

/// Where an inline description ends: `{` → `}`, `@=TAG` → `@TAG`.
fn inline_end(token: &str) -> Option<Res<String>> {
    if token.starts_with('{') {
        Some(Ok("}".into()))
    } else {
        token.strip_prefix("@=").map(|tag| {
            if tag.is_empty() {
                Err("no closing tag for the inline description (@=TAG)".into())
            } else {
                Ok(format!("@{tag}"))
            }
        })
    }
}

/// Reads an inline description's lines up to `end`; returns the text and
/// what follows the closing token on its line.
fn read_inline(lines: &mut Lines, end: &str) -> Res<(String, String)> {
    let mut text = String::new();
    while let Some(l) = lines.raw() {
        if l.text == end || l.text.starts_with(&format!("{end} ")) {
            return Ok((text, l.text[end.len()..].to_string()));
        }
        text.push_str(&l.text);
        text.push('\n');
    }
    Err(format!(
        "the inline description has no closing {end:?} line"
    ))
}

fn parse_node(
    lx: &mut Lexer,
    lines: &mut Lines,
    kind: NodeKind,
    opts: &ParseOptions,
) -> Res<Command> {
    let name = node_name(lx, opts.allow_illegal_chars)?;
    let desc = need(lx.next(Quotes::Trim), "missing submit description")?;
    let mut trailing = String::new();
    let submit = match (kind, inline_end(&desc)) {
        (NodeKind::Subdag, _) | (_, None) => SubmitRef::Name(desc),
        (_, Some(end)) => {
            let (text, rest) = read_inline(lines, &end?)?;
            trailing = rest;
            SubmitRef::Inline(text)
        }
    };
    let mut cmd = NodeCmd {
        kind,
        name,
        submit,
        dir: None,
        noop: false,
        done: false,
    };
    let rest = format!("{} {trailing}", lx.remain());
    let mut lx = Lexer::new(&rest);
    while let Some(t) = lx.word()? {
        if is_keyword(&t, "NOOP") {
            cmd.noop = true;
        } else if is_keyword(&t, "DONE") {
            cmd.done = true;
        } else if is_keyword(&t, "DIR") {
            let d = need(lx.next(Quotes::Trim), "DIR needs a directory")?;
            cmd.dir = Some(d);
        } else {
            return Err(format!("unexpected token {t:?}"));
        }
    }
    Ok(Command::Node(cmd))
}

fn parse_parent_child(lx: &mut Lexer, kind: EdgeKind) -> Res<Command> {
    let mut parents = Vec::new();
    let mut children = Vec::new();
    let mut seen_child = false;
    while let Some(t) = lx.word()? {
        if is_keyword(&t, "CHILD") {
            if seen_child {
                return Err("CHILD appears twice".into());
            }
            seen_child = true;
        } else if seen_child {
            children.push(t);
        } else {
            parents.push(t);
        }
    }
    if parents.is_empty() {
        return Err("no parent node(s) before CHILD".into());
    }
    if !seen_child {
        return Err("missing CHILD".into());
    }
    if children.is_empty() {
        return Err("no child node(s) after CHILD".into());
    }
    Ok(Command::ParentChild {
        kind,
        parents,
        children,
    })
}

fn parse_script(lx: &mut Lexer) -> Res<Command> {
    let mut defer = None;
    let mut debug = None;
    let kind = loop {
        let t = need(
            lx.word(),
            "missing script type (PRE, POST or HOLD) and optional DEFER, DEBUG",
        )?;
        if is_keyword(&t, "PRE") {
            break ScriptKind::Pre;
        } else if is_keyword(&t, "POST") {
            break ScriptKind::Post;
        } else if is_keyword(&t, "HOLD") {
            break ScriptKind::Hold;
        } else if is_keyword(&t, "DEFER") {
            let s = need(lx.word(), "DEFER needs a status")?;
            let status = int(&s, "DEFER status")?;
            let t = need(lx.word(), "DEFER needs a time")?;
            let time = t
                .parse::<u64>()
                .map_err(|_| format!("invalid DEFER time {t:?}: expected seconds"))?;
            defer = Some((status, time));
        } else if is_keyword(&t, "DEBUG") {
            let f = need(lx.word(), "DEBUG needs a file name")?;
            let s = need(
                lx.word(),
                "DEBUG needs an output stream (STDOUT, STDERR, ALL)",
            )?;
            let capture = if is_keyword(&s, "STDOUT") {
                Capture::Stdout
            } else if is_keyword(&s, "STDERR") {
                Capture::Stderr
            } else if is_keyword(&s, "ALL") {
                Capture::All
            } else {
                return Err(format!(
                    "unknown DEBUG stream {s:?}: expected STDOUT, STDERR or ALL"
                ));
            };
            debug = Some((f, capture));
        } else {
            return Err(format!(
                "unexpected {t:?}: expected PRE, POST or HOLD (after optional DEFER, DEBUG)"
            ));
        }
    };
    let node = need(lx.word(), "missing node name")?;
    let command = lx.remain();
    if command.is_empty() {
        return Err("missing script".into());
    }
    Ok(Command::Script(ScriptCmd {
        kind,
        node,
        command,
        defer,
        debug,
    }))
}

fn parse_retry(lx: &mut Lexer) -> Res<Command> {
    let node = need(lx.word(), "missing node name")?;
    let m = need(lx.word(), "missing the number of retries")?;
    let max = unsigned(&m, "retry count")?;
    let mut unless_exit = None;
    if let Some(t) = lx.word()? {
        if !is_keyword(&t, "UNLESS_EXIT") {
            return Err(format!("unexpected token {t:?}"));
        }
        let c = need(lx.word(), "UNLESS-EXIT needs an exit code")?;
        unless_exit = Some(int(&c, "UNLESS-EXIT code")?);
        no_more(lx)?;
    }
    Ok(Command::Retry {
        node,
        max,
        unless_exit,
    })
}

fn parse_abort(lx: &mut Lexer) -> Res<Command> {
    let node = need(lx.word(), "missing node name")?;
    let s = need(lx.word(), "missing the exit status to abort on")?;
    let status = int(&s, "exit status")?;
    let mut ret = None;
    if let Some(t) = lx.word()? {
        if !is_keyword(&t, "RETURN") {
            return Err(format!("unexpected token {t:?}"));
        }
        let c = need(lx.word(), "RETURN needs a value")?;
        let v = c
            .parse::<u8>()
            .map_err(|_| format!("invalid RETURN code {c:?}: must be between 0 and 255"))?;
        ret = Some(v);
        no_more(lx)?;
    }
    Ok(Command::AbortDagOn { node, status, ret })
}

fn parse_vars(lx: &mut Lexer) -> Res<Command> {
    let node = need(lx.word(), "missing node name")?;
    let mut placement = None;
    if let Some(p) = lx.peek() {
        if is_keyword(&p, "PREPEND") {
            placement = Some(Placement::Prepend);
            lx.word()?;
        } else if is_keyword(&p, "APPEND") {
            placement = Some(Placement::Append);
            lx.word()?;
        }
    }
    let mut pairs = Vec::new();
    while let Some((key, value)) = lx.next_pair(Quotes::Trim)? {
        let key = if let Some(attr) = key.strip_prefix('+') {
            format!("My.{attr}")
        } else {
            key
        };
        let name = key
            .strip_prefix("My.")
            .or_else(|| key.strip_prefix("MY."))
            .or_else(|| key.strip_prefix("my."))
            .unwrap_or(&key);
        if name.is_empty() {
            return Err(format!(
                "VARS name {key:?} must hold at least one letter or digit"
            ));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(format!(
                "invalid VARS name {key:?}: letters, digits and _ only"
            ));
        }
        if key.to_ascii_lowercase().starts_with("queue") {
            return Err(format!(
                "invalid VARS name {key:?}: a name cannot begin with \"queue\""
            ));
        }
        pairs.push((key, value));
    }
    if pairs.is_empty() {
        return Err("no key=\"value\" pairs".into());
    }
    Ok(Command::Vars {
        node,
        placement,
        pairs,
    })
}

fn node_and_int(lx: &mut Lexer, what: &str) -> Res<(String, i32)> {
    let node = need(lx.word(), "missing node name")?;
    let v = need(lx.word(), &format!("missing {what}"))?;
    let v = int(&v, what)?;
    no_more(lx)?;
    Ok((node, v))
}

fn parse_tolerance(lx: &mut Lexer) -> Res<Command> {
    let node = need(lx.word(), "missing node name")?;
    let mut t = need(lx.word(), "missing the failure tolerance")?;
    let mut percent = false;
    if t.ends_with('%') {
        t.pop();
        percent = true;
    } else if lx.peek().as_deref() == Some("%") {
        lx.word()?;
        percent = true;
    }
    let value = unsigned(&t, "tolerance")?;
    let mut mode = None;
    if let Some(m) = lx.word()? {
        mode = Some(if is_keyword(&m, "FAIL_FAST") {
            ToleranceMode::FailFast
        } else if is_keyword(&m, "WAIT") {
            ToleranceMode::Wait
        } else {
            return Err(format!("unexpected token {m:?}"));
        });
        no_more(lx)?;
    }
    Ok(Command::Tolerance {
        node,
        value,
        percent,
        mode,
    })
}

fn one_file(lx: &mut Lexer, what: &str) -> Res<String> {
    let f = need(lx.next(Quotes::Trim), what)?;
    no_more(lx)?;
    Ok(f)
}

fn parse_dot(lx: &mut Lexer) -> Res<Command> {
    let file = need(lx.next(Quotes::Trim), "missing the dot file")?;
    let (mut update, mut overwrite, mut include) = (false, true, None);
    while let Some(t) = lx.word()? {
        if is_keyword(&t, "UPDATE") {
            update = true;
        } else if is_keyword(&t, "DONT_UPDATE") {
            update = false;
        } else if is_keyword(&t, "OVERWRITE") {
            overwrite = true;
        } else if is_keyword(&t, "DONT_OVERWRITE") {
            overwrite = false;
        } else if is_keyword(&t, "INCLUDE") {
            include = Some(need(lx.next(Quotes::Trim), "INCLUDE needs a header file")?);
        } else {
            return Err(format!("unexpected token {t:?}"));
        }
    }
    Ok(Command::Dot {
        file,
        update,
        overwrite,
        include,
    })
}

fn parse_status_file(lx: &mut Lexer) -> Res<Command> {
    let file = need(lx.next(Quotes::Trim), "missing the node status file")?;
    let (mut min_update, mut always_update) = (None, false);
    while let Some(t) = lx.word()? {
        if is_keyword(&t, "ALWAYS_UPDATE") {
            always_update = true;
        } else {
            let v = t
                .parse::<u64>()
                .map_err(|_| format!("unexpected token {t:?}"))?;
            min_update = Some(v);
        }
    }
    Ok(Command::NodeStatusFile {
        file,
        min_update,
        always_update,
    })
}

fn parse_set_attr(lx: &mut Lexer) -> Res<Command> {
    let line = lx.remain();
    if line.is_empty() {
        return Err("no attribute (name = value)".into());
    }
    let (name, value) = line
        .split_once('=')
        .ok_or_else(|| format!("{line:?} is not `name = value`"))?;
    let name = name.trim();
    let value = value.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return Err(format!("invalid attribute name {name:?}"));
    }
    if value.is_empty() {
        return Err(format!("attribute {name} has no value"));
    }
    Ok(Command::SetJobAttr {
        name: name.to_string(),
        value: value.to_string(),
    })
}

fn parse_env(lx: &mut Lexer) -> Res<Command> {
    let t = need(lx.word(), "missing SET or GET")?;
    let set = if is_keyword(&t, "SET") {
        true
    } else if is_keyword(&t, "GET") {
        false
    } else {
        return Err(format!("unexpected token {t:?}: expected SET or GET"));
    };
    let text = lx.remain();
    if text.is_empty() {
        return Err("no environment variables".into());
    }
    Ok(Command::Env { set, text })
}

fn parse_pin(lx: &mut Lexer, out: bool) -> Res<Command> {
    let node = need(lx.word(), "missing node name")?;
    let p = need(lx.word(), "missing the pin number")?;
    let pin = unsigned(&p, "pin number")?;
    if pin < 1 {
        return Err(format!(
            "invalid pin number {p:?}: pins are numbered from 1"
        ));
    }
    no_more(lx)?;
    Ok(Command::Pin { node, pin, out })
}

/// Parser settings from DAGMan's configuration.
#[derive(Clone, Copy, Debug, Default)]
pub struct ParseOptions {
    /// `DAGMAN_ALLOW_ILLEGAL_CHARS`: '+' allowed in node names.
    pub allow_illegal_chars: bool,
}

fn parse_command(kw: &str, lx: &mut Lexer, lines: &mut Lines, opts: &ParseOptions) -> Res<Command> {
    Ok(match kw {
        "JOB" => parse_node(lx, lines, NodeKind::Job, opts)?,
        "FINAL" => parse_node(lx, lines, NodeKind::Final, opts)?,
        "PROVISIONER" => parse_node(lx, lines, NodeKind::Provisioner, opts)?,
        "SERVICE" => parse_node(lx, lines, NodeKind::Service, opts)?,
        "SUBDAG" => {
            let t = need(lx.word(), "missing EXTERNAL")?;
            if !is_keyword(&t, "EXTERNAL") {
                return Err(format!("expected EXTERNAL, found {t:?}"));
            }
            parse_node(lx, lines, NodeKind::Subdag, opts)?
        }
        "SPLICE" => {
            let name = need(lx.word(), "missing splice name")?;
            let file = need(lx.next(Quotes::Trim), "missing DAG file")?;
            let mut dir = None;
            if let Some(t) = lx.word()? {
                if !is_keyword(&t, "DIR") {
                    return Err(format!("unexpected token {t:?}"));
                }
                dir = Some(need(lx.next(Quotes::Trim), "DIR needs a directory")?);
                no_more(lx)?;
            }
            Command::Splice { name, file, dir }
        }
        "SUBMIT_DESCRIPTION" => {
            let name = need(lx.word(), "missing the description's name")?;
            let t = need(lx.word(), "missing the inline description ({ … })")?;
            let end = inline_end(&t).ok_or("missing the inline description ({ … })")??;
            let (text, _) = read_inline(lines, &end)?;
            Command::SubmitDescription { name, text }
        }
        "PARENT" => parse_parent_child(lx, EdgeKind::Strong)?,
        "WEAK" => {
            let t = need(lx.word(), "WEAK needs PARENT")?;
            if !is_keyword(&t, "PARENT") {
                return Err("WEAK needs PARENT".into());
            }
            parse_parent_child(lx, EdgeKind::Weak)?
        }
        "PRIORITY_PARENT" => parse_parent_child(lx, EdgeKind::Priority)?,
        "SCRIPT" => parse_script(lx)?,
        "RETRY" => parse_retry(lx)?,
        "ABORT_DAG_ON" => parse_abort(lx)?,
        "VARS" => parse_vars(lx)?,
        "PRIORITY" => {
            let (node, prio) = node_and_int(lx, "priority")?;
            Command::Priority { node, prio }
        }
        "PRE_SKIP" => {
            let (node, code) = node_and_int(lx, "exit code")?;
            Command::PreSkip { node, code }
        }
        "TOLERANCE" => parse_tolerance(lx)?,
        "DONE" => {
            let node = need(lx.word(), "missing node name")?;
            no_more(lx)?;
            Command::Done { node }
        }
        "CATEGORY" => {
            let node = need(lx.word(), "missing node name")?;
            let category = need(lx.word(), "missing category name")?;
            no_more(lx)?;
            Command::Category { node, category }
        }
        "MAXJOBS" => {
            let category = need(lx.word(), "missing category name")?;
            let l = need(lx.word(), "missing the limit")?;
            let limit = unsigned(&l, "MAXJOBS limit")?;
            no_more(lx)?;
            Command::MaxJobs { category, limit }
        }
        "CONFIG" => Command::Config {
            file: one_file(lx, "missing the configuration file")?,
        },
        "INCLUDE" => Command::Include {
            file: one_file(lx, "missing the file to include")?,
        },
        "DOT" => parse_dot(lx)?,
        "NODE_STATUS_FILE" => parse_status_file(lx)?,
        "JOBSTATE_LOG" => Command::JobstateLog {
            file: one_file(lx, "missing the jobstate log file")?,
        },
        "SAVE_POINT_FILE" => {
            let node = need(lx.word(), "missing node name")?;
            if is_keyword(&node, "ALL_NODES") {
                return Err("ALL_NODES cannot be used with SAVE_POINT_FILE".into());
            }
            let file = lx.next(Quotes::Trim)?;
            no_more(lx)?;
            Command::SavePointFile { node, file }
        }
        "SET_JOB_ATTR" => parse_set_attr(lx)?,
        "ENV" => parse_env(lx)?,
        "REJECT" => {
            no_more(lx)?;
            Command::Reject
        }
        "CONNECT" => {
            let from = need(lx.word(), "missing the splices to connect")?;
            let to = need(lx.word(), "missing the splices to connect")?;
            no_more(lx)?;
            Command::Connect { from, to }
        }
        "PIN_IN" => parse_pin(lx, false)?,
        "PIN_OUT" => parse_pin(lx, true)?,
        _ => return Err(format!("internal: no parser for {kw}")),
    })
}

/// Parses one DAG file. Every command that parses is returned, in order,
/// with every error; a caller must refuse the file if any error is
/// returned.
pub fn parse_file(text: &str, opts: &ParseOptions) -> (Vec<Located>, Vec<LineError>) {
    let mut lines = Lines::new(text);
    let mut cmds = Vec::new();
    let mut errors = Vec::new();
    while let Some(l) = lines.next_command() {
        let mut lx = Lexer::new(&l.text);
        let first = match lx.word() {
            Ok(Some(w)) => w,
            Ok(None) => continue,
            Err(e) => {
                errors.push(LineError {
                    line: l.line,
                    message: e,
                });
                continue;
            }
        };
        let kw: String = first
            .chars()
            .map(|c| {
                if c == '-' {
                    '_'
                } else {
                    c.to_ascii_uppercase()
                }
            })
            .collect();
        if let Some(why) = retired(&kw) {
            errors.push(LineError {
                line: l.line,
                message: format!("{first}: {why}"),
            });
            continue;
        }
        if !KEYWORDS.contains(&kw.as_str()) {
            errors.push(LineError {
                line: l.line,
                message: format!("unknown keyword {first:?}: not a DAG command"),
            });
            continue;
        }
        match parse_command(&kw, &mut lx, &mut lines, opts) {
            Ok(cmd) => cmds.push(Located { line: l.line, cmd }),
            Err(e) => {
                let s = syntax(&kw);
                let message = if s.is_empty() {
                    format!("{first}: {e}")
                } else {
                    format!("{first}: {e} (syntax: {s})")
                };
                errors.push(LineError {
                    line: l.line,
                    message,
                });
            }
        }
    }
    (cmds, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Command {
        let (c, e) = parse_file(text, &ParseOptions::default());
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(c.len(), 1, "{c:?}");
        c.into_iter()
            .next()
            .map(|l| l.cmd)
            .unwrap_or(Command::Reject)
    }

    fn err(text: &str) -> String {
        let (_, e) = parse_file(text, &ParseOptions::default());
        assert_eq!(e.len(), 1, "{e:?}");
        e[0].message.clone()
    }

    #[test]
    fn job_lines() {
        assert_eq!(
            one("Job A a.sub DIR \"x y\" noop Done"),
            Command::Node(NodeCmd {
                kind: NodeKind::Job,
                name: "A".into(),
                submit: SubmitRef::Name("a.sub".into()),
                dir: Some("x y".into()),
                noop: true,
                done: true,
            })
        );
        assert!(err("JOB parent a.sub").contains("reserved"));
        assert!(err("JOB a+b a.sub").contains("'+'"));
        assert!(err("JOB a a.sub FOO").contains("unexpected token \"FOO\""));
    }

    #[test]
    fn inline_descriptions() {
        let text = "JOB A {\n executable = /bin/true\n\n queue\n} DIR d\nSUBMIT-DESCRIPTION S @=end\nx = 1\n@end\n";
        let (c, e) = parse_file(text, &ParseOptions::default());
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(
            c[0].cmd,
            Command::Node(NodeCmd {
                kind: NodeKind::Job,
                name: "A".into(),
                submit: SubmitRef::Inline("executable = /bin/true\nqueue\n".into()),
                dir: Some("d".into()),
                noop: false,
                done: false,
            })
        );
        assert_eq!(
            c[1],
            Located {
                line: 6,
                cmd: Command::SubmitDescription {
                    name: "S".into(),
                    text: "x = 1\n".into()
                }
            }
        );
        assert!(err("JOB A {\nx = 1\n").contains("closing"));
    }

    #[test]
    fn scripts_keep_their_command_line() {
        assert_eq!(
            one("SCRIPT DEFER 4 30 DEBUG d.log ALL POST A post.sh $RETURN  a  b"),
            Command::Script(ScriptCmd {
                kind: ScriptKind::Post,
                node: "A".into(),
                command: "post.sh $RETURN  a  b".into(),
                defer: Some((4, 30)),
                debug: Some(("d.log".into(), Capture::All)),
            })
        );
        assert!(err("SCRIPT PRE A").contains("missing script"));
        assert!(err("SCRIPT FOO A x").contains("expected PRE"));
    }

    #[test]
    fn vars_forms() {
        assert_eq!(
            one(r#"VARS a APPEND x = "1" job="$(JOB)" +Attr="\"v\"" My.B=2"#),
            Command::Vars {
                node: "a".into(),
                placement: Some(Placement::Append),
                pairs: vec![
                    ("x".into(), "1".into()),
                    ("job".into(), "$(JOB)".into()),
                    ("My.Attr".into(), "\"v\"".into()),
                    ("My.B".into(), "2".into()),
                ],
            }
        );
        assert!(err("VARS a queuex=\"1\"").contains("queue"));
        assert!(err("VARS a").contains("no key"));
    }

    #[test]
    fn retry_abort_and_friends() {
        assert_eq!(
            one("RETRY a 3 UNLESS-EXIT 42"),
            Command::Retry {
                node: "a".into(),
                max: 3,
                unless_exit: Some(42)
            }
        );
        assert_eq!(
            one("ABORT-DAG-ON a 7 RETURN 0"),
            Command::AbortDagOn {
                node: "a".into(),
                status: 7,
                ret: Some(0)
            }
        );
        assert!(err("RETRY a -1").contains("non-negative"));
        assert!(err("ABORT-DAG-ON a 1 RETURN 300").contains("255"));
        assert_eq!(
            one("weak parent a b child c"),
            Command::ParentChild {
                kind: EdgeKind::Weak,
                parents: vec!["a".into(), "b".into()],
                children: vec!["c".into()]
            }
        );
        assert!(err("PARENT a b").contains("CHILD"));
    }

    #[test]
    fn unknown_and_retired_keywords_are_named() {
        assert!(err("FROB a").contains("unknown keyword \"FROB\""));
        assert!(err("DATA a a.sub").contains("Stork"));
    }
}
