//! How far the launcher confines a guest beyond what its [`GuestSpec`]
//! says: the station-wide part of guest isolation (issue 12, item 4).
//!
//! - **Idle CPU priority at all times**: `SCHED_IDLE` and nice 19 from the
//!   guest's first instruction, whether the owner is active or not, with
//!   `RLIMIT_NICE` and `RLIMIT_RTPRIO` at 0 so that the guest cannot leave
//!   `SCHED_IDLE` or lower its nice value again (sched(7): an unprivileged
//!   thread leaves `SCHED_IDLE` only within its `RLIMIT_NICE`).
//! - **Own PID, mount and IPC namespaces** where the kernel allows (root:
//!   `unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC)`): SysV IPC and
//!   POSIX message queues are the guest's own; every mount made private, then
//!   a fresh `/proc` mounted by the namespace's first process, so the
//!   guest sees only its own processes and its mounts never reach the
//!   host. Where not allowed (no root, a kernel or seccomp profile that
//!   refuses), [`Confinement::for_station`] says why in the log and guests
//!   run without them; `NamespaceMode::Required` refuses to start instead.
//! - **A private `/tmp`, `/var/tmp` and `/dev/shm`** in that mount
//!   namespace: a fresh tmpfs on each, seen by this guest alone and gone
//!   with it, so no guest reads what another (or the owner) leaves there
//!   and nothing a guest leaves there outlives it. Its pages are charged to
//!   the guest's memory cgroup. A directory that holds the guest's sandbox
//!   or program is left as it is (mounting over it would hide them), as
//!   HTCondor's `MOUNT_UNDER_SCRATCH` does not cover the scratch directory
//!   itself.
//! - **A bound on processes** (`RLIMIT_NPROC`) for guests that run as a
//!   slot account: the limit counts every task of the guest's uid, and the
//!   uid is the guest's alone, so a fork bomb stops at the bound instead of
//!   filling the owner's process table. Not applied where guests run as the
//!   daemon's own user (a personal pool), whose other processes would count.
//! - **A private umask** (077): what a guest creates is its own unless it
//!   says otherwise.
//! - **A root of its own** ([`Confinement::view`], `view.rs`) with the
//!   namespaces: the host's system trees read-only, its sandbox, and
//!   nothing else of the host unless the owner exposes it; then no
//!   private tmpfs is needed on the host's `/tmp` (it is not there).
//! - **Idle I/O** that it cannot leave: `IOPRIO_CLASS_IDLE` with the idle
//!   CPU priority, and a seccomp filter refusing `ioprio_set` and the
//!   keyrings ([`Confinement::seccomp`], `seccomp.rs`).
//!
//! CRIU jobs are the exception (launched with a reaper, or restored): they
//! get no namespaces whatever this says. An unprivileged CRIU dump cannot
//! handle a PID namespace, and a restore brings the namespaces recorded in
//! its images (launch.rs module comment, `checkpoint.rs` `Criu`).
//!
//! [`GuestSpec`]: super::GuestSpec

use super::IsolationError;
use serde::{Deserialize, Serialize};

/// Default `RLIMIT_NPROC` of a guest (`[isolation] max_processes`): every
/// thread counts, so generous for a job with many threads, and still far
/// below a machine's process table (`kernel.pid_max`, 4 194 304 on 64-bit
/// kernels).
pub const DEFAULT_MAX_PROCESSES: u64 = 4096;

/// `[isolation] namespaces`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NamespaceMode {
    /// No namespaces: guests share the host's PID and mount namespaces.
    Off,
    /// Namespaces where the kernel allows them, a logged reason otherwise.
    #[default]
    Auto,
    /// Refuse to start without them.
    Required,
}

/// The launcher's station-wide policy ([`super::GuestLauncher::spawn_confined`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Confinement {
    /// `SCHED_IDLE` and nice 19 for every guest, whatever
    /// `GuestSpec::sched_idle` says.
    pub always_idle: bool,
    /// PID + mount namespaces with a fresh `/proc` (not for CRIU jobs).
    pub namespaces: bool,
    /// umask 077 before exec.
    pub private_umask: bool,
    /// A fresh tmpfs on `/tmp`, `/var/tmp` and `/dev/shm` in the guest's
    /// mount namespace (only with `namespaces`).
    pub private_tmp: bool,
    /// `RLIMIT_NPROC` of a guest running as a slot account; `None`: the
    /// daemon's own limit.
    pub max_processes: Option<u64>,
    /// Why `namespaces` is off when it was asked for (for logs and ads).
    pub namespaces_unavailable: Option<String>,
    /// A root of its own for each guest with namespaces (`view.rs`);
    /// `None`: the host's file system with a private `/tmp`, `/var/tmp`,
    /// `/dev/shm` (`private_tmp`).
    pub view: Option<super::GuestView>,
    /// The guest seccomp filter (`seccomp.rs`), not for CRIU jobs.
    pub seccomp: bool,
}

impl Default for Confinement {
    fn default() -> Self {
        Self::new()
    }
}

impl Confinement {
    /// Idle at all times and a private umask; no namespaces.
    pub fn new() -> Self {
        Confinement {
            always_idle: true,
            namespaces: false,
            private_umask: true,
            private_tmp: true,
            max_processes: Some(DEFAULT_MAX_PROCESSES),
            namespaces_unavailable: None,
            view: None,
            seccomp: true,
        }
    }

    /// Each namespaced guest's own root (`None`: the host's, with a
    /// private `/tmp`, `/var/tmp`, `/dev/shm`).
    pub fn with_view(mut self, view: Option<super::GuestView>) -> Self {
        self.view = view;
        self
    }

    /// A private `/tmp`, `/var/tmp` and `/dev/shm` (with namespaces).
    pub fn with_private_tmp(mut self, on: bool) -> Self {
        self.private_tmp = on;
        self
    }

    /// The process bound of slot-account guests (`None`: unbounded).
    pub fn with_max_processes(mut self, max: Option<u64>) -> Self {
        self.max_processes = max;
        self
    }

    /// Ask for namespaces without probing (tests, or a caller that probed).
    pub fn with_namespaces(mut self, on: bool) -> Self {
        self.namespaces = on;
        self
    }

    /// The policy for a station: idle always, namespaces per `mode` after
    /// probing whether this process may create them.
    pub fn for_station(mode: NamespaceMode) -> Result<Self, IsolationError> {
        let mut c = Confinement::new();
        match mode {
            NamespaceMode::Off => {
                tracing::info!("guest namespaces off ([isolation] namespaces)");
            }
            NamespaceMode::Auto | NamespaceMode::Required => match namespace_support() {
                Ok(()) => {
                    c.namespaces = true;
                    tracing::info!("guests get their own PID and mount namespaces (fresh /proc)");
                }
                Err(why) if mode == NamespaceMode::Auto => {
                    tracing::warn!(reason = %why,
                        "guests run without PID and mount namespaces: they can see the \
                         host's processes in /proc (not signal or trace them)");
                    c.namespaces_unavailable = Some(why);
                }
                Err(why) => return Err(IsolationError::Namespaces(why)),
            },
        }
        Ok(c)
    }
}

/// Steps of the probe, reported by the probe child.
const STEPS: [&str; 4] = [
    "unshare(CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWIPC)",
    "making mounts private",
    "fork into the PID namespace",
    "mounting a fresh /proc",
];

/// Whether this process may give guests their own PID and mount namespaces
/// with a fresh `/proc`: tried for real in a throw-away child (the same
/// calls the launcher makes). `Err` says which step failed and why.
pub fn namespace_support() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root: new PID and mount namespaces need CAP_SYS_ADMIN".to_string());
    }
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    let [rfd, wfd] = fds;
    // SAFETY: the child makes only raw async-signal-safe calls on stack
    // data and exits with _exit; the daemon may be multi-threaded.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: see above.
        unsafe { probe_child(wfd) }
    }
    // SAFETY: closing our copy of the write end; reading into a stack array.
    let (n, buf) = unsafe {
        libc::close(wfd);
        let mut buf = [0u8; 8];
        let n = if child > 0 {
            libc::read(rfd, buf.as_mut_ptr().cast(), buf.len())
        } else {
            -1
        };
        libc::close(rfd);
        (n, buf)
    };
    if child < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    while unsafe { libc::waitpid(child, &mut status, 0) } < 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {}
    if n == 8 {
        let step = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        let errno = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
        let what = STEPS.get(step).copied().unwrap_or("namespace probe");
        return Err(format!(
            "{what}: {}",
            std::io::Error::from_raw_os_error(errno)
        ));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(format!("namespace probe ended with status {status:#x}"))
    }
}

/// Report (step, errno) on `fd` and exit 1.
///
/// # Safety
/// Forked child only.
unsafe fn probe_fail(fd: i32, step: u32) -> ! {
    // SAFETY: raw calls on stack data.
    unsafe {
        let errno = *libc::__errno_location();
        let mut buf = [0u8; 8];
        buf[..4].copy_from_slice(&step.to_ne_bytes());
        buf[4..].copy_from_slice(&errno.to_ne_bytes());
        libc::write(fd, buf.as_ptr().cast(), buf.len());
        libc::_exit(1)
    }
}

/// # Safety
/// Forked child only: async-signal-safe calls, ends in `_exit`.
unsafe fn probe_child(fd: i32) -> ! {
    // SAFETY: see the function's contract.
    unsafe {
        if libc::unshare(libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWIPC) < 0 {
            probe_fail(fd, 0);
        }
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) < 0
        {
            probe_fail(fd, 1);
        }
        match libc::fork() {
            -1 => probe_fail(fd, 2),
            0 => {
                if libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) < 0
                {
                    probe_fail(fd, 3);
                }
                libc::_exit(0)
            }
            pid => {
                let mut status = 0;
                while libc::waitpid(pid, &mut status, 0) < 0
                    && *libc::__errno_location() == libc::EINTR
                {}
                libc::_exit(if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else {
                    1
                })
            }
        }
    }
}
