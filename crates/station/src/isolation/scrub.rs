//! What a slot account still owns after its guest is gone, removed before
//! the slot is leased again: the next guest of that uid (maybe another
//! user's) must find nothing of the last.
//!
//! Once every process of the uid is dead (`reap.rs`), [`Scrubber::scrub`]
//! removes:
//!
//! - its files and directories in every world-writable directory of the
//!   host (`/tmp`, `/var/tmp`, `/dev/shm`, `/run/lock`, … as a scan of the
//!   host's real file systems found them at start, `writable.rs`): a slot
//!   account has no groups but its own and no home, so a world-writable
//!   directory is the only place outside its sandbox it can create
//!   anything (and what it creates there, below). Removed with the slot's
//!   own file system rights (`userfs`: fsuid of the slot, no capabilities),
//!   never following a link;
//! - its SysV shared memory segments, semaphore sets and message queues
//!   (`/proc/sysvipc`), and its POSIX message queues (the `mqueue` file
//!   system, mounted in a private mount namespace of a short-lived thread);
//! - its kernel keyrings (user, user-session and persistent keyrings,
//!   cleared by a child that takes the uid).
//!
//! A guest with a view of its own (`view.rs`: private tmpfs on every
//! world-writable place, its own IPC namespace, keyrings refused by
//! seccomp) leaves none of these; this is the guard for guests without one
//! (namespaces off or unavailable, CRIU jobs) and against a mistake in the
//! view.

use super::writable::scan_host;
use crate::userfs::{UnixUser, UserFs};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// World-writable directories every Linux host may have, used until the
/// scan of the host is done.
const KNOWN: [&str; 6] = [
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/run/lock",
    "/var/lock",
    "/var/mail",
];

/// What one scrub removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScrubReport {
    /// Files and directory trees in world-writable directories.
    pub files: Vec<PathBuf>,
    /// SysV IPC objects (shared memory, semaphores, message queues).
    pub ipc: usize,
    /// POSIX message queues.
    pub mqueues: usize,
}

impl ScrubReport {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.ipc == 0 && self.mqueues == 0
    }
}

/// Scrubs slots on release. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Scrubber {
    dirs: Arc<RwLock<Vec<PathBuf>>>,
}

impl Scrubber {
    /// Starts the scan of the host's world-writable directories in the
    /// background (skipping `except`, the station's own directories);
    /// until it ends, the well-known ones are scrubbed.
    pub fn for_host(except: Vec<PathBuf>) -> Self {
        let known: Vec<PathBuf> = KNOWN
            .iter()
            .map(PathBuf::from)
            .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
            .collect();
        let dirs = Arc::new(RwLock::new(known));
        let d = dirs.clone();
        let spawned = std::thread::Builder::new()
            .name("world-writable-scan".into())
            .spawn(move || {
                // Idle I/O: the owner's disk first.
                // SAFETY: ioprio_set on this thread; IOPRIO_CLASS_IDLE.
                unsafe { libc::syscall(libc::SYS_ioprio_set, 1, 0, 3 << 13) };
                let mut found = scan_host(&except);
                if let Ok(mut g) = d.write() {
                    found.extend(g.iter().cloned());
                    found.sort();
                    found.dedup();
                    tracing::info!(dirs = ?found, "world-writable directories scrubbed on slot release");
                    *g = found;
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no scan of world-writable directories; the well-known ones only");
        }
        Scrubber { dirs }
    }

    /// A scrubber of exactly these directories (tests).
    pub fn of(dirs: Vec<PathBuf>) -> Self {
        Scrubber {
            dirs: Arc::new(RwLock::new(dirs)),
        }
    }

    /// Removes everything of `uid` listed in the module comment. The uid's
    /// processes must all be dead. Blocking; failures are logged.
    pub fn scrub(&self, uid: u32) -> ScrubReport {
        if uid == 0 || !nix::unistd::geteuid().is_root() {
            return ScrubReport::default();
        }
        let dirs = self.dirs.read().map(|d| d.clone()).unwrap_or_default();
        let mut report = ScrubReport {
            files: remove_files_of(uid, &dirs),
            ipc: remove_sysv_of(uid),
            mqueues: remove_mqueues_of(uid),
        };
        clear_keyrings_of(uid);
        report.files.sort();
        if !report.is_empty() {
            tracing::warn!(uid, files = ?report.files, ipc = report.ipc, mqueues = report.mqueues,
                "removed what a guest left behind");
        }
        report
    }
}

/// The entries of `dirs` that belong to `uid`, removed as `uid`.
fn remove_files_of(uid: u32, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        for e in rd.flatten() {
            if e.metadata().is_ok_and(|m| m.uid() == uid) {
                found.push(e.path());
            }
        }
    }
    if found.is_empty() {
        return found;
    }
    let fs = match UnixUser::from_uid(uid)
        .map_err(|e| e.to_string())
        .and_then(|u| UserFs::new(u).map_err(|e| e.to_string()))
    {
        Ok(fs) => fs,
        Err(e) => {
            tracing::error!(uid, error = %e, "cannot act as the slot to remove its files");
            return Vec::new();
        }
    };
    let paths = found.clone();
    let removed = fs.run(move |_| {
        let mut gone = Vec::new();
        for p in paths {
            // Not following links: a link is removed, not its target.
            let is_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
            let r = if is_dir {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            match r {
                Ok(()) => gone.push(p),
                Err(e) => {
                    tracing::warn!(path = %p.display(), error = %e, "cannot remove a slot's file")
                }
            }
        }
        Ok(gone)
    });
    removed.unwrap_or_else(|e| {
        tracing::error!(uid, error = %e, "removing a slot's files failed");
        Vec::new()
    })
}

/// The ids in a `/proc/sysvipc/*` table whose owner or creator is `uid`.
fn sysv_ids(table: &str, uid: u32) -> Vec<i32> {
    let mut lines = table.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let cols: Vec<&str> = header.split_whitespace().collect();
    let col = |name: &str| cols.iter().position(|c| *c == name);
    let (Some(id), Some(u), Some(cu)) = (
        col("shmid").or(col("semid")).or(col("msqid")),
        col("uid"),
        col("cuid"),
    ) else {
        return Vec::new();
    };
    lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let owner = f.get(u)?.parse::<u32>().ok()?;
            let creator = f.get(cu)?.parse::<u32>().ok()?;
            (owner == uid || creator == uid)
                .then(|| f.get(id)?.parse().ok())
                .flatten()
        })
        .collect()
}

/// Removes `uid`'s SysV IPC objects of the host's IPC namespace.
fn remove_sysv_of(uid: u32) -> usize {
    let mut n = 0;
    for (table, rm) in [("shm", 0u8), ("sem", 1u8), ("msg", 2u8)] {
        let Ok(text) = std::fs::read_to_string(Path::new("/proc/sysvipc").join(table)) else {
            continue;
        };
        for id in sysv_ids(&text, uid) {
            // SAFETY: IPC_RMID on an id; no buffer is passed.
            let r = unsafe {
                match rm {
                    0 => libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()),
                    1 => libc::semctl(id, 0, libc::IPC_RMID),
                    _ => libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()),
                }
            };
            if r == 0 {
                n += 1;
            }
        }
    }
    n
}

/// Removes `uid`'s POSIX message queues: the `mqueue` file system lists
/// them; it is mounted in a mount namespace of a thread of its own (a
/// thread's `unshare(CLONE_NEWNS)` changes that thread only), never on the
/// host's.
fn remove_mqueues_of(uid: u32) -> usize {
    let t = std::thread::Builder::new()
        .name("mqueue-scrub".into())
        .spawn(move || -> usize {
            // SAFETY: unshare and mount on this thread's own namespace
            // (made private first), on C string constants.
            unsafe {
                if libc::unshare(libc::CLONE_NEWNS) < 0
                    || libc::mount(
                        std::ptr::null(),
                        c"/".as_ptr(),
                        std::ptr::null(),
                        libc::MS_REC | libc::MS_PRIVATE,
                        std::ptr::null(),
                    ) < 0
                    || libc::mount(
                        c"mqueue".as_ptr(),
                        c"/tmp".as_ptr(),
                        c"mqueue".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        std::ptr::null(),
                    ) < 0
                {
                    return 0;
                }
            }
            let Ok(rd) = std::fs::read_dir("/tmp") else {
                return 0;
            };
            rd.flatten()
                .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
                .filter(|e| std::fs::remove_file(e.path()).is_ok())
                .count()
        });
    t.ok().and_then(|t| t.join().ok()).unwrap_or(0)
}

/// Clears `uid`'s user, user-session and persistent keyrings from a child
/// that takes the uid (a keyring is reached only by its owner).
fn clear_keyrings_of(uid: u32) {
    const KEYCTL_CLEAR: libc::c_long = 7;
    const KEYCTL_GET_PERSISTENT: libc::c_long = 22;
    const USER_KEYRING: libc::c_long = -4;
    const USER_SESSION_KEYRING: libc::c_long = -5;
    const THREAD_KEYRING: libc::c_long = -1;
    // SAFETY: the child makes raw syscalls only and leaves with _exit; the
    // parent waits for it.
    unsafe {
        match libc::fork() {
            0 => {
                let g: libc::gid_t = 65534;
                if libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) < 0
                    || libc::syscall(libc::SYS_setresgid, g, g, g) < 0
                    || libc::syscall(libc::SYS_setresuid, uid, uid, uid) < 0
                {
                    libc::_exit(2);
                }
                libc::syscall(libc::SYS_keyctl, KEYCTL_CLEAR, USER_KEYRING);
                libc::syscall(libc::SYS_keyctl, KEYCTL_CLEAR, USER_SESSION_KEYRING);
                let p = libc::syscall(
                    libc::SYS_keyctl,
                    KEYCTL_GET_PERSISTENT,
                    -1 as libc::c_long,
                    THREAD_KEYRING,
                );
                if p > 0 {
                    libc::syscall(libc::SYS_keyctl, KEYCTL_CLEAR, p);
                }
                libc::_exit(0)
            }
            -1 => {}
            child => {
                let mut st = 0;
                while libc::waitpid(child, &mut st, 0) < 0
                    && *libc::__errno_location() == libc::EINTR
                {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysv_tables_by_owner_or_creator() {
        let shm = "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n\
                   0 5 600 4096 10 0 0 1001 1001 1001 1001 0 0 0 4096 0\n\
                   0 6 600 4096 10 0 0 0 0 1001 1001 0 0 0 4096 0\n\
                   0 7 600 4096 10 0 0 0 0 0 0 0 0 0 4096 0\n";
        assert_eq!(sysv_ids(shm, 1001), vec![5, 6]);
        let sem = "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n\
                   0 3 600 1 1001 1001 1001 1001 0 0\n";
        assert_eq!(sysv_ids(sem, 1001), vec![3]);
        assert!(sysv_ids("", 1).is_empty());
    }
}
