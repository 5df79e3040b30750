//! Job commands: `glean submit`, `glean q`, `glean status`,
//! `glean rm|hold|release` and `glean history`, in the manner of
//! `condor_submit`, `condor_q`, `condor_status`, `condor_rm`, … .
//!
//! They talk to the user's own station (jobs live at the submitting
//! station, Mutka 1988 §5): on its user socket, where the kernel says who
//! the user is, or by URL with the user's token. Both come from
//! `$GLEAN_HOME` (see `gleaner_station::client`), or `--station URL` (or
//! `unix:/path`) and `--token FILE`. Who the user is ("your jobs") is what
//! the station says (`/v1/whoami`).

use crate::job_select::{AdArgs, print_jobs};
use crate::output::escape::shout;
use crate::output::{Analysis, JobAction, JobList, LocalQueue, Output};
use anyhow::{Context, bail};
use clap::Args;
use gleaner_proto::api::SubmitBody;
use gleaner_proto::job::JobStateKind;
use gleaner_proto::limits::MAX_SUBMIT_FILE_BYTES;
use gleaner_proto::submit::{
    SubmitContext, SubmitError, SubmitErrorKind, file_too_large, parse_submit,
};
use gleaner_proto::wire::{PROTOCOL_VERSION, PoolStatus};
use gleaner_station::client::{ClientSettings, JobQuery, StationClient};
use std::path::PathBuf;
use std::process::ExitCode;

/// Where the station is and who you are.
#[derive(Args, Debug, Clone, Default)]
pub struct ConnectArgs {
    /// Station base URL, or `unix:/path` for its user socket (default:
    /// `socket`, else `station`, in $GLEAN_HOME/pool.toml).
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
    pub(crate) fn client(&self) -> anyhow::Result<(StationClient, ClientSettings)> {
        let s = self.settings()?;
        Ok((StationClient::from_settings(&s)?, s))
    }
}

/// Reads a submit file of at most [`MAX_SUBMIT_FILE_BYTES`], reading no
/// more than that whatever the file. `Ok(Err)` says why the file itself is
/// refused (too large, not UTF-8: as `file[:line]: why`, named `shown`); an
/// `Err` that it cannot be read.
pub(crate) fn read_submit_file(
    path: &std::path::Path,
    shown: &str,
) -> anyhow::Result<Result<String, SubmitError>> {
    use std::io::Read;
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_SUBMIT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let refuse = |line: usize, kind: SubmitErrorKind| SubmitError {
        file: shown.to_string(),
        line,
        kind,
    };
    if bytes.len() as u64 > MAX_SUBMIT_FILE_BYTES {
        let size = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
        return Ok(Err(refuse(0, file_too_large(size))));
    }
    Ok(String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count();
        refuse(
            line,
            SubmitErrorKind::Unsupported("not UTF-8 text (a submit file must be UTF-8)".into()),
        )
    }))
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `glean submit FILE`: queue the jobs of a submit description.
#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// The submit description file, and `KEY=VALUE` definitions made
    /// before its first line (as `condor_submit X=3 job.sub`).
    #[arg(required = true, value_name = "[KEY=VALUE…] FILE")]
    pub items: Vec<String>,
    /// Print the job ads the file would queue and queue nothing
    /// (`condor_submit -dry-run`); needs no station.
    #[arg(long = "dry-run", alias = "dry_run")]
    pub dry_run: bool,
    /// A `queue` statement to append to the file (`condor_submit -queue`),
    /// e.g. `--queue "3"` or `--queue "in (a b)"`.
    #[arg(long = "queue", value_name = "ARGS")]
    pub queue: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// The file and the `KEY=VALUE` definitions of `glean submit`'s
/// arguments.
fn file_and_defines(items: &[String]) -> anyhow::Result<(PathBuf, Vec<(String, String)>)> {
    let mut file = None;
    let mut defines = Vec::new();
    for it in items {
        match it.split_once('=') {
            Some((k, v))
                if !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') =>
            {
                defines.push((k.to_string(), v.to_string()));
            }
            _ if file.is_none() => file = Some(PathBuf::from(it)),
            _ => anyhow::bail!("more than one submit file given: {it}"),
        }
    }
    let file = file.ok_or_else(|| anyhow::anyhow!("no submit file given"))?;
    Ok((file, defines))
}

/// A seed for the file's `$RANDOM_INTEGER()` and `$RANDOM_CHOICE()`.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

pub fn submit(args: SubmitArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let (path, defines) = file_and_defines(&args.items)?;
    let shown = path.display().to_string();
    let text = match read_submit_file(&path, &shown)? {
        Ok(mut t) => {
            if let Some(q) = &args.queue {
                t.push_str(&format!("\nqueue {q}\n"));
            }
            t
        }
        Err(e) => {
            shout!("{e}");
            shout!("glean submit: 1 error(s); no jobs were submitted");
            return Ok(ExitCode::from(1));
        }
    };
    // Parse locally first, before the station is asked anything: every
    // problem is reported with file:line and nothing reaches the station.
    // The owner is filled in below: the station sets it anyway. Included
    // files, `queue … from` lists and globs are read here, beside the file.
    let file = std::fs::canonicalize(&path)
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    let dir = file
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let ctx = SubmitContext::new(shown, "")
        .with_env(std::env::vars().collect())
        .with_dir(dir.clone())
        .with_defines(defines)
        .with_seed(random_seed());
    let parsed = parse_submit(&text, &ctx);
    if let Ok(s) = &parsed {
        for w in s.warnings() {
            shout!("{w}");
        }
    }
    let mut submission = match parsed {
        Ok(s) => s,
        Err(errs) => {
            for e in &errs.0 {
                shout!("{e}");
            }
            shout!(
                "glean submit: {} error(s); no jobs were submitted",
                errs.0.len()
            );
            return Ok(ExitCode::from(1));
        }
    };
    let submit_dir = Some(dir.to_string_lossy().into_owned());
    if args.dry_run {
        // As the station would queue them: as cluster 1, owned by whoever
        // runs this, submitted now; nothing is sent.
        submission.owner = nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .map_or_else(|| std::env::var("USER").unwrap_or_default(), |u| u.name);
        let ads = gleaner_proto::job_ad::submission_ads(
            &submission,
            1,
            gleaner_core::time::Time::from_secs(gleaner_station::clock::now_secs()),
            submit_dir.as_deref(),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        out.job_ads(&ads);
        return Ok(ExitCode::SUCCESS);
    }
    let settings = args.connect.settings()?;
    let client = StationClient::from_settings(&settings)?;
    let rt = runtime()?;
    // `$(Owner)` is who the station takes us for.
    submission.owner = rt.block_on(client.whoami())?.name;
    let body = SubmitBody {
        protocol: PROTOCOL_VERSION,
        submission,
        submit_dir,
    };
    let resp = rt.block_on(client.submit(&body))?;
    out.submitted(&resp);
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
    /// Explain, station by station, why job JOB (e.g. 12.0) does or does
    /// not match (condor_q -better-analyze); needs the coordinator.
    #[arg(long, value_name = "JOB")]
    pub analyze: Option<String>,
    /// Coordinator base URL for --analyze (default: `coordinator` in
    /// pool.toml).
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    /// Show this page of jobs (1-based) after the summary (with --json:
    /// only that page's jobs).
    #[arg(long, value_name = "N")]
    pub page: Option<u64>,
    /// Jobs per page.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub page_size: u64,
    #[command(flatten)]
    pub ads: AdArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn q(args: QArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    if let Some(job) = &args.analyze {
        return analyze(job, &args, out);
    }
    let (client, _) = args.connect.client()?;
    let rt = runtime()?;
    let owner = if args.all {
        None
    } else {
        Some(rt.block_on(client.whoami())?.name)
    };
    let query = JobQuery {
        owner,
        state: args.state.clone(),
        all: false,
    };
    // A state given: its jobs are counted in the summary unless it is a
    // terminal one (then the whole list, as before).
    let state = match &args.state {
        Some(s) => Some(
            s.parse::<JobStateKind>()
                .map_err(|e| anyhow::anyhow!("--state: {e}"))?,
        ),
        None => None,
    };
    let paged = !args.ads.active()
        && (out.pages() || args.page.is_some())
        && state.is_none_or(|k| !k.is_terminal());
    if !paged {
        let jobs = rt.block_on(client.jobs(&query))?;
        print_jobs(&rt, &client, jobs, &args.ads, JobList::Queue, out)?;
        return Ok(ExitCode::SUCCESS);
    }
    // The summary from counts, then one page (condor_q's default view):
    // quick however many jobs wait.
    let summary = rt.block_on(client.queue_summary(query.owner.as_deref()))?;
    let t = &summary.total;
    let total = match state {
        Some(JobStateKind::Idle) => t.idle,
        Some(JobStateKind::Running) => t.running,
        Some(JobStateKind::Suspended) => t.suspended,
        Some(JobStateKind::Held) => t.held,
        _ => t.active(),
    };
    let size = args.page_size.clamp(1, 10_000);
    let pages = total.div_ceil(size).max(1);
    let page = args.page.unwrap_or(1).clamp(1, pages);
    let jobs = rt.block_on(client.jobs_page(&query, (page - 1) * size, size))?;
    out.queue_page(&crate::output::QueuePage {
        summary,
        jobs,
        page,
        pages,
        total,
    });
    Ok(ExitCode::SUCCESS)
}

/// `glean q --analyze JOB`: the job's description from its station, the
/// machine ads from the coordinator, and every clause that rejects it.
fn analyze(job: &str, args: &QArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
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
    let c = settings.coordinator_client(&coord)?;
    let view: AdsView = rt
        .block_on(c.get_json("/v1/ads"))
        .context("cannot read the coordinator's machine ads")?;
    let d = &detail.description;
    out.analysis(&Analysis {
        job: detail.job.id,
        state: detail.job.state.kind().name().to_string(),
        owner: d.owner.clone(),
        requirements: d.requirements.clone(),
        concurrency_limits: d.concurrency_limits.clone(),
        stations: analyze(d, &view),
        licences: view.licences.clone(),
    });
    Ok(ExitCode::SUCCESS)
}

/// `glean history`: completed and removed jobs.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Show every user's jobs, not only yours.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub ads: AdArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn history(args: HistoryArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let (client, _) = args.connect.client()?;
    let rt = runtime()?;
    let owner = if args.all {
        None
    } else {
        Some(rt.block_on(client.whoami())?.name)
    };
    let jobs = rt.block_on(client.history(owner.as_deref()))?;
    print_jobs(&rt, &client, jobs, &args.ads, JobList::History, out)?;
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

fn action(args: ActionArgs, action: JobAction, out: &dyn Output) -> anyhow::Result<ExitCode> {
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
    let resp = match action {
        JobAction::Rm => rt.block_on(client.rm(id, reason))?,
        JobAction::Hold => rt.block_on(client.hold(id, reason))?,
        JobAction::Release => rt.block_on(client.release(id, reason))?,
    };
    out.actions(action, &resp);
    Ok(ExitCode::SUCCESS)
}

pub fn rm(args: ActionArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    action(args, JobAction::Rm, out)
}

pub fn hold(args: ActionArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    action(args, JobAction::Hold, out)
}

pub fn release(args: ActionArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    action(args, JobAction::Release, out)
}

/// `glean status`: the pool's stations (from the coordinator), or this
/// station's own queue summary when no coordinator is known.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Coordinator base URL (default: `coordinator` in pool.toml).
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    /// Print each station's machine ClassAd (condor_status -long).
    #[arg(long)]
    pub long: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn status(args: StatusArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    let rt = runtime()?;
    if let Some(coord) = args.coordinator.clone().or(settings.coordinator.clone()) {
        let c = settings.coordinator_client(&coord)?;
        if args.long {
            let view: gleaner_coordinator::matchmaker::AdsView =
                rt.block_on(c.get_json("/v1/ads"))?;
            let ads: Vec<_> = view
                .stations
                .iter()
                .map(|e| gleaner_proto::matchmaking::machine_ad(&e.ad))
                .collect();
            out.machine_ads(&ads);
            return Ok(ExitCode::SUCCESS);
        }
        let pool: PoolStatus = rt.block_on(c.get_json("/v1/pool"))?;
        out.pool(&pool);
        return Ok(ExitCode::SUCCESS);
    }
    // No coordinator known: the station's own view of its queue.
    let client = StationClient::from_settings(&settings)?;
    let jobs = rt.block_on(client.jobs(&JobQuery::default()))?;
    out.local_queue(&LocalQueue::count(client.base_url(), &jobs));
    Ok(ExitCode::SUCCESS)
}

/// `glean userprio`: the coordinator's Up-Down table (condor_userprio).
/// Takes the same connection options as `glean status`.
pub fn userprio(args: StatusArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    let Some(coord) = args.coordinator.clone().or(settings.coordinator.clone()) else {
        anyhow::bail!("no coordinator: pass --coordinator URL or set `coordinator` in pool.toml");
    };
    let c = settings.coordinator_client(&coord)?;
    let up: gleaner_proto::wire::UserPrio = runtime()?.block_on(c.get_json("/v1/userprio"))?;
    out.userprio(&up);
    Ok(ExitCode::SUCCESS)
}

/// `glean users`: the station's users, their share and use, and its
/// limits (`condor_status -submitters`, `condor_userprio` of one home).
#[derive(Args, Debug)]
pub struct UsersArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn users(args: UsersArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let (client, _) = args.connect.client()?;
    let u = runtime()?.block_on(client.users())?;
    out.home_users(&u);
    Ok(ExitCode::SUCCESS)
}
