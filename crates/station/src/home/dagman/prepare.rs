//! A DAG submission made ready to run, by `glean dag submit` (its
//! `--dry-run`) and by the station alike: condor_submit_dag's options,
//! the DAG's configuration (`CONFIG`, `-config`), which rescue DAG (or
//! save file) to run from, the DAG files loaded into one DAG
//! ([`gleaner_core::dag::load`]), and every node's submit description
//! parsed as it will be submitted ([`node_submission`]).
//!
//! File access is the caller's ([`DagFs`]): the CLI reads as the invoking
//! user, the station as the DAG's owner.

use gleaner_core::dag::config::{self, DagConfig};
use gleaner_core::dag::load::{LoadOptions, base_of, config_files, dir_of, join_path};
use gleaner_core::dag::macros::SubmitVar;
use gleaner_core::dag::rescue::{last_rescue_num, rescue_name};
use gleaner_core::dag::spec::{DagSpec, NodeSpec, Submit};
use gleaner_core::dag::{NodeKind, apply_rescue, load};
use gleaner_proto::submit::{
    ClusterSubmission, SubmitContext, SubmitErrorKind, SubmitErrors, parse_submit,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How files are read (absolute paths).
pub trait DagFs {
    fn read(&mut self, path: &str) -> Result<String, String>;
    /// The names in a directory.
    fn list(&mut self, dir: &str) -> Result<Vec<String>, String>;
}

/// condor_submit_dag's options (HTCondor's spelling in `glean dag
/// submit`; the ones that change the run).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DagOptions {
    pub max_idle: Option<u32>,
    pub max_jobs: Option<u32>,
    pub max_pre: Option<u32>,
    pub max_post: Option<u32>,
    pub max_hold: Option<u32>,
    pub priority: Option<i32>,
    pub batch_name: Option<String>,
    pub notification: Option<String>,
    pub suppress_notification: Option<bool>,
    /// `-append`: submit commands for the DAG's own job.
    pub append: Vec<String>,
    /// `-insert_sub_file`: a file of such commands.
    pub insert_sub_file: Option<String>,
    /// `-config`.
    pub config: Option<String>,
    /// `-AutoRescue 0|1` (default: `DAGMAN_AUTO_RESCUE`, true).
    pub auto_rescue: Option<bool>,
    /// `-DoRescueFrom N`.
    pub do_rescue_from: Option<u32>,
    /// `-RescueFile FILE`.
    pub rescue_file: Option<String>,
    /// `-load_save FILE`.
    pub load_save: Option<String>,
    /// `-f`: no rescue DAG is used (older ones are renamed `.old`).
    pub force: bool,
    /// `-UseDagDir`.
    pub use_dag_dir: bool,
    /// `-AlwaysRunPost` / `-DontAlwaysRunPost`.
    pub always_run_post: Option<bool>,
    /// `-include_env`: variables copied from the submitter's environment.
    pub include_env: Vec<String>,
    /// `-insert_env`: variables set.
    pub insert_env: Vec<(String, String)>,
    /// `-import_env`: the whole submitter's environment.
    pub import_env: bool,
    /// `-outfile_dir`: where `FILE.dagman.out` goes.
    pub outfile_dir: Option<String>,
}

/// The rescue DAG (or save file) a submission runs from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RescueUsed {
    pub path: String,
    /// Its number (0 for a save file or `-RescueFile`).
    pub number: u32,
    /// Nodes it marked done.
    pub done: usize,
}

/// A submission ready to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    pub spec: DagSpec,
    pub config: DagConfig,
    pub rescue: Option<RescueUsed>,
    /// Notes on the configuration (settings without effect …), as
    /// `file:line: message`.
    pub notes: Vec<String>,
    /// Whether several DAG files were submitted as one.
    pub multi: bool,
}

fn err_at(file: &str, line: usize, msg: impl std::fmt::Display) -> String {
    if line == 0 {
        format!("{file}: {msg}")
    } else {
        format!("{file}:{line}: {msg}")
    }
}

/// Loads a submission: configuration, rescue, DAG files. Every problem,
/// each naming its file and line, or the prepared DAG.
pub fn prepare(
    files: &[String],
    cwd: &str,
    opts: &DagOptions,
    fs: &mut dyn DagFs,
) -> Result<Prepared, Vec<String>> {
    if files.is_empty() {
        return Err(vec!["no DAG file given".into()]);
    }
    let paths: Vec<String> = files.iter().map(|f| join_path(cwd, f)).collect();
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    // The configuration first: it changes how the files load.
    let mut configs: Vec<(String, usize, String)> = Vec::new();
    for p in &paths {
        match fs.read(p) {
            Ok(text) => {
                let base = if opts.use_dag_dir {
                    dir_of(p)
                } else {
                    cwd.to_string()
                };
                for (line, f) in config_files(&text) {
                    configs.push((p.clone(), line, join_path(&base, &f)));
                }
            }
            Err(e) => problems.push(err_at(p, 0, format!("cannot read: {e}"))),
        }
    }
    if let Some(c) = &opts.config {
        configs.push(("-config".into(), 0, join_path(cwd, c)));
    }
    let mut cfg = DagConfig::default();
    let mut chosen: Option<String> = None;
    for (file, line, c) in &configs {
        match &chosen {
            Some(prev) if prev != c => problems.push(err_at(
                file,
                *line,
                format!("a second configuration file {c} (already {prev}): a DAG has one"),
            )),
            Some(_) => {}
            None => {
                chosen = Some(c.clone());
                match fs.read(c) {
                    Ok(text) => match config::read(&mut cfg, &text) {
                        Ok(ws) => {
                            notes.extend(ws.into_iter().map(|w| err_at(c, w.line, w.message)))
                        }
                        Err(es) => {
                            problems.extend(es.into_iter().map(|e| err_at(c, e.line, e.message)))
                        }
                    },
                    Err(e) => problems.push(err_at(
                        file,
                        *line,
                        format!("cannot read configuration file {c}: {e}"),
                    )),
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    // condor_submit_dag's options override the configuration.
    if let Some(v) = opts.max_idle {
        cfg.max_jobs_idle = v;
    }
    if let Some(v) = opts.max_jobs {
        cfg.max_jobs_submitted = v;
    }
    if let Some(v) = opts.max_pre {
        cfg.max_pre_scripts = v;
    }
    if let Some(v) = opts.max_post {
        cfg.max_post_scripts = v;
    }
    if let Some(v) = opts.max_hold {
        cfg.max_hold_scripts = v;
    }
    if let Some(v) = opts.priority {
        cfg.default_priority = v;
    }
    if let Some(v) = opts.always_run_post {
        cfg.always_run_post = v;
    }
    if let Some(v) = opts.suppress_notification {
        cfg.suppress_notification = v;
    }
    let multi = files.len() > 1;
    let lopts = LoadOptions {
        cwd: cwd.to_string(),
        use_dag_dir: opts.use_dag_dir,
        munge: cfg.munge_node_names,
        allow_illegal_chars: cfg.allow_illegal_chars,
        use_join_nodes: cfg.use_join_nodes,
        append_vars: cfg.default_append_vars,
    };
    let mut read = |p: &str| fs.read(p);
    let mut spec = match load(files, &lopts, &mut read) {
        Ok(s) => s,
        Err(e) => return Err(e.0.iter().map(|e| e.to_string()).collect()),
    };
    // REJECT is DAGMan's to act on: the DAG's run ends at once (exit 1).
    if let Some(r) = &spec.reject {
        notes.push(format!(
            "{r}: REJECT: the DAG is marked rejected: it ends at once, running nothing"
        ));
    }
    if cfg.startup_cycle_detect
        && let Some(c) = &spec.cycle
    {
        let what = c.message.split(';').next().unwrap_or_default();
        return Err(vec![format!(
            "{}: {what} (DAGMAN_STARTUP_CYCLE_DETECT is set)",
            c.loc
        )]);
    }
    let rescue = choose_rescue(&paths[0], multi, cwd, opts, &cfg, fs)?;
    let rescue = match rescue {
        Some((path, number)) => {
            let text = fs
                .read(&path)
                .map_err(|e| vec![err_at(&path, 0, format!("cannot read: {e}"))])?;
            let done = apply_rescue(&mut spec, &path, &text)
                .map_err(|e| e.0.iter().map(|e| e.to_string()).collect::<Vec<_>>())?;
            Some(RescueUsed { path, number, done })
        }
        None => None,
    };
    Ok(Prepared {
        spec,
        config: cfg,
        rescue,
        notes,
        multi,
    })
}

/// Which rescue DAG or save file to run from: `-load_save`, `-RescueFile`,
/// `-DoRescueFrom N`, or with auto-rescue the newest `FILE.rescueNNN`
/// beside the primary DAG file (none with `-f`).
fn choose_rescue(
    primary: &str,
    multi: bool,
    cwd: &str,
    opts: &DagOptions,
    cfg: &DagConfig,
    fs: &mut dyn DagFs,
) -> Result<Option<(String, u32)>, Vec<String>> {
    let exclusive = [
        opts.load_save.is_some(),
        opts.rescue_file.is_some(),
        opts.do_rescue_from.is_some(),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    if exclusive > 1 {
        return Err(vec![
            "-load_save, -RescueFile and -DoRescueFrom exclude each other".into(),
        ]);
    }
    if let Some(s) = &opts.load_save {
        let path = if s.contains('/') {
            join_path(cwd, s)
        } else {
            join_path(cwd, &format!("save_files/{s}"))
        };
        return Ok(Some((path, 0)));
    }
    if let Some(r) = &opts.rescue_file {
        return Ok(Some((join_path(cwd, r), 0)));
    }
    if let Some(n) = opts.do_rescue_from {
        if n == 0 {
            return Ok(None);
        }
        let path = rescue_name(primary, multi, n);
        return Ok(Some((path, n)));
    }
    if opts.force || !opts.auto_rescue.unwrap_or(cfg.auto_rescue) {
        return Ok(None);
    }
    let dir = dir_of(primary);
    let names = fs.list(&dir).unwrap_or_default();
    let n = last_rescue_num(&names, primary, multi, cfg.max_rescue_num.max(1));
    Ok((n > 0).then(|| (rescue_name(primary, multi, n), n)))
}

/// A node's submit description, parsed as DAGMan submits it: the node's
/// macros (`vars`, from [`gleaner_core::dag::run::Run::submit_vars`])
/// defined before the description or just before its `queue`, files read
/// from the node's directory. `None` for nodes without jobs of their own
/// (NOOP, sub-DAG). Errors are `file:line: message` lines.
pub fn node_submission(
    node: &NodeSpec,
    vars: &[SubmitVar],
    owner: &str,
    env: &BTreeMap<String, String>,
    fs: &mut dyn DagFs,
) -> Result<Option<ClusterSubmission>, Vec<String>> {
    if node.noop || node.kind == NodeKind::Subdag {
        return Ok(None);
    }
    let (name, text) = match &node.submit {
        Submit::File(f) => {
            let path = join_path(&node.dir, f);
            match fs.read(&path) {
                Ok(t) => (path, t),
                Err(e) => {
                    return Err(vec![format!(
                        "{path}: cannot read the submit file of node {}: {e}",
                        node.name
                    )]);
                }
            }
        }
        Submit::Inline { name, text } => {
            (format!("{} (inline {name})", node.loc.file), text.clone())
        }
        Submit::Dag(_) => return Ok(None),
    };
    let defines: Vec<(String, String)> = vars
        .iter()
        .filter(|v| !v.append)
        .map(|v| (v.key.clone(), v.value.clone()))
        .collect();
    let appends: Vec<(String, String)> = vars
        .iter()
        .filter(|v| v.append)
        .map(|v| (v.key.clone(), v.value.clone()))
        .collect();
    let ctx = SubmitContext::new(name.clone(), owner)
        .with_env(env.clone())
        .with_dir(&node.dir)
        .with_defines(defines)
        .with_appends(appends);
    let parsed = match parse_submit(&text, &ctx) {
        // DAGMan submits a description without a queue statement as if it
        // ended with `queue` (one job).
        Err(SubmitErrors(errs))
            if errs
                .iter()
                .all(|e| matches!(e.kind, SubmitErrorKind::NoQueue)) =>
        {
            parse_submit(&format!("{text}\nqueue\n"), &ctx)
        }
        r => r,
    };
    match parsed {
        Ok(s) => Ok(Some(s)),
        Err(SubmitErrors(errs)) => Err(errs
            .into_iter()
            .map(|e| format!("{e} (node {})", node.name))
            .collect()),
    }
}

/// The rescue files of a DAG above `number` (`FILE.rescue00N`), renamed
/// `.old` when a DAG runs from an older one and fails again.
pub fn newer_rescues(names: &[String], primary: &str, multi: bool, number: u32) -> Vec<String> {
    let base = base_of(primary);
    let prefix = format!("{base}{}.rescue", if multi { "_multi" } else { "" });
    names
        .iter()
        .filter_map(|n| {
            let digits = n.strip_prefix(&prefix)?;
            let k: u32 = digits.parse().ok().filter(|_| digits.len() == 3)?;
            (k > number).then(|| join_path(&dir_of(primary), n))
        })
        .collect()
}
