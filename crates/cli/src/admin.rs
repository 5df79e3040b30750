//! `glean drain` and `glean vacate`: an administrator's hold on a station
//! (HTCondor's `condor_drain`, `condor_drain -cancel`, `condor_vacate`),
//! through the coordinator's token API (`POST /v1/stations/NAME/drain`,
//! `…/undrain`, `…/vacate`; administrator tokens only). The dashboard has
//! the same actions (docs/dashboard.md).

use crate::jobs::{ConnectArgs, runtime};
use crate::output::escape::say;
use anyhow::{Context, bail};
use clap::Args;
use serde_json::Value;
use std::process::ExitCode;

/// `glean drain [--cancel] NAME`.
#[derive(Args, Debug)]
pub struct DrainArgs {
    /// The station.
    pub name: String,
    /// End the drain: the station takes new guests again.
    #[arg(long)]
    pub cancel: bool,
    /// Coordinator base URL (default: `coordinator` in pool.toml).
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `glean vacate NAME`.
#[derive(Args, Debug)]
pub struct VacateArgs {
    /// The station whose guests leave now.
    pub name: String,
    /// Coordinator base URL (default: `coordinator` in pool.toml).
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// A path segment with everything but unreserved characters escaped.
fn segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn call(
    connect: &ConnectArgs,
    coordinator: Option<String>,
    path: &str,
    json: bool,
) -> anyhow::Result<Value> {
    let settings = connect.settings()?;
    let Some(coord) = coordinator.or(settings.coordinator.clone()) else {
        bail!("no coordinator: pass --coordinator URL or set `coordinator` in pool.toml");
    };
    let c = settings.coordinator_client(&coord)?;
    let reply: Value = runtime()?
        .block_on(c.post_json(path, &serde_json::json!({})))
        .with_context(|| {
            format!("asking the coordinator ({path}); an administrator's token is needed")
        })?;
    if json {
        say!("{reply}");
    }
    Ok(reply)
}

pub fn drain(args: DrainArgs, json: bool) -> anyhow::Result<ExitCode> {
    let verb = if args.cancel { "undrain" } else { "drain" };
    let path = format!("/v1/stations/{}/{verb}", segment(&args.name));
    let r = call(&args.connect, args.coordinator, &path, json)?;
    if !json {
        let changed = r["changed"].as_bool().unwrap_or(false);
        match (args.cancel, changed) {
            (false, true) => say!(
                "{}: drained: no new guests; running guests finish",
                args.name
            ),
            (false, false) => say!("{}: already drained", args.name),
            (true, true) => say!("{}: drain ended: it takes new guests again", args.name),
            (true, false) => say!("{}: was not drained", args.name),
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn vacate(args: VacateArgs, json: bool) -> anyhow::Result<ExitCode> {
    let path = format!("/v1/stations/{}/vacate", segment(&args.name));
    let r = call(&args.connect, args.coordinator, &path, json)?;
    if !json {
        let n = r["preempted"].as_u64().unwrap_or(0);
        say!(
            "{}: {n} guest(s) asked to leave; their homes vacate them (checkpointing when they can) and queue them again",
            args.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_escaped_in_paths() {
        assert_eq!(super::segment("ws-1.lab"), "ws-1.lab");
        assert_eq!(super::segment("a/../b c"), "a%2F..%2Fb%20c");
    }
}
