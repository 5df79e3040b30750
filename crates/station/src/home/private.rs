//! The home's own files are private to the daemon: spool directories
//! 0700, spooled output and checkpoints 0600 (issue 12: guests and other
//! users must not read the queue or anyone's output). Set at creation,
//! whatever the daemon's umask; existing pools are corrected at start
//! (`node::private_state`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Mode of the daemon's directories.
pub const DIR_MODE: u32 = 0o700;
/// Mode of the daemon's files.
pub const FILE_MODE: u32 = 0o600;

/// `mkdir -p` with every directory made 0700.
pub fn create_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// Options that create a file 0600 (an existing file keeps its mode).
pub fn options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.mode(FILE_MODE);
    o
}

/// Creates or empties `path` for writing, 0600 when new.
pub fn create(path: &Path) -> io::Result<File> {
    options().write(true).create(true).truncate(true).open(path)
}

/// Writes `data` to `path` (created 0600).
pub fn write(path: &Path, data: &[u8]) -> io::Result<()> {
    use std::io::Write;
    create(path)?.write_all(data)
}

/// The API error for a failed write to the spool: a full disk is 503
/// "disk full at PATH" (the host retries, then gives the run up and the
/// job stays queued, issue 14); anything else is an internal error.
pub(crate) fn spool_error(what: &str, path: &Path, e: io::Error) -> gleaner_edge::ApiError {
    if crate::disk::is_full(&e) {
        tracing::warn!(path = %path.display(), "spool disk full");
        return gleaner_edge::ApiError::new(
            gleaner_proto::wire::ErrorCode::Unavailable,
            crate::disk::describe(path, &e),
        );
    }
    gleaner_edge::ApiError::internal(what, e)
}
