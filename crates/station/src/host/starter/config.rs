//! The starter's settings, its errors and the fixed names in a sandbox.

use crate::host::policy::PolicyConfig;
use crate::isolation::{
    DEFAULT_DISK_MB, DiskMode, Exposed, IsolationError, NamespaceMode, NetworkMode, SlotConfig,
};
use gleaner_core::eviction::EvictionPolicy;
use gleaner_proto::wire::StationAd;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Names of the capture files in the sandbox. They are streamed, never
/// uploaded as output files.
pub const STDOUT_FILE: &str = "_gleaner_stdout";
pub const STDERR_FILE: &str = "_gleaner_stderr";

/// Default [`StarterConfig::criu_sandbox_dir`].
pub const DEFAULT_CRIU_SANDBOX_DIR: &str = "/var/lib/gleaner-criu";

/// Starter settings.
#[derive(Clone, Debug)]
pub struct StarterConfig {
    /// This station's name (the `host` of status reports and claims).
    pub host: String,
    /// Parent of the guests' sandboxes. Must not be writable by guests.
    pub execute_dir: PathBuf,
    /// CPUs offered to guests (one slot per requested CPU).
    pub cpus: u32,
    /// Memory offered to guests, MiB.
    pub memory_mb: u64,
    /// Free disk kept for the owner in the execute directory, KiB.
    pub reserved_disk_kb: u64,
    /// The eviction policy of every guest on this station.
    pub policy: EvictionPolicy,
    /// This host as a machine (architecture, system, speed, attributes):
    /// the fixed part of its ad ([`crate::host::machine_ad::template`]).
    /// Placements are checked against it with the owner, guests and free
    /// resources of the moment ([`super::Starter::current_ad`]).
    pub machine: StationAd,
    /// The owner's rules for guests (`[policy]`: windows, users, `START`,
    /// guest limit), checked on every placement.
    pub guest_policy: PolicyConfig,
    /// The slot accounts guests run as, one per running guest (root only;
    /// a daemon that is not root runs guests as itself, see
    /// [`SlotPool`](crate::isolation::SlotPool)). Also bounds how many
    /// guests run at once. Tests set a prefix of their own.
    pub slots: SlotConfig,
    /// Own PID and mount namespaces for guests where the kernel allows
    /// (`[isolation] namespaces`; never for CRIU jobs).
    pub namespaces: NamespaceMode,
    /// A private tmpfs `/tmp`, `/var/tmp`, `/dev/shm` per namespaced guest
    /// (`[isolation] private_tmp`).
    pub private_tmp: bool,
    /// `RLIMIT_NPROC` of slot-account guests (`[isolation] max_processes`).
    pub max_processes: Option<u64>,
    /// The daemon's state directory: never in a guest's view.
    pub state_dir: Option<PathBuf>,
    /// A root of its own for each namespaced guest (`[isolation]
    /// own_root`; `isolation::GuestView`).
    pub own_root: bool,
    /// What every guest sees besides the system (`[isolation] expose`).
    pub expose: Vec<Exposed>,
    /// What a job sees when it asks (`[isolation.volumes]`).
    pub volumes: BTreeMap<String, Exposed>,
    /// The guests' network (`[isolation] network`).
    pub network: NetworkMode,
    /// How `request_disk` is enforced (`[isolation] disk`).
    pub disk: DiskMode,
    /// A sandbox's size when the job gives no `request_disk`, MiB.
    pub default_disk_mb: u64,
    /// How often the capture files are polled for new output.
    pub output_poll: Duration,
    /// Signal sent when a job that declares checkpointing
    /// (`checkpoint_exit_code`) must checkpoint: the hook for the later
    /// checkpoint issue. HTCondor's vanilla universe sends SIGTERM and
    /// expects exit code 85 after a checkpoint.
    pub checkpoint_signal: i32,
    /// How long a checkpointing job may take to exit after the signal on
    /// eviction before it is killed.
    pub checkpoint_grace: Duration,
    /// Checkpoint transfers of this host, bytes per second (0: unlimited).
    pub checkpoint_bytes_per_sec: u64,
    /// This station's base URL, sent with lease renewals.
    pub address: String,
    /// Keep sandboxes after the guest ends (debugging).
    pub keep_sandboxes: bool,
    /// Per-request timeout towards the shadow.
    pub http_timeout: Duration,
    /// Parent of the sandboxes of CRIU jobs. A CRIU image names files by
    /// path, so it must be the same directory on every station of the pool;
    /// must not be writable by guests.
    pub criu_sandbox_dir: PathBuf,
    /// Where running guests are recorded so that a crash leaves none
    /// unfound (guest_records.rs); `None`: not recorded.
    pub guest_records: Option<PathBuf>,
    /// The pool's TLS (its CA and this station's certificate): guests'
    /// homes are called over TLS, each checked to be the home the
    /// placement's claim names. `None`: plain HTTP on loopback.
    pub tls: Option<(gleaner_edge::tls::PoolCa, gleaner_edge::tls::Identity)>,
    /// The GPUs offered to guests (`[gpus]`, `host::gpus`), each given to
    /// one guest at a time.
    pub gpus: Vec<gleaner_proto::gpus::Gpu>,
}

impl StarterConfig {
    pub fn new(host: impl Into<String>, execute_dir: impl Into<PathBuf>) -> Self {
        let host = host.into();
        StarterConfig {
            machine: crate::host::machine_ad::bare(&host),
            host,
            execute_dir: execute_dir.into(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            memory_mb: 1024,
            reserved_disk_kb: 0,
            policy: EvictionPolicy::default(),
            guest_policy: PolicyConfig::default(),
            slots: SlotConfig::default(),
            namespaces: NamespaceMode::Auto,
            private_tmp: true,
            max_processes: Some(crate::isolation::DEFAULT_MAX_PROCESSES),
            state_dir: None,
            own_root: true,
            expose: Vec::new(),
            volumes: BTreeMap::new(),
            network: NetworkMode::Auto,
            disk: DiskMode::Auto,
            default_disk_mb: DEFAULT_DISK_MB,
            output_poll: Duration::from_millis(200),
            checkpoint_signal: libc::SIGTERM,
            checkpoint_grace: Duration::from_secs(10),
            checkpoint_bytes_per_sec: 0,
            address: String::new(),
            keep_sandboxes: false,
            http_timeout: Duration::from_secs(30),
            criu_sandbox_dir: PathBuf::from(DEFAULT_CRIU_SANDBOX_DIR),
            guest_records: None,
            tls: None,
            gpus: Vec::new(),
        }
    }
}

/// Starter errors.
#[derive(Debug, thiserror::Error)]
pub enum StarterError {
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("HTTP client: {0}")]
    Http(String),
    #[error("invalid file name {0:?}")]
    BadFileName(String),
    #[error("shadow URL {0:?} is not a base URL")]
    BadShadowUrl(String),
}

pub(crate) fn io_err(path: &Path, source: std::io::Error) -> StarterError {
    StarterError::Io {
        path: path.to_path_buf(),
        source,
    }
}
