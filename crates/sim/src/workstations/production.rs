//! The production coordinator in the simulated pool: every station that
//! changed advertises to a real `gleaner_coordinator::Pool`, and the
//! stations carry out its grants and preemptions at once.
//!
//! What a station advertises is what a station daemon would: its owner
//! state, one CPU less while its own background job runs, its guest, its
//! idle jobs (as one job class of its owner) and its jobs running
//! elsewhere. Claim ids are minted unsigned (no cryptography per grant).
//! A grant whose host is no longer free when the home uses it is counted as
//! unusable, and its claim lapses in the pool as it would in a real one.

use super::model::Model;
use super::{Coordinator, PoolConfig};
use crate::SimError;
use crate::availability::State;
use gleaner_coordinator::pool::Message;
use gleaner_coordinator::{CoordinatorConfig, Outbox, Pool, UnsignedClaims};
use gleaner_core::detector::OwnerState;
use gleaner_core::rng::{PolicyRng, RngCore};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::wire::{Demand, GuestInfo, PROTOCOL_VERSION, StationAd};

/// Drives a [`Pool`] with the model's stations.
pub(super) struct Production {
    pool: Pool,
    names: Vec<String>,
    /// Each station's idle jobs as one class (count set per ad).
    classes: Vec<JobClass>,
    sequence: u64,
    unusable: u64,
}

/// Station `i`'s name; zero-padded so that name order is index order (the
/// matchmaker breaks ties by name).
fn name(i: usize) -> String {
    format!("s{i:05}")
}

fn index(name: &str) -> Option<u32> {
    name.strip_prefix('s')?.parse().ok()
}

impl Production {
    pub(super) fn new(
        template: &CoordinatorConfig,
        cfg: &PoolConfig,
        mut rng: PolicyRng,
    ) -> Result<Self, SimError> {
        let config = CoordinatorConfig {
            allocator: cfg.allocator.clone(),
            scheduling_interval_secs: cfg.sched_interval.as_secs_f64(),
            ..template.clone()
        };
        let pool = Pool::from_config(
            &config,
            Box::new(UnsignedClaims),
            rng.next_u64(),
            Time::ZERO,
        )
        .map_err(|e| SimError::Param {
            name: "coordinator".into(),
            msg: e.to_string(),
        })?;
        let n = cfg.workloads.len();
        let names: Vec<String> = (0..n).map(name).collect();
        let classes = names
            .iter()
            .map(|n| JobClass::of(&JobDescription::new(n.clone(), "background-job")))
            .collect();
        Ok(Production {
            pool,
            names,
            classes,
            sequence: 0,
            unusable: 0,
        })
    }

    /// Station `s`'s advertisement now.
    fn ad(&mut self, m: &Model, s: u32) -> StationAd {
        let st = &m.st[s as usize];
        self.sequence += 1;
        let running_guests = st
            .guest
            .map(|g| {
                let owner = &self.names[m.jobs[g as usize].owner as usize];
                vec![GuestInfo {
                    job: JobId::new(u64::from(g), 0),
                    home: owner.clone(),
                    owner: owner.clone(),
                    since: Time::ZERO,
                    suspended: false,
                    concurrency_limits: Vec::new(),
                    class: None,
                }]
            })
            .unwrap_or_default();
        let idle = st.queue.len() as u32;
        let classes = if idle > 0 {
            let mut c = self.classes[s as usize].clone();
            c.count = idle;
            vec![c]
        } else {
            Vec::new()
        };
        StationAd {
            protocol: PROTOCOL_VERSION,
            name: self.names[s as usize].clone(),
            address: String::new(),
            state: match st.state {
                State::Av => OwnerState::Av,
                State::Na => OwnerState::Na,
            },
            // The owner's own background job takes the one CPU.
            cpus: u32::from(st.local.is_none()),
            memory_mb: 1024,
            disk_free_kb: 1 << 20,
            arch: "X86_64".into(),
            opsys: "LINUX".into(),
            speed: 1.0,
            running_guests,
            attrs: Default::default(),
            demand: Demand {
                idle_jobs: idle,
                remote_jobs: st.remote,
            },
            policy: Default::default(),
            classes,
            submit_only: false,
            execute_only: false,
            sequence: self.sequence,
            sent_at: m.now(),
            claims_used: Vec::new(),
            claims_held: Vec::new(),
            summary: None,
        }
    }

    /// Every changed station advertises; the pool's effects are carried
    /// out, which changes more stations, until nothing changes.
    fn flush(&mut self, m: &mut Model) {
        loop {
            let dirty = m.take_dirty();
            if dirty.is_empty() {
                return;
            }
            let now = m.now();
            let mut out = Outbox::default();
            for s in dirty {
                let ad = self.ad(m, s);
                self.pool.advertise(ad, now, &mut out);
            }
            self.deliver(m, out);
        }
    }

    /// The stations act on the pool's messages.
    fn deliver(&mut self, m: &mut Model, out: Outbox) {
        let mut work = Vec::new();
        for msg in out.messages {
            match msg {
                Message::Grant { to, grant } => {
                    let (Some(to), Some(host)) = (index(&to), index(&grant.host)) else {
                        self.unusable += 1;
                        continue;
                    };
                    // The home places its first idle job, if the host is
                    // still free (else the host would refuse the claim).
                    let usable = m.is_free(host)
                        && m.st.get(to as usize).is_some_and(|t| !t.queue.is_empty());
                    match usable.then(|| m.dequeue(to)).flatten() {
                        Some(j) => m.place_remote(j, host),
                        None => self.unusable += 1,
                    }
                }
                Message::Preempt { preemption, .. } => {
                    let (Some(host), Some(job)) = (index(&preemption.host), preemption.job) else {
                        continue;
                    };
                    let guest = m.st.get(host as usize).and_then(|h| h.guest);
                    if guest.is_some_and(|g| u64::from(g) == job.cluster) {
                        m.vacate_guest(host, &mut work);
                        m.count_preemption();
                    }
                }
            }
        }
        m.settle(work);
    }
}

impl Coordinator for Production {
    fn tick(&mut self, m: &mut Model) {
        self.flush(m);
        let mut out = Outbox::default();
        self.pool.tick(m.now(), &mut out);
        self.deliver(m, out);
        self.flush(m);
    }

    /// The ads that follow carry the event (a host turning AV, a guest
    /// leaving, a home's remote job ending, a CPU freed).
    fn capacity_event(&mut self, _m: &mut Model) {}

    fn after_event(&mut self, m: &mut Model) {
        self.flush(m);
    }

    fn passes(&self) -> u64 {
        self.pool.passes()
    }

    fn unusable_grants(&self) -> u64 {
        self.unusable
    }
}
