//! `condor_submit [OPTIONS] [KEY=VALUE…] [FILE]`: queues a submit
//! description and prints what scripts parse:
//!
//! ```text
//! Submitting job(s)...
//! 3 job(s) submitted to cluster 12.
//! ```
//!
//! (`-terse`: `12.0 - 12.2`; a file read from standard input: each job's
//! ad after `** Proc 12.0:`, as HTCondor's verbose mode). Options:
//! `-append LINE` (just before each `queue`), `-queue ARGS` (only when
//! the file has no `queue`), `-batch-name`, `-batch-id`, `-maxjobs`,
//! `-dry-run FILE`, `-dump FILE`, `-spool`, `-name`, `-remote`, `-pool`,
//! `-verbose`, `-terse`, `-file`. Gleaner's parser reports every problem
//! with its file and line; nothing is queued then (exit status 1).
//!
//! HTCondor 25.13 also prints `To monitor your job(s), run:
//! condor_watch_q …` on standard error; Gleaner does not, because tools
//! such as condorpy take any standard-error text from `condor_submit` as a
//! failure.

use super::args::{Cursor, Usage, is_opt, opt_colon};
use super::connect::Target;
use crate::output::adformat::long_form;
use gleaner_proto::api::SubmitBody;
use gleaner_proto::limits::MAX_SUBMIT_FILE_BYTES;
use gleaner_proto::submit::{ClusterSubmission, SubmitContext, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Default)]
struct Opts {
    file: Option<String>,
    defines: Vec<(String, String)>,
    append: Vec<String>,
    queue: Option<String>,
    batch_name: Option<String>,
    batch_id: Option<String>,
    max_jobs: Option<i64>,
    dry_run: Option<String>,
    dump: Option<String>,
    terse: bool,
    verbose: bool,
    spool: bool,
    target: Target,
}

/// Whether a line is a `queue` statement (its first word, any case).
fn is_queue_line(line: &str) -> bool {
    let w = line.trim_start();
    let word: String = w.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    word.eq_ignore_ascii_case("queue")
        && w[word.len()..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace())
}

fn parse(tool: &str, args: Vec<OsString>) -> Result<Option<Opts>, Usage> {
    let mut c = Cursor::new(tool, args)?;
    let mut o = Opts::default();
    while let Some(a) = c.next() {
        if a == "-" {
            o.file = Some(a);
        } else if !a.starts_with('-') {
            if let Some((k, v)) = a.split_once('=') {
                let k = k.trim();
                let k = match k.strip_prefix('+') {
                    Some(rest) => format!("MY.{rest}"),
                    None => k.to_string(),
                };
                let valid = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
                if !valid {
                    return Err(Usage::new(format!(
                        "{tool}: invalid attribute name '{k}' for attrib=value assigment"
                    )));
                }
                o.defines.push((k, v.trim().to_string()));
            } else {
                o.file = Some(a);
            }
        } else if is_opt(&a, "verbose", 1) {
            o.verbose = true;
            o.terse = false;
        } else if is_opt(&a, "terse", 3) {
            o.terse = true;
            o.verbose = false;
        } else if is_opt(&a, "disable", 3)
            || is_opt(&a, "unused", 1)
            || opt_colon(&a, "debug", 2).is_some()
        {
            // Accepted: nothing to do in Gleaner.
        } else if opt_colon(&a, "dry-run", 3).is_some() {
            o.dry_run = Some(c.value(&a, true)?);
        } else if is_opt(&a, "spool", 1) {
            o.spool = true;
        } else if is_opt(&a, "file", 2) {
            o.file = Some(c.value(&a, false)?);
        } else if is_opt(&a, "remote", 1) {
            o.spool = true;
            o.target.name = Some(c.value(&a, false)?);
        } else if is_opt(&a, "name", 1) {
            o.target.name = Some(c.value(&a, false)?);
        } else if is_opt(&a, "pool", 2) {
            let v = c.value(&a, false)?;
            o.target.set_pool(tool, v)?;
        } else if is_opt(&a, "append", 1) {
            let line = c.value(&a, false)?;
            if is_queue_line(&line) {
                if o.queue.is_some() {
                    return Err(Usage::new(format!(
                        "{tool}: only one -queue command allowed"
                    )));
                }
                o.queue = Some(line);
            } else {
                o.append.push(line);
            }
        } else if is_opt(&a, "batch-name", 1) {
            o.batch_name = Some(c.value(&a, false)?);
        } else if is_opt(&a, "batch-id", 1) {
            o.batch_id = Some(c.value(&a, false)?);
        } else if is_opt(&a, "queue", 1) {
            let mut words = c.words();
            if words.is_empty() {
                return Err(Usage::new(format!(
                    "{tool}: {a} requires at least one argument"
                )));
            }
            if o.queue.is_some() {
                return Err(Usage::new(format!("{tool}: only one {a} command allowed")));
            }
            words.insert(0, "queue".into());
            o.queue = Some(words.join(" "));
        } else if is_opt(&a, "maxjobs", 3) {
            let v = c.value(&a, false)?;
            let n: i64 = v.parse().map_err(|_| {
                Usage::new(format!(
                    "Error: Unable to convert argument ({v}) to a number for -maxjobs."
                ))
            })?;
            if n < -1 {
                return Err(Usage::new(format!(
                    "Error: {n} is not a valid for -maxjobs."
                )));
            }
            o.max_jobs = Some(n);
        } else if is_opt(&a, "single-cluster", 3) {
        } else if is_opt(&a, "dump", 2) {
            o.dump = Some(c.value(&a, false)?);
        } else if is_opt(&a, "interactive", 1) {
            return Err(Usage::new(format!(
                "{tool}: -interactive is not supported: Gleaner runs batch jobs only"
            )));
        } else if is_opt(&a, "help", 1) {
            println!("Usage: {tool} [options] [KEY=VALUE]… [submit-file]");
            println!("  -terse -verbose -append LINE -queue ARGS -batch-name NAME -maxjobs N");
            println!("  -dry-run FILE -dump FILE -spool -name SCHEDD -remote SCHEDD -pool URL");
            return Ok(None);
        } else {
            return Err(Usage::new(format!(
                "Usage: {tool} [options] [KEY=VALUE]… [submit-file]\n{tool}: unknown option {a}"
            )));
        }
    }
    if o.dry_run.is_some() && o.dump.is_some() {
        return Err(Usage::new(format!(
            "{tool}: -dump <file> and -dry-run <file> cannot be used together"
        )));
    }
    Ok(Some(o))
}

/// The submit text with the command line's lines in place: `-append`
/// lines and the batch name just before each `queue`, `-queue` at the
/// end.
fn with_command_line(text: &str, o: &Opts, shown: &str) -> Result<String, String> {
    let mut before: Vec<String> = o.append.clone();
    if let Some(b) = &o.batch_name {
        before.push(format!("batch_name = {}", b.trim_matches('"')));
    }
    if let Some(b) = &o.batch_id {
        before.push(format!("+JobBatchId = \"{}\"", b.trim_matches('"')));
    }
    let has_queue = text.lines().any(is_queue_line);
    if has_queue && o.queue.is_some() {
        return Err(format!(
            "ERROR: {shown}: -queue argument conflicts with queue statement in submit file"
        ));
    }
    let mut out = String::with_capacity(text.len() + 256);
    for line in text.split_inclusive('\n') {
        if is_queue_line(line) {
            for b in &before {
                out.push_str(b);
                out.push('\n');
            }
        }
        out.push_str(line);
    }
    if let Some(q) = &o.queue {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        for b in &before {
            out.push_str(b);
            out.push('\n');
        }
        out.push_str(q);
        out.push('\n');
    }
    Ok(out)
}

/// The submit file's text (at most [`MAX_SUBMIT_FILE_BYTES`]), its name
/// as shown, and its directory.
fn read(file: Option<&str>) -> anyhow::Result<Result<(String, String, PathBuf), String>> {
    let cwd = std::env::current_dir()?;
    match file {
        None | Some("-") => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .take(MAX_SUBMIT_FILE_BYTES + 1)
                .read_to_end(&mut bytes)?;
            if bytes.len() as u64 > MAX_SUBMIT_FILE_BYTES {
                return Ok(Err(format!(
                    "ERROR: (stdin): more than {MAX_SUBMIT_FILE_BYTES} bytes"
                )));
            }
            match String::from_utf8(bytes) {
                Ok(t) => Ok(Ok((t, "(stdin)".into(), cwd))),
                Err(_) => Ok(Err("ERROR: (stdin): not UTF-8 text".into())),
            }
        }
        Some(f) => {
            let path = PathBuf::from(f);
            let text = match crate::jobs::read_submit_file(&path, f) {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => return Ok(Err(format!("ERROR: {e}"))),
                Err(e) => {
                    return Ok(Err(format!(
                        "\nERROR: Failed to open command file ({f}) ({})",
                        e.root_cause()
                    )));
                }
            };
            let dir = std::fs::canonicalize(&path)
                .ok()
                .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
                .unwrap_or(cwd);
            Ok(Ok((text, f.to_string(), dir)))
        }
    }
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let Some(o) = parse(tool, args)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let stdin = matches!(o.file.as_deref(), None | Some("-"));
    // Keys and a -queue on the command line need no file.
    let no_file = o.file.is_none() && !o.defines.is_empty() && o.queue.is_some();
    let (text, shown, dir) = if no_file {
        (
            String::new(),
            "(command line)".to_string(),
            std::env::current_dir()?,
        )
    } else {
        match read(o.file.as_deref())? {
            Ok(t) => t,
            Err(msg) => return Err(Usage::new(msg).into()),
        }
    };
    let text = with_command_line(&text, &o, &shown).map_err(Usage::new)?;
    if !text.lines().any(is_queue_line) {
        return Err(Usage::new(format!(
            "\nERROR: \"{shown}\" doesn't contain any \"queue\" commands -- no jobs queued"
        ))
        .into());
    }
    let ctx = SubmitContext::new(shown.clone(), "")
        .with_env(std::env::vars().collect())
        .with_dir(dir.clone())
        .with_defines(o.defines.clone())
        .with_seed(seed());
    let mut submission = match parse_submit(&text, &ctx) {
        Ok(s) => s,
        Err(errs) => {
            let lines: Vec<String> = errs.0.iter().map(|e| format!("ERROR: {e}")).collect();
            return Err(Usage::new(lines.join("\n")).into());
        }
    };
    if !o.terse {
        for w in submission.warnings() {
            crate::output::escape::emit_err(&format!("WARNING: {w}"));
        }
    }
    let count = submission.proc_count();
    if let Some(max) = o.max_jobs.filter(|m| *m >= 0)
        && i64::from(count) > max
    {
        return Err(Usage::new(format!(
            "\nERROR: Number of submitted jobs would exceed -maxjobs ({max})"
        ))
        .into());
    }
    let submit_dir = dir.to_string_lossy().into_owned();
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| std::env::var("USER").unwrap_or_default(), |u| u.name);
    if let Some(dest) = o.dry_run.as_ref().or(o.dump.as_ref()) {
        submission.owner = me;
        return dry_run(&o, dest, &submission, &submit_dir);
    }
    let (client, _) = o.target.station()?;
    let rt = crate::jobs::runtime()?;
    submission.owner = rt.block_on(client.whoami())?.name;
    if o.spool {
        // The station reads the job's files as their owner from the
        // submit directory when it sends them to a host; it keeps no
        // copy taken at submit time.
        crate::output::escape::emit_err(
            "WARNING: -spool: the station reads the input files from the submit directory \
             when each job starts; they are not copied now",
        );
    }
    let body = SubmitBody {
        protocol: PROTOCOL_VERSION,
        submission: submission.clone(),
        submit_dir: Some(submit_dir.clone()),
    };
    if !stdin && !o.terse {
        print!("Submitting job(s)");
        let _ = std::io::stdout().flush();
    }
    let resp = rt.block_on(client.submit(&body))?;
    let mut out = String::new();
    let verbose = o.verbose || (stdin && !o.terse);
    if verbose {
        let ads = ads(&submission, resp.cluster, &submit_dir)?;
        for (i, ad) in ads.iter().enumerate() {
            out.push_str(&format!("\n** Proc {}.{i}:\n", resp.cluster));
            out.push_str(&long_form(ad));
        }
    } else if !stdin && !o.terse {
        out.push_str(&".".repeat(resp.jobs.len()));
    }
    if !stdin && !o.terse {
        out.push('\n');
    }
    if o.terse {
        if let (Some(first), Some(last)) = (resp.jobs.first(), resp.jobs.last()) {
            out.push_str(&format!("{first} - {last}\n"));
        }
    } else if !verbose {
        out.push_str(&format!(
            "{} job(s) submitted to cluster {}.\n",
            resp.jobs.len(),
            resp.cluster
        ));
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn ads(
    sub: &ClusterSubmission,
    cluster: u64,
    submit_dir: &str,
) -> anyhow::Result<Vec<gleaner_classad::Ad>> {
    gleaner_proto::job_ad::submission_ads(
        sub,
        cluster,
        gleaner_core::time::Time::from_secs(gleaner_station::clock::now_secs()),
        Some(submit_dir),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// `-dry-run FILE` / `-dump FILE`: the ads cluster 1 would get, written
/// to FILE (`-`: standard output); nothing is queued.
fn dry_run(
    o: &Opts,
    dest: &str,
    sub: &ClusterSubmission,
    submit_dir: &str,
) -> anyhow::Result<ExitCode> {
    let ads = ads(sub, 1, submit_dir)?;
    let mut text = String::new();
    for ad in &ads {
        text.push_str(&long_form(ad));
    }
    let to_stdout = dest == "-";
    let mut out = String::new();
    if !o.terse && !to_stdout {
        out.push_str(if o.dry_run.is_some() {
            "Dry-Run job(s)"
        } else {
            "Storing job ClassAd(s)"
        });
        out.push_str(&".".repeat(ads.len()));
        out.push('\n');
    }
    if to_stdout {
        out.push_str(&text);
    } else {
        std::fs::write(dest, &text).map_err(|e| anyhow::anyhow!("cannot write {dest}: {e}"))?;
    }
    if o.dry_run.is_some() && !o.terse {
        out.push_str(&format!("{} job(s) dry-run to cluster 1.\n", ads.len()));
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Opts {
        parse("condor_submit", v.iter().map(OsString::from).collect())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn queue_lines() {
        assert!(is_queue_line("queue"));
        assert!(is_queue_line("  Queue 3"));
        assert!(is_queue_line("QUEUE in (a b)\n"));
        assert!(!is_queue_line("queue_x = 1"));
        assert!(!is_queue_line("# queue"));
    }

    #[test]
    fn command_line_lines_go_before_queue() {
        let o = opts(&["-a", "request_cpus = 2", "-batch-name", "run 7", "job.sub"]);
        let t = with_command_line("executable = x\nqueue 2\n", &o, "job.sub").unwrap();
        assert_eq!(
            t,
            "executable = x\nrequest_cpus = 2\nbatch_name = run 7\nqueue 2\n"
        );
        let o = opts(&["X=1", "-queue", "3"]);
        assert_eq!(o.queue.as_deref(), Some("queue 3"));
        assert_eq!(o.defines, [("X".to_string(), "1".to_string())]);
        let t = with_command_line("executable = x", &o, "f").unwrap();
        assert_eq!(t, "executable = x\nqueue 3\n");
        assert!(with_command_line("queue\n", &o, "f").is_err());
        let o = opts(&["-append", "queue 4"]);
        assert_eq!(o.queue.as_deref(), Some("queue 4"));
        let o = opts(&["+Project=\"x\""]);
        assert_eq!(o.defines[0].0, "MY.Project");
    }

    #[test]
    fn bad_options() {
        let bad =
            |v: &[&str]| parse("condor_submit", v.iter().map(OsString::from).collect()).is_err();
        assert!(bad(&["-maxjobs", "x"]));
        assert!(bad(&["-interactive"]));
        assert!(bad(&["-dry-run", "a", "-dump", "b"]));
        assert!(bad(&["-bogus"]));
        assert!(bad(&["-queue"]));
    }
}
