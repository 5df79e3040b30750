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
//!   environment; [`GuestLauncher::spawn_confined`] adds the station-wide
//!   [`Confinement`]: idle at all times, own PID and mount namespaces with a
//!   fresh `/proc` where the kernel allows (`confine.rs`).
//! - [`SlotAccounts`] / [`SlotPool`]: one dedicated account per running
//!   guest (`gleaner-slot1..N`, never `nobody`, never the owner's), leased
//!   exclusively (`slots.rs`, `slot_pool.rs`); a daemon that is not root
//!   runs a personal pool instead.
//! - [`kill_uid`]: every process of a slot, found and killed by uid, with
//!   or without cgroups (`reap.rs`).
//! - Delegation (`delegation.rs`): under systemd with `Delegate=yes`,
//!   guest groups below the station's own cgroup (`[isolation]
//!   delegated`), the station itself moved into a leaf of it.
//! - [`prepare_execute_dir`] / [`prepare_sandbox`]: root's 0711 parent,
//!   one 0700 sandbox per guest owned by its slot (`sandbox.rs`), a
//!   loop-mounted file system of the guest's `request_disk`
//!   ([`SandboxDisks`], `sandbox_disk.rs`).
//! - [`GuestView`]: the guest's own root, as a container's (`view.rs`,
//!   carried out in the child by `view_exec.rs`; the world-writable
//!   directories it covers from `writable.rs`).
//! - [`GuestNet`]: a network namespace of its own behind slirp4netns
//!   (`netns.rs`).
//! - The guest's seccomp filter (`seccomp.rs`: no `ioprio_set`, no
//!   keyrings) and its lowest I/O weight (`cgroup_io.rs`).
//! - [`Scrubber`]: what a slot's uid left anywhere writable, removed on
//!   release (`scrub.rs`).
//!
//! Priority rule (Ryu & Hollingsworth, linger-longer spec §1.2, L54/L15):
//! while lingering, owner processes must be able to starve the guest and
//! preempt it on wakeup; `SCHED_IDLE` / `cpu.idle` give that nearly
//! (weight 3 vs 1024, wakeup preemption; spec §6.3).

mod cgroup;
mod cgroup_io;
mod confine;
mod delegation;
mod launch;
mod netns;
mod reap;
mod sandbox;
mod sandbox_disk;
mod scrub;
mod seccomp;
mod settings;
mod slot_pool;
mod slots;
mod view;
mod view_exec;
mod writable;

pub use cgroup::{
    CgroupConfig, CgroupLayout, CgroupManager, Controller, FreezeMethod, GuestCgroup, IdleOutcome,
    KillMethod, MemoryBounds, RemoveOnDrop, V1Roots, parse_mountinfo,
};
pub use confine::{Confinement, DEFAULT_MAX_PROCESSES, NamespaceMode, namespace_support};
pub(crate) use launch::lifeline;
pub use launch::{GuestLauncher, GuestProcess, GuestSpec, GuestUser};
pub use netns::{GUEST_DNS, GuestNet, NetworkMode, UserModeStack};
pub use reap::{
    REAP_TIMEOUT, ReapReport, UidScan, kill_uid, kill_uid_found, processes_of_uid, scan_uid,
};
pub use sandbox::{prepare_execute_dir, prepare_sandbox, unreachable_by};
pub use sandbox_disk::{
    DEFAULT_DISK_MB, DiskMode, IMAGE_SUFFIX, SandboxDisk, SandboxDisks, is_mount_point,
    unmount as sandbox_disk_unmount, usage_of_dir,
};
pub use scrub::{ScrubReport, Scrubber};
pub use settings::{CgroupMode, CgroupSettings, IsolationSettings};
pub use slot_pool::{SlotLease, SlotPool};
pub use slots::{
    DEFAULT_SLOT_PREFIX, SLOT_COMMENT, Slot, SlotAccounts, SlotConfig, default_slot_count,
    is_slot_account,
};
pub use view::{Dns, Exposed, GuestView, WANT_VOLUMES, wanted_volumes};
pub use view_exec::{Failure, MountPlan};

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
    #[error("slot account {name:?}: {why}")]
    SlotAccount { name: String, why: String },
    #[error(
        "no free slot account for {job:?}: {leased} of {total} leased, \
         {busy} more still running processes"
    )]
    NoFreeSlot {
        job: String,
        total: usize,
        leased: usize,
        busy: usize,
    },
    #[error("will not kill the processes of uid {uid}: {why}")]
    RefusedUid { uid: u32, why: &'static str },
    #[error("uid {uid}: processes {pids:?} survived SIGKILL for {after:?}")]
    Survivors {
        uid: u32,
        pids: Vec<i32>,
        after: std::time::Duration,
    },
    #[error(
        "guest namespaces required ([isolation] namespaces = \"required\") but unavailable: {0}"
    )]
    Namespaces(String),
    #[error("the guest's root: {0}")]
    View(String),
    #[error("guests' network: {0}")]
    Network(String),
}

impl IsolationError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        IsolationError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
