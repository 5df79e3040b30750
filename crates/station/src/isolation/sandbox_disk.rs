//! A sandbox of bounded size: `request_disk` enforced.
//!
//! Each guest's sandbox is a file system of its own, an ext4 image of the
//! size it asked for (`request_disk`, else `[isolation] default_disk_mb`)
//! loop-mounted on the sandbox directory. What it writes there — its
//! files, its stdout and stderr capture files — stops at that size with
//! ENOSPC, however fast it writes; the starter holds it as soon as it has
//! used its request ([`SandboxDisk::usage`], HTCondor's `JobOutOfResources`
//! hold). The image is sparse (it takes on the host's disk what the guest
//! wrote), mounted `nosuid,nodev,discard` (what the guest deletes is given
//! back to the host at once), without a journal (a sandbox does not
//! outlive a crash of its station). Unmounting and deleting the image is
//! the sandbox's removal: constant time, however many files it holds.
//!
//! Why not project quotas: they need a file system made with them (ext4's
//! `project` feature at `mkfs` time, XFS's `pquota` mount option), which
//! workstations rarely have; a loop mount works on any file system the
//! execute directory is on. Measured on the development machine: `mkfs`
//! 23–28 ms whatever the size (64 MiB to 100 GiB), `mount` 6–107 ms,
//! `umount` 29–52 ms; a 1 GiB image offers 992 MiB; writes through the
//! loop device ran at 208–671 MB/s against 979 MB/s–1.1 GB/s beside it.
//! Where loop devices cannot be had (not root, no `/dev/loop-control`, no
//! `mkfs.ext4`), the sandbox is a plain directory whose usage the starter
//! measures by walking it ([`usage_of_dir`]), which bounds nothing between
//! two walks. `docs/security.md` has the comparison.
//!
//! The image lives beside the sandbox in the execute directory
//! (`<guest>.disk`, root's, 0600); a station that crashed leaves both, and
//! its next start unmounts and removes them with the other dead runs'
//! sandboxes (`host::starter::sandbox::remove_stale`).

use super::{GuestUser, IsolationError, prepare_sandbox};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `[isolation] disk`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiskMode {
    /// Loop-mounted sandboxes where the station can make them, measured
    /// usage otherwise (said once in the log).
    #[default]
    Auto,
    /// Loop-mounted sandboxes, or the station does not start.
    Loop,
    /// Measured usage only.
    Measure,
}

/// The default `[isolation] default_disk_mb`: a job that says nothing
/// gets this much disk.
pub const DEFAULT_DISK_MB: u64 = 4096;

/// The suffix of a sandbox's image in the execute directory.
pub const IMAGE_SUFFIX: &str = ".disk";

/// Where the tools are looked for.
const SBIN: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

fn find(name: &str) -> Option<PathBuf> {
    SBIN.iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// How a station bounds its guests' sandboxes.
#[derive(Clone, Debug)]
pub struct SandboxDisks {
    /// `mkfs.ext4` and `mount`, when sandboxes are loop-mounted.
    tools: Option<(PathBuf, PathBuf)>,
}

impl SandboxDisks {
    /// Loop-mounted sandboxes where `mode` asks for them and this host
    /// allows them (root, `/dev/loop-control`, `mkfs.ext4`, `mount`).
    pub fn for_station(mode: DiskMode) -> Result<Self, IsolationError> {
        if mode == DiskMode::Measure {
            tracing::info!("sandbox disk usage measured ([isolation] disk = \"measure\")");
            return Ok(SandboxDisks { tools: None });
        }
        let found = || -> Result<(PathBuf, PathBuf), String> {
            if !nix::unistd::geteuid().is_root() {
                return Err("not root".into());
            }
            if !Path::new("/dev/loop-control").exists() {
                return Err("no /dev/loop-control".into());
            }
            let mkfs = find("mkfs.ext4").ok_or("no mkfs.ext4 (package e2fsprogs)")?;
            let mount = find("mount").ok_or("no mount (package mount)")?;
            Ok((mkfs, mount))
        };
        match found() {
            Ok(t) => {
                tracing::info!(
                    "guest sandboxes are loop-mounted file systems of their request_disk"
                );
                Ok(SandboxDisks { tools: Some(t) })
            }
            Err(why) if mode == DiskMode::Auto => {
                tracing::warn!(reason = %why,
                    "sandboxes are plain directories: request_disk is enforced by measuring \
                     (a guest may exceed it between two measurements)");
                Ok(SandboxDisks { tools: None })
            }
            Err(why) => Err(IsolationError::io(
                Path::new("/dev/loop-control"),
                std::io::Error::other(format!(
                    "[isolation] disk = \"loop\" but loop-mounted sandboxes are unavailable: {why}"
                )),
            )),
        }
    }

    /// Whether sandboxes are loop-mounted.
    pub fn bounded(&self) -> bool {
        self.tools.is_some()
    }

    /// Makes `sandbox` (a directory of the execute directory) a file system
    /// of `kib` KiB usable by the guest, owned by `user`, mode 0700; or,
    /// without loop mounts, a plain sandbox ([`prepare_sandbox`]).
    /// Blocking (tens of milliseconds).
    pub fn make(
        &self,
        sandbox: &Path,
        kib: u64,
        user: Option<GuestUser>,
    ) -> Result<SandboxDisk, IsolationError> {
        let limit = kib.saturating_mul(1024);
        let Some((mkfs, mount)) = &self.tools else {
            prepare_sandbox(sandbox, user)?;
            return Ok(SandboxDisk {
                dir: sandbox.to_path_buf(),
                image: None,
                limit,
            });
        };
        let image = image_of(sandbox);
        // A dead run's leftovers of the same name go first.
        unmount(sandbox);
        let _ = std::fs::remove_file(&image);
        prepare_sandbox(sandbox, None)?;
        let disk = SandboxDisk {
            dir: sandbox.to_path_buf(),
            image: Some(image.clone()),
            limit,
        };
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&image)
            .map_err(|e| IsolationError::io(&image, e))?;
        f.set_len(image_bytes(limit))
            .map_err(|e| IsolationError::io(&image, e))?;
        drop(f);
        run(Command::new(mkfs)
            .args(["-q", "-F", "-m", "0", "-O", "^has_journal,^resize_inode"])
            .args(["-E", "lazy_itable_init=1,nodiscard"])
            .arg(&image))?;
        run(Command::new(mount)
            .args(["-t", "ext4", "-o", "loop,nosuid,nodev,noatime,discard"])
            .arg(&image)
            .arg(sandbox))?;
        let _ = std::fs::remove_dir(sandbox.join("lost+found"));
        // The file system's root is the sandbox: the guest's, 0700.
        prepare_sandbox(sandbox, user)?;
        Ok(disk)
    }
}

/// What mkfs must make for `limit` usable bytes: ext4's inode tables and
/// group descriptors take about 3 % (more on small images), so 1/16 and
/// 8 MiB more; rounded up to 4 KiB blocks.
fn image_bytes(limit: u64) -> u64 {
    let raw = limit
        .saturating_add(limit / 16)
        .saturating_add(8 << 20)
        .max(16 << 20);
    raw.div_ceil(4096).saturating_mul(4096)
}

/// `<sandbox>.disk`.
pub fn image_of(sandbox: &Path) -> PathBuf {
    let mut s = sandbox.as_os_str().to_os_string();
    s.push(IMAGE_SUFFIX);
    PathBuf::from(s)
}

fn run(cmd: &mut Command) -> Result<(), IsolationError> {
    let program = PathBuf::from(cmd.get_program());
    let out = cmd
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| IsolationError::Spawn {
            program: program.clone(),
            source,
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(IsolationError::io(
        &program,
        std::io::Error::other(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    ))
}

/// Detaches whatever is mounted on `dir` (lazily: nothing of a dead guest
/// keeps it busy for long). Quiet when nothing is.
pub fn unmount(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: umount2 on a valid C string; UMOUNT_NOFOLLOW: a guest's
    // symlink in the sandbox's place unmounts nothing.
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH | libc::UMOUNT_NOFOLLOW) == 0 }
}

/// Whether `dir` is a mount point (another device than its parent's).
pub fn is_mount_point(dir: &Path) -> bool {
    let (Ok(m), Some(parent)) = (std::fs::symlink_metadata(dir), dir.parent()) else {
        return false;
    };
    m.is_dir() && std::fs::metadata(parent).is_ok_and(|p| p.dev() != m.dev())
}

/// One guest's sandbox and, when bounded, its file system.
#[derive(Debug)]
pub struct SandboxDisk {
    dir: PathBuf,
    /// The image behind the mount; `None` for a plain directory.
    image: Option<PathBuf>,
    /// What the guest asked for, bytes.
    limit: u64,
}

impl SandboxDisk {
    /// (bytes used, bytes asked for): from the file system when the
    /// sandbox has one (one `statvfs`), else by walking it.
    pub fn usage(&self) -> (u64, u64) {
        let used = match &self.image {
            Some(_) => nix::sys::statvfs::statvfs(&self.dir)
                .map(|s| {
                    let f = s.fragment_size();
                    s.blocks().saturating_sub(s.blocks_free()) * f
                })
                .unwrap_or(0),
            None => usage_of_dir(&self.dir),
        };
        (used, self.limit)
    }

    /// The sandbox directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the guest asked for, bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether the sandbox is a file system of its own.
    pub fn bounded(&self) -> bool {
        self.image.is_some()
    }

    /// Unmounts the file system and deletes its image (at once, whatever
    /// it holds); the (empty) directory stays for the caller to remove.
    pub fn remove(&mut self) {
        if let Some(image) = self.image.take() {
            unmount(&self.dir);
            if let Err(e) = std::fs::remove_file(&image)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(path = %image.display(), error = %e, "cannot delete a sandbox image");
            }
        }
    }
}

impl Drop for SandboxDisk {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Bytes the files below `dir` take (allocated blocks; links not
/// followed, other file systems not entered), at most 1 000 000 entries.
pub fn usage_of_dir(dir: &Path) -> u64 {
    let Ok(top) = std::fs::symlink_metadata(dir) else {
        return 0;
    };
    let dev = top.dev();
    let mut total = 0u64;
    let mut seen = 0usize;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > 1_000_000 {
                return total;
            }
            let Ok(m) = e.metadata() else { continue };
            total = total.saturating_add(m.blocks().saturating_mul(512));
            if m.is_dir() && m.dev() == dev {
                stack.push(e.path());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_leave_room_for_ext4() {
        assert_eq!(image_bytes(0), 16 << 20);
        let gib = 1u64 << 30;
        let b = image_bytes(gib);
        assert!(b > gib + gib / 20 && b.is_multiple_of(4096), "{b}");
        assert_eq!(image_of(Path::new("/e/g-1")), PathBuf::from("/e/g-1.disk"));
    }

    #[test]
    fn measured_usage_counts_files_below() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/f"), vec![1u8; 100_000]).unwrap();
        let used = usage_of_dir(d.path());
        assert!(used >= 100_000, "{used}");
        let disk = SandboxDisk {
            dir: d.path().to_path_buf(),
            image: None,
            limit: 50_000,
        };
        let (u, l) = disk.usage();
        assert!(u >= 100_000 && l == 50_000);
    }

    #[test]
    fn a_loop_mounted_sandbox_stops_at_its_size() {
        if !nix::unistd::geteuid().is_root() {
            println!("skipped: needs root");
            return;
        }
        let disks = SandboxDisks::for_station(DiskMode::Auto).unwrap();
        if !disks.bounded() {
            println!("skipped: no loop mounts here");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let sb = d.path().join("g1");
        let mut disk = disks.make(&sb, 8 * 1024, None).unwrap();
        assert!(is_mount_point(&sb));
        assert!(!sb.join("lost+found").exists());
        // Write until the file system is full: it stops near the size.
        let mut f = std::fs::File::create(sb.join("flood")).unwrap();
        let chunk = vec![0u8; 1 << 20];
        let mut wrote = 0u64;
        let err = loop {
            match std::io::Write::write_all(&mut f, &chunk) {
                Ok(()) => wrote += chunk.len() as u64,
                Err(e) => break e,
            }
            assert!(wrote < 64 << 20, "no bound");
        };
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
        drop(f);
        let (used, limit) = disk.usage();
        assert_eq!(limit, 8 << 20);
        assert!(used >= limit, "{used} < {limit}");
        disk.remove();
        assert!(!is_mount_point(&sb));
        assert!(!image_of(&sb).exists());
        assert_eq!(std::fs::read_dir(&sb).unwrap().count(), 0);
    }
}
