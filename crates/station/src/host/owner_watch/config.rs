//! `[owner]` of `station.toml`: which activity sources feed the detector,
//! and the detector profile with its overrides.

use crate::isolation::CgroupManager;
use crate::owner::{
    CpuMeter, EvdevSource, FileSource, InterruptsSource, LogindSource, MinIdle, NoGuests,
    OwnerMonitor, OwnerPaths, SessionCheck, TtySource, default_tty_patterns,
};
use gleaner_core::detector::{DetectorConfig, DetectorProfile};
use gleaner_core::time::Dur;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

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
    /// The machine's owner: the account allowed on the owner's page and
    /// `glean owner` (root always is; a station run by an ordinary user
    /// takes that user as the owner).
    pub account: Option<String>,
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
            account: None,
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

#[cfg(test)]
mod tests {
    use super::*;

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
