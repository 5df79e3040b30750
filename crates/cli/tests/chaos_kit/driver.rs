//! The chaos driver: kills one daemon at a time, at random moments or at
//! moments aimed at a checkpoint upload or an output delivery, and starts
//! it again with the same configuration and state.

use super::{HOSTS, Watch, staged_names};
use crate::fault_pool::Pool;
use gleaner_proto::job::JobState;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    Random,
    Checkpoint,
    Delivery,
}

/// Kills one daemon at a time and starts it again.
pub struct Driver {
    pub rng: StdRng,
    pub left: u32,
    pub moment: Moment,
    /// When a random kill is due, or an aimed one gives up waiting.
    pub due: Instant,
    pub down: Option<(String, Instant)>,
    pub completed_when_armed: usize,
    /// Staged outputs seen so far (a new one is a delivery under way).
    pub staged_seen: HashSet<String>,
    pub by_kind: BTreeMap<&'static str, u32>,
    pub by_moment: BTreeMap<&'static str, u32>,
    pub log: Vec<String>,
    /// The first random victims: one of each kind.
    pub first: Vec<String>,
}

impl Driver {
    pub fn new(seed: u64, kills: u32) -> Driver {
        let mut rng = StdRng::seed_from_u64(seed);
        let due = Instant::now() + Duration::from_secs_f64(rng.random_range(1.0..3.0));
        let host = HOSTS[rng.random_range(0..HOSTS.len())];
        let mut first: Vec<String> = vec!["coord".into(), "home".into(), host.into()];
        first.shuffle(&mut rng);
        Driver {
            rng,
            left: kills,
            moment: Moment::Random,
            due,
            down: None,
            completed_when_armed: 0,
            staged_seen: HashSet::new(),
            by_kind: BTreeMap::new(),
            by_moment: BTreeMap::new(),
            log: Vec::new(),
            first,
        }
    }

    pub fn kills(&self) -> u32 {
        self.by_kind.values().sum()
    }

    pub fn random_victim(&mut self) -> String {
        // Every kind of daemon dies at least once, early, in a seeded order.
        if let Some(v) = self.first.pop() {
            return v;
        }
        // Then weights: coordinator 1, home 2, each host 1.
        let k = self.rng.random_range(0..3 + HOSTS.len());
        match k {
            0 => "coord".into(),
            1 | 2 => "home".into(),
            h => HOSTS[h - 3].into(),
        }
    }

    pub fn kill(&mut self, pool: &mut Pool, victim: String, moment: Moment, t0: Instant) {
        let down = Duration::from_secs_f64(self.rng.random_range(0.2..4.0));
        pool.daemon_mut(&victim).kill9();
        let kind = match victim.as_str() {
            "coord" => "coordinator",
            "home" => "home",
            _ => "host",
        };
        *self.by_kind.entry(kind).or_default() += 1;
        let m = match moment {
            Moment::Random => "random",
            Moment::Checkpoint => "checkpoint",
            Moment::Delivery => "delivery",
        };
        *self.by_moment.entry(m).or_default() += 1;
        self.log.push(format!(
            "{:7.2}s kill {victim} ({m}), down {:.1}s",
            t0.elapsed().as_secs_f64(),
            down.as_secs_f64()
        ));
        self.left -= 1;
        self.down = Some((victim, Instant::now() + down));
    }

    /// Starts a killed daemon whose time is up; then arms the next kill.
    pub fn restart_due(&mut self, pool: &mut Pool, completed: usize) {
        let Some((name, at)) = &self.down else {
            return;
        };
        if Instant::now() < *at {
            return;
        }
        pool.daemon_mut(name).restart();
        self.down = None;
        let r: f64 = self.rng.random_range(0.0..1.0);
        self.moment = if r < 0.5 {
            Moment::Random
        } else if r < 0.75 {
            Moment::Checkpoint
        } else {
            Moment::Delivery
        };
        let wait = match self.moment {
            Moment::Random => self.rng.random_range(0.2..1.5),
            _ => 8.0,
        };
        self.due = Instant::now() + Duration::from_secs_f64(wait);
        self.completed_when_armed = completed;
    }

    /// One look: kills a daemon if the armed moment has come.
    pub fn step(&mut self, pool: &mut Pool, w: &Watch, t0: Instant) {
        let mut fresh_staged = false;
        for n in staged_names(&pool.work) {
            fresh_staged |= self.staged_seen.insert(n);
        }
        if self.down.is_some() || self.left == 0 {
            return;
        }
        let now = Instant::now();
        match self.moment {
            Moment::Checkpoint => {
                if let Some(c) = w.ckpts.iter().find(|c| c.checkpointing()) {
                    let host = w
                        .states
                        .get(&c.id)
                        .filter(|j| j.state == JobState::Running)
                        .and_then(|j| j.host.clone())
                        .filter(|h| HOSTS.contains(&h.as_str()));
                    let victim = match host {
                        Some(h) if self.rng.random_bool(0.5) => h,
                        _ => "home".into(),
                    };
                    self.kill(pool, victim, Moment::Checkpoint, t0);
                    return;
                }
            }
            Moment::Delivery => {
                if fresh_staged || w.completed() > self.completed_when_armed {
                    self.kill(pool, "home".into(), Moment::Delivery, t0);
                    return;
                }
            }
            Moment::Random => {}
        }
        if now >= self.due {
            let v = self.random_victim();
            self.kill(pool, v, Moment::Random, t0);
        }
    }
}
