//! Writing a user's file so that it appears whole or not at all: the data
//! goes to a hidden file beside the destination, is synced to disk, and is
//! renamed over the destination only when the caller says so (the home
//! publishes a job's outputs only once its completion is durable, issue
//! 14). Until then the destination keeps its old content; a crash leaves
//! at most a hidden `.NAME.gleaner-*` file, never a partial NAME.
//!
//! The destination is reached by the same safe walk as every other
//! operation: a symlink on the way, the destination's name included, is
//! followed only if the user or root owns it, and the file is staged and
//! renamed in the directory where the walk ends.
//!
//! A caller that must publish even across its own crash records each
//! staged file's destination and [`Staged::tag`] with its commit; after a
//! restart [`AsUser::publish_tagged`] finds the hidden file again by the
//! same walk and renames it.

use super::error::{Op, PathErrorKind, UserFsError};
use super::sys;
use super::walk::{AsUser, Last, StepErr, not_a_file};
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Permission bits never given to a created file (as in `walk.rs`).
const CREATE_UMASK: libc::mode_t = 0o022;

/// A file written beside its destination, not yet in place.
#[derive(Debug)]
pub struct Staged {
    /// The destination's directory (an `O_PATH` descriptor from the walk,
    /// after any symlinks followed).
    dir: OwnedFd,
    tmp: CString,
    name: CString,
    /// The destination, for messages.
    path: PathBuf,
    /// The random part of `tmp`.
    tag: String,
}

impl Staged {
    /// Where the file will appear.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What tells this staged file from others of the same destination
    /// (8 hex digits): with the destination, enough for
    /// [`AsUser::publish_tagged`] to find it again.
    pub fn tag(&self) -> &str {
        &self.tag
    }
}

impl AsUser<'_> {
    /// Writes a new file beside `path` (mode `mode` less umask 022), with
    /// `fill` writing its content, and syncs it; `path` itself is not
    /// touched until [`AsUser::publish`].
    pub fn stage(
        &self,
        path: &Path,
        mode: u32,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<Staged, UserFsError> {
        let tag = new_tag().map_err(|e| self.error(Op::Create, path, e))?;
        self.stage_tagged(path, &tag, mode, fill)
    }

    /// [`AsUser::stage`] with a tag the caller chose (from [`new_tag`])
    /// and recorded beforehand, so that a crash before the file is either
    /// published or discarded leaves a file it can find again
    /// ([`AsUser::discard_tagged`]).
    pub fn stage_tagged(
        &self,
        path: &Path,
        tag: &str,
        mode: u32,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<Staged, UserFsError> {
        let mut fill = Some(fill);
        self.walk(Op::Create, path, not_a_file, |dir, name, at| {
            if let Ok(fd) = sys::openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0) {
                let st = sys::fstat(fd.as_fd()).map_err(|e| StepErr::io(e, at))?;
                // A link is followed as by every other operation (only the
                // user's or root's): the file goes where it points.
                if sys::is_type(&st, libc::S_IFLNK) {
                    return Ok(Last::Follow(fd, st));
                }
                // A directory in the way would only fail at the rename.
                if sys::is_type(&st, libc::S_IFDIR) {
                    return Err(StepErr::new(PathErrorKind::NotRegular("directory"), at));
                }
            }
            let tmp = temp_name(name, tag).map_err(|e| StepErr::io(e, at))?;
            let mode = libc::mode_t::from(mode) & 0o777 & !CREATE_UMASK;
            let flags =
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_NOCTTY;
            let fd = sys::openat(dir, &tmp, flags, mode).map_err(|e| StepErr {
                op: Some(Op::Create),
                ..StepErr::io(e, at)
            })?;
            let undo = |e: io::Error| {
                let _ = sys::unlink_in(dir, &tmp);
                StepErr {
                    op: Some(Op::Write),
                    ..StepErr::io(e, at)
                }
            };
            sys::fchmod(fd.as_fd(), mode).map_err(undo)?;
            let mut file = File::from(fd);
            if let Some(f) = fill.take() {
                f(&mut file).map_err(undo)?;
            }
            file.sync_all().map_err(undo)?;
            let dir = dir.try_clone_to_owned().map_err(undo)?;
            Ok(Last::Done(Staged {
                dir,
                tmp,
                name: name.to_owned(),
                path: at.to_path_buf(),
                tag: tag.to_string(),
            }))
        })
    }

    /// Puts a staged file in place (one atomic rename) and syncs the
    /// directory, so that the new name survives a crash.
    pub fn publish(&self, s: Staged) -> Result<(), UserFsError> {
        let fail = |e: io::Error| self.error(Op::Write, &s.path, e);
        if let Err(e) = sys::rename_in(s.dir.as_fd(), &s.tmp, &s.name) {
            let _ = sys::unlink_in(s.dir.as_fd(), &s.tmp);
            return Err(fail(e));
        }
        // fsync needs a real descriptor of the directory, not O_PATH.
        let d = sys::openat(s.dir.as_fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0);
        if let Ok(d) = d {
            File::from(d).sync_all().map_err(fail)?;
        }
        Ok(())
    }

    /// Publishes the file staged for `path` with `tag` by an earlier
    /// process (see the module docs), walking to `path` as [`AsUser::stage`]
    /// did. Returns `false` when no such staged file is there: it was
    /// published already (or removed by the user).
    pub fn publish_tagged(&self, path: &Path, tag: &str) -> Result<bool, UserFsError> {
        self.walk(Op::Write, path, not_a_file, |dir, name, at| {
            if let Ok(fd) = sys::openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0) {
                let st = sys::fstat(fd.as_fd()).map_err(|e| StepErr::io(e, at))?;
                if sys::is_type(&st, libc::S_IFLNK) {
                    return Ok(Last::Follow(fd, st));
                }
            }
            let tmp = temp_name(name, tag).map_err(|e| StepErr::io(e, at))?;
            match sys::rename_in(dir, &tmp, name) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Last::Done(false)),
                Err(e) => return Err(StepErr::io(e, at)),
            }
            let d = sys::openat(dir, c".", libc::O_RDONLY | libc::O_DIRECTORY, 0);
            if let Ok(d) = d {
                File::from(d).sync_all().map_err(|e| StepErr::io(e, at))?;
            }
            Ok(Last::Done(true))
        })
    }

    /// Removes the file staged for `path` with `tag` by an earlier process
    /// that stopped before publishing or discarding it. Returns `false`
    /// when there is none.
    pub fn discard_tagged(&self, path: &Path, tag: &str) -> Result<bool, UserFsError> {
        self.walk(Op::Write, path, not_a_file, |dir, name, at| {
            if let Ok(fd) = sys::openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0) {
                let st = sys::fstat(fd.as_fd()).map_err(|e| StepErr::io(e, at))?;
                if sys::is_type(&st, libc::S_IFLNK) {
                    return Ok(Last::Follow(fd, st));
                }
            }
            let tmp = temp_name(name, tag).map_err(|e| StepErr::io(e, at))?;
            match sys::unlink_in(dir, &tmp) {
                Ok(()) => Ok(Last::Done(true)),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(Last::Done(false)),
                Err(e) => Err(StepErr::io(e, at)),
            }
        })
    }

    /// Removes a staged file that will not be published.
    pub fn discard(&self, s: Staged) {
        let _ = sys::unlink_in(s.dir.as_fd(), &s.tmp);
    }

    fn error(&self, op: Op, path: &Path, e: io::Error) -> UserFsError {
        UserFsError::Path(super::PathError {
            op,
            path: path.to_path_buf(),
            user: self.user().name.clone(),
            at: None,
            kind: PathErrorKind::Io(e),
        })
    }
}

/// A fresh tag: 8 random hex digits.
pub fn new_tag() -> io::Result<String> {
    let mut r = [0u8; 4];
    gleaner_proto::creds::fill_random(&mut r)?;
    Ok(format!("{:08x}", u32::from_be_bytes(r)))
}

/// `.NAME.gleaner-TAG`: hidden, beside NAME. A tag from elsewhere (a
/// record read back) must be what [`new_tag`] makes, so that the name
/// stays in the directory.
fn temp_name(name: &CStr, tag: &str) -> io::Result<CString> {
    if tag.len() != 8 || !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad staged-file tag {tag:?}"),
        ));
    }
    let mut v = b".".to_vec();
    v.extend_from_slice(name.to_bytes());
    v.extend_from_slice(format!(".gleaner-{tag}").as_bytes());
    CString::new(v).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}
