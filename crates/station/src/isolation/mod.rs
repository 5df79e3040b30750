//! Guest isolation: one small interface over cgroupfs and process launch.
//!
//! - [`CgroupManager`] / [`GuestCgroup`]: per-guest groups
//!   `<root>/<parent>/<job>` on pure cgroup v2 **and** on the hybrid v1+v2
//!   layout of the development machines (cpu, memory, freezer on v1; the v2
//!   mount at `/sys/fs/cgroup/unified` with only the core files; platform.md
//!   §1.2). Idle priority, memory bounds, freeze/thaw, kill, CPU usage,
//!   removal. cgroupfs is driven directly: there is no systemd or D-Bus
//!   delegation on these machines, and `cgroups-rs` lacks `cpu.idle`.
//! - [`GuestLauncher`]: start a guest as an unprivileged user in its own
//!   session (optionally its own PID namespace), with `SCHED_IDLE`, inside
//!   its cgroup before `exec`, in a private sandbox directory with a cleared
//!   environment.
//!
//! Priority rule (Ryu & Hollingsworth, linger-longer spec §1.2, L54/L15):
//! while lingering, owner processes must be able to starve the guest and
//! preempt it on wakeup; `SCHED_IDLE` / `cpu.idle` give that nearly
//! (weight 3 vs 1024, wakeup preemption; spec §6.3).

mod cgroup;
mod launch;
mod settings;

pub use cgroup::{
    CgroupConfig, CgroupLayout, CgroupManager, Controller, FreezeMethod, GuestCgroup, IdleOutcome,
    KillMethod, MemoryBounds, RemoveOnDrop, V1Roots, parse_mountinfo,
};
pub use launch::{
    GuestLauncher, GuestProcess, GuestSpec, GuestUser, prepare_sandbox, unreachable_by,
};
pub use settings::{CgroupMode, CgroupSettings};

use std::path::{Path, PathBuf};

/// Isolation errors; each names the path that failed.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot parse: {what}")]
    Parse { path: PathBuf, what: String },
    #[error("invalid job name {0:?}: must be non-empty, not `.`/`..`, without `/` or NUL")]
    BadJobName(String),
    #[error("no cgroup hierarchy found (looked at {0})")]
    NoHierarchy(PathBuf),
    #[error("{path}: timed out after {after:?} waiting for {what}")]
    Timeout {
        path: PathBuf,
        what: &'static str,
        after: std::time::Duration,
    },
    #[error("signal {signal} to pid {pid}: {source}")]
    Signal {
        pid: i32,
        signal: &'static str,
        #[source]
        source: nix::Error,
    },
    #[error("user {0:?} not found")]
    NoSuchUser(String),
    #[error("spawn {program}: {source}")]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl IsolationError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        IsolationError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
