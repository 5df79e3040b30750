//! `glean up` keeps its daemons running, as `condor_master` does: a daemon
//! that dies is started again with the same configuration (hence the same
//! state: its queue, its keys), after a delay that doubles while it keeps
//! dying and is forgotten once it has run long enough. Every death and
//! restart is logged to `glean up`'s output and appended to the daemon's
//! own log.

use anyhow::Context;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Restart delays, in the manner of `condor_master`'s
/// `MASTER_BACKOFF_CONSTANT`/`_FACTOR`/`_CEILING` and
/// `MASTER_RECOVER_FACTOR` (scaled down for a personal pool: a first
/// restart after 1 s rather than 9 s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    pub first: Duration,
    pub factor: f64,
    pub ceiling: Duration,
    /// A daemon that ran this long before dying starts a new series.
    pub recover_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            first: Duration::from_secs(1),
            factor: 2.0,
            ceiling: Duration::from_secs(60),
            recover_after: Duration::from_secs(300),
        }
    }
}

impl Backoff {
    /// The delay before restart number `n` (1 for the first of a series).
    pub fn delay(&self, n: u32) -> Duration {
        let exp = i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.first.as_secs_f64() * self.factor.powi(exp);
        // Capped before converting: a long series overflows a Duration.
        if secs.is_finite() && secs < self.ceiling.as_secs_f64() {
            Duration::from_secs_f64(secs.max(0.0))
        } else {
            self.ceiling
        }
    }

    /// The number of the next restart of a daemon that ran for `ran` and
    /// had `previous` restarts in its current series.
    pub fn next(&self, previous: u32, ran: Duration) -> u32 {
        if ran >= self.recover_after {
            1
        } else {
            previous.saturating_add(1)
        }
    }
}

/// How to start one daemon.
pub struct DaemonSpec {
    pub name: String,
    pub exe: PathBuf,
    /// `coordinator` or `station`.
    pub what: &'static str,
    pub config: PathBuf,
    pub log: PathBuf,
}

impl DaemonSpec {
    /// Starts it, its output appended to its log.
    pub fn spawn(&self) -> anyhow::Result<Child> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("log {}", self.log.display()))?;
        let err = out.try_clone()?;
        Command::new(&self.exe)
            .arg(self.what)
            .arg("--config")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .env(
                "GLEAN_LOG",
                std::env::var("GLEAN_LOG").unwrap_or_else(|_| "info".into()),
            )
            .spawn()
            .with_context(|| format!("starting {}", self.what))
    }

    fn note(&self, text: &str) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&self.log) {
            let _ = writeln!(f, "glean up: {text}");
        }
    }
}

/// One supervised daemon.
pub struct Supervised {
    pub spec: DaemonSpec,
    /// `None` while it waits to be started again.
    pub child: Option<Child>,
    started: Instant,
    restarts: u32,
    restart_at: Option<Instant>,
}

impl Supervised {
    pub fn new(spec: DaemonSpec, child: Child) -> Self {
        Supervised {
            spec,
            child: Some(child),
            started: Instant::now(),
            restarts: 0,
            restart_at: None,
        }
    }

    /// Looks after it once: notices a death (and schedules the restart),
    /// or restarts it when its delay is over. Returns what happened, for
    /// `glean up`'s output.
    pub fn tend(&mut self, policy: &Backoff, now: Instant) -> Option<String> {
        if let Some(c) = &mut self.child {
            let status: ExitStatus = match c.try_wait() {
                Ok(Some(s)) => s,
                Ok(None) => return None,
                Err(e) => return Some(format!("{}: cannot check on it: {e}", self.spec.name)),
            };
            self.child = None;
            self.restarts = policy.next(self.restarts, now.duration_since(self.started));
            let delay = policy.delay(self.restarts);
            self.restart_at = Some(now + delay);
            let msg = format!(
                "{} exited ({status}); starting it again in {:.0} s (restart {})",
                self.spec.name,
                delay.as_secs_f64(),
                self.restarts
            );
            self.spec.note(&msg);
            return Some(msg);
        }
        let at = self.restart_at?;
        if now < at {
            return None;
        }
        match self.spec.spawn() {
            Ok(c) => {
                let msg = format!("{} started again (pid {})", self.spec.name, c.id());
                self.spec.note(&msg);
                self.child = Some(c);
                self.started = now;
                self.restart_at = None;
                Some(msg)
            }
            Err(e) => {
                self.restarts = self.restarts.saturating_add(1);
                self.restart_at = Some(now + policy.delay(self.restarts));
                Some(format!("{}: {e:#}; trying again later", self.spec.name))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_to_the_ceiling_and_a_long_run_starts_a_new_series() {
        let b = Backoff::default();
        let secs: Vec<u64> = (1..=9).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(b.delay(u32::MAX), b.ceiling);
        assert_eq!(b.next(0, Duration::from_secs(2)), 1);
        assert_eq!(b.next(3, Duration::from_secs(2)), 4);
        assert_eq!(b.next(7, Duration::from_secs(301)), 1);
    }

    proptest::proptest! {
        #[test]
        fn a_delay_never_exceeds_the_ceiling_nor_shrinks_within_a_series(n in 1u32..10_000) {
            let b = Backoff::default();
            proptest::prop_assert!(b.delay(n) <= b.ceiling);
            proptest::prop_assert!(b.delay(n) <= b.delay(n + 1));
        }
    }
}
