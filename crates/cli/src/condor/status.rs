//! `condor_status`: the pool's stations as HTCondor's machine table
//! (`Name OpSys Arch State Activity LoadAv Mem ActvtyTime`) with its
//! totals by `Arch/OpSys`, or their machine ads through `-long`, `-json`,
//! `-af`, `-format`; `-constraint`, `-avail`, `-claimed`, `-total`, and
//! station names as arguments. A Gleaner station is one machine: its
//! state is `Owner` while its owner is at it, `Claimed`/`Busy` while it
//! runs guests, `Drained` when an administrator drained it, else
//! `Unclaimed`/`Idle`.

use super::args::{Cursor, Usage, is_opt, opt_colon};
use super::connect::Target;
use super::select::{Selection, now_unix};
use crate::output::adformat::{AdFormat, FormatArg, json_list, long_form};
use crate::output::condor::{self as table, Machine};
use gleaner_classad::Ad;
use gleaner_coordinator::matchmaker::AdsView;
use gleaner_proto::wire::PoolStatus;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Debug, PartialEq, Eq)]
enum View {
    Table,
    Totals,
    Long,
    Json,
    Format,
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let mut view = View::Table;
    let mut formats = Vec::new();
    let mut constraints = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut target = Target::default();
    let (mut avail, mut claimed, mut wide) = (false, false, false);
    while let Some(a) = c.next() {
        if !a.starts_with('-') {
            names.push(a);
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
        } else if is_opt(&a, "constraint", 3) {
            constraints.push(c.value(&a, false)?);
        } else if opt_colon(&a, "long", 1).is_some() {
            view = View::Long;
        } else if is_opt(&a, "json", 2) {
            view = View::Json;
        } else if is_opt(&a, "total", 2) || is_opt(&a, "totals", 2) {
            view = View::Totals;
        } else if is_opt(&a, "avail", 2) || is_opt(&a, "available", 2) {
            avail = true;
        } else if is_opt(&a, "claimed", 2) {
            claimed = true;
        } else if opt_colon(&a, "wide", 1).is_some() {
            wide = true;
        } else if is_opt(&a, "pool", 1) {
            let v = c.value(&a, true)?;
            target.set_pool(tool, v)?;
        } else if opt_colon(&a, "compact", 2).is_some()
            || is_opt(&a, "startd", 3)
            || opt_colon(&a, "debug", 1).is_some()
            || is_opt(&a, "expert", 1)
        {
        } else if is_opt(&a, "schedd", 2)
            || is_opt(&a, "submitters", 2)
            || is_opt(&a, "collector", 3)
            || is_opt(&a, "negotiator", 2)
            || is_opt(&a, "master", 2)
        {
            return Err(Usage::new(format!(
                "{tool}: {a}: a Gleaner pool has one kind of ad, the stations' machine ads; \
                 see condor_q for a station's queue"
            ))
            .into());
        } else if is_opt(&a, "help", 1) {
            println!("Usage: {tool} [options] [NAME]…");
            println!(
                "  -long -json -af ATTR… -format FMT ATTR -constraint EXPR -total -avail -claimed -pool URL"
            );
            return Ok(ExitCode::SUCCESS);
        } else {
            return Err(Usage::new(format!("Error: unknown option {a}")).into());
        }
    }
    if !formats.is_empty() && view == View::Table {
        view = View::Format;
    }
    let sel = Selection {
        constraints,
        ..Default::default()
    };
    let exprs = sel.exprs(tool)?;
    let format = AdFormat::new(&formats).map_err(|e| Usage::new(format!("{tool}: {e}")))?;
    let settings = target.settings()?;
    let coord = target.coordinator(&settings)?;
    let client = settings.coordinator_client(&coord)?;
    let rt = crate::jobs::runtime()?;
    let view_ads: AdsView = rt.block_on(client.get_json("/v1/ads"))?;
    let pool: PoolStatus = rt.block_on(client.get_json("/v1/pool"))?;
    let now = now_unix();
    let mut rows: Vec<(Ad, Machine)> = Vec::new();
    for e in &view_ads.stations {
        let st = pool.stations.iter().find(|s| s.name == e.ad.name);
        let (state, activity) = match st {
            Some(s) if s.drained => ("Drained", "Idle"),
            Some(s) if s.guests > 0 => ("Claimed", "Busy"),
            _ => match gleaner_proto::matchmaking::machine_ad(&e.ad).get("State") {
                Some(gleaner_classad::Expr::Lit(gleaner_classad::Literal::Str(s)))
                    if s == "Owner" =>
                {
                    ("Owner", "Idle")
                }
                _ => ("Unclaimed", "Idle"),
            },
        };
        let mut ad = gleaner_proto::matchmaking::machine_ad(&e.ad);
        ad.insert_str("State", state);
        ad.insert_str("Activity", activity);
        let int = |name: &str| match ad.get(name) {
            Some(gleaner_classad::Expr::Lit(gleaner_classad::Literal::Int(i))) => Some(*i),
            _ => None,
        };
        let string = |name: &str| match ad.get(name) {
            Some(gleaner_classad::Expr::Lit(gleaner_classad::Literal::Str(s))) => s.clone(),
            _ => String::new(),
        };
        let m = Machine {
            name: string("Name"),
            opsys: string("OpSys"),
            arch: string("Arch"),
            state: state.into(),
            activity: activity.into(),
            load: None,
            memory_mb: int("Memory"),
            activity_secs: None,
        };
        let named = names.is_empty()
            || names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(&m.name) || m.name.starts_with(&format!("{n}.")));
        let wanted = named
            && (!avail || m.state == "Unclaimed")
            && (!claimed || m.state == "Claimed")
            && Selection::holds(&exprs, &ad, now);
        if wanted {
            rows.push((ad, m));
        }
    }
    rows.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    let width = (!wide && std::io::stdout().is_terminal()).then_some(79);
    let mut out = String::new();
    match view {
        View::Long => {
            for (ad, _) in &rows {
                out.push_str(&long_form(ad));
            }
        }
        View::Json => {
            let ads: Vec<Ad> = rows.iter().map(|(ad, _)| ad.clone()).collect();
            out.push_str(&json_list(&ads));
        }
        View::Format => {
            let ads: Vec<Ad> = rows.iter().map(|(ad, _)| ad.clone()).collect();
            out.push_str(&format.print(&ads, now));
        }
        View::Table | View::Totals => {
            let machines: Vec<Machine> = rows.into_iter().map(|(_, m)| m).collect();
            if !machines.is_empty() {
                if view == View::Table {
                    out.push_str(&table::machines(&machines, width));
                    out.push('\n');
                }
                out.push_str(&table::machine_totals(&machines));
            }
        }
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
