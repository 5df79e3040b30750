//! `condor_history`: finished (completed and removed) jobs, newest first,
//! as HTCondor's table (` ID OWNER SUBMITTED RUN_TIME ST COMPLETED CMD`)
//! or through `-af`, `-format`, `-long`, `-json`; restricted by
//! `CLUSTER`, `CLUSTER.PROC`, `OWNER`, `-constraint`, `-limit`/`-match`,
//! `-forwards`.

use super::args::{Cursor, Usage, is_opt, opt_colon};
use super::connect::Target;
use super::select::{Selection, details, now_unix};
use crate::output::adformat::{AdFormat, FormatArg, json_list, long_form};
use crate::output::condor as table;
use gleaner_classad::Ad;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Debug, PartialEq, Eq)]
enum View {
    Table,
    Long,
    Json,
    Format,
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let mut sel = Selection {
        all_users: true,
        ..Default::default()
    };
    let mut formats = Vec::new();
    let mut view = View::Table;
    let mut target = Target::default();
    let mut limit: Option<usize> = None;
    let mut forwards = false;
    let mut wide = false;
    while let Some(a) = c.next() {
        if !a.starts_with('-') {
            sel.bare(tool, &a)?;
        } else if let Some(q) = opt_colon(&a, "af", 2).or_else(|| opt_colon(&a, "autoformat", 5)) {
            let attrs = c.words();
            if attrs.is_empty() {
                return Err(Usage::new(
                    "Error: -autoformat requires at least one attribute parameter",
                )
                .into());
            }
            formats.push(FormatArg::Auto {
                opts: q.unwrap_or_default().to_string(),
                attrs,
            });
        } else if is_opt(&a, "format", 1) {
            let (Some(fmt), Some(attr)) = (c.next(), c.next()) else {
                return Err(
                    Usage::new("Error: -format requires format and attribute parameters").into(),
                );
            };
            formats.push(FormatArg::Format { fmt, attr });
        } else if is_opt(&a, "constraint", 1) {
            sel.constraints.push(c.value(&a, false)?);
        } else if opt_colon(&a, "long", 1).is_some() {
            view = View::Long;
        } else if is_opt(&a, "json", 2) {
            view = View::Json;
        } else if is_opt(&a, "limit", 3) || is_opt(&a, "match", 1) {
            let v = c.value(&a, true)?;
            limit = Some(
                v.parse()
                    .map_err(|_| Usage::new(format!("{tool}: {a} {v}: not a number")))?,
            );
        } else if is_opt(&a, "forwards", 4) {
            forwards = true;
        } else if is_opt(&a, "backwards", 4) {
            forwards = false;
        } else if opt_colon(&a, "wide", 1).is_some() {
            wide = true;
        } else if is_opt(&a, "name", 1) {
            target.name = Some(c.value(&a, true)?);
        } else if is_opt(&a, "pool", 1) {
            let v = c.value(&a, true)?;
            target.set_pool(tool, v)?;
        } else if is_opt(&a, "attributes", 2) {
            c.value(&a, true)?;
        } else if is_opt(&a, "file", 1) || is_opt(&a, "userlog", 1) || is_opt(&a, "search", 3) {
            return Err(Usage::new(format!(
                "{tool}: {a}: Gleaner keeps the history in the station's queue, not in files"
            ))
            .into());
        } else if opt_colon(&a, "debug", 1).is_some() {
        } else if is_opt(&a, "help", 1) {
            println!("Usage: {tool} [options] [CLUSTER | CLUSTER.PROC | OWNER]…");
            println!(
                "  -constraint EXPR -limit N -long -json -af ATTR… -format FMT ATTR -forwards -wide"
            );
            return Ok(ExitCode::SUCCESS);
        } else {
            return Err(Usage::new(format!("Error: unrecognized argument {a}")).into());
        }
    }
    if !formats.is_empty() && view == View::Table {
        view = View::Format;
    }
    let exprs = sel.exprs(tool)?;
    let format = AdFormat::new(&formats).map_err(|e| Usage::new(format!("{tool}: {e}")))?;
    let (client, _) = target.station()?;
    let rt = crate::jobs::runtime()?;
    let owner = (sel.owners.len() == 1).then(|| sel.owners[0].clone());
    let mut jobs: Vec<_> = rt
        .block_on(client.history(owner.as_deref()))?
        .into_iter()
        .filter(|j| sel.admits(j.id, &j.owner))
        .collect();
    // Newest completion first, as HTCondor reads its history file.
    jobs.sort_by_key(|j| std::cmp::Reverse((j.finished_at.unwrap_or(j.updated_at), j.id)));
    if forwards {
        jobs.reverse();
    }
    let now = now_unix();
    let needs_ads = !exprs.is_empty() || view != View::Table;
    let width = (!wide && std::io::stdout().is_terminal()).then_some(79);
    let mut out = String::new();
    if needs_ads {
        let mut ads = Vec::new();
        // Read in pieces, so that -limit reads no more than it shows.
        for chunk in jobs.chunks(256) {
            let got = rt.block_on(details(&client, chunk))?;
            ads.extend(
                got.into_iter()
                    .filter(|(_, ad)| Selection::holds(&exprs, ad, now)),
            );
            if limit.is_some_and(|n| ads.len() >= n) {
                break;
            }
        }
        if let Some(n) = limit {
            ads.truncate(n);
        }
        match view {
            View::Long => {
                for (_, ad) in &ads {
                    out.push_str(&long_form(ad));
                }
            }
            View::Json => {
                let ads: Vec<Ad> = ads.into_iter().map(|(_, ad)| ad).collect();
                out.push_str(&json_list(&ads));
            }
            View::Format => {
                let ads: Vec<Ad> = ads.into_iter().map(|(_, ad)| ad).collect();
                out.push_str(&format.print(&ads, now));
            }
            View::Table => {
                let rows: Vec<_> = ads
                    .iter()
                    .map(|(d, ad)| super::q::job_row(d, ad, now))
                    .collect();
                out.push_str(&table::history(&rows, width));
            }
        }
    } else {
        if let Some(n) = limit {
            jobs.truncate(n);
        }
        let rows: Vec<_> = jobs.iter().map(|j| super::q::info_row(j, now)).collect();
        out.push_str(&table::history(&rows, width));
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
