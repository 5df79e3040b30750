//! Starting a guest process.
//!
//! Everything that must hold from the guest's first instruction happens in
//! the forked child before `exec` (`pre_exec`), in this order:
//!
//! 1. `setsid()`: own session and process group, no controlling terminal,
//!    so terminal signals of the owner never reach it.
//! 2. join the guest cgroup in every hierarchy by writing `0` ("this
//!    process") to pre-opened `cgroup.procs` descriptors: a guest never runs
//!    outside its limits, and its children inherit the group.
//! 3. `SCHED_IDLE` when lingering (Ryu & Hollingsworth L54: owner processes
//!    may starve the guest; platform.md §1.3 measured 411 vs 1 ticks), and
//!    nice 19 on the session's autogroup, without which SCHED_IDLE is moot
//!    after `setsid` for a guest outside any cpu cgroup. Per-task SCHED_IDLE
//!    only ranks tasks within one task group: the cgroup's `cpu.idle` (on
//!    the guests' parent, see `CgroupConfig::parent_idle`) is the real
//!    protection; this is the second line.
//! 4. optional PID namespace: `unshare(CLONE_NEWPID)` then `fork()`; the
//!    grandchild is PID 1 of the new namespace and execs the program, the
//!    intermediate child closes every descriptor and only waits and relays
//!    the exit status (what `unshare --pid --fork` does). Own PID namespace
//!    makes CRIU restores PID-clash-free (platform.md §2.3); `setsid` is
//!    repeated inside the namespace because CRIU refuses a session leader
//!    outside it. The namespace init ignores SIGTERM from outside (platform
//!    §2.3): stop guests through the cgroup (`cgroup.kill`/SIGKILL).
//!    `/proc` is not remounted (no mount namespace), so tools inside still
//!    see the host's `/proc`.
//! 5. drop privileges: `setgroups([gid])`, `setgid`, `setuid`.
//!
//! Only async-signal-safe calls (raw libc) run after the fork: the daemon is
//! multi-threaded. The working directory is the sandbox (mode 0700, owned by
//! the guest user), the environment is exactly what the caller gives.

use super::{GuestCgroup, IsolationError};
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// The unprivileged identity a guest runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestUser {
    pub uid: u32,
    pub gid: u32,
}

impl GuestUser {
    /// Look a user up by name (its primary group is used).
    pub fn lookup(name: &str) -> Result<Self, IsolationError> {
        match nix::unistd::User::from_name(name) {
            Ok(Some(u)) => Ok(GuestUser {
                uid: u.uid.as_raw(),
                gid: u.gid.as_raw(),
            }),
            _ => Err(IsolationError::NoSuchUser(name.to_string())),
        }
    }
}

/// What to start.
pub struct GuestSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The complete environment; nothing is inherited from the daemon.
    pub env: Vec<(OsString, OsString)>,
    /// `None` keeps the daemon's identity (tests without root).
    pub user: Option<GuestUser>,
    /// Working directory, created if needed, mode 0700, owned by the user.
    pub sandbox: PathBuf,
    pub sched_idle: bool,
    pub pid_namespace: bool,
    pub stdin: Stdio,
    pub stdout: Stdio,
    pub stderr: Stdio,
}

impl GuestSpec {
    pub fn new(program: impl Into<PathBuf>, sandbox: impl Into<PathBuf>) -> Self {
        GuestSpec {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            user: None,
            sandbox: sandbox.into(),
            sched_idle: false,
            pid_namespace: false,
            stdin: Stdio::null(),
            stdout: Stdio::null(),
            stderr: Stdio::null(),
        }
    }

    pub fn arg(mut self, a: impl Into<OsString>) -> Self {
        self.args.push(a.into());
        self
    }

    pub fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
}

/// A started guest. With a PID namespace, `pid()` is the intermediate
/// waiter in the daemon's namespace; the guest program is its only child.
#[derive(Debug)]
pub struct GuestProcess {
    pub child: Child,
}

impl GuestProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait()
    }
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }
}

/// Starts guests (stateless; a type so the daemon can hold its policy).
#[derive(Clone, Debug, Default)]
pub struct GuestLauncher;

/// Create the sandbox directory: mode 0700, owned by the guest. Refuses a
/// symlink in its place (a guest could point it anywhere).
pub fn prepare_sandbox(dir: &Path, user: Option<GuestUser>) -> Result<(), IsolationError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => {
            return Err(IsolationError::io(
                dir,
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "sandbox exists and is not a plain directory",
                ),
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Ancestors get the default mode (the guest must be able to
            // reach its own sandbox by absolute path); only the sandbox is
            // private.
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent).map_err(|e| IsolationError::io(parent, e))?;
            }
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(|e| IsolationError::io(dir, e))?;
        }
        Err(e) => return Err(IsolationError::io(dir, e)),
    }
    // chown/chmod through a descriptor opened with O_NOFOLLOW: a guest that
    // swapped its old sandbox for a symlink (to /etc, say) between the check
    // above and here must not get the target chowned to it. The sandboxes'
    // parent directory must not be writable by guests.
    let d = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| IsolationError::io(dir, e))?;
    if let Some(u) = user {
        std::os::unix::fs::fchown(&d, Some(u.uid), Some(u.gid))
            .map_err(|e| IsolationError::io(dir, e))?;
    }
    d.set_permissions(std::fs::Permissions::from_mode(0o700))
        .map_err(|e| IsolationError::io(dir, e))
}

fn last_err() -> std::io::Error {
    std::io::Error::last_os_error()
}

impl GuestLauncher {
    pub fn new() -> Self {
        GuestLauncher
    }

    /// Start `spec`, inside `cgroup` if given (create it first).
    pub fn spawn(
        &self,
        spec: GuestSpec,
        cgroup: Option<&GuestCgroup>,
    ) -> Result<GuestProcess, IsolationError> {
        prepare_sandbox(&spec.sandbox, spec.user)?;
        // Opened here, written in the child: no allocation or path lookup
        // after fork, and O_CLOEXEC keeps them out of the guest.
        let procs: Vec<File> = match cgroup {
            Some(g) => g
                .procs_files()
                .iter()
                .map(|p| {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_CLOEXEC)
                        .open(p)
                        .map_err(|e| IsolationError::io(p, e))
                })
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let fds: Vec<i32> = procs.iter().map(|f| f.as_raw_fd()).collect();
        let user = spec.user;
        let sched_idle = spec.sched_idle;
        let pid_ns = spec.pid_namespace;

        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.sandbox)
            .stdin(spec.stdin)
            .stdout(spec.stdout)
            .stderr(spec.stderr);
        let hook = move || -> std::io::Result<()> {
            // SAFETY: runs in the forked child before exec; only
            // async-signal-safe libc calls, on stack data and descriptors
            // opened by the parent; no allocation.
            unsafe {
                if libc::setsid() < 0 {
                    return Err(last_err());
                }
                for &fd in &fds {
                    if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(last_err());
                    }
                }
                if sched_idle {
                    let p = libc::sched_param { sched_priority: 0 };
                    if libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) < 0 {
                        return Err(last_err());
                    }
                    // With autogroup (sched(7)), a task left in the root cpu
                    // cgroup gets a task group per session, and setsid()
                    // above made a new one: SCHED_IDLE would then only rank
                    // the guest against itself while its group competes with
                    // the owner's session at full weight (measured 50/50).
                    // Nice 19 on the autogroup lowers the group to weight 15
                    // (≈1.5 %). Absent when autogroup is off or compiled out.
                    let fd = libc::open(
                        c"/proc/self/autogroup".as_ptr(),
                        libc::O_WRONLY | libc::O_CLOEXEC,
                    );
                    if fd >= 0 {
                        libc::write(fd, b"19".as_ptr().cast(), 2);
                        libc::close(fd);
                    }
                }
                if pid_ns && libc::unshare(libc::CLONE_NEWPID) < 0 {
                    return Err(last_err());
                }
                if let Some(u) = user {
                    let gid: libc::gid_t = u.gid;
                    if libc::setgroups(1, &gid) < 0
                        || libc::setgid(u.gid) < 0
                        || libc::setuid(u.uid) < 0
                    {
                        return Err(last_err());
                    }
                }
                if pid_ns {
                    match libc::fork() {
                        -1 => return Err(last_err()),
                        0 => {
                            // PID 1 of the new namespace: die with the
                            // waiter so the namespace never outlives it.
                            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                            if libc::setsid() < 0 {
                                return Err(last_err());
                            }
                        }
                        child => {
                            // Close everything, including std's exec-status
                            // pipe: the parent then learns the outcome from
                            // the grandchild's exec alone.
                            libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
                            let mut status = 0;
                            loop {
                                let r = libc::waitpid(child, &mut status, 0);
                                if r == child {
                                    break;
                                }
                                if r < 0 && *libc::__errno_location() != libc::EINTR {
                                    libc::_exit(127);
                                }
                            }
                            let code = if libc::WIFEXITED(status) {
                                libc::WEXITSTATUS(status)
                            } else {
                                128 + libc::WTERMSIG(status)
                            };
                            libc::_exit(code);
                        }
                    }
                }
            }
            Ok(())
        };
        // SAFETY: the hook only makes async-signal-safe calls (see above).
        unsafe {
            cmd.pre_exec(hook);
        }
        let child = cmd.spawn().map_err(|source| IsolationError::Spawn {
            program: spec.program.clone(),
            source,
        })?;
        drop(procs);
        tracing::info!(pid = child.id(), program = %spec.program.display(), sched_idle, pid_ns, "guest started");
        Ok(GuestProcess { child })
    }
}
