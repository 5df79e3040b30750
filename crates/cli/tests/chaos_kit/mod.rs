//! The chaos suite's parts (`chaos.rs`): its size and jobs, the watch on
//! the jobs, the watch on checkpointing jobs, and the driver that kills.

mod ckpt_watch;
mod driver;
mod watch;

pub use ckpt_watch::CkptWatch;
pub use driver::Driver;
pub use watch::{Watch, check_short, staged_names};

use std::time::Duration;

pub const DEFAULT_SEED: u64 = 1407;
/// Default size: short jobs and self-checkpointing jobs.
pub const SHORT: usize = 40;
pub const CKPT: usize = 4;
/// Seconds a short job runs.
pub const JOB_SECS: &str = "1";
pub const HOSTS: [&str; 3] = ["x1", "x2", "x3"];
/// The driver looks at the pool this often.
pub const TICK: Duration = Duration::from_millis(100);
/// A restored run is compared with the checkpoints seen stored this many
/// ticks before its first step appeared (time for the run to fetch its
/// checkpoint and print a step).
pub const MARGIN_TICKS: u64 = 3;

/// One run of a short chaos job: its nonce in stdout (first and last
/// line), one line in the side-effect file, the nonce in its result file.
pub const JOB_SCRIPT: &str = r#"#!/bin/sh
# chaosjob.sh PROC SIDE_DIR SECS
set -u
n=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || echo "$$.$(date +%s%N)")
echo "run $$ $n"
echo "$n" >> "$2/s.$1"
sleep "$3"
echo "$n" > "result.$1"
echo "run $$ $n"
"#;

pub struct Size {
    pub short: usize,
    pub ckpt: usize,
    pub kills: u32,
    pub deadline: Duration,
}

impl Size {
    pub fn from_env() -> Size {
        let spec = std::env::var("CHAOS_JOBS").unwrap_or_default();
        let spec = spec.trim();
        let (short, ckpt) = if spec.is_empty() {
            (SHORT, CKPT)
        } else if let Some(k) = spec.strip_suffix('x') {
            let k: usize = k.parse().expect("CHAOS_JOBS=Nx");
            (SHORT * k, CKPT * k)
        } else {
            let n: usize = spec.parse().expect("CHAOS_JOBS=N or Nx");
            (n, (n / 8).max(1))
        };
        let jobs = (short + ckpt) as u64;
        Size {
            short,
            ckpt,
            kills: (jobs as u32 / 2).max(4),
            deadline: Duration::from_secs(120 + 3 * jobs),
        }
    }
}
