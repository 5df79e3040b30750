//! Files in a guest's sandbox, handled so that a guest cannot turn the
//! daemon's rights against the host: transferred names stay inside,
//! inputs are written and outputs read without following a guest's links,
//! the capture files keep a handle the guest cannot swap, and a snapshot
//! tells new outputs apart.

use super::config::{STDERR_FILE, STDOUT_FILE, StarterError, io_err};
use crate::isolation::GuestUser;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The sandbox-relative name of a transferred file: its last component, as
/// HTCondor places input files flat in the scratch directory.
pub(crate) fn local_name(name: &str) -> Result<String, StarterError> {
    let base = name.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    if base.is_empty() || base == "." || base == ".." || base.contains('\0') {
        return Err(StarterError::BadFileName(name.to_string()));
    }
    if base == STDOUT_FILE || base == STDERR_FILE {
        return Err(StarterError::BadFileName(name.to_string()));
    }
    Ok(base.to_string())
}

/// Writes a fetched input file (blocking): a new file with `mode`, owned
/// by the guest user.
pub(crate) fn write_input(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    user: Option<GuestUser>,
) -> std::io::Result<()> {
    // create_new + O_NOFOLLOW: never write through a planted link.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(mode)
        .open(path)?;
    std::io::Write::write_all(&mut f, bytes)?;
    f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    if let Some(u) = user {
        std::os::unix::fs::fchown(&f, Some(u.uid), Some(u.gid))?;
    }
    Ok(())
}

/// Opens a sandbox file for upload without following a symlink the guest
/// may have planted, and refuses hard links (a guest could link a file it
/// cannot read, and the daemon would send it home).
pub(crate) fn open_output(path: &Path) -> Result<Option<File>, std::io::Error> {
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let md = f.metadata()?;
    if !md.is_file() || md.nlink() != 1 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "not a plain file with one link",
        ));
    }
    Ok(Some(f))
}

/// The guest's stdout and stderr capture files: the guest writes through
/// `out`/`err` (dup'ed for each start), the daemon reads through the
/// handles [`Capture::create`] returns beside them.
pub(crate) struct Capture {
    pub(crate) out: File,
    pub(crate) err: File,
    pub(crate) out_path: PathBuf,
    pub(crate) err_path: PathBuf,
}

impl Capture {
    /// Creates both capture files; returns them with their read handles
    /// (stdout, stderr).
    pub(crate) fn create(
        sandbox: &Path,
        user: Option<GuestUser>,
    ) -> Result<(Capture, [File; 2]), StarterError> {
        let out_path = sandbox.join(STDOUT_FILE);
        let err_path = sandbox.join(STDERR_FILE);
        let (out, out_r) = capture_file(&out_path, user)?;
        let (err, err_r) = capture_file(&err_path, user)?;
        let capture = Capture {
            out,
            err,
            out_path,
            err_path,
        };
        Ok((capture, [out_r, err_r]))
    }

    /// Current lengths of the capture files (stdout, stderr).
    pub(crate) fn lens(&self) -> [u64; 2] {
        [&self.out, &self.err].map(|f| f.metadata().map_or(0, |m| m.len()))
    }
}

/// Creates a capture file (guest writes through `w`) and keeps a separate
/// read handle: the daemon reads through it, whatever the guest does to
/// the name later.
fn capture_file(path: &Path, user: Option<GuestUser>) -> Result<(File, File), StarterError> {
    let w = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o600)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    if let Some(u) = user {
        std::os::unix::fs::fchown(&w, Some(u.uid), Some(u.gid)).map_err(|e| io_err(path, e))?;
    }
    let r = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    Ok((w, r))
}

/// Removes from `execute_dir` what runs that are over left behind: their
/// sandboxes (a loop-mounted one unmounted first), their file system
/// images, checkpoint bundles in transit and CRIU image directories
/// (named after the guest, `NAME`, `NAME.disk`, `NAME.bundle`,
/// `NAME.criu`). `live`
/// gives the guests that still run; it is asked after the directory is
/// listed, so a guest placed meanwhile (it is in the guest table before its
/// sandbox exists) is never touched. Returns how many entries went.
pub(crate) fn remove_stale(
    execute_dir: &Path,
    live: impl FnOnce() -> std::collections::HashSet<String>,
) -> usize {
    let Ok(rd) = std::fs::read_dir(execute_dir) else {
        return 0;
    };
    let entries: Vec<(String, PathBuf)> = rd
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.to_string(), e.path())))
        .collect();
    let live = live();
    let mut removed = 0;
    for (name, path) in entries {
        let guest = name
            .strip_suffix(".bundle")
            .or_else(|| name.strip_suffix(".criu"))
            .or_else(|| name.strip_suffix(crate::isolation::IMAGE_SUFFIX))
            .unwrap_or(&name);
        if live.contains(guest) {
            continue;
        }
        // A crash left its file system mounted: out of the way first.
        if crate::isolation::is_mount_point(&path) {
            crate::isolation::sandbox_disk_unmount(&path);
        }
        // Never follow a link: a guest could have planted one.
        let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        let gone = if is_dir {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match gone {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a stale sandbox")
            }
        }
    }
    if removed > 0 {
        tracing::info!(removed, dir = %execute_dir.display(), "stale sandboxes of dead runs removed");
    }
    removed
}

/// Metadata of a sandbox file, to find new or changed ones.
pub(crate) type Snapshot = BTreeMap<String, (u64, i64, i64)>;

pub(crate) fn snapshot(dir: &Path) -> Snapshot {
    let mut m = Snapshot::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if let (Some(n), Ok(md)) = (e.file_name().to_str(), e.metadata())
                && md.is_file()
            {
                m.insert(n.to_string(), (md.len(), md.mtime(), md.mtime_nsec()));
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_stay_in_the_sandbox() {
        assert_eq!(local_name("data/in.txt").unwrap(), "in.txt");
        assert_eq!(local_name("/abs/prog").unwrap(), "prog");
        for bad in ["", "..", "a/..", ".", STDOUT_FILE] {
            assert!(local_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(local_name("x/").unwrap(), "x");
    }
}
