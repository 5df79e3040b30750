//! What can go wrong when acting on a user's files, named precisely enough
//! for the user to fix their submit file.

use std::fmt;
use std::path::PathBuf;

/// What was being done to the path (the verb of the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Create,
    Append,
    Write,
    /// Using a directory: searching it (`initialdir`).
    Enter,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Read => "read",
            Op::Create => "create",
            Op::Append => "append to",
            Op::Write => "write",
            Op::Enter => "enter",
        })
    }
}

/// Why a path was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum PathErrorKind {
    #[error("not an absolute path")]
    NotAbsolute,
    #[error("Permission denied")]
    PermissionDenied,
    #[error("No such file or directory")]
    NotFound,
    #[error("Not a directory")]
    NotADirectory,
    /// FIFOs, devices, sockets and directories are never opened as files:
    /// a FIFO would block the daemon, a device has side effects on open.
    #[error("not a regular file (it is a {0})")]
    NotRegular(&'static str),
    /// Only symlinks owned by the user or by root are followed: anyone
    /// else's link could point the user's output at the user's own files.
    #[error(
        "refused to follow a symlink owned by uid {owner} (only the user's own or root's are followed)"
    )]
    ForeignSymlink { owner: u32 },
    #[error("more than {0} symbolic links")]
    TooManySymlinks(u32),
    #[error("{0}")]
    Io(std::io::Error),
}

/// A refused or failed operation on one path, as one user.
#[derive(Debug)]
pub struct PathError {
    pub op: Op,
    /// The path as asked for.
    pub path: PathBuf,
    /// The user the operation ran as.
    pub user: String,
    /// Where the walk failed, when that is not `path` itself (a directory
    /// on the way, or a symlink).
    pub at: Option<PathBuf>,
    pub kind: PathErrorKind,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot {} {} as {}: {}",
            self.op,
            self.path.display(),
            self.user,
            self.kind
        )?;
        match &self.at {
            Some(at) if *at != self.path => write!(f, " (at {})", at.display()),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            PathErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Every error of [`super::UserFs`].
#[derive(Debug, thiserror::Error)]
pub enum UserFsError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Account(#[from] super::AccountError),
    /// An unprivileged station serves only the account it runs as.
    #[error(
        "this station runs as uid {daemon_uid}, not as root, and acts only for that account, not for {user} (uid {uid})"
    )]
    NotServed {
        user: String,
        uid: u32,
        daemon_uid: u32,
    },
    /// Jobs never run as root, and root's rights are what userfs exists
    /// to avoid using.
    #[error("refusing to act as {user} (uid 0) on job files: jobs never belong to root")]
    Root { user: String },
    /// The per-thread switch to the user's credentials failed or did not
    /// hold; nothing was touched.
    #[error("cannot take on the credentials of {user}: {detail}")]
    Credentials { user: String, detail: String },
    #[error("cannot start a thread to act as {user}: {source}")]
    Thread {
        user: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the thread acting as {user} ended without an answer (it panicked)")]
    Lost { user: String },
}

impl UserFsError {
    /// The reason a path was refused, if this is about a path.
    pub fn kind(&self) -> Option<&PathErrorKind> {
        match self {
            UserFsError::Path(p) => Some(&p.kind),
            _ => None,
        }
    }
}
