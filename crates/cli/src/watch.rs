//! `glean watch`: your clusters' progress, updated as jobs move, in the
//! manner of `condor_watch_q`: which clusters to follow is decided once
//! (those named, else every cluster of yours with a job not yet finished),
//! a new table is printed whenever a count changes, and with
//! `--exit-when-done` it returns once every followed job is completed or
//! removed (`condor_watch_q -exit all,done`).

use crate::jobs::ConnectArgs;
use crate::output::{ClusterProgress, Output};
use anyhow::bail;
use clap::Args;
use gleaner_station::client::{JobQuery, StationClient};
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

/// `glean watch [CLUSTER…] [--exit-when-done] [--exit-on-hold]`.
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// The clusters to follow (default: yours with unfinished jobs).
    pub clusters: Vec<u64>,
    /// Return once every followed job is completed or removed.
    #[arg(long)]
    pub exit_when_done: bool,
    /// Return (exit status 1) as soon as a followed job is held.
    #[arg(long)]
    pub exit_on_hold: bool,
    /// Seconds between looks at the queue.
    #[arg(long, default_value_t = 2.0, value_name = "S")]
    pub interval: f64,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn watch(args: WatchArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    if !(args.interval.is_finite() && args.interval > 0.0) {
        bail!("--interval must be a positive number of seconds");
    }
    let settings = args.connect.settings()?;
    let client = StationClient::from_settings(&settings)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(&client, &args, out))
}

async fn run(
    client: &StationClient,
    args: &WatchArgs,
    out: &dyn Output,
) -> anyhow::Result<ExitCode> {
    let me = client.whoami().await?.name;
    let query = JobQuery {
        owner: Some(me),
        state: None,
        all: true,
    };
    let mut followed: Option<BTreeSet<u64>> = None;
    let mut last: Option<Vec<ClusterProgress>> = None;
    loop {
        let jobs = client.jobs(&query).await?;
        let all = ClusterProgress::of(&jobs);
        let wanted = followed.get_or_insert_with(|| {
            if args.clusters.is_empty() {
                all.iter()
                    .filter(|c| !c.done())
                    .map(|c| c.cluster)
                    .collect()
            } else {
                args.clusters.iter().copied().collect()
            }
        });
        let now: Vec<ClusterProgress> = all
            .into_iter()
            .filter(|c| wanted.contains(&c.cluster))
            .collect();
        if last.as_ref() != Some(&now) {
            out.progress(&now);
            last = Some(now.clone());
        }
        if args.exit_on_hold && now.iter().any(|c| c.held > 0) {
            return Ok(ExitCode::from(1));
        }
        if args.exit_when_done && now.iter().all(ClusterProgress::done) {
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(Duration::from_secs_f64(args.interval)).await;
    }
}
