//! Job commands: `glean submit`, `glean q`, `glean status`,
//! `glean rm|hold|release` and `glean history`, in the manner of
//! `condor_submit`, `condor_q`, `condor_status`, `condor_rm`, … .
//!
//! They talk to the user's own station (jobs live at the submitting
//! station, Mutka 1988 §5). The station URL and the user's token come from
//! `$GLEAN_HOME` (see `gleaner_station::client`), or `--station URL` and
//! `--token FILE`.

use anyhow::{Context, bail};
use clap::Args;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gleaner_core::time::Time;
use gleaner_proto::api::{ActionResponse, JobInfo, SubmitBody};
use gleaner_proto::auth::peek_claims;
use gleaner_proto::job::JobState;
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::{PROTOCOL_VERSION, PoolStatus};
use gleaner_station::client::{ClientSettings, JobQuery, StationClient};
use std::path::PathBuf;
use std::process::ExitCode;

/// Where the station is and who you are.
#[derive(Args, Debug, Clone, Default)]
pub struct ConnectArgs {
    /// Station base URL (default: `station` in $GLEAN_HOME/pool.toml).
    #[arg(long, value_name = "URL", global = true)]
    pub station: Option<String>,
    /// File holding your token (default: $GLEAN_HOME/token).
    #[arg(long, value_name = "FILE", global = true)]
    pub token: Option<PathBuf>,
}

impl ConnectArgs {
    pub(crate) fn settings(&self) -> anyhow::Result<ClientSettings> {
        Ok(ClientSettings::discover(
            self.station.as_deref(),
            self.token.as_deref(),
        )?)
    }
    fn client(&self) -> anyhow::Result<(StationClient, ClientSettings)> {
        let s = self.settings()?;
        Ok((StationClient::from_settings(&s)?, s))
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `glean submit FILE`: queue the jobs of a submit description.
#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// The submit description file.
    pub file: PathBuf,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn submit(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let settings = args.connect.settings()?;
    let owner = peek_claims(&settings.token)
        .map(|c| c.subject)
        .unwrap_or_default();
    let ctx = SubmitContext::new(args.file.display().to_string(), owner)
        .with_env(std::env::vars().collect());
    // Parse locally first: every problem is reported with file:line and
    // nothing reaches the station.
    let submission = match parse_submit(&text, &ctx) {
        Ok(s) => s,
        Err(errs) => {
            for e in &errs.0 {
                eprintln!("{e}");
            }
            eprintln!(
                "glean submit: {} error(s); no jobs were submitted",
                errs.0.len()
            );
            return Ok(ExitCode::from(1));
        }
    };
    let file = std::fs::canonicalize(&args.file)
        .with_context(|| format!("cannot resolve {}", args.file.display()))?;
    let submit_dir = file.parent().map(|p| p.to_string_lossy().into_owned());
    let body = SubmitBody {
        protocol: PROTOCOL_VERSION,
        submission,
        submit_dir,
    };
    let client = StationClient::from_settings(&settings)?;
    let resp = runtime()?.block_on(client.submit(&body))?;
    println!(
        "{} job(s) submitted to cluster {}.",
        resp.jobs.len(),
        resp.cluster
    );
    Ok(ExitCode::SUCCESS)
}

/// `glean q`: the station's job queue.
#[derive(Args, Debug)]
pub struct QArgs {
    /// Show every user's jobs, not only yours.
    #[arg(long)]
    pub all: bool,
    /// Only jobs in this state (idle, running, held, …).
    #[arg(long)]
    pub state: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Explain, station by station, why job JOB (e.g. 12.0) does or does
    /// not match (condor_q -better-analyze); needs the coordinator.
    #[arg(long, value_name = "JOB")]
    pub analyze: Option<String>,
    /// Coordinator base URL for --analyze (default: `coordinator` in
    /// pool.toml).
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn q(args: QArgs) -> anyhow::Result<ExitCode> {
    if let Some(job) = &args.analyze {
        return analyze(job, &args);
    }
    let (client, settings) = args.connect.client()?;
    let owner = if args.all {
        None
    } else {
        peek_claims(&settings.token).ok().map(|c| c.subject)
    };
    let jobs = runtime()?.block_on(client.jobs(&JobQuery {
        owner,
        state: args.state.clone(),
        all: false,
    }))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&jobs)?);
    } else {
        print_jobs(&jobs, false);
        let count = |k: &str| jobs.iter().filter(|j| j.state.kind().name() == k).count();
        println!(
            "Total: {} jobs; {} idle, {} running, {} suspended, {} held",
            jobs.len(),
            count("idle"),
            count("running"),
            count("suspended"),
            count("held")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `glean q --analyze JOB`: the job's description from its station, the
/// machine ads from the coordinator, and every clause that rejects it.
fn analyze(job: &str, args: &QArgs) -> anyhow::Result<ExitCode> {
    use gleaner_coordinator::matchmaker::{AdsView, analyze};
    let (client, settings) = args.connect.client()?;
    let Some(coord) = args.coordinator.clone().or(settings.coordinator.clone()) else {
        bail!(
            "--analyze needs the coordinator: pass --coordinator URL or set `coordinator` in pool.toml"
        );
    };
    let rt = runtime()?;
    let detail = rt
        .block_on(client.job(job))
        .with_context(|| format!("cannot read job {job}"))?;
    let c = StationClient::new(coord, settings.token.clone())?;
    let view: AdsView = rt
        .block_on(c.get_json("/v1/ads"))
        .context("cannot read the coordinator's machine ads")?;
    let verdicts = analyze(&detail.description, &view);
    let matching = verdicts.iter().filter(|v| v.rejects.is_empty()).count();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "job": detail.job.id,
                "state": detail.job.state.kind().name(),
                "stations": verdicts,
                "licences": view.licences,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let d = &detail.description;
    println!(
        "Job {} ({}), owner {}: {}",
        detail.job.id,
        detail.job.state.kind().name(),
        d.owner,
        d.requirements.as_deref().unwrap_or("no requirements")
    );
    if !d.concurrency_limits.is_empty() {
        println!("Concurrency limits: {}", d.concurrency_limits.join(", "));
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(vec!["STATION", "MATCH", "RANK", "SIGMA", "WHY NOT"]);
    for v in &verdicts {
        let why: Vec<String> = v.rejects.iter().map(|r| r.to_string()).collect();
        t.add_row(vec![
            v.station.clone(),
            if v.rejects.is_empty() { "yes" } else { "no" }.to_string(),
            format!("{}", v.rank),
            format!("{:.2}", v.sigma),
            why.join("\n"),
        ]);
    }
    println!("{t}");
    for l in &view.licences {
        println!("Licence {}: {} of {} in use", l.name, l.in_use, l.limit);
    }
    println!(
        "{matching} of {} stations could run this job now.",
        verdicts.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// `glean history`: completed and removed jobs.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Show every user's jobs, not only yours.
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn history(args: HistoryArgs) -> anyhow::Result<ExitCode> {
    let (client, settings) = args.connect.client()?;
    let owner = if args.all {
        None
    } else {
        peek_claims(&settings.token).ok().map(|c| c.subject)
    };
    let jobs = runtime()?.block_on(client.history(owner.as_deref()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&jobs)?);
    } else {
        print_jobs(&jobs, true);
    }
    Ok(ExitCode::SUCCESS)
}

/// `glean rm|hold|release ID`.
#[derive(Args, Debug)]
pub struct ActionArgs {
    /// Job `CLUSTER.PROC`, or a whole cluster `CLUSTER`.
    pub id: String,
    /// Why (recorded in the job's history; the hold reason for `hold`).
    #[arg(long)]
    pub reason: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

fn action(args: ActionArgs, verb: &str) -> anyhow::Result<ExitCode> {
    let id = args.id.trim();
    if id.is_empty()
        || !id
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        || id.split('.').count() > 2
    {
        bail!("invalid job id {id:?}: expected CLUSTER or CLUSTER.PROC, e.g. 12 or 12.0");
    }
    let (client, _) = args.connect.client()?;
    let reason = args.reason.as_deref();
    let rt = runtime()?;
    let resp: ActionResponse = match verb {
        "rm" => rt.block_on(client.rm(id, reason))?,
        "hold" => rt.block_on(client.hold(id, reason))?,
        _ => rt.block_on(client.release(id, reason))?,
    };
    let past = match verb {
        "rm" => "marked for removal",
        "hold" => "held",
        _ => "released",
    };
    for j in &resp.changed {
        println!("Job {j} {past}.");
    }
    for (j, why) in &resp.skipped {
        eprintln!("Job {j} not {past}: {why}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn rm(args: ActionArgs) -> anyhow::Result<ExitCode> {
    action(args, "rm")
}

pub fn hold(args: ActionArgs) -> anyhow::Result<ExitCode> {
    action(args, "hold")
}

pub fn release(args: ActionArgs) -> anyhow::Result<ExitCode> {
    action(args, "release")
}

/// `glean status`: the pool's stations (from the coordinator), or this
/// station's own queue summary when no coordinator is known.
#[derive(Args, Debug)]
pub struct StatusArgs {
    #[arg(long)]
    pub json: bool,
    /// Coordinator base URL (default: `coordinator` in pool.toml).
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    /// Print each station's machine ClassAd (condor_status -long).
    #[arg(long)]
    pub long: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    let rt = runtime()?;
    if let Some(coord) = args.coordinator.clone().or(settings.coordinator.clone()) {
        let c = StationClient::new(coord, settings.token.clone())?;
        if args.long {
            let view: gleaner_coordinator::matchmaker::AdsView =
                rt.block_on(c.get_json("/v1/ads"))?;
            for e in &view.stations {
                let ad = gleaner_proto::matchmaking::machine_ad(&e.ad);
                if args.json {
                    println!("{}", gleaner_classad::unparse::unparse_ad(&ad));
                } else {
                    println!("{}", ad.to_old_syntax());
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        let pool: PoolStatus = rt.block_on(c.get_json("/v1/pool"))?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&pool)?);
            return Ok(ExitCode::SUCCESS);
        }
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
            "NAME", "STATE", "CPUS", "MEMORY", "GUESTS", "IDLE", "REMOTE", "SEEN",
        ]);
        for s in &pool.stations {
            let state = match (s.submit_only, s.execute_only) {
                (true, _) => "submit-only".to_string(),
                _ => format!("{:?}", s.state).to_uppercase(),
            };
            t.add_row(vec![
                s.name.clone(),
                state,
                s.cpus.to_string(),
                format!("{} MiB", s.memory_mb),
                s.guests.to_string(),
                s.idle_jobs.to_string(),
                s.remote_jobs.to_string(),
                format!("{:.0}s ago", s.last_seen_secs),
            ]);
        }
        println!("{t}");
        println!("Total: {} stations", pool.stations.len());
        return Ok(ExitCode::SUCCESS);
    }
    // No coordinator known: the station's own view of its queue.
    let client = StationClient::from_settings(&settings)?;
    let jobs = rt.block_on(client.jobs(&JobQuery::default()))?;
    let count = |k: &str| jobs.iter().filter(|j| j.state.kind().name() == k).count();
    let view = serde_json::json!({
        "station": client.base_url(),
        "idle": count("idle"),
        "running": count("running"),
        "suspended": count("suspended"),
        "held": count("held"),
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&view)?);
    } else {
        println!("No coordinator configured; this station's queue only.");
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
            "STATION",
            "IDLE",
            "RUNNING",
            "SUSPENDED",
            "HELD",
        ]);
        t.add_row(vec![
            client.base_url().to_string(),
            count("idle").to_string(),
            count("running").to_string(),
            count("suspended").to_string(),
            count("held").to_string(),
        ]);
        println!("{t}");
    }
    Ok(ExitCode::SUCCESS)
}

fn now() -> Time {
    let us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    Time::from_micros(us)
}

/// `MM/DD HH:MM` (UTC), as condor_q's SUBMITTED column.
fn short_date(t: Time) -> String {
    let full = gleaner_proto::api::utc_datetime(t); // YYYY-MM-DD HH:MM:SS
    match (full.get(5..7), full.get(8..10), full.get(11..16)) {
        (Some(m), Some(d), Some(hm)) => format!("{m}/{d} {hm}"),
        _ => full,
    }
}

/// `D+HH:MM:SS`, as condor_q's RUN_TIME column.
fn run_time(j: &JobInfo) -> String {
    let Some(start) = j.started_at else {
        return "0+00:00:00".into();
    };
    let end = match j.state {
        JobState::Running | JobState::Suspended => now(),
        _ => j.finished_at.unwrap_or(j.updated_at),
    };
    let s = end.since(start).0 / 1_000_000;
    format!(
        "{}+{:02}:{:02}:{:02}",
        s / 86_400,
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60
    )
}

fn print_jobs(jobs: &[JobInfo], history: bool) {
    let mut t = Table::new();
    let mut header = vec!["ID", "OWNER", "SUBMITTED", "RUN_TIME", "ST", "HOST", "CMD"];
    if history {
        header.insert(6, "EXIT");
    }
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header);
    for j in jobs {
        let mut row = vec![
            j.id.to_string(),
            j.owner.clone(),
            short_date(j.submitted_at),
            run_time(j),
            j.state.kind().letter().to_string(),
            j.host.clone().unwrap_or_default(),
            j.cmd.clone(),
        ];
        if history {
            let exit = match j.state {
                JobState::Completed { exit_code } => exit_code.to_string(),
                _ => String::new(),
            };
            row.insert(6, exit);
        }
        t.add_row(row);
    }
    println!("{t}");
}

/// `glean userprio`: the coordinator's Up-Down table (condor_userprio).
/// Takes the same connection options as `glean status`.
pub fn userprio(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    let Some(coord) = args.coordinator.clone().or(settings.coordinator.clone()) else {
        anyhow::bail!("no coordinator: pass --coordinator URL or set `coordinator` in pool.toml");
    };
    let c = StationClient::new(coord, settings.token.clone())?;
    let up: gleaner_proto::wire::UserPrio = runtime()?.block_on(c.get_json("/v1/userprio"))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&up)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        "STATION",
        "UP-DOWN INDEX",
        "NODES HELD",
        "WAITING",
        "WANTS",
        "ADVERTISING",
    ]);
    for e in &up.stations {
        t.add_row(vec![
            e.station.clone(),
            format!("{}", e.si),
            e.nodes_held.to_string(),
            e.waiting.to_string(),
            if e.wants { "yes" } else { "no" }.to_string(),
            if e.known { "yes" } else { "no" }.to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "Allocator: {}. A smaller index means a higher priority (Mutka 1988 Table 4.3).",
        up.allocator
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(short_date(Time::from_secs(1_763_707_800)), "11/21 06:50");
    }
}
