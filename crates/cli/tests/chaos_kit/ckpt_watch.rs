//! A self-checkpointing job as the chaos driver watches it.

use super::MARGIN_TICKS;
use crate::fault_pool::{EVERY, STEPS};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A self-checkpointing job as the driver watches it: the steps it
/// executes (its progress log) and the checkpoints its home has stored.
pub struct CkptWatch {
    pub id: String,
    pub progress: PathBuf,
    pub latest: PathBuf,
    pub lines: usize,
    pub last: Option<(u32, u32)>,
    /// (tick, step) of every stored checkpoint seen.
    pub stored: Vec<(u64, u32)>,
    pub stored_key: Option<(u64, SystemTime)>,
    /// (tick, step restored from, highest step stored before it).
    pub restores: Vec<(u64, u32, u32)>,
    pub done: bool,
}

impl CkptWatch {
    /// Job `id`, whose progress log is `progress` and whose last stored
    /// checkpoint is `latest` in its home's spool.
    pub fn new(id: &str, progress: PathBuf, latest: PathBuf) -> CkptWatch {
        CkptWatch {
            id: id.to_string(),
            progress,
            latest,
            lines: 0,
            last: None,
            stored: Vec::new(),
            stored_key: None,
            restores: Vec::new(),
            done: false,
        }
    }

    pub fn observe(&mut self, tick: u64) {
        // Checkpoints first: one stored before this tick's read of the
        // progress log was stored before any step seen in it.
        if let Ok(m) = std::fs::metadata(&self.latest) {
            let key = (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH));
            if self.stored_key != Some(key)
                && let Some(step) = checkpoint_step(&self.latest)
            {
                self.stored_key = Some(key);
                self.stored.push((tick, step));
            }
        }
        let text = std::fs::read_to_string(&self.progress).unwrap_or_default();
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        for l in complete.lines().skip(self.lines) {
            self.lines += 1;
            let mut it = l.split_whitespace();
            let (Some(Ok(pid)), Some(Ok(step))) = (
                it.next().map(str::parse::<u32>),
                it.next().map(str::parse::<u32>),
            ) else {
                continue;
            };
            let new_run = self
                .last
                .is_none_or(|(lp, ls): (u32, u32)| lp != pid || step <= ls);
            if new_run {
                let bound = self
                    .stored
                    .iter()
                    .filter(|(t, _)| *t + MARGIN_TICKS <= tick)
                    .map(|&(_, s)| s)
                    .max()
                    .unwrap_or(0);
                self.restores.push((tick, step.saturating_sub(1), bound));
            }
            self.last = Some((pid, step));
        }
    }

    /// The job printed a checkpoint step its home has not stored yet: it
    /// is saving or uploading that checkpoint now.
    pub fn checkpointing(&self) -> bool {
        let stored = self.stored.iter().map(|&(_, s)| s).max().unwrap_or(0);
        !self.done
            && self
                .last
                .is_some_and(|(_, s)| s % EVERY == 0 && s < STEPS && s > stored)
    }

    pub fn rollbacks(&self) -> Vec<(u64, u32, u32)> {
        self.restores
            .iter()
            .copied()
            .filter(|&(_, from, bound)| from < bound)
            .collect()
    }

    pub fn steps(&self) -> Vec<(u32, u32)> {
        std::fs::read_to_string(&self.progress)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
            })
            .collect()
    }
}

/// The step a stored checkpoint bundle of `selfckpt.sh` resumes from.
pub fn checkpoint_step(bundle: &Path) -> Option<u32> {
    let mut f = std::fs::File::open(bundle).ok()?;
    let d = tempfile::tempdir().ok()?;
    gleaner_station::checkpoint::read_bundle(&mut f, Some(d.path())).ok()?;
    let s = std::fs::read_to_string(d.path().join("selfckpt.state")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}
