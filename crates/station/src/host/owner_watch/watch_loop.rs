//! The real-source watch: detector samples at the detector's period,
//! activity events in between, on a thread of its own.

use super::config::OwnerWatchConfig;
use super::publish;
use crate::isolation::CgroupManager;
use crate::owner::{OwnerMonitor, idle_since};
use gleaner_core::detector::{Detector, DetectorConfig, OwnerState};
use gleaner_core::time::{Clock, Dur, Time};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::task::JoinHandle;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::owner_watch::SourceKind;
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
}
