//! `glean coordinator`: run the pool's coordinator in the foreground.

use anyhow::Context;
use clap::Args;
use gleaner_coordinator::CoordinatorConfig;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CoordinatorArgs {
    /// TOML configuration file (see docs/configuration.md); defaults apply
    /// for everything it leaves out.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Address to listen on, overriding the configuration.
    #[arg(long)]
    pub listen: Option<std::net::SocketAddr>,
    /// Directory for the durable fairness state, overriding the configuration.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// The pool's signing key (created with mode 0600 on first start; only
    /// the coordinator holds it), overriding the configuration.
    #[arg(long)]
    pub signing_key: Option<PathBuf>,
}

/// Resolves when the process is asked to stop (Ctrl-C or SIGTERM).
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// A daemon has finished starting (credentials, queue, listeners, first
/// advertisement) well within this; its start-up code is unmapped then
/// (`daemon_memory`). A page used again later is simply mapped again.
const STARTED_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs a daemon's main future on a multi-threaded runtime until it ends.
fn serve<E: std::error::Error + Send + Sync + 'static>(
    what: &'static str,
    daemon: impl std::future::Future<Output = Result<(), E>>,
) -> anyhow::Result<ExitCode> {
    crate::daemon_memory::one_arena();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.spawn(async {
        tokio::time::sleep(STARTED_WITHIN).await;
        match tokio::task::spawn_blocking(crate::daemon_memory::drop_mappings).await {
            Ok(Ok(bytes)) => tracing::debug!(bytes, "start-up code unmapped"),
            Ok(Err(e)) => tracing::warn!("unmapping start-up code: {e}"),
            Err(e) => tracing::warn!("unmapping start-up code: {e}"),
        }
    });
    rt.block_on(daemon).context(what)?;
    Ok(ExitCode::SUCCESS)
}

pub fn coordinator(args: CoordinatorArgs) -> anyhow::Result<ExitCode> {
    crate::daemon_memory::no_fastbins();
    let mut config = match &args.config {
        Some(path) => CoordinatorConfig::load(path)
            .with_context(|| format!("configuration {}", path.display()))?,
        None => CoordinatorConfig::default(),
    };
    if let Some(l) = args.listen {
        config.listen = l;
    }
    if let Some(d) = args.state_dir {
        config.state_dir = d;
    }
    if let Some(k) = args.signing_key {
        config.signing_key = Some(k);
    }
    serve(
        "coordinator",
        gleaner_coordinator::run(config, shutdown_signal()),
    )
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct StationArgs {
    #[command(subcommand)]
    pub action: Option<StationAction>,
    /// TOML configuration file (see docs/configuration.md).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Station name, overriding the configuration.
    #[arg(long)]
    pub name: Option<String>,
    /// Address to listen on, overriding the configuration.
    #[arg(long)]
    pub listen: Option<std::net::SocketAddr>,
    /// Coordinator base URL, overriding the configuration.
    #[arg(long)]
    pub coordinator: Option<String>,
    /// State directory (queue database and spool), overriding the configuration.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// The pool's public key (the coordinator's `pool.pub`), overriding
    /// the configuration.
    #[arg(long)]
    pub public_key: Option<PathBuf>,
    /// This station's own token (`glean token create --station NAME`, mode
    /// 0600), overriding the configuration.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Check the configuration, the credentials and (as root) the slot
    /// accounts as the station would at start, print one line each and
    /// exit (1 if any fails) instead of running.
    #[arg(long)]
    pub check_config: bool,
}

#[derive(clap::Subcommand, Debug)]
pub enum StationAction {
    /// Enrol this machine in a pool: fetch and pin the pool CA, make this
    /// station's key, get its certificate and station token with a
    /// one-time join token, write its configuration.
    Join(Box<crate::join::JoinArgs>),
}

/// `glean station`: run a station daemon (owner monitor, job queue, local
/// scheduler, shadow and starter) in the foreground.
pub fn station(args: StationArgs) -> anyhow::Result<ExitCode> {
    use gleaner_station::{config::StationConfig, node::run};
    if let Some(StationAction::Join(j)) = args.action {
        return crate::join::run(*j);
    }
    let mut config = match &args.config {
        Some(path) => StationConfig::load(path)
            .with_context(|| format!("configuration {}", path.display()))?,
        None => StationConfig::default(),
    };
    if let Some(n) = args.name {
        config.name = n;
    }
    if let Some(l) = args.listen {
        config.listen = l;
    }
    if let Some(c) = args.coordinator {
        config.coordinator = c;
    }
    if let Some(d) = args.state_dir {
        config.state_dir = d;
    }
    if let Some(k) = args.public_key {
        config.public_key = k;
    }
    if let Some(t) = args.token_file {
        config.token_file = t;
    }
    if args.check_config {
        let shown = args
            .config
            .as_ref()
            .map_or_else(|| "(defaults)".to_string(), |p| p.display().to_string());
        return crate::station_check::run(&config, &shown);
    }
    serve("station", run(config, shutdown_signal()))
}
