//! The lending gate: the owner's state as the starter and the coordinator
//! see it. It forwards the detector's AV/NA, and forces NA while the owner
//! stopped lending (`host::owner_controls`) or the weekly schedule's
//! windows (the owner's, else `[policy] windows`) are closed, so that a
//! stop or a closing window moves guests out of the way like a returning
//! owner, by the station's eviction policy. The rule is the core's
//! ([`gleaner_core::owner_rules::lending`]). It also records each change
//! in the owner's history (`host::owner_log`) and counts it for
//! `/metrics`.

use super::owner_controls::OwnerControls;
use super::owner_log::OwnerLog;
use gleaner_core::detector::OwnerState;
use gleaner_core::owner_rules::{NotLending, lending};
use gleaner_proto::matchmaking::PolicyAd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the gate publishes besides the state: why the station does not
/// lend, and how often its state changed.
#[derive(Debug, Default)]
pub struct GateNews {
    pub to_av: AtomicU64,
    pub to_na: AtomicU64,
    /// Why not lending now (`None`: lending).
    pub why: std::sync::Mutex<Option<NotLending>>,
}

impl GateNews {
    pub fn why(&self) -> Option<NotLending> {
        self.why.lock().map(|w| *w).unwrap_or(None)
    }
}

/// The cause's name in the owner's history.
pub fn cause_name(n: NotLending) -> &'static str {
    match n {
        NotLending::Stopped => "stopped",
        NotLending::OutsideSchedule => "schedule",
        NotLending::OwnerActive => "owner",
    }
}

/// The gate's inputs.
pub struct Gate {
    /// `[policy] windows`, used while the owner set no schedule.
    pub config_windows: Vec<String>,
    pub raw: watch::Receiver<OwnerState>,
    pub controls: watch::Receiver<OwnerControls>,
    pub out: watch::Sender<OwnerState>,
    pub log: Arc<OwnerLog>,
    pub news: Arc<GateNews>,
}

impl Gate {
    fn decide(&self, now_unix: u64) -> Result<(), NotLending> {
        let c = self.controls.borrow().clone();
        let windows = c
            .schedule
            .clone()
            .unwrap_or_else(|| self.config_windows.clone());
        let now = i64::try_from(now_unix).unwrap_or(i64::MAX);
        let open = windows.is_empty()
            || PolicyAd {
                windows,
                utc_offset_secs: super::machine_ad::utc_offset_secs(now),
                ..PolicyAd::default()
            }
            .window_open(now);
        let stop = c.stop;
        lending(
            self.raw.borrow().is_available(),
            open,
            stop.is_some(),
            stop.and_then(|s| s.until_unix),
            now_unix,
        )
    }

    /// Runs until `shutdown`: on every change of its inputs, and every
    /// second (windows and stops end with the clock).
    pub fn spawn(mut self, mut shutdown: watch::Receiver<bool>) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut was: Option<Result<(), NotLending>> = None;
            // Controls that can no longer change keep their last value.
            let mut controls_open = true;
            loop {
                let d = self.decide(crate::clock::now_secs());
                if was != Some(d) {
                    if let Ok(mut w) = self.news.why.lock() {
                        *w = d.err();
                    }
                    tracing::info!(lending = d.is_ok(), why = ?d.err(), "lending gate");
                    was = Some(d);
                }
                let s = if d.is_ok() {
                    OwnerState::Av
                } else {
                    OwnerState::Na
                };
                // Recorded before it is published, so that the guests'
                // reactions find their return open.
                if *self.out.borrow() != s {
                    match d {
                        Ok(()) => {
                            self.news.to_av.fetch_add(1, Ordering::Relaxed);
                            self.log.left();
                        }
                        Err(why) => {
                            self.news.to_na.fetch_add(1, Ordering::Relaxed);
                            self.log.returned(cause_name(why), Instant::now());
                        }
                    }
                    self.out.send_replace(s);
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    r = self.raw.changed() => if r.is_err() { return },
                    r = self.controls.changed(), if controls_open => controls_open = r.is_ok(),
                    _ = shutdown.wait_for(|s| *s) => return,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::owner_controls::Stop;

    #[tokio::test]
    async fn stops_and_the_owner_turn_the_station_na_and_are_recorded() {
        let (raw_tx, raw) = watch::channel(OwnerState::Av);
        let (ctl_tx, controls) = watch::channel(OwnerControls::default());
        let (out, mut rx) = watch::channel(OwnerState::Na);
        let (_stop_tx, stop) = watch::channel(false);
        let log = Arc::new(OwnerLog::in_memory());
        let news = Arc::new(GateNews::default());
        let gate = Gate {
            config_windows: Vec::new(),
            raw,
            controls,
            out,
            log: log.clone(),
            news: news.clone(),
        };
        let task = gate.spawn(stop);
        let wait = |want: OwnerState| {
            let mut rx = rx.clone();
            async move {
                tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|s| *s == want))
                    .await
                    .unwrap()
                    .unwrap();
            }
        };
        wait(OwnerState::Av).await;
        ctl_tx.send_modify(|c| {
            c.stop = Some(Stop {
                since_unix: 0,
                until_unix: None,
            })
        });
        wait(OwnerState::Na).await;
        assert_eq!(news.why(), Some(NotLending::Stopped));
        ctl_tx.send_modify(|c| c.stop = None);
        wait(OwnerState::Av).await;
        raw_tx.send(OwnerState::Na).unwrap();
        wait(OwnerState::Na).await;
        let causes: Vec<String> = log
            .saved()
            .returns
            .iter()
            .map(|r| r.cause.clone())
            .collect();
        assert_eq!(causes, ["stopped", "owner"]);
        assert_eq!(news.to_na.load(Ordering::Relaxed), 2);
        let _ = rx.borrow_and_update();
        task.abort();
    }
}
