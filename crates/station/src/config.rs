//! The station daemon's configuration file (`station.toml`).
//!
//! Every field has a default, so an empty file is a valid submit-and-execute
//! station listening on loopback. Unknown keys are errors: a typo must not
//! silently fall back to a default.
//!
//! ```toml
//! name = "ws12"
//! listen = "0.0.0.0:9620"
//! address = "http://ws12.example:9620"
//! state_dir = "/var/lib/gleaner"
//! coordinator = "http://central:9618"
//! public_key = "/etc/gleaner/pool.pub"         # the coordinator's pool.pub
//! token_file = "/etc/gleaner/station.token"    # glean token create --station ws12
//! role = "both"                 # submit_only | execute_only | both
//! advertise_secs = 120
//! placement_interval_secs = 120 # at most one placement per interval
//! activity = { source = "always_idle" } # or "file" (path = ...), or "linux" with [owner]
//! eviction_policy = "linger_longer" # see gleaner_core::eviction
//! user_socket = "/run/gleaner/ws12.sock" # the user API for local users
//! [owner]                         # host::owner_watch
//! sources = ["evdev", "tty", "logind", "power", "load"]
//! [isolation]                     # isolation::CgroupSettings
//! cgroups = "auto"
//! ```

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which side(s) of Gleaner the station runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StationRole {
    /// Queues its users' jobs but never hosts guests (e.g. a laptop).
    SubmitOnly,
    /// Hosts guests but has no users of its own (a donated machine).
    ExecuteOnly,
    /// Both: the normal workstation of the thesis.
    #[default]
    Both,
}

impl StationRole {
    pub const fn submits(self) -> bool {
        !matches!(self, StationRole::ExecuteOnly)
    }
    pub const fn executes(self) -> bool {
        !matches!(self, StationRole::SubmitOnly)
    }
}

/// Where the owner's activity comes from (consumed by the execute side).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum ActivitySource {
    /// The owner is never active: for dedicated machines and tests.
    #[default]
    AlwaysIdle,
    /// A file whose first word is `active` or `idle` (tests, scripts).
    File { path: PathBuf },
    /// The real Linux sources and detector, configured in `[owner]`
    /// (see `host::owner_watch`).
    Linux,
}

/// The station daemon's settings. See the module docs for an example.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StationConfig {
    /// Unique station name; the host name when empty.
    pub name: String,
    /// Address the HTTP server binds (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Base URL other stations and the coordinator use to reach this one;
    /// derived from the bound address when empty.
    pub address: String,
    /// Holds the job queue (`queue.db`) and the spool (`spool/<job>/`).
    pub state_dir: PathBuf,
    /// Base URL of the coordinator; no advertising when empty.
    pub coordinator: String,
    /// The pool's public key (`pool.pub`, copied from the coordinator's
    /// state directory): verifies every token and claim. A station never
    /// holds the signing key.
    pub public_key: PathBuf,
    /// This station's own token (`glean token create --station NAME`, mode
    /// 0600): it advertises, places and reports with it, and it names this
    /// station only.
    pub token_file: PathBuf,
    pub role: StationRole,
    /// Seconds between advertisements when the coordinator does not say.
    pub advertise_secs: u64,
    /// At most one placement per this many seconds (Mutka 1988 L839: one
    /// remote capacity allocation per two-minute interval).
    pub placement_interval_secs: f64,
    /// CPUs offered to guests; detected when `None`.
    pub cpus: Option<u32>,
    /// Memory offered to guests in MiB; 1024 when `None`.
    pub memory_mb: Option<u64>,
    /// HTCondor-style `Arch`; detected when `None`.
    pub arch: Option<String>,
    /// HTCondor-style `OpSys`; `LINUX` when `None`.
    pub opsys: Option<String>,
    /// Relative speed advertised to the coordinator.
    pub speed: Option<f64>,
    /// Owner activity source for the execute side.
    pub activity: ActivitySource,
    /// Eviction policy name (see `gleaner_core::eviction`).
    pub eviction_policy: String,
    /// Largest request body accepted, bytes.
    pub max_body_bytes: usize,
    /// Real owner-activity sources and detector (`activity.source = "linux"`).
    pub owner: crate::host::owner_watch::OwnerWatchConfig,
    /// Guest cgroups (`[isolation]`).
    pub isolation: crate::isolation::CgroupSettings,
    /// Custom machine attributes (`[attrs]`, name = ClassAd expression
    /// text), advertised in the machine ad for jobs' requirements.
    pub attrs: std::collections::BTreeMap<String, String>,
    /// The owner's rules for guests (`[policy]`).
    pub policy: crate::host::policy::PolicyConfig,
    /// The GPUs offered to guests (`[gpus]`: listed, or detected).
    pub gpus: crate::host::gpus::GpuConfig,
    /// Lease between a job's home and its host, seconds (0: no leases).
    /// The host renews every third of it and kills a guest whose home it
    /// cannot reach for this long; the home requeues a job not heard of for
    /// this long plus one renewal period.
    pub lease_secs: f64,
    /// Checkpoint transfers through this station's shadow, bytes per second
    /// summed over all jobs (0: unlimited).
    pub checkpoint_bytes_per_sec: u64,
    /// Largest checkpoint accepted, bytes.
    pub max_checkpoint_bytes: u64,
    /// How long a host that evicted a job (or lost its lease) is avoided
    /// when placing that job again, seconds (0: never avoided).
    pub avoid_host_secs: f64,
    /// Failed starts in a row after which a job goes on hold (poison
    /// jobs, issue 14); a job's own `max_retries` sets it to
    /// `max_retries + 1` for that job.
    pub max_start_failures: u32,
    /// How long the host of a failed start is avoided for that job after
    /// its first failed start, seconds; doubled for each further one, up to
    /// `avoid_host_secs`.
    pub start_retry_secs: f64,
    /// Signal asking a self-checkpointing guest to checkpoint (name, e.g.
    /// `SIGTERM`, HTCondor's default, or `SIGUSR1`).
    pub checkpoint_signal: String,
    /// How long a guest may take to checkpoint and exit after the signal
    /// before a vacate kills it, seconds.
    pub checkpoint_grace_secs: f64,
    /// Parent of the guests' sandboxes (default `<state_dir>/execute`).
    /// Guests must be able to reach it: every directory above it must be
    /// searchable by the guest user.
    pub execute_dir: Option<PathBuf>,
    /// Parent of the sandboxes of CRIU jobs (`checkpoint_method = criu`).
    /// Must be the same path on every station of the pool: a CRIU image
    /// names the files the job had open by path.
    pub criu_sandbox_dir: PathBuf,
    /// The Unix socket on which the user API is also served, callers known
    /// by their uid (`SO_PEERCRED`), no token needed. Default:
    /// `/run/gleaner/<name>.sock` when the daemon runs as root,
    /// `<state_dir>/user.sock` otherwise ([`Self::user_socket_path`]).
    pub user_socket: Option<PathBuf>,
    /// Per-user limits of the home: jobs queued, per submission, running;
    /// the spool's bounds (`[limits]`, `home::limits`).
    pub limits: crate::home::limits::LimitsConfig,
    /// The fair share between the home's users (`[share]`,
    /// `home::share`).
    pub share: crate::home::share::ShareSettings,
    /// TLS with the pool's CA (`[tls]`, written by `glean station join`).
    /// Without it the station serves plain HTTP, on a loopback address
    /// only, and calls only loopback peers.
    pub tls: Option<StationTls>,
}

/// The station's `[tls]` table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StationTls {
    /// The pool's name (`NAME.station.POOL` in certificates).
    pub pool: String,
    /// The pool CA's certificate, as the join fetched and checked it.
    #[serde(default = "default_ca")]
    pub ca: PathBuf,
    /// This station's certificate (issued at join).
    #[serde(default = "default_cert")]
    pub cert: PathBuf,
    /// Its private key (made at join, never sent anywhere), mode 0600.
    #[serde(default = "default_key")]
    pub key: PathBuf,
}

fn default_ca() -> PathBuf {
    PathBuf::from("/etc/gleaner/pool-ca.pem")
}
fn default_cert() -> PathBuf {
    PathBuf::from("/etc/gleaner/station.crt")
}
fn default_key() -> PathBuf {
    PathBuf::from("/etc/gleaner/station.key")
}

impl Default for StationConfig {
    fn default() -> Self {
        StationConfig {
            name: String::new(),
            // 9618 is the coordinator's (HTCondor's collector port).
            listen: SocketAddr::from(([127, 0, 0, 1], 9620)),
            address: String::new(),
            state_dir: PathBuf::from("/var/lib/gleaner"),
            coordinator: String::new(),
            public_key: PathBuf::from("/etc/gleaner/pool.pub"),
            token_file: PathBuf::from("/etc/gleaner/station.token"),
            role: StationRole::Both,
            advertise_secs: 120,
            placement_interval_secs: 120.0,
            cpus: None,
            memory_mb: None,
            arch: None,
            opsys: None,
            speed: None,
            activity: ActivitySource::AlwaysIdle,
            eviction_policy: gleaner_core::eviction::EvictionPolicy::default()
                .name()
                .to_string(),
            max_body_bytes: 64 * 1024 * 1024,
            owner: Default::default(),
            isolation: Default::default(),
            attrs: Default::default(),
            policy: Default::default(),
            gpus: Default::default(),
            lease_secs: 120.0,
            checkpoint_bytes_per_sec: 32 * 1024 * 1024,
            max_checkpoint_bytes: 4 << 30,
            avoid_host_secs: 1800.0,
            max_start_failures: 3,
            start_retry_secs: 30.0,
            checkpoint_signal: "SIGTERM".into(),
            checkpoint_grace_secs: 10.0,
            execute_dir: None,
            criu_sandbox_dir: PathBuf::from(crate::host::starter::DEFAULT_CRIU_SANDBOX_DIR),
            user_socket: None,
            limits: Default::default(),
            share: Default::default(),
            tls: None,
        }
    }
}

/// What a configuration that still names the old shared pool key hears.
pub const POOL_KEY_REMOVED: &str = "was removed: stations no longer hold a key that can sign. \
     Set `public_key` to a copy of the coordinator's pool.pub and `token_file` to this \
     station's own token (`glean token create --station NAME` on the coordinator's machine), \
     and delete the pool_key line (docs/configuration.md)";

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Toml {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error("invalid setting {field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

/// Longest period a setting may give, in seconds (about 31 years), as the
/// coordinator's configuration allows.
const MAX_SECS: f64 = 1e9;

impl StationConfig {
    /// Reads and validates a TOML file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses and validates the TOML text of a file; `path` names it in
    /// errors. [`Self::load`] without the read, for the fuzz target.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        // Said before serde's "unknown field": what replaced it matters more.
        if let Ok(table) = text.parse::<toml::Table>()
            && table.contains_key("pool_key")
        {
            return Err(ConfigError::Invalid {
                field: "pool_key",
                message: POOL_KEY_REMOVED.into(),
            });
        }
        let cfg: StationConfig = toml::from_str(text).map_err(|source| ConfigError::Toml {
            path: path.to_path_buf(),
            source,
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks values serde cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, message: &str| {
            Err(ConfigError::Invalid {
                field,
                message: message.to_string(),
            })
        };
        if self.advertise_secs == 0 {
            return bad("advertise_secs", "must be at least 1");
        }
        // Plain HTTP only on loopback, and only without [tls].
        let plain = self.tls.is_none();
        if plain && !self.listen.ip().is_loopback() {
            return bad(
                "listen",
                "plain HTTP is served only on loopback: give the station its [tls] \
                 (glean station join) or listen on 127.0.0.1",
            );
        }
        for (field, url) in [
            ("coordinator", &self.coordinator),
            ("address", &self.address),
        ] {
            if !url.is_empty()
                && let Err(e) = gleaner_edge::tls::check_url(field, url, plain)
            {
                return bad(field, &e);
            }
        }
        if gleaner_core::eviction::EvictionPolicy::from_name(&self.eviction_policy).is_none() {
            return bad(
                "eviction_policy",
                "unknown policy (immediate_eviction, pause_and_migrate, linger_longer, linger_forever, condor1988, checkpoint_then_kill)",
            );
        }
        // Bounded above too: the daemon turns each into a `Duration`, which
        // panics past u64 seconds (found writing the station_config fuzz
        // target: `placement_interval_secs = 1e300` stopped the station
        // with a panic instead of this message).
        for (field, v) in [
            ("placement_interval_secs", self.placement_interval_secs),
            ("lease_secs", self.lease_secs),
            ("avoid_host_secs", self.avoid_host_secs),
            ("start_retry_secs", self.start_retry_secs),
            ("checkpoint_grace_secs", self.checkpoint_grace_secs),
        ] {
            if !(v.is_finite() && (0.0..=MAX_SECS).contains(&v)) {
                return bad(field, "must be a number of seconds from 0 to 1e9");
            }
        }
        if self.checkpoint_signal_number().is_none() {
            return bad(
                "checkpoint_signal",
                "unknown signal name (e.g. SIGTERM, SIGUSR1, SIGINT)",
            );
        }
        if self.max_body_bytes < 1024 {
            return bad("max_body_bytes", "must be at least 1024");
        }
        if let Err(m) = self.owner.validate() {
            return bad("owner", &m);
        }
        if let Err(m) = self.isolation.validate() {
            return bad("isolation", &m);
        }
        if let Err(m) = self.gpus.validate() {
            return bad("gpus", &m);
        }
        if let Err((field, message)) = self.policy.validate() {
            return Err(ConfigError::Invalid { field, message });
        }
        if let Err((field, message)) = self.limits.validate() {
            return Err(ConfigError::Invalid { field, message });
        }
        if let Err((field, message)) = self.share.validate() {
            return Err(ConfigError::Invalid { field, message });
        }
        for (name, expr) in &self.attrs {
            let ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ident {
                return Err(ConfigError::Invalid {
                    field: "attrs",
                    message: format!("{name:?} is not an attribute name"),
                });
            }
            if let Err(e) = gleaner_classad::parse_expr(expr) {
                return Err(ConfigError::Invalid {
                    field: "attrs",
                    message: format!("{name} = {expr:?}: not a valid expression: {e}"),
                });
            }
        }
        if let Some(p) = &self.user_socket
            && !p.is_absolute()
        {
            return bad("user_socket", "must be an absolute path");
        }
        if let Some(s) = self.speed
            && !(s.is_finite() && s > 0.0)
        {
            return bad("speed", "must be a positive number");
        }
        Ok(())
    }

    pub fn placement_interval(&self) -> Duration {
        Duration::from_secs_f64(self.placement_interval_secs.max(0.0))
    }

    /// The checkpoint signal as a number (`SIGTERM`, `TERM` or `15`).
    pub fn checkpoint_signal_number(&self) -> Option<i32> {
        let s = self.checkpoint_signal.trim();
        if let Ok(n) = s.parse::<i32>() {
            return nix::sys::signal::Signal::try_from(n).ok().map(|s| s as i32);
        }
        let name = if s.starts_with("SIG") {
            s.to_string()
        } else {
            format!("SIG{s}")
        };
        name.parse::<nix::sys::signal::Signal>()
            .ok()
            .map(|s| s as i32)
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs_f64(self.lease_secs.max(0.0))
    }

    pub fn queue_path(&self) -> PathBuf {
        self.state_dir.join("queue.db")
    }

    pub fn spool_dir(&self) -> PathBuf {
        self.state_dir.join("spool")
    }

    pub fn execute_dir(&self) -> PathBuf {
        self.execute_dir
            .clone()
            .unwrap_or_else(|| self.state_dir.join("execute"))
    }

    /// Where the user socket is (see [`Self::user_socket`]).
    pub fn user_socket_path(&self) -> PathBuf {
        match &self.user_socket {
            Some(p) => p.clone(),
            None if nix::unistd::geteuid().is_root() => {
                PathBuf::from(format!("/run/gleaner/{}.sock", self.station_name()))
            }
            None => self.state_dir.join("user.sock"),
        }
    }

    /// The station name, falling back to the host name.
    pub fn station_name(&self) -> String {
        if !self.name.is_empty() {
            return self.name.clone();
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "station".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_default_and_unknown_keys_fail() {
        let c: StationConfig = toml::from_str("").unwrap();
        assert_eq!(c, StationConfig::default());
        assert!(toml::from_str::<StationConfig>("nmae = \"x\"").is_err());
        let c: StationConfig = toml::from_str(
            "role = \"submit_only\"\nplacement_interval_secs = 0.5\nactivity = { source = \"file\", path = \"/tmp/a\" }",
        )
        .unwrap();
        assert_eq!(c.role, StationRole::SubmitOnly);
        assert!(matches!(c.activity, ActivitySource::File { .. }));
        c.validate().unwrap();
    }

    /// Found writing the station_config fuzz target: a period too long for
    /// a `Duration` validated, then panicked when the daemon used it.
    #[test]
    fn periods_too_long_for_a_duration_are_refused() {
        for field in [
            "placement_interval_secs",
            "lease_secs",
            "avoid_host_secs",
            "start_retry_secs",
            "checkpoint_grace_secs",
        ] {
            for v in ["1e300", "1.5e9", "-1.0", "nan", "inf"] {
                let text = format!("{field} = {v}\n");
                let e = StationConfig::parse(&text, Path::new("s.toml"))
                    .expect_err(&text)
                    .to_string();
                assert!(e.contains(field) && e.contains("1e9"), "{text}: {e}");
            }
            let c = StationConfig::parse(&format!("{field} = 1e9\n"), Path::new("s.toml"))
                .expect("1e9 s is allowed");
            let _ = (c.placement_interval(), c.lease());
        }
    }

    #[test]
    fn pool_key_is_refused_with_what_replaced_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("station.toml");
        std::fs::write(
            &path,
            "name = \"ws1\"\npool_key = \"/etc/gleaner/pool.key\"\n",
        )
        .unwrap();
        let e = StationConfig::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("pool_key: was removed")
                && e.contains("public_key")
                && e.contains("token_file"),
            "{e}"
        );
        std::fs::write(
            &path,
            "public_key = \"/k/pool.pub\"\ntoken_file = \"/k/t\"\n",
        )
        .unwrap();
        let c = StationConfig::load(&path).unwrap();
        assert_eq!(c.public_key, PathBuf::from("/k/pool.pub"));
        assert_eq!(c.token_file, PathBuf::from("/k/t"));
    }

    #[test]
    fn attrs_and_policy_are_validated() {
        let c: StationConfig = toml::from_str(
            "[attrs]\nHasMatlab = \"true\"\nSite = '\"lab\"'\n[policy]\nwindows = [\"Mon-Fri 18:00-08:00\"]\nmax_guests = 1\n",
        )
        .unwrap();
        c.validate().unwrap();
        let c: StationConfig = toml::from_str("[attrs]\nX = \"1 +\"\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("attrs"));
        let c: StationConfig = toml::from_str("[policy]\nwindows = [\"Mon 9-5\"]\n").unwrap();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("policy.windows")
        );
        assert!(toml::from_str::<StationConfig>("[policy]\nwindow = []\n").is_err());
    }
}
