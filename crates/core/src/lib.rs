//! Gleaner's policy core.
//!
//! Every scheduling and protection policy of Gleaner lives here as pure code:
//! no file, network, clock or OS access. Time arrives as [`time::Time`]
//! values and randomness as a caller-supplied RNG (see [`rng`]), so the same
//! code runs unchanged inside the real daemons and inside the discrete-event
//! simulator, and every run is reproducible from a seed.
//!
//! Map of the crate (one module per concept):
//! - [`time`]: instants, durations and the injected [`time::Clock`].
//! - [`rng`]: the seeded RNG type used by policies and the simulator.
//! - [`detector`]: owner-activity detection, AV/NA (Mutka 1988 §3.2).
//! - [`linger`]: Linger-Longer's linger time and migration cost (Ryu & Hollingsworth Eq. 1–5).
//! - [`eviction`]: the per-guest eviction ladder (IE, PM, LL, LF, Condor-1988, checkpoint-then-kill).
//! - [`alloc`]: node allocators: Up-Down, Random, Round-Robin (Mutka 1988 Ch. 4).
//! - [`dmw`]: DMW placement: UMol and β·n/max(n, λ+1) scores, the rules shared with the coordinator (embargo, job limits, progress guarantee), the arbiter, the uncoordinated baseline (Neeracher 1998 §4.4–4.5).
//! - [`owner_rules`]: the owner's rules for guests: operating windows, allowed/denied users.
//! - [`placement_throttle`]: at most one placement per interval (Mutka 1988 L839).
//! - [`fair_share`]: which submitter of a home uses a node: fewest nodes held, then decayed usage (HTCondor's user priority), then turns; claim reuse under the share.
//! - [`start_failures`]: poison jobs: back-off after a failed start, hold after too many in a row.
//! - [`user_limits`]: per-user limits of a home: jobs queued, per submission, running; the spool's bounds per job and per user.
//! - [`reservation`]: hourly reservations of machines: the free-market algorithm with its tables, money and classes, FCFS and Pre-Allocated Capacity baselines, Longest-Free/Random replacement (Mutka 1988 Ch. 6).
//! - [`gang`]: parallel jobs of k machines: Linger-Longer LL-k and reconfiguration (Ryu & Hollingsworth §7).
//! - [`dag`]: job DAGs with data and priority dependences, retries, DAG and rescue file formats (Neeracher 1998 §2.1, §4.1).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]

pub mod alloc;
pub mod cron;
pub mod dag;
pub mod detector;
pub mod dmw;
pub mod eviction;
pub mod fair_share;
pub mod gang;
pub mod linger;
pub mod owner_rules;
pub mod placement_throttle;
pub mod reservation;
pub mod rng;
pub mod start_failures;
pub mod time;
pub mod user_limits;
