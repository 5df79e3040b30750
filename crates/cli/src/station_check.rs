//! `glean station --check-config`: what a station would refuse at start,
//! checked without starting it (as `sshd -t` does): the configuration,
//! the credentials, and, as root on an executing station, the slot
//! accounts against the station's own rules
//! (`gleaner_station::isolation::slots`). Administrators run it after
//! editing `station.toml`; the package's CI test runs it on the accounts
//! the postinst made.

use gleaner_proto::creds::Revocations;
use gleaner_station::config::StationConfig;
use gleaner_station::isolation::SlotAccounts;
use std::process::ExitCode;

/// One checked item: what it is and, if it fails, why.
struct Item {
    what: String,
    problem: Option<String>,
}

fn ok(what: impl Into<String>) -> Item {
    Item {
        what: what.into(),
        problem: None,
    }
}

fn fail(what: impl Into<String>, why: impl Into<String>) -> Item {
    Item {
        what: what.into(),
        problem: Some(why.into()),
    }
}

/// Checks `config` (already parsed and validated from `shown`) and prints
/// one line per item; exit status 1 when any fails.
pub fn run(config: &StationConfig, shown: &str) -> anyhow::Result<ExitCode> {
    let mut items = vec![ok(format!("configuration {shown}"))];
    items.push(credentials(config));
    items.push(slot_accounts(config));
    let mut failed = false;
    for item in &items {
        match &item.problem {
            None => println!("ok    {}", item.what),
            Some(why) => {
                failed = true;
                println!("FAIL  {}: {why}", item.what);
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn credentials(config: &StationConfig) -> Item {
    let name = config.station_name();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Revocations the station learnt are in its state directory, which
    // this check does not open: the coordinator's list is authoritative.
    match gleaner_station::node::credentials::load(config, &name, &Revocations::default(), now) {
        Ok(c) => ok(format!(
            "credentials: token {} for station {name:?}, pool key {}",
            c.claims.token_id,
            c.verifier.fingerprint()
        )),
        Err(e) => fail("credentials", e.to_string()),
    }
}

fn slot_accounts(config: &StationConfig) -> Item {
    if !config.role.executes() {
        return ok("slot accounts: none needed (role = submit_only)");
    }
    if !nix::unistd::geteuid().is_root() {
        return ok(
            "slot accounts: none (not root: a personal pool, guests run as this user; \
             the packaged station runs as root)",
        );
    }
    let wanted = config.isolation.slot_config();
    let missing: Vec<String> = wanted
        .names()
        .into_iter()
        .filter(|n| matches!(nix::unistd::User::from_name(n), Ok(None)))
        .collect();
    if !missing.is_empty() {
        return if wanted.create {
            ok(format!(
                "slot accounts: {} missing, the station creates them at start \
                 (create_slot_users = true)",
                missing.join(", ")
            ))
        } else {
            fail(
                "slot accounts",
                format!(
                    "missing: {} (create_slot_users = false: the package creates them; \
                     run `dpkg-reconfigure gleaner` after changing slot_count)",
                    missing.join(", ")
                ),
            )
        };
    }
    let mut check_only = wanted.clone();
    check_only.create = false;
    match SlotAccounts::ensure(&check_only) {
        Ok(accounts) => {
            let slots = accounts.slots();
            let shown: Vec<String> = slots
                .iter()
                .map(|s| format!("{} (uid {})", s.name, s.user.uid))
                .collect();
            ok(format!("slot accounts: {}", shown.join(", ")))
        }
        Err(e) => fail("slot accounts", e.to_string()),
    }
}
