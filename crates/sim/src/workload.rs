//! Background-job workloads of home stations.
//!
//! Mutka's simulation model (Mutka 1988 Table 4.1/4.4,
//! seeds/000_14c1149197e96532.txt L614–627, L694–705) has two kinds of
//! users: *light* stations whose jobs arrive as a Poisson process with mean
//! inter-arrival `arrive(i)` and exponential service demand `servemean(i)`,
//! and stations with `NumPermanent(i)` permanent jobs — "When a job of a
//! heavy user completes, another job will immediately appear" (L614). We add
//! fixed job *families* (a batch of jobs submitted at one instant), useful
//! for what-if runs on a user's own pool.

use gleaner_core::rng::{PolicyRng, substream};
use gleaner_core::time::{Dur, Time};

use crate::availability::exp_sample;

/// How a job's service demand is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Demand {
    /// Exponential with this mean.
    Exp(Dur),
    /// Always exactly this long.
    Fixed(Dur),
}

impl Demand {
    pub fn draw(&self, rng: &mut PolicyRng) -> Dur {
        match *self {
            // At least 1 µs so every job takes time.
            Demand::Exp(m) => Dur::from_secs_f64(exp_sample(rng, m.as_secs_f64())).max(Dur(1)),
            Demand::Fixed(d) => d.max(Dur(1)),
        }
    }
    pub fn mean(&self) -> Dur {
        match *self {
            Demand::Exp(m) | Demand::Fixed(m) => m,
        }
    }
}

/// One batch of jobs submitted together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Family {
    pub at: Time,
    pub count: u32,
    pub demand: Demand,
}

/// The workload of one home station.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum StationWorkload {
    /// No background jobs (a pure capacity donor).
    #[default]
    Idle,
    /// Poisson arrivals, mean inter-arrival `mean_interarrival` (LightStation:
    /// 2000 min, T:L700).
    Poisson {
        mean_interarrival: Dur,
        demand: Demand,
    },
    /// `count` jobs present from time 0; each completion immediately brings
    /// a fresh job (T:L614).
    Permanent { count: u32, demand: Demand },
    /// Fixed batches.
    Families(Vec<Family>),
}

/// A newly appearing job: arrival time and service demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewJob {
    pub arrival: Time,
    pub demand: Dur,
}

/// Draws the jobs of one station. Each station has its own random stream
/// (`substream(seed, stream)`), independent of the availability streams.
#[derive(Clone, Debug)]
pub struct JobSource {
    workload: StationWorkload,
    rng: PolicyRng,
}

impl JobSource {
    /// `stream` should be distinct per station and distinct from the
    /// availability streams (the simulator uses `1_000_000 + station`).
    pub fn new(workload: StationWorkload, seed: u64, stream: u64) -> Self {
        JobSource {
            workload,
            rng: substream(seed, stream),
        }
    }

    pub fn workload(&self) -> &StationWorkload {
        &self.workload
    }

    /// Jobs present or scheduled at the start: permanent jobs and families.
    pub fn initial(&mut self) -> Vec<NewJob> {
        match &self.workload {
            StationWorkload::Permanent { count, demand } => {
                let d = *demand;
                (0..*count)
                    .map(|_| NewJob {
                        arrival: Time::ZERO,
                        demand: d.draw(&mut self.rng),
                    })
                    .collect()
            }
            StationWorkload::Families(fs) => {
                let fs = fs.clone();
                let mut v = Vec::new();
                for f in fs {
                    for _ in 0..f.count {
                        v.push(NewJob {
                            arrival: f.at,
                            demand: f.demand.draw(&mut self.rng),
                        });
                    }
                }
                v.sort_by_key(|j| j.arrival);
                v
            }
            _ => Vec::new(),
        }
    }

    /// The next Poisson arrival after `now`, if the workload has arrivals.
    pub fn next_arrival(&mut self, now: Time) -> Option<NewJob> {
        match self.workload {
            StationWorkload::Poisson {
                mean_interarrival,
                demand,
            } => {
                let gap =
                    Dur::from_secs_f64(exp_sample(&mut self.rng, mean_interarrival.as_secs_f64()));
                Some(NewJob {
                    arrival: now + gap,
                    demand: demand.draw(&mut self.rng),
                })
            }
            _ => None,
        }
    }

    /// A job of this station completed at `now`: the replacement job of a
    /// permanent workload (arriving at once), if any.
    pub fn on_completion(&mut self, now: Time) -> Option<NewJob> {
        match self.workload {
            StationWorkload::Permanent { demand, .. } => Some(NewJob {
                arrival: now,
                demand: demand.draw(&mut self.rng),
            }),
            _ => None,
        }
    }

    /// Long-run offered load in CPUs (demand rate × mean demand); `None` for
    /// permanent workloads (always saturated).
    pub fn offered_load(&self) -> Option<f64> {
        match &self.workload {
            StationWorkload::Idle | StationWorkload::Families(_) => Some(0.0),
            StationWorkload::Poisson {
                mean_interarrival,
                demand,
            } => Some(demand.mean().as_secs_f64() / mean_interarrival.as_secs_f64()),
            StationWorkload::Permanent { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_rate_and_demand_mean() {
        let mut src = JobSource::new(
            StationWorkload::Poisson {
                mean_interarrival: Dur::from_mins(2000),
                demand: Demand::Exp(Dur::from_hours(5)),
            },
            1,
            1,
        );
        let mut now = Time::ZERO;
        let n = 20_000;
        let mut dsum = 0.0;
        for _ in 0..n {
            let j = src.next_arrival(now).unwrap();
            dsum += j.demand.as_mins_f64();
            now = j.arrival;
        }
        let gap = now.as_secs_f64() / 60.0 / n as f64;
        assert!((gap / 2000.0 - 1.0).abs() < 0.03, "{gap}");
        assert!((dsum / n as f64 / 300.0 - 1.0).abs() < 0.03);
        assert!((src.offered_load().unwrap() - 0.15).abs() < 1e-9);
    }

    #[test]
    fn permanent_jobs_replace_themselves_and_families_expand() {
        let mut p = JobSource::new(
            StationWorkload::Permanent {
                count: 3,
                demand: Demand::Fixed(Dur::from_mins(5)),
            },
            1,
            2,
        );
        assert_eq!(p.initial().len(), 3);
        let j = p.on_completion(Time::from_secs(60)).unwrap();
        assert_eq!(j.arrival, Time::from_secs(60));
        assert_eq!(j.demand, Dur::from_mins(5));
        assert!(p.next_arrival(Time::ZERO).is_none());
        let mut f = JobSource::new(
            StationWorkload::Families(vec![
                Family {
                    at: Time::from_secs(100),
                    count: 2,
                    demand: Demand::Fixed(Dur::from_secs(10)),
                },
                Family {
                    at: Time::from_secs(5),
                    count: 1,
                    demand: Demand::Fixed(Dur::from_secs(1)),
                },
            ]),
            1,
            3,
        );
        let v = f.initial();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].arrival, Time::from_secs(5));
        assert!(f.on_completion(Time::ZERO).is_none());
    }
}
