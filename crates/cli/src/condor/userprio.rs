//! `condor_userprio`: the pool's priorities. Gleaner shares the pool
//! between stations with Up-Down (Mutka 1988), so the table has a row per
//! submitting station: its schedule index as the effective priority
//! (smaller is better, as in HTCondor), the nodes it holds as resources
//! in use.

use super::args::{Cursor, Usage, is_opt};
use super::connect::Target;
use crate::output::escape::term;
use gleaner_proto::wire::UserPrio;
use std::ffi::OsString;
use std::process::ExitCode;

const RULE: &str =
    "---------------------------------- ------------ --------- ------ ------------ ----------";

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let mut target = Target::default();
    let mut all = false;
    while let Some(a) = c.next() {
        if is_opt(&a, "pool", 1) {
            let v = c.value(&a, true)?;
            target.set_pool(tool, v)?;
        } else if is_opt(&a, "all", 2) || is_opt(&a, "allusers", 4) {
            all = true;
        } else if is_opt(&a, "help", 1) {
            println!("Usage: {tool} [-pool URL] [-all]");
            return Ok(ExitCode::SUCCESS);
        } else if a.starts_with('-') {
            // Options that change HTCondor's accountant have no meaning
            // for Up-Down's table.
            return Err(Usage::new(format!(
                "{tool}: {a} is not supported by Gleaner's Up-Down table"
            ))
            .into());
        } else {
            return Err(Usage::new(format!("{tool}: unexpected argument {a}")).into());
        }
    }
    let s = target.settings()?;
    let coord = target.coordinator(&s)?;
    let up: UserPrio =
        crate::jobs::runtime()?.block_on(s.coordinator_client(&coord)?.get_json("/v1/userprio"))?;
    let stamp = crate::output::printf::local_stamp(super::select::now_unix());
    // MM/DD HH:MM of MM/DD/YY HH:MM:SS.
    let now = format!(
        "{} {}",
        stamp.get(..5).unwrap_or(""),
        stamp.get(9..14).unwrap_or("")
    );
    let mut out = format!("Last Priority Update: {now}\n");
    out.push_str("                                    Effective   Priority   Res   Total Usage  Time Since\n");
    out.push_str(
        "Station Name                         Priority    Factor  In Use (wghted-hrs) Last Usage\n",
    );
    out.push_str(RULE);
    out.push('\n');
    let mut shown = 0usize;
    let mut in_use = 0u64;
    for e in up.stations.iter().filter(|e| all || e.known) {
        shown += 1;
        in_use += u64::from(e.nodes_held);
        let name = term(&e.station);
        out.push_str(&format!(
            "{name:<34} {:>12.2} {:>9.2} {:>6} {:>12} {:>10}\n",
            e.si, 1.0, e.nodes_held, "-", "-"
        ));
    }
    out.push_str(RULE);
    out.push('\n');
    out.push_str(&format!("Number of stations: {shown:<27} {in_use:>18}\n"));
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
