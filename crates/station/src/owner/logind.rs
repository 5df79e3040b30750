//! systemd-logind's `IdleHint`/`IdleSinceHint` on the Manager object.
//!
//! logind only knows what the desktop tells it (GNOME/KDE set the hint after
//! their own idle delay), so this is a coarse source, used in the `min()`
//! with the others (platform.md §4). A D-Bus client crate (`zbus`) is heavy
//! for two properties, so the real implementation shells out to `busctl`
//! (installed with systemd) and only when the system bus socket exists; the
//! development machines have no system bus, so it reports "no information"
//! there. The query sits behind [`LogindQuery`] so tests use a fake.

use super::{IdleSource, OwnerError};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What logind says about the seat's idleness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogindIdle {
    pub idle_hint: bool,
    /// `IdleSinceHint`: wall-clock µs since the epoch of the last change of
    /// the hint; 0 if never set.
    pub idle_since_usec: u64,
}

/// Reads logind's idle hints; `Ok(None)` when logind is not reachable.
pub trait LogindQuery: Send {
    fn query(&mut self) -> Result<Option<LogindIdle>, OwnerError>;
}

/// `busctl get-property` against the system bus.
pub struct BusctlLogind {
    program: PathBuf,
    bus_socket: PathBuf,
}

impl Default for BusctlLogind {
    fn default() -> Self {
        BusctlLogind {
            program: PathBuf::from("busctl"),
            bus_socket: PathBuf::from("/run/dbus/system_bus_socket"),
        }
    }
}

impl BusctlLogind {
    /// Custom program and socket (tests use a fake `busctl` script).
    pub fn new(program: impl Into<PathBuf>, bus_socket: impl Into<PathBuf>) -> Self {
        BusctlLogind {
            program: program.into(),
            bus_socket: bus_socket.into(),
        }
    }

    fn get(&self, prop: &str) -> Result<String, OwnerError> {
        let out = Command::new(&self.program)
            .args([
                "--system",
                "get-property",
                "org.freedesktop.login1",
                "/org/freedesktop/login1",
                "org.freedesktop.login1.Manager",
                prop,
            ])
            .output()
            .map_err(|e| OwnerError::Command {
                program: self.program.clone(),
                what: e.to_string(),
            })?;
        if !out.status.success() {
            return Err(OwnerError::Command {
                program: self.program.clone(),
                what: format!(
                    "get-property {prop}: {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

/// Parse busctl's `b true` / `t 1700000000000000` output.
pub(crate) fn parse_busctl(sig: &str, text: &str) -> Option<String> {
    let mut it = text.split_ascii_whitespace();
    (it.next()? == sig).then_some(())?;
    it.next().map(str::to_string)
}

impl LogindQuery for BusctlLogind {
    fn query(&mut self) -> Result<Option<LogindIdle>, OwnerError> {
        if !self.bus_socket.exists() {
            return Ok(None);
        }
        let hint = self.get("IdleHint")?;
        let since = self.get("IdleSinceHint")?;
        let bad = |what: &str| OwnerError::Command {
            program: self.program.clone(),
            what: format!("unexpected output {what:?}"),
        };
        let idle_hint = match parse_busctl("b", &hint).as_deref() {
            Some("true") => true,
            Some("false") => false,
            _ => return Err(bad(&hint)),
        };
        let idle_since_usec = parse_busctl("t", &since)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad(&since))?;
        Ok(Some(LogindIdle {
            idle_hint,
            idle_since_usec,
        }))
    }
}

/// Idle source over a [`LogindQuery`].
pub struct LogindSource<Q: LogindQuery> {
    query: Q,
    /// Re-query at most this often: each query runs `busctl` twice, too
    /// costly for every fast poll of a watching daemon.
    min_interval: Duration,
    cached: Option<(std::time::Instant, Option<LogindIdle>)>,
}

impl<Q: LogindQuery> LogindSource<Q> {
    pub fn new(query: Q) -> Self {
        LogindSource {
            query,
            min_interval: Duration::ZERO,
            cached: None,
        }
    }

    /// Answer from the last query for `d` before asking logind again.
    pub fn with_min_interval(mut self, d: Duration) -> Self {
        self.min_interval = d;
        self
    }

    fn idle(&mut self) -> Result<Option<LogindIdle>, OwnerError> {
        if let Some((at, v)) = &self.cached
            && at.elapsed() < self.min_interval
        {
            return Ok(*v);
        }
        let v = self.query.query()?;
        self.cached = Some((std::time::Instant::now(), v));
        Ok(v)
    }
}

impl LogindSource<BusctlLogind> {
    pub fn system() -> Self {
        Self::new(BusctlLogind::default())
    }
}

impl<Q: LogindQuery> IdleSource for LogindSource<Q> {
    fn name(&self) -> &str {
        "logind"
    }

    fn last_activity(&mut self, now: SystemTime) -> Result<Option<SystemTime>, OwnerError> {
        Ok(self.idle()?.and_then(|i| {
            if !i.idle_hint {
                // Not idle: the session is in use now.
                Some(now)
            } else if i.idle_since_usec == 0 {
                None
            } else {
                Some(UNIX_EPOCH + Duration::from_micros(i.idle_since_usec))
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_busctl;

    #[test]
    fn busctl_output() {
        assert_eq!(parse_busctl("b", "b true").as_deref(), Some("true"));
        assert_eq!(parse_busctl("t", "t 17\n").as_deref(), Some("17"));
        assert_eq!(parse_busctl("t", "b true"), None);
        assert_eq!(parse_busctl("b", ""), None);
    }
}
