//! The station's owner watch: turns the owner-activity sources
//! ([`crate::owner`]) into the AV/NA state the starter's eviction ladder
//! follows.
//!
//! Two activity kinds run here:
//!
//! - `activity = { source = "linux" }` with an `[owner]` section: the real
//!   sources (evdev, tty atime, logind, a file/FIFO, `/proc/interrupts`,
//!   battery, other users' sessions, owner CPU from `/proc/stat` minus the
//!   guests' cgroups) feed gleaner-core's [`Detector`] on the wall clock.
//!   Samples come at the detector's period (Mutka 1988 L353: 60 s NA, 30 s
//!   AV by default); between samples the thread blocks on the sources'
//!   descriptors (evdev devices, inotify on the activity file, FIFOs) and
//!   re-reads the poll-only ones (tty atime, logind) every `poll_ms`. Fresh
//!   input calls [`Detector::on_activity`] at once, so a keystroke reaches
//!   the ladder (freeze or lower) in milliseconds, not at the next sample.
//! - `activity = { source = "file", path = ... }`: a state file whose first
//!   word is `active` or `idle` (tests, `glean up --demo`). Watched with
//!   inotify on its directory, with a 250 ms poll as a safety net.
//!
//! Both publish on the station's `watch` channel, which the starter's
//! supervisors await: a change there runs the ladder immediately.
//!
//! ```toml
//! activity = { source = "linux" }
//! [owner]
//! sources = ["evdev", "tty", "logind", "power", "load"]
//! profile = "mutka1988"          # or linger_longer, load_avg03
//! idle_wait_secs = 300           # optional overrides of the profile
//! poll_ms = 1000
//! ```

mod state_file;

pub use state_file::{read_state_file, spawn_state_file};

use crate::config::{ActivitySource, StationConfig};
use crate::isolation::CgroupManager;
use crate::owner::{
    CpuMeter, EvdevSource, FileSource, InterruptsSource, LogindSource, MinIdle, NoGuests,
    OwnerMonitor, OwnerPaths, SessionCheck, TtySource, default_tty_patterns, idle_since,
};
use gleaner_core::detector::{Detector, DetectorConfig, DetectorProfile, OwnerState};
use gleaner_core::time::{Clock, Dur, Time};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One owner-activity input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// Keyboard/mouse events from `<input_dir>/event*` (hot-plug aware).
    Evdev,
    /// tty/pty access times (ssh and console users).
    Tty,
    /// logind's `IdleHint`/`IdleSinceHint`, when a system bus exists.
    Logind,
    /// `activity_file`: a file or FIFO of `active` / epoch-seconds lines.
    File,
    /// Keyboard/mouse interrupt counts in `/proc/interrupts` (PS/2).
    Interrupts,
    /// On battery → treated as owned.
    Power,
    /// Another user's login session → treated as owned.
    Sessions,
    /// Owner CPU (from `/proc/stat` minus the guests) and load average.
    /// Without it the detector sees an owner CPU of zero.
    Load,
}

/// `[owner]` in `station.toml`: used when `activity.source = "linux"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OwnerWatchConfig {
    /// Inputs combined: input idle time is the minimum over the idle
    /// sources (HTCondor's `KeyboardIdle`; anchors §1.2).
    pub sources: Vec<SourceKind>,
    /// Detector settings from the papers (Mutka 1988 by default).
    pub profile: DetectorProfile,
    /// Overrides of the profile (seconds / fraction).
    pub idle_wait_secs: Option<f64>,
    pub input_quiet_secs: Option<f64>,
    pub cpu_threshold: Option<f64>,
    pub load_avg_threshold: Option<f64>,
    pub sample_period_na_secs: Option<f64>,
    pub sample_period_av_secs: Option<f64>,
    /// How often sources without a descriptor (tty atime, logind) are
    /// re-read between samples, milliseconds.
    pub poll_ms: u64,
    /// Directory of the evdev nodes.
    pub input_dir: PathBuf,
    /// tty patterns (`*`/`?` in the last component); HTCondor-like default.
    pub tty_patterns: Option<Vec<String>>,
    /// File or FIFO for the `file` source.
    pub activity_file: Option<PathBuf>,
    /// Uids whose sessions are the owner's own (for `sessions`); root and
    /// the daemon's uid are always ignored.
    pub owner_uids: Vec<u32>,
    /// procfs and sysfs roots (tests point them at fakes).
    pub procfs: PathBuf,
    pub sysfs: PathBuf,
}

impl Default for OwnerWatchConfig {
    fn default() -> Self {
        OwnerWatchConfig {
            sources: vec![
                SourceKind::Evdev,
                SourceKind::Tty,
                SourceKind::Logind,
                SourceKind::Power,
                SourceKind::Load,
            ],
            profile: DetectorProfile::default(),
            idle_wait_secs: None,
            input_quiet_secs: None,
            cpu_threshold: None,
            load_avg_threshold: None,
            sample_period_na_secs: None,
            sample_period_av_secs: None,
            poll_ms: 1000,
            input_dir: PathBuf::from("/dev/input"),
            tty_patterns: None,
            activity_file: None,
            owner_uids: Vec::new(),
            procfs: PathBuf::from("/proc"),
            sysfs: PathBuf::from("/sys"),
        }
    }
}

impl OwnerWatchConfig {
    /// The detector settings: the profile with the overrides applied.
    pub fn detector_config(&self) -> DetectorConfig {
        let mut c = self.profile.config();
        let d = Dur::from_secs_f64;
        if let Some(s) = self.idle_wait_secs {
            c.idle_wait = d(s);
        }
        if let Some(s) = self.input_quiet_secs {
            c.input_quiet = d(s);
        }
        if let Some(v) = self.cpu_threshold {
            c.cpu_threshold = Some(v);
        }
        if let Some(v) = self.load_avg_threshold {
            c.load_avg_threshold = Some(v);
        }
        if let Some(s) = self.sample_period_na_secs {
            c.sample_period_na = d(s);
        }
        if let Some(s) = self.sample_period_av_secs {
            c.sample_period_av = d(s);
        }
        c
    }

    /// Checks what serde cannot; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        for (k, v) in [
            ("owner.idle_wait_secs", self.idle_wait_secs),
            ("owner.input_quiet_secs", self.input_quiet_secs),
            ("owner.sample_period_na_secs", self.sample_period_na_secs),
            ("owner.sample_period_av_secs", self.sample_period_av_secs),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(format!("{k}: must be a non-negative number of seconds"));
            }
        }
        self.detector_config()
            .validate()
            .map_err(|e| format!("owner: {e}"))?;
        if self.poll_ms == 0 {
            return Err("owner.poll_ms: must be at least 1".into());
        }
        if self.sources.contains(&SourceKind::File) && self.activity_file.is_none() {
            return Err("owner.activity_file: required by the \"file\" source".into());
        }
        Ok(())
    }

    fn has(&self, k: SourceKind) -> bool {
        self.sources.contains(&k)
    }

    /// Builds the monitor. `guests` is the starter's cgroup manager: its
    /// usage is subtracted from the owner's CPU (Linger-Longer §6.4).
    pub fn build_monitor(&self, guests: Option<CgroupManager>) -> OwnerMonitor {
        let mut idle = MinIdle::new();
        for k in &self.sources {
            match k {
                SourceKind::Evdev => idle.push(Box::new(EvdevSource::with_dir(&self.input_dir))),
                SourceKind::Tty => idle.push(Box::new(TtySource::new(
                    self.tty_patterns
                        .clone()
                        .unwrap_or_else(default_tty_patterns),
                ))),
                // Each logind query runs busctl twice: at most every 10 s
                // (or the poll period if longer), keeping the watch cheap.
                SourceKind::Logind => {
                    idle.push(Box::new(LogindSource::system().with_min_interval(
                        Duration::from_millis(self.poll_ms).max(Duration::from_secs(10)),
                    )))
                }
                SourceKind::File => {
                    if let Some(p) = &self.activity_file {
                        idle.push(Box::new(FileSource::new(p)));
                    }
                }
                SourceKind::Interrupts => {
                    idle.push(Box::new(InterruptsSource::new(&self.procfs)));
                }
                SourceKind::Power | SourceKind::Sessions | SourceKind::Load => {}
            }
        }
        let usage: Box<dyn crate::owner::GuestCpuUsage> = match guests {
            Some(m) => Box::new(m),
            None => Box::new(NoGuests),
        };
        let cpu = CpuMeter::new(&self.procfs, usage);
        let paths = OwnerPaths {
            procfs: self.procfs.clone(),
            sysfs: self.sysfs.clone(),
        };
        let mut m = OwnerMonitor::new(idle, cpu, paths);
        if !self.has(SourceKind::Power) {
            m = m.without_power_check();
        }
        if !self.has(SourceKind::Load) {
            m = m.without_load();
        }
        if self.has(SourceKind::Sessions) {
            let me = nix::unistd::getuid().as_raw();
            let ignore = self.owner_uids.iter().copied().chain([0, me]);
            m = m.with_sessions(SessionCheck::new(&self.procfs, ignore));
        }
        m
    }
}

/// The wall clock as the core's [`Clock`] (UNIX epoch, microseconds).
#[derive(Clone, Copy, Debug, Default)]
pub struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> Time {
        to_time(SystemTime::now())
    }
}

fn to_time(t: SystemTime) -> Time {
    let us = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    Time::from_micros(us)
}

pub(crate) fn publish(tx: &watch::Sender<OwnerState>, s: OwnerState) {
    tx.send_if_modified(|cur| {
        let changed = *cur != s;
        *cur = s;
        changed
    });
}

/// Tolerance for activity timestamps that predate the last sample a little.
const FRESH_SLACK: Dur = Dur::from_secs(1);

/// Shortest wait between looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(500);

/// The monitor loop: detector samples at its period, activity events in
/// between. Runs on its own thread (the sources block in `poll(2)`).
pub struct WatchLoop<C: Clock> {
    pub monitor: OwnerMonitor,
    pub detector: Detector,
    pub clock: C,
    pub poll: Duration,
    last_sample: Option<Time>,
}

impl<C: Clock> WatchLoop<C> {
    pub fn new(monitor: OwnerMonitor, config: DetectorConfig, clock: C, poll: Duration) -> Self {
        let detector = Detector::new(config, clock.now());
        WatchLoop {
            monitor,
            detector,
            clock,
            poll,
            last_sample: None,
        }
    }

    /// Takes a sample if one is due; returns whether it did.
    pub fn sample_if_due(&mut self) -> bool {
        let now = self.clock.now();
        if now < self.detector.next_sample_due() {
            return false;
        }
        let reading = self.monitor.read(SystemTime::now());
        if let Some(t) = self.detector.sample(now, &reading.to_sample()) {
            tracing::info!(to = ?t.to, cause = ?t.cause, owner_cpu = ?reading.owner_cpu,
                since_input = ?reading.since_input, "owner state changed");
        }
        self.last_sample = Some(now);
        true
    }

    /// Blocks up to `max` (and never past the next sample) for activity;
    /// fresh activity makes the detector NA at once.
    pub fn wait_for_activity(&mut self, max: Duration) {
        let now = self.clock.now();
        let due = self.detector.next_sample_due();
        let wait = Duration::from_micros(due.since(now).as_micros()).min(max);
        if wait.is_zero() {
            return;
        }
        match self.monitor.idle.wait_activity(wait, self.poll) {
            Ok(Some(at)) => {
                let now_sys = SystemTime::now();
                let now = self.clock.now();
                // Fresh = what the next sample would count as input
                // (detector: idle < input_quiet or input since the last
                // sample); an old timestamp newly reported is not. File
                // times come from the kernel's coarse clock, which can lag
                // the sample's precise time by a tick: an event just after
                // a sample may carry a time just before it, hence the slack.
                let window = self.last_sample.map_or(Dur::ZERO, |l| now.since(l)) + FRESH_SLACK;
                let quiet = self.detector.config().input_quiet.max(window);
                let age = idle_since(now_sys, at);
                let age = Dur::from_micros(u64::try_from(age.as_micros()).unwrap_or(u64::MAX));
                if age <= quiet
                    && let Some(t) = self.detector.on_activity(now)
                {
                    tracing::info!(to = ?t.to, cause = ?t.cause, "owner activity event");
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "waiting on activity sources failed");
                std::thread::sleep(self.poll.min(max));
            }
        }
    }

    pub fn state(&self) -> OwnerState {
        self.detector.state()
    }
}

/// Starts the real-source watch on its own thread. The returned task ends
/// when `shutdown` fires; the thread stops after its current wait (at most
/// `poll_ms`, clamped to 0.5–5 s).
pub fn spawn_linux(
    config: &OwnerWatchConfig,
    guests: Option<CgroupManager>,
    tx: watch::Sender<OwnerState>,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let monitor = config.build_monitor(guests);
    let mut lp = WatchLoop::new(
        monitor,
        config.detector_config(),
        WallClock,
        Duration::from_millis(config.poll_ms.max(1)),
    );
    tracing::info!(sources = ?config.sources, profile = ?config.profile, "owner watch started");
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("owner-watch".into())
        .spawn(move || {
            while !stop2.load(Ordering::Relaxed) && !tx.is_closed() {
                lp.sample_if_due();
                publish(&tx, lp.state());
                // Sources are re-read once per wait; the stop flag is
                // looked at between waits.
                let max = lp.poll.clamp(STOP_CHECK, Duration::from_secs(5));
                lp.wait_for_activity(max);
                publish(&tx, lp.state());
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the owner watch thread; the owner counts as present");
    }
    tokio::spawn(async move {
        let _ = shutdown.wait_for(|s| *s).await;
        stop.store(true, Ordering::Relaxed);
    })
}

/// Starts the configured activity source feeding `tx`; `None` for an
/// owner who is never active.
pub fn spawn_activity(
    config: &StationConfig,
    cgroups: Option<CgroupManager>,
    tx: watch::Sender<OwnerState>,
    shutdown: watch::Receiver<bool>,
) -> Option<JoinHandle<()>> {
    match &config.activity {
        ActivitySource::AlwaysIdle => None,
        ActivitySource::File { path } => Some(spawn_state_file(path.clone(), tx, shutdown)),
        ActivitySource::Linux => Some(spawn_linux(&config.owner, cgroups, tx, shutdown)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_core::detector::TransitionCause;
    use std::cell::Cell;
    use std::path::Path;

    /// A clock that reads the wall clock plus an offset we can move.
    struct Shifted(Cell<u64>);
    impl Clock for Shifted {
        fn now(&self) -> Time {
            to_time(SystemTime::now()) + Dur::from_micros(self.0.get())
        }
    }

    #[test]
    fn config_overrides_and_validation() {
        let c: OwnerWatchConfig = toml::from_str(
            "sources = [\"file\", \"load\"]\nactivity_file = \"/tmp/x\"\nprofile = \"linger_longer\"\nidle_wait_secs = 7",
        )
        .unwrap();
        let d = c.detector_config();
        assert_eq!(d.idle_wait, Dur::from_secs(7));
        assert_eq!(d.cpu_threshold, Some(0.10));
        c.validate().unwrap();
        assert!(toml::from_str::<OwnerWatchConfig>("sources = [\"keyboard\"]").is_err());
        let bad = OwnerWatchConfig {
            sources: vec![SourceKind::File],
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("activity_file"));
        let bad = OwnerWatchConfig {
            sample_period_av_secs: Some(0.0),
            ..Default::default()
        };
        assert!(bad.validate().is_err());
    }

    /// Only the FILE source at `f`, no idle wait, a sample an hour apart
    /// when available: activity events, not samples, move the detector.
    fn file_config(f: &Path) -> OwnerWatchConfig {
        OwnerWatchConfig {
            sources: vec![SourceKind::File],
            activity_file: Some(f.to_path_buf()),
            idle_wait_secs: Some(0.0),
            sample_period_av_secs: Some(3600.0),
            ..Default::default()
        }
    }

    fn file_loop(cfg: &OwnerWatchConfig, poll: Duration) -> WatchLoop<Shifted> {
        WatchLoop::new(
            cfg.build_monitor(None),
            cfg.detector_config(),
            Shifted(Cell::new(0)),
            poll,
        )
    }

    #[test]
    fn file_write_wakes_the_loop_before_the_sample() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("activity");
        let cfg = OwnerWatchConfig {
            sample_period_na_secs: Some(3600.0),
            ..file_config(&f)
        };
        let mut lp = file_loop(&cfg, Duration::from_secs(60));
        // First sample: no input, no CPU source → quiet → AV at once.
        assert!(lp.sample_if_due());
        assert_eq!(lp.state(), OwnerState::Av);
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::write(&f, "active\n").unwrap();
        });
        let t0 = std::time::Instant::now();
        lp.wait_for_activity(Duration::from_secs(20));
        writer.join().unwrap();
        assert_eq!(lp.state(), OwnerState::Na);
        // Woken by inotify, long before the 60 s poll or the 1 h sample.
        assert!(t0.elapsed() < Duration::from_secs(15));
        let last = lp.detector.history().last().unwrap();
        assert_eq!(last.cause, TransitionCause::ActivityEvent);
    }

    #[test]
    fn old_timestamps_are_not_activity_events() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("activity");
        let mut lp = file_loop(&file_config(&f), Duration::from_millis(50));
        lp.sample_if_due();
        assert_eq!(lp.state(), OwnerState::Av);
        // An hour-old report: new information, but not presence now.
        let old = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            - 3600;
        std::fs::write(&f, format!("{old}\n")).unwrap();
        lp.wait_for_activity(Duration::from_millis(300));
        assert_eq!(lp.state(), OwnerState::Av);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn spawned_watch_publishes_av_then_na_on_activity() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("activity");
        let cfg = OwnerWatchConfig {
            sources: vec![SourceKind::File],
            activity_file: Some(f.clone()),
            idle_wait_secs: Some(0.3),
            sample_period_na_secs: Some(0.2),
            sample_period_av_secs: Some(0.2),
            ..Default::default()
        };
        let (tx, mut rx) = watch::channel(OwnerState::Na);
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = spawn_linux(&cfg, None, tx, stop_rx);
        let wait = |want: OwnerState| {
            let mut rx = rx.clone();
            async move {
                tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|s| *s == want))
                    .await
                    .unwrap_or_else(|_| panic!("{want:?} not reached"))
                    .unwrap();
            }
        };
        wait(OwnerState::Av).await;
        for i in 0..3 {
            std::fs::write(&f, format!("active\n# {i}\n")).unwrap();
            let t0 = std::time::Instant::now();
            wait(OwnerState::Na).await;
            assert!(t0.elapsed() < Duration::from_secs(5));
            wait(OwnerState::Av).await;
        }
        let _ = rx.borrow_and_update();
        stop_tx.send(true).unwrap();
        task.await.unwrap();
    }

    #[test]
    fn station_toml_with_owner_and_isolation() {
        use crate::config::{ActivitySource, StationConfig};
        use crate::isolation::CgroupMode;
        let c: StationConfig = toml::from_str(
            "activity = { source = \"linux\" }\n\
             [owner]\nsources = [\"tty\", \"file\", \"load\"]\nactivity_file = \"/run/owner\"\npoll_ms = 250\n\
             [isolation]\ncgroups = \"hybrid\"\ncgroup_root = \"/tmp/cg\"\nparent_idle = false\n",
        )
        .unwrap();
        assert_eq!(c.activity, ActivitySource::Linux);
        assert_eq!(c.owner.poll_ms, 250);
        assert_eq!(c.isolation.cgroups, CgroupMode::Hybrid);
        c.validate().unwrap();
        // Mistakes name their key.
        let bad: StationConfig = toml::from_str("[owner]\nsources = [\"file\"]\n").unwrap();
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("activity_file")
        );
        let bad: StationConfig = toml::from_str("[isolation]\nparent = \"a/b\"\n").unwrap();
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("isolation.parent")
        );
        assert!(toml::from_str::<StationConfig>("[isolation]\ncgroup = \"auto\"\n").is_err());
    }
}
