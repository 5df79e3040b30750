//! `condor_rm`, `condor_hold`, `condor_release`: act on jobs named by id
//! (`Job 12.0 marked for removal`), by cluster (`All jobs in cluster 12
//! have been marked for removal`), by owner (`All jobs of user alice have
//! been held`), by `-constraint EXPR` (`All jobs matching constraint
//! (EXPR) have been released`) or all of the caller's (`-all`), with
//! HTCondor's sentences and exit status (1 when any named job could not
//! be acted on). `-reason` is recorded; `-forcex` forgets a job already
//! removed (Gleaner removes at once, so it only confirms); `-totals`
//! prints HTCondor's count line.

use super::args::{Cursor, Usage, is_opt, opt_colon};
use super::connect::Target;
use super::select::{Id, Selection, details, now_unix, parse_id};
use crate::output::escape::emit;
use gleaner_proto::api::ActionResponse;
use gleaner_proto::job::{JobId, JobState};
use gleaner_station::client::{ClientError, JobQuery, StationClient};
use std::ffi::OsString;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Rm,
    ForceRm,
    Hold,
    Release,
}

impl Action {
    /// HTCondor's past participle (`actionWord(mode, true)`).
    fn done(self) -> &'static str {
        match self {
            Action::Rm => "marked for removal",
            Action::ForceRm => "removed locally (remote state unknown)",
            Action::Hold => "held",
            Action::Release => "released",
        }
    }
    /// The verb (`actionWord(mode, false)`).
    fn verb(self) -> &'static str {
        match self {
            Action::Rm | Action::ForceRm => "remove",
            Action::Hold => "hold",
            Action::Release => "release",
        }
    }
}

#[derive(Debug)]
struct Opts {
    action: Action,
    ids: Vec<JobId>,
    clusters: Vec<u64>,
    users: Vec<String>,
    constraints: Vec<String>,
    all: bool,
    held_only: bool,
    reason: Option<String>,
    totals: bool,
    target: Target,
}

fn parse(tool: &str, args: Vec<OsString>) -> Result<Opts, Usage> {
    let action = match tool {
        "condor_hold" => Action::Hold,
        "condor_release" => Action::Release,
        _ => Action::Rm,
    };
    let mut c = Cursor::new(tool, args)?;
    let mut o = Opts {
        action,
        ids: Vec::new(),
        clusters: Vec::new(),
        users: Vec::new(),
        constraints: Vec::new(),
        all: false,
        held_only: false,
        reason: None,
        totals: false,
        target: Target::default(),
    };
    while let Some(a) = c.next() {
        if !a.starts_with('-') {
            if o.all {
                return Err(Usage::new(format!(
                    "{tool}: can't mix -all with other constraints"
                )));
            }
            if a.starts_with(|c: char| c.is_ascii_digit()) {
                match parse_id(tool, &a)? {
                    Id::Cluster(0) => {
                        return Err(Usage::new(format!("Invalid cluster # from {a}.")));
                    }
                    Id::Cluster(cl) => o.clusters.push(cl),
                    Id::Job(j) => o.ids.push(j),
                }
            } else {
                o.users.push(a);
            }
        } else if opt_colon(&a, "debug", 1).is_some() || is_opt(&a, "long", 1) {
        } else if is_opt(&a, "totals", 3) {
            o.totals = true;
        } else if is_opt(&a, "constraint", 1) {
            o.constraints.push(c.value(&a, true).map_err(|_| {
                Usage::new(format!("{tool}: -constraint requires another argument"))
            })?);
        } else if is_opt(&a, "all", 1) {
            if !o.constraints.is_empty()
                || !o.ids.is_empty()
                || !o.clusters.is_empty()
                || !o.users.is_empty()
            {
                return Err(Usage::new(format!(
                    "{tool}: can't mix -all with other constraints"
                )));
            }
            o.all = true;
        } else if is_opt(&a, "held", 3) || is_opt(&a, "hold", 3) {
            o.held_only = true;
        } else if is_opt(&a, "reason", 1) {
            o.reason = Some(c.value(&a, false)?);
        } else if is_opt(&a, "subcode", 1) {
            let v = c.value(&a, false)?;
            v.parse::<i64>()
                .map_err(|_| Usage::new(format!("Invalid -subcode {v}!")))?;
        } else if is_opt(&a, "forcex", if action == Action::Rm { 1 } else { 2 }) {
            if action != Action::Rm {
                return Err(Usage::new("-forcex is only valid with condor_rm"));
            }
            o.action = Action::ForceRm;
        } else if is_opt(&a, "name", 1) {
            o.target.name = Some(c.value(&a, false)?);
        } else if is_opt(&a, "pool", 1) {
            let v = c.value(&a, false)?;
            o.target.set_pool(tool, v)?;
        } else if is_opt(&a, "addr", 2) {
            let v = c.value(&a, true)?;
            o.target.name = Some(v);
        } else if is_opt(&a, "version", 1) {
            println!(
                "{}\n{}",
                super::version::version_line(),
                super::version::platform_line()
            );
            std::process::exit(0);
        } else if is_opt(&a, "help", 1) {
            return Err(Usage {
                message: usage(tool, action),
                status: 0,
            });
        } else {
            return Err(Usage::new(format!(
                "Unrecognized option: {a}\n{}",
                usage(tool, action)
            )));
        }
    }
    if o.ids.is_empty()
        && o.clusters.is_empty()
        && o.users.is_empty()
        && o.constraints.is_empty()
        && !o.all
        && !o.held_only
    {
        return Err(Usage::new(format!(
            "You did not specify any jobs\n{}",
            usage(tool, action)
        )));
    }
    Ok(o)
}

fn usage(tool: &str, action: Action) -> String {
    let w = action.verb();
    format!(
        "Usage: {tool} [options] [constraints]\n \
         where [options] is zero or more of:\n  \
         -help               Display this message and exit\n  \
         -totals             Display success/failure totals\n  \
         -name schedd_name   Connect to the given schedd\n  \
         -pool url           Use the given coordinator\n  \
         -reason reason      Record the given reason\n \
         and where [constraints] is one of:\n  \
         cluster.proc        {w} the given job\n  \
         cluster             {w} the given cluster of jobs\n  \
         user                {w} all jobs owned by user\n  \
         -constraint expr    {w} all jobs matching the boolean expression\n  \
         -all                {w} all jobs (cannot be used with other constraints)"
    )
}

/// HTCondor's counts of one action (`-totals`).
#[derive(Default)]
struct Tally {
    success: u64,
    not_found: u64,
    bad_status: u64,
    already: u64,
    denied: u64,
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let o = parse(tool, args)?;
    let (client, _) = o.target.station()?;
    let rt = crate::jobs::runtime()?;
    let reason = o.reason.clone().unwrap_or_else(|| match o.action {
        Action::Rm => "via condor_rm".into(),
        Action::ForceRm => "via condor_rm -forcex".into(),
        Action::Hold => "via condor_hold".into(),
        Action::Release => "via condor_release".into(),
    });
    let mut failed = false;
    let mut tally = Tally::default();
    // Fully named jobs first, one sentence each (HTCondor's
    // printNewMessages); with -held they go through the constraint path.
    if !o.held_only {
        for id in &o.ids {
            let (ok, line) = rt.block_on(one(&client, o.action, *id, &reason, &mut tally));
            failed |= !ok;
            if ok {
                emit(&line);
            } else {
                crate::output::escape::emit_err(&line);
            }
        }
    }
    let by_constraint = !o.clusters.is_empty()
        || !o.users.is_empty()
        || !o.constraints.is_empty()
        || o.all
        || o.held_only;
    if by_constraint {
        let ok = rt.block_on(many(&client, &o, &reason, &mut tally))?;
        failed |= !ok;
    }
    if o.totals {
        println!(
            "{} Succeeded, 0 Failed, {} Not Found, {} Bad Status, {} Already Done, {} Permission Denied",
            tally.success, tally.not_found, tally.bad_status, tally.already, tally.denied
        );
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn act(
    client: &StationClient,
    action: Action,
    id: &str,
    reason: &str,
) -> Result<ActionResponse, ClientError> {
    match action {
        Action::Rm => client.rm(id, Some(reason)).await,
        Action::Hold => client.hold(id, Some(reason)).await,
        Action::Release => client.release(id, Some(reason)).await,
        Action::ForceRm => Ok(ActionResponse::default()),
    }
}

/// One job by id: whether it was acted on, and HTCondor's sentence.
async fn one(
    client: &StationClient,
    action: Action,
    id: JobId,
    reason: &str,
    tally: &mut Tally,
) -> (bool, String) {
    let current = match client.job(&id.to_string()).await {
        Ok(d) => d.job.state,
        Err(_) => {
            tally.not_found += 1;
            return (false, format!("Job {id} not found"));
        }
    };
    if action == Action::ForceRm {
        return if matches!(current, JobState::Removed) {
            tally.success += 1;
            (true, format!("Job {id} {}", action.done()))
        } else {
            tally.bad_status += 1;
            (
                false,
                format!("Job {id} not in `X' state to be forcibly removed"),
            )
        };
    }
    match (action, &current) {
        (Action::Hold, JobState::Held { .. }) => {
            tally.already += 1;
            return (false, format!("Job {id} already held"));
        }
        (Action::Rm, JobState::Removed) => {
            tally.already += 1;
            return (false, format!("Job {id} already marked for removal"));
        }
        (Action::Release, s) if !matches!(s, JobState::Held { .. }) => {
            tally.bad_status += 1;
            return (false, format!("Job {id} not held to be released"));
        }
        (_, JobState::Completed { .. } | JobState::Removed) => {
            tally.not_found += 1;
            return (false, format!("Job {id} not found"));
        }
        _ => {}
    }
    match act(client, action, &id.to_string(), reason).await {
        Ok(r) if r.changed.contains(&id) => {
            tally.success += 1;
            (true, format!("Job {id} {}", action.done()))
        }
        Err(ClientError::Api { status: 403, .. }) => {
            tally.denied += 1;
            (
                false,
                format!("Permission denied to {} job {id}", action.verb()),
            )
        }
        Err(ClientError::Api { status: 404, .. }) => {
            tally.not_found += 1;
            (false, format!("Job {id} not found"))
        }
        Ok(_) | Err(ClientError::Api { .. }) => {
            tally.bad_status += 1;
            (false, format!("Invalid result for job {id}"))
        }
        Err(e) => (false, format!("{e}")),
    }
}

/// Clusters, owners, constraints, `-all`, `-held`: every matching job of
/// the queue; one sentence for the lot.
async fn many(
    client: &StationClient,
    o: &Opts,
    reason: &str,
    tally: &mut Tally,
) -> anyhow::Result<bool> {
    let me = client.whoami().await?;
    let tool_all = o.all || o.held_only;
    let mut sel = Selection {
        ids: o.clusters.iter().map(|c| Id::Cluster(*c)).collect(),
        owners: o.users.clone(),
        constraints: o.constraints.clone(),
        all_users: false,
    };
    if o.held_only {
        sel.ids.extend(o.ids.iter().map(|j| Id::Job(*j)));
    }
    let exprs = sel.exprs("condor_rm")?;
    // -all: the caller's jobs (an administrator's: everyone's).
    let owner = (tool_all && sel.owners.is_empty() && me.role != "admin").then(|| me.name.clone());
    let jobs = client
        .jobs(&JobQuery {
            owner,
            state: None,
            all: o.action == Action::ForceRm,
        })
        .await?;
    let mut targets: Vec<_> = jobs
        .into_iter()
        .filter(|j| sel.admits(j.id, &j.owner))
        .filter(|j| !o.held_only || matches!(j.state, JobState::Held { .. }))
        .filter(|j| o.action != Action::ForceRm || matches!(j.state, JobState::Removed))
        .collect();
    if !exprs.is_empty() {
        let now = now_unix();
        let ads = details(client, &targets).await?;
        targets = ads
            .into_iter()
            .filter(|(_, ad)| Selection::holds(&exprs, ad, now))
            .map(|(d, _)| d.job)
            .collect();
    }
    let jobs_word = if o.held_only { "held jobs" } else { "jobs" };
    let what = if o.all
        || (o.held_only && o.clusters.is_empty() && o.users.is_empty() && o.constraints.is_empty())
    {
        String::new()
    } else if o.constraints.is_empty()
        && o.users.is_empty()
        && o.clusters.len() == 1
        && o.ids.is_empty()
    {
        format!(" in cluster {}", o.clusters[0])
    } else if o.constraints.is_empty()
        && o.clusters.is_empty()
        && o.users.len() == 1
        && o.ids.is_empty()
    {
        format!(" of user \"{}\"", o.users[0])
    } else {
        format!(" matching constraint ({})", constraint_text(o))
    };
    // Jobs the action does not apply to are not selected, as HTCondor's
    // schedd selects by state.
    targets.retain(|j| match o.action {
        Action::Hold => !matches!(j.state, JobState::Held { .. }),
        Action::Release => matches!(j.state, JobState::Held { .. }),
        _ => true,
    });
    let mut changed = 0u64;
    if o.action == Action::ForceRm {
        changed = targets.len() as u64;
    } else {
        // A whole cluster in one request where the cluster is the target.
        let mut done_clusters = std::collections::BTreeSet::new();
        for j in &targets {
            let whole_cluster = o.constraints.is_empty()
                && !o.held_only
                && o.clusters.contains(&j.id.cluster)
                && matches!(o.action, Action::Rm);
            let id = if whole_cluster {
                if !done_clusters.insert(j.id.cluster) {
                    continue;
                }
                j.id.cluster.to_string()
            } else {
                j.id.to_string()
            };
            match act(client, o.action, &id, reason).await {
                Ok(r) => changed += r.changed.len() as u64,
                Err(ClientError::Api { status: 403, .. }) => tally.denied += 1,
                Err(ClientError::Api {
                    status: 409 | 404, ..
                }) => tally.bad_status += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }
    tally.success += changed;
    if changed > 0 {
        emit(&format!(
            "All {jobs_word}{what} have been {}",
            o.action.done()
        ));
        Ok(true)
    } else {
        if targets.is_empty() && tally.denied == 0 {
            crate::output::escape::emit_err("There are no jobs in the queue");
        }
        crate::output::escape::emit_err(&format!(
            "Couldn't find/{} all {jobs_word}{what}",
            o.action.verb()
        ));
        Ok(false)
    }
}

/// The constraint as HTCondor spells it in its sentence.
fn constraint_text(o: &Opts) -> String {
    let mut parts: Vec<String> = Vec::new();
    let ids: Vec<String> = o
        .clusters
        .iter()
        .map(|c| format!("ClusterId == {c}"))
        .chain(o.users.iter().map(|u| format!("Owner == \"{u}\"")))
        .collect();
    if !ids.is_empty() {
        parts.push(ids.join(" || "));
    }
    parts.extend(o.constraints.iter().cloned());
    match parts.len() {
        1 => parts.remove(0),
        _ => parts
            .iter()
            .map(|p| format!("({p})"))
            .collect::<Vec<_>>()
            .join(" && "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(tool: &str, v: &[&str]) -> Result<Opts, Usage> {
        parse(tool, v.iter().map(OsString::from).collect())
    }

    #[test]
    fn arguments_as_htcondor_takes_them() {
        let o = opts("condor_rm", &["12", "13.4", "bob", "-reason", "why"]).unwrap();
        assert_eq!(o.clusters, [12]);
        assert_eq!(o.ids, [JobId::new(13, 4)]);
        assert_eq!(o.users, ["bob"]);
        assert_eq!(o.reason.as_deref(), Some("why"));
        assert_eq!(
            opts("condor_rm", &["-forcex", "1.0"]).unwrap().action,
            Action::ForceRm
        );
        assert!(opts("condor_hold", &["-forcex", "1.0"]).is_err());
        assert!(opts("condor_rm", &[]).is_err());
        assert!(opts("condor_rm", &["-all", "12"]).is_err());
        assert!(opts("condor_rm", &["0"]).is_err());
        assert_eq!(
            opts("condor_release", &["-all"]).unwrap().action,
            Action::Release
        );
    }

    #[test]
    fn constraint_sentences() {
        let o = opts("condor_rm", &["12", "13"]).unwrap();
        assert_eq!(constraint_text(&o), "ClusterId == 12 || ClusterId == 13");
        let o = opts("condor_rm", &["-constraint", "JobStatus == 5"]).unwrap();
        assert_eq!(constraint_text(&o), "JobStatus == 5");
    }
}
