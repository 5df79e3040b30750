//! `glean dashboard` and `glean owner`: the pool's dashboard and the
//! machine owner's page and controls (docs/dashboard.md, docs/owner.md).
//!
//! Neither puts a token in a URL: `glean dashboard` shows the user's token
//! to the coordinator (`POST /v1/dashboard/ticket`) and prints a link with
//! a single-use, one-minute ticket; `glean owner` asks the station on its
//! user socket, where the kernel vouches for the caller's uid.

use crate::jobs::{ConnectArgs, runtime};
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use gleaner_station::client::{StationAddr, StationClient};
use serde_json::Value;
use std::process::ExitCode;

/// `glean dashboard`.
#[derive(Args, Debug)]
pub struct DashboardArgs {
    /// Coordinator base URL (default: `coordinator` in pool.toml).
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    /// Open the link in the desktop's browser (`xdg-open`).
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Prints (and with `--open` opens) a login link; the page is at the
/// link's origin under `/dashboard/`.
pub fn dashboard(args: DashboardArgs) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    let Some(coord) = args.coordinator.clone().or(settings.coordinator.clone()) else {
        bail!("no coordinator: pass --coordinator URL or set `coordinator` in pool.toml");
    };
    let c = settings.coordinator_client(&coord)?;
    let reply: Value = runtime()?
        .block_on(c.post_json("/v1/dashboard/ticket", &serde_json::json!({})))
        .context("asking the coordinator for a login ticket")?;
    let path = reply["path"]
        .as_str()
        .context("the coordinator sent no login path")?;
    let url = format!("{}{path}", coord.trim_end_matches('/'));
    show(&url, args.open);
    Ok(ExitCode::SUCCESS)
}

fn show(url: &str, open: bool) {
    println!("{url}");
    eprintln!("(a single-use login link, good for one minute)");
    if open
        && let Err(e) = std::process::Command::new("xdg-open")
            .arg(url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
    {
        eprintln!("cannot run xdg-open ({e}); open the link yourself");
    }
}

/// `glean owner`.
#[derive(Args, Debug)]
pub struct OwnerArgs {
    #[command(subcommand)]
    pub command: Option<OwnerCommand>,
    /// Open the page in the desktop's browser (`xdg-open`).
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Subcommand, Debug)]
pub enum OwnerCommand {
    /// Print a login link to this machine's owner page (the default).
    Page,
    /// Lending now, guests, the controls in force (--json for all).
    Status,
    /// Stop lending now: guests leave by the eviction policy, none come.
    Stop {
        /// Lend again at: +30m, +2h, +1d, HH:MM (next, local time) or UNIX
        /// seconds. Without it, until `glean owner resume`.
        #[arg(long, value_name = "WHEN")]
        until: Option<String>,
    },
    /// Lend again.
    Resume,
    /// Lend only in these weekly windows ("Mon-Fri 18:00-08:00" …);
    /// `--default` returns to the station's `[policy] windows`; no
    /// windows: always.
    Schedule {
        windows: Vec<String>,
        #[arg(long, conflicts_with = "windows")]
        default: bool,
    },
    /// The eviction policy for new guests (immediate_eviction, pause_and_migrate,
    /// linger_longer, linger_forever, condor1988, checkpoint_then_kill; ie, pm, ll,
    /// lf, ctk), or `default` for the station's.
    Policy { name: String },
    /// Cap the guests' memory (MiB, all together), or `none`.
    Memory { mb: String },
}

/// `WHEN` of `glean owner stop --until` as UNIX seconds at `now`.
pub fn parse_until(s: &str, now: u64) -> anyhow::Result<u64> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('+') {
        let (num, unit) = rest.split_at(
            rest.find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len()),
        );
        let n: u64 = num
            .parse()
            .with_context(|| format!("{s:?}: expected +N with s, m, h or d"))?;
        let mult = match unit {
            "" | "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86400,
            _ => bail!("{s:?}: the unit must be s, m, h or d"),
        };
        return Ok(now + n.saturating_mul(mult));
    }
    if let Some((h, m)) = s.split_once(':') {
        let (h, m): (u64, u64) = (
            h.parse()
                .with_context(|| format!("{s:?}: expected HH:MM"))?,
            m.parse()
                .with_context(|| format!("{s:?}: expected HH:MM"))?,
        );
        if h > 23 || m > 59 {
            bail!("{s:?}: not a time of day");
        }
        let off = i64::from(gleaner_station::host::machine_ad::utc_offset_secs(
            now as i64,
        ));
        let local = now as i64 + off;
        let midnight = local - local.rem_euclid(86400);
        let mut t = midnight + (h * 3600 + m * 60) as i64;
        if t <= local {
            t += 86400;
        }
        return Ok((t - off) as u64);
    }
    let t: u64 = s
        .parse()
        .with_context(|| format!("{s:?}: expected +30m, HH:MM or UNIX seconds"))?;
    if t <= now {
        bail!("{s:?} is not in the future");
    }
    Ok(t)
}

pub fn owner(args: OwnerArgs, json: bool) -> anyhow::Result<ExitCode> {
    let settings = args.connect.settings()?;
    if !matches!(settings.station, StationAddr::Socket(_)) {
        bail!(
            "the owner's controls are on the station's user socket only (the kernel vouches for \
             your uid there); run this on the machine, with `socket` in pool.toml or --station unix:PATH"
        );
    }
    let c = StationClient::from_settings(&settings)?;
    let rt = runtime()?;
    let now = gleaner_station::clock::now_secs();
    let change = match args.command.unwrap_or(OwnerCommand::Page) {
        OwnerCommand::Page => {
            let r: Value = rt.block_on(c.post_json("/v1/owner/ticket", &serde_json::json!({})))?;
            let url = r["url"].as_str().context("the station sent no URL")?;
            show(url, args.open);
            return Ok(ExitCode::SUCCESS);
        }
        OwnerCommand::Status => None,
        OwnerCommand::Stop { until } => Some(serde_json::json!({
            "action": "stop",
            "until_unix": until.map(|u| parse_until(&u, now)).transpose()?,
        })),
        OwnerCommand::Resume => Some(serde_json::json!({"action": "resume"})),
        OwnerCommand::Schedule { windows, default } => Some(serde_json::json!({
            "action": "schedule",
            "windows": if default { None } else { Some(windows) },
        })),
        OwnerCommand::Policy { name } => Some(serde_json::json!({
            "action": "policy",
            "name": if name == "default" { None } else { Some(name) },
        })),
        OwnerCommand::Memory { mb } => Some(serde_json::json!({
            "action": "memory",
            "mb": if mb == "none" { None } else {
                Some(mb.parse::<u64>().with_context(|| format!("{mb:?}: expected MiB or `none`"))?)
            },
        })),
    };
    let state: Value = match change {
        Some(body) => rt.block_on(c.post_json("/v1/owner/controls", &body))?,
        None => rt.block_on(c.get_json("/v1/owner"))?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&state)?);
    } else {
        print_state(&state);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_state(s: &Value) {
    let lending = s["lending"].as_bool().unwrap_or(false);
    let why = s["why"].as_str().unwrap_or("");
    println!(
        "{}: {}",
        s["station"].as_str().unwrap_or("?"),
        if lending {
            "lending (AV)".to_string()
        } else {
            format!("not lending (NA: {why})")
        }
    );
    let c = &s["controls"];
    if let Some(stop) = c.get("stop").filter(|v| !v.is_null()) {
        match stop["until_unix"].as_u64() {
            Some(u) => println!("  stopped until UNIX {u}"),
            None => println!("  stopped until `glean owner resume`"),
        }
    }
    let windows = c["schedule"]
        .as_array()
        .or(s["schedule_config"].as_array())
        .map(|w| {
            w.iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    println!(
        "  schedule: {}",
        if windows.is_empty() {
            "always"
        } else {
            &windows
        }
    );
    println!("  eviction policy: {}", s["policy"].as_str().unwrap_or("?"));
    println!(
        "  guests' memory: {} of {} MiB",
        s["offered_memory_mb"], s["memory_mb"]
    );
    for g in s["guests"].as_array().into_iter().flatten() {
        println!(
            "  guest {}@{} ({}): {}",
            g["job"].as_str().unwrap_or("?"),
            g["home"].as_str().unwrap_or("?"),
            g["owner"].as_str().unwrap_or("?"),
            g["state"].as_str().unwrap_or("?")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_forms() {
        assert_eq!(parse_until("+30m", 1000).unwrap(), 1000 + 1800);
        assert_eq!(parse_until("+2h", 0).unwrap(), 7200);
        assert_eq!(parse_until("+1d", 0).unwrap(), 86400);
        assert_eq!(parse_until("5000", 1000).unwrap(), 5000);
        assert!(parse_until("500", 1000).is_err());
        assert!(parse_until("+3w", 0).is_err());
        assert!(parse_until("25:00", 0).is_err());
        let t = parse_until("12:00", 1_700_000_000).unwrap();
        assert!(t > 1_700_000_000 && t <= 1_700_000_000 + 86400);
    }
}
