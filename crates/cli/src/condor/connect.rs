//! Which station and coordinator an HTCondor command talks to: the
//! user's own station and pool from `$GLEAN_HOME` (as every `glean`
//! command), or HTCondor's `-name SCHEDD` (a station's URL, `unix:PATH`,
//! or the name of a station the coordinator knows) and `-pool
//! COLLECTOR` (the coordinator's URL).

use super::args::Usage;
use anyhow::Context;
use gleaner_proto::wire::PoolStatus;
use gleaner_station::client::{ClientSettings, StationClient};

/// `-name` and `-pool` as given.
#[derive(Clone, Debug, Default)]
pub struct Target {
    pub name: Option<String>,
    pub pool: Option<String>,
}

fn is_address(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.starts_with("http://") || l.starts_with("https://") || l.starts_with("unix:")
}

impl Target {
    /// Records `-pool VALUE`: a coordinator's URL.
    pub fn set_pool(&mut self, tool: &str, v: String) -> Result<(), Usage> {
        if !is_address(&v) || v.starts_with("unix:") {
            return Err(Usage::new(format!(
                "{tool}: -pool {v}: a Gleaner pool is named by its coordinator's URL \
                 (https://HOST:PORT)"
            )));
        }
        self.pool = Some(v);
        Ok(())
    }

    /// The settings from `$GLEAN_HOME`, with `-pool` as the coordinator.
    pub fn settings(&self) -> anyhow::Result<ClientSettings> {
        let mut s = ClientSettings::discover(None, None)?;
        if let Some(p) = &self.pool {
            s.coordinator = Some(p.clone());
        }
        Ok(s)
    }

    /// A client of the station `-name` names (else the user's own) and
    /// the settings it came from.
    pub fn station(&self) -> anyhow::Result<(StationClient, ClientSettings)> {
        let Some(name) = &self.name else {
            let s = self.settings()?;
            return Ok((StationClient::from_settings(&s)?, s));
        };
        if is_address(name) {
            let s = ClientSettings::discover(Some(name), None)?;
            return Ok((StationClient::from_settings(&s)?, s));
        }
        // A station's name: its address from the coordinator.
        let s = self.settings()?;
        let coord = s.coordinator.clone().ok_or_else(|| {
            anyhow::anyhow!(
                "-name {name}: no coordinator to find it through (pass -pool URL, \
                 or -name URL)"
            )
        })?;
        let rt = crate::jobs::runtime()?;
        let pool: PoolStatus = rt
            .block_on(s.coordinator_client(&coord)?.get_json("/v1/pool"))
            .context("cannot ask the coordinator for the pool's stations")?;
        let Some(st) = pool
            .stations
            .iter()
            .find(|st| st.name.eq_ignore_ascii_case(name))
        else {
            anyhow::bail!("No such schedd named {name} in the pool");
        };
        let s = ClientSettings::discover(Some(&st.address), None)?;
        Ok((StationClient::from_settings(&s)?, s))
    }

    /// The coordinator's URL: `-pool`, else the pool's.
    pub fn coordinator(&self, s: &ClientSettings) -> anyhow::Result<String> {
        self.pool
            .clone()
            .or_else(|| s.coordinator.clone())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "no coordinator: pass -pool URL or set `coordinator` in $GLEAN_HOME/pool.toml"
                )
            })
    }
}

/// This machine's host name (the schedd's name in HTCondor's titles).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
