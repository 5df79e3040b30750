//! The home's file work on a job owner's behalf, as that owner: a thin
//! async layer over [`crate::userfs`] with a deadline.
//!
//! Every read of a user's input, every output delivered, every user-log
//! line and rescue file goes through here: it runs on a `userfs` thread
//! with the owner's fsuid and groups, never root's, and never follows a
//! symlink the owner (or root) does not own. The daemon waits at most
//! [`USER_FS_TIMEOUT`] for it: a user's hung file system (NFS, FUSE)
//! stalls only that request, never the queue (no queue lock is held while
//! waiting here).

use crate::userfs::{AsUser, PathErrorKind, UserFs, UserFsError};
use gleaner_edge::ApiError;
use gleaner_proto::wire::ErrorCode;
use std::fmt;
use std::time::Duration;

/// How long one operation on a user's files may take.
pub(crate) const USER_FS_TIMEOUT: Duration = Duration::from_secs(60);

/// Why an operation as the owner failed.
#[derive(Debug)]
pub(crate) enum OwnerFsError {
    Fs(UserFsError),
    /// The operation did not finish within [`USER_FS_TIMEOUT`] (its thread
    /// is abandoned; its result, if any, is dropped).
    TimedOut {
        user: String,
    },
}

impl fmt::Display for OwnerFsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OwnerFsError::Fs(e) => e.fmt(f),
            OwnerFsError::TimedOut { user } => write!(
                f,
                "the file system did not answer within {} s (acting as {user})",
                USER_FS_TIMEOUT.as_secs()
            ),
        }
    }
}

impl From<UserFsError> for OwnerFsError {
    fn from(e: UserFsError) -> Self {
        OwnerFsError::Fs(e)
    }
}

/// Runs `work` as the account `owner` (see [`UserFs::run`]), without
/// blocking the runtime and for at most [`USER_FS_TIMEOUT`].
pub(crate) async fn as_owner<T, F>(owner: &str, work: F) -> Result<T, OwnerFsError>
where
    T: Send + 'static,
    F: FnOnce(&AsUser<'_>) -> Result<T, UserFsError> + Send + 'static,
{
    let fs = UserFs::for_user(owner)?;
    with_fs(&fs, work).await
}

/// [`as_owner`] with the owner's [`UserFs`] already at hand.
pub(crate) async fn with_fs<T, F>(fs: &UserFs, work: F) -> Result<T, OwnerFsError>
where
    T: Send + 'static,
    F: FnOnce(&AsUser<'_>) -> Result<T, UserFsError> + Send + 'static,
{
    match tokio::time::timeout(USER_FS_TIMEOUT, fs.run_async(work)).await {
        Ok(r) => r.map_err(OwnerFsError::Fs),
        Err(_) => Err(OwnerFsError::TimedOut {
            user: fs.user().name.clone(),
        }),
    }
}

/// An I/O error while reading or writing a file the owner's thread
/// already opened, as a [`UserFsError`] naming the path.
pub(crate) fn io_error(
    op: crate::userfs::Op,
    path: &std::path::Path,
    user: &str,
    e: std::io::Error,
) -> UserFsError {
    UserFsError::Path(crate::userfs::PathError {
        op,
        path: path.to_path_buf(),
        user: user.to_string(),
        at: None,
        kind: PathErrorKind::Io(e),
    })
}

/// The API error for a failed operation on a request field's file: 404
/// when it is not there, 403 when the owner may not, 400 when it is not a
/// regular file.
pub(crate) fn api_error(field: &str, e: &OwnerFsError) -> ApiError {
    let code = match e {
        OwnerFsError::TimedOut { .. } => ErrorCode::Unavailable,
        OwnerFsError::Fs(UserFsError::Path(p)) => match &p.kind {
            PathErrorKind::NotFound | PathErrorKind::NotADirectory => ErrorCode::NotFound,
            PathErrorKind::NotRegular(_) | PathErrorKind::NotAbsolute => ErrorCode::BadRequest,
            PathErrorKind::PermissionDenied
            | PathErrorKind::ForeignSymlink { .. }
            | PathErrorKind::TooManySymlinks(_) => ErrorCode::Forbidden,
            PathErrorKind::Io(_) => ErrorCode::Internal,
        },
        OwnerFsError::Fs(
            UserFsError::Root { .. } | UserFsError::NotServed { .. } | UserFsError::Account(_),
        ) => ErrorCode::Forbidden,
        OwnerFsError::Fs(_) => ErrorCode::Internal,
    };
    ApiError::field(code, field, e.to_string())
}
