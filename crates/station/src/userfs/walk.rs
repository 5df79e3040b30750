//! Safe path resolution: one component at a time, never letting the kernel
//! follow a symlink on its own.
//!
//! Every directory on the way is opened with `O_PATH|O_NOFOLLOW` relative
//! to the previous one, so the kernel checks search permission with the
//! calling thread's (the user's) credentials at each step, `..` is the real
//! parent of the directory reached (not a textual shortening), and a
//! symlink is seen as a symlink. A symlink is followed only if it is owned
//! by the user or by root (its target is then walked the same way), at
//! most [`MAX_HOPS`] times per path. The final open repeats `O_NOFOLLOW`
//! and `O_NONBLOCK`, then checks with `fstat` that it got the same regular
//! file the walk saw: a name swapped for a symlink, FIFO or device in
//! between is caught (and looked at again), never followed or blocked on.

use super::UnixUser;
use super::error::{Op, PathError, PathErrorKind, UserFsError};
use super::sys;
use std::collections::VecDeque;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Symlinks (and re-checks after a race) allowed in one resolution, as the
/// kernel's own MAXSYMLINKS.
pub const MAX_HOPS: u32 = 40;

/// Permission bits never given to a created file (a sane umask; the
/// daemon's own umask is not the user's).
const CREATE_UMASK: libc::mode_t = 0o022;

/// The safe operations, run on a thread that already acts as the user
/// (see [`super::UserFs::run`]). Paths must be absolute.
pub struct AsUser<'u> {
    user: &'u UnixUser,
}

/// A failed step: why, where, and (rarely) a better verb than the
/// operation's.
pub(super) struct StepErr {
    pub(super) kind: PathErrorKind,
    pub(super) at: PathBuf,
    pub(super) op: Option<Op>,
}

impl StepErr {
    pub(super) fn new(kind: PathErrorKind, at: impl Into<PathBuf>) -> Self {
        StepErr {
            kind,
            at: at.into(),
            op: None,
        }
    }

    pub(super) fn io(e: io::Error, at: impl Into<PathBuf>) -> Self {
        Self::new(kind_of(e), at)
    }

    /// A failed `O_PATH` lookup of `at`: permission is refused on the
    /// directory being searched, so that is where it is reported.
    pub(super) fn lookup(e: io::Error, at: &Path) -> Self {
        let denied = matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM));
        let at = match at.parent() {
            Some(dir) if denied => dir,
            _ => at,
        };
        Self::io(e, at)
    }
}

/// What the last component turned out to be.
pub(super) enum Last<T> {
    Done(T),
    /// A symlink (its `O_PATH` fd and stat): follow it if allowed.
    Follow(OwnedFd, libc::stat),
    /// Changed under us between two opens: look at it again.
    Again,
}

/// The position of a walk.
struct Walk {
    dir: OwnedFd,
    /// Where `dir` is, for messages.
    here: PathBuf,
    todo: VecDeque<OsString>,
    hops: u32,
}

fn kind_of(e: io::Error) -> PathErrorKind {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => PathErrorKind::PermissionDenied,
        Some(libc::ENOENT) => PathErrorKind::NotFound,
        Some(libc::ENOTDIR) => PathErrorKind::NotADirectory,
        _ => PathErrorKind::Io(e),
    }
}

/// Splits a path into the names to walk. `.` and empty names vanish, `..`
/// stays (it is walked for real); a path that ends in `/` or `/.` gets a
/// trailing `.`, meaning "must be a directory".
fn components(p: &[u8]) -> VecDeque<OsString> {
    let mut v: VecDeque<OsString> = p
        .split(|b| *b == b'/')
        .filter(|s| !s.is_empty() && *s != b".")
        .map(|s| OsString::from_vec(s.to_vec()))
        .collect();
    let ends_in_dir = p.ends_with(b"/") || p.ends_with(b"/.") || p == b".";
    if ends_in_dir && v.back().is_some_and(|c| c != "..") {
        v.push_back(OsString::from("."));
    }
    v
}

fn cstr(name: &OsStr, at: &Path) -> Result<CString, StepErr> {
    CString::new(name.as_bytes()).map_err(|_| {
        StepErr::io(
            io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in path"),
            at,
        )
    })
}

fn same_file(a: &libc::stat, b: &libc::stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

impl<'u> AsUser<'u> {
    pub(super) fn new(user: &'u UnixUser) -> Self {
        AsUser { user }
    }

    /// The user the operations act as.
    pub fn user(&self) -> &UnixUser {
        self.user
    }

    /// Opens an existing regular file for reading.
    pub fn open_read(&self, path: &Path) -> Result<File, UserFsError> {
        self.walk(Op::Read, path, not_a_file, |dir, name, at| {
            self.last_existing(dir, name, at, libc::O_RDONLY)
        })
    }

    /// Opens a regular file for writing, emptied; creates it (owned by the
    /// user, `mode` less the bits of umask 022) if it does not exist.
    pub fn create_truncate(&self, path: &Path, mode: u32) -> Result<File, UserFsError> {
        self.walk(Op::Create, path, not_a_file, |dir, name, at| {
            self.last_for_writing(dir, name, at, mode, false)
        })
    }

    /// Opens a regular file for appending; creates it (as in
    /// [`Self::create_truncate`]) if it does not exist.
    pub fn open_append_create(&self, path: &Path, mode: u32) -> Result<File, UserFsError> {
        self.walk(Op::Append, path, not_a_file, |dir, name, at| {
            self.last_for_writing(dir, name, at, mode, true)
        })
    }

    /// `Ok` if `path` is a regular file the user can read.
    pub fn check_readable(&self, path: &Path) -> Result<(), UserFsError> {
        self.open_read(path).map(drop)
    }

    /// `Ok` if `path` is a regular file the user can write, or does not
    /// exist and its directory lets the user create it. Changes nothing.
    pub fn check_writable(&self, path: &Path) -> Result<(), UserFsError> {
        self.walk(
            Op::Write,
            path,
            not_a_file,
            |dir, name, at| match sys::openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0) {
                Ok(fd) => {
                    let st = sys::fstat(fd.as_fd()).map_err(|e| StepErr::io(e, at))?;
                    if sys::is_type(&st, libc::S_IFLNK) {
                        return Ok(Last::Follow(fd, st));
                    }
                    if !sys::is_type(&st, libc::S_IFREG) {
                        return Err(StepErr::new(
                            PathErrorKind::NotRegular(sys::kind_name(&st)),
                            at,
                        ));
                    }
                    self.access(fd.as_fd(), libc::W_OK)
                        .map_err(|e| StepErr::io(e, at))?;
                    Ok(Last::Done(()))
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    self.access(dir, libc::W_OK | libc::X_OK)
                        .map_err(|e| StepErr {
                            op: Some(Op::Create),
                            ..StepErr::io(e, at)
                        })?;
                    Ok(Last::Done(()))
                }
                Err(e) => Err(StepErr::lookup(e, at)),
            },
        )
    }

    /// `Ok` if `path` is a directory the user may enter (search).
    pub fn check_dir(&self, path: &Path) -> Result<(), UserFsError> {
        let enter = |fd: BorrowedFd<'_>, at: &Path| {
            self.access(fd, libc::X_OK).map_err(|e| StepErr::io(e, at))
        };
        self.walk(Op::Enter, path, enter, |dir, name, at| {
            let fd = sys::openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)
                .map_err(|e| StepErr::lookup(e, at))?;
            let st = sys::fstat(fd.as_fd()).map_err(|e| StepErr::io(e, at))?;
            if sys::is_type(&st, libc::S_IFLNK) {
                return Ok(Last::Follow(fd, st));
            }
            if !sys::is_type(&st, libc::S_IFDIR) {
                return Err(StepErr::new(PathErrorKind::NotADirectory, at));
            }
            enter(fd.as_fd(), at)?;
            Ok(Last::Done(()))
        })
    }

    /// Whether `path` is a directory (following allowed symlinks); `false`
    /// if it does not exist. Errors if the user may not look.
    pub fn is_dir(&self, path: &Path) -> Result<bool, UserFsError> {
        let res = self.walk(
            Op::Enter,
            path,
            |_, _| Ok(true),
            |dir, name, at| {
                let fd = sys::openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)
                    .map_err(|e| StepErr::lookup(e, at))?;
                let st = sys::fstat(fd.as_fd()).map_err(|e| StepErr::io(e, at))?;
                if sys::is_type(&st, libc::S_IFLNK) {
                    return Ok(Last::Follow(fd, st));
                }
                Ok(Last::Done(sys::is_type(&st, libc::S_IFDIR)))
            },
        );
        match res {
            Err(UserFsError::Path(PathError {
                kind: PathErrorKind::NotFound | PathErrorKind::NotADirectory,
                ..
            })) => Ok(false),
            other => other,
        }
    }

    fn access(&self, fd: BorrowedFd<'_>, mode: libc::c_int) -> io::Result<()> {
        sys::access(fd, mode, self.user.uid, &self.user.groups)
    }

    /// The last step of `open_read`: an existing regular file, opened with
    /// `flags`.
    fn last_existing(
        &self,
        dir: BorrowedFd<'_>,
        name: &std::ffi::CStr,
        at: &Path,
        flags: libc::c_int,
    ) -> Result<Last<File>, StepErr> {
        let fd = sys::openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)
            .map_err(|e| StepErr::lookup(e, at))?;
        let seen = sys::fstat(fd.as_fd()).map_err(|e| StepErr::io(e, at))?;
        if sys::is_type(&seen, libc::S_IFLNK) {
            return Ok(Last::Follow(fd, seen));
        }
        self.open_seen(dir, name, at, flags, &seen)
    }

    /// Opens the regular file the walk saw as `seen`, for real, with
    /// `flags`; `Again` if the name now means something else.
    fn open_seen(
        &self,
        dir: BorrowedFd<'_>,
        name: &std::ffi::CStr,
        at: &Path,
        flags: libc::c_int,
        seen: &libc::stat,
    ) -> Result<Last<File>, StepErr> {
        if !sys::is_type(seen, libc::S_IFREG) {
            return Err(StepErr::new(
                PathErrorKind::NotRegular(sys::kind_name(seen)),
                at,
            ));
        }
        let flags = flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
        let file = match sys::openat(dir, name, flags, 0) {
            Ok(f) => f,
            // Replaced by a symlink (ELOOP) or removed since: look again.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOENT)) => {
                return Ok(Last::Again);
            }
            Err(e) => return Err(StepErr::io(e, at)),
        };
        let now = sys::fstat(file.as_fd()).map_err(|e| StepErr::io(e, at))?;
        if !sys::is_type(&now, libc::S_IFREG) || !same_file(seen, &now) {
            return Ok(Last::Again);
        }
        sys::clear_nonblock(file.as_fd()).map_err(|e| StepErr::io(e, at))?;
        Ok(Last::Done(File::from(file)))
    }

    /// The last step of the writing operations: open the existing regular
    /// file, or create a new one exclusively.
    fn last_for_writing(
        &self,
        dir: BorrowedFd<'_>,
        name: &std::ffi::CStr,
        at: &Path,
        mode: u32,
        append: bool,
    ) -> Result<Last<File>, StepErr> {
        let flags = libc::O_WRONLY | if append { libc::O_APPEND } else { 0 };
        match sys::openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0) {
            Ok(fd) => {
                let seen = sys::fstat(fd.as_fd()).map_err(|e| StepErr::io(e, at))?;
                if sys::is_type(&seen, libc::S_IFLNK) {
                    return Ok(Last::Follow(fd, seen));
                }
                let opened = self.open_seen(dir, name, at, flags, &seen)?;
                if let (Last::Done(f), false) = (&opened, append) {
                    // Emptied only now that it is known to be the regular
                    // file the walk saw (O_TRUNC would act before the check).
                    sys::ftruncate0(f.as_fd()).map_err(|e| StepErr::io(e, at))?;
                }
                Ok(opened)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                let mode = libc::mode_t::from(mode) & 0o777 & !CREATE_UMASK;
                let create =
                    flags | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_NOCTTY;
                let file = match sys::openat(dir, name, create, mode) {
                    Ok(f) => f,
                    // Someone made it meanwhile (maybe a symlink): look again.
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => return Ok(Last::Again),
                    Err(e) => {
                        return Err(StepErr {
                            op: Some(Op::Create),
                            ..StepErr::io(e, at)
                        });
                    }
                };
                // The daemon's umask is not the user's: set the mode exactly.
                sys::fchmod(file.as_fd(), mode).map_err(|e| StepErr::io(e, at))?;
                Ok(Last::Done(File::from(file)))
            }
            Err(e) => Err(StepErr::lookup(e, at)),
        }
    }

    /// Walks `path` to its last component and hands that to `last` (with
    /// the directory holding it); a path ending at a directory (`/`, `..`,
    /// a trailing `/`) goes to `at_dir` instead.
    pub(super) fn walk<T>(
        &self,
        op: Op,
        path: &Path,
        at_dir: impl Fn(BorrowedFd<'_>, &Path) -> Result<T, StepErr>,
        mut last: impl FnMut(BorrowedFd<'_>, &std::ffi::CStr, &Path) -> Result<Last<T>, StepErr>,
    ) -> Result<T, UserFsError> {
        let fail = |e: StepErr| {
            UserFsError::Path(PathError {
                op: e.op.unwrap_or(op),
                path: path.to_path_buf(),
                user: self.user.name.clone(),
                at: Some(e.at).filter(|at| at != path),
                kind: e.kind,
            })
        };
        if !path.is_absolute() {
            return Err(fail(StepErr::new(PathErrorKind::NotAbsolute, path)));
        }
        let root = Path::new("/");
        let mut w = Walk {
            dir: sys::open_root().map_err(|e| fail(StepErr::io(e, root)))?,
            here: root.to_path_buf(),
            todo: components(path.as_os_str().as_bytes()),
            hops: 0,
        };
        loop {
            let Some(name) = w.todo.pop_front() else {
                return at_dir(w.dir.as_fd(), &w.here).map_err(fail);
            };
            let at = w.here.join(&name);
            if name == "." {
                // Only ever trailing: the path must end at a directory.
                if w.todo.is_empty() {
                    return at_dir(w.dir.as_fd(), &w.here).map_err(fail);
                }
                continue;
            }
            let cname = cstr(&name, &at).map_err(fail)?;
            if name == ".." {
                let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
                w.dir = sys::openat(w.dir.as_fd(), &cname, flags, 0)
                    .map_err(|e| fail(StepErr::io(e, &w.here)))?;
                w.here.pop();
                continue;
            }
            if w.todo.is_empty() {
                match last(w.dir.as_fd(), &cname, &at).map_err(fail)? {
                    Last::Done(v) => return Ok(v),
                    Last::Follow(link, st) => self.follow(&mut w, link, &st, &at).map_err(fail)?,
                    Last::Again => {
                        w.hops += 1;
                        if w.hops > MAX_HOPS {
                            return Err(fail(StepErr::new(
                                PathErrorKind::TooManySymlinks(MAX_HOPS),
                                at,
                            )));
                        }
                        w.todo.push_back(name);
                    }
                }
                continue;
            }
            let fd = sys::openat(w.dir.as_fd(), &cname, libc::O_PATH | libc::O_NOFOLLOW, 0)
                .map_err(|e| fail(StepErr::lookup(e, &at)))?;
            let st = sys::fstat(fd.as_fd()).map_err(|e| fail(StepErr::io(e, &at)))?;
            if sys::is_type(&st, libc::S_IFDIR) {
                w.dir = fd;
                w.here = at;
            } else if sys::is_type(&st, libc::S_IFLNK) {
                self.follow(&mut w, fd, &st, &at).map_err(fail)?;
            } else {
                return Err(fail(StepErr::new(PathErrorKind::NotADirectory, at)));
            }
        }
    }

    /// Continues the walk through the symlink `link` (at `at`), if its
    /// owner is the user or root.
    fn follow(
        &self,
        w: &mut Walk,
        link: OwnedFd,
        st: &libc::stat,
        at: &Path,
    ) -> Result<(), StepErr> {
        if st.st_uid != self.user.uid && st.st_uid != 0 {
            return Err(StepErr::new(
                PathErrorKind::ForeignSymlink { owner: st.st_uid },
                at,
            ));
        }
        w.hops += 1;
        if w.hops > MAX_HOPS {
            return Err(StepErr::new(PathErrorKind::TooManySymlinks(MAX_HOPS), at));
        }
        let target = sys::readlink(link.as_fd()).map_err(|e| StepErr::io(e, at))?;
        if target.is_empty() {
            return Err(StepErr::new(PathErrorKind::NotFound, at));
        }
        for c in components(&target).into_iter().rev() {
            w.todo.push_front(c);
        }
        if target.starts_with(b"/") {
            w.dir = sys::open_root().map_err(|e| StepErr::io(e, "/"))?;
            w.here = PathBuf::from("/");
        }
        Ok(())
    }
}

/// `at_dir` for the file operations: a directory is not a file.
pub(super) fn not_a_file<T>(_: BorrowedFd<'_>, at: &Path) -> Result<T, StepErr> {
    Err(StepErr::new(PathErrorKind::NotRegular("directory"), at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &str) -> Vec<String> {
        components(p.as_bytes())
            .into_iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn components_keep_dotdot_and_mark_trailing_dirs() {
        assert_eq!(names("/a/./b//c"), ["a", "b", "c"]);
        assert_eq!(names("/a/../b"), ["a", "..", "b"]);
        assert_eq!(names("/a/b/"), ["a", "b", "."]);
        assert_eq!(names("/a/b/."), ["a", "b", "."]);
        assert_eq!(names("/a/.."), ["a", ".."]);
        assert_eq!(names("/"), Vec::<String>::new());
        assert_eq!(names("rel/x"), ["rel", "x"]);
    }
}
