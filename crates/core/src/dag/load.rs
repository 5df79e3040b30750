//! DAG files into one [`DagSpec`]: includes, splices (with `DIR`),
//! sub-DAG nodes, `ALL_NODES`, `CONNECT`/`PIN_IN`/`PIN_OUT`, join nodes,
//! several DAG files submitted as one, and rescue files laid over the
//! result ([`apply_rescue`]).
//!
//! It processes each file as HTCondor 25's DAGMan does (`DagProcessor` in
//! its `parse.cpp`): node declarations, splices, descriptions and the
//! file-level commands first, then the rest in file order, so a `PARENT`
//! line may come before the nodes it names. `ALL_NODES` means the `JOB`
//! and `SUBDAG` nodes the file (with what it includes) declares, not its
//! splices' nodes. A splice's nodes are named `Splice+Node`; a splice is
//! the parent or child of other nodes through its initial (no parent) and
//! terminal (no child) nodes. Relative paths are taken from the DAG's
//! working directory, or a splice's `DIR` inside it.
//!
//! File reading is the caller's ([`Files`]): the core does no I/O. Every
//! error names its file and line; nothing is half loaded.

use super::command::{Command, EdgeKind, NodeCmd, NodeKind, Placement, SubmitRef};
use super::parse::{LineError, ParseOptions, parse_file};
use super::spec::{
    DagSpec, DotSpec, EnvSpec, Loc, NodeSpec, Parent, Script, StatusFileSpec, Submit, Tolerance,
    Var, Warning,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Most nodes one DAG may have.
pub const MAX_NODES: usize = 1_000_000;
/// Most dependences (after join nodes) one DAG may have.
pub const MAX_EDGES: usize = 10_000_000;
/// Most DAG files (includes and splices counted each time) one load reads.
pub const MAX_FILES: usize = 100_000;
/// Deepest nesting of includes and splices.
pub const MAX_DEPTH: usize = 64;
/// Largest DAG file read.
pub const MAX_FILE_BYTES: usize = 64 << 20;

/// How the caller reads files (absolute paths).
pub trait Files {
    /// The file's text, or why it cannot be read.
    fn read(&mut self, path: &str) -> Result<String, String>;
}

impl<F: FnMut(&str) -> Result<String, String>> Files for F {
    fn read(&mut self, path: &str) -> Result<String, String> {
        self(path)
    }
}

/// Settings that change how files load (DAGMan's configuration and
/// condor_submit_dag's options).
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// condor_submit_dag's working directory (absolute).
    pub cwd: String,
    /// `-usedagdir`: each DAG file runs from its own directory.
    pub use_dag_dir: bool,
    /// `DAGMAN_MUNGE_NODE_NAMES` (default true): with several DAG files,
    /// prefix node names with `N.` (the file's number, from 0).
    pub munge: bool,
    /// `DAGMAN_ALLOW_ILLEGAL_CHARS`.
    pub allow_illegal_chars: bool,
    /// `DAGMAN_USE_JOIN_NODES` (default true).
    pub use_join_nodes: bool,
    /// `DAGMAN_DEFAULT_APPEND_VARS` (default false: VARS are prepended).
    pub append_vars: bool,
}

impl LoadOptions {
    pub fn new(cwd: impl Into<String>) -> Self {
        LoadOptions {
            cwd: cwd.into(),
            use_dag_dir: false,
            munge: true,
            allow_illegal_chars: false,
            use_join_nodes: true,
            append_vars: false,
        }
    }
}

/// One error with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub loc: Loc,
    pub message: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.loc.line == 0 {
            write!(f, "{}: {}", self.loc.file, self.message)
        } else {
            write!(f, "{}: {}", self.loc, self.message)
        }
    }
}

/// Every error of a load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadErrors(pub Vec<LoadError>);

impl std::fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadErrors {}

/// `a` joined with `b` (`b` absolute stays), `.` and `..` folded
/// lexically.
pub fn join_path(a: &str, b: &str) -> String {
    let joined = if b.starts_with('/') || a.is_empty() {
        b.to_string()
    } else {
        format!("{a}/{b}")
    };
    normalize(&joined)
}

fn normalize(p: &str) -> String {
    let abs = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !abs {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let body = parts.join("/");
    match (abs, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// The directory part of a path.
pub fn dir_of(path: &str) -> String {
    match path.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => path[..i].to_string(),
        None => ".".into(),
    }
}

/// The last part of a path.
pub fn base_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

struct Build {
    spec: NodeSpec,
    /// (parent, kind) as declared; deduplicated at the end.
    parents: Vec<(u32, EdgeKind)>,
    has_children: bool,
}

#[derive(Default)]
struct SpliceInfo {
    initial: Vec<u32>,
    terminal: Vec<u32>,
    pins_in: BTreeMap<u32, Vec<u32>>,
    pins_out: BTreeMap<u32, Vec<u32>>,
    nodes: Vec<u32>,
}

struct Scope {
    munge: Option<usize>,
    /// Absolute directory of relative paths.
    cwd: String,
    /// Depth of splicing (0 at the top).
    depth: usize,
    /// Local (munged) name → node.
    names: HashMap<String, u32>,
    /// Nodes this scope declared (its includes too), in order.
    own: Vec<u32>,
    splices: HashMap<String, SpliceInfo>,
    lifted: Vec<u32>,
    pins_in: BTreeMap<u32, Vec<u32>>,
    pins_out: BTreeMap<u32, Vec<u32>>,
    /// Prefix of this scope's category names (`S+` in splice S).
    cat_prefix: String,
}

impl Scope {
    fn full(&self, name: &str) -> String {
        if name.eq_ignore_ascii_case("ALL_NODES") {
            return name.to_string();
        }
        match self.munge {
            Some(n) => format!("{n}.{name}"),
            None => name.to_string(),
        }
    }
}

struct Loader<'f> {
    files: &'f mut dyn Files,
    opts: LoadOptions,
    nodes: Vec<Build>,
    edges: usize,
    errors: Vec<LoadError>,
    warnings: Vec<Warning>,
    descs: BTreeMap<String, String>,
    /// (category, limit, splice depth).
    maxjobs: Vec<(String, u32, usize)>,
    spec: DagSpec,
    stack: Vec<String>,
    files_read: usize,
    joins: usize,
}

fn err(file: &str, line: usize, message: impl Into<String>) -> LoadError {
    LoadError {
        loc: Loc {
            file: file.to_string(),
            line,
        },
        message: message.into(),
    }
}

/// Loads DAG files `files` (as given; relative ones are taken from
/// `opts.cwd`) as one DAG.
pub fn load(
    files: &[String],
    opts: &LoadOptions,
    reader: &mut dyn Files,
) -> Result<DagSpec, LoadErrors> {
    if files.is_empty() {
        return Err(LoadErrors(vec![err("", 0, "no DAG file given")]));
    }
    let mut l = Loader {
        files: reader,
        opts: opts.clone(),
        nodes: Vec::new(),
        edges: 0,
        errors: Vec::new(),
        warnings: Vec::new(),
        descs: BTreeMap::new(),
        maxjobs: Vec::new(),
        spec: DagSpec {
            cwd: normalize(&opts.cwd),
            ..Default::default()
        },
        stack: Vec::new(),
        files_read: 0,
        joins: 0,
    };
    let multi = files.len() > 1;
    let mut top = Scope {
        munge: None,
        cwd: normalize(&opts.cwd),
        depth: 0,
        names: HashMap::new(),
        own: Vec::new(),
        splices: HashMap::new(),
        lifted: Vec::new(),
        pins_in: BTreeMap::new(),
        pins_out: BTreeMap::new(),
        cat_prefix: String::new(),
    };
    for (i, f) in files.iter().enumerate() {
        let path = join_path(&opts.cwd, f);
        l.spec.files.push(path.clone());
        // Each DAG file has its own names (and ALL_NODES) but shares the
        // DAG's settings.
        let mut scope = Scope {
            munge: (multi && opts.munge).then_some(i),
            cwd: if opts.use_dag_dir {
                dir_of(&path)
            } else {
                normalize(&opts.cwd)
            },
            depth: 0,
            names: HashMap::new(),
            own: Vec::new(),
            splices: HashMap::new(),
            lifted: Vec::new(),
            pins_in: BTreeMap::new(),
            pins_out: BTreeMap::new(),
            cat_prefix: String::new(),
        };
        l.process(&path, &mut scope, &Loc::default());
        for (name, id) in scope.names {
            if top.names.insert(name.clone(), id).is_some() {
                l.errors.push(err(
                    &path,
                    0,
                    format!("node {name} is declared in several DAG files (set DAGMAN_MUNGE_NODE_NAMES = True)"),
                ));
            }
        }
        top.own.extend(scope.own);
        top.lifted.extend(scope.lifted);
    }
    l.finish()
}

impl Loader<'_> {
    fn read(&mut self, path: &str, at: &Loc) -> Option<String> {
        if self.stack.len() >= MAX_DEPTH {
            self.errors.push(LoadError {
                loc: at.clone(),
                message: format!("{path}: includes and splices nested more than {MAX_DEPTH} deep"),
            });
            return None;
        }
        if self.stack.iter().any(|s| s == path) {
            self.errors.push(LoadError {
                loc: at.clone(),
                message: format!(
                    "{path} includes or splices itself (through {})",
                    self.stack.join(" → ")
                ),
            });
            return None;
        }
        self.files_read += 1;
        if self.files_read > MAX_FILES {
            self.errors.push(LoadError {
                loc: at.clone(),
                message: format!("more than {MAX_FILES} DAG files read"),
            });
            return None;
        }
        match self.files.read(path) {
            Ok(t) if t.len() > MAX_FILE_BYTES => {
                self.errors
                    .push(err(path, 0, format!("larger than {MAX_FILE_BYTES} bytes")));
                None
            }
            Ok(t) => Some(t),
            Err(e) => {
                let where_ = if at.file.is_empty() {
                    format!("{path}: cannot read: {e}")
                } else {
                    format!("cannot read {path}: {e}")
                };
                self.errors.push(LoadError {
                    loc: at.clone(),
                    message: where_,
                });
                None
            }
        }
    }

    /// Processes one file into `scope` (both passes).
    fn process(&mut self, path: &str, scope: &mut Scope, at: &Loc) {
        let Some(text) = self.read(path, at) else {
            return;
        };
        let popts = ParseOptions {
            allow_illegal_chars: self.opts.allow_illegal_chars,
        };
        let (cmds, errs) = parse_file(&text, &popts);
        for LineError { line, message } in errs {
            self.errors.push(err(path, line, message));
        }
        self.stack.push(path.to_string());
        let first = |c: &Command| {
            matches!(
                c,
                Command::Node(_)
                    | Command::SubmitDescription { .. }
                    | Command::Splice { .. }
                    | Command::Reject
                    | Command::Dot { .. }
                    | Command::NodeStatusFile { .. }
                    | Command::JobstateLog { .. }
                    | Command::Config { .. }
                    | Command::SetJobAttr { .. }
                    | Command::Env { .. }
            )
        };
        for c in cmds.iter().filter(|c| first(&c.cmd)) {
            let loc = Loc {
                file: path.to_string(),
                line: c.line,
            };
            self.pass_one(&c.cmd, &loc, scope);
        }
        for c in cmds.iter().filter(|c| !first(&c.cmd)) {
            let loc = Loc {
                file: path.to_string(),
                line: c.line,
            };
            self.pass_two(&c.cmd, &loc, scope);
        }
        self.stack.pop();
    }

    fn error(&mut self, loc: &Loc, message: impl Into<String>) {
        self.errors.push(LoadError {
            loc: loc.clone(),
            message: message.into(),
        });
    }

    fn warn(&mut self, loc: &Loc, message: impl Into<String>) {
        self.warnings.push(Warning {
            loc: loc.clone(),
            message: message.into(),
        });
    }

    fn pass_one(&mut self, cmd: &Command, loc: &Loc, scope: &mut Scope) {
        let in_splice = scope.depth > 0;
        match cmd {
            Command::Node(n) => self.add_node(n, loc, scope),
            Command::SubmitDescription { name, text } => {
                if let Some(old) = self.descs.get(name)
                    && old != text
                {
                    self.warn(
                        loc,
                        format!("SUBMIT-DESCRIPTION {name} declared again with another text; the last one is used"),
                    );
                }
                self.descs.insert(name.clone(), text.clone());
            }
            Command::Splice { name, file, dir } => {
                self.splice(name, file, dir.as_deref(), loc, scope)
            }
            Command::Reject if self.spec.reject.is_none() => {
                self.spec.reject = Some(loc.clone());
            }
            Command::Dot {
                file,
                update,
                overwrite,
                include,
            } => {
                if self.spec.dot.is_some() {
                    self.warn(loc, "a second DOT command; the first one is used");
                } else {
                    self.spec.dot = Some(DotSpec {
                        file: join_path(&scope.cwd, file),
                        update: *update,
                        overwrite: *overwrite,
                        include: include.as_ref().map(|i| join_path(&scope.cwd, i)),
                    });
                }
            }
            Command::NodeStatusFile {
                file,
                min_update,
                always_update,
            } => {
                if in_splice {
                    self.warn(
                        loc,
                        "NODE_STATUS_FILE inside a splice is ignored (as DAGMan does)",
                    );
                } else if self.spec.status_file.is_some() {
                    self.warn(loc, "a second NODE_STATUS_FILE; the first one is used");
                } else {
                    self.spec.status_file = Some(StatusFileSpec {
                        file: join_path(&scope.cwd, file),
                        min_update: min_update.unwrap_or(60),
                        always_update: *always_update,
                    });
                }
            }
            Command::JobstateLog { file } => {
                if self.spec.jobstate_log.is_some() {
                    self.warn(loc, "a second JOBSTATE_LOG; the first one is used");
                } else {
                    self.spec.jobstate_log = Some(join_path(&scope.cwd, file));
                }
            }
            Command::Config { file } => {
                if in_splice {
                    self.warn(loc, "CONFIG inside a splice takes no effect (as in DAGMan)");
                } else {
                    let path = join_path(&scope.cwd, file);
                    match &self.spec.config {
                        Some(old) if *old != path => self.error(
                            loc,
                            format!("a second configuration file {path} (already {old}): DAGMan allows one per DAG"),
                        ),
                        _ => self.spec.config = Some(path),
                    }
                }
            }
            Command::SetJobAttr { name, value } => {
                if in_splice {
                    self.warn(
                        loc,
                        "SET_JOB_ATTR inside a splice takes no effect (as in DAGMan)",
                    );
                } else {
                    self.spec
                        .set_job_attrs
                        .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
                    self.spec.set_job_attrs.push((name.clone(), value.clone()));
                }
            }
            Command::Env { set, text } => {
                if in_splice {
                    self.warn(loc, "ENV inside a splice takes no effect (as in DAGMan)");
                } else if *set {
                    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                        match part.split_once('=') {
                            Some((k, v)) if !k.trim().is_empty() => self
                                .spec
                                .env
                                .set
                                .push((k.trim().to_string(), v.to_string())),
                            _ => self.error(loc, format!("ENV SET: {part:?} is not KEY=value")),
                        }
                    }
                } else {
                    for v in text.split([' ', '\t', ',']).filter(|v| !v.is_empty()) {
                        self.spec.env.get.push(v.to_string());
                    }
                }
            }
            _ => {}
        }
    }

    fn add_node(&mut self, n: &NodeCmd, loc: &Loc, scope: &mut Scope) {
        let name = scope.full(&n.name);
        if scope.names.contains_key(&name) {
            self.error(loc, format!("node {} is already declared", n.name));
            return;
        }
        if scope.splices.contains_key(&name) {
            self.error(
                loc,
                format!("node name {} is already a splice's name", n.name),
            );
            return;
        }
        if self.nodes.len() >= MAX_NODES {
            self.error(loc, format!("more than {MAX_NODES} nodes"));
            return;
        }
        if scope.depth > 0 && n.kind == NodeKind::Final {
            self.error(loc, "a splice may not have a FINAL node");
            return;
        }
        if matches!(n.kind, NodeKind::Final | NodeKind::Provisioner)
            && let Some(other) = self.nodes.iter().find(|b| b.spec.kind == n.kind)
        {
            self.error(
                loc,
                format!(
                    "a second {} node (the first is {} at {}): a DAG has at most one",
                    n.kind.keyword(),
                    other.spec.name,
                    other.spec.loc
                ),
            );
            return;
        }
        let submit = match (&n.kind, &n.submit) {
            (NodeKind::Subdag, SubmitRef::Name(f)) => Submit::Dag(f.clone()),
            (_, SubmitRef::Name(f)) if f.ends_with(".condor.sub") && n.kind != NodeKind::Final => {
                self.error(
                    loc,
                    "a JOB whose submit file is a DAG's .condor.sub: use SUBDAG EXTERNAL for nested DAGs",
                );
                return;
            }
            (_, SubmitRef::Name(f)) => Submit::File(f.clone()),
            (_, SubmitRef::Inline(text)) => Submit::Inline {
                name: format!("{name}-InlineDesc"),
                text: text.clone(),
            },
        };
        let mut done = n.done;
        if done && !matches!(n.kind, NodeKind::Job | NodeKind::Subdag) {
            self.warn(
                loc,
                format!(
                    "{} node {} cannot be DONE; ignored",
                    n.kind.keyword(),
                    n.name
                ),
            );
            done = false;
        }
        let dir = match &n.dir {
            Some(d) => join_path(&scope.cwd, d),
            None => scope.cwd.clone(),
        };
        let id = self.nodes.len() as u32;
        self.nodes.push(Build {
            spec: NodeSpec {
                name: name.clone(),
                kind: n.kind,
                submit,
                dir,
                noop: n.noop,
                done,
                scripts: BTreeMap::new(),
                pre_skip: None,
                retries: 0,
                unless_exit: None,
                abort_on: None,
                vars: Vec::new(),
                priority: 0,
                category: None,
                save_point: None,
                tolerance: None,
                parents: Vec::new(),
                children: Vec::new(),
                join: false,
                loc: loc.clone(),
            },
            parents: Vec::new(),
            has_children: false,
        });
        scope.names.insert(name, id);
        scope.own.push(id);
    }

    fn splice(&mut self, name: &str, file: &str, dir: Option<&str>, loc: &Loc, scope: &mut Scope) {
        let full = scope.full(name);
        if scope.names.contains_key(&full) {
            self.error(loc, format!("splice name {name} is already a node's name"));
            return;
        }
        if scope.splices.contains_key(&full) {
            self.error(loc, format!("splice {name} is already declared"));
            return;
        }
        let cwd = match dir {
            Some(d) => join_path(&scope.cwd, d),
            None => scope.cwd.clone(),
        };
        let path = join_path(&cwd, file);
        let mut inner = Scope {
            munge: scope.munge,
            cwd,
            depth: scope.depth + 1,
            names: HashMap::new(),
            own: Vec::new(),
            splices: HashMap::new(),
            lifted: Vec::new(),
            pins_in: BTreeMap::new(),
            pins_out: BTreeMap::new(),
            cat_prefix: format!("{}{full}+", scope.cat_prefix),
        };
        let before = self.errors.len();
        self.process(&path, &mut inner, loc);
        if self.errors.len() > before {
            return;
        }
        let all: Vec<u32> = inner.own.iter().chain(&inner.lifted).copied().collect();
        let prefix = format!("{full}+");
        for &id in &all {
            let b = &mut self.nodes[id as usize];
            b.spec.name = format!("{prefix}{}", b.spec.name);
        }
        let info = SpliceInfo {
            initial: all
                .iter()
                .copied()
                .filter(|&i| self.nodes[i as usize].parents.is_empty())
                .collect(),
            terminal: all
                .iter()
                .copied()
                .filter(|&i| !self.nodes[i as usize].has_children)
                .collect(),
            pins_in: inner.pins_in,
            pins_out: inner.pins_out,
            nodes: all.clone(),
        };
        scope.lifted.extend(all);
        scope.splices.insert(full, info);
    }

    /// The nodes a name refers to in `scope` for a node command:
    /// `ALL_NODES` (the scope's JOB and SUBDAG nodes) or one node.
    fn targets(&mut self, name: &str, loc: &Loc, scope: &Scope, what: &str) -> Vec<u32> {
        if name.eq_ignore_ascii_case("ALL_NODES") {
            return scope
                .own
                .iter()
                .copied()
                .filter(|&i| {
                    let s = &self.nodes[i as usize].spec;
                    matches!(s.kind, NodeKind::Job | NodeKind::Subdag) && !s.join
                })
                .collect();
        }
        match scope.names.get(&scope.full(name)) {
            Some(&i) => vec![i],
            None => {
                let hint = if scope.splices.contains_key(&scope.full(name)) {
                    format!(": {name} is a splice, and {what} cannot name a splice")
                } else {
                    String::new()
                };
                self.error(loc, format!("{what}: unknown node {name}{hint}"));
                Vec::new()
            }
        }
    }

    fn pass_two(&mut self, cmd: &Command, loc: &Loc, scope: &mut Scope) {
        match cmd {
            Command::Include { file } => {
                let path = join_path(&scope.cwd, file);
                self.process(&path, scope, loc);
            }
            Command::ParentChild {
                kind,
                parents,
                children,
            } => self.dependences(*kind, parents, children, loc, scope),
            Command::Script(s) => {
                for id in self.targets(&s.node, loc, scope, "SCRIPT") {
                    let b = &mut self.nodes[id as usize];
                    let old = b.spec.scripts.insert(
                        s.kind,
                        Script {
                            command: s.command.clone(),
                            defer: s.defer,
                            debug: s
                                .debug
                                .clone()
                                .map(|(f, c)| (join_path(&b.spec.dir, &f), c)),
                        },
                    );
                    if let Some(old) = old
                        && !s.node.eq_ignore_ascii_case("ALL_NODES")
                    {
                        let name = b.spec.name.clone();
                        self.warn(
                            loc,
                            format!(
                                "node {name} already has a {} script <{}>; now <{}>",
                                s.kind.name(),
                                old.command,
                                s.command
                            ),
                        );
                    }
                }
            }
            Command::Retry {
                node,
                max,
                unless_exit,
            } => {
                for id in self.targets(node, loc, scope, "RETRY") {
                    let b = &mut self.nodes[id as usize];
                    if !matches!(b.spec.kind, NodeKind::Job | NodeKind::Subdag) {
                        let m = format!(
                            "{} node {} cannot have RETRY",
                            b.spec.kind.keyword(),
                            b.spec.name
                        );
                        self.error(loc, m);
                        continue;
                    }
                    b.spec.retries = *max;
                    b.spec.unless_exit = *unless_exit;
                }
            }
            Command::AbortDagOn { node, status, ret } => {
                for id in self.targets(node, loc, scope, "ABORT-DAG-ON") {
                    let b = &mut self.nodes[id as usize];
                    if b.spec.kind == NodeKind::Final {
                        let m = format!("FINAL node {} cannot have ABORT-DAG-ON", b.spec.name);
                        self.error(loc, m);
                        continue;
                    }
                    b.spec.abort_on = Some((*status, *ret));
                }
            }
            Command::Vars {
                node,
                placement,
                pairs,
            } => {
                let prepend = match placement {
                    Some(Placement::Prepend) => true,
                    Some(Placement::Append) => false,
                    None => !self.opts.append_vars,
                };
                let all = node.eq_ignore_ascii_case("ALL_NODES");
                for id in self.targets(node, loc, scope, "VARS") {
                    for (k, v) in pairs {
                        let b = &mut self.nodes[id as usize];
                        if let Some(var) = b.spec.vars.iter_mut().find(|x| x.key == *k) {
                            var.value = v.clone();
                            var.prepend = prepend;
                            if !all {
                                let name = b.spec.name.clone();
                                self.warn(loc, format!("VARS {k} of node {name} given again; the last value is used"));
                            }
                        } else {
                            b.spec.vars.push(Var {
                                key: k.clone(),
                                value: v.clone(),
                                prepend,
                            });
                        }
                    }
                }
            }
            Command::Priority { node, prio } => {
                for id in self.targets(node, loc, scope, "PRIORITY") {
                    let b = &mut self.nodes[id as usize];
                    if !matches!(b.spec.kind, NodeKind::Job | NodeKind::Subdag) {
                        let m = format!(
                            "{} node {} cannot have a PRIORITY",
                            b.spec.kind.keyword(),
                            b.spec.name
                        );
                        self.error(loc, m);
                        continue;
                    }
                    b.spec.priority = *prio;
                }
            }
            Command::PreSkip { node, code } => {
                if !(0..=255).contains(code) {
                    self.error(
                        loc,
                        format!("PRE_SKIP exit code {code} is not between 0 and 255"),
                    );
                    return;
                }
                for id in self.targets(node, loc, scope, "PRE_SKIP") {
                    self.nodes[id as usize].spec.pre_skip = Some(*code);
                }
            }
            Command::Tolerance {
                node,
                value,
                percent,
                mode,
            } => {
                for id in self.targets(node, loc, scope, "TOLERANCE") {
                    self.nodes[id as usize].spec.tolerance = Some(Tolerance {
                        value: *value,
                        percent: *percent,
                        mode: *mode,
                    });
                }
            }
            Command::Done { node } => {
                for id in self.targets(node, loc, scope, "DONE") {
                    let b = &mut self.nodes[id as usize];
                    if matches!(b.spec.kind, NodeKind::Job | NodeKind::Subdag) {
                        b.spec.done = true;
                    } else {
                        let m = format!(
                            "{} node {} cannot be DONE; ignored",
                            b.spec.kind.keyword(),
                            b.spec.name
                        );
                        self.warn(loc, m);
                    }
                }
            }
            Command::Category { node, category } => {
                let cat = if category.starts_with('+') {
                    category.clone()
                } else {
                    format!("{}{category}", scope.cat_prefix)
                };
                for id in self.targets(node, loc, scope, "CATEGORY") {
                    let b = &mut self.nodes[id as usize];
                    if !matches!(b.spec.kind, NodeKind::Job | NodeKind::Subdag) {
                        let m = format!(
                            "{} node {} cannot be in a CATEGORY",
                            b.spec.kind.keyword(),
                            b.spec.name
                        );
                        self.error(loc, m);
                        continue;
                    }
                    b.spec.category = Some(cat.clone());
                }
            }
            Command::MaxJobs { category, limit } => {
                let cat = if category.starts_with('+') {
                    category.clone()
                } else {
                    format!("{}{category}", scope.cat_prefix)
                };
                self.maxjobs.push((cat, *limit, scope.depth));
            }
            Command::SavePointFile { node, file } => {
                for id in self.targets(node, loc, scope, "SAVE_POINT_FILE") {
                    let b = &mut self.nodes[id as usize];
                    if b.spec.kind != NodeKind::Job {
                        let m = format!(
                            "{} node {} cannot have a SAVE_POINT_FILE",
                            b.spec.kind.keyword(),
                            b.spec.name
                        );
                        self.error(loc, m);
                        continue;
                    }
                    let dag_file = base_of(&loc.file).to_string();
                    let f = file
                        .clone()
                        .unwrap_or_else(|| format!("{}-{dag_file}.save", node));
                    b.spec.save_point = Some(f);
                }
            }
            Command::Connect { from, to } => self.connect(from, to, loc, scope),
            Command::Pin { node, pin, out } => {
                for id in self.targets(node, loc, scope, if *out { "PIN_OUT" } else { "PIN_IN" }) {
                    let map = if *out {
                        &mut scope.pins_out
                    } else {
                        &mut scope.pins_in
                    };
                    map.entry(*pin).or_default().push(id);
                }
            }
            _ => {}
        }
    }

    /// The nodes a dependence names: a node, or a splice's initial
    /// (children) or terminal (parents) nodes.
    fn ends(
        &mut self,
        names: &[String],
        parents: bool,
        loc: &Loc,
        scope: &Scope,
    ) -> Option<Vec<u32>> {
        let mut out = BTreeSet::new();
        let mut ok = true;
        for n in names {
            let full = scope.full(n);
            if let Some(s) = scope.splices.get(&full) {
                out.extend(
                    if parents { &s.terminal } else { &s.initial }
                        .iter()
                        .copied(),
                );
            } else if let Some(&i) = scope.names.get(&full) {
                out.insert(i);
            } else {
                self.error(
                    loc,
                    format!(
                        "unknown {} node {n}",
                        if parents { "parent" } else { "child" }
                    ),
                );
                ok = false;
            }
        }
        ok.then(|| out.into_iter().collect())
    }

    fn dependences(
        &mut self,
        kind: EdgeKind,
        parents: &[String],
        children: &[String],
        loc: &Loc,
        scope: &mut Scope,
    ) {
        let (Some(ps), Some(cs)) = (
            self.ends(parents, true, loc, scope),
            self.ends(children, false, loc, scope),
        ) else {
            return;
        };
        for &i in ps.iter().chain(&cs) {
            let s = &self.nodes[i as usize].spec;
            if !matches!(s.kind, NodeKind::Job | NodeKind::Subdag) {
                let m = format!(
                    "{} node {} cannot have parents or children",
                    s.kind.keyword(),
                    s.name
                );
                self.error(loc, m);
                return;
            }
        }
        if ps.is_empty() || cs.is_empty() {
            self.warn(
                loc,
                "a dependence with no parent or no child node (an empty splice?)",
            );
            return;
        }
        if self.opts.use_join_nodes && kind != EdgeKind::Priority && ps.len() > 1 && cs.len() > 1 {
            let name = format!("_condor_join_node{}", self.joins);
            self.joins += 1;
            let id = self.nodes.len() as u32;
            let dir = scope.cwd.clone();
            self.nodes.push(Build {
                spec: NodeSpec {
                    name: name.clone(),
                    kind: NodeKind::Job,
                    submit: Submit::File("DNE.sub".into()),
                    dir,
                    noop: true,
                    done: false,
                    scripts: BTreeMap::new(),
                    pre_skip: None,
                    retries: 0,
                    unless_exit: None,
                    abort_on: None,
                    vars: Vec::new(),
                    priority: 0,
                    category: None,
                    save_point: None,
                    tolerance: None,
                    parents: Vec::new(),
                    children: Vec::new(),
                    join: true,
                    loc: loc.clone(),
                },
                parents: Vec::new(),
                has_children: false,
            });
            scope.own.push(id);
            // Join nodes live outside the user's name space.
            self.connect_all(&ps, &[id], kind, loc);
            self.connect_all(&[id], &cs, EdgeKind::Strong, loc);
        } else {
            self.connect_all(&ps, &cs, kind, loc);
        }
    }

    fn connect_all(&mut self, ps: &[u32], cs: &[u32], kind: EdgeKind, loc: &Loc) {
        let n = ps.len().saturating_mul(cs.len());
        if self.edges.saturating_add(n) > MAX_EDGES {
            self.error(loc, format!("more than {MAX_EDGES} dependences"));
            return;
        }
        self.edges += n;
        for &c in cs {
            for &p in ps {
                if p == c {
                    let name = self.nodes[p as usize].spec.name.clone();
                    self.error(loc, format!("node {name} cannot be its own parent"));
                    continue;
                }
                self.nodes[c as usize].parents.push((p, kind));
                self.nodes[p as usize].has_children = true;
            }
        }
    }

    fn connect(&mut self, from: &str, to: &str, loc: &Loc, scope: &mut Scope) {
        let (f, t) = (scope.full(from), scope.full(to));
        let (Some(a), Some(b)) = (scope.splices.get(&f), scope.splices.get(&t)) else {
            for (n, full) in [(from, &f), (to, &t)] {
                if !scope.splices.contains_key(full) {
                    self.error(loc, format!("CONNECT: {n} is not a splice"));
                }
            }
            return;
        };
        let (outs, ins) = (a.pins_out.clone(), b.pins_in.clone());
        let child_nodes = b.nodes.clone();
        if outs.is_empty() {
            self.error(loc, format!("CONNECT: parent splice {from} has no PIN_OUT"));
            return;
        }
        if ins.is_empty() {
            self.error(loc, format!("CONNECT: child splice {to} has no PIN_IN"));
            return;
        }
        if outs.len() != ins.len() {
            self.error(
                loc,
                format!(
                    "CONNECT: parent splice {from} has {} pin_outs, child splice {to} has {} pin_ins",
                    outs.len(),
                    ins.len()
                ),
            );
            return;
        }
        for pin in 1..=outs.len() as u32 {
            let (Some(ps), Some(cs)) = (outs.get(&pin), ins.get(&pin)) else {
                self.error(
                    loc,
                    format!("CONNECT: pin {pin} is missing in {from} (out) or {to} (in)"),
                );
                return;
            };
            let (ps, cs) = (ps.clone(), cs.clone());
            self.connect_all(&ps, &cs, EdgeKind::Strong, loc);
        }
        for c in child_nodes {
            if self.nodes[c as usize].parents.is_empty() {
                let name = self.nodes[c as usize].spec.name.clone();
                self.error(
                    loc,
                    format!("CONNECT: node {name} of child splice {to} has no parent after the pins are connected; add a PIN_IN or a PARENT"),
                );
            }
        }
    }

    fn finish(mut self) -> Result<DagSpec, LoadErrors> {
        // Descriptions named on JOB lines.
        for b in &mut self.nodes {
            if let Submit::File(f) = &b.spec.submit
                && let Some(text) = self.descs.get(f)
            {
                b.spec.submit = Submit::Inline {
                    name: f.clone(),
                    text: text.clone(),
                };
            }
        }
        // MAXJOBS: the shallowest setting wins, then the last one.
        let mut best: BTreeMap<String, (usize, u32)> = BTreeMap::new();
        for (cat, limit, depth) in &self.maxjobs {
            match best.get(cat) {
                Some(&(d, _)) if d < *depth => {}
                _ => {
                    best.insert(cat.clone(), (*depth, *limit));
                }
            }
        }
        self.spec.maxjobs = best.into_iter().map(|(c, (_, l))| (c, l)).collect();
        // Edges: one per pair, the strongest kind kept.
        let n = self.nodes.len();
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, b) in self.nodes.iter_mut().enumerate() {
            let mut m: BTreeMap<u32, EdgeKind> = BTreeMap::new();
            for &(p, k) in &b.parents {
                let e = m.entry(p).or_insert(k);
                *e = rank_max(*e, k);
            }
            b.spec.parents = m
                .into_iter()
                .map(|(node, kind)| Parent { node, kind })
                .collect();
            for p in &b.spec.parents {
                children[p.node as usize].push(i as u32);
            }
        }
        for (b, c) in self.nodes.iter_mut().zip(children) {
            b.spec.children = c;
        }
        self.spec.nodes = self.nodes.into_iter().map(|b| b.spec).collect();
        // A cycle is DAGMan's to find when the DAG can go no further
        // (DAG_STATUS_CYCLE), unless DAGMAN_STARTUP_CYCLE_DETECT refuses
        // it at once (the caller's choice, from the configuration).
        if self.errors.is_empty()
            && let Some(cycle) = find_cycle(&self.spec)
        {
            let w = Warning {
                loc: self.spec.nodes[cycle[0]].loc.clone(),
                message: format!(
                    "dependency cycle: {}; its nodes never run and the DAG ends with \
                     DAG_STATUS_CYCLE (DAGMAN_STARTUP_CYCLE_DETECT = True refuses it now)",
                    cycle
                        .iter()
                        .map(|&i| self.spec.nodes[i].name.as_str())
                        .collect::<Vec<_>>()
                        .join(" -> ")
                ),
            };
            self.warnings.push(w.clone());
            self.spec.cycle = Some(w);
        }
        if self.errors.is_empty() {
            self.spec.warnings = self.warnings;
            Ok(self.spec)
        } else {
            self.errors
                .sort_by(|a, b| (&a.loc.file, a.loc.line).cmp(&(&b.loc.file, b.loc.line)));
            self.errors.dedup();
            Err(LoadErrors(self.errors))
        }
    }
}

fn rank(k: EdgeKind) -> u8 {
    match k {
        EdgeKind::Strong => 2,
        EdgeKind::Weak => 1,
        EdgeKind::Priority => 0,
    }
}

fn rank_max(a: EdgeKind, b: EdgeKind) -> EdgeKind {
    if rank(b) > rank(a) { b } else { a }
}

/// A cycle as node indices (first = last), if the DAG has one.
/// Iterative, so deep DAGs cannot overflow the stack.
pub fn find_cycle(spec: &DagSpec) -> Option<Vec<usize>> {
    let n = spec.nodes.len();
    let mut color = vec![0u8; n];
    for root in 0..n {
        if color[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        color[root] = 1;
        while let Some(top) = stack.last_mut() {
            let (u, i) = *top;
            if let Some(&c) = spec.nodes[u].children.get(i) {
                top.1 += 1;
                let c = c as usize;
                match color[c] {
                    0 => {
                        color[c] = 1;
                        stack.push((c, 0));
                    }
                    1 => {
                        let start = stack.iter().position(|&(x, _)| x == c).unwrap_or(0);
                        let mut path: Vec<usize> = stack[start..].iter().map(|&(x, _)| x).collect();
                        path.push(c);
                        return Some(path);
                    }
                    _ => {}
                }
            } else {
                color[u] = 2;
                stack.pop();
            }
        }
    }
    None
}

/// Lays a rescue (or save-point) file over a loaded DAG: its `DONE` lines
/// mark nodes done, its `RETRY` lines set the retries left. Node names are
/// full names. Errors name the file and line; nothing changes on error.
pub fn apply_rescue(spec: &mut DagSpec, path: &str, text: &str) -> Result<usize, LoadErrors> {
    let (cmds, errs) = parse_file(
        text,
        &ParseOptions {
            allow_illegal_chars: true,
        },
    );
    let mut errors: Vec<LoadError> = errs
        .into_iter()
        .map(|e| err(path, e.line, e.message))
        .collect();
    let mut done = Vec::new();
    let mut retries = Vec::new();
    for c in &cmds {
        match &c.cmd {
            Command::Done { node } => match spec.find(node) {
                Some(i) => done.push(i),
                None => errors.push(err(path, c.line, format!("DONE: unknown node {node}"))),
            },
            Command::Retry {
                node,
                max,
                unless_exit,
            } => match spec.find(node) {
                Some(i) => retries.push((i, *max, *unless_exit)),
                None => errors.push(err(path, c.line, format!("RETRY: unknown node {node}"))),
            },
            other => errors.push(err(
                path,
                c.line,
                format!(
                    "{} does not belong in a rescue file (only DONE and RETRY)",
                    other.keyword()
                ),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(LoadErrors(errors));
    }
    for &i in &done {
        if matches!(spec.nodes[i].kind, NodeKind::Job | NodeKind::Subdag) {
            spec.nodes[i].done = true;
        }
    }
    for (i, max, unless) in retries {
        spec.nodes[i].retries = max;
        spec.nodes[i].unless_exit = unless;
    }
    Ok(done.len())
}

/// `CONFIG` files named by the top-level DAG files' text (read before
/// loading, since the configuration changes how files load).
pub fn config_files(text: &str) -> Vec<(usize, String)> {
    let (cmds, _) = parse_file(
        text,
        &ParseOptions {
            allow_illegal_chars: true,
        },
    );
    cmds.into_iter()
        .filter_map(|c| match c.cmd {
            Command::Config { file } => Some((c.line, file)),
            _ => None,
        })
        .collect()
}

/// The environment `ENV GET`/`SET` gives the DAG, from the submitter's
/// environment `submitter`.
pub fn env_of(spec: &EnvSpec, submitter: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for k in &spec.get {
        if let Some(v) = submitter.get(k) {
            out.push((k.clone(), v.clone()));
        }
    }
    out.extend(spec.set.iter().cloned());
    out
}
