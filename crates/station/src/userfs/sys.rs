//! Thin wrappers over the few system calls the walk needs, on raw fds and
//! C strings, so `walk.rs` reads as the algorithm.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

/// `openat(dir, name, flags | O_CLOEXEC, mode)`, retried on EINTR.
pub(super) fn openat(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: `name` is NUL-terminated; the fd is live for the call.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_CLOEXEC,
                libc::c_uint::from(mode),
            )
        };
        if fd >= 0 {
            // SAFETY: a fresh descriptor that nothing else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// An `O_PATH` descriptor of `/`, where every walk starts.
pub(super) fn open_root() -> io::Result<OwnedFd> {
    // SAFETY: AT_FDCWD is a valid dirfd for an absolute name.
    let cwd = unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) };
    openat(cwd, c"/", libc::O_PATH | libc::O_DIRECTORY, 0)
}

pub(super) fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: `stat` is plain data, fully written by a successful fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and out-pointer (fstat works on O_PATH fds).
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// The target of the symlink `fd` was opened on (`O_PATH|O_NOFOLLOW`).
pub(super) fn readlink(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: the buffer is writable for its length; "" with an O_PATH
        // symlink fd reads that link.
        let n = unsafe {
            libc::readlinkat(
                fd.as_raw_fd(),
                c"".as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        if n < buf.len() {
            buf.truncate(n);
            return Ok(buf);
        }
        // Possibly cut short: try again with room to spare.
        buf.resize(buf.len() * 2, 0);
    }
}

/// Clears `O_NONBLOCK`, set only so that opening could not hang.
pub(super) fn clear_nonblock(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: fcntl on a live fd with integer arguments.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn ftruncate0(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: live fd.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `renameat(dir, from, dir, to)`: replaces `to` atomically.
pub(super) fn rename_in(dir: BorrowedFd<'_>, from: &CStr, to: &CStr) -> io::Result<()> {
    // SAFETY: NUL-terminated names; the fd is live for the call.
    let r = unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `unlinkat(dir, name, 0)`.
pub(super) fn unlink_in(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: NUL-terminated name; the fd is live for the call.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn fchmod(fd: BorrowedFd<'_>, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: live fd.
    if unsafe { libc::fchmod(fd.as_raw_fd(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this kernel (and any seccomp filter around us) offers
/// `faccessat2`, probed once with a call that must succeed.
fn has_faccessat2() -> bool {
    static PROBE: OnceLock<bool> = OnceLock::new();
    *PROBE.get_or_init(|| {
        // SAFETY: a constant absolute path, no out-pointers.
        let r = unsafe {
            libc::syscall(
                libc::SYS_faccessat2,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                libc::F_OK,
                libc::AT_EACCESS,
            )
        };
        r == 0
    })
}

/// May the calling thread's *filesystem* credentials access the object
/// `fd` refers to with `mode` (`R_OK`/`W_OK`/`X_OK` bits)?
///
/// `faccessat2(AT_EACCESS)` checks with the current fsuid, fsgid and groups
/// (plain `access` would use the real uid, which stays root), honouring
/// ACLs and read-only mounts. Without it (kernels before 5.8) the mode
/// bits are compared by hand: ACLs are then ignored.
pub(super) fn access(
    fd: BorrowedFd<'_>,
    mode: libc::c_int,
    uid: u32,
    groups: &[u32],
) -> io::Result<()> {
    if has_faccessat2() {
        // SAFETY: live fd, "" with AT_EMPTY_PATH names the fd itself.
        let r = unsafe {
            libc::syscall(
                libc::SYS_faccessat2,
                fd.as_raw_fd(),
                c"".as_ptr(),
                mode,
                libc::AT_EACCESS | libc::AT_EMPTY_PATH,
            )
        };
        return if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        };
    }
    let st = fstat(fd)?;
    if mode_allows(&st, mode, uid, groups) {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EACCES))
    }
}

/// The classic owner/group/other check of `mode` against `st`.
fn mode_allows(st: &libc::stat, mode: libc::c_int, uid: u32, groups: &[u32]) -> bool {
    let bits = if st.st_uid == uid {
        (st.st_mode >> 6) & 0o7
    } else if groups.contains(&st.st_gid) {
        (st.st_mode >> 3) & 0o7
    } else {
        st.st_mode & 0o7
    };
    let want = libc::mode_t::try_from(mode & 0o7).unwrap_or(0o7);
    bits & want == want
}

/// What kind of file a `stat` describes, in words for messages.
pub(super) fn kind_name(st: &libc::stat) -> &'static str {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => "regular file",
        libc::S_IFDIR => "directory",
        libc::S_IFLNK => "symbolic link",
        libc::S_IFIFO => "FIFO",
        libc::S_IFCHR => "character device",
        libc::S_IFBLK => "block device",
        libc::S_IFSOCK => "socket",
        _ => "special file",
    }
}

pub(super) fn is_type(st: &libc::stat, t: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat_with(mode: libc::mode_t, uid: u32, gid: u32) -> libc::stat {
        // SAFETY: plain data.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        st.st_mode = libc::S_IFREG | mode;
        st.st_uid = uid;
        st.st_gid = gid;
        st
    }

    #[test]
    fn mode_bits_owner_then_group_then_other() {
        let st = stat_with(0o640, 10, 20);
        assert!(mode_allows(&st, libc::W_OK, 10, &[]));
        assert!(!mode_allows(&st, libc::W_OK, 11, &[20]));
        assert!(mode_allows(&st, libc::R_OK, 11, &[20]));
        assert!(!mode_allows(&st, libc::R_OK, 11, &[21]));
        // The owner class applies even when it grants less than "other".
        let st = stat_with(0o047, 10, 20);
        assert!(!mode_allows(&st, libc::R_OK, 10, &[20]));
    }
}
