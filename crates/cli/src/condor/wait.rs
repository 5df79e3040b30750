//! `condor_wait [-status] [-wait SECONDS] [-num N] LOG [JOB]`: waits on a
//! job event log (the `log = …` of a submit file, which the station
//! writes in HTCondor's format) until every job it names, or JOB (a
//! cluster `12`, a job `12.0`, or `12.0.0`), has terminated or been
//! aborted: `All jobs done.` and status 0; `Time expired.` and status 1
//! when `-wait` runs out. `-status` prints each job's progress as it
//! reads it (`12.0.0 submitted`, `… executing on host H`, `… completed`,
//! `… aborted`).

use super::args::{Cursor, Usage, is_opt};
use crate::output::escape::term;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One event header of a job event log: `NNN (C.P.S) DATE TIME text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub code: u32,
    pub cluster: i64,
    pub proc: i64,
    pub subproc: i64,
    /// The rest of the line after the date and time.
    pub text: String,
}

/// The header on `line`, when it is one.
pub fn header(line: &str) -> Option<Header> {
    let code: u32 = line.get(..3)?.parse().ok()?;
    let rest = line.get(3..)?.strip_prefix(" (")?;
    let (id, rest) = rest.split_once(')')?;
    let mut parts = id.split('.');
    let mut num = || parts.next()?.trim().parse::<i64>().ok();
    let (cluster, proc, subproc) = (num()?, num()?, num().unwrap_or(0));
    // Date and time, then the text.
    let text = rest
        .trim_start()
        .splitn(3, ' ')
        .nth(2)
        .unwrap_or("")
        .to_string();
    Some(Header {
        code,
        cluster,
        proc,
        subproc,
        text,
    })
}

/// Which jobs to wait for: all, one cluster, one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Want {
    cluster: Option<i64>,
    proc: Option<i64>,
    subproc: Option<i64>,
}

impl Want {
    fn parse(tool: &str, s: &str) -> Result<Want, Usage> {
        let bad = || Usage::new(format!("Couldn't understand job number: {s}"));
        let mut it = s.split('.');
        let mut next = || -> Result<Option<i64>, Usage> {
            match it.next() {
                None => Ok(None),
                Some(p) => p.parse().map(Some).map_err(|_| bad()),
            }
        };
        let w = Want {
            cluster: next()?,
            proc: next()?,
            subproc: next()?,
        };
        if it.next().is_some() || w.cluster.is_none() {
            return Err(Usage::new(format!("{tool}: {}", bad().message)));
        }
        Ok(w)
    }

    fn matches(&self, h: &Header) -> bool {
        self.cluster.is_none_or(|c| c == h.cluster)
            && self.proc.is_none_or(|p| p == h.proc)
            && self.subproc.is_none_or(|s| s == h.subproc)
    }
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let (mut status, mut wait, mut num) = (false, None::<u64>, None::<usize>);
    let mut positional = Vec::new();
    while let Some(a) = c.next() {
        if is_opt(&a, "status", 1) || a.starts_with("-debug") {
            status = true;
        } else if is_opt(&a, "wait", 1) {
            let v = c.value(&a, true)?;
            wait = Some(
                v.parse()
                    .map_err(|_| Usage::new(format!("-wait {v}: not a number of seconds")))?,
            );
        } else if is_opt(&a, "num", 1) {
            let v = c.value(&a, true)?;
            let n: usize = v
                .parse()
                .map_err(|_| Usage::new("-num requires an argument"))?;
            if n == 0 {
                return Err(Usage::new("-num must be greater than zero").into());
            }
            num = Some(n);
        } else if a.starts_with("-echo") || a.starts_with("-log") {
            if a.starts_with("-log") {
                positional.push(c.value(&a, false)?);
            }
        } else if is_opt(&a, "help", 1) {
            eprintln!("\nUse: {tool} [options] <log-file> [job-number]");
            return Ok(ExitCode::SUCCESS);
        } else if a.starts_with('-') {
            return Err(Usage::new(format!("Unknown argument: {a}")).into());
        } else {
            positional.push(a);
        }
    }
    let (log, want) = match positional.as_slice() {
        [log] => (
            log.clone(),
            Want {
                cluster: None,
                proc: None,
                subproc: None,
            },
        ),
        [log, job] => (log.clone(), Want::parse(tool, job)?),
        [] => {
            return Err(
                Usage::new(format!("\nUse: {tool} [options] <log-file> [job-number]")).into(),
            );
        }
        [_, _, extra, ..] => return Err(Usage::new(format!("Extra argument: {extra}\n")).into()),
    };
    let mut file =
        std::fs::File::open(&log).map_err(|e| Usage::new(format!("Couldn't open {log}: {e}")))?;
    let deadline = wait.map(|s| Instant::now() + Duration::from_secs(s));
    let mut pending: BTreeSet<(i64, i64, i64)> = BTreeSet::new();
    let (mut submitted, mut finished) = (0usize, 0usize);
    let mut partial: Vec<u8> = Vec::new();
    let mut initial = true;
    loop {
        let mut chunk = Vec::new();
        // The log grows; read what is new (bounded per look).
        (&mut file).take(1 << 20).read_to_end(&mut chunk)?;
        let got_any = !chunk.is_empty();
        partial.extend_from_slice(&chunk);
        let complete = partial
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let text: Vec<u8> = partial.drain(..complete).collect();
        for line in String::from_utf8_lossy(&text).lines() {
            let Some(h) = header(line) else { continue };
            if !want.matches(&h) {
                continue;
            }
            let key = (h.cluster, h.proc, h.subproc);
            let shown = format!("{}.{}.{}", h.cluster, h.proc, h.subproc);
            match h.code {
                0 => {
                    if status {
                        println!("{shown} submitted");
                    }
                    pending.insert(key);
                    submitted += 1;
                }
                1 if status => {
                    let host = h
                        .text
                        .strip_prefix("Job executing on host: ")
                        .unwrap_or(&h.text);
                    println!("{shown} executing on host {}", term(host));
                }
                5 | 9 => {
                    if status {
                        println!(
                            "{shown} {}",
                            if h.code == 5 { "completed" } else { "aborted" }
                        );
                    }
                    pending.remove(&key);
                    finished += 1;
                }
                _ => {}
            }
            if let Some(n) = num
                && finished >= n
            {
                println!("Specifed number of jobs ({n}) done.");
                return Ok(ExitCode::SUCCESS);
            }
            if num.is_none() && pending.is_empty() && submitted > 0 && !initial {
                println!("All jobs done.");
                return Ok(ExitCode::SUCCESS);
            }
        }
        if !got_any {
            if initial {
                initial = false;
                if pending.is_empty() && num.is_none() && submitted > 0 {
                    println!("All jobs done.");
                    return Ok(ExitCode::SUCCESS);
                }
            }
            if pending.is_empty() && submitted == 0 {
                eprintln!(
                    "{}",
                    if want.cluster.is_none() {
                        "This log does not mention any jobs!"
                    } else {
                        "This log does not mention that job!"
                    }
                );
                return Ok(ExitCode::from(1));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                println!("Time expired.");
                return Ok(ExitCode::from(1));
            }
            std::thread::sleep(Duration::from_millis(250));
            // A log rewritten shorter starts over.
            let len = file.metadata()?.len();
            let pos = file.stream_position()?;
            if len < pos {
                file.seek(SeekFrom::Start(0))?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_headers() {
        let h = header("005 (012.003.000) 2026-01-18 10:47:38Z Job terminated.").unwrap();
        assert_eq!((h.code, h.cluster, h.proc, h.subproc), (5, 12, 3, 0));
        assert_eq!(h.text, "Job terminated.");
        let h =
            header("001 (001.000.000) 01/18 10:47:38 Job executing on host: <1.2.3.4:5>").unwrap();
        assert_eq!(h.text, "Job executing on host: <1.2.3.4:5>");
        assert!(header("...").is_none());
        assert!(header("\t(1) Normal termination (return value 0)").is_none());
    }

    #[test]
    fn which_jobs() {
        let h = header("000 (012.003.000) 2026-01-18 10:47:38Z x").unwrap();
        assert!(Want::parse("w", "12").unwrap().matches(&h));
        assert!(Want::parse("w", "12.3").unwrap().matches(&h));
        assert!(!Want::parse("w", "12.4").unwrap().matches(&h));
        assert!(Want::parse("w", "x").is_err());
    }
}
