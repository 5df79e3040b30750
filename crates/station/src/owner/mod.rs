//! Owner-activity sources: how the station learns that the workstation's
//! owner is using it.
//!
//! Two kinds of signal feed the core detector ([`gleaner_core::detector`]):
//!
//! - **input idle time**: seconds since the last keyboard/mouse/terminal
//!   activity, the `min()` over every configured [`IdleSource`], as HTCondor's
//!   `KeyboardIdle` does (`condor_sysapi/idle_time.cpp`; spec `anchors.md`
//!   §1.2, `platform.md` §4). Sources: [`EvdevSource`] (`/dev/input/event*`),
//!   [`TtySource`] (tty/pty atime), [`LogindSource`] (logind `IdleSinceHint`),
//!   [`InterruptsSource`] (`/proc/interrupts`, Condor's PS/2 fallback),
//!   [`FileSource`] (file/FIFO for tests and integrations).
//! - **owner CPU load**: `/proc/stat` deltas minus what the guests used
//!   ([`CpuMeter`]), so a busy guest never makes the station look owned
//!   (Mutka 1988 L351: the monitor counts the owner's load only;
//!   Linger-Longer §6.4: utilisation must be measured on local processes only).
//!
//! [`OwnerMonitor`] ties them together and produces an [`OwnerReading`] that
//! maps onto the core's [`OwnerSample`]. Every path is injectable (device
//! directory, procfs root, sysfs root) so tests run against temp dirs.
//!
//! Reacting in milliseconds: sources expose file descriptors that become
//! readable on activity ([`IdleSource::wake_fds`]); [`MinIdle::wait_activity`]
//! blocks on them so a daemon can call `Detector::on_activity` at once instead
//! of waiting for the next sample.

mod evdev;
mod file;
mod interrupts;
mod load;
mod logind;
mod power;
mod sessions;
mod tty;

pub use evdev::{EvdevSource, INPUT_EVENT_SIZE, InputEvent};
pub use file::FileSource;
pub use interrupts::InterruptsSource;
pub use load::{
    CpuMeter, CpuTimes, GuestCpuUsage, LoadAvg, NoGuests, read_loadavg, read_proc_stat,
};
pub use logind::{BusctlLogind, LogindIdle, LogindQuery, LogindSource};
pub use power::{PowerState, read_power_state};
pub use sessions::SessionCheck;
pub use tty::{TtySource, default_tty_patterns};

use gleaner_core::detector::OwnerSample;
use gleaner_core::time::Dur;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Errors of the owner sources. Each names the path (or program) that failed.
#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot parse: {what}")]
    Parse { path: PathBuf, what: String },
    #[error("{program}: {what}")]
    Command { program: PathBuf, what: String },
    #[error("poll on activity sources: {0}")]
    Poll(#[source] nix::Error),
}

impl OwnerError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        OwnerError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
    pub(crate) fn parse(path: &Path, what: impl Into<String>) -> Self {
        OwnerError::Parse {
            path: path.to_path_buf(),
            what: what.into(),
        }
    }
}

/// One source of owner-activity information.
///
/// `last_activity` is called at every sample; it also drains whatever the
/// source buffered (events, FIFO lines), so it must be called after
/// [`MinIdle::wait_activity`] reports readiness.
pub trait IdleSource: Send {
    /// Short name for logs ("evdev", "tty", ...).
    fn name(&self) -> &str;

    /// Wall-clock time of the most recent activity this source knows of, or
    /// `None` when it has no information (no devices, no bus, empty file).
    /// A time in the future is clamped to `now` by the caller.
    fn last_activity(&mut self, now: SystemTime) -> Result<Option<SystemTime>, OwnerError>;

    /// Descriptors that become readable when there may be new activity.
    /// Sources that can only be polled (atime, logind) return none.
    fn wake_fds(&self) -> Vec<BorrowedFd<'_>> {
        Vec::new()
    }
}

/// Idle time as seen at `now` given a last-activity time (clamped at zero).
pub fn idle_since(now: SystemTime, last: SystemTime) -> Duration {
    now.duration_since(last).unwrap_or(Duration::ZERO)
}

/// The combinator: minimum idle time over the configured sources (HTCondor
/// `KeyboardIdle` = min over ttys, console devices and kbdd; `idle_time.cpp`).
///
/// A failing source is logged and skipped for that sample rather than failing
/// the whole reading: one unreadable device must not blind the monitor. The
/// per-source results of the last call are kept for diagnostics.
#[derive(Default)]
pub struct MinIdle {
    sources: Vec<Box<dyn IdleSource>>,
    last_seen: Option<SystemTime>,
    report: Vec<SourceReport>,
}

/// What one source said at the last [`MinIdle::last_activity`] call.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceReport {
    pub name: String,
    /// `Ok(None)`: no information; `Err`: the error text.
    pub result: Result<Option<SystemTime>, String>,
}

impl MinIdle {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, source: impl IdleSource + 'static) -> Self {
        self.push(Box::new(source));
        self
    }

    pub fn push(&mut self, source: Box<dyn IdleSource>) {
        self.sources.push(source);
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Per-source results of the last reading.
    pub fn report(&self) -> &[SourceReport] {
        &self.report
    }

    /// Latest activity over all sources (the max of the times, i.e. the
    /// minimum idle time), or `None` if no source knows anything.
    pub fn last_activity(&mut self, now: SystemTime) -> Option<SystemTime> {
        let mut best: Option<SystemTime> = None;
        self.report.clear();
        for s in &mut self.sources {
            let r = s.last_activity(now);
            match &r {
                Ok(Some(t)) => {
                    // A clock step or a bogus timestamp must not produce a
                    // negative idle time; activity "in the future" is now.
                    let t = (*t).min(now);
                    best = Some(best.map_or(t, |b| b.max(t)));
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(source = s.name(), error = %e, "idle source failed"),
            }
            self.report.push(SourceReport {
                name: s.name().to_string(),
                result: r.map_err(|e| e.to_string()),
            });
        }
        if let Some(b) = best {
            self.last_seen = Some(self.last_seen.map_or(b, |l| l.max(b)));
        }
        best
    }

    /// Seconds since the last activity over all sources; `None` if no source
    /// has information (a headless machine).
    pub fn idle_for(&mut self, now: SystemTime) -> Option<Duration> {
        self.last_activity(now).map(|t| idle_since(now, t))
    }

    /// Block up to `timeout` until some source reports activity newer than
    /// anything seen before. Returns the activity time, or `None` on timeout.
    /// "Seen before" means by an earlier reading: call
    /// [`MinIdle::last_activity`] once first, or the first information any
    /// source has counts as new.
    ///
    /// Sources without descriptors (tty atime, logind) are re-checked every
    /// `poll_interval` while waiting, so this also serves them, just slower.
    pub fn wait_activity(
        &mut self,
        timeout: Duration,
        poll_interval: Duration,
    ) -> Result<Option<SystemTime>, OwnerError> {
        let deadline = Instant::now() + timeout;
        let baseline = self.last_seen;
        loop {
            let now_inst = Instant::now();
            if now_inst >= deadline {
                return Ok(None);
            }
            let wait = (deadline - now_inst).min(poll_interval);
            {
                let mut fds: Vec<nix::poll::PollFd<'_>> = self
                    .sources
                    .iter()
                    .flat_map(|s| s.wake_fds())
                    .map(|fd| nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLIN))
                    .collect();
                let ms = u16::try_from(wait.as_millis().max(1)).unwrap_or(u16::MAX);
                match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(OwnerError::Poll(e)),
                }
            }
            let now = SystemTime::now();
            if let Some(t) = self.last_activity(now)
                && baseline.is_none_or(|b| t > b)
            {
                return Ok(Some(t));
            }
        }
    }
}

/// Reading of everything the owner monitor measures, in the station's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnerReading {
    /// Owner CPU as a fraction of the whole machine, guests excluded; `None`
    /// on the first reading (a delta needs two).
    pub owner_cpu: Option<f64>,
    /// Guest CPU over the same interval, fraction of the whole machine.
    pub guest_cpu: Option<f64>,
    /// Time since the last input, `None` without any input source.
    pub since_input: Option<Duration>,
    /// Raw 1-minute load average from `/proc/loadavg`.
    pub load_avg_raw: Option<f64>,
    /// Load average with the guests' share taken out (HTCondor's
    /// `NonCondorLoadAvg = LoadAvg - CondorLoadAvg`, anchors §1.2).
    pub owner_load_avg: Option<f64>,
    /// Running on battery (optional extra: treated as owned).
    pub on_battery: bool,
    /// Login uids of other users' sessions (optional extra, see
    /// [`SessionCheck`]; treated as owned when non-empty).
    pub other_sessions: Vec<u32>,
}

impl OwnerReading {
    /// Map to the core detector's input. On battery, or with another
    /// user's session open, the station reads as owner-present (input
    /// "now"): guests should not drain a laptop or slow someone's login.
    /// A missing CPU delta (first reading) reads as busy, the conservative
    /// choice: NaN counts as busy in the detector.
    pub fn to_sample(&self) -> OwnerSample {
        let since_input = if self.on_battery || !self.other_sessions.is_empty() {
            Some(Dur::ZERO)
        } else {
            self.since_input
                .map(|d| Dur::from_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX)))
        };
        OwnerSample {
            owner_cpu: self.owner_cpu.unwrap_or(f64::NAN),
            since_input,
            load_avg: self.owner_load_avg,
        }
    }
}

/// Paths of the owner monitor; defaults are the real ones.
#[derive(Clone, Debug)]
pub struct OwnerPaths {
    pub procfs: PathBuf,
    pub sysfs: PathBuf,
}

impl Default for OwnerPaths {
    fn default() -> Self {
        OwnerPaths {
            procfs: PathBuf::from("/proc"),
            sysfs: PathBuf::from("/sys"),
        }
    }
}

/// Everything the station measures about its owner, one call per sample.
pub struct OwnerMonitor {
    pub idle: MinIdle,
    pub cpu: CpuMeter,
    paths: OwnerPaths,
    check_power: bool,
    measure_load: bool,
    sessions: Option<SessionCheck>,
}

impl OwnerMonitor {
    pub fn new(idle: MinIdle, cpu: CpuMeter, paths: OwnerPaths) -> Self {
        OwnerMonitor {
            idle,
            cpu,
            paths,
            check_power: true,
            measure_load: true,
            sessions: None,
        }
    }

    /// Treat other users' login sessions as owner presence.
    pub fn with_sessions(mut self, check: SessionCheck) -> Self {
        self.sessions = Some(check);
        self
    }

    /// Disable the on-battery check (desktops with odd power-supply drivers).
    pub fn without_power_check(mut self) -> Self {
        self.check_power = false;
        self
    }

    /// Do not measure CPU or load: the owner's CPU then reads as zero, so
    /// only input (and the extras) decide (a station configured without
    /// the `load` input).
    pub fn without_load(mut self) -> Self {
        self.measure_load = false;
        self
    }

    /// Take one reading. Failures of single inputs are logged and leave the
    /// corresponding field `None`; the detector treats missing CPU as busy.
    pub fn read(&mut self, now: SystemTime) -> OwnerReading {
        let since_input = self.idle.idle_for(now);
        if !self.measure_load {
            return OwnerReading {
                owner_cpu: Some(0.0),
                guest_cpu: None,
                since_input,
                load_avg_raw: None,
                owner_load_avg: None,
                on_battery: self.check_power && self.on_battery(),
                other_sessions: self.other_sessions(),
            };
        }
        let cpu = match self.cpu.sample() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "owner CPU measurement failed");
                None
            }
        };
        let load = match read_loadavg(&self.paths.procfs) {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::warn!(error = %e, "load average unreadable");
                None
            }
        };
        let on_battery = self.check_power && self.on_battery();
        let other_sessions = self.other_sessions();
        let owner_load_avg = load.map(|l| (l.one - self.cpu.guest_load()).max(0.0));
        OwnerReading {
            owner_cpu: cpu.map(|c| c.owner),
            guest_cpu: cpu.map(|c| c.guest),
            since_input,
            load_avg_raw: load.map(|l| l.one),
            owner_load_avg,
            on_battery,
            other_sessions,
        }
    }

    fn on_battery(&self) -> bool {
        match read_power_state(&self.paths.sysfs) {
            Ok(p) => p.on_battery,
            Err(e) => {
                tracing::debug!(error = %e, "power state unreadable");
                false
            }
        }
    }

    fn other_sessions(&self) -> Vec<u32> {
        match &self.sessions {
            Some(c) => c.sessions().unwrap_or_else(|e| {
                tracing::warn!(error = %e, "session scan failed");
                Vec::new()
            }),
            None => Vec::new(),
        }
    }
}
