//! The station's TLS material (`[tls]`, written by `glean station join`):
//! the pool CA it trusts alone, and its own certificate and key. The
//! certificate must name this station (`NAME.station.POOL`): a station
//! never serves, nor calls, under another's name.

use super::DaemonError;
use crate::config::StationConfig;
use gleaner_edge::tls::{Identity, PoolCa};

/// The CA and this station's identity, when `[tls]` is set.
pub fn load(config: &StationConfig, name: &str) -> Result<Option<(PoolCa, Identity)>, DaemonError> {
    let Some(t) = &config.tls else {
        return Ok(None);
    };
    let refuse = |e: String| DaemonError::Credentials(format!("[tls]: {e}"));
    let ca = PoolCa::load(&t.pool, &t.ca).map_err(|e| refuse(e.to_string()))?;
    let me = Identity::load(&t.cert, &t.key).map_err(|e| refuse(e.to_string()))?;
    let named = me.station(&t.pool);
    if named.as_deref() != Some(name.to_ascii_lowercase().as_str()) {
        return Err(refuse(format!(
            "{} names station {} of pool {}, but this station is {name}",
            t.cert.display(),
            named.as_deref().unwrap_or("(none)"),
            t.pool
        )));
    }
    let left_days = (me.not_after - gleaner_edge::wall_secs() as i64) / 86_400;
    if left_days < 0 {
        return Err(refuse(format!(
            "{} expired; renew it (glean station join again, docs/deploy.md)",
            t.cert.display()
        )));
    }
    if left_days < 30 {
        tracing::warn!(cert = %t.cert.display(), left_days,
            "the station's certificate expires soon; renew it (docs/deploy.md)");
    }
    tracing::info!(pool = %t.pool, ca = %ca.fingerprint(), left_days, "TLS on");
    Ok(Some((ca, me)))
}
