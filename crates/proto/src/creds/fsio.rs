//! The few file operations the credentials need: random bytes from the
//! kernel, and whole-file replacement that a crash cannot tear.
//!
//! Plain std I/O only, like the old key loader: no daemon logic here.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Fills `buf` from the kernel's CSPRNG (`getrandom(2)`: one system call,
/// where opening `/dev/urandom` for each claim's nonce took three).
pub fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    getrandom::fill(buf).map_err(|e| std::io::Error::other(e.to_string()))
}

/// `n` random bytes as lowercase hex (`2n` digits).
pub fn random_hex(n: usize) -> std::io::Result<String> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = vec![0u8; n];
    fill_random(&mut bytes)?;
    let mut hex = String::with_capacity(2 * n);
    for b in bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    Ok(hex)
}

/// A fresh token id: 128 random bits in hex (DESIGN.md, Trust model).
pub fn new_token_id() -> std::io::Result<String> {
    random_hex(16)
}

/// A fresh claim nonce: 128 random bits in hex. Random rather than a
/// counter, so a restarted coordinator can never repeat one (a host would
/// refuse the repeat as a replay).
pub fn new_nonce() -> std::io::Result<String> {
    random_hex(16)
}

/// Creates `dir` and missing parents with mode 0700 (daemon state is
/// private, DESIGN.md). Existing directories keep their mode.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Distinguishes the temporary files of concurrent writers in one process.
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// A temporary file next to `path` (same directory, hence same file
/// system, so it can be renamed or linked over `path`).
fn temp_path(path: &Path) -> std::path::PathBuf {
    let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp.{}.{seq}", std::process::id()))
}

/// Writes `bytes` to a new temporary file beside `path` with `mode`, and
/// flushes it to disk. Returns the temporary path.
fn write_temp(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<std::path::PathBuf> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        // Explicitly, so the umask cannot make a public file private or
        // the other way round.
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Flushes the directory entry of `path` (after a rename or link), so the
/// new name survives a crash.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)?.sync_all()
}

/// Replaces `path` with `bytes` atomically: temporary file, fsync, rename,
/// fsync of the directory. A reader sees the old or the new content, never
/// a mix, and a crash leaves one of the two.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let tmp = write_temp(path, bytes, mode)?;
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync_parent(path)
}

/// Creates `path` with `bytes` unless it exists: the content is complete
/// before the name appears (temporary file + hard link), and an existing
/// file is never overwritten. Returns `false` if `path` already existed.
pub fn create_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<bool> {
    let tmp = write_temp(path, bytes, mode)?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_parent(path)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        // File systems without hard links (EPERM, ENOTSUP): create in place,
        // still never over an existing file.
        Err(e) if e.raw_os_error() == Some(1) || e.kind() == std::io::ErrorKind::Unsupported => {
            create_in_place(path, bytes, mode)
        }
        Err(e) => Err(e),
    }
}

fn create_in_place(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<bool> {
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    };
    f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    sync_parent(path)?;
    Ok(true)
}

/// Reads `path` as UTF-8, or `None` if it does not exist.
pub fn read_optional(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
