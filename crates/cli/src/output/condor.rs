//! HTCondor's own tables, for the `condor_*` commands (`crate::condor`):
//! `condor_q`'s batch and `-nobatch` views, `-run` and `-hold`, the
//! totals lines, and `condor_history`'s table; laid out as HTCondor's
//! default print formats lay them out (`src/condor_q.V6/queue.cpp`,
//! `src/condor_tools/history.cpp`), so the headings, widths, alignment
//! and the `_` and `[????]` placeholders are HTCondor's. Every text from
//! a user (owners, commands, batch names, hold reasons, hosts) is escaped
//! for the terminal.

use super::escape::term;
use super::layout::{Alt, Cells, Col, Layout};
use super::printf::{format_date, format_time};
use gleaner_proto::job::JobId;

/// One job as the per-job tables show it.
#[derive(Clone, Debug)]
pub struct JobRow {
    pub id: JobId,
    pub owner: String,
    /// `QDate`, seconds since the epoch.
    pub qdate: i64,
    /// Wall-clock seconds of its runs so far (`RUN_TIME`).
    pub run_secs: i64,
    /// `JobStatus` (1 idle … 7 suspended).
    pub status: u8,
    pub prio: i32,
    /// `SIZE`: memory used, MiB (Gleaner does not measure it: 0).
    pub size_mb: f64,
    /// `CMD`: the executable's file name and the arguments.
    pub cmd: String,
    pub host: Option<String>,
    pub hold_reason: Option<String>,
    pub hold_code: Option<i64>,
    pub hold_subcode: Option<i64>,
    /// `EnteredCurrentStatus`.
    pub entered_status: i64,
    /// `CompletionDate` (history), 0 when none.
    pub completion: i64,
}

impl Default for JobRow {
    fn default() -> Self {
        JobRow {
            id: JobId::new(0, 0),
            owner: String::new(),
            qdate: 0,
            run_secs: 0,
            status: 0,
            prio: 0,
            size_mb: 0.0,
            cmd: String::new(),
            host: None,
            hold_reason: None,
            hold_code: None,
            hold_subcode: None,
            entered_status: 0,
            completion: 0,
        }
    }
}

/// HTCondor's one-letter job state (`encode_status`), with the blank that
/// follows it in the `ST` column.
pub fn status_char(status: u8) -> &'static str {
    match status {
        1 => "I ",
        2 => "R ",
        3 => "X ",
        4 => "C ",
        5 => "H ",
        6 => "> ",
        7 => "S ",
        _ => "  ",
    }
}

fn esc(s: &str) -> String {
    term(s).into_owned()
}

/// The `CMD` text: the executable's file name, then the arguments.
pub fn job_description(cmd: &str, args: &str) -> String {
    let base = cmd.rsplit('/').next().unwrap_or(cmd);
    if args.is_empty() {
        base.to_string()
    } else {
        format!("{base} {args}")
    }
}

/// Rows cut to `width` characters (a terminal's), unless `None`.
fn fit_width(text: String, width: Option<usize>) -> String {
    let Some(w) = width else {
        return text;
    };
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        out.extend(body.chars().take(w));
        out.push_str(nl);
    }
    out
}

/// The title before a queue listing: two blank lines, then
/// `-- Schedd: NAME : <ADDRESS> @ MM/DD/YY HH:MM:SS`.
pub fn schedd_title(name: &str, address: &str, now: i64) -> String {
    let when = super::printf::local_stamp(now);
    format!(
        "\n\n-- Schedd: {} : <{}> @ {when}\n",
        esc(name),
        esc(address)
    )
}

/// `condor_q -nobatch`: ` ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD`.
pub fn nobatch(rows: &[JobRow], width: Option<usize>) -> String {
    let mut layout = Layout::new(vec![
        Col::new(" ID", 5).no_suffix(),
        Col::new(" ", 3).no_prefix(),
        Col::new("OWNER", -14).or(Alt::wide('?')),
        Col::new("  SUBMITTED", 11),
        Col::new("    RUN_TIME", 12),
        Col::new("ST", -2),
        Col::new("PRI", -3).auto(),
        Col::new("SIZE", 4),
        Col::new("CMD", 0),
    ]);
    let cells: Vec<Cells> = rows
        .iter()
        .map(|r| {
            vec![
                Some(format!("{:4}.", r.id.cluster)),
                Some(format!("{:<3}", r.id.proc)),
                Some(esc(&r.owner)),
                Some(format_date(r.qdate)),
                Some(format_time(r.run_secs)),
                Some(status_char(r.status).to_string()),
                Some(r.prio.to_string()),
                Some(format!("{:.1}", r.size_mb)),
                Some(esc(&r.cmd)),
            ]
        })
        .collect();
    layout.fit(&cells);
    let mut out = layout.header();
    for c in &cells {
        out.push_str(&layout.row(c));
    }
    fit_width(out, width)
}

/// `condor_q -run`: the running jobs and where.
pub fn run(rows: &[JobRow], width: Option<usize>) -> String {
    let layout = Layout::new(vec![
        Col::new(" ID", 5).no_suffix(),
        Col::new(" ", 3).no_prefix(),
        Col::new("OWNER", -14).or(Alt::wide('?')),
        Col::new("  SUBMITTED", 11).or(Alt::wide('?')),
        Col::new("    RUN_TIME", 12).or(Alt::wide('?')),
        Col::new("HOST(S)", 0).or(Alt::wide('?')),
    ]);
    let mut out = layout.header();
    for r in rows {
        out.push_str(&layout.row(&[
            Some(format!("{:4}.", r.id.cluster)),
            Some(format!("{:<3}", r.id.proc)),
            Some(esc(&r.owner)),
            Some(format_date(r.qdate)),
            Some(format_time(r.run_secs)),
            r.host.as_deref().map(esc),
        ]));
    }
    fit_width(out, width)
}

/// `condor_q -hold`: the held jobs, since when and why.
pub fn hold(rows: &[JobRow], width: Option<usize>) -> String {
    let layout = Layout::new(vec![
        Col::new(" ID", 5).no_suffix(),
        Col::new(" ", 3).no_prefix(),
        Col::new("OWNER", -14).or(Alt::wide('?')),
        Col::new("HELD_SINCE", 11).or(Alt::wide('?')),
        Col::new("CODE", 0).no_suffix().or(Alt::of('?')),
        Col::new("/SUB", 0).no_prefix().truncate(),
        Col::new("HOLD_REASON", 0),
    ]);
    let mut out = layout.header();
    for r in rows {
        out.push_str(&layout.row(&[
            Some(format!("{:4}.", r.id.cluster)),
            Some(format!("{:<3}", r.id.proc)),
            Some(esc(&r.owner)),
            Some(format_date(r.entered_status)),
            r.hold_code.map(|c| format!("{c:4}")),
            Some(r.hold_subcode.map_or(" ".into(), |s| format!("/{s:<3}"))),
            r.hold_reason.as_deref().map(esc),
        ]));
    }
    fit_width(out, width)
}

/// One batch of `condor_q`'s default view: a cluster, or the clusters of
/// one owner sharing a batch name.
#[derive(Clone, Debug)]
pub struct Batch {
    pub owner: String,
    /// `JobBatchName`, else `ID: CLUSTER`.
    pub name: String,
    /// The earliest `QDate`.
    pub qdate: i64,
    pub done: u64,
    pub run: u64,
    pub idle: u64,
    pub held: u64,
    pub total: u64,
    /// The first and last job still in the queue.
    pub first: JobId,
    pub last: JobId,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            owner: String::new(),
            name: String::new(),
            qdate: 0,
            done: 0,
            run: 0,
            idle: 0,
            held: 0,
            total: 0,
            first: JobId::new(0, 0),
            last: JobId::new(0, 0),
        }
    }
}

/// `JOB_IDS`: `C.P`, `C.P-Q` within one cluster, `C.P ... D.Q` across.
pub fn job_ids(first: JobId, last: JobId) -> String {
    if first == last {
        first.to_string()
    } else if first.cluster == last.cluster {
        format!("{}.{}-{}", first.cluster, first.proc, last.proc)
    } else {
        format!("{first} ... {last}")
    }
}

fn digits(n: u64) -> usize {
    n.to_string().len()
}

/// `condor_q`'s default (batch) view: `OWNER BATCH_NAME SUBMITTED DONE
/// RUN IDLE [HOLD] TOTAL JOB_IDS`, counts of 0 shown as `_`, the `HOLD`
/// column only when a job is held or nothing is listed.
pub fn batches(list: &[Batch], width: Option<usize>) -> String {
    let owner_w = list.iter().map(|b| b.owner.chars().count()).max();
    let name_w = list.iter().map(|b| b.name.chars().count()).max();
    // OWNER: as wide as the longest owner (8 at least when shorter than
    // the heading); BATCH_NAME: 10 at least; counters: 6 or their digits.
    let owner_w = match owner_w {
        None => 5,
        Some(w) if w < 5 => 8,
        Some(w) => w,
    };
    let name_w = name_w.map_or(12, |w| w.max(10));
    let counter =
        |f: fn(&Batch) -> u64| list.iter().map(|b| digits(f(b))).max().unwrap_or(0).max(6);
    let any_held = list.iter().any(|b| b.held > 0);
    let mut hold_col = Col::new("  HOLD", counter(|b| b.held) as i32).or(Alt::of('_'));
    hold_col.hide = !any_held && !list.is_empty();
    let layout = Layout::new(vec![
        Col::new("OWNER", -(owner_w as i32)).or(Alt::wide('?')),
        Col::new("BATCH_NAME", -(name_w as i32)),
        Col::new("   SUBMITTED", 12),
        Col::new("  DONE", counter(|b| b.done) as i32).or(Alt::of('_')),
        Col::new("  RUN ", counter(|b| b.run) as i32).or(Alt::of('_')),
        Col::new("  IDLE", counter(|b| b.idle) as i32).or(Alt::of('_')),
        hold_col,
        Col::new(" TOTAL", counter(|b| b.total) as i32).or(Alt::of('_')),
        Col::new("JOB_IDS", 0),
    ]);
    let count = |n: u64| (n > 0).then(|| n.to_string());
    let mut out = layout.header();
    for b in list {
        out.push_str(&layout.row(&[
            Some(esc(&b.owner)),
            Some(esc(&b.name)),
            Some(format_date(b.qdate)),
            count(b.done),
            count(b.run),
            count(b.idle),
            count(b.held),
            count(b.total),
            Some(job_ids(b.first, b.last)),
        ]));
    }
    fit_width(out, width)
}

/// Jobs by state, as the totals lines count them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub completed: u64,
    pub removed: u64,
    pub idle: u64,
    pub running: u64,
    pub held: u64,
    pub suspended: u64,
}

impl Counts {
    pub fn jobs(&self) -> u64 {
        self.completed + self.removed + self.idle + self.running + self.held + self.suspended
    }

    /// Counts one job of HTCondor state `status`.
    pub fn add(&mut self, status: u8) {
        match status {
            1 => self.idle += 1,
            2 | 6 => self.running += 1,
            3 => self.removed += 1,
            4 => self.completed += 1,
            5 => self.held += 1,
            7 => self.suspended += 1,
            _ => {}
        }
    }

    fn line(&self, label: &str) -> String {
        format!(
            "{label}{} jobs; {} completed, {} removed, {} idle, {} running, {} held, {} suspended",
            self.jobs(),
            self.completed,
            self.removed,
            self.idle,
            self.running,
            self.held,
            self.suspended
        )
    }
}

/// The totals after a listing (HTCondor's multi-line summary): `Total
/// for query:`, `Total for ME:` when only the caller's jobs were asked
/// for, `Total for all users:`; each line but the last ends with the
/// space HTCondor leaves there. With `blank_before`, the blank line that
/// separates them from a listing.
pub fn totals(
    query: &Counts,
    mine: Option<(&str, &Counts)>,
    all: &Counts,
    blank_before: bool,
) -> String {
    let mut lines = vec![query.line("Total for query: ")];
    if let Some((me, c)) = mine {
        lines.push(c.line(&format!("Total for {}: ", esc(me))));
    }
    lines.push(all.line("Total for all users: "));
    let mut out = String::new();
    if blank_before {
        out.push('\n');
    }
    out.push_str(&lines.join(" \n"));
    out.push_str("\n\n");
    out
}

/// `condor_history`'s table: ` ID     OWNER          SUBMITTED   RUN_TIME     ST  COMPLETED   CMD`.
pub fn history(rows: &[JobRow], width: Option<usize>) -> String {
    let mut layout = Layout::new(vec![
        Col::new(" ID         ", -12).auto(),
        Col::new("OWNER", -14).or(Alt::wide('?')),
        Col::new("  SUBMITTED", 11).or(Alt::wide('?')),
        Col::new("  RUN_TIME  ", 12),
        Col::new("ST", -2),
        Col::new("  COMPLETED", 11),
        Col::new("CMD", 0),
    ]);
    let cells: Vec<Cells> = rows
        .iter()
        .map(|r| {
            vec![
                Some(r.id.to_string()),
                Some(esc(&r.owner)),
                Some(format_date(r.qdate)),
                Some(format_time(r.run_secs)),
                Some(status_char(r.status).to_string()),
                (r.completion > 0).then(|| format_date(r.completion)),
                Some(esc(&r.cmd)),
            ]
        })
        .collect();
    layout.fit(&cells);
    let mut out = layout.header();
    for c in &cells {
        out.push_str(&layout.row(c));
    }
    fit_width(out, width)
}

/// One machine of `condor_status`.
#[derive(Clone, Debug, Default)]
pub struct Machine {
    pub name: String,
    pub opsys: String,
    pub arch: String,
    /// `Owner`, `Unclaimed`, `Claimed`, `Drained`.
    pub state: String,
    /// `Idle`, `Busy`.
    pub activity: String,
    pub load: Option<f64>,
    pub memory_mb: Option<i64>,
    /// Seconds in the current activity.
    pub activity_secs: Option<i64>,
}

/// `condor_status`'s machine table: `Name OpSys Arch State Activity
/// LoadAv Mem ActvtyTime`, a blank line after the headings.
pub fn machines(list: &[Machine], width: Option<usize>) -> String {
    let name_w = list
        .iter()
        .map(|m| m.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut layout = Layout::new(vec![
        Col::new("Name", -(name_w as i32)).or(Alt::wide('?')),
        Col::new("OpSys", -10).or(Alt::wide('?')),
        Col::new("Arch", -8).or(Alt::wide('?')),
        Col::new("State", -5).auto().or(Alt::wide('?')),
        Col::new("Activity", -8).or(Alt::wide('?')),
        Col::new("LoadAv", 6).truncate().or(Alt::wide('?')),
        Col::new("Mem", 6).or(Alt::wide('?')),
        Col::new("  ActvtyTime", 12)
            .no_prefix()
            .truncate()
            .or(Alt::of('-')),
    ]);
    let cells: Vec<Cells> = list
        .iter()
        .map(|m| {
            vec![
                Some(esc(&m.name)),
                Some(esc(&m.opsys)),
                Some(esc(&m.arch)),
                Some(esc(&m.state)),
                Some(esc(&m.activity)),
                m.load.map(|l| format!("{l:.3}")),
                m.memory_mb.map(|v| format!("{v:6}")),
                m.activity_secs.map(format_time),
            ]
        })
        .collect();
    layout.fit(&cells);
    let mut out = layout.header();
    out.push('\n');
    for c in &cells {
        out.push_str(&layout.row(c));
    }
    fit_width(out, width)
}

/// `condor_status`'s totals by `Arch/OpSys`, then `Total`.
pub fn machine_totals(list: &[Machine]) -> String {
    #[derive(Default, Clone, Copy)]
    struct T {
        machines: u64,
        owner: u64,
        claimed: u64,
        unclaimed: u64,
        matched: u64,
        preempting: u64,
        drain: u64,
        backfill: u64,
        bkidle: u64,
    }
    fn add(t: &mut T, state: &str) {
        match state {
            "Owner" => t.owner += 1,
            "Claimed" => t.claimed += 1,
            "Unclaimed" => t.unclaimed += 1,
            "Matched" => t.matched += 1,
            "Preempting" => t.preempting += 1,
            "Drained" => t.drain += 1,
            "Backfill" => t.backfill += 1,
            _ => return,
        }
        t.machines += 1;
    }
    fn line(t: &T) -> String {
        format!(
            "{:6} {:5} {:7} {:9} {:7} {:10} {:6} {:8} {:6}\n",
            t.machines,
            t.owner,
            t.claimed,
            t.unclaimed,
            t.matched,
            t.preempting,
            t.drain,
            t.backfill,
            t.bkidle
        )
    }
    let mut keys: std::collections::BTreeMap<String, T> = Default::default();
    let mut total = T::default();
    for m in list {
        add(
            keys.entry(format!("{}/{}", m.arch, m.opsys)).or_default(),
            &m.state,
        );
        add(&mut total, &m.state);
    }
    let w = keys
        .keys()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(14);
    let mut out = format!(
        "{:w$}{:>6.6} {:>5.5} {:>7.7} {:>9.9} {:>7.7} {:>10.10} {:>6.6} {:>8.8} {:>6.6}\n\n",
        "",
        "Total",
        "Owner",
        "Claimed",
        "Unclaimed",
        "Matched",
        "Preempting",
        "Drain",
        "Backfill",
        "BkIdle"
    );
    for (k, t) in &keys {
        out.push_str(&format!("{:>w$}", esc(k)));
        out.push_str(&line(t));
    }
    if !keys.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("{:>w$}", "Total"));
    out.push_str(&line(&total));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(cluster: u64, proc: u32, owner: &str, status: u8, cmd: &str) -> JobRow {
        JobRow {
            id: JobId::new(cluster, proc),
            owner: owner.into(),
            qdate: -1,
            run_secs: 13,
            status,
            cmd: cmd.into(),
            ..Default::default()
        }
    }

    #[test]
    fn nobatch_as_the_manual_shows_it() {
        // condor_q.rst: " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"
        let out = nobatch(&[job(591, 0, "wenger", 2, "condor_dagman -p 0")], None);
        let mut lines = out.lines();
        assert_eq!(
            lines.next().unwrap(),
            " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"
        );
        // " 591.0   wenger          9/13 16:05   0+00:00:13 R  0    2.4 condor_dagman -p 0"
        // with this test's unknown date and no measured size.
        assert_eq!(
            lines.next().unwrap(),
            " 591.0   wenger             ???       0+00:00:13 R  0    0.0 condor_dagman -p 0"
        );
    }

    #[test]
    fn batches_as_the_manual_shows_them() {
        let b = Batch {
            owner: "wenger".into(),
            name: "DAG: 3696".into(),
            qdate: -1,
            done: 0,
            run: 10,
            idle: 0,
            held: 0,
            total: 10,
            first: JobId::new(3698, 0),
            last: JobId::new(3707, 0),
        };
        let out = batches(&[b], None);
        let mut lines = out.lines();
        assert_eq!(
            lines.next().unwrap(),
            "OWNER  BATCH_NAME    SUBMITTED   DONE   RUN    IDLE  TOTAL JOB_IDS"
        );
        assert_eq!(
            lines.next().unwrap(),
            "wenger DAG: 3696       ???          _     10      _     10 3698.0 ... 3707.0"
        );
        // Nothing listed: HTCondor's empty header, HOLD included.
        assert_eq!(
            batches(&[], None),
            "OWNER BATCH_NAME      SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS\n"
        );
        let held = Batch {
            owner: "wenger".into(),
            name: "CMD: /bin/slee".into(),
            held: 1,
            run: 3,
            total: 4,
            first: JobId::new(599, 0),
            last: JobId::new(599, 3),
            qdate: -1,
            ..Default::default()
        };
        let out = batches(&[held], None);
        assert!(
            out.starts_with(
                "OWNER  BATCH_NAME        SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS\n"
            ),
            "{out}"
        );
        assert!(
            out.ends_with("      _      3      _      1      4 599.0-3\n"),
            "{out}"
        );
    }

    #[test]
    fn totals_lines() {
        let mut q = Counts::default();
        q.add(1);
        q.add(1);
        q.add(2);
        let all = Counts {
            idle: 5,
            running: 1,
            ..Default::default()
        };
        assert_eq!(
            totals(&q, Some(("alice", &q)), &all, true),
            "\nTotal for query: 3 jobs; 0 completed, 0 removed, 2 idle, 1 running, 0 held, 0 suspended \n\
             Total for alice: 3 jobs; 0 completed, 0 removed, 2 idle, 1 running, 0 held, 0 suspended \n\
             Total for all users: 6 jobs; 0 completed, 0 removed, 5 idle, 1 running, 0 held, 0 suspended\n\n"
        );
    }

    #[test]
    fn status_as_htcondor_prints_it() {
        let m = Machine {
            name: "ws1".into(),
            opsys: "LINUX".into(),
            arch: "X86_64".into(),
            state: "Unclaimed".into(),
            activity: "Idle".into(),
            load: Some(0.0),
            memory_mb: Some(679),
            activity_secs: Some(98338),
        };
        let out = machines(std::slice::from_ref(&m), None);
        assert_eq!(
            out,
            "Name OpSys      Arch     State     Activity LoadAv Mem     ActvtyTime\n\n\
             ws1  LINUX      X86_64   Unclaimed Idle      0.000    679  1+03:18:58\n"
        );
        let t = machine_totals(&[m]);
        assert_eq!(
            t,
            "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle\n\n\
             \x20 X86_64/LINUX     1     0       0         1       0          0      0        0      0\n\n\
             \x20        Total     1     0       0         1       0          0      0        0      0\n"
        );
    }

    #[test]
    fn history_heading() {
        let out = history(&[], None);
        assert_eq!(
            out,
            " ID          OWNER            SUBMITTED   RUN_TIME   ST   COMPLETED CMD\n"
        );
    }

    #[test]
    fn user_text_is_escaped() {
        let mut j = job(1, 0, "ev\x1bil", 5, "/bin/sh -c \x1b]0;x\x07");
        j.hold_reason = Some("bad\x07".into());
        for out in [
            nobatch(&[j.clone()], None),
            hold(&[j.clone()], None),
            history(&[j], None),
        ] {
            assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
        }
    }

    #[test]
    fn terminals_cut_long_rows() {
        let out = nobatch(&[job(1, 0, "a", 1, &"x".repeat(200))], Some(79));
        assert!(out.lines().all(|l| l.chars().count() <= 79));
    }
}
