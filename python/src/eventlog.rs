//! HTCondor's job event log (the user log a job's `log =` names) read
//! back event by event, as `htcondor2.JobEventLog` reads it: each event
//! becomes its number, job id, time and a ClassAd with the attribute
//! names HTCondor's reader gives (`SubmitHost`, `ReturnValue`,
//! `HoldReason`, …), checked against `htcondor2.JobEventLog` on the same
//! text in this module's tests and in the differential test.
//!
//! The text (HTCondor's `condor_event.cpp` layout, which the station's
//! `home::user_log::event` writes): a header line `NNN (C.P.S) DATE TIME
//! text` (ISO date, `Z` for UTC, or the old `MM/DD` without a year, in
//! local time), body lines, and `...` closing the event. A follower reads
//! the file as it grows, returning only whole events.

use gleaner_classad::{Ad, Expr, Literal};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub number: i64,
    pub cluster: i64,
    pub proc: i64,
    /// Seconds since the epoch.
    pub timestamp: i64,
    /// The event's attributes as HTCondor's reader names them.
    pub ad: Ad,
    /// The event as text (header and body, without the `...` line), its
    /// time shown in local time as HTCondor's `str(event)` does.
    pub text: String,
}

/// Why an event's text could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot read the job event log {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("job event log {path}, byte {offset}: {message}")]
    Bad {
        path: String,
        offset: u64,
        message: String,
    },
}

/// HTCondor's `MyType` of each event number.
fn my_type(n: i64) -> &'static str {
    match n {
        0 => "SubmitEvent",
        1 => "ExecuteEvent",
        2 => "ExecutableErrorEvent",
        3 => "CheckpointedEvent",
        4 => "JobEvictedEvent",
        5 => "JobTerminatedEvent",
        6 => "JobImageSizeEvent",
        7 => "ShadowExceptionEvent",
        8 => "GenericEvent",
        9 => "JobAbortedEvent",
        10 => "JobSuspendedEvent",
        11 => "JobUnsuspendedEvent",
        12 => "JobHeldEvent",
        13 => "JobReleaseEvent",
        14 => "NodeExecuteEvent",
        15 => "NodeTerminatedEvent",
        16 => "PostScriptTerminatedEvent",
        21 => "RemoteErrorEvent",
        22 => "JobDisconnectedEvent",
        23 => "JobReconnectedEvent",
        24 => "JobReconnectFailedEvent",
        28 => "JobAdInformationEvent",
        33 => "AttributeUpdateEvent",
        35 => "ClusterSubmitEvent",
        36 => "ClusterRemoveEvent",
        40 => "FileTransferEvent",
        _ => "GenericEvent",
    }
}

/// A civil date and time, and whether it was written as UTC.
struct Stamp {
    civil: jiff::civil::DateTime,
    utc: bool,
}

fn parse_stamp(date: &str, time: &str) -> Option<Stamp> {
    let (time, utc) = match time.strip_suffix('Z') {
        Some(t) => (t, true),
        None => (time, false),
    };
    // Fractions of a second are dropped (HTCondor's timestamp is whole).
    let time = time.split('.').next()?;
    let mut t = time.split(':').map(|x| x.parse::<i8>().ok());
    let (h, m, s) = (t.next()??, t.next()??, t.next()??);
    let (y, mo, d) = if let Some((mo, d)) = date.split_once('/') {
        // The old format has no year: this year, as HTCondor takes it.
        let year = jiff::tz::TimeZone::system()
            .to_datetime(jiff::Timestamp::now())
            .year();
        (year, mo.parse().ok()?, d.parse().ok()?)
    } else {
        let mut p = date.split('-');
        (
            p.next()?.parse().ok()?,
            p.next()?.parse().ok()?,
            p.next()?.parse().ok()?,
        )
    };
    let civil = jiff::civil::DateTime::new(y, mo, d, h, m, s, 0).ok()?;
    Some(Stamp { civil, utc })
}

impl Stamp {
    fn timestamp(&self) -> Option<jiff::Timestamp> {
        let tz = if self.utc {
            jiff::tz::TimeZone::UTC
        } else {
            jiff::tz::TimeZone::system()
        };
        tz.to_timestamp(self.civil).ok()
    }
}

/// The local civil time of `ts`.
fn local(ts: jiff::Timestamp) -> jiff::civil::DateTime {
    jiff::tz::TimeZone::system().to_datetime(ts)
}

fn put_str(ad: &mut Ad, name: &str, v: &str) {
    ad.insert_str(name, v);
}

/// `N  -  what` lines: the number before the dash.
fn figure(line: &str) -> Option<(&str, &str)> {
    let (n, what) = line.split_once("  -  ")?;
    Some((n.trim(), what.trim()))
}

/// Reads the body lines common to several events: usage and byte
/// counts, and the termination lines.
fn common_body(ad: &mut Ad, body: &[&str]) {
    for l in body {
        let t = l.trim();
        if let Some((n, what)) = figure(t) {
            let usage = |name: &str, ad: &mut Ad| put_str(ad, name, n);
            let bytes = |name: &str, ad: &mut Ad| {
                if let Ok(v) = n.parse::<f64>() {
                    ad.insert_real(name, v);
                }
            };
            match what {
                "Run Remote Usage" => usage("RunRemoteUsage", ad),
                "Run Local Usage" => usage("RunLocalUsage", ad),
                "Total Remote Usage" => usage("TotalRemoteUsage", ad),
                "Total Local Usage" => usage("TotalLocalUsage", ad),
                "Run Bytes Sent By Job" | "Run Bytes Sent By Job For Checkpoint" => {
                    bytes("SentBytes", ad)
                }
                "Run Bytes Received By Job" => bytes("ReceivedBytes", ad),
                "Total Bytes Sent By Job" => bytes("TotalSentBytes", ad),
                "Total Bytes Received By Job" => bytes("TotalReceivedBytes", ad),
                "MemoryUsage of job (MB)" => int(ad, "MemoryUsage", n),
                "ResidentSetSize of job (KB)" => int(ad, "ResidentSetSize", n),
                "ProportionalSetSize of job (KB)" => int(ad, "ProportionalSetSize", n),
                _ => {}
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("(1) Normal termination (return value ") {
            ad.insert_bool("TerminatedNormally", true);
            int(ad, "ReturnValue", rest.trim_end_matches(')'));
        } else if let Some(rest) = t.strip_prefix("(0) Abnormal termination (signal ") {
            ad.insert_bool("TerminatedNormally", false);
            int(ad, "TerminatedBySignal", rest.trim_end_matches(')'));
        }
    }
}

fn int(ad: &mut Ad, name: &str, text: &str) {
    if let Ok(v) = text.trim().parse::<i64>() {
        ad.insert_int(name, v);
    }
}

/// The first body line that is free text (not a figure, usage or
/// parenthesised status line).
fn free_line<'a>(body: &[&'a str]) -> Option<&'a str> {
    body.iter().map(|l| l.trim()).find(|t| {
        !t.is_empty() && figure(t).is_none() && !t.starts_with('(') && !t.starts_with("Usr ")
    })
}

/// Reads one event from its lines (header first, `...` not included).
pub fn parse_event(lines: &[&str]) -> Result<Event, String> {
    let header = lines.first().ok_or("empty event")?;
    let mut words = header.splitn(5, ' ');
    let number: i64 = words
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("not an event header: {header:?}"))?;
    let id = words
        .next()
        .and_then(|w| w.strip_prefix('('))
        .and_then(|w| w.strip_suffix(')'))
        .ok_or_else(|| format!("no job id in {header:?}"))?;
    let mut ids = id.split('.').map(|x| x.parse::<i64>().ok());
    let (cluster, proc, subproc) = (
        ids.next().flatten().ok_or("bad cluster")?,
        ids.next().flatten().ok_or("bad proc")?,
        ids.next().flatten().unwrap_or(0),
    );
    let (date, time) = (
        words.next().ok_or("no date")?,
        words.next().ok_or("no time")?,
    );
    let text = words.next().unwrap_or("").trim_end();
    let stamp = parse_stamp(date, time).ok_or_else(|| format!("bad date in {header:?}"))?;
    let ts = stamp
        .timestamp()
        .ok_or_else(|| format!("time out of range in {header:?}"))?;
    let body = &lines[1..];

    let mut ad = Ad::new();
    ad.insert_str("MyType", my_type(number));
    ad.insert_int("EventTypeNumber", number);
    ad.insert_int("Cluster", cluster);
    ad.insert_int("Proc", proc);
    ad.insert_int("Subproc", subproc);
    let shown = local(ts);
    ad.insert_str(
        "EventTime",
        &shown.strftime("%Y-%m-%dT%H:%M:%S").to_string(),
    );
    let after = |prefix: &str| text.strip_prefix(prefix).map(str::trim);
    match number {
        0 => {
            if let Some(h) = after("Job submitted from host:") {
                put_str(&mut ad, "SubmitHost", h);
            }
            if let Some(n) = free_line(body) {
                put_str(&mut ad, "LogNotes", n);
            }
        }
        1 => {
            if let Some(h) = after("Job executing on host:") {
                put_str(&mut ad, "ExecuteHost", h);
            }
        }
        3 => common_body(&mut ad, body),
        4 => {
            let requeued = body
                .iter()
                .any(|l| l.trim() == "(0) Job terminated and was requeued");
            let checkpointed = body.iter().any(|l| l.trim() == "(1) Job was checkpointed.");
            ad.insert_bool("Checkpointed", checkpointed);
            ad.insert_bool("TerminatedAndRequeued", requeued);
            ad.insert_bool("TerminatedNormally", false);
            common_body(&mut ad, body);
            let reason = body
                .iter()
                .map(|l| l.trim())
                .find_map(|t| t.strip_prefix("Reason: "));
            let reason = reason.or_else(|| {
                requeued
                    .then(|| {
                        body.iter()
                            .map(|l| l.trim())
                            .rfind(|t| !t.is_empty() && figure(t).is_none() && !t.starts_with('('))
                    })
                    .flatten()
            });
            if let Some(r) = reason {
                put_str(&mut ad, "Reason", r);
            }
        }
        5 => common_body(&mut ad, body),
        6 => {
            if let Some(n) = after("Image size of job updated:") {
                int(&mut ad, "Size", n);
            }
            common_body(&mut ad, body);
        }
        7 => {
            if let Some(m) = free_line(body) {
                put_str(&mut ad, "Message", m);
            }
            common_body(&mut ad, body);
        }
        8 => put_str(&mut ad, "Info", text),
        9 | 13 => {
            if let Some(r) = free_line(body) {
                put_str(&mut ad, "Reason", r);
            }
        }
        10 => {
            for l in body {
                if let Some(n) = l
                    .trim()
                    .strip_prefix("Number of processes actually suspended:")
                {
                    int(&mut ad, "NumberOfPIDs", n);
                }
            }
        }
        12 => {
            let mut reason = None;
            for l in body {
                let t = l.trim();
                if let Some(rest) = t.strip_prefix("Code ") {
                    let mut p = rest.split_whitespace();
                    if let Some(c) = p.next() {
                        int(&mut ad, "HoldReasonCode", c);
                    }
                    if p.next() == Some("Subcode")
                        && let Some(s) = p.next()
                    {
                        int(&mut ad, "HoldReasonSubCode", s);
                    }
                } else if reason.is_none() && !t.is_empty() {
                    reason = Some(t);
                }
            }
            if let Some(r) = reason {
                put_str(&mut ad, "HoldReason", r);
            }
        }
        28 => {
            // The body is the ad's own lines.
            for l in body {
                if let Some((k, v)) = l.split_once(" = ") {
                    let k = k.trim();
                    if !ad.contains(k)
                        && let Ok(e) = gleaner_classad::parse_expr(v)
                    {
                        ad.insert_expr(k, e);
                    }
                }
            }
        }
        40 => {
            let kind = match text {
                t if t.starts_with("Input file transfer queued") => 1,
                t if t.starts_with("Started transferring input files") => 2,
                t if t.starts_with("Finished transferring input files") => 3,
                t if t.starts_with("Output file transfer queued") => 4,
                t if t.starts_with("Started transferring output files") => 5,
                t if t.starts_with("Finished transferring output files") => 6,
                _ => 0,
            };
            ad.insert_int("Type", kind);
            for l in body {
                if let Some(h) = l.trim().strip_prefix("Transferring to host:") {
                    put_str(&mut ad, "Host", h.trim());
                }
            }
        }
        _ => {
            if let Some(r) = free_line(body) {
                put_str(&mut ad, "Reason", r);
            }
        }
    }
    let mut shown_text = format!(
        "{number:03} ({cluster:03}.{proc:03}.{subproc:03}) {} {text}\n",
        shown.strftime("%Y-%m-%d %H:%M:%S")
    );
    for l in body {
        shown_text.push_str(l);
        shown_text.push('\n');
    }
    Ok(Event {
        number,
        cluster,
        proc,
        timestamp: ts.as_second(),
        ad,
        text: shown_text,
    })
}

/// Follows one log file as it grows.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    /// Bytes of the file consumed (whole events).
    offset: u64,
    /// Read but not yet a whole event.
    pending: Vec<u8>,
    closed: bool,
}

/// Most bytes one event may take (a bound on a malformed file).
const MAX_EVENT_BYTES: usize = 1 << 20;

impl Follower {
    /// Opens `path` (it must exist, as HTCondor's reader requires).
    pub fn open(path: &Path) -> Result<Follower, LogError> {
        std::fs::metadata(path).map_err(|source| LogError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Follower {
            path: path.to_path_buf(),
            offset: 0,
            pending: Vec::new(),
            closed: false,
        })
    }

    pub fn close(&mut self) {
        self.closed = true;
    }

    /// The byte offset of the next unread event (for pickling).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn set_offset(&mut self, offset: u64) {
        self.offset = offset;
        self.pending.clear();
    }

    fn io(&self, source: std::io::Error) -> LogError {
        LogError::Io {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// The next whole event, or `None` when the file has none yet.
    pub fn poll(&mut self) -> Result<Option<Event>, LogError> {
        if self.closed {
            return Ok(None);
        }
        loop {
            if let Some(e) = self.take_event()? {
                return Ok(Some(e));
            }
            let read_from = self.offset + self.pending.len() as u64;
            let mut f = std::fs::File::open(&self.path).map_err(|e| self.io(e))?;
            let len = f.metadata().map_err(|e| self.io(e))?.len();
            if len <= read_from {
                return Ok(None);
            }
            f.seek(SeekFrom::Start(read_from)).map_err(|e| self.io(e))?;
            let want = usize::try_from(len - read_from)
                .unwrap_or(usize::MAX)
                .min(1 << 16);
            let mut buf = vec![0u8; want];
            let n = f.read(&mut buf).map_err(|e| self.io(e))?;
            if n == 0 {
                return Ok(None);
            }
            self.pending.extend_from_slice(&buf[..n]);
        }
    }

    /// A whole event at the front of what has been read, consumed.
    fn take_event(&mut self) -> Result<Option<Event>, LogError> {
        loop {
            let text = String::from_utf8_lossy(&self.pending);
            // Find the line `...` that closes the first event.
            let mut at = 0;
            let mut end = None;
            for line in text.split_inclusive('\n') {
                at += line.len();
                if !line.ends_with('\n') {
                    break;
                }
                if line.trim_end() == "..." {
                    end = Some(at);
                    break;
                }
            }
            let Some(end) = end else {
                if self.pending.len() > MAX_EVENT_BYTES {
                    return Err(LogError::Bad {
                        path: self.path.display().to_string(),
                        offset: self.offset,
                        message: format!("no event ends within {MAX_EVENT_BYTES} bytes"),
                    });
                }
                return Ok(None);
            };
            let event_text = text[..end].to_string();
            let consumed = event_text.len();
            let lines: Vec<&str> = event_text
                .lines()
                .map(|l| l.trim_end_matches('\r'))
                .filter(|l| l.trim_end() != "...")
                .collect();
            // Blank lines between events are not events.
            let lines: Vec<&str> = lines
                .into_iter()
                .skip_while(|l| l.trim().is_empty())
                .collect();
            let parsed = if lines.is_empty() {
                None
            } else {
                Some(parse_event(&lines).map_err(|message| LogError::Bad {
                    path: self.path.display().to_string(),
                    offset: self.offset,
                    message,
                })?)
            };
            self.pending.drain(..consumed.min(self.pending.len()));
            self.offset += consumed as u64;
            if let Some(e) = parsed {
                return Ok(Some(e));
            }
        }
    }
}

/// `value` as it would print in an event ad (for tests and debugging).
pub fn shown(ad: &Ad, name: &str) -> Option<String> {
    ad.get(name).map(|e| match e {
        Expr::Lit(Literal::Str(s)) => s.clone(),
        other => gleaner_classad::unparse_expr(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Event {
        let lines: Vec<&str> = text.lines().filter(|l| *l != "...").collect();
        parse_event(&lines).unwrap()
    }

    // Attribute names and values read off `htcondor2.JobEventLog` for the
    // same events (TZ=UTC).
    #[test]
    fn events_as_htcondor_reads_them() {
        let e = one(
            "000 (012.003.000) 2025-11-21 06:50:00Z Job submitted from host: http://127.0.0.1:9618\n...",
        );
        assert_eq!(
            (e.number, e.cluster, e.proc, e.timestamp),
            (0, 12, 3, 1_763_707_800)
        );
        assert_eq!(shown(&e.ad, "SubmitHost").unwrap(), "http://127.0.0.1:9618");
        assert_eq!(shown(&e.ad, "MyType").unwrap(), "SubmitEvent");

        let e = one(
            "005 (012.004.000) 2025-11-21 06:50:13Z Job terminated.\n\t(0) Abnormal termination (signal 9)\n\t(0) No core file\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n\t0  -  Total Bytes Sent By Job\n",
        );
        assert_eq!(shown(&e.ad, "TerminatedBySignal").unwrap(), "9");
        assert_eq!(shown(&e.ad, "TerminatedNormally").unwrap(), "false");
        assert_eq!(
            shown(&e.ad, "RunRemoteUsage").unwrap(),
            "Usr 0 00:00:00, Sys 0 00:00:00"
        );
        assert_eq!(shown(&e.ad, "TotalSentBytes").unwrap(), "0.0");

        let e = one(
            "012 (012.003.000) 2025-11-21 06:50:08Z Job was held.\n\theld by alice\n\tCode 1 Subcode 0\n",
        );
        assert_eq!(shown(&e.ad, "HoldReason").unwrap(), "held by alice");
        assert_eq!(shown(&e.ad, "HoldReasonCode").unwrap(), "1");
        assert_eq!(shown(&e.ad, "HoldReasonSubCode").unwrap(), "0");

        let e = one(
            "004 (012.003.000) 2025-11-21 06:50:05Z Job was evicted.\n\t(0) Job terminated and was requeued\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n\t0  -  Run Bytes Sent By Job\n\t(1) Normal termination (return value 3)\n\trequeued by on_exit_remove\n",
        );
        assert_eq!(shown(&e.ad, "TerminatedAndRequeued").unwrap(), "true");
        assert_eq!(shown(&e.ad, "ReturnValue").unwrap(), "3");
        assert_eq!(
            shown(&e.ad, "Reason").unwrap(),
            "requeued by on_exit_remove"
        );
        assert_eq!(shown(&e.ad, "Checkpointed").unwrap(), "false");

        let e = one(
            "006 (012.003.000) 2025-11-21 06:50:02Z Image size of job updated: 2000\n\t3  -  MemoryUsage of job (MB)\n\t2660  -  ResidentSetSize of job (KB)\n",
        );
        assert_eq!(shown(&e.ad, "Size").unwrap(), "2000");
        assert_eq!(shown(&e.ad, "MemoryUsage").unwrap(), "3");
    }

    #[test]
    fn the_follower_returns_whole_events_as_they_arrive() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("job.log");
        std::fs::write(&p, "").unwrap();
        let mut f = Follower::open(&p).unwrap();
        assert!(f.poll().unwrap().is_none());
        let first = "000 (001.000.000) 2025-11-21 06:50:00Z Job submitted from host: h\n...\n";
        std::fs::write(&p, &first[..20]).unwrap();
        assert!(f.poll().unwrap().is_none());
        std::fs::write(
            &p,
            format!("{first}001 (001.000.000) 2025-11-21 06:50:01Z Job ex"),
        )
        .unwrap();
        assert_eq!(f.poll().unwrap().unwrap().number, 0);
        assert!(f.poll().unwrap().is_none());
        assert_eq!(f.offset(), first.len() as u64);
        std::fs::write(
            &p,
            format!(
                "{first}001 (001.000.000) 2025-11-21 06:50:01Z Job executing on host: x\n...\n"
            ),
        )
        .unwrap();
        let e = f.poll().unwrap().unwrap();
        assert_eq!(shown(&e.ad, "ExecuteHost").unwrap(), "x");
        assert!(Follower::open(&d.path().join("missing.log")).is_err());
    }
}
