//! Submitting: a whole DAG (its DAGMan job and its rows, [`create`]) and
//! one node's jobs when the run asks ([`submit`]). Everything the DAG
//! names is read as its owner ([`OwnerDagFs`]); a node's submit
//! description is read when the node is submitted (a PRE script may write
//! it), with the node's macros, and its cluster is queued in the
//! transaction that records it on the node. A SUBDAG node's "job" is
//! another DAG: its DAGMan job is the node's cluster.

use super::manager::Manager;
use super::prepare::{DagFs, DagOptions, Prepared, node_submission, prepare};
use super::store::{self, Extras};
use crate::home::Home;
use crate::home::as_owner::{OwnerFsError, as_owner};
use crate::home::submit_check::{Strictness, check_paths, expand};
use crate::home::user_log::{UserEvent, spawn_user_log};
use crate::queue::QueueError;
use crate::userfs::{AsUser, UserFs};
use gleaner_core::dag::NodeKind;
use gleaner_core::dag::load::{base_of, dir_of, join_path};
use gleaner_core::dag::run::{Event, Proc, Run, RunState};
use gleaner_core::dag::spec::Submit;
use gleaner_core::time::Time;
use gleaner_edge::ApiError;
use gleaner_proto::job::{JobDescription, Universe};
use rusqlite::params;
use std::collections::BTreeMap;
use std::io::Read;

/// A DAG file larger than this is refused (the loader's own bound).
const MAX_READ: u64 = gleaner_core::dag::load::MAX_FILE_BYTES as u64;

/// The owner's files, read on the owner's `userfs` thread.
pub struct OwnerDagFs<'a, 'b>(pub &'a AsUser<'b>);

impl DagFs for OwnerDagFs<'_, '_> {
    fn read(&mut self, path: &str) -> Result<String, String> {
        let f = self
            .0
            .open_read(std::path::Path::new(path))
            .map_err(|e| e.to_string())?;
        let mut s = String::new();
        f.take(MAX_READ + 1)
            .read_to_string(&mut s)
            .map_err(|e| format!("{path}: {e}"))?;
        if s.len() as u64 > MAX_READ {
            return Err(format!("{path}: larger than {MAX_READ} bytes"));
        }
        Ok(s)
    }

    fn list(&mut self, dir: &str) -> Result<Vec<String>, String> {
        let rd = std::fs::read_dir(dir).map_err(|e| format!("{dir}: {e}"))?;
        Ok(rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect())
    }
}

fn owner_error(e: OwnerFsError) -> ApiError {
    ApiError::bad("files", e.to_string())
}

/// Loads a submission as `owner` (see [`prepare`]).
pub(super) async fn prepare_as(
    owner: &str,
    files: Vec<String>,
    cwd: String,
    opts: DagOptions,
) -> Result<Result<Prepared, Vec<String>>, ApiError> {
    as_owner(owner, move |u| {
        let mut fs = OwnerDagFs(u);
        Ok(prepare(&files, &cwd, &opts, &mut fs))
    })
    .await
    .map_err(owner_error)
}

/// The DAGMan job of a DAG: `universe = scheduler`, its own user log
/// `FILE.dagman.log` (HTCondor's tests and tools follow it there).
fn dag_job(owner: &str, prepared: &Prepared, extras: &Extras) -> JobDescription {
    let primary = prepared.spec.files.first().cloned().unwrap_or_default();
    let mut args: Vec<String> = vec![
        "-p".into(),
        "0".into(),
        "-f".into(),
        "-l".into(),
        ".".into(),
    ];
    for f in &prepared.spec.files {
        args.push("-Dag".into());
        args.push(f.clone());
    }
    let mut custom: BTreeMap<String, String> = BTreeMap::new();
    custom.insert(
        "DAG_NodesTotal".into(),
        prepared.spec.nodes.len().to_string(),
    );
    custom.insert(
        "OtherJobRemoveRequirements".into(),
        "\"DAGManJobId =?= $(cluster)\"".into(),
    );
    for (k, v) in &prepared.spec.set_job_attrs {
        custom.insert(k.clone(), v.clone());
    }
    JobDescription {
        owner: owner.to_string(),
        universe: Universe::Scheduler,
        executable: "condor_dagman".into(),
        arguments: args,
        iwd: Some(prepared.spec.cwd.clone()),
        log: Some(format!("{primary}.dagman.log")),
        batch_name: extras.submit.batch_name.clone(),
        custom_attrs: custom,
        request_cpus: 1,
        ..Default::default()
    }
}

/// Creates a DAG: its DAGMan job (queued running) and its rows, in one
/// transaction. Returns its id.
pub(super) fn create(
    home: &Home,
    owner: &str,
    prepared: &Prepared,
    mut extras: Extras,
    at: Time,
) -> Result<u64, QueueError> {
    let desc = dag_job(owner, prepared, &extras);
    let mut new_id = 0u64;
    let mut q = home.queue();
    q.submit_linked(
        at,
        |_| Ok(vec![desc]),
        |tx, ids| {
            let id = ids.first().map_or(0, |j| j.cluster);
            new_id = id;
            // Node jobs join the DAG's batch: `FILE+ID` unless named.
            if extras.submit.batch_name.is_none() {
                let primary = prepared.spec.files.first().map_or("", String::as_str);
                extras.submit.batch_name = Some(format!("{}+{id}", base_of(primary)));
            }
            let run = Run::new(prepared.spec.clone(), prepared.config.clone(), id, at);
            let st: RunState = run.state().clone();
            store::insert(
                tx,
                id,
                owner,
                &prepared.spec,
                &prepared.config,
                &extras,
                &st,
                at,
            )?;
            // The DAGMan job runs from the start: it is the DAG manager.
            let cluster = i64::try_from(id).map_err(|_| QueueError::Range("cluster id"))?;
            tx.execute(
                "UPDATE jobs SET state = ?2, started_at = ?3, run_count = 1, updated_at = ?3 \
                 WHERE cluster = ?1",
                params![
                    cluster,
                    gleaner_proto::job::JobStateKind::Running.code(),
                    store::time_sql(at)?
                ],
            )?;
            Ok(())
        },
    )?;
    Ok(new_id)
}

/// What DAGMan writes for a DAG: `FILE.dagman.out` (or in `-outfile_dir`).
pub(super) fn out_file(primary: &str, opts: &DagOptions) -> String {
    match &opts.outfile_dir {
        Some(d) => join_path(
            &dir_of(primary),
            &format!("{d}/{}.dagman.out", base_of(primary)),
        ),
        None => format!("{primary}.dagman.out"),
    }
}

/// The DAG's environment: `-import_env` (all), `-include_env` and `ENV
/// GET` names, then `-insert_env` and `ENV SET` values.
pub(super) fn dag_env(
    prepared: &Prepared,
    opts: &DagOptions,
    submitter: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    // What DAGMan's own job takes from condor_submit_dag's environment.
    const ALWAYS: &[&str] = &["PATH", "PYTHONPATH", "TZ", "HOME", "USER", "LANG", "LC_ALL"];
    for (k, v) in submitter {
        let keep = opts.import_env
            || ALWAYS.contains(&k.as_str())
            || k.starts_with("_CONDOR_")
            || k.starts_with("PERL")
            || k.starts_with("PEGASUS_")
            || k == "CONDOR_CONFIG"
            || opts.include_env.contains(k);
        if keep {
            env.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in gleaner_core::dag::load::env_of(&prepared.spec.env, submitter) {
        env.insert(k, v);
    }
    for (k, v) in &opts.insert_env {
        env.insert(k.clone(), v.clone());
    }
    env
}

/// Submits node `node` of DAG `id`: its submit description read and
/// parsed as the owner with the node's macros, its paths checked, its
/// cluster queued in the transaction that records it on the node. The
/// events for the run (`Submitted` or `SubmitFailed`).
pub(super) async fn submit(m: &mut Manager, id: u64, node: usize, at: Time) -> Vec<Event> {
    let Some(live) = m.dags.get(&id) else {
        return Vec::new();
    };
    let spec = live.run.spec().nodes[node].clone();
    let owner = live.owner.clone();
    let failed = |error: String| vec![Event::SubmitFailed { node, error }];
    if spec.kind == NodeKind::Subdag {
        return submit_subdag(m, id, node, at).await;
    }
    let vars = live.run.submit_vars(node, &live.extras.submit);
    let env = live.extras.env.clone();
    let prohibit = live.run.config().prohibit_multi_jobs;
    let spec2 = spec.clone();
    let o2 = owner.clone();
    let parsed = as_owner(&owner, move |u| {
        let mut fs = OwnerDagFs(u);
        Ok(node_submission(&spec2, &vars, &o2, &env, &mut fs))
    })
    .await;
    let sub = match parsed {
        Ok(Ok(Some(s))) => s,
        Ok(Ok(None)) => return failed("node has no jobs to submit".into()),
        Ok(Err(errs)) => return failed(errs.join("; ")),
        Err(e) => return failed(e.to_string()),
    };
    if prohibit && sub.proc_count() > 1 {
        return failed(
            "Submit generated multiple job procs; disallowed by DAGMAN_PROHIBIT_MULTI_JOBS setting"
                .into(),
        );
    }
    // The job tag of the jobstate log, from the submit description.
    if let Some(live) = m.dags.get_mut(&id)
        && live.run.spec().jobstate_log.is_some()
        && let Ok(descs) = sub.expand(0)
        && let Some(d) = descs.first()
    {
        let attrs: Vec<(String, String)> = d
            .custom_attrs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        live.extras
            .job_tags
            .insert(node, gleaner_core::dag::files::jobstate::job_tag(&attrs));
    }
    // Paths checked as the owner, as condor_submit does: the program
    // must be there; inputs may be a parent's outputs yet to come.
    let descs = match expand(&sub, 0, &owner, Some(&spec.dir)) {
        Ok(d) => d,
        Err(e) => return failed(e.to_string()),
    };
    let fs = match UserFs::for_user(&owner) {
        Ok(f) => f,
        Err(e) => return failed(e.to_string()),
    };
    if let Err(e) = check_paths(
        &fs,
        &descs,
        Strictness::MissingAllowed,
        &format!("node {}", spec.name),
    )
    .await
    {
        return failed(e.to_string());
    }
    if let Some(d) = descs.first()
        && (d.universe.is_local() || d.transfer_executable)
    {
        let exe = program_path(d);
        let res = crate::home::as_owner::with_fs(&fs, move |u| u.check_readable(&exe)).await;
        if let Err(e) = res {
            return failed(format!("executable: {e}"));
        }
    }
    // Queued with the node's row in one transaction.
    let Some(live) = m.dags.get(&id) else {
        return Vec::new();
    };
    let mut row = live.run.node(node).cloned().unwrap_or_default();
    let dir = spec.dir.clone();
    let o3 = owner.clone();
    let queued = m.home.queue().submit_linked(
        at,
        |cluster| {
            let mut descs = sub.expand(cluster)?;
            for d in &mut descs {
                d.owner = o3.clone();
                gleaner_proto::job::resolve_submit_paths(d, Some(&dir));
            }
            Ok(descs)
        },
        |tx, ids| {
            row.submitting = false;
            row.cluster = ids.first().map(|j| j.cluster);
            row.procs = vec![Proc::Idle; ids.len()];
            store::save_node_in(tx, id, node, &row)
        },
    );
    match queued {
        Ok(ids) => {
            let cluster = ids.first().map_or(0, |j| j.cluster);
            for j in &ids {
                spawn_user_log(
                    &m.home,
                    *j,
                    at,
                    UserEvent::Submitted {
                        host: m.home.address.clone(),
                    },
                );
            }
            m.home.news().notify_one();
            vec![Event::Submitted {
                node,
                cluster,
                procs: u32::try_from(ids.len()).unwrap_or(u32::MAX),
            }]
        }
        Err(e) => failed(e.to_string()),
    }
}

/// The program a local job runs (relative to its initial directory).
fn program_path(d: &JobDescription) -> std::path::PathBuf {
    match &d.iwd {
        Some(iwd) if !d.executable.starts_with('/') => {
            std::path::Path::new(iwd).join(&d.executable)
        }
        _ => std::path::PathBuf::from(&d.executable),
    }
}

/// The lines `FILE.dagman.out` starts with: DAGMan's banner, its
/// settings, the DAG files, the rescue DAG used, notes and the node count.
pub(super) async fn write_header(
    owner: &str,
    out: &str,
    id: u64,
    prepared: &Prepared,
    notes: &[String],
    at: Time,
) {
    let mut header = vec![
        "******************************************************".to_string(),
        format!("** condor_scheduniv_exec.{id}.0 (CONDOR_DAGMAN) STARTING UP"),
        format!("** Gleaner's DAG manager, for {owner}"),
        "******************************************************".to_string(),
    ];
    header.extend(prepared.config.settings());
    for f in &prepared.spec.files {
        header.push(format!("DAG file: {f}"));
    }
    if let Some(r) = &prepared.rescue {
        header.push(format!("USING RESCUE DAG {}", r.path));
    }
    header.extend(notes.iter().cloned());
    header.push(format!(
        "Dag contains {} total nodes",
        prepared.spec.nodes.len()
    ));
    super::outputs::append(owner, out, super::outputs::stamped(at, &header)).await;
}

/// A SUBDAG node: its DAG is submitted (from the node's directory, with
/// the deep options of the parent); its DAGMan job is the node's job.
async fn submit_subdag(m: &mut Manager, id: u64, node: usize, at: Time) -> Vec<Event> {
    let Some(live) = m.dags.get(&id) else {
        return Vec::new();
    };
    let spec = live.run.spec().nodes[node].clone();
    let Submit::Dag(file) = &spec.submit else {
        return vec![Event::SubmitFailed {
            node,
            error: "a SUBDAG node without a DAG file".into(),
        }];
    };
    let owner = live.owner.clone();
    let parent_opts = &live.extras.options;
    // The options condor_submit_dag passes down to sub-DAGs; `-f` not on
    // a retry, which runs the sub-DAG from its rescue DAG.
    let retry = live.run.node(node).map_or(0, |n| n.retries);
    let opts = DagOptions {
        force: parent_opts.force && retry == 0,
        use_dag_dir: parent_opts.use_dag_dir,
        batch_name: parent_opts.batch_name.clone(),
        auto_rescue: parent_opts.auto_rescue,
        do_rescue_from: parent_opts.do_rescue_from,
        notification: parent_opts.notification.clone(),
        suppress_notification: parent_opts.suppress_notification,
        include_env: parent_opts.include_env.clone(),
        insert_env: parent_opts.insert_env.clone(),
        import_env: parent_opts.import_env,
        ..Default::default()
    };
    let env = live.extras.env.clone();
    let prepared =
        match prepare_as(&owner, vec![file.clone()], spec.dir.clone(), opts.clone()).await {
            Ok(Ok(p)) => p,
            Ok(Err(errs)) => {
                return vec![Event::SubmitFailed {
                    node,
                    error: errs.join("; "),
                }];
            }
            Err(e) => {
                return vec![Event::SubmitFailed {
                    node,
                    error: e.to_string(),
                }];
            }
        };
    let primary = prepared.spec.files.first().cloned().unwrap_or_default();
    let extras = Extras {
        env: dag_env(&prepared, &opts, &env),
        out_file: out_file(&primary, &opts),
        options: opts,
        rescue: prepared.rescue.clone(),
        parent_node: Some((id, node)),
        dag_file: file.clone(),
        ..Default::default()
    };
    let out = extras.out_file.clone();
    let created = create(&m.home, &owner, &prepared, extras, at);
    match created {
        Ok(sub) => {
            let mut notes = prepared.notes.clone();
            notes.extend(prepared.spec.warnings.iter().map(|w| w.to_string()));
            write_header(&owner, &out, sub, &prepared, &notes, at).await;
            // The node's row names its cluster: the sub-DAG's job.
            if let Some(live) = m.dags.get(&id) {
                let mut row = live.run.node(node).cloned().unwrap_or_default();
                row.submitting = false;
                row.cluster = Some(sub);
                row.procs = vec![Proc::Idle];
                let _ = store::save_node(&mut m.home.queue(), id, node, &row);
            }
            m.home.dag_wake.notify_one();
            vec![Event::Submitted {
                node,
                cluster: sub,
                procs: 1,
            }]
        }
        Err(e) => vec![Event::SubmitFailed {
            node,
            error: e.to_string(),
        }],
    }
}
