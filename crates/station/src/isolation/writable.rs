//! World-writable directories: where a guest could leave something for the
//! next process of its uid, or read what others leave.
//!
//! Found by walking directory trees (never following links, never into
//! pseudo or network file systems, whose walk could hang or trigger
//! automounts), bounded in how many directories one walk visits. Two
//! uses: the guest's view puts a private tmpfs on every one inside the
//! host trees it shows ([`scan`], once per process), and a slot's release
//! removes what its uid left in every one on the host ([`scan_host`], for
//! guests without a view of their own, `scrub.rs`).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

/// Most directories one walk visits before it stops (and says so).
const MAX_DIRS: usize = 500_000;

/// File system types never walked (`statfs` magic numbers): pseudo file
/// systems, and network or user-space ones whose walk may hang.
const SKIPPED_FS: [i64; 16] = [
    0x9fa0,      // proc
    0x6265_6572, // sysfs
    0x0027_e0eb, // cgroup
    0x6367_7270, // cgroup2
    0x1cd1,      // devpts
    0x6462_6720, // debugfs
    0x7472_6163, // tracefs
    0x7363_6673, // securityfs
    0xcafe_4a11, // bpf
    0x6573_5543, // fusectl
    0x6265_6570, // configfs
    0x0187,      // autofs
    0x6969,      // nfs
    0xff53_4d42, // cifs
    0xfe53_4d42, // smb2
    0x6573_5546, // fuse
];

/// Whether directories on the file system of `dir` are walked.
fn walkable(dir: &Path) -> bool {
    match nix::sys::statfs::statfs(dir) {
        Ok(s) => !SKIPPED_FS.contains(&s.filesystem_type().0),
        Err(_) => false,
    }
}

/// Mode bits that make a directory world-writable.
fn world_writable(mode: u32) -> bool {
    mode & 0o002 != 0
}

/// World-writable directories at or below `roots` with their modes,
/// skipping `except` (and what lies below; a root itself is always
/// looked at). Sorted; at most
/// [`MAX_DIRS`] directories visited.
pub(crate) fn walk(roots: &[PathBuf], except: &[PathBuf], max_depth: usize) -> Vec<(PathBuf, u32)> {
    let started = Instant::now();
    let mut fs_ok: HashMap<u64, bool> = HashMap::new();
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, usize)> = roots.iter().map(|r| (r.clone(), 0)).collect();
    let mut visited = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(md) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !md.is_dir() {
            continue;
        }
        let ok = *fs_ok.entry(md.dev()).or_insert_with(|| walkable(&dir));
        if !ok {
            continue;
        }
        visited += 1;
        if visited > MAX_DIRS {
            tracing::warn!(
                dirs = MAX_DIRS,
                "world-writable directory scan stopped early: too many directories"
            );
            break;
        }
        if world_writable(md.mode()) {
            out.push((dir.clone(), md.mode()));
        }
        if depth >= max_depth {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            // d_type: no stat for what is not a directory.
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) && !except.iter().any(|x| p.starts_with(x)) {
                stack.push((p, depth + 1));
            }
        }
    }
    out.sort();
    tracing::debug!(
        roots = ?roots,
        dirs = visited,
        found = out.len(),
        ms = started.elapsed().as_millis() as u64,
        "world-writable directories"
    );
    out
}

/// [`walk`] of the host trees a guest's view shows (`/usr`, `/etc`, …),
/// once per process: the trees change with packages, not with guests.
pub(crate) fn scan(trees: &[PathBuf]) -> Vec<(PathBuf, u32)> {
    /// The trees walked and what was found there.
    type Found = (Vec<PathBuf>, Vec<(PathBuf, u32)>);
    static CACHE: OnceLock<Found> = OnceLock::new();
    let (roots, found) = CACHE.get_or_init(|| (trees.to_vec(), walk(trees, &[], usize::MAX)));
    if roots == trees {
        found.clone()
    } else {
        walk(trees, &[], usize::MAX)
    }
}

/// How deep below `/` [`scan_host`] looks: the system's own places
/// (`/tmp`, `/var/tmp`, `/var/crash`, `/var/lib/php/sessions`,
/// `/tmp/.X11-unix`) and what people make near the top (`/srv/drop`,
/// `/home/NAME/shared`) are within it; a whole home tree is not walked
/// (2 285 directories and 0.1 s on the development machine, against
/// 11 s for all of `/`).
const HOST_DEPTH: usize = 4;

/// The world-writable directories of the host's real file systems (`/`
/// and what is mounted below it, pseudo and network file systems aside)
/// down to [`HOST_DEPTH`], except below `except` (the station's own
/// directories). Once per process.
pub(crate) fn scan_host(except: &[PathBuf]) -> Vec<PathBuf> {
    static CACHE: OnceLock<Vec<PathBuf>> = OnceLock::new();
    CACHE
        .get_or_init(|| scan_host_now(except))
        .iter()
        .filter(|p| !except.iter().any(|e| p.starts_with(e)))
        .cloned()
        .collect()
}

fn scan_host_now(except: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots = vec![PathBuf::from("/")];
    // Of /dev (device nodes, nothing to leave files in) only /dev/shm.
    roots.push(PathBuf::from("/dev/shm"));
    let mut except = except.to_vec();
    except.push(PathBuf::from("/dev"));
    except.push(PathBuf::from("/proc"));
    except.push(PathBuf::from("/sys"));
    let mut v: Vec<PathBuf> = walk(&roots, &except, HOST_DEPTH)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn finds_world_writable_directories_and_not_links_or_files() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        for p in ["a/b", "c", "skip/me"] {
            std::fs::create_dir_all(r.join(p)).unwrap();
        }
        let mode = |p: &str, m: u32| {
            std::fs::set_permissions(r.join(p), std::fs::Permissions::from_mode(m)).unwrap()
        };
        mode("a/b", 0o1777);
        mode("c", 0o777);
        mode("skip/me", 0o777);
        std::fs::write(r.join("file"), "").unwrap();
        mode("file", 0o777);
        std::os::unix::fs::symlink(r.join("c"), r.join("link")).unwrap();
        let found = walk(&[r.to_path_buf()], &[r.join("skip")], usize::MAX);
        assert_eq!(walk(&[r.to_path_buf()], &[], 1).len(), 1, "depth 1: c only");
        let paths: Vec<&Path> = found.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(paths, vec![r.join("a/b").as_path(), r.join("c").as_path()]);
        assert_eq!(found[0].1 & 0o7777, 0o1777);
    }

    #[test]
    fn proc_is_never_walked() {
        assert!(!walkable(Path::new("/proc")));
        assert!(walk(&[PathBuf::from("/proc")], &[], usize::MAX).is_empty());
    }
}
