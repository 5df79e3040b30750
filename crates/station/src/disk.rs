//! Full disks, said plainly (issue 14): an I/O error that means "no space
//! left" (ENOSPC, or the user's quota: EDQUOT) becomes "disk full at PATH"
//! wherever it is reported, so that users and operators know what to free,
//! and the job is kept queued rather than held or completed with part of
//! its output.

use std::io;
use std::path::Path;

/// What a refusal or an eviction for a full disk says, before the path.
pub const DISK_FULL: &str = "disk full at";

/// Whether `e` says the file system (or the quota) is full.
pub fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

/// "disk full at PATH" for a full file system, else "PATH: e".
pub fn describe(path: &Path, e: &io::Error) -> String {
    if is_full(e) {
        format!("{DISK_FULL} {}", path.display())
    } else {
        format!("{}: {e}", path.display())
    }
}

/// Whether a message (a refusal's, an eviction's) is about a full disk.
pub fn says_full(message: &str) -> bool {
    message.contains(DISK_FULL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_disks_are_named_with_their_path() {
        let full = io::Error::from_raw_os_error(libc::ENOSPC);
        let quota = io::Error::from_raw_os_error(libc::EDQUOT);
        let other = io::Error::from_raw_os_error(libc::EACCES);
        let p = Path::new("/var/spool/x");
        assert_eq!(describe(p, &full), "disk full at /var/spool/x");
        assert!(says_full(&describe(p, &quota)));
        assert!(!says_full(&describe(p, &other)));
    }
}
