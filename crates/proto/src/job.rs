//! Job identities, descriptions and states.
//!
//! A job is named `cluster.proc` as in HTCondor: one `glean submit` creates a
//! cluster, and each `queue` expansion adds a proc to it. Job state lives at
//! the home station (Mutka 1988 §5), so the state machine here is what the
//! station's durable queue enforces; the coordinator never owns it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A job's identity: `cluster.proc`, displayed as `12.0`.
///
/// Serialised as the string `"12.0"` so that it can key JSON maps and reads
/// the same in logs, the CLI and HTTP bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId {
    pub cluster: u64,
    pub proc: u32,
}

impl JobId {
    pub const fn new(cluster: u64, proc: u32) -> Self {
        JobId { cluster, proc }
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.cluster, self.proc)
    }
}

/// Why a string is not a job id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid job id {0:?}: expected CLUSTER.PROC, e.g. 12.0")]
pub struct ParseJobIdError(pub String);

impl FromStr for JobId {
    type Err = ParseJobIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseJobIdError(s.to_string());
        let (c, p) = s.split_once('.').ok_or_else(err)?;
        // `u64::from_str` accepts a leading '+'; job ids never have one.
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(c) || !digits(p) {
            return Err(err());
        }
        Ok(JobId {
            cluster: c.parse().map_err(|_| err())?,
            proc: p.parse().map_err(|_| err())?,
        })
    }
}

impl Serialize for JobId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for JobId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The execution environment: HTCondor's vanilla universe, its parallel
/// universe (`machine_count` processes started and stopped together, see
/// [`GangMember`]), or its local and scheduler universes (the job runs on
/// its home station itself, as its owner; never sent to other stations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Universe {
    #[default]
    Vanilla,
    Parallel,
    Scheduler,
    Local,
}

impl Universe {
    /// Runs on its home station rather than on a host.
    pub fn is_local(self) -> bool {
        matches!(self, Universe::Scheduler | Universe::Local)
    }

    /// HTCondor's `JobUniverse` number.
    pub fn code(self) -> i64 {
        match self {
            Universe::Vanilla => 5,
            Universe::Scheduler => 7,
            Universe::Parallel => 11,
            Universe::Local => 12,
        }
    }
}

/// Most members one parallel job may have (`machine_count`).
pub const MAX_MACHINE_COUNT: u32 = 64;

/// Which gang policy a parallel job follows (Ryu & Hollingsworth §5,
/// seeds/002_34f613b0a80e1e58.txt L286; `gleaner_core::gang`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GangPolicyKind {
    /// LL-k: keep all k nodes; a member whose owner returns lingers.
    #[default]
    Linger,
    /// Reconfiguration: run on as many idle nodes as the shape allows
    /// (at least `gang_min`), restart on the idle ones when an owner
    /// returns.
    Reconfigure,
}

/// The settings every member of one parallel job shares: its class's part
/// of the gang (the matchmaker places a gang of them at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gang {
    /// `machine_count`: k, the members started together.
    pub machine_count: u32,
    /// `gang_policy`.
    #[serde(default)]
    pub policy: GangPolicyKind,
    /// `gang_on_eviction`: what a member that cannot stay does to the gang.
    #[serde(default)]
    pub on_eviction: gleaner_core::gang::OnEviction,
    /// `gang_min` (reconfiguration): fewest members worth running.
    #[serde(default = "one")]
    pub min: u32,
    /// `gang_shape` (reconfiguration): member counts the program runs on.
    #[serde(default)]
    pub shape: gleaner_core::gang::Shape,
}

fn one() -> u32 {
    1
}

impl Gang {
    /// The pure policy of `gleaner_core::gang` these settings mean: the
    /// same code the simulator's LL-k study runs. LL-k always lingers
    /// where the owner lets guests linger (the paper's study, L286).
    pub fn policy(&self) -> gleaner_core::gang::GangPolicy {
        use gleaner_core::gang::GangPolicy;
        match self.policy {
            GangPolicyKind::Linger => GangPolicy::LingerK {
                k: self.machine_count,
                linger_limit: 1.0,
                on_eviction: self.on_eviction,
            },
            GangPolicyKind::Reconfigure => GangPolicy::Reconfigure {
                max: self.machine_count,
                min: self.min,
                shape: self.shape,
                on_eviction: self.on_eviction,
            },
        }
    }

    /// Fewest nodes a placement of this gang takes: k for LL-k, `gang_min`
    /// for reconfiguration.
    pub fn fewest(&self) -> u32 {
        match self.policy {
            GangPolicyKind::Linger => self.machine_count,
            GangPolicyKind::Reconfigure => self.min.max(1),
        }
    }
}

/// One member of a parallel job: proc `rank` of its cluster (proc ids are
/// ranks, so every member is its own job id and its own guest on a host,
/// `gleaner_proto::guest_key::GuestKey`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GangMember {
    pub gang: Gang,
    /// `$(Node)`, `_CONDOR_PROCNO`: 0 ends the job when it exits.
    pub rank: u32,
}

/// `should_transfer_files`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShouldTransferFiles {
    /// Always transfer the sandbox (Gleaner's default: stations share no
    /// file system).
    #[default]
    Yes,
    /// Run in place on a shared file system.
    No,
    /// Transfer unless the host shares the submitter's file system domain.
    IfNeeded,
}

/// The standard files `transfer_input`, `transfer_output` or
/// `transfer_error = false` keep from being transferred (HTCondor's
/// `TransferIn`, `TransferOut`, `TransferErr`). HTCondor then expects the
/// file where the job runs (a shared file system); Gleaner's hosts share
/// none, so an untransferred input leaves the job's stdin empty, and an
/// untransferred stdout or stderr is not written to `output` or `error`
/// at home (`glean tail` still shows it while the job runs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Untransferred {
    pub input: bool,
    pub output: bool,
    pub error: bool,
}

impl Untransferred {
    /// Every standard file is transferred (the default).
    pub fn is_none(&self) -> bool {
        *self == Untransferred::default()
    }
}

/// `when_to_transfer_output`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenToTransferOutput {
    #[default]
    OnExit,
    /// Also transfer on eviction ("delayed transfer" checkpoints).
    OnExitOrEvict,
    /// Only when the job exits successfully.
    OnSuccess,
}

/// `checkpoint_method` (Gleaner's key): how a job is checkpointed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointMethod {
    /// Self-checkpointing when `checkpoint_exit_code` is given, else none
    /// (the job restarts from scratch).
    #[default]
    Auto,
    /// Transparent dumps of the job's processes with CRIU (≥ 4.1): only
    /// stations that advertise `HasCRIU` run the job.
    Criu,
}

/// Everything needed to run one proc of a cluster, after macro expansion.
///
/// Units follow HTCondor: memory in MiB, disk in KiB. `requirements`,
/// `rank` and custom attribute values are ClassAd expression text; they are
/// evaluated by the matchmaker, not here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobDescription {
    /// The submitting user (set by the CLI/station, not by the submit file).
    pub owner: String,
    pub universe: Universe,
    pub executable: String,
    /// Argument vector, already split (see [`parse_arguments`]).
    pub arguments: Vec<String>,
    /// The submit file wrote `arguments` in V1 syntax: the job ad holds
    /// them as `Args`, as HTCondor's does (else `Arguments`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub arguments_v1: bool,
    pub environment: BTreeMap<String, String>,
    /// The submit file set the environment with `env` in V1 syntax: the
    /// job ad holds it as `Env` and `EnvDelim`, as HTCondor's does (else
    /// `Environment`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub environment_v1: bool,
    pub input: Option<String>,
    pub output: Option<String>,
    pub error: Option<String>,
    /// User job event log.
    pub log: Option<String>,
    /// Initial working directory (`initialdir`/`iwd`), as written.
    pub iwd: Option<String>,
    pub should_transfer_files: ShouldTransferFiles,
    /// Standard files not transferred (`transfer_input = false`, …).
    #[serde(skip_serializing_if = "Untransferred::is_none")]
    pub untransferred: Untransferred,
    pub when_to_transfer_output: WhenToTransferOutput,
    pub transfer_executable: bool,
    pub transfer_input_files: Vec<String>,
    /// `None` transfers every new or changed file of the sandbox.
    pub transfer_output_files: Option<Vec<String>>,
    pub request_cpus: u32,
    /// MiB; `None` leaves the pool default.
    pub request_memory_mb: Option<u64>,
    /// KiB; `None` leaves the pool default.
    pub request_disk_kb: Option<u64>,
    pub request_gpus: u32,
    /// Requests written as ClassAd expressions (`request_memory =
    /// ifThenElse(…)`), and `require_gpus`: evaluated against each machine
    /// when the job is matched (`crate::requests`); the numbers above are
    /// then what the host the job was placed on evaluated them to (or the
    /// defaults, before).
    #[serde(skip_serializing_if = "crate::requests::RequestExprs::is_empty")]
    pub request_exprs: crate::requests::RequestExprs,
    pub requirements: Option<String>,
    pub rank: Option<String>,
    /// Exit code meaning "I wrote a checkpoint, restart me" (85 by convention).
    pub checkpoint_exit_code: Option<i32>,
    pub transfer_checkpoint_files: Vec<String>,
    /// `checkpoint_interval` (Gleaner's key, seconds): the station asks the
    /// job to checkpoint this often (checkpoint signal, then the job exits
    /// with `checkpoint_exit_code` and is restarted in place).
    pub checkpoint_interval_secs: Option<u64>,
    pub checkpoint_method: CheckpointMethod,
    pub concurrency_limits: Vec<String>,
    /// Times the job is restarted after a non-zero exit before it completes.
    pub max_retries: Option<u32>,
    pub nice_user: bool,
    pub accounting_group: Option<String>,
    pub batch_name: Option<String>,
    /// Job priority among the owner's own jobs (`priority`), higher first.
    pub priority: i32,
    /// Job attributes by name → ClassAd expression text: the submit file's
    /// `+Attr = expr` / `MY.Attr = expr`, and the HTCondor attributes of
    /// the commands Gleaner keeps as written (`OnExitRemove`,
    /// `DeferralTime`, `CronMinute`, `JobNotification`, …; see
    /// `submit/keys.rs`).
    pub custom_attrs: BTreeMap<String, String>,
    /// `hold = true`: the job is queued on hold (HTCondor's
    /// `HoldReasonCode` 15, "submitted on hold").
    pub hold: bool,
    /// `kill_sig`: the signal asking the job to leave its host (vacate),
    /// before `SIGKILL`; `None` is `SIGTERM`.
    pub kill_sig: Option<i32>,
    /// `remove_kill_sig`: the signal on `glean rm` (else `kill_sig`).
    pub remove_kill_sig: Option<i32>,
    /// `hold_kill_sig`: the signal on `glean hold` (else `kill_sig`).
    pub hold_kill_sig: Option<i32>,
    /// `job_max_vacate_time`: seconds the job may take to leave after its
    /// signal before `SIGKILL` (the host's own limit still applies).
    pub job_max_vacate_time: Option<u64>,
    /// `want_graceful_removal`: `glean rm` and `glean hold` give the job
    /// its signal and vacate time too, instead of `SIGKILL` at once.
    pub want_graceful_removal: bool,
    /// `job_lease_duration`: seconds a host keeps the job running without
    /// word from its home (else the home's `lease_secs`).
    pub job_lease_duration: Option<u64>,
    /// `accounting_group_user`: always the submitting user (the station
    /// refuses another name).
    pub accounting_group_user: Option<String>,
    /// `request_<name>` for a resource Gleaner has no key of its own for:
    /// name as written → expression; the job needs `TARGET.<name> >=
    /// Request<name>`, as in HTCondor.
    pub custom_requests: BTreeMap<String, String>,
    /// A member of a parallel job (`universe = parallel`), `None` for a
    /// vanilla job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangMember>,
}

/// Linux signal names, as `kill_sig` and HTCondor's `KillSig` spell them.
const SIGNALS: &[(&str, i32)] = &[
    ("SIGHUP", 1),
    ("SIGINT", 2),
    ("SIGQUIT", 3),
    ("SIGILL", 4),
    ("SIGTRAP", 5),
    ("SIGABRT", 6),
    ("SIGBUS", 7),
    ("SIGFPE", 8),
    ("SIGKILL", 9),
    ("SIGUSR1", 10),
    ("SIGSEGV", 11),
    ("SIGUSR2", 12),
    ("SIGPIPE", 13),
    ("SIGALRM", 14),
    ("SIGTERM", 15),
    ("SIGSTKFLT", 16),
    ("SIGCHLD", 17),
    ("SIGCONT", 18),
    ("SIGSTOP", 19),
    ("SIGTSTP", 20),
    ("SIGTTIN", 21),
    ("SIGTTOU", 22),
    ("SIGURG", 23),
    ("SIGXCPU", 24),
    ("SIGXFSZ", 25),
    ("SIGVTALRM", 26),
    ("SIGPROF", 27),
    ("SIGWINCH", 28),
    ("SIGIO", 29),
    ("SIGPWR", 30),
    ("SIGSYS", 31),
];

/// The number of a signal given as `SIGTERM`, `term` or `15`.
pub fn signal_number(s: &str) -> Option<i32> {
    let t = s.trim();
    if let Ok(n) = t.parse::<i32>() {
        return SIGNALS.iter().any(|(_, k)| *k == n).then_some(n);
    }
    let up = t.to_ascii_uppercase();
    let name = if up.starts_with("SIG") {
        up
    } else {
        format!("SIG{up}")
    };
    SIGNALS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// The name of signal `n` (`SIGTERM`), as HTCondor's `KillSig` shows it.
pub fn signal_name(n: i32) -> Option<&'static str> {
    SIGNALS.iter().find(|(_, k)| *k == n).map(|(name, _)| *name)
}

impl JobDescription {
    /// The name the job is accounted under, as HTCondor's
    /// `AccountingGroup`: `group.owner` with an `accounting_group`,
    /// `nice-user.owner` for a `nice_user` job without one, else the
    /// owner. Always the owner's own name after the dot: a station takes
    /// no other `accounting_group_user` (`submit::build`).
    pub fn submitter(&self) -> String {
        gleaner_core::fair_share::submitter_name(
            &self.owner,
            self.accounting_group.as_deref(),
            self.nice_user,
        )
    }

    /// A description with HTCondor's defaults (1 CPU, transfer on exit).
    pub fn new(owner: impl Into<String>, executable: impl Into<String>) -> Self {
        JobDescription {
            owner: owner.into(),
            executable: executable.into(),
            request_cpus: 1,
            transfer_executable: true,
            ..Default::default()
        }
    }
}

/// Resolves a job's paths as `condor_submit` does, against `submit_dir`,
/// the directory of the submit file: a relative `initialdir` from there
/// (none: there), and a relative executable that is transferred from
/// there too, not from `initialdir`; the job's other files stay relative
/// to its initial directory.
pub fn resolve_submit_paths(d: &mut JobDescription, submit_dir: Option<&str>) {
    let join = |base: &str, p: &str| format!("{}/{p}", base.trim_end_matches('/'));
    d.iwd = match (d.iwd.take(), submit_dir) {
        (Some(i), Some(base)) if !i.starts_with('/') => Some(join(base, &i)),
        (Some(i), _) => Some(i),
        (None, base) => base.map(str::to_string),
    };
    if let Some(base) = submit_dir
        && d.transfer_executable
        && !d.executable.is_empty()
        && !d.executable.starts_with('/')
    {
        d.executable = join(base, d.executable.trim_start_matches("./"));
    }
}

pub use crate::args::ArgsError;

/// Splits an `arguments` value into an argument vector, in either of
/// HTCondor's syntaxes (`crate::args`): V2 when the value is in double
/// quotes, V1 otherwise.
pub fn parse_arguments(value: &str) -> Result<Vec<String>, ArgsError> {
    crate::args::parse_arguments_syntax(value).map(|(a, _)| a)
}

/// Formats an argument vector as a V2-quoted value, which
/// [`parse_arguments`] returns unchanged.
pub fn format_arguments(args: &[String]) -> String {
    crate::args::v2_quoted(args)
}

/// Parses an `environment` value into a map, in either of HTCondor's
/// syntaxes (`crate::args`).
pub fn parse_environment(value: &str) -> Result<BTreeMap<String, String>, ArgsError> {
    crate::args::parse_environment_syntax(value).map(|(e, _)| e)
}

/// Where a job is in its life.
///
/// Numeric codes are HTCondor's `JobStatus` values (see [`JobState::code`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for a host.
    Idle,
    /// Executing on a host.
    Running,
    /// Frozen on its host because the owner came back.
    Suspended,
    /// Needs a human: will not run until released.
    Held { reason: String },
    /// Exited; terminal.
    Completed { exit_code: i32 },
    /// Removed by the user or an administrator; terminal.
    Removed,
}

/// The state without its payload: for filters, tables and the transition
/// table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStateKind {
    Idle,
    Running,
    Suspended,
    Held,
    Completed,
    Removed,
}

impl JobStateKind {
    pub const ALL: [JobStateKind; 6] = [
        JobStateKind::Idle,
        JobStateKind::Running,
        JobStateKind::Suspended,
        JobStateKind::Held,
        JobStateKind::Completed,
        JobStateKind::Removed,
    ];

    /// HTCondor `JobStatus`: 1 Idle, 2 Running, 3 Removed, 4 Completed,
    /// 5 Held, 7 Suspended.
    pub const fn code(self) -> u8 {
        match self {
            JobStateKind::Idle => 1,
            JobStateKind::Running => 2,
            JobStateKind::Removed => 3,
            JobStateKind::Completed => 4,
            JobStateKind::Held => 5,
            JobStateKind::Suspended => 7,
        }
    }

    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => JobStateKind::Idle,
            2 => JobStateKind::Running,
            3 => JobStateKind::Removed,
            4 => JobStateKind::Completed,
            5 => JobStateKind::Held,
            7 => JobStateKind::Suspended,
            _ => return None,
        })
    }

    /// The name used in tables and the CLI (`glean q -state held`).
    pub const fn name(self) -> &'static str {
        match self {
            JobStateKind::Idle => "idle",
            JobStateKind::Running => "running",
            JobStateKind::Suspended => "suspended",
            JobStateKind::Held => "held",
            JobStateKind::Completed => "completed",
            JobStateKind::Removed => "removed",
        }
    }

    /// The one-letter code `condor_q` prints (I, R, S, H, C, X).
    pub const fn letter(self) -> char {
        match self {
            JobStateKind::Idle => 'I',
            JobStateKind::Running => 'R',
            JobStateKind::Suspended => 'S',
            JobStateKind::Held => 'H',
            JobStateKind::Completed => 'C',
            JobStateKind::Removed => 'X',
        }
    }

    /// Terminal states leave the active queue and go to history.
    pub const fn is_terminal(self) -> bool {
        matches!(self, JobStateKind::Completed | JobStateKind::Removed)
    }

    /// The transition table. Staying in the same state is never a
    /// transition (a hold of a held job is an error, as with `condor_hold`).
    ///
    /// | from \ to  | Idle | Running | Suspended | Held | Completed | Removed |
    /// |------------|------|---------|-----------|------|-----------|---------|
    /// | Idle       |      | start   |           | hold |           | rm      |
    /// | Running    | vacate |       | suspend   | hold | exit      | rm      |
    /// | Suspended  | vacate | resume |          | hold |           | rm      |
    /// | Held       | release |      |           |      |           | rm      |
    /// | Completed  |      |         |           |      |           |         |
    /// | Removed    |      |         |           |      |           |         |
    pub const fn can_transition_to(self, to: JobStateKind) -> bool {
        use JobStateKind::*;
        matches!(
            (self, to),
            (Idle, Running | Held | Removed)
                | (Running, Idle | Suspended | Held | Completed | Removed)
                | (Suspended, Idle | Running | Held | Removed)
                | (Held, Idle | Removed)
        )
    }

    /// The history event a legal transition records.
    pub const fn transition_event(self, to: JobStateKind) -> Option<JobEventKind> {
        use JobStateKind::*;
        if !self.can_transition_to(to) {
            return None;
        }
        Some(match (self, to) {
            (Idle, Running) => JobEventKind::Started,
            (Suspended, Running) => JobEventKind::Resumed,
            (Held, Idle) => JobEventKind::Released,
            (_, Idle) => JobEventKind::Evicted,
            (_, Suspended) => JobEventKind::Suspended,
            (_, Held) => JobEventKind::Held,
            (_, Completed) => JobEventKind::Completed,
            (_, Removed) => JobEventKind::Removed,
            // Unreachable for legal pairs; kept total without panicking.
            (_, Running) => JobEventKind::Started,
        })
    }
}

impl fmt::Display for JobStateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a state name is not known.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown job state {0:?} (expected idle, running, suspended, held, completed or removed)")]
pub struct ParseStateError(pub String);

impl FromStr for JobStateKind {
    type Err = ParseStateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Ok(code) = t.parse::<u8>() {
            return JobStateKind::from_code(code).ok_or_else(|| ParseStateError(s.into()));
        }
        JobStateKind::ALL
            .into_iter()
            .find(|k| {
                k.name().eq_ignore_ascii_case(t)
                    || (t.len() == 1 && t.eq_ignore_ascii_case(&k.letter().to_string()))
            })
            .ok_or_else(|| ParseStateError(s.into()))
    }
}

/// An illegal state change; the job is left as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("job cannot go from {from} to {to}")]
pub struct IllegalTransition {
    pub from: JobStateKind,
    pub to: JobStateKind,
}

impl JobState {
    pub const fn kind(&self) -> JobStateKind {
        match self {
            JobState::Idle => JobStateKind::Idle,
            JobState::Running => JobStateKind::Running,
            JobState::Suspended => JobStateKind::Suspended,
            JobState::Held { .. } => JobStateKind::Held,
            JobState::Completed { .. } => JobStateKind::Completed,
            JobState::Removed => JobStateKind::Removed,
        }
    }

    /// HTCondor `JobStatus` code.
    pub const fn code(&self) -> u8 {
        self.kind().code()
    }

    pub const fn is_terminal(&self) -> bool {
        self.kind().is_terminal()
    }

    /// Checks a state change against the transition table.
    pub fn check_transition(&self, to: &JobState) -> Result<JobEventKind, IllegalTransition> {
        let (from, to) = (self.kind(), to.kind());
        from.transition_event(to)
            .ok_or(IllegalTransition { from, to })
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobState::Held { reason } => write!(f, "held ({reason})"),
            JobState::Completed { exit_code } => write!(f, "completed (exit {exit_code})"),
            other => f.write_str(other.kind().name()),
        }
    }
}

/// Entries of a job's append-only history (HTCondor's user log events).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobEventKind {
    Submitted,
    /// Accepted by a host station (detail: host name).
    Placed,
    Started,
    Suspended,
    Resumed,
    /// Vacated or evicted from its host; back to idle.
    Evicted,
    /// A checkpoint was written and saved (no state change).
    Checkpointed,
    /// The program could not be started (no state change of its own: the
    /// job goes back to idle, or on hold after too many in a row).
    StartFailed,
    Completed,
    Held,
    Released,
    Removed,
}

impl JobEventKind {
    pub const ALL: [JobEventKind; 12] = [
        JobEventKind::Submitted,
        JobEventKind::Placed,
        JobEventKind::Started,
        JobEventKind::Suspended,
        JobEventKind::Resumed,
        JobEventKind::Evicted,
        JobEventKind::Checkpointed,
        JobEventKind::StartFailed,
        JobEventKind::Completed,
        JobEventKind::Held,
        JobEventKind::Released,
        JobEventKind::Removed,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            JobEventKind::Submitted => "submitted",
            JobEventKind::Placed => "placed",
            JobEventKind::Started => "started",
            JobEventKind::Suspended => "suspended",
            JobEventKind::Resumed => "resumed",
            JobEventKind::Evicted => "evicted",
            JobEventKind::Checkpointed => "checkpointed",
            JobEventKind::StartFailed => "start_failed",
            JobEventKind::Completed => "completed",
            JobEventKind::Held => "held",
            JobEventKind::Released => "released",
            JobEventKind::Removed => "removed",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        JobEventKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl fmt::Display for JobEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
