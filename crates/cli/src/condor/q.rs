//! `condor_q`: the station's queue as HTCondor prints it.
//!
//! Views: the batch table (default), `-nobatch`, `-run`, `-hold`,
//! `-totals`, `-af`/`-format`, `-long`, `-json`, `-better-analyze JOB`;
//! restrictions: `CLUSTER`, `CLUSTER.PROC`, `OWNER`, `-constraint`,
//! `-allusers`, `-submitter`, `-idle`, `-limit`. The batch and per-job
//! tables end with HTCondor's totals lines. Only completed and removed
//! jobs are absent (they are in `condor_history`), as in HTCondor once a
//! job leaves the queue.

use super::args::{Cursor, Usage, is_opt, opt_colon};
use super::connect::Target;
use super::select::{Selection, details, now_unix};
use crate::output::adformat::{AdFormat, FormatArg, json_list, long_form};
use crate::output::condor::{self as table, Batch, Counts, JobRow};
use gleaner_classad::Ad;
use gleaner_proto::api::{JobDetail, JobInfo};
use gleaner_proto::job::{JobId, JobState};
use gleaner_station::client::{JobQuery, StationClient};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Clone, Debug, PartialEq, Eq)]
enum View {
    Batch,
    NoBatch,
    Run,
    Hold,
    Totals,
    Long,
    Json,
    Format,
    Analyze,
}

#[derive(Debug)]
struct Opts {
    view: View,
    batch_given: bool,
    sel: Selection,
    formats: Vec<FormatArg>,
    target: Target,
    idle_only: bool,
    limit: Option<usize>,
    wide: bool,
    attributes: Option<Vec<String>>,
}

fn parse(tool: &str, args: Vec<OsString>) -> Result<Option<Opts>, Usage> {
    let mut c = Cursor::new(tool, args)?;
    let mut o = Opts {
        view: View::Batch,
        batch_given: false,
        sel: Selection::default(),
        formats: Vec::new(),
        target: Target::default(),
        idle_only: false,
        limit: None,
        wide: false,
        attributes: None,
    };
    let mut totals = false;
    while let Some(a) = c.next() {
        if !a.starts_with('-') || a == "-" {
            o.sel.bare(tool, &a)?;
        } else if let Some(q) = opt_colon(&a, "af", 2).or_else(|| opt_colon(&a, "autoformat", 5)) {
            let attrs = c.words();
            if attrs.is_empty() {
                return Err(Usage::new(
                    "Error: -autoformat requires at least one attribute parameter",
                ));
            }
            o.formats.push(FormatArg::Auto {
                opts: q.unwrap_or_default().to_string(),
                attrs,
            });
        } else if is_opt(&a, "format", 1) {
            let (Some(fmt), Some(attr)) = (c.next(), c.next()) else {
                return Err(Usage::new(
                    "Error: -format requires format and attribute parameters",
                ));
            };
            o.formats.push(FormatArg::Format { fmt, attr });
        } else if is_opt(&a, "constraint", 1) {
            o.sel.constraints.push(c.value(&a, false)?);
        } else if is_opt(&a, "allusers", 2) || is_opt(&a, "all-users", 2) {
            o.sel.all_users = true;
        } else if is_opt(&a, "submitter", 1) {
            o.sel.owners.push(c.value(&a, true)?);
        } else if is_opt(&a, "name", 1) {
            o.target.name = Some(c.value(&a, true)?);
        } else if is_opt(&a, "pool", 1) {
            let v = c.value(&a, true)?;
            o.target.set_pool(tool, v)?;
        } else if opt_colon(&a, "long", 1).is_some() {
            o.view = View::Long;
        } else if is_opt(&a, "json", 2) {
            o.view = View::Json;
        } else if is_opt(&a, "xml", 3) {
            return Err(Usage::new(format!(
                "{tool}: -xml is not supported; use -json or -long"
            )));
        } else if is_opt(&a, "attributes", 2) {
            let v = c.value(&a, true)?;
            o.attributes = Some(v.split(',').map(|s| s.trim().to_string()).collect());
        } else if is_opt(&a, "nobatch", 3) {
            o.view = View::NoBatch;
            o.batch_given = true;
        } else if opt_colon(&a, "batch", 2).is_some() {
            o.view = View::Batch;
            o.batch_given = true;
        } else if is_opt(&a, "totals", 3) {
            totals = true;
        } else if is_opt(&a, "run", 1) {
            o.view = View::Run;
        } else if opt_colon(&a, "hold", 2).is_some() || opt_colon(&a, "held", 2).is_some() {
            o.view = View::Hold;
        } else if is_opt(&a, "idle", 3) {
            o.idle_only = true;
            o.view = View::NoBatch;
        } else if opt_colon(&a, "better-analyze", 2).is_some()
            || opt_colon(&a, "better-analyse", 2).is_some()
            || opt_colon(&a, "analyze", 2).is_some()
            || opt_colon(&a, "analyse", 2).is_some()
        {
            o.view = View::Analyze;
        } else if is_opt(&a, "limit", 3) {
            let v = c.value(&a, true)?;
            o.limit = Some(
                v.parse()
                    .map_err(|_| Usage::new(format!("{tool}: -limit {v}: not a number")))?,
            );
        } else if opt_colon(&a, "wide", 1).is_some() {
            o.wide = true;
        } else if is_opt(&a, "version", 1) {
            println!(
                "{}\n{}",
                super::version::version_line(),
                super::version::platform_line()
            );
            return Ok(None);
        } else if is_opt(&a, "help", 1) {
            println!("Usage: {tool} [options] [CLUSTER | CLUSTER.PROC | OWNER]…");
            println!(
                "  -nobatch -batch -totals -run -hold -idle -long -json -af[:jlhVrTY,tng] ATTR…"
            );
            println!("  -format FMT ATTR  -constraint EXPR  -allusers  -submitter NAME  -limit N");
            println!("  -better-analyze CLUSTER.PROC  -name SCHEDD  -pool URL  -wide");
            return Ok(None);
        } else if opt_colon(&a, "debug", 3).is_some()
            || is_opt(&a, "global", 1)
            || is_opt(&a, "stream-results", 2)
            || is_opt(&a, "expert", 1)
            || is_opt(&a, "dag", 2)
            || is_opt(&a, "cputime", 2)
            || is_opt(&a, "currentrun", 3)
            || is_opt(&a, "cumulative-time", 3)
            || opt_colon(&a, "verbose", 4).is_some()
        {
            // Accepted; nothing in Gleaner's views depends on them.
        } else {
            return Err(Usage::new(format!(
                "Error: unrecognized argument {a}\nUse \"{tool} -help\" for usage information"
            )));
        }
    }
    if !o.formats.is_empty() {
        if o.batch_given && o.view == View::Batch {
            return Err(Usage::new("Error: -batch conflicts with -format and -af"));
        }
        if !matches!(o.view, View::Long | View::Json) {
            o.view = View::Format;
        }
    }
    if totals && !matches!(o.view, View::Long | View::Json) {
        o.view = View::Totals;
    }
    Ok(Some(o))
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let Some(o) = parse(tool, args)? else {
        return Ok(ExitCode::SUCCESS);
    };
    if o.view == View::Analyze {
        return analyze(tool, &o);
    }
    let exprs = o.sel.exprs(tool)?;
    let format = AdFormat::new(&o.formats).map_err(|e| Usage::new(format!("{tool}: {e}")))?;
    let (client, _) = o.target.station()?;
    let rt = crate::jobs::runtime()?;
    let who = rt.block_on(client.whoami())?;
    // An administrator is HTCondor's queue superuser: every job by default.
    let only_mine = o.sel.only_mine() && who.role != "admin";
    let now = now_unix();
    let query = JobQuery {
        owner: if only_mine {
            Some(who.name.clone())
        } else if o.sel.owners.len() == 1 {
            o.sel.owners.first().cloned()
        } else {
            None
        },
        state: None,
        all: false,
    };
    let listed = rt.block_on(client.jobs(&query))?;
    let mut jobs: Vec<JobInfo> = listed
        .into_iter()
        .filter(|j| o.sel.admits(j.id, &j.owner))
        .filter(|j| !o.idle_only || matches!(j.state, JobState::Idle))
        .filter(|j| {
            o.view != View::Run || matches!(j.state, JobState::Running | JobState::Suspended)
        })
        .filter(|j| o.view != View::Hold || matches!(j.state, JobState::Held { .. }))
        .collect();
    jobs.sort_by_key(|j| j.id);
    let needs_ads = !exprs.is_empty()
        || matches!(
            o.view,
            View::NoBatch | View::Long | View::Json | View::Format
        );
    let mut ads: Vec<(JobDetail, Ad)> = Vec::new();
    if needs_ads {
        ads = rt.block_on(details(&client, &jobs))?;
        ads.retain(|(_, ad)| super::select::Selection::holds(&exprs, ad, now));
        if let Some(n) = o.limit {
            ads.truncate(n);
        }
        jobs = ads.iter().map(|(d, _)| d.job.clone()).collect();
    } else if let Some(n) = o.limit {
        jobs.truncate(n);
    }
    let width = (!o.wide && std::io::stdout().is_terminal()).then(terminal_width);
    let mut out = String::new();
    match o.view {
        View::Format => {
            let ads: Vec<Ad> = ads.into_iter().map(|(_, ad)| ad).collect();
            out.push_str(&format.print(&ads, now));
        }
        View::Long => {
            for (_, ad) in &ads {
                out.push_str(&long_form(&project(ad, o.attributes.as_deref())));
            }
        }
        View::Json => {
            let ads: Vec<Ad> = ads
                .iter()
                .map(|(_, ad)| project(ad, o.attributes.as_deref()))
                .collect();
            out.push_str(&json_list(&ads));
        }
        view => {
            out.push_str(&title(&client));
            match view {
                View::NoBatch => {
                    let rows: Vec<JobRow> = ads.iter().map(|(d, ad)| job_row(d, ad, now)).collect();
                    out.push_str(&table::nobatch(&rows, width));
                }
                View::Run | View::Hold => {
                    let rows: Vec<JobRow> = jobs.iter().map(|j| info_row(j, now)).collect();
                    let text = if view == View::Run {
                        table::run(&rows, width)
                    } else {
                        table::hold(&rows, width)
                    };
                    out.push_str(&text);
                }
                View::Batch => {
                    let list =
                        rt.block_on(batches(&client, &jobs, only_mine.then_some(&who.name)))?;
                    out.push_str(&table::batches(&list, width));
                }
                _ => {}
            }
            if view != View::Run {
                let mut q = Counts::default();
                for j in &jobs {
                    q.add(j.state.kind().code());
                }
                let all = rt.block_on(client.queue_summary(None))?.total;
                let all = Counts {
                    idle: all.idle,
                    running: all.running,
                    held: all.held,
                    suspended: all.suspended,
                    ..Default::default()
                };
                let mine = if only_mine {
                    let s = rt.block_on(client.queue_summary(Some(&who.name)))?.total;
                    Some(Counts {
                        idle: s.idle,
                        running: s.running,
                        held: s.held,
                        suspended: s.suspended,
                        ..Default::default()
                    })
                } else {
                    None
                };
                out.push_str(&table::totals(
                    &q,
                    mine.as_ref().map(|m| (who.name.as_str(), m)),
                    &all,
                    view != View::Totals,
                ));
            }
        }
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// The ad with only `attrs` (`-attributes`), else whole.
fn project(ad: &Ad, attrs: Option<&[String]>) -> Ad {
    let Some(attrs) = attrs else {
        return ad.clone();
    };
    let mut out = Ad::new();
    for (name, e) in ad.iter() {
        if attrs.iter().any(|a| a.eq_ignore_ascii_case(name)) {
            out.insert_expr(name, e.clone());
        }
    }
    out
}

/// The columns of a terminal (80 when it does not say), less one, as
/// HTCondor fits its tables.
fn terminal_width() -> usize {
    let cols = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .or_else(|| {
            let mut ws = libc::winsize {
                ws_row: 0,
                ws_col: 0,
                ws_xpixel: 0,
                ws_ypixel: 0,
            };
            // SAFETY: TIOCGWINSZ writes a `winsize` into the struct we own;
            // stdout is a valid descriptor for the whole call.
            let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
            (r == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
        })
        .unwrap_or(80);
    cols.saturating_sub(1).max(20)
}

/// `-- Schedd: HOST : <ADDRESS> @ …` for this station.
fn title(client: &StationClient) -> String {
    let host = super::connect::hostname();
    table::schedd_title(&host, client.base_url(), now_unix())
}

fn secs(t: gleaner_core::time::Time) -> i64 {
    i64::try_from(t.as_micros() / 1_000_000).unwrap_or(i64::MAX)
}

/// Wall-clock seconds of the job's current or last run.
fn run_secs(j: &JobInfo, now: i64) -> i64 {
    let Some(start) = j.started_at else {
        return 0;
    };
    let end = match j.state {
        JobState::Running | JobState::Suspended => now,
        _ => j.finished_at.map_or(secs(j.updated_at), secs),
    };
    (end - secs(start)).max(0)
}

/// A per-job row from the listing alone.
pub fn info_row(j: &JobInfo, now: i64) -> JobRow {
    let (hold_reason, hold_code, hold_subcode) = match &j.state {
        JobState::Held { reason } => (
            Some(reason.clone()),
            Some(i64::from(j.hold_code.unwrap_or(1))),
            Some(i64::from(j.hold_subcode.unwrap_or(0))),
        ),
        _ => (None, None, None),
    };
    JobRow {
        id: j.id,
        owner: j.owner.clone(),
        qdate: secs(j.submitted_at),
        run_secs: run_secs(j, now),
        status: j.state.kind().code(),
        prio: 0,
        size_mb: 0.0,
        // The listing has `EXECUTABLE ARGS…`; the table shows the
        // executable's file name.
        cmd: match j.cmd.split_once(' ') {
            Some((exe, args)) => table::job_description(exe, args),
            None => table::job_description(&j.cmd, ""),
        },
        host: j.host.clone(),
        hold_reason,
        hold_code,
        hold_subcode,
        entered_status: secs(j.updated_at),
        completion: match j.state {
            JobState::Completed { .. } => j.finished_at.map_or(0, secs),
            _ => 0,
        },
    }
}

/// A per-job row with what only the job's ad has (priority, command).
pub fn job_row(d: &JobDetail, _ad: &Ad, now: i64) -> JobRow {
    let mut row = info_row(&d.job, now);
    row.prio = d.description.priority;
    row.cmd = table::job_description(
        &d.description.executable,
        &d.description.arguments.join(" "),
    );
    row
}

/// `condor_q`'s batches: a cluster each, or, for clusters with a batch
/// name, every cluster of one owner with that name.
async fn batches(
    client: &StationClient,
    jobs: &[JobInfo],
    _me: Option<&String>,
) -> anyhow::Result<Vec<Batch>> {
    // Jobs by cluster, in id order.
    let mut clusters: BTreeMap<u64, Vec<&JobInfo>> = BTreeMap::new();
    for j in jobs {
        clusters.entry(j.id.cluster).or_default().push(j);
    }
    // One job of each cluster tells its batch name (the same for all).
    let firsts: Vec<JobInfo> = clusters
        .values()
        .filter_map(|v| v.first().map(|j| (*j).clone()))
        .collect();
    let named = details(client, &firsts).await?;
    let name_of: BTreeMap<u64, Option<String>> = named
        .iter()
        .map(|(d, _)| (d.job.id.cluster, d.description.batch_name.clone()))
        .collect();
    // Completed and removed procs of each cluster (DONE).
    let summary = client.queue_summary(None).await?;
    let done: BTreeMap<u64, u64> = summary
        .clusters
        .iter()
        .map(|c| (c.cluster, c.counts.completed + c.counts.removed))
        .collect();
    let mut out: Vec<Batch> = Vec::new();
    let mut by_name: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (cluster, procs) in &clusters {
        let Some(first) = procs.first() else { continue };
        let owner = first.owner.clone();
        let batch_name = name_of.get(cluster).cloned().flatten();
        let key = batch_name.clone().map(|n| (owner.clone(), n));
        let idx = match key.as_ref().and_then(|k| by_name.get(k)) {
            Some(i) => *i,
            None => {
                out.push(Batch {
                    owner: owner.clone(),
                    name: batch_name.unwrap_or_else(|| format!("ID: {cluster}")),
                    qdate: secs(first.submitted_at),
                    first: first.id,
                    last: first.id,
                    ..Default::default()
                });
                if let Some(k) = key {
                    by_name.insert(k, out.len() - 1);
                }
                out.len() - 1
            }
        };
        let b = &mut out[idx];
        b.done += done.get(cluster).copied().unwrap_or(0);
        for j in procs {
            match j.state {
                JobState::Idle | JobState::Suspended => b.idle += 1,
                JobState::Running => b.run += 1,
                JobState::Held { .. } => b.held += 1,
                _ => {}
            }
            b.qdate = b.qdate.min(secs(j.submitted_at));
            b.first = b.first.min(j.id);
            b.last = b.last.max(j.id);
        }
        b.total = b.done + b.idle + b.run + b.held;
    }
    Ok(out)
}

/// `-better-analyze JOB`: the station-by-station analysis of `glean q
/// --analyze`.
fn analyze(tool: &str, o: &Opts) -> anyhow::Result<ExitCode> {
    let job = o.sel.ids.first().map(|i| match i {
        super::select::Id::Job(j) => *j,
        super::select::Id::Cluster(c) => JobId::new(*c, 0),
    });
    let Some(job) = job else {
        return Err(Usage::new(format!(
            "{tool}: -better-analyze needs a job id (CLUSTER.PROC)"
        ))
        .into());
    };
    let args = crate::jobs::QArgs {
        all: true,
        state: None,
        analyze: Some(job.to_string()),
        coordinator: o.target.pool.clone(),
        page: None,
        page_size: 100,
        ads: Default::default(),
        connect: Default::default(),
    };
    let out = crate::output::for_mode(false);
    crate::jobs::q(args, out.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Opts {
        parse("condor_q", v.iter().map(OsString::from).collect())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn views_from_options() {
        assert_eq!(opts(&[]).view, View::Batch);
        assert_eq!(opts(&["-nobatch"]).view, View::NoBatch);
        assert_eq!(opts(&["-tot"]).view, View::Totals);
        assert_eq!(opts(&["-af:jr", "JobStatus"]).view, View::Format);
        assert_eq!(opts(&["-l"]).view, View::Long);
        assert_eq!(opts(&["-json"]).view, View::Json);
        assert_eq!(opts(&["-hold"]).view, View::Hold);
        let o = opts(&[
            "12.0",
            "13",
            "-af:jr",
            "JobStatus",
            "-",
            "alice",
            "-const",
            "X",
        ]);
        assert_eq!(o.sel.ids.len(), 2);
        assert_eq!(o.sel.owners, ["alice"]);
        assert_eq!(o.sel.constraints, ["X"]);
        assert!(parse("condor_q", vec!["-batch".into(), "-af".into(), "A".into()]).is_err());
        assert!(parse("condor_q", vec!["-bogus".into()]).is_err());
        assert!(parse("condor_q", vec!["-af".into()]).is_err());
    }
}
