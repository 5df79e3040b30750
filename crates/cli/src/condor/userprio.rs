//! `condor_userprio`: who used the pool lately. As in HTCondor, a row per
//! submitter (`NAME@HOME`, the coordinator's accounting,
//! `gleaner_coordinator::pool::accounting`), in increasing order of
//! effective priority: the decayed usage floored at 0.5 (HTCondor's
//! smallest real priority) times the priority factor, 1.0 for everyone
//! since Gleaner has no per-user factors. Gleaner shares the pool between
//! stations by Up-Down (Mutka 1988, Table 4.3); `-stations` shows that
//! table instead: each station's schedule index as its priority (smaller
//! is better, as in HTCondor), the nodes it holds as resources in use.

use super::args::{Cursor, Usage, is_opt};
use super::connect::Target;
use crate::output::escape::term;
use gleaner_proto::wire::{SubmitterPrio, UserPrio};
use std::ffi::OsString;
use std::process::ExitCode;

const RULE: &str =
    "---------------------------------- ------------ --------- ------ ------------ ----------";

/// HTCondor's smallest real priority (its manual: "the minimum value
/// (highest priority) is 0.5").
const PRIORITY_FLOOR: f64 = 0.5;

#[derive(Default)]
struct Options {
    /// `-all`: stations the coordinator has not heard from too.
    all: bool,
    stations: bool,
    /// HTCondor's trailing `username`: only that submitter's rows.
    user: Option<String>,
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let mut target = Target::default();
    let mut o = Options::default();
    while let Some(a) = c.next() {
        if is_opt(&a, "pool", 1) {
            let v = c.value(&a, true)?;
            target.set_pool(tool, v)?;
        } else if is_opt(&a, "all", 2) || is_opt(&a, "allusers", 4) {
            o.all = true;
        } else if is_opt(&a, "stations", 2) {
            o.stations = true;
        } else if is_opt(&a, "help", 1) {
            println!("Usage: {tool} [-pool URL] [-all] [-stations] [username]");
            return Ok(ExitCode::SUCCESS);
        } else if a.starts_with('-') {
            // The editing options change HTCondor's accountant, which
            // decides nothing here (Up-Down does).
            return Err(Usage::new(format!(
                "{tool}: {a} is not supported: Gleaner shares the pool by Up-Down, without per-user factors"
            ))
            .into());
        } else if o.user.is_none() {
            o.user = Some(a);
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
    let table = if o.stations {
        stations_table(&up, &o)
    } else {
        users_table(&up.submitters, o.user.as_deref())
    };
    print!("Last Priority Update: {now}\n{table}");
    Ok(ExitCode::SUCCESS)
}

/// A submitter's effective priority, as HTCondor computes it.
fn effective(s: &SubmitterPrio) -> f64 {
    let usage = if s.usage.is_finite() { s.usage } else { 0.0 };
    usage.max(PRIORITY_FLOOR)
}

fn header(first: &str) -> String {
    format!(
        "                                    Effective   Priority   Res   Total Usage  Time Since\n\
         {first:<36}Priority    Factor  In Use (wghted-hrs) Last Usage\n{RULE}\n"
    )
}

/// One row of either table: factor 1.0, usage hours and time since last
/// use not kept (`-`).
fn row(name: &str, priority: f64, held: u32) -> String {
    format!(
        "{:<34} {priority:>12.2} {:>9.2} {held:>6} {:>12} {:>10}\n",
        term(name),
        1.0,
        "-",
        "-"
    )
}

/// HTCondor's default table: the submitters, best priority first. A
/// `user` without `@` names the submitter at any home.
fn users_table(rows: &[SubmitterPrio], user: Option<&str>) -> String {
    let mut rows: Vec<&SubmitterPrio> = rows
        .iter()
        .filter(|r| match user {
            None => true,
            Some(u) if u.contains('@') => r.name == u,
            Some(u) => r.submitter == u,
        })
        .collect();
    rows.sort_by(|a, b| {
        effective(a)
            .total_cmp(&effective(b))
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut out = header("User Name");
    let mut in_use = 0u64;
    for r in &rows {
        in_use += u64::from(r.nodes_held);
        out.push_str(&row(&r.name, effective(r), r.nodes_held));
    }
    out.push_str(RULE);
    out.push('\n');
    out.push_str(&format!(
        "Number of users: {:<30} {in_use:>18}\n",
        rows.len()
    ));
    out
}

/// Up-Down's table: a row per station.
fn stations_table(up: &UserPrio, o: &Options) -> String {
    let mut out = header("Station Name");
    let mut shown = 0usize;
    let mut in_use = 0u64;
    for e in up.stations.iter().filter(|e| o.all || e.known) {
        shown += 1;
        in_use += u64::from(e.nodes_held);
        out.push_str(&row(&e.station, e.si, e.nodes_held));
    }
    out.push_str(RULE);
    out.push('\n');
    out.push_str(&format!("Number of stations: {shown:<27} {in_use:>18}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, held: u32, usage: f64) -> SubmitterPrio {
        let (submitter, home) = name.split_once('@').unwrap_or((name, ""));
        SubmitterPrio {
            name: name.into(),
            submitter: submitter.into(),
            home: home.into(),
            nodes_held: held,
            usage,
        }
    }

    #[test]
    fn users_come_in_increasing_effective_priority_floored_at_a_half() {
        let rows = [
            row("carol@h2", 3, 2.75),
            row("alice@h1", 0, 0.01),
            row("bob@h1", 1, f64::NAN),
            row("alice@h2", 1, 1.25),
        ];
        let t = users_table(&rows, None);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].starts_with("User Name "), "{t}");
        assert!(lines[2].starts_with("-----"), "{t}");
        let names: Vec<&str> = lines[3..7]
            .iter()
            .map(|l| l.split_whitespace().next().unwrap_or(""))
            .collect();
        // Two at the floor, by name; then by usage.
        assert_eq!(names, ["alice@h1", "bob@h1", "alice@h2", "carol@h2"]);
        let prio: Vec<&str> = lines[3..7]
            .iter()
            .map(|l| l.split_whitespace().nth(1).unwrap_or(""))
            .collect();
        assert_eq!(prio, ["0.50", "0.50", "1.25", "2.75"]);
        assert!(lines[7].starts_with("-----"), "{t}");
        let total: Vec<&str> = lines[8].split_whitespace().collect();
        assert_eq!(total, ["Number", "of", "users:", "4", "5"], "{t}");
    }

    #[test]
    fn a_username_picks_its_rows_at_any_home_or_at_one() {
        let rows = [
            row("alice@h1", 1, 1.0),
            row("alice@h2", 0, 0.7),
            row("bob@h1", 2, 2.0),
        ];
        let count = |t: String| t.lines().count() - 5;
        assert_eq!(count(users_table(&rows, Some("alice"))), 2);
        assert_eq!(count(users_table(&rows, Some("alice@h2"))), 1);
        assert_eq!(count(users_table(&rows, Some("nobody"))), 0);
    }

    #[test]
    fn a_name_with_escapes_is_printed_harmless() {
        let t = users_table(&[row("ev\u{1b}]0;x\u{7}il@h", 0, 1.0)], None);
        assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{t:?}");
    }
}
