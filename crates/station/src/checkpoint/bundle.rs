//! The first bundle format (`GLCK`, before the chunked one), still read: the
//! magic `GLCK`, a big-endian `u32` manifest length, the manifest as JSON
//! (names, sizes, SHA-256 digests, modes), then each file's bytes in
//! manifest order. Homes may hold checkpoints in it, and older hosts send
//! it; new checkpoints are chunked bundles (`format.rs`). Also the
//! [`Manifest`] both formats share, and [`read_bundle`], which reads
//! either. Read and written as streams, never held in memory.

use super::{CheckpointError, io_err};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// First bytes of every bundle.
pub const MAGIC: &[u8; 4] = b"GLCK";
/// Largest manifest accepted (bytes of JSON).
pub const MAX_MANIFEST: u32 = 1 << 20;
/// Most files one checkpoint may hold.
pub const MAX_FILES: usize = 4096;

/// One file of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Plain file name in the sandbox (no `/`).
    pub name: String,
    pub size: u64,
    /// Lower-case hex SHA-256 of the content (first format only: a chunked
    /// bundle carries a digest per chunk instead).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sha256: String,
    /// Permission bits (0o777 at most: never set-id), restored with the
    /// file. CRIU checks them when it reopens a file the job had open.
    #[serde(default = "default_mode")]
    pub mode: u32,
}

fn default_mode() -> u32 {
    0o600
}

impl ManifestEntry {
    /// An entry of a chunked bundle (no whole-file digest).
    pub fn new(name: impl Into<String>, size: u64, mode: u32) -> Self {
        ManifestEntry {
            name: name.into(),
            size,
            sha256: String::new(),
            mode,
        }
    }
}

fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// What a checkpoint holds and how to check it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    /// `self` or `criu`.
    pub backend: String,
    /// Counts this run's checkpoints (per starter run; informational).
    pub seq: u64,
    /// Bytes of stdout/stderr the job had written when it checkpointed: the
    /// next run's output continues from there, so the spooled streams are
    /// cut back to these lengths when the checkpoint is restored.
    pub stdout_len: u64,
    pub stderr_len: u64,
    pub files: Vec<ManifestEntry>,
    /// The uid a CRIU dump ran as (its slot account's): a restore must run
    /// as the same uid (`SlotPool::lease_uid`). `None` for other backends
    /// and older checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// 2 for a chunked bundle (`GLC2`); 0 for the first format.
    #[serde(skip_serializing_if = "is_zero")]
    pub format: u32,
    /// A chunked bundle's chunk size.
    #[serde(skip_serializing_if = "is_zero")]
    pub chunk_bytes: u64,
    /// An upload's base: the root of the checkpoint whose chunks it may
    /// name instead of sending (hex).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// A chunked bundle's root digest (hex), known once it was read or
    /// written whole; never part of the header itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

impl Manifest {
    /// Sum of the file sizes.
    pub fn payload_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub(crate) fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Reads the manifest after the magic, checking names and limits.
fn read_manifest(r: &mut impl Read) -> Result<Manifest, CheckpointError> {
    let mut head = [0u8; 4];
    r.read_exact(&mut head)
        .map_err(|_| CheckpointError::Corrupt("shorter than its header".into()))?;
    let len = u32::from_be_bytes(head);
    if len > MAX_MANIFEST {
        return Err(CheckpointError::Corrupt(format!(
            "manifest of {len} bytes is too large"
        )));
    }
    let mut json = vec![0u8; len as usize];
    r.read_exact(&mut json)
        .map_err(|_| CheckpointError::Corrupt("truncated manifest".into()))?;
    let m: Manifest = serde_json::from_slice(&json)
        .map_err(|e| CheckpointError::Corrupt(format!("manifest: {e}")))?;
    if m.files.len() > MAX_FILES {
        return Err(CheckpointError::Corrupt("too many files".into()));
    }
    let mut seen = std::collections::HashSet::new();
    for f in &m.files {
        if !plain_name(&f.name) || !seen.insert(f.name.as_str()) {
            return Err(CheckpointError::BadName(f.name.clone()));
        }
        if f.sha256.len() != 64 {
            return Err(CheckpointError::Corrupt(format!(
                "{}: digest is not SHA-256",
                f.name
            )));
        }
    }
    Ok(m)
}

/// Streams `size` bytes of `r` into `sink` (if any), returning the digest.
fn copy_hashed(
    r: &mut impl Read,
    size: u64,
    mut sink: Option<&mut dyn Write>,
    name: &str,
) -> Result<String, CheckpointError> {
    let mut h = Sha256::new();
    let mut left = size;
    let mut buf = vec![0u8; 1 << 20];
    while left > 0 {
        let n = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        r.read_exact(&mut buf[..n]).map_err(|_| {
            CheckpointError::Corrupt(format!(
                "{name}: truncated ({left} of {size} bytes missing)"
            ))
        })?;
        h.update(&buf[..n]);
        if let Some(s) = sink.as_deref_mut() {
            s.write_all(&buf[..n])
                .map_err(|e| CheckpointError::Corrupt(format!("{name}: {e}")))?;
        }
        left -= n as u64;
    }
    Ok(hex(&h.finalize()))
}

/// Reads the magic: which format follows.
pub(crate) fn read_magic(r: &mut impl Read) -> Result<[u8; 4], CheckpointError> {
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)
        .map_err(|_| CheckpointError::Corrupt("shorter than its header".into()))?;
    if &magic != MAGIC && &magic != super::format::MAGIC2 {
        return Err(CheckpointError::Corrupt("bad magic".into()));
    }
    Ok(magic)
}

/// Reads a whole bundle of either format, checking every size and digest
/// and that nothing follows the end; with `into`, also writes the files
/// there (created new, never through a link). Files are written as they
/// come: a caller that must not keep a partial restore unpacks into a
/// directory of its own ([`super::unpack`] does).
pub fn read_bundle(r: &mut impl Read, into: Option<&Path>) -> Result<Manifest, CheckpointError> {
    read_bundle_routed(r, &|name: &str| into.map(|d| d.join(name)))
}

/// [`read_bundle`] where `route` says where each file goes (`None`: check
/// it only).
pub fn read_bundle_routed(
    r: &mut impl Read,
    route: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Manifest, CheckpointError> {
    if &read_magic(r)? == super::format::MAGIC2 {
        return super::unpack::read_chunked(r, route);
    }
    read_v1(r, route)
}

/// The first format's files after the magic.
pub(crate) fn read_v1(
    r: &mut impl Read,
    route: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Manifest, CheckpointError> {
    let m = read_manifest(r)?;
    for f in &m.files {
        let digest = match route(&f.name) {
            Some(path) => {
                let mut out = open_new(&path)?;
                let d = copy_hashed(r, f.size, Some(&mut out), &f.name)?;
                out.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(f.mode & 0o777))
                    .map_err(|e| io_err(&path, e))?;
                d
            }
            None => copy_hashed(r, f.size, None, &f.name)?,
        };
        if digest != f.sha256 {
            return Err(CheckpointError::Corrupt(format!(
                "{}: SHA-256 mismatch",
                f.name
            )));
        }
    }
    let mut extra = [0u8; 1];
    match r.read(&mut extra) {
        Ok(0) => Ok(m),
        Ok(_) => Err(CheckpointError::Corrupt("bytes after the last file".into())),
        Err(e) => Err(CheckpointError::Corrupt(e.to_string())),
    }
}

/// Verifies a bundle file; returns its manifest.
pub fn verify_bundle_file(path: &Path) -> Result<Manifest, CheckpointError> {
    let f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    read_bundle(&mut std::io::BufReader::with_capacity(1 << 20, f), None)
}

/// One file of a bundle being written: its name in the bundle and where it
/// is on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleSource {
    pub name: String,
    pub path: PathBuf,
}

/// Opens a checkpoint file for reading without following a link (a guest
/// could plant one to make the daemon ship any file home); only regular
/// files.
pub(crate) fn open_source(src: &BundleSource) -> Result<std::fs::File, CheckpointError> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(&src.path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => CheckpointError::Missing(src.name.clone()),
            _ if e.raw_os_error() == Some(libc::ELOOP) => {
                CheckpointError::BadName(src.name.clone())
            }
            _ => io_err(&src.path, e),
        })?;
    match f.metadata() {
        Ok(m) if m.is_file() => Ok(f),
        Ok(_) => Err(CheckpointError::BadName(src.name.clone())),
        Err(e) => Err(io_err(&src.path, e)),
    }
}

/// Writes a bundle of `sources` in the first format to `w` (what older
/// hosts sent; kept to test that such checkpoints still restore) without
/// holding the files in memory: one pass hashes them for the manifest, a second copies them and
/// checks they did not change in between (callers collect from a stopped
/// or exited job). Returns the manifest written.
pub fn write_bundle(
    mut manifest: Manifest,
    sources: &[BundleSource],
    w: &mut impl Write,
) -> Result<Manifest, CheckpointError> {
    if sources.len() > MAX_FILES {
        return Err(CheckpointError::Corrupt("too many files".into()));
    }
    manifest.files.clear();
    for src in sources {
        if !plain_name(&src.name) {
            return Err(CheckpointError::BadName(src.name.clone()));
        }
        let mut f = open_source(src)?;
        let md = f.metadata().map_err(|e| io_err(&src.path, e))?;
        let size = md.len();
        let sha256 = copy_hashed(&mut f, size, None, &src.name)?;
        manifest.files.push(ManifestEntry {
            name: src.name.clone(),
            size,
            sha256,
            mode: std::os::unix::fs::PermissionsExt::mode(&md.permissions()) & 0o777,
        });
    }
    let json = serde_json::to_vec(&manifest)
        .map_err(|e| CheckpointError::Corrupt(format!("manifest: {e}")))?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|l| *l <= MAX_MANIFEST)
        .ok_or_else(|| CheckpointError::Corrupt("manifest too large".into()))?;
    let werr = |e: std::io::Error| CheckpointError::Corrupt(format!("writing bundle: {e}"));
    w.write_all(MAGIC).map_err(werr)?;
    w.write_all(&len.to_be_bytes()).map_err(werr)?;
    w.write_all(&json).map_err(werr)?;
    for (src, entry) in sources.iter().zip(&manifest.files) {
        let mut f = open_source(src)?;
        let digest = copy_hashed(&mut f, entry.size, Some(w), &src.name)?;
        if digest != entry.sha256 {
            return Err(CheckpointError::Corrupt(format!(
                "{}: changed while it was collected",
                src.name
            )));
        }
    }
    w.flush().map_err(werr)?;
    Ok(manifest)
}

/// [`write_bundle`] into a new file at `out` (mode 0600), synced.
pub fn write_bundle_file(
    manifest: Manifest,
    sources: &[BundleSource],
    out: &Path,
) -> Result<Manifest, CheckpointError> {
    let f = open_new(out)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let m = write_bundle(manifest, sources, &mut w)?;
    let f = w.into_inner().map_err(|e| io_err(out, e.into_error()))?;
    f.sync_all().map_err(|e| io_err(out, e))?;
    Ok(m)
}

pub(crate) fn open_new(path: &Path) -> Result<std::fs::File, CheckpointError> {
    use std::os::unix::fs::OpenOptionsExt;
    if path.symlink_metadata().is_ok() {
        std::fs::remove_file(path).map_err(|e| io_err(path, e))?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io_err(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{Checkpointer, FromScratch, SelfCheckpoint};

    /// A bundle built byte by byte, with no checks (to forge bad ones).
    fn encode_bundle(manifest: &Manifest, files: &[Vec<u8>]) -> Vec<u8> {
        let json = serde_json::to_vec(manifest).unwrap_or_default();
        let total: usize = files.iter().map(Vec::len).sum();
        let mut out = Vec::with_capacity(8 + json.len() + total);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&u32::try_from(json.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(&json);
        for f in files {
            out.extend_from_slice(f);
        }
        out
    }

    /// A bundle in the first format, as homes may still hold.
    fn sample() -> (Manifest, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("state"), b"step=42\n").unwrap();
        std::fs::write(dir.path().join("big"), vec![7u8; 3 << 20]).unwrap();
        let sc = SelfCheckpoint {
            exit_code: 85,
            files: vec!["state".into(), "big".into()],
        };
        let mut b = Vec::new();
        write_bundle(
            Manifest {
                backend: "self".into(),
                stdout_len: 9,
                ..Default::default()
            },
            &sc.sources(dir.path()).unwrap(),
            &mut b,
        )
        .unwrap();
        let m = read_bundle(&mut &b[..], None).unwrap();
        (m, b)
    }

    #[test]
    fn bundles_round_trip_and_restore() {
        let (m, b) = sample();
        assert_eq!(m.backend, "self");
        assert_eq!(m.stdout_len, 9);
        assert_eq!(m.payload_bytes(), 8 + (3 << 20));
        let out = tempfile::tempdir().unwrap();
        // A stale file of the same name is replaced, not appended to.
        std::fs::write(out.path().join("state"), b"old").unwrap();
        FromScratch.restore(out.path(), &b).unwrap();
        assert_eq!(
            std::fs::read(out.path().join("state")).unwrap(),
            b"step=42\n"
        );
    }

    #[test]
    fn corrupt_partial_and_padded_bundles_are_rejected() {
        let (_, b) = sample();
        let mut flipped = b.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(
            read_bundle(&mut &flipped[..], None),
            Err(CheckpointError::Corrupt(m)) if m.contains("SHA-256")
        ));
        let short = &b[..b.len() - 10];
        assert!(read_bundle(&mut &short[..], None).is_err());
        let mut long = b.clone();
        long.push(0);
        assert!(read_bundle(&mut &long[..], None).is_err());
        assert!(read_bundle(&mut &b"nope"[..], None).is_err());
    }

    #[test]
    fn names_must_stay_in_the_sandbox() {
        let m = Manifest {
            files: vec![ManifestEntry {
                name: "../x".into(),
                size: 0,
                sha256: hex(&Sha256::digest(b"")),
                mode: 0o600,
            }],
            ..Default::default()
        };
        let b = encode_bundle(&m, &[Vec::new()]);
        assert!(matches!(
            read_bundle(&mut &b[..], None),
            Err(CheckpointError::BadName(_))
        ));
    }
}
