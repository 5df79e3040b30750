//! Starting a process as a job's owner on its home station: a DAG's PRE,
//! POST and HOLD scripts and `universe = local`/`scheduler` jobs.
//!
//! The process runs under the owner's uid and every group of theirs
//! (`getgrouplist`), never root's and never a slot account's, like the
//! shadow's file work ([`crate::userfs`]): the daemon forks, and the child,
//! before `exec`, takes a session of its own (`setsid`: no terminal
//! signals reach it, and it can be killed as a group), joins its own
//! cgroup when the home has them, drops to the owner (`setgroups`,
//! `setgid`, `setuid`, `PR_SET_NO_NEW_PRIVS`), then changes to its working
//! directory as the owner (so the owner's own permissions decide) with
//! umask 022. Only async-signal-safe calls run after the fork. The
//! environment is exactly what the caller gives.

use crate::isolation::GuestCgroup;
use crate::userfs::UnixUser;
use std::ffi::{CString, OsString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::Stdio;

/// What to start.
pub struct UserProc {
    /// The program (absolute, or relative to `cwd`).
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The complete environment.
    pub env: Vec<(OsString, OsString)>,
    /// Absolute working directory, entered as the owner.
    pub cwd: PathBuf,
    /// `None`: the daemon's own identity (a daemon that is not root can
    /// only run its own user's processes).
    pub user: Option<UnixUser>,
    pub stdin: Stdio,
    pub stdout: Stdio,
    pub stderr: Stdio,
}

/// Why a process did not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("refusing to run a process as root")]
    Root,
    #[error("{0:?} holds a NUL byte")]
    Nul(String),
    #[error("cannot start {program}: {source}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot join the process's cgroup: {0}")]
    Cgroup(String),
}

fn cstr(s: &std::ffi::OsStr) -> Result<CString, SpawnError> {
    CString::new(s.as_bytes()).map_err(|_| SpawnError::Nul(s.to_string_lossy().into_owned()))
}

/// Starts `p`, inside `cgroup` if given. The child is a tokio child: its
/// exit can be awaited.
pub fn spawn(
    p: UserProc,
    cgroup: Option<&GuestCgroup>,
) -> Result<tokio::process::Child, SpawnError> {
    let daemon_root = nix::unistd::geteuid().is_root();
    if let Some(u) = &p.user
        && u.uid == 0
    {
        return Err(SpawnError::Root);
    }
    // A non-root daemon cannot change identity: it runs its own user's
    // processes only (the home serves only that user then).
    let ids: Option<(u32, u32, Vec<libc::gid_t>)> = match (&p.user, daemon_root) {
        (Some(u), true) => Some((u.uid, u.gid, u.groups.clone())),
        (None, true) => return Err(SpawnError::Root),
        _ => None,
    };
    // Pre-opened: nothing allocates or looks a path up after the fork.
    let procs: Vec<File> = match cgroup {
        Some(g) => g
            .procs_files()
            .iter()
            .map(|f| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_CLOEXEC)
                    .open(f)
                    .map_err(|e| SpawnError::Cgroup(format!("{}: {e}", f.display())))
            })
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let fds: Vec<i32> = procs.iter().map(|f| f.as_raw_fd()).collect();
    let cwd = cstr(p.cwd.as_os_str())?;
    let mut cmd = tokio::process::Command::new(&p.program);
    cmd.args(&p.args)
        .env_clear()
        .envs(p.env.iter().map(|(k, v)| (k, v)))
        .stdin(p.stdin)
        .stdout(p.stdout)
        .stderr(p.stderr)
        .kill_on_drop(false);
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe functions (setsid, write, setgroups, setgid,
    // setuid, prctl, chdir, umask) on data prepared before the fork; it
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            for &fd in &fds {
                let zero = b"0";
                if libc::write(fd, zero.as_ptr().cast(), zero.len()) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some((uid, gid, groups)) = &ids {
                if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                    || libc::setgid(*gid) != 0
                    || libc::setuid(*uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                // Never back to root.
                if libc::setuid(0) == 0 {
                    return Err(std::io::Error::from_raw_os_error(libc::EPERM));
                }
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::chdir(cwd.as_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::umask(0o022);
            Ok(())
        });
    }
    cmd.spawn().map_err(|source| SpawnError::Start {
        program: p.program.display().to_string(),
        source,
    })
}

/// Kills a started process's whole session (its process group, which
/// `setsid` made the child's own).
pub fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid)
        && pid > 1
    {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}
