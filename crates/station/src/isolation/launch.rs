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
//! 3. `SCHED_IDLE` (Ryu & Hollingsworth L54: owner processes may starve
//!    the guest; platform.md §1.3 measured 411 vs 1 ticks), and nice 19 on
//!    the session's autogroup, without which SCHED_IDLE is moot after
//!    `setsid` for a guest outside any cpu cgroup. Per-task SCHED_IDLE only
//!    ranks tasks within one task group: the cgroup's `cpu.idle` (on the
//!    guests' parent, see `CgroupConfig::parent_idle`) is the real
//!    protection; this is the second line. With [`GuestSpec::sched_idle`]
//!    only while lingering; under a [`Confinement`] always, with per-task
//!    nice 19 and zero `RLIMIT_NICE`/`RLIMIT_RTPRIO` so the guest cannot
//!    climb back (issue 12: idle priority at all times); then umask 077.
//! 4. optional PID namespace: `unshare(CLONE_NEWPID)` then `fork()`; the
//!    grandchild is PID 1 of the new namespace and execs the program, the
//!    intermediate child (the waiter) drops to the guest user too, closes
//!    every descriptor but the daemon's lifeline and only waits and relays
//!    the exit status (what `unshare --pid --fork` does). When the daemon
//!    dies, however it dies (SIGKILL included), the lifeline reads
//!    end-of-file and the waiter kills the namespace's first process,
//!    which takes the whole namespace with it: a guest never runs on
//!    unsupervised, past its owner's return, nor finishes unseen while its
//!    job is requeued (HTCondor's starter likewise takes its job with it). Own PID namespace makes CRIU restores
//!    PID-clash-free (platform.md §2.3); `setsid` is repeated inside the
//!    namespace because CRIU refuses a session leader outside it. The
//!    namespace init ignores SIGTERM from outside (platform §2.3): stop
//!    guests through the cgroup (`cgroup.kill`/SIGKILL) or by uid
//!    (`reap.rs`). Under a [`Confinement`] with namespaces the same
//!    `unshare` also makes a mount namespace (`CLONE_NEWNS`) and an IPC
//!    namespace (`CLONE_NEWIPC`: SysV IPC, POSIX message queues), every mount
//!    is made private (`MS_REC|MS_PRIVATE` on `/`) and the namespace's
//!    first process mounts a fresh `/proc` (nosuid, nodev, noexec) before
//!    it drops root: the guest sees only its own processes. Without it
//!    (`GuestSpec::pid_namespace` alone) `/proc` is the host's. With
//!    [`Confinement::private_tmp`], a fresh tmpfs is mounted on `/tmp`,
//!    `/var/tmp` and `/dev/shm` right after the mounts are made private
//!    (each that exists and holds neither the sandbox nor the program).
//!    Under a [`Confinement`] with a [`GuestView`](super::GuestView) the
//!    guest gets a root of its own instead (`view.rs`, carried out by
//!    `view_exec.rs` between the private remount and the fork), and with a
//!    network namespace ([`GuestSpec::netns`], `netns.rs`) it joins that
//!    namespace first (`setns`). Under a [`Confinement`], a guest with a
//!    slot account also gets `RLIMIT_NPROC`
//!    ([`Confinement::max_processes`]) before it drops root, and every
//!    confined guest `IOPRIO_CLASS_IDLE` with the idle CPU priority.
//! 5. drop privileges: `setgroups(0)` (no supplementary groups; a CRIU
//!    job keeps its own gid as the only one, see `checkpoint.rs` `Criu`),
//!    `setgid`, `setuid`; then `PR_SET_NO_NEW_PRIVS`, so that no set-id program or
//!    file capability gives a guest more than it started with (CRIU's
//!    restorer also needs it to restore a guest on hosts whose bounding
//!    set lacks capabilities it cannot drop without `CAP_SETPCAP`). In a
//!    PID namespace this happens after the fork, in both processes, since
//!    the fresh `/proc` needs root. Last, a confined guest that is not a
//!    CRIU job gets its seccomp filter (`seccomp.rs`: no `ioprio_set`, no
//!    keyrings).
//!
//! CRIU jobs are started with a reaper ([`GuestSpec::reaper`]) and never
//! get namespaces, under a [`Confinement`] either (see `confine.rs`): the
//! forked child becomes a child subreaper and forks again; the grandchild
//! (in a session of its own, so that CRIU can dump it) goes on with step 5
//! and execs the job, and the child waits for it, then reaps for a
//! moment whatever else of the tree is left. A dump kills the whole tree at
//! once; without the reaper the job's children would be re-parented to
//! init, and a pid 1 that does not reap (as on the development VMs) would
//! keep their PIDs, which a restore needs again.
//!
//! A CRIU restore ([`GuestSpec::restore_pidfile`]) is the same with CRIU as
//! the grandchild: `criu restore --restore-detached` (which drops to the
//! guest user itself, through `setpriv`). The child waits first for CRIU,
//! then, with the restored root's PID read from CRIU's pidfile, for the
//! restored job, which CRIU's exit re-parents to it. The child's exit
//! status is then the job's, as for a normal start.
//!
//! Only async-signal-safe calls (raw libc) run after the fork: the daemon is
//! multi-threaded. The working directory is the sandbox (mode 0700, owned by
//! the guest user), the environment is exactly what the caller gives.

use super::view::Dns;
use super::view_exec::{Failure, MountPlan};
use super::{Confinement, GuestCgroup, IsolationError, prepare_sandbox};
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
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
    /// An identity that stands for guests in reachability checks
    /// ([`super::unreachable_by`]) made before a station runs: as root, the
    /// named user (`nobody` by default), which, as every slot account,
    /// gets only the "other" permissions of the daemon's directories;
    /// otherwise the daemon's own identity (`None`). Guests themselves run
    /// as slot accounts ([`super::SlotPool`]), never as this user.
    pub fn for_daemon(name: Option<&str>) -> Result<Option<Self>, IsolationError> {
        if nix::unistd::geteuid().is_root() {
            Ok(Some(GuestUser::lookup(name.unwrap_or("nobody"))?))
        } else {
            Ok(None)
        }
    }

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
    /// `PR_SET_NO_NEW_PRIVS` before exec (default; off only for the CRIU
    /// restorer, which needs its ambient capability).
    pub no_new_privs: bool,
    /// A waiter that is a child subreaper runs the job as its child and
    /// reaps the job's orphans (see the module comment); needs no PID
    /// namespace. [`GuestProcess::job_pid`] finds the job.
    pub reaper: bool,
    /// The program is a detached `criu restore` writing the restored
    /// root's PID here: the launcher reaps the restored job (implies
    /// `reaper`). `user` must then be `None`: CRIU drops privileges itself.
    pub restore_pidfile: Option<PathBuf>,
    /// A network namespace to join (`netns.rs`), with a view only: the
    /// descriptor must stay open until the spawn returns.
    pub netns: Option<RawFd>,
    /// Volumes the job asked for (`view.rs`, `+WantVolumes`).
    pub volumes: Vec<String>,
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
            no_new_privs: true,
            reaper: false,
            restore_pidfile: None,
            netns: None,
            volumes: Vec::new(),
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

/// A started guest. With a PID namespace or a reaper, `pid()` is the
/// intermediate waiter; the guest program is its only child.
#[derive(Debug)]
pub struct GuestProcess {
    pub child: Child,
    reaper: bool,
    /// Own PID and mount namespaces with a fresh `/proc`.
    namespaces: bool,
}

impl GuestProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The job's own PID: `pid()`, or with a reaper the waiter's child
    /// (`None` until it is forked or once it is gone).
    pub fn job_pid(&self) -> Option<u32> {
        if !self.reaper {
            return Some(self.pid());
        }
        let p = self.pid();
        std::fs::read_to_string(format!("/proc/{p}/task/{p}/children"))
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }
    /// Whether the guest got its own PID and mount namespaces with a
    /// fresh `/proc` ([`GuestLauncher::spawn_confined`]).
    pub fn has_namespaces(&self) -> bool {
        self.namespaces
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

fn last_err() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Exit code of a wait status, as a shell reports it.
fn status_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}

/// The forked child of a reaped start (a child subreaper). With a
/// `pidfile`, `child` is a detached CRIU restore: wait for it and read the
/// restored root's PID from the pidfile (if CRIU failed or left none, exit
/// with CRIU's status; the starter tells the two apart by the pidfile);
/// else `child` is the job. Wait for the job, reaping any other orphan on
/// the way; then, for at most 200 ms, reap what else of the tree dies
/// (a CRIU dump kills it all at once); exit with the job's status.
/// Async-signal-safe calls only.
///
/// # Safety
/// Runs in a forked child of a multi-threaded process; `pidfile` must be
/// null or a valid NUL-terminated path.
unsafe fn reap_waiter(child: libc::pid_t, pidfile: *const libc::c_char) -> ! {
    // SAFETY: raw syscalls on stack data; see the function's contract.
    unsafe {
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
        let mut status = 0;
        let mut root = child;
        if !pidfile.is_null() {
            let criu_status = loop {
                let r = libc::waitpid(child, &mut status, 0);
                if r == child {
                    break status;
                }
                if r < 0 && *libc::__errno_location() != libc::EINTR {
                    libc::_exit(127);
                }
            };
            root = 0;
            let fd = libc::open(pidfile, libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW);
            if fd >= 0 {
                let mut buf = [0u8; 24];
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                libc::close(fd);
                let mut i = 0;
                while n > 0 && i < n as usize && buf[i].is_ascii_digit() {
                    root = root
                        .saturating_mul(10)
                        .saturating_add(libc::pid_t::from(buf[i] - b'0'));
                    i += 1;
                }
            }
            if root <= 0 || !(libc::WIFEXITED(criu_status) && libc::WEXITSTATUS(criu_status) == 0) {
                // CRIU may have written the pidfile before it failed: the
                // starter reads a missing pidfile as a failed restore.
                libc::unlink(pidfile);
                libc::_exit(status_code(criu_status).max(1));
            }
        }
        let code = loop {
            let r = libc::waitpid(-1, &mut status, 0);
            if r == root {
                break status_code(status);
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                // The root was not ours (CRIU re-parented it elsewhere):
                // nothing left to wait for.
                libc::_exit(127);
            }
        };
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 10_000_000,
        };
        for _ in 0..20 {
            loop {
                let r = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if r > 0 {
                    continue;
                }
                if r < 0 {
                    // No child left.
                    libc::_exit(code);
                }
                break;
            }
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        libc::_exit(code)
    }
}

/// What the forked child does, decided before the fork (no allocation
/// afterwards).
#[derive(Clone, Copy)]
struct ChildPlan {
    user: Option<GuestUser>,
    sched_idle: bool,
    /// Nice 19 and zero `RLIMIT_NICE`/`RLIMIT_RTPRIO` (confined guests).
    pinned_idle: bool,
    umask: Option<libc::mode_t>,
    reaper: bool,
    pid_ns: bool,
    /// With `pid_ns`: private mounts and a fresh `/proc`.
    mount_ns: bool,
    /// With `mount_ns`: which of [`PRIVATE_TMP`] get a fresh tmpfs (bit i
    /// for entry i).
    private_tmp: u8,
    /// `RLIMIT_NPROC` (soft and hard) before dropping to `user`.
    max_processes: Option<libc::rlim_t>,
    no_new_privs: bool,
    /// With `pid_ns`: the read end of [`lifeline`] (-1: none).
    lifeline: i32,
    /// `IOPRIO_CLASS_IDLE` (confined guests).
    io_idle: bool,
    /// A network namespace to join before the others (-1: none).
    netns: i32,
    /// Where a failed view step is reported (-1: nowhere).
    err_fd: i32,
}

/// The read end of a pipe whose write end this daemon alone keeps open
/// (both close-on-exec, so no program it starts inherits them): it reads
/// end-of-file only once the daemon is gone. `None` if no pipe could be
/// made (guests then outlive a crash until the next start kills them,
/// `host::leftovers`).
pub(crate) fn lifeline() -> Option<i32> {
    use std::os::fd::{FromRawFd, OwnedFd};
    static LIFELINE: std::sync::OnceLock<Option<(OwnedFd, OwnedFd)>> = std::sync::OnceLock::new();
    LIFELINE
        .get_or_init(|| {
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills the two-element array.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
                tracing::warn!(error = %std::io::Error::last_os_error(),
                    "no lifeline pipe: a guest may outlive a crash of this daemon until its restart");
                return None;
            }
            // SAFETY: two fresh descriptors, owned from here on.
            Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
        })
        .as_ref()
        .map(|(read, _)| read.as_raw_fd())
}

/// `ioprio_set`'s "this process" and the idle class (`IOPRIO_CLASS_IDLE`
/// << 13, level 0).
const IOPRIO_WHO_PROCESS: libc::c_long = 1;
const IOPRIO_IDLE: libc::c_long = 3 << 13;

/// The shared scratch directories a confined guest gets a private tmpfs
/// on (`confine.rs`), as C strings for the forked child.
const PRIVATE_TMP: [&std::ffi::CStr; 3] = [c"/tmp", c"/var/tmp", c"/dev/shm"];

/// Which of [`PRIVATE_TMP`] may get a fresh tmpfs for a guest whose
/// sandbox and program are these: those that exist as directories and
/// hold neither (mounting over them would hide the guest's own files).
fn private_tmp_mask(sandbox: &Path, program: &Path) -> u8 {
    let mut mask = 0u8;
    for (i, dir) in PRIVATE_TMP.iter().enumerate() {
        let dir = Path::new(std::ffi::OsStr::from_bytes(dir.to_bytes()));
        let covers = |p: &Path| p.is_absolute() && p.starts_with(dir);
        let is_dir = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
        if is_dir && !covers(sandbox) && !covers(program) {
            mask |= 1 << i;
        } else {
            tracing::debug!(dir = %dir.display(), "no private tmpfs here for this guest");
        }
    }
    mask
}

/// Give up root for `u`: supplementary groups first (none at all, or with
/// `own_group` just the user's own primary group, which grants nothing
/// more), then gid, then uid (last: it drops the capabilities the others
/// need).
///
/// # Safety
/// Forked child only (async-signal-safe calls).
unsafe fn drop_to(u: GuestUser, own_group: bool) -> std::io::Result<()> {
    // SAFETY: plain syscalls on stack data.
    unsafe {
        let gid: libc::gid_t = u.gid;
        let r = if own_group {
            libc::setgroups(1, &gid)
        } else {
            libc::setgroups(0, std::ptr::null())
        };
        if r < 0 || libc::setgid(u.gid) < 0 || libc::setuid(u.uid) < 0 {
            return Err(last_err());
        }
    }
    Ok(())
}

/// The waiter of a PID namespace: wait for `child` (the namespace's first
/// process) and exit with its status. Closes every descriptor first but
/// `lifeline`, including std's exec-status pipe: the parent then learns
/// the outcome from the grandchild's exec alone. Kills `child` when the
/// lifeline reads end-of-file (the daemon died).
///
/// # Safety
/// Forked child only.
unsafe fn ns_waiter(child: libc::pid_t, user: Option<GuestUser>, lifeline: i32) -> ! {
    // SAFETY: raw syscalls on stack data.
    unsafe {
        if let Some(u) = user
            && drop_to(u, false).is_err()
        {
            libc::kill(child, libc::SIGKILL);
            libc::_exit(127);
        }
        match u32::try_from(lifeline) {
            Ok(keep) => {
                if keep > 0 {
                    libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
                }
                libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
                watch_lifeline(child, lifeline);
            }
            Err(_) => {
                libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
            }
        }
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
        libc::_exit(status_code(status))
    }
}

/// Returns when `child` has exited or, once the lifeline reads
/// end-of-file, has been sent SIGKILL (its exit is then waited for by the
/// caller). Returns at once without a pidfd (kernels before 5.3): the
/// waiter then only waits, as before.
///
/// # Safety
/// Forked child only.
unsafe fn watch_lifeline(child: libc::pid_t, lifeline: i32) {
    // SAFETY: raw syscalls on stack data.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, child, 0u32);
        let Ok(pidfd) = i32::try_from(pidfd) else {
            return;
        };
        if pidfd < 0 {
            return;
        }
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: lifeline,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            if libc::poll(fds.as_mut_ptr(), 2, -1) < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                return;
            }
            if fds[0].revents != 0 {
                return;
            }
            if fds[1].revents != 0 {
                libc::kill(child, libc::SIGKILL);
                return;
            }
        }
    }
}

/// The `pre_exec` hook: steps 1–5 of the module comment.
///
/// # Safety
/// Forked child only: async-signal-safe calls on stack data and on
/// descriptors the parent opened; `pidfile` null or a valid C string.
unsafe fn child_setup(
    plan: ChildPlan,
    procs: &[i32],
    pidfile: *const libc::c_char,
    view: Option<&MountPlan>,
    filter: Option<&[seccompiler::sock_filter]>,
) -> std::io::Result<()> {
    // SAFETY: see the function's contract.
    unsafe {
        if libc::setsid() < 0 {
            return Err(last_err());
        }
        for &fd in procs {
            if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                return Err(last_err());
            }
        }
        if plan.sched_idle {
            let p = libc::sched_param { sched_priority: 0 };
            if libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) < 0 {
                return Err(last_err());
            }
            // With autogroup (sched(7)), a task left in the root cpu
            // cgroup gets a task group per session, and setsid() above
            // made a new one: SCHED_IDLE would then only rank the guest
            // against itself while its group competes with the owner's
            // session at full weight (measured 50/50). Nice 19 on the
            // autogroup lowers the group to weight 15 (≈1.5 %). Absent
            // when autogroup is off or compiled out.
            let fd = libc::open(
                c"/proc/self/autogroup".as_ptr(),
                libc::O_WRONLY | libc::O_CLOEXEC,
            );
            if fd >= 0 {
                libc::write(fd, b"19".as_ptr().cast(), 2);
                libc::close(fd);
            }
        }
        if plan.pinned_idle {
            // Idle at all times (issue 12): nice 19 as well, and no way
            // back. Leaving SCHED_IDLE or lowering nice needs room under
            // RLIMIT_NICE (sched(7)), which the daemon's own limits might
            // give; RT policies need RLIMIT_RTPRIO.
            if libc::setpriority(libc::PRIO_PROCESS, 0, 19) < 0 {
                return Err(last_err());
            }
            let zero = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_NICE, &zero) < 0
                || libc::setrlimit(libc::RLIMIT_RTPRIO, &zero) < 0
            {
                return Err(last_err());
            }
        }
        if plan.io_idle
            && libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_IDLE) < 0
        {
            return Err(last_err());
        }
        if let (Some(max), Some(_)) = (plan.max_processes, plan.user) {
            // Counted per real uid, which only this guest has (slots.rs),
            // checked at every fork and clone of the guest's tree.
            let lim = libc::rlimit {
                rlim_cur: max,
                rlim_max: max,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &lim) < 0 {
                return Err(last_err());
            }
        }
        if let Some(m) = plan.umask {
            libc::umask(m);
        }
        if plan.reaper {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
            match libc::fork() {
                -1 => return Err(last_err()),
                // The grandchild goes on to exec the job (in a session of
                // its own: CRIU dumps whole sessions) or CRIU (which
                // restores the job's session).
                0 => {
                    if pidfile.is_null() && libc::setsid() < 0 {
                        return Err(last_err());
                    }
                }
                child => reap_waiter(child, pidfile),
            }
        }
        if !plan.pid_ns {
            if let Some(u) = plan.user {
                // A CRIU job keeps its own gid as the one supplementary
                // group: `Criu` restores it with `setpriv --groups=<gid>`,
                // and CRIU's restorer (without CAP_SETGID) needs the groups
                // to match the dump's.
                drop_to(u, plan.reaper)?;
            }
            if plan.no_new_privs && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 {
                return Err(last_err());
            }
            if let Some(f) = filter {
                super::seccomp::install(f)?;
            }
            return Ok(());
        }
        // The network first: the namespaces made below are then of a
        // process already in it.
        if plan.netns >= 0 && libc::setns(plan.netns, libc::CLONE_NEWNET) < 0 {
            return Err(last_err());
        }
        // With the mount namespace comes an IPC namespace: SysV IPC objects
        // and POSIX message queues of other guests and of the owner are out
        // of reach as well.
        let flags = libc::CLONE_NEWPID
            | if plan.mount_ns {
                libc::CLONE_NEWNS | libc::CLONE_NEWIPC
            } else {
                0
            };
        if libc::unshare(flags) < 0 {
            return Err(last_err());
        }
        // Private first, so that the /proc below (and anything the guest
        // could mount) never propagates to the host's namespace.
        if plan.mount_ns
            && libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) < 0
        {
            return Err(last_err());
        }
        if let Some(v) = view {
            if let Err(f) = v.enter() {
                if plan.err_fd >= 0 {
                    let mut buf = [0u8; 8];
                    buf[..4].copy_from_slice(&f.step.to_ne_bytes());
                    buf[4..].copy_from_slice(&f.errno.to_ne_bytes());
                    libc::write(plan.err_fd, buf.as_ptr().cast(), buf.len());
                }
                return Err(std::io::Error::from_raw_os_error(f.errno));
            }
        } else if plan.mount_ns {
            for (i, dir) in PRIVATE_TMP.iter().enumerate() {
                if plan.private_tmp & (1 << i) != 0
                    && libc::mount(
                        c"tmpfs".as_ptr(),
                        dir.as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV,
                        c"mode=1777".as_ptr().cast(),
                    ) < 0
                {
                    return Err(last_err());
                }
            }
        }
        match libc::fork() {
            -1 => return Err(last_err()),
            0 => {}
            child => ns_waiter(child, plan.user, plan.lifeline),
        }
        // PID 1 of the new namespace. A /proc of this namespace can only be
        // mounted from inside it, and only while still root.
        if plan.mount_ns
            && libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) < 0
        {
            return Err(last_err());
        }
        if let Some(u) = plan.user {
            drop_to(u, false)?;
        }
        if plan.no_new_privs && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 {
            return Err(last_err());
        }
        if let Some(f) = filter {
            super::seccomp::install(f)?;
        }
        // Die with the waiter so the namespace never outlives it. Set after
        // the uid change, which clears it (prctl(2)).
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::setsid() < 0 {
            return Err(last_err());
        }
    }
    Ok(())
}

/// A pipe for the child to report a failed view step on.
fn error_pipe() -> Result<(File, File), IsolationError> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
        return Err(IsolationError::io(Path::new("pipe"), last_err()));
    }
    // SAFETY: two fresh descriptors, owned from here on.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// The failure the child wrote, if it wrote one.
fn read_failure(mut r: File, w: File) -> Option<Failure> {
    use std::io::Read;
    drop(w);
    let mut buf = [0u8; 8];
    r.read_exact(&mut buf).ok()?;
    Some(Failure {
        step: u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]),
        errno: i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]),
    })
}

fn invalid(path: &Path, why: &'static str) -> IsolationError {
    IsolationError::io(
        path,
        std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
    )
}

impl GuestLauncher {
    pub fn new() -> Self {
        GuestLauncher
    }

    /// Start `spec`, inside `cgroup` if given (create it first). Only what
    /// `spec` says: see [`GuestLauncher::spawn_confined`] for the
    /// station-wide policy of issue 12.
    pub fn spawn(
        &self,
        spec: GuestSpec,
        cgroup: Option<&GuestCgroup>,
    ) -> Result<GuestProcess, IsolationError> {
        self.start(spec, cgroup, None)
    }

    /// Start `spec` under `policy` as well: idle priority whatever
    /// `spec.sched_idle` says, PID and mount namespaces with a fresh
    /// `/proc` (except for CRIU jobs, see [`Confinement`]), a private
    /// umask. `spec.user` should be the guest's slot
    /// ([`super::SlotLease::user`]).
    pub fn spawn_confined(
        &self,
        spec: GuestSpec,
        cgroup: Option<&GuestCgroup>,
        policy: &Confinement,
    ) -> Result<GuestProcess, IsolationError> {
        self.start(spec, cgroup, Some(policy))
    }

    fn start(
        &self,
        spec: GuestSpec,
        cgroup: Option<&GuestCgroup>,
        policy: Option<&Confinement>,
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
        let reaper = spec.reaper || spec.restore_pidfile.is_some();
        if reaper && spec.pid_namespace {
            return Err(invalid(
                &spec.sandbox,
                "a reaped guest has no PID namespace",
            ));
        }
        let always_idle = policy.is_some_and(|p| p.always_idle);
        // CRIU jobs (reaped or restored) keep the host's namespaces: see
        // `Confinement`.
        let ns = policy.is_some_and(|p| p.namespaces) && !reaper;
        if policy.is_some_and(|p| p.namespaces) && reaper {
            tracing::debug!(program = %spec.program.display(), "CRIU job: no namespaces");
        }
        if spec.netns.is_some() && !ns {
            return Err(invalid(
                &spec.sandbox,
                "a network namespace of its own needs the guest's other namespaces",
            ));
        }
        // The guest's own root (`view.rs`), planned here, carried out in
        // the child.
        let view = match policy.and_then(|p| p.view.as_ref()).filter(|_| ns) {
            Some(v) => {
                let sandbox = std::fs::canonicalize(&spec.sandbox)
                    .map_err(|e| IsolationError::io(&spec.sandbox, e))?;
                let base = sandbox.parent().unwrap_or(Path::new("/")).to_path_buf();
                let dns = match spec.netns {
                    Some(_) => Dns::At(super::netns::GUEST_DNS),
                    None => Dns::Host,
                };
                Some(v.plan(&base, &sandbox, &spec.volumes, dns)?)
            }
            None => None,
        };
        // Seccomp needs no_new_privs, and a CRIU dump cannot read a filter.
        let filter: Option<seccompiler::BpfProgram> = policy
            .filter(|p| p.seccomp && !reaper && spec.no_new_privs)
            .and_then(|_| super::seccomp::guest_filter().cloned());
        let err_pipe = match &view {
            Some(_) => Some(error_pipe()?),
            None => None,
        };
        let plan = ChildPlan {
            user: spec.user,
            sched_idle: spec.sched_idle || always_idle,
            pinned_idle: always_idle,
            umask: policy.filter(|p| p.private_umask).map(|_| 0o077),
            reaper,
            pid_ns: spec.pid_namespace || ns,
            mount_ns: ns,
            private_tmp: if ns && view.is_none() && policy.is_some_and(|p| p.private_tmp) {
                private_tmp_mask(&spec.sandbox, &spec.program)
            } else {
                0
            },
            max_processes: policy.and_then(|p| p.max_processes),
            no_new_privs: spec.no_new_privs,
            lifeline: if spec.pid_namespace || ns {
                lifeline().unwrap_or(-1)
            } else {
                -1
            },
            io_idle: always_idle,
            netns: spec.netns.unwrap_or(-1),
            err_fd: err_pipe.as_ref().map_or(-1, |(_, w)| w.as_raw_fd()),
        };
        let pidfile = match &spec.restore_pidfile {
            Some(p) => {
                if spec.user.is_some() || plan.pid_ns {
                    return Err(invalid(
                        p,
                        "a CRIU restore drops privileges itself and brings its own namespaces",
                    ));
                }
                Some(
                    std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
                        .map_err(|_| invalid(p, "NUL in the pidfile path"))?,
                )
            }
            None => None,
        };

        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.sandbox)
            .stdin(spec.stdin)
            .stdout(spec.stdout)
            .stderr(spec.stderr);
        let view = view.map(std::sync::Arc::new);
        let child_view = view.clone();
        let hook = move || -> std::io::Result<()> {
            let pf = pidfile.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
            // SAFETY: runs in the forked child before exec (see
            // `child_setup`).
            unsafe { child_setup(plan, &fds, pf, child_view.as_deref(), filter.as_deref()) }
        };
        // SAFETY: the hook only makes async-signal-safe calls (see above).
        unsafe {
            cmd.pre_exec(hook);
        }
        let spawned = cmd.spawn();
        drop(procs);
        let child = match spawned {
            Ok(c) => c,
            Err(source) => {
                // A step of the view failed: the host's trouble, named.
                if let (Some((r, w)), Some(v)) = (err_pipe, &view)
                    && let Some(f) = read_failure(r, w)
                {
                    return Err(IsolationError::View(v.describe_failure(f)));
                }
                return Err(IsolationError::Spawn {
                    program: spec.program.clone(),
                    source,
                });
            }
        };
        if let Some(v) = &view {
            tracing::debug!(pid = child.id(), steps = ?v.describe(), "guest's root");
        }
        tracing::info!(
            pid = child.id(),
            program = %spec.program.display(),
            uid = spec.user.map(|u| u.uid),
            sched_idle = plan.sched_idle,
            pid_ns = plan.pid_ns,
            mount_ns = plan.mount_ns,
            private_tmp = plan.private_tmp,
            own_root = view.is_some(),
            netns = spec.netns.is_some(),
            max_processes = plan.max_processes,
            "guest started"
        );
        Ok(GuestProcess {
            child,
            reaper,
            namespaces: plan.mount_ns,
        })
    }
}
