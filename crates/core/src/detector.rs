//! Owner-activity detection: is this workstation available (AV) for guest
//! work, or not available (NA)?
//!
//! The default rule is Mutka's monitor (Mutka 1988,
//! seeds/000_14c1149197e96532.txt L351–355; Mutka & Livny 1987 P:L144–152;
//! spec `mutka-thesis.md` §2.1, `mutka-livny-1987.md` R-MON-1..4):
//!
//! - a station is NA while the owner's CPU load is above 0.25 %, and until the
//!   load has stayed below it for 5 further minutes (L351);
//! - the monitor samples every 60 s while NA and every 30 s while AV (L353);
//! - any owner activity seen while AV makes the station NA at that sample.
//!
//! Deviation (R-MON-4, documented): Mutka saw keyboard and mouse input only
//! indirectly, through the screen-saver redraw raising the load (L353). Here
//! the caller may also pass the time since the last input, and report an input
//! event between samples ([`Detector::on_activity`]) so a daemon can react in
//! milliseconds. Both only ever make the station *less* available, so the
//! sampled path keeps Mutka's behaviour and the minimum NA length.
//!
//! Pure code: the caller calls [`Detector::sample`] at (or after)
//! [`Detector::next_sample_due`] with measurements it took itself.
//!
//! Units: owner CPU is a **fraction** in `0..=1` of the whole machine
//! (`0.0025` = 0.25 %), with guest and monitor work already excluded
//! (R-MON-2). Load average is the plain Unix number (runnable processes).
//!
//! ```
//! use gleaner_core::detector::{Detector, DetectorConfig, OwnerSample, OwnerState};
//! use gleaner_core::time::Time;
//!
//! let mut d = Detector::new(DetectorConfig::default(), Time::ZERO);
//! while d.state() == OwnerState::Na {
//!     let t = d.next_sample_due(); // every 60 s while NA
//!     d.sample(t, &OwnerSample::cpu(0.0));
//! }
//! assert_eq!(d.state_since(), Time::from_secs(300)); // after the 5-min wait
//! d.on_activity(Time::from_secs(301)); // a keystroke: NA at once
//! assert_eq!(d.state(), OwnerState::Na);
//! ```

use crate::time::{Dur, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Availability of a station for guest work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OwnerState {
    /// Available: the owner has been quiet for the idle wait.
    #[serde(rename = "AV")]
    Av,
    /// Not available: in use by its owner, or recently so.
    #[serde(rename = "NA")]
    Na,
}

impl OwnerState {
    pub fn is_available(self) -> bool {
        self == OwnerState::Av
    }
}

/// Why the state changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransitionCause {
    /// The detector was created; a new monitor starts NA (Mutka 1988 L353:
    /// AV is only reached after a full idle wait).
    Start,
    /// A sample showed owner CPU above the threshold.
    CpuLoad,
    /// A sample showed the load average above its threshold.
    LoadAverage,
    /// A sample showed keyboard/mouse input since the previous sample or
    /// within the configured input-quiet span.
    Input,
    /// The caller reported an input event between samples.
    ActivityEvent,
    /// Monitoring was missing; the gap counts as NA (Mutka 1988 L355, R-MON-3).
    MonitorGap,
    /// The owner stayed quiet for the whole idle wait (NA → AV).
    QuietWait,
}

/// One recorded AV/NA change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// When the new state began.
    pub at: Time,
    pub to: OwnerState,
    pub cause: TransitionCause,
}

/// One measurement of the owner's activity, taken by the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnerSample {
    /// Owner CPU use as a fraction `0..=1` (0.0025 = 0.25 %), guest and
    /// monitor work excluded (R-MON-2). NaN counts as busy.
    pub owner_cpu: f64,
    /// Time since the last keyboard/mouse input; `None` if the host has no
    /// input source (a headless server).
    pub since_input: Option<Dur>,
    /// Load average, if the caller measures it. NaN counts as busy when a
    /// load-average threshold is configured.
    pub load_avg: Option<f64>,
}

impl OwnerSample {
    /// A sample with only a CPU measurement.
    pub fn cpu(owner_cpu: f64) -> Self {
        OwnerSample {
            owner_cpu,
            since_input: None,
            load_avg: None,
        }
    }
}

/// Named detector settings from the papers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectorProfile {
    /// Mutka's monitor: 0.25 % user load, 5 min idle wait, 60 s / 30 s sampling.
    #[default]
    Mutka1988,
    /// Linger-Longer's idle definition: CPU < 10 % and no input for 60 s
    /// (Ryu & Hollingsworth, seeds/002_34f613b0a80e1e58.txt L126).
    LingerLonger,
    /// The Condor-trace definition: busy if there is input or the load
    /// average exceeds 0.3 (seeds/002_34f613b0a80e1e58.txt L160).
    LoadAvg03,
}

impl DetectorProfile {
    pub fn config(self) -> DetectorConfig {
        match self {
            DetectorProfile::Mutka1988 => DetectorConfig::default(),
            // Linger-Longer L126: idle ⇔ CPU < 10 % and no keyboard for 1 min.
            // The CPU test is instantaneous, so there is no extra idle wait;
            // the traces have 2-s resolution (L119), hence the sample period.
            DetectorProfile::LingerLonger => DetectorConfig {
                cpu_threshold: Some(0.10),
                load_avg_threshold: None,
                input_quiet: Dur::from_secs(60),
                idle_wait: Dur::ZERO,
                sample_period_na: Dur::from_secs(2),
                sample_period_av: Dur::from_secs(2),
                max_sample_gap: Some(Dur::from_secs(10)),
                history_capacity: DEFAULT_HISTORY,
            },
            // Linger-Longer L160: busy if keyboard/mouse activity or load
            // average > 0.3. The paper gives no sampling rate or wait for this
            // definition [NOT IN SOURCE]: keep Mutka's periods, no idle wait.
            DetectorProfile::LoadAvg03 => DetectorConfig {
                cpu_threshold: None,
                load_avg_threshold: Some(0.3),
                input_quiet: Dur::ZERO,
                idle_wait: Dur::ZERO,
                ..DetectorConfig::default()
            },
        }
    }
}

/// Default size of the transition history (Mutka 1988 L355: "last 100 state changes").
pub const DEFAULT_HISTORY: usize = 100;

/// Every threshold of the detector. `Default` is [`DetectorProfile::Mutka1988`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DetectorConfig {
    /// Busy if owner CPU (fraction) is above this; `None` ignores CPU.
    /// Mutka 1988: 0.25 % (seeds/000_14c1149197e96532.txt L351).
    pub cpu_threshold: Option<f64>,
    /// Busy if the load average is above this; `None` ignores it.
    pub load_avg_threshold: Option<f64>,
    /// Busy if the last input is more recent than this. Input since the
    /// previous sample always counts as busy, so `0` means "any input since
    /// the last look" (how Mutka's redraw-driven detection behaves, L353).
    pub input_quiet: Dur,
    /// How long the owner must stay quiet, continuously, before NA → AV.
    /// Mutka 1988: 5 min (L351, L353). Also the minimum NA length.
    pub idle_wait: Dur,
    /// Sample period while NA. Mutka 1988: 1 min (L353).
    pub sample_period_na: Dur,
    /// Sample period while AV. Mutka 1988: 30 s (L353).
    pub sample_period_av: Dur,
    /// Two samples further apart than this mean monitoring was missing; the
    /// gap is recorded as NA (L355, R-MON-3). `None` disables the check.
    /// Default 3 min: three missed NA samples [NOT IN SOURCE].
    pub max_sample_gap: Option<Dur>,
    /// How many transitions to keep (L355: 100). At least 1 is kept.
    pub history_capacity: usize,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            // Mutka 1988 (seeds/000_14c1149197e96532.txt L351): 0.25 % user load.
            cpu_threshold: Some(0.0025),
            load_avg_threshold: None,
            input_quiet: Dur::ZERO,
            // Mutka 1988 L353: imposed 5-minute wait.
            idle_wait: Dur::from_mins(5),
            // Mutka 1988 L353: every minute while NA, every 30 s while AV.
            sample_period_na: Dur::from_secs(60),
            sample_period_av: Dur::from_secs(30),
            max_sample_gap: Some(Dur::from_mins(3)),
            history_capacity: DEFAULT_HISTORY,
        }
    }
}

/// A configuration value the detector cannot use as given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DetectorConfigError {
    #[error("{0} must be a finite, non-negative number")]
    BadThreshold(&'static str),
    #[error("{0} must be longer than zero")]
    ZeroPeriod(&'static str),
    #[error("history_capacity must be at least 1")]
    ZeroHistory,
}

impl DetectorConfig {
    /// Checks the configuration. [`Detector::new`] accepts any configuration
    /// (it clamps bad values so it never panics or stalls); daemons should
    /// call this when loading a config file to report mistakes.
    pub fn validate(&self) -> Result<(), DetectorConfigError> {
        for (name, v) in [
            ("cpu_threshold", self.cpu_threshold),
            ("load_avg_threshold", self.load_avg_threshold),
        ] {
            if let Some(v) = v
                && (!v.is_finite() || v < 0.0)
            {
                return Err(DetectorConfigError::BadThreshold(name));
            }
        }
        if self.sample_period_na.is_zero() {
            return Err(DetectorConfigError::ZeroPeriod("sample_period_na"));
        }
        if self.sample_period_av.is_zero() {
            return Err(DetectorConfigError::ZeroPeriod("sample_period_av"));
        }
        if self.history_capacity == 0 {
            return Err(DetectorConfigError::ZeroHistory);
        }
        Ok(())
    }

    /// A copy with values clamped to something usable.
    fn sanitized(mut self) -> Self {
        let min_period = Dur::from_millis(1);
        self.sample_period_na = self.sample_period_na.max(min_period);
        self.sample_period_av = self.sample_period_av.max(min_period);
        self.history_capacity = self.history_capacity.max(1);
        self
    }
}

/// The AV/NA state machine of one station.
#[derive(Clone, Debug)]
pub struct Detector {
    cfg: DetectorConfig,
    state: OwnerState,
    state_since: Time,
    created: Time,
    /// Time of the last sample, if any.
    last_sample: Option<Time>,
    /// Latest time the detector has been told about; time never goes back.
    last_seen: Time,
    /// Start of the current continuous quiet stretch (first quiet sample
    /// after the last sign of activity); `None` while the owner is busy.
    quiet_since: Option<Time>,
    history: VecDeque<Transition>,
    transitions_total: u64,
}

impl Detector {
    /// A detector that starts NA at `now`: a fresh monitor must see a full
    /// idle wait before offering the station (Mutka 1988 L353).
    pub fn new(config: DetectorConfig, now: Time) -> Self {
        let cfg = config.sanitized();
        let mut d = Detector {
            history: VecDeque::with_capacity(cfg.history_capacity.min(1024)),
            cfg,
            state: OwnerState::Na,
            state_since: now,
            created: now,
            last_sample: None,
            last_seen: now,
            quiet_since: None,
            transitions_total: 0,
        };
        d.record(Transition {
            at: now,
            to: OwnerState::Na,
            cause: TransitionCause::Start,
        });
        d
    }

    /// A detector with a named profile.
    pub fn with_profile(profile: DetectorProfile, now: Time) -> Self {
        Detector::new(profile.config(), now)
    }

    pub fn config(&self) -> &DetectorConfig {
        &self.cfg
    }

    pub fn state(&self) -> OwnerState {
        self.state
    }

    pub fn is_available(&self) -> bool {
        self.state.is_available()
    }

    /// When the current state began.
    pub fn state_since(&self) -> Time {
        self.state_since
    }

    /// The current sampling period: 60 s while NA, 30 s while AV by default
    /// (Mutka 1988 L353).
    pub fn sample_period(&self) -> Dur {
        match self.state {
            OwnerState::Na => self.cfg.sample_period_na,
            OwnerState::Av => self.cfg.sample_period_av,
        }
    }

    /// When the caller should take the next sample: one period (of the
    /// current state) after the last sample, or at creation for the first.
    pub fn next_sample_due(&self) -> Time {
        match self.last_sample {
            Some(t) => t + self.sample_period(),
            None => self.created,
        }
    }

    /// The last transitions, oldest first (at most `history_capacity`).
    /// The first entry of a fresh detector is its `Start` (NA) record.
    pub fn history(&self) -> impl ExactSizeIterator<Item = &Transition> + '_ {
        self.history.iter()
    }

    /// Number of transitions ever recorded, including those dropped from
    /// the ring buffer.
    pub fn transitions_total(&self) -> u64 {
        self.transitions_total
    }

    /// Feeds one sample taken at `now`. Returns the transition it caused, if
    /// any. Samples may come early or late; a time earlier than anything seen
    /// before is treated as "now" (time never runs backwards).
    pub fn sample(&mut self, now: Time, s: &OwnerSample) -> Option<Transition> {
        let now = now.max(self.last_seen);
        let mut out = None;

        // R-MON-3 / Mutka 1988 L355: missing monitoring counts as NA, from the
        // last time the monitor was seen alive.
        if let (Some(limit), Some(prev)) = (self.cfg.max_sample_gap, self.last_sample)
            && now - prev > limit
        {
            out = self.enter_gap(self.last_seen.max(prev));
        }

        let window_start = self.last_sample.unwrap_or(self.created);
        let busy = self.busy_cause(s, now - window_start);
        self.last_sample = Some(now);
        self.last_seen = now;

        match busy {
            Some(cause) => {
                self.quiet_since = None;
                // Mutka 1988 L353: activity while AV makes the station NA at
                // this sample.
                if self.state == OwnerState::Av {
                    out = Some(self.transition(now, OwnerState::Na, cause));
                }
            }
            None => {
                let quiet_since = *self.quiet_since.get_or_insert(now);
                // Mutka 1988 L351/L353: AV only after the load stayed below
                // the threshold for the whole wait. The quiet stretch starts
                // at the first quiet sample (conservative: we cannot know when
                // the load dropped between samples).
                if self.state == OwnerState::Na && now - quiet_since >= self.cfg.idle_wait {
                    out = Some(self.transition(now, OwnerState::Av, TransitionCause::QuietWait));
                }
            }
        }
        out
    }

    /// An input event (keyboard, mouse, login) at `now`, between samples.
    /// Makes the station NA immediately and restarts the idle wait. This is
    /// the modern fast path (R-MON-4); it never makes the station available.
    pub fn on_activity(&mut self, now: Time) -> Option<Transition> {
        let now = now.max(self.last_seen);
        self.last_seen = now;
        self.quiet_since = None;
        if self.state == OwnerState::Av {
            Some(self.transition(now, OwnerState::Na, TransitionCause::ActivityEvent))
        } else {
            None
        }
    }

    /// The caller knows monitoring was missing from `start` to `end` (the
    /// daemon was down, the host slept). The gap counts as NA (Mutka 1988
    /// L355; R-MON-3) and the idle wait restarts after it. `start` is
    /// clamped to the latest recorded transition so history stays ordered.
    pub fn report_gap(&mut self, start: Time, end: Time) -> Option<Transition> {
        let latest = self.history.back().map_or(self.created, |t| t.at);
        let start = start.max(latest);
        let end = end.max(start).max(self.last_seen);
        let out = self.enter_gap(start);
        self.last_seen = end;
        // The next regular sample is due one NA period after the gap.
        self.last_sample = Some(end);
        out
    }

    fn enter_gap(&mut self, start: Time) -> Option<Transition> {
        self.quiet_since = None;
        if self.state == OwnerState::Av {
            Some(self.transition(start, OwnerState::Na, TransitionCause::MonitorGap))
        } else {
            None
        }
    }

    /// The first reason this sample shows owner activity, if any.
    fn busy_cause(&self, s: &OwnerSample, since_prev: Dur) -> Option<TransitionCause> {
        if let Some(th) = self.cfg.cpu_threshold
            && (s.owner_cpu.is_nan() || s.owner_cpu > th)
        {
            // "above the threshold" (L351); NaN lands here too (conservative).
            return Some(TransitionCause::CpuLoad);
        }
        if let (Some(th), Some(la)) = (self.cfg.load_avg_threshold, s.load_avg)
            && (la.is_nan() || la > th)
        {
            // Linger-Longer L160: busy if load average > 0.3.
            return Some(TransitionCause::LoadAverage);
        }
        if let Some(idle) = s.since_input
            && (idle < self.cfg.input_quiet || idle <= since_prev)
        {
            return Some(TransitionCause::Input);
        }
        None
    }

    fn transition(&mut self, at: Time, to: OwnerState, cause: TransitionCause) -> Transition {
        self.state = to;
        self.state_since = at;
        let t = Transition { at, to, cause };
        self.record(t);
        t
    }

    fn record(&mut self, t: Transition) {
        while self.history.len() >= self.cfg.history_capacity {
            self.history.pop_front();
        }
        self.history.push_back(t);
        self.transitions_total = self.transitions_total.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_differ_where_the_papers_do() {
        let m = DetectorProfile::Mutka1988.config();
        assert_eq!(m.cpu_threshold, Some(0.0025));
        assert_eq!(m.idle_wait, Dur::from_mins(5));
        let ll = DetectorProfile::LingerLonger.config();
        assert_eq!(ll.cpu_threshold, Some(0.10));
        assert_eq!(ll.input_quiet, Dur::from_secs(60));
        let la = DetectorProfile::LoadAvg03.config();
        assert_eq!(la.load_avg_threshold, Some(0.3));
        for c in [m, ll, la] {
            assert_eq!(c.validate(), Ok(()));
        }
    }

    #[test]
    fn nan_cpu_counts_as_busy() {
        let d = Detector::new(DetectorConfig::default(), Time::ZERO);
        assert_eq!(
            d.busy_cause(&OwnerSample::cpu(f64::NAN), Dur::ZERO),
            Some(TransitionCause::CpuLoad)
        );
    }

    #[test]
    fn zero_periods_are_clamped_not_stalled() {
        let cfg = DetectorConfig {
            sample_period_av: Dur::ZERO,
            sample_period_na: Dur::ZERO,
            history_capacity: 0,
            ..DetectorConfig::default()
        };
        assert!(cfg.validate().is_err());
        let d = Detector::new(cfg, Time::ZERO);
        assert!(d.sample_period() > Dur::ZERO);
        assert_eq!(d.history().len(), 1);
    }
}
