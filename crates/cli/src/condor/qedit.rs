//! `condor_qedit {CLUSTER | CLUSTER.PROC | OWNER | -constraint EXPR |
//! -owner NAME | -jobids LIST} ATTR VALUE [ATTR VALUE | ATTR=VALUE]…`:
//! sets job attributes through the station's edit endpoint (which decides
//! what may change: `gleaner_station::home::qedit`), printing HTCondor's
//! `Set attribute "ATTR" for N matching jobs.` (`all` for a cluster, owner
//! or constraint). Every target job is checked (a dry run) before any is
//! changed; a refused attribute fails the whole command with `Transaction
//! failed.  No attributes were set.` and exit status 1.

use super::args::{Cursor, Usage, is_opt, opt_colon};
use super::connect::Target;
use super::select::{Id, Selection, details, now_unix, parse_id};
use crate::output::escape::emit_err;
use gleaner_station::client::{ClientError, JobQuery};
use gleaner_station::home::qedit::{EditRequest, Protection, protection};
use std::ffi::OsString;
use std::process::ExitCode;

#[derive(Debug, Default)]
struct Opts {
    ids: Vec<Id>,
    owner: Option<String>,
    constraints: Vec<String>,
    edits: Vec<(String, String)>,
    dry_run: bool,
    target: Target,
}

fn parse(tool: &str, args: Vec<OsString>) -> Result<Opts, Usage> {
    let mut c = Cursor::new(tool, args)?;
    let mut o = Opts::default();
    let mut bare_names_jobs = true;
    let mut pending_attr: Option<String> = None;
    while let Some(a) = c.next() {
        if let Some(attr) = pending_attr.take() {
            // The value after an attribute, whatever it looks like.
            o.edits.push((attr, a));
            continue;
        }
        if is_opt(&a, "help", 1) {
            return Err(Usage {
                message: usage(tool),
                status: 0,
            });
        } else if is_opt(&a, "name", 1) {
            o.target.name = Some(c.value(&a, true)?);
        } else if is_opt(&a, "pool", 1) {
            let v = c.value(&a, true)?;
            o.target.set_pool(tool, v)?;
        } else if opt_colon(&a, "debug", 1).is_some() || is_opt(&a, "forward", 3) {
        } else if is_opt(&a, "dry-run", 3) {
            o.dry_run = true;
        } else if is_opt(&a, "constraint", 1) {
            o.constraints.push(c.value(&a, false)?);
            bare_names_jobs = false;
        } else if is_opt(&a, "owner", 1) {
            o.owner = Some(c.value(&a, true)?);
            bare_names_jobs = false;
        } else if is_opt(&a, "jobids", 1) {
            let v = c.value(&a, true)?;
            for id in v.split([',', ' ']).filter(|s| !s.is_empty()) {
                o.ids.push(parse_id(tool, id)?);
            }
            bare_names_jobs = false;
        } else if a.starts_with('-') {
            return Err(Usage::new(format!(
                "{tool}: {a} is not a valid option\n{}",
                usage(tool)
            )));
        } else if bare_names_jobs {
            bare_names_jobs = false;
            if a.starts_with(|c: char| c.is_ascii_digit()) {
                o.ids.push(parse_id(tool, &a)?);
                while c
                    .peek()
                    .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
                {
                    let n = c.next().unwrap_or_default();
                    o.ids.push(parse_id(tool, &n)?);
                }
            } else {
                o.owner = Some(a);
            }
        } else if let Some((attr, value)) = a.split_once('=') {
            o.edits
                .push((attr.trim().to_string(), value.trim().to_string()));
        } else {
            pending_attr = Some(a);
        }
    }
    if let Some(attr) = pending_attr {
        return Err(Usage::new(format!(
            "{tool}: no value given for attribute {attr}"
        )));
    }
    if o.ids.is_empty() && o.owner.is_none() && o.constraints.is_empty() {
        return Err(Usage::new(format!(
            "{tool} : Error - there were no jobs specified.\n\tuse -constraint, jobid or owner \
             argument to indicate which jobs to edit\n{}",
            usage(tool)
        )));
    }
    if o.edits.is_empty() {
        return Err(Usage::new(format!(
            "{tool} : Error - no attributes specifed.\n{}",
            usage(tool)
        )));
    }
    Ok(o)
}

fn usage(tool: &str) -> String {
    format!(
        "Usage: {tool} [-name SCHEDD] [-pool URL] [-dry-run] <restriction-list> <edit-list>\n\
         \t<restriction-list>: CLUSTER, CLUSTER.PROC, OWNER, -owner NAME, -jobids LIST, -constraint EXPR\n\
         \t<edit-list>: ATTR VALUE or ATTR=VALUE, repeated"
    )
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let o = parse(tool, args)?;
    // Refused names are refused before the station is asked.
    let mut refused = false;
    for (attr, _) in &o.edits {
        let p = protection(attr);
        if p != Protection::Editable {
            let word = match p {
                Protection::Immutable => "immutable",
                Protection::Secure => "secure",
                _ => "protected",
            };
            emit_err(&format!(
                "Update of {word} attribute \"{attr}\" is not allowed."
            ));
            refused = true;
        }
    }
    if refused {
        emit_err("Transaction failed.  No attributes were set.");
        return Ok(ExitCode::from(1));
    }
    let (client, _) = o.target.station()?;
    let rt = crate::jobs::runtime()?;
    // What to send: a request per job id or cluster; an owner or a
    // constraint is resolved to the jobs it selects now.
    let by_selection = o.owner.is_some() || !o.constraints.is_empty();
    let mut targets: Vec<String> = Vec::new();
    if by_selection {
        let sel = Selection {
            ids: o.ids.clone(),
            owners: o.owner.iter().cloned().collect(),
            constraints: o.constraints.clone(),
            all_users: true,
        };
        let exprs = sel.exprs(tool)?;
        let me = rt.block_on(client.whoami())?;
        // A constraint alone: the caller's own jobs (an administrator's:
        // everyone's), as HTCondor's only-my-jobs rule has it.
        let owner = o
            .owner
            .clone()
            .or_else(|| (me.role != "admin").then(|| me.name.clone()));
        let jobs = rt.block_on(client.jobs(&JobQuery {
            owner,
            state: None,
            all: false,
        }))?;
        let jobs: Vec<_> = jobs
            .into_iter()
            .filter(|j| sel.admits(j.id, &j.owner))
            .collect();
        let now = now_unix();
        for (d, ad) in rt.block_on(details(&client, &jobs))? {
            if Selection::holds(&exprs, &ad, now) {
                targets.push(d.job.id.to_string());
            }
        }
        if targets.is_empty() {
            emit_err(&format!(
                "No jobs match the constraint: {}",
                o.constraints.join(" && ")
            ));
            emit_err("Transaction failed.  No attributes were set.");
            return Ok(ExitCode::from(1));
        }
    } else {
        for id in &o.ids {
            targets.push(match id {
                Id::Cluster(c) => c.to_string(),
                Id::Job(j) => j.to_string(),
            });
        }
    }
    let req = EditRequest {
        attrs: o.edits.clone(),
        dry_run: true,
    };
    // Every target first as a dry run: nothing changes unless all may.
    for t in &targets {
        if let Err(e) = rt.block_on(client.edit(t, &req)) {
            report(tool, t, &e);
            emit_err("Transaction failed.  No attributes were set.");
            return Ok(ExitCode::from(1));
        }
    }
    let mut count = 0usize;
    if !o.dry_run {
        let req = EditRequest {
            attrs: o.edits.clone(),
            dry_run: false,
        };
        for t in &targets {
            match rt.block_on(client.edit(t, &req)) {
                Ok(r) => count += r.jobs.len(),
                Err(e) => {
                    report(tool, t, &e);
                    emit_err("Queue transaction failed.  No attributes were set.");
                    return Ok(ExitCode::from(1));
                }
            }
        }
    }
    let all = by_selection || o.ids.iter().any(|i| matches!(i, Id::Cluster(_)));
    let tag = if o.dry_run { "Can " } else { "" };
    for (attr, _) in &o.edits {
        let n = if all || count == 0 {
            "all".to_string()
        } else {
            count.to_string()
        };
        crate::output::escape::emit(&format!(
            "{tag}Set attribute \"{attr}\" for {n} matching jobs."
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// A refusal as HTCondor words it.
fn report(tool: &str, target: &str, e: &ClientError) {
    match e {
        ClientError::Api { status: 403, body } | ClientError::Api { status: 400, body } => {
            emit_err(&body.error.message);
        }
        ClientError::Api { status: 404, .. } => {
            emit_err(&format!("{tool}: job {target} not found"));
        }
        other => emit_err(&format!("{tool}: {target}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Result<Opts, Usage> {
        parse("condor_qedit", v.iter().map(OsString::from).collect())
    }

    #[test]
    fn restrictions_then_edits() {
        let o = opts(&["12.0", "13", "JobPrio", "5", "Foo=\"bar\"", "Neg", "-3"]).unwrap();
        assert_eq!(o.ids.len(), 2);
        assert_eq!(
            o.edits,
            [
                ("JobPrio".to_string(), "5".to_string()),
                ("Foo".to_string(), "\"bar\"".to_string()),
                ("Neg".to_string(), "-3".to_string())
            ]
        );
        let o = opts(&["alice", "JobPrio", "1"]).unwrap();
        assert_eq!(o.owner.as_deref(), Some("alice"));
        let o = opts(&["-constraint", "JobStatus == 5", "RequestMemory", "2048"]).unwrap();
        assert_eq!(o.constraints.len(), 1);
        assert!(opts(&["12.0"]).is_err());
        assert!(opts(&["JobPrio", "1"]).is_err());
        assert!(opts(&["12.0", "JobPrio"]).is_err());
    }
}
