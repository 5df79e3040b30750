//! Guest sandboxes and the directory holding them.
//!
//! The execute directory (the sandboxes' parent) is root's, mode 0711:
//! every guest may pass through it to its own sandbox, none may list it
//! (and learn the other guests' sandbox names) or create anything in it.
//! Each sandbox is mode 0700 and belongs to its guest's slot account, so a
//! guest reaches no other guest's files, whatever modes those files have.

use super::{GuestUser, IsolationError};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Open a directory without following a symlink in its place.
fn open_dir_nofollow(dir: &Path) -> Result<std::fs::File, IsolationError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| IsolationError::io(dir, e))
}

fn not_plain_dir(dir: &Path, what: &str) -> IsolationError {
    IsolationError::io(
        dir,
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{what} exists and is not a plain directory"),
        ),
    )
}

/// Create (if needed) the execute directory and make it root's (when the
/// daemon is root) with mode 0711: guests reach their own sandbox below it
/// by name but cannot list it or write in it. Refuses a symlink in its
/// place. Ancestors are created with the default mode and left alone.
pub fn prepare_execute_dir(dir: &Path) -> Result<(), IsolationError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => {
            return Err(not_plain_dir(dir, "execute directory"));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent).map_err(|e| IsolationError::io(parent, e))?;
            }
            match std::fs::DirBuilder::new().mode(0o711).create(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(IsolationError::io(dir, e)),
            }
        }
        Err(e) => return Err(IsolationError::io(dir, e)),
    }
    let d = open_dir_nofollow(dir)?;
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::fchown(&d, Some(0), Some(0)).map_err(|e| IsolationError::io(dir, e))?;
    }
    d.set_permissions(std::fs::Permissions::from_mode(0o711))
        .map_err(|e| IsolationError::io(dir, e))
}

/// Create the sandbox directory: mode 0700, owned by the guest (its slot
/// account; with `None`, the daemon's user). Refuses a symlink in its place
/// (a guest could point it anywhere).
pub fn prepare_sandbox(dir: &Path, user: Option<GuestUser>) -> Result<(), IsolationError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => {
            return Err(not_plain_dir(dir, "sandbox"));
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
    let d = open_dir_nofollow(dir)?;
    if let Some(u) = user {
        std::os::unix::fs::fchown(&d, Some(u.uid), Some(u.gid))
            .map_err(|e| IsolationError::io(dir, e))?;
    }
    d.set_permissions(std::fs::Permissions::from_mode(0o700))
        .map_err(|e| IsolationError::io(dir, e))
}

/// The first directory on the way to `dir` (itself included, as far as it
/// exists) that `user` may not search, with its mode: a guest cannot even
/// start a program in a sandbox below it. `None`: reachable.
pub fn unreachable_by(dir: &Path, user: GuestUser) -> Option<(PathBuf, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut p = PathBuf::new();
    for c in dir.components() {
        p.push(c);
        let Ok(md) = std::fs::metadata(&p) else {
            // What does not exist yet is created by the daemon, mode 0755.
            return None;
        };
        let mode = md.mode();
        let ok = if md.uid() == user.uid {
            mode & 0o100 != 0
        } else if md.gid() == user.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !ok {
            return Some((p, mode & 0o7777));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_ancestor_makes_sandboxes_unreachable() {
        let d = tempfile::tempdir().unwrap();
        // Someone other than the directories' owner and group.
        let other = GuestUser {
            uid: 4_000_000,
            gid: 4_000_000,
        };
        let target = d.path().join("state/execute");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(
            unreachable_by(&target, other),
            Some((d.path().to_path_buf(), 0o700))
        );
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        // Search permission is enough; what does not exist yet is ours.
        assert_eq!(unreachable_by(&target, other), None);
    }

    #[test]
    fn execute_dir_is_searchable_not_listable() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let exec = d.path().join("state/execute");
        prepare_execute_dir(&exec).unwrap();
        let md = std::fs::metadata(&exec).unwrap();
        assert_eq!(md.mode() & 0o7777, 0o711);
        if nix::unistd::geteuid().is_root() {
            assert_eq!((md.uid(), md.gid()), (0, 0));
        }
        // Idempotent, and it repairs a mode someone widened.
        std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(0o777)).unwrap();
        prepare_execute_dir(&exec).unwrap();
        assert_eq!(std::fs::metadata(&exec).unwrap().mode() & 0o7777, 0o711);
        let other = GuestUser {
            uid: 4_000_000,
            gid: 4_000_000,
        };
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(unreachable_by(&exec.join("sandbox"), other), None);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&exec, &link).unwrap();
        assert!(prepare_execute_dir(&link).is_err());
    }
}
