//! `glean reserve`: the local handler of Mutka 1988 §6.3.4
//! (seeds/000_14c1149197e96532.txt L1070–1078, L1156–1162; Table 6.5).
//!
//! A session lives in `$GLEAN_HOME/reserve-session.json`. It opens with the
//! coordinator's tables for the user (account, reservations, the Global
//! Availability Table); `display`, `check`, `reserve` and `unreserve` work
//! on that copy only, adding rows to the Reservation Request Table; `sync`
//! sends the rows and prints each acknowledgement (a refused row is
//! reported with its reason and the command exits 1); `close` syncs if
//! needed and ends the session, or keeps it open when a row was refused so
//! the user can try something else (Table 6.5).

use crate::jobs::{ConnectArgs, runtime};
use crate::output::Output;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use gleaner_coordinator::reserve_api::{ReservationsView, SyncBody, SyncReply};
use gleaner_core::reservation::session::{Ack, RequestEntry, RequestOp};
use gleaner_core::reservation::{Class, Request, Reservation};
use gleaner_core::time::Time;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ReserveArgs {
    /// Coordinator base URL (default: `coordinator` in pool.toml).
    #[arg(long, value_name = "URL", global = true)]
    coordinator: Option<String>,
    /// The session file (default: $GLEAN_HOME/reserve-session.json).
    #[arg(long, value_name = "FILE", global = true)]
    session: Option<PathBuf>,
    /// Act for this user (administrators only; e.g. to cancel a user's
    /// reservation). Best with a --session file of its own.
    #[arg(long, value_name = "NAME", global = true, value_parser = user_name)]
    user: Option<String>,
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: ReserveCommand,
}

#[derive(Subcommand, Debug)]
enum ReserveCommand {
    /// Show the session: account, reservations, free machines per slot,
    /// the stations serving you now and the rows not yet synced.
    Display {
        /// Fetch the coordinator's tables again first.
        #[arg(long)]
        refresh: bool,
        /// Slots of the availability table to show.
        #[arg(long, default_value_t = 24)]
        slots: u64,
    },
    /// When your reservations are (from the session's copy).
    Check,
    /// Add a reservation request to the session (sent on sync/close).
    Reserve(ReserveRequest),
    /// Give up a reservation, or some of its machines (sent on sync/close).
    Unreserve {
        /// The reservation's id.
        id: u64,
        /// Machines to give up in every slot (default: all).
        #[arg(long)]
        machines: Option<u32>,
    },
    /// Send the session's rows; print each acknowledgement.
    Sync,
    /// Sync if needed and end the session (kept open if a row is refused).
    Close,
}

#[derive(Args, Debug)]
struct ReserveRequest {
    /// First slot: `next` (the next slot), `+N` (N slots after the current
    /// one), `@UNIX_SECONDS`, or `YYYY-MM-DDTHH:MM` (UTC).
    #[arg(long)]
    start: String,
    /// End (exclusive), in the same forms; or use --slots.
    #[arg(long, conflicts_with = "slots")]
    stop: Option<String>,
    /// Number of slots from --start (default 1).
    #[arg(long)]
    slots: Option<u64>,
    /// Machines wanted in every slot (the upper bound).
    #[arg(long)]
    machines: u32,
    /// Fewest machines worth having (default: --machines). The coordinator
    /// grants the most it can up to --machines, nothing below this.
    #[arg(long)]
    lower: Option<u32>,
    /// 1st, 2nd or 3rd class (L1025).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=3))]
    class: u8,
    /// Specific stations (only ones their owners donated); repeatable.
    #[arg(long = "specific", value_name = "STATION")]
    stations: Vec<String>,
    /// May preempt lower classes (needed when the pool sets
    /// `preempt_on = "when_asked"`).
    #[arg(long)]
    preempt: bool,
}

/// The local handler's state (Table 6.5's session variables: `NeedSync`
/// is `!rows.is_empty()`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Session {
    pub coordinator: String,
    pub view: ReservationsView,
    /// The Reservation Request Table (Table 6.11).
    pub rows: Vec<RequestEntry>,
    pub next_row: u64,
}

/// What a `glean reserve` command reports (`--json` prints it as is).
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Report {
    Display {
        view: ReservationsView,
        pending: Vec<RequestEntry>,
    },
    Check {
        user: String,
        slot_secs: u64,
        reservations: Vec<Reservation>,
    },
    Queued {
        row: RequestEntry,
        pending: usize,
    },
    Synced {
        acks: Vec<Ack>,
        view: ReservationsView,
    },
    Closed {
        acks: Vec<Ack>,
        closed: bool,
    },
}

fn session_path(args: &ReserveArgs) -> PathBuf {
    args.session
        .clone()
        .unwrap_or_else(|| gleaner_station::client::glean_home().join("reserve-session.json"))
}

fn load(path: &Path) -> anyhow::Result<Option<Session>> {
    match std::fs::read_to_string(path) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .with_context(|| format!("{}: not a reservation session", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn save(path: &Path, s: &Session) -> anyhow::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(s)?)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

struct Coordinator {
    url: String,
    client: gleaner_station::client::StationClient,
}

fn connect(args: &ReserveArgs) -> anyhow::Result<Coordinator> {
    let settings = args.connect.settings()?;
    let Some(url) = args.coordinator.clone().or(settings.coordinator.clone()) else {
        bail!("no coordinator: pass --coordinator URL or set `coordinator` in pool.toml");
    };
    let client = settings.coordinator_client(&url)?;
    Ok(Coordinator { url, client })
}

/// `?user=NAME` when a user is named, else nothing. User names are Unix
/// account names, which need no escaping (others are refused at parse).
fn for_user(user: Option<&str>, sep: char) -> String {
    match user.filter(|u| !u.is_empty()) {
        Some(u) => format!("{sep}user={u}"),
        None => String::new(),
    }
}

/// `--user`: a Unix account name.
fn user_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a user name (letters, digits, '_', '-', '.')"
        ))
    }
}

fn fetch(c: &Coordinator, slots: u64, user: Option<&str>) -> anyhow::Result<ReservationsView> {
    let rt = runtime()?;
    Ok(rt.block_on(c.client.get_json(&format!(
        "/v1/reservations?slots={slots}{}",
        for_user(user, '&')
    )))?)
}

/// The open session, opening one (fetching the tables) if there is none.
fn open(args: &ReserveArgs, path: &Path) -> anyhow::Result<Session> {
    if let Some(s) = load(path)? {
        if let Some(u) = &args.user
            && *u != s.view.user
        {
            bail!(
                "{}: the open session is {}'s, not {u}'s: close it or pass another --session",
                path.display(),
                if s.view.user.is_empty() {
                    "the whole pool"
                } else {
                    &s.view.user
                }
            );
        }
        return Ok(s);
    }
    let c = connect(args)?;
    let view = fetch(&c, 24, args.user.as_deref())?;
    let s = Session {
        coordinator: c.url,
        view,
        rows: Vec::new(),
        next_row: 1,
    };
    save(path, &s)?;
    Ok(s)
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses a slot instant (see `--start`).
pub fn parse_when(s: &str, view: &ReservationsView) -> anyhow::Result<Time> {
    let slot = view.slot_secs.max(1);
    let current = view.slot * slot;
    let secs = if s == "next" {
        current + slot
    } else if let Some(n) = s.strip_prefix('+') {
        let n: u64 = n
            .parse()
            .with_context(|| format!("{s:?}: +N needs a number"))?;
        current + n.saturating_mul(slot)
    } else if let Some(n) = s.strip_prefix('@') {
        n.parse()
            .with_context(|| format!("{s:?}: @ needs UNIX seconds"))?
    } else {
        let bad = || anyhow::anyhow!("{s:?}: expected next, +N, @UNIX or YYYY-MM-DDTHH:MM (UTC)");
        let (date, time) = s.split_once(['T', ' ']).ok_or_else(bad)?;
        let d: Vec<i64> = date
            .split('-')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        let t: Vec<i64> = time
            .split(':')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        let (&[y, mo, da], [h, mi, rest @ ..]) = (d.as_slice(), t.as_slice()) else {
            return Err(bad());
        };
        let sec = rest.first().copied().unwrap_or(0);
        if !(1..=12).contains(&mo)
            || !(1..=31).contains(&da)
            || !(0..24).contains(h)
            || !(0..60).contains(mi)
            || !(0..60).contains(&sec)
        {
            return Err(bad());
        }
        let v = days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60 + sec;
        u64::try_from(v).map_err(|_| bad())?
    };
    if secs % slot != 0 {
        bail!("{s:?} is not on a slot boundary (slots are {slot} s long)");
    }
    Ok(Time::from_secs(secs))
}

pub fn run(args: ReserveArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let path = session_path(&args);
    match &args.command {
        ReserveCommand::Display { refresh, slots } => {
            let mut s = open(&args, &path)?;
            if *refresh || *slots != 24 {
                let c = connect(&args)?;
                let user = Some(s.view.user.as_str()).filter(|u| !u.is_empty());
                s.view = fetch(&c, *slots, user.or(args.user.as_deref()))?;
                save(&path, &s)?;
            }
            out.reserve(&Report::Display {
                view: s.view,
                pending: s.rows,
            });
        }
        ReserveCommand::Check => {
            let s = open(&args, &path)?;
            out.reserve(&Report::Check {
                user: s.view.user.clone(),
                slot_secs: s.view.slot_secs,
                reservations: s.view.reservations,
            });
        }
        ReserveCommand::Reserve(r) => {
            let mut s = open(&args, &path)?;
            let start = parse_when(&r.start, &s.view)?;
            let stop = match (&r.stop, r.slots) {
                (Some(t), _) => parse_when(t, &s.view)?,
                (None, n) => Time::from_secs(
                    start.as_micros() / 1_000_000 + n.unwrap_or(1).max(1) * s.view.slot_secs,
                ),
            };
            let class = Class::from_number(r.class).context("class must be 1, 2 or 3")?;
            let row = RequestEntry {
                row: s.next_row,
                op: RequestOp::Add(Request {
                    user: s.view.user.clone(),
                    start,
                    stop,
                    lower: r.lower.unwrap_or(r.machines),
                    upper: r.machines,
                    class,
                    specific: r.stations.clone(),
                    preempt: r.preempt,
                }),
            };
            s.next_row += 1;
            s.rows.push(row.clone());
            save(&path, &s)?;
            out.reserve(&Report::Queued {
                row,
                pending: s.rows.len(),
            });
        }
        ReserveCommand::Unreserve { id, machines } => {
            let mut s = open(&args, &path)?;
            let row = RequestEntry {
                row: s.next_row,
                op: RequestOp::Delete {
                    reservation: *id,
                    machines: *machines,
                },
            };
            s.next_row += 1;
            s.rows.push(row.clone());
            save(&path, &s)?;
            out.reserve(&Report::Queued {
                row,
                pending: s.rows.len(),
            });
        }
        ReserveCommand::Sync => {
            let mut s = open(&args, &path)?;
            let reply = sync(&args, &mut s)?;
            save(&path, &s)?;
            let refused = reply.acks.iter().any(|a| !a.accepted);
            out.reserve(&Report::Synced {
                acks: reply.acks,
                view: reply.view,
            });
            if refused {
                return Ok(ExitCode::FAILURE);
            }
        }
        ReserveCommand::Close => {
            let Some(mut s) = load(&path)? else {
                out.reserve(&Report::Closed {
                    acks: Vec::new(),
                    closed: true,
                });
                return Ok(ExitCode::SUCCESS);
            };
            let acks = if s.rows.is_empty() {
                Vec::new()
            } else {
                sync(&args, &mut s)?.acks
            };
            let refused = acks.iter().any(|a| !a.accepted);
            if refused {
                save(&path, &s)?;
            } else {
                std::fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
            }
            out.reserve(&Report::Closed {
                acks,
                closed: !refused,
            });
            if refused {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Sends the rows; the session keeps the new view and no rows (a refused
/// row is reported, not retried: the user decides what to try instead).
fn sync(args: &ReserveArgs, s: &mut Session) -> anyhow::Result<SyncReply> {
    let c = connect(args)?;
    let rt = runtime()?;
    let body = SyncBody {
        rows: s.rows.clone(),
    };
    // The session's user: the caller, or the user an admin acts for.
    let path = format!(
        "/v1/reservations/sync{}",
        for_user(Some(s.view.user.as_str()), '?')
    );
    let reply: SyncReply = rt.block_on(c.client.post_json(&path, &body))?;
    s.rows.clear();
    s.view = reply.view.clone();
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> ReservationsView {
        serde_json::from_value(serde_json::json!({
            "now": 0, "slot_secs": 3600, "slot": 490_000,
            "policy": {"kind": "free_market"}, "replacement": "longest_free",
            "user": "alice", "account": null, "reservations": [],
            "availability": [], "donated": [], "bound": []
        }))
        .unwrap()
    }

    #[test]
    fn slot_instants_parse() {
        let v = view();
        let cur = 490_000 * 3600;
        assert_eq!(parse_when("next", &v).unwrap(), Time::from_secs(cur + 3600));
        assert_eq!(
            parse_when("+3", &v).unwrap(),
            Time::from_secs(cur + 3 * 3600)
        );
        assert_eq!(parse_when("@7200", &v).unwrap(), Time::from_secs(7200));
        // 2026-11-27 10:00 UTC.
        assert_eq!(
            parse_when("2026-11-27T10:00", &v).unwrap(),
            Time::from_secs(1_795_773_600)
        );
        for bad in [
            "@7201",
            "2026-13-01T00:00",
            "tomorrow",
            "+x",
            "2026-11-27T10:30",
        ] {
            assert!(parse_when(bad, &v).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod cli_tests {
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        crate::Cli::command().debug_assert();
    }
}
