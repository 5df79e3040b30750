//! `glean dag submit --dry-run` (condor_submit_dag's `-no_submit`): the
//! DAG loaded here, as the invoking user, by the code the station runs,
//! every node's submit description parsed as its first submission will
//! be, and the plan printed (or, with `--json`, given as JSON). Nothing
//! is submitted and no station is needed.

use super::Parsed;
use crate::output::escape::shout;
use gleaner_core::dag::config::DagConfig;
use gleaner_core::dag::run::{Run, SubmitExtras};
use gleaner_core::dag::spec::Submit;
use gleaner_core::dag::{EdgeKind, NodeKind, ScriptKind};
use gleaner_station::home::dagman::{DagFs, Prepared, node_submission, prepare};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// The invoking user's files, read with `std::fs`.
struct LocalFs;

impl DagFs for LocalFs {
    fn read(&mut self, path: &str) -> Result<String, String> {
        use std::io::Read;
        let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
        let mut s = String::new();
        f.take(gleaner_core::dag::load::MAX_FILE_BYTES as u64 + 1)
            .read_to_string(&mut s)
            .map_err(|e| e.to_string())?;
        Ok(s)
    }

    fn list(&mut self, dir: &str) -> Result<Vec<String>, String> {
        Ok(std::fs::read_dir(dir)
            .map_err(|e| e.to_string())?
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .collect())
    }
}

/// One node of the plan, as `--dry-run --json` prints it.
#[derive(serde::Serialize)]
struct PlanNode {
    name: String,
    kind: NodeKind,
    dir: String,
    submit: String,
    done: bool,
    noop: bool,
    parents: Vec<String>,
    scripts: BTreeMap<String, String>,
    retries: u32,
    procs: u32,
    universe: Option<String>,
    executable: Option<String>,
    arguments: Vec<String>,
}

/// Loads the DAG here, parses every node's submit description as it will
/// be submitted first, and prints the plan; nothing is submitted. Exit 1
/// if the station would refuse it.
pub fn dry_run(p: &Parsed, cwd: &str) -> anyhow::Result<ExitCode> {
    let mut fs = LocalFs;
    let prepared: Prepared = match prepare(&p.files, cwd, &p.options, &mut fs) {
        Ok(x) => x,
        Err(problems) => {
            for e in &problems {
                shout!("{e}");
            }
            shout!(
                "glean dag submit: {} error(s); nothing would be submitted",
                problems.len()
            );
            return Ok(ExitCode::from(1));
        }
    };
    if let Some(r) = &prepared.spec.reject {
        shout!(
            "{r}: REJECT: the DAG is marked rejected; DAGMan would end it at once, running nothing"
        );
        return Ok(ExitCode::from(1));
    }
    let owner = std::env::var("USER").unwrap_or_default();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let run = Run::new(
        prepared.spec.clone(),
        prepared.config.clone(),
        0,
        gleaner_core::time::Time::ZERO,
    );
    let mut problems = Vec::new();
    let mut notes: Vec<String> = prepared.notes.clone();
    notes.extend(prepared.spec.warnings.iter().map(|w| w.to_string()));
    let mut plan = Vec::new();
    for (i, n) in prepared.spec.nodes.iter().enumerate() {
        if n.join {
            continue;
        }
        let vars = run.submit_vars(i, &SubmitExtras::default());
        let mut pn = PlanNode {
            name: n.name.clone(),
            kind: n.kind,
            dir: n.dir.clone(),
            submit: match &n.submit {
                Submit::File(f) => f.clone(),
                Submit::Inline { name, .. } => format!("inline {name}"),
                Submit::Dag(f) => format!("DAG {f}"),
            },
            done: n.done,
            noop: n.noop,
            parents: n
                .parents
                .iter()
                .map(|x| {
                    let name = &prepared.spec.nodes[x.node as usize].name;
                    match x.kind {
                        EdgeKind::Strong => name.clone(),
                        EdgeKind::Weak => format!("{name} (weak)"),
                        EdgeKind::Priority => format!("{name} (priority)"),
                    }
                })
                .collect(),
            scripts: [ScriptKind::Pre, ScriptKind::Post, ScriptKind::Hold]
                .into_iter()
                .filter_map(|k| {
                    n.script(k)
                        .map(|s| (k.name().to_string(), s.command.clone()))
                })
                .collect(),
            retries: n.retries,
            procs: 0,
            universe: None,
            executable: None,
            arguments: Vec::new(),
        };
        if !n.done && !n.noop {
            match node_submission(n, &vars, &owner, &env, &mut fs) {
                Ok(Some(sub)) => {
                    pn.procs = sub.proc_count();
                    if let Ok(d) = sub.expand(1)
                        && let Some(d) = d.first()
                    {
                        pn.universe = Some(format!("{:?}", d.universe).to_ascii_lowercase());
                        pn.executable = Some(d.executable.clone());
                        pn.arguments = d.arguments.clone();
                    }
                }
                Ok(None) => {}
                Err(errs) if errs.len() == 1 && errs[0].contains("cannot read the submit file") => {
                    notes.push(format!(
                        "{} (it must exist when the node is submitted)",
                        errs[0]
                    ));
                }
                Err(errs) => problems.extend(errs),
            }
        }
        plan.push(pn);
    }
    for n in &notes {
        shout!("{n}");
    }
    if !problems.is_empty() {
        for e in &problems {
            shout!("{e}");
        }
        shout!(
            "glean dag submit: {} error(s); nothing would be submitted",
            problems.len()
        );
        return Ok(ExitCode::from(1));
    }
    if p.json {
        let v = serde_json::json!({
            "files": prepared.spec.files,
            "nodes": plan,
            "rescue": prepared.rescue,
            "config": prepared.config,
            "maxjobs": prepared.spec.maxjobs,
            "notes": notes,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_plan(&prepared, &plan, &prepared.config);
    Ok(ExitCode::SUCCESS)
}

fn print_plan(prepared: &Prepared, plan: &[PlanNode], cfg: &DagConfig) {
    println!(
        "DAG {} — {} node(s), nothing submitted (dry run)",
        prepared.spec.files.join(" "),
        plan.len()
    );
    if let Some(r) = &prepared.rescue {
        println!("running from {} ({} node(s) done)", r.path, r.done);
    }
    println!(
        "throttles: maxjobs {}, maxidle {}, maxpre {}, maxpost {}",
        cfg.max_jobs_submitted, cfg.max_jobs_idle, cfg.max_pre_scripts, cfg.max_post_scripts
    );
    for n in plan {
        let mut line = format!("  {} [{}]", n.name, n.kind.keyword());
        if n.done {
            line.push_str(" DONE");
        }
        if n.noop {
            line.push_str(" NOOP");
        }
        line.push_str(&format!(" {}", n.submit));
        if let (Some(u), Some(e)) = (&n.universe, &n.executable) {
            line.push_str(&format!(
                " → {} job(s), {u}: {e} {}",
                n.procs,
                n.arguments.join(" ")
            ));
        }
        println!("{}", line.trim_end());
        if !n.parents.is_empty() {
            println!("      after {}", n.parents.join(", "));
        }
        for (k, s) in &n.scripts {
            println!("      {k} {s}");
        }
        if n.retries > 0 {
            println!("      retries {}", n.retries);
        }
    }
}
