//! The coordinator's configuration file (TOML).

use gleaner_core::alloc::{AllocatorConfig, PerPass, UpDownConfig};
use gleaner_core::dmw::ProgressGuarantee;
use gleaner_core::time::Dur;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::CoordinatorError;

/// Everything `glean coordinator` reads from its TOML file. Every field has a
/// default, so an empty file is a valid configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoordinatorConfig {
    /// Address of the HTTP endpoint. Default `127.0.0.1:9618` (HTCondor's
    /// collector port, where administrators expect the central manager);
    /// use `0.0.0.0:9618` to serve other hosts.
    pub listen: SocketAddr,
    /// Where the durable fairness state (`fairness.json`: station ids and
    /// the Up-Down table), the token registry (`tokens.json`) and by
    /// default the keys live. Default `/var/lib/gleaner/coordinator`.
    pub state_dir: PathBuf,
    /// The pool's Ed25519 signing key (mode 0600), created on first start
    /// if missing. Only the coordinator holds it: it signs every token and
    /// claim. Default `<state_dir>/signing.key`.
    pub signing_key: Option<PathBuf>,
    /// Where the coordinator writes the matching public key at every start
    /// (`pool.pub`, mode 0644), for stations and clients to copy. Default
    /// `<state_dir>/pool.pub`.
    pub public_key: Option<PathBuf>,
    /// Which allocator decides who gets free nodes. Default Up-Down with
    /// resolutions A1–A9 of spec/mutka-livny-1987.md §2.6 except A3: a pass
    /// hands out every free node that a waiting job fits, lowest index
    /// first again (`per_pass = "until_satisfied"`, the A3 alternative of
    /// Mutka 1988 L645), so free capacity never idles while a job waits.
    /// The thesis's one node per station per pass is `per_pass = "one"`
    /// (what `glean sim updown` and `glean sim pool` reproduce). An
    /// `[allocator]` table with `kind = "updown"` and no `per_pass` gets
    /// the same `until_satisfied`.
    pub allocator: AllocatorConfig,
    /// Seconds between scheduling passes with an index update. Default 120:
    /// Condor's coordinator polled every 2 minutes (Mutka 1988 L583); the
    /// thesis simulations used 10 minutes.
    pub scheduling_interval_secs: f64,
    /// Seconds between advertisements, told to stations in every reply.
    /// Default 120, the same 2-minute poll (L583).
    pub advertise_period_secs: u64,
    /// Forget a station whose ads stopped for this long. Default: three
    /// advertise periods.
    pub station_timeout_secs: Option<f64>,
    /// After a start, preempt nothing for this long, so that holdings are
    /// first learnt from the hosts' ads. Default: one advertise period;
    /// 0 disables the grace.
    pub startup_grace_secs: Option<f64>,
    /// Lifetime of a claim id (a grant not used by then lapses). Default:
    /// three advertise periods, enough for the grantee to hear of the grant
    /// and the host to report the placement.
    pub claim_lifetime_secs: Option<u64>,
    /// How long a node freed by preemption stays reserved for the
    /// preempting station while the victim vacates. Default: three
    /// advertise periods (the thesis's 5-minute suspend grace, L841, fits).
    pub preempt_timeout_secs: Option<f64>,
    /// Seed of the allocator's RNG (Random allocator, Up-Down ties). `None`
    /// seeds from the clock.
    pub seed: Option<u64>,
    /// Largest request body accepted, bytes. Default 256 KiB.
    pub max_body_bytes: usize,
    /// Floating licences (`[licences]`, name = units): jobs naming a
    /// licence in `concurrency_limits` never hold more units at once,
    /// pool-wide. Names are case-insensitive; unlisted names are unlimited.
    pub licences: BTreeMap<String, u32>,
    /// DMW's embargo: after a placement on a host, no further placement
    /// there until a guest leaves it or this many seconds pass (Neeracher
    /// 1998 L1111, L1209: 90 s, because a starting job's load is not yet
    /// visible). Default: one advertise period (by then the host's ad shows
    /// the guest), at most 90 s. 0 disables it.
    pub embargo_secs: Option<f64>,
    /// DMW's progress guarantee: a station with matchable work and nothing
    /// running gets a free matching host even where the allocator gave it
    /// none (Neeracher 1998 L1016, L1203). It never preempts and never
    /// exceeds a host's guest limit (`gleaner_core::dmw::rules`).
    /// `ignore_thresholds_and_embargo` (default: it may use an embargoed
    /// host), `ignore_thresholds` (it waits out the embargo) or `off`.
    pub progress_guarantee: ProgressGuarantee,
    /// Also run an allocation pass when an ad shows more idle jobs than the
    /// station's previous ad while some node is free, so a submitted job
    /// meets a free node at once instead of at the next interval. Default
    /// true; the thesis allocated only at intervals, NA→AV and remote
    /// completions (resolution A4), so the paper's reproduction sets false.
    pub pass_on_demand: bool,
    /// Event-triggered passes run at most this often, seconds; an event
    /// within the gap is served by one pass at its end. Default 0.02.
    pub event_pass_gap_secs: f64,
    /// The base URL stations and users reach the coordinator at
    /// (`https://HOST:9618`), as `glean pool init` wrote it: printed with
    /// join tokens and written into users' client files. Optional.
    pub address: String,
    /// TLS (`[tls]`, written by `glean pool init`): without it the
    /// coordinator serves plain HTTP, and only on a loopback address.
    pub tls: Option<CoordinatorTls>,
    /// Reservations (`[reservations]`, Mutka 1988 ch. 6): present, the
    /// coordinator also runs the reservation coordinator role
    /// (docs/reservations.md).
    pub reservations: Option<crate::reserve_config::ReservationsConfig>,
}

/// The coordinator's `[tls]` table: the pool's name, the pool CA and its
/// key (the coordinator alone holds it: it signs stations' certificates
/// at join), and the coordinator's own certificate and key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinatorTls {
    /// The pool's name: stations are `NAME.station.POOL` in their
    /// certificates, the coordinator `coordinator.POOL`.
    pub pool: String,
    /// The pool CA's certificate. Default `<state_dir>/ca.pem`.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// The pool CA's private key, mode 0600. Default `<state_dir>/ca.key`.
    #[serde(default)]
    pub ca_key: Option<PathBuf>,
    /// The coordinator's certificate. Default `<state_dir>/coordinator.crt`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// Its private key, mode 0600. Default `<state_dir>/coordinator.key`.
    #[serde(default)]
    pub key: Option<PathBuf>,
}

/// The four TLS files of a coordinator, defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsPaths {
    pub pool: String,
    pub ca: PathBuf,
    pub ca_key: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl CoordinatorConfig {
    /// The TLS files, when `[tls]` is set.
    pub fn tls_paths(&self) -> Option<TlsPaths> {
        let t = self.tls.as_ref()?;
        let d = &self.state_dir;
        Some(TlsPaths {
            pool: t.pool.clone(),
            ca: t.ca.clone().unwrap_or_else(|| d.join("ca.pem")),
            ca_key: t.ca_key.clone().unwrap_or_else(|| d.join("ca.key")),
            cert: t.cert.clone().unwrap_or_else(|| d.join("coordinator.crt")),
            key: t.key.clone().unwrap_or_else(|| d.join("coordinator.key")),
        })
    }
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9618)),
            state_dir: PathBuf::from("/var/lib/gleaner/coordinator"),
            signing_key: None,
            public_key: None,
            allocator: work_conserving_updown(),
            scheduling_interval_secs: 120.0,
            advertise_period_secs: 120,
            station_timeout_secs: None,
            startup_grace_secs: None,
            claim_lifetime_secs: None,
            preempt_timeout_secs: None,
            seed: None,
            max_body_bytes: 256 * 1024,
            licences: BTreeMap::new(),
            embargo_secs: None,
            progress_guarantee: ProgressGuarantee::default(),
            pass_on_demand: true,
            event_pass_gap_secs: 0.02,
            address: String::new(),
            tls: None,
            reservations: None,
        }
    }
}

/// The configuration with every derived default filled in, in the pool's
/// own time ([`Dur`]); only the server's ticker uses a std `Duration`.
#[derive(Clone, Debug)]
pub(crate) struct Timing {
    pub interval: Duration,
    pub advertise_secs: u64,
    pub station_timeout: Dur,
    pub startup_grace: Dur,
    pub claim_lifetime: Dur,
    pub preempt_timeout: Dur,
    pub embargo: Dur,
    pub progress: ProgressGuarantee,
    pub pass_on_demand: bool,
    pub event_gap: Dur,
}

/// The coordinator's default allocator: Up-Down, every free node handed
/// out in one pass (see [`CoordinatorConfig::allocator`]).
pub fn work_conserving_updown() -> AllocatorConfig {
    AllocatorConfig::UpDown(UpDownConfig {
        per_pass: PerPass::UntilSatisfied,
        ..UpDownConfig::default()
    })
}

fn secs(field: &str, v: f64) -> Result<Dur, CoordinatorError> {
    if v.is_finite() && v > 0.0 && v < 1e9 {
        Ok(Dur::from_secs_f64(v))
    } else {
        Err(CoordinatorError::Config(format!(
            "{field} must be a positive number of seconds, got {v}"
        )))
    }
}

/// What a configuration that still names the old shared pool key hears.
pub(crate) const POOL_KEY_REMOVED: &str = "pool_key was removed: the shared HMAC pool key that every \
     station held is replaced by an Ed25519 key pair. The coordinator keeps the signing key \
     (`signing_key`, default <state_dir>/signing.key, created on first start) and writes the \
     public key (`public_key`, default <state_dir>/pool.pub) for the stations; give each \
     station pool.pub and its own token (`glean token create --station NAME`). Delete the \
     pool_key line (docs/configuration.md)";

impl CoordinatorConfig {
    /// The signing key file ([`Self::signing_key`] or its default).
    pub fn signing_key_path(&self) -> PathBuf {
        self.signing_key
            .clone()
            .unwrap_or_else(|| crate::tokens::signing_key_path(&self.state_dir))
    }

    /// The public key file ([`Self::public_key`] or its default).
    pub fn public_key_path(&self) -> PathBuf {
        self.public_key
            .clone()
            .unwrap_or_else(|| crate::tokens::public_key_path(&self.state_dir))
    }

    /// Parses a TOML configuration.
    pub fn from_toml_str(text: &str) -> Result<Self, CoordinatorError> {
        // Said before serde's "unknown field": what replaced it matters more.
        if let Ok(table) = text.parse::<toml::Table>()
            && table.contains_key("pool_key")
        {
            return Err(CoordinatorError::Config(POOL_KEY_REMOVED.into()));
        }
        let mut c: CoordinatorConfig =
            toml::from_str(text).map_err(|e| CoordinatorError::Config(e.to_string()))?;
        // Up-Down's own default is the thesis's one node per pass; the
        // coordinator's is to hand out every free node (see `allocator`).
        let per_pass_given = text
            .parse::<toml::Table>()
            .ok()
            .and_then(|t| t.get("allocator")?.as_table()?.get("per_pass").cloned())
            .is_some();
        if let AllocatorConfig::UpDown(u) = &mut c.allocator
            && !per_pass_given
        {
            u.per_pass = PerPass::UntilSatisfied;
        }
        c.timing()?;
        Ok(c)
    }

    /// Reads and parses a TOML configuration file.
    pub fn load(path: &Path) -> Result<Self, CoordinatorError> {
        let text = std::fs::read_to_string(path).map_err(|source| CoordinatorError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml_str(&text)
    }

    pub(crate) fn timing(&self) -> Result<Timing, CoordinatorError> {
        let interval = Duration::from_micros(
            secs("scheduling_interval_secs", self.scheduling_interval_secs)?.as_micros(),
        );
        if self.advertise_period_secs == 0 {
            return Err(CoordinatorError::Config(
                "advertise_period_secs must be at least 1".into(),
            ));
        }
        if self.max_body_bytes < 1024 {
            return Err(CoordinatorError::Config(
                "max_body_bytes must be at least 1024".into(),
            ));
        }
        let period = self.advertise_period_secs as f64;
        for (name, n) in &self.licences {
            let spec = format!("{name}:{n}");
            if *n == 0 {
                // Zero units is a valid way to forbid a program pool-wide.
            } else if let Err(e) = gleaner_proto::matchmaking::parse_limits(&[spec]) {
                return Err(CoordinatorError::Config(format!("licences.{name}: {e}")));
            }
        }
        Ok(Timing {
            embargo: match self.embargo_secs {
                Some(0.0) => Dur::ZERO,
                Some(v) => secs("embargo_secs", v)?,
                None => Dur::from_secs_f64(period.min(90.0)),
            },
            interval,
            advertise_secs: self.advertise_period_secs,
            station_timeout: secs(
                "station_timeout_secs",
                self.station_timeout_secs.unwrap_or(3.0 * period),
            )?,
            startup_grace: match self.startup_grace_secs {
                // Zero is allowed: a test or a fresh pool need not wait.
                Some(0.0) => Dur::ZERO,
                Some(v) => secs("startup_grace_secs", v)?,
                None => Dur::from_secs(self.advertise_period_secs),
            },
            claim_lifetime: Dur::from_secs(
                self.claim_lifetime_secs
                    .unwrap_or(3 * self.advertise_period_secs)
                    .max(1),
            ),
            preempt_timeout: secs(
                "preempt_timeout_secs",
                self.preempt_timeout_secs.unwrap_or(3.0 * period),
            )?,
            progress: self.progress_guarantee,
            pass_on_demand: self.pass_on_demand,
            event_gap: match self.event_pass_gap_secs {
                0.0 => Dur::ZERO,
                v => secs("event_pass_gap_secs", v)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        let c = CoordinatorConfig::from_toml_str("").unwrap();
        assert_eq!(c, CoordinatorConfig::default());
        let t = c.timing().unwrap();
        assert_eq!(t.interval, Duration::from_secs(120));
        assert_eq!(t.station_timeout, Dur::from_secs(360));
        assert!(t.pass_on_demand);
        assert_eq!(t.event_gap, Dur::from_millis(20));
    }

    /// Free capacity is used at once by default; the thesis's one node per
    /// station per pass stays available by name.
    #[test]
    fn updown_hands_out_every_free_node_unless_told_one() {
        let per_pass = |text: &str| match CoordinatorConfig::from_toml_str(text).unwrap().allocator
        {
            AllocatorConfig::UpDown(u) => u.per_pass,
            other => panic!("{other:?}"),
        };
        assert_eq!(per_pass(""), PerPass::UntilSatisfied);
        assert_eq!(
            per_pass("[allocator]\nkind = \"updown\"\n"),
            PerPass::UntilSatisfied
        );
        assert_eq!(
            per_pass("[allocator]\nkind = \"updown\"\nper_pass = \"one\"\n"),
            PerPass::One
        );
    }

    #[test]
    fn fields_parse_and_unknown_ones_are_refused() {
        let c = CoordinatorConfig::from_toml_str(
            "listen = \"0.0.0.0:9000\"\nscheduling_interval_secs = 600\nseed = 7\n\
             [allocator]\nkind = \"random\"\n",
        )
        .unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.seed, Some(7));
        assert!(CoordinatorConfig::from_toml_str("bogus = 1").is_err());
        assert!(CoordinatorConfig::from_toml_str("scheduling_interval_secs = -1").is_err());
        let c =
            CoordinatorConfig::from_toml_str("embargo_secs = 0\n[licences]\nmatlab = 2\n").unwrap();
        assert_eq!(c.licences.get("matlab"), Some(&2));
        assert_eq!(c.timing().unwrap().embargo, Dur::ZERO);
        assert!(CoordinatorConfig::from_toml_str("[licences]\n\"a/b\" = 1\n").is_err());
        assert!(CoordinatorConfig::from_toml_str("[licences]\nm = -1\n").is_err());
    }

    #[test]
    fn keys_default_to_the_state_dir_and_pool_key_is_gone() {
        let c = CoordinatorConfig::from_toml_str("state_dir = \"/s\"\n").unwrap();
        assert_eq!(c.signing_key_path(), PathBuf::from("/s/signing.key"));
        assert_eq!(c.public_key_path(), PathBuf::from("/s/pool.pub"));
        let c = CoordinatorConfig::from_toml_str("signing_key = \"/k/sk\"\n").unwrap();
        assert_eq!(c.signing_key_path(), PathBuf::from("/k/sk"));
        let e = CoordinatorConfig::from_toml_str("pool_key = \"/etc/gleaner/pool.key\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("pool_key was removed")
                && e.contains("signing_key")
                && e.contains("pool.pub"),
            "{e}"
        );
    }
}
