//! Checkpoints: the backends behind one [`Checkpointer`] interface, the
//! bundle that carries a checkpoint home (a SHA-256 manifest followed by the
//! files), transfer throttling, and CRIU detection.
//!
//! Backends (issue #6):
//! - [`SelfCheckpoint`]: HTCondor-compatible self-checkpointing. The job
//!   writes its own state and exits with `checkpoint_exit_code`; the files
//!   named by `transfer_checkpoint_files` are shipped home and put back in
//!   the sandbox of the next run. Application-specific checkpointing is what
//!   Neeracher 1998 §4 recommends over general process migration.
//! - [`Criu`]: transparent dump/restore of the job's process tree, only
//!   where `criu --version` ≥ 4.1 and `criu check` passes (platform.md:
//!   3.17 on these machines fails `criu check`).
//! - [`FromScratch`]: jobs that declare neither restart from the beginning.
//!
//! Bundle format (`application/x-gleaner-checkpoint`): the magic `GLCK`, a
//! big-endian `u32` manifest length, the manifest as JSON, then each file's
//! bytes in manifest order. The home verifies sizes and SHA-256 digests
//! before it accepts a bundle and again before it serves one.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// First bytes of every bundle.
pub const MAGIC: &[u8; 4] = b"GLCK";
/// Largest manifest accepted (bytes of JSON).
pub const MAX_MANIFEST: u32 = 1 << 20;
/// Most files one checkpoint may hold.
pub const MAX_FILES: usize = 4096;

/// Checkpoint errors.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("corrupt checkpoint: {0}")]
    Corrupt(String),
    #[error("checkpoint file {0:?} is not a plain name in the sandbox")]
    BadName(String),
    #[error("checkpoint file {0:?} is missing")]
    Missing(String),
    #[error("CRIU: {0}")]
    Criu(String),
}

fn io_err(path: &Path, source: std::io::Error) -> CheckpointError {
    CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One file of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Plain file name in the sandbox (no `/`).
    pub name: String,
    pub size: u64,
    /// Lower-case hex SHA-256 of the content.
    pub sha256: String,
    /// Permission bits (0o777 at most: never set-id), restored with the
    /// file. CRIU checks them when it reopens a file the job had open.
    #[serde(default = "default_mode")]
    pub mode: u32,
}

fn default_mode() -> u32 {
    0o600
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

fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Reads the header and manifest, checking names and limits.
fn read_manifest(r: &mut impl Read) -> Result<Manifest, CheckpointError> {
    let mut head = [0u8; 8];
    r.read_exact(&mut head)
        .map_err(|_| CheckpointError::Corrupt("shorter than its header".into()))?;
    if &head[..4] != MAGIC {
        return Err(CheckpointError::Corrupt("bad magic".into()));
    }
    let len = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
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

/// Reads a whole bundle, checking every size and digest and that nothing
/// follows the last file; with `into`, also writes the files there
/// (created new, mode 0600, never through a link).
pub fn read_bundle(r: &mut impl Read, into: Option<&Path>) -> Result<Manifest, CheckpointError> {
    read_bundle_routed(r, &|name: &str| into.map(|d| d.join(name)))
}

/// [`read_bundle`] where `route` says where each file goes (`None`: check
/// it only).
pub fn read_bundle_routed(
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
fn open_source(src: &BundleSource) -> Result<std::fs::File, CheckpointError> {
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

/// Writes a bundle of `sources` to `w` without holding the files in
/// memory: one pass hashes them for the manifest, a second copies them and
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

fn open_new(path: &Path) -> Result<std::fs::File, CheckpointError> {
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

/// A checkpointing method. `sources` names what the job left behind that
/// makes up a checkpoint; `collect`/`collect_to` turn it into a bundle;
/// `restore` puts a bundle back before a run.
pub trait Checkpointer: Send + Sync {
    /// `self`, `criu` or `none`.
    fn name(&self) -> &'static str;
    /// Whether this job can be checkpointed at all.
    fn enabled(&self) -> bool;
    /// The files of a checkpoint, as found in the sandbox.
    fn sources(&self, sandbox: &Path) -> Result<Vec<BundleSource>, CheckpointError>;
    /// Builds the bundle in memory (small checkpoints, tests).
    fn collect(&self, sandbox: &Path, mut manifest: Manifest) -> Result<Vec<u8>, CheckpointError> {
        manifest.backend = self.name().into();
        let mut out = Vec::new();
        write_bundle(manifest, &self.sources(sandbox)?, &mut out)?;
        Ok(out)
    }
    /// Builds the bundle in a file, streaming (any size).
    fn collect_to(
        &self,
        sandbox: &Path,
        mut manifest: Manifest,
        out: &Path,
    ) -> Result<Manifest, CheckpointError> {
        manifest.backend = self.name().into();
        write_bundle_file(manifest, &self.sources(sandbox)?, out)
    }
    /// Writes a verified bundle's files into the sandbox.
    fn restore(&self, sandbox: &Path, bundle: &[u8]) -> Result<Manifest, CheckpointError> {
        read_bundle(&mut &bundle[..], Some(sandbox))
    }
}

/// Self-checkpointing (HTCondor's `checkpoint_exit_code` +
/// `transfer_checkpoint_files`).
#[derive(Clone, Debug)]
pub struct SelfCheckpoint {
    pub exit_code: i32,
    /// Sandbox names of the checkpoint files.
    pub files: Vec<String>,
}

impl SelfCheckpoint {
    /// The backend for a job description, if it self-checkpoints.
    pub fn for_job(d: &gleaner_proto::job::JobDescription) -> Option<Self> {
        let code = d.checkpoint_exit_code?;
        let files = d
            .transfer_checkpoint_files
            .iter()
            .map(|f| {
                f.trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        Some(SelfCheckpoint {
            exit_code: code,
            files,
        })
    }
}

impl Checkpointer for SelfCheckpoint {
    fn name(&self) -> &'static str {
        "self"
    }
    fn enabled(&self) -> bool {
        true
    }
    fn sources(&self, sandbox: &Path) -> Result<Vec<BundleSource>, CheckpointError> {
        self.files
            .iter()
            .map(|name| {
                if !plain_name(name) {
                    return Err(CheckpointError::BadName(name.clone()));
                }
                Ok(BundleSource {
                    name: name.clone(),
                    path: sandbox.join(name),
                })
            })
            .collect()
    }
}

/// Jobs that declare no checkpointing: they restart from scratch.
#[derive(Clone, Copy, Debug, Default)]
pub struct FromScratch;

impl Checkpointer for FromScratch {
    fn name(&self) -> &'static str {
        "none"
    }
    fn enabled(&self) -> bool {
        false
    }
    fn sources(&self, _sandbox: &Path) -> Result<Vec<BundleSource>, CheckpointError> {
        Err(CheckpointError::Corrupt(
            "job declares no checkpointing".into(),
        ))
    }
}

/// The file-based backend for a job: self-checkpointing when it declares
/// it, else from scratch. (A job with `checkpoint_method = criu` is
/// checkpointed by [`Criu`], driven by the starter.)
pub fn for_job(d: &gleaner_proto::job::JobDescription) -> Box<dyn Checkpointer> {
    match SelfCheckpoint::for_job(d) {
        Some(s) => Box::new(s),
        None => Box::new(FromScratch),
    }
}

// ----- CRIU ------------------------------------------------------------------

/// Whether this machine has a working CRIU (version ≥ 4.1 and `criu check`
/// passing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CriuStatus {
    Available { version: String },
    Unavailable { reason: String },
}

impl CriuStatus {
    pub fn available(&self) -> bool {
        matches!(self, CriuStatus::Available { .. })
    }
}

/// Parses `criu --version` output (`Version: 3.17.1`) into (major, minor).
pub fn parse_criu_version(out: &str) -> Option<(u32, u32)> {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("Version:"))?;
    let v = line.split(':').nth(1)?.trim();
    let mut it = v.split(['.', '-']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// Probes CRIU (runs `criu --version` and `criu check`).
pub fn detect_criu() -> CriuStatus {
    let out = match Command::new("criu").arg("--version").output() {
        Ok(o) => o,
        Err(e) => {
            return CriuStatus::Unavailable {
                reason: format!("criu not runnable: {e}"),
            };
        }
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some((maj, min)) = parse_criu_version(&text) else {
        return CriuStatus::Unavailable {
            reason: format!("unrecognised `criu --version` output {:?}", text.trim()),
        };
    };
    if (maj, min) < (4, 1) {
        return CriuStatus::Unavailable {
            reason: format!("criu {maj}.{min} is older than 4.1"),
        };
    }
    match Command::new("criu").arg("check").output() {
        Ok(o) if o.status.success() => CriuStatus::Available {
            version: format!("{maj}.{min}"),
        },
        Ok(o) => CriuStatus::Unavailable {
            reason: format!(
                "`criu check` failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        },
        Err(e) => CriuStatus::Unavailable {
            reason: format!("`criu check` not runnable: {e}"),
        },
    }
}

/// CRIU status, probed once per process.
pub fn criu_status() -> &'static CriuStatus {
    static S: OnceLock<CriuStatus> = OnceLock::new();
    S.get_or_init(detect_criu)
}

/// Station-ad attributes advertising the checkpoint backends.
pub fn ad_attrs() -> std::collections::BTreeMap<String, String> {
    let mut m = std::collections::BTreeMap::new();
    m.insert("HasSelfCheckpoint".into(), "true".into());
    match criu_status() {
        CriuStatus::Available { version } => {
            m.insert("HasCRIU".into(), "true".into());
            m.insert("CRIUVersion".into(), format!("\"{version}\""));
        }
        CriuStatus::Unavailable { .. } => {
            m.insert("HasCRIU".into(), "false".into());
        }
    }
    m
}

/// Bundle names of CRIU image files carry this prefix; every other file of
/// a CRIU bundle belongs in the sandbox.
pub const CRIU_IMAGE_PREFIX: &str = "criu-image:";
/// Files of the image directory that are never shipped.
const CRIU_LOCAL_FILES: [&str; 3] = ["dump.log", "restore.log", "restore.pid"];

/// Transparent checkpoints with CRIU (issue #6; platform.md §2.3).
///
/// Unlike the papers' Condor, which relinked jobs with a checkpoint library
/// (Mutka 1988 §2.6), nothing is asked of the job: `criu dump` writes its
/// whole process tree (memory, registers, open files) into `images`, and
/// `criu restore` brings it back, here or on another station.
///
/// CRIU runs as the guest's own user with only `CAP_CHECKPOINT_RESTORE`
/// (`--unprivileged`, through `setpriv`): root on these machines lacks
/// `CAP_SYS_RESOURCE` and cannot dump another user's process, and a
/// restore can then never give the job more than the guest user has, even
/// from tampered images. The price is that the job cannot have its own PID
/// namespace (an unprivileged dump cannot mount the namespace's /proc), so
/// a restore fails if one of the job's PIDs is taken on the target; the
/// starter then sends the job elsewhere.
///
/// The images hold files by path: a job must run in the same sandbox path
/// on every station (the starter's `criu_sandbox_dir`), and the bundle
/// carries the sandbox's files beside the images.
#[derive(Clone, Debug)]
pub struct Criu {
    /// Image directory: owned by the guest user, outside its sandbox.
    pub images: PathBuf,
    /// Who the job runs as (`None`: the daemon's own identity).
    pub user: Option<crate::isolation::GuestUser>,
}

impl Criu {
    /// `criu` itself, or `setpriv … criu --unprivileged` as the guest user.
    pub fn program_and_args(&self) -> (PathBuf, Vec<std::ffi::OsString>) {
        match self.user {
            Some(u) => (
                PathBuf::from("setpriv"),
                [
                    format!("--reuid={}", u.uid),
                    format!("--regid={}", u.gid),
                    // The groups the launcher gives a guest: CRIU's
                    // restorer skips setgroups (which needs CAP_SETGID)
                    // only when they already match.
                    format!("--groups={}", u.gid),
                    "--inh-caps=-all,+checkpoint_restore".into(),
                    "--ambient-caps=+checkpoint_restore".into(),
                    "--".into(),
                    "criu".into(),
                ]
                .into_iter()
                .map(Into::into)
                .collect(),
            ),
            None => (PathBuf::from("criu"), Vec::new()),
        }
    }

    fn command(&self, action: &str) -> Command {
        let (prog, mut args) = self.program_and_args();
        args.push(action.into());
        if self.user.is_some() {
            args.push("--unprivileged".into());
        }
        let mut c = Command::new(prog);
        c.args(args)
            .arg("-D")
            .arg(&self.images)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    }

    /// The error lines of a CRIU log, for a useful message.
    fn log_errors(&self, log: &str) -> String {
        let text = std::fs::read_to_string(self.images.join(log)).unwrap_or_default();
        let errs: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("Error") && !l.contains("RLIMIT_NOFILE"))
            .collect();
        let tail = errs.len().saturating_sub(3);
        errs[tail..].join(" | ")
    }

    /// Empties the image directory (keeps the directory itself).
    pub fn clear(&self) -> Result<(), CheckpointError> {
        let rd = match std::fs::read_dir(&self.images) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err(&self.images, e)),
        };
        for e in rd.flatten() {
            let p = e.path();
            let r = if e.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            r.map_err(|e| io_err(&p, e))?;
        }
        Ok(())
    }

    /// Whether the directory holds a complete dump.
    pub fn has_images(&self) -> bool {
        self.images.join("inventory.img").is_file()
    }

    /// Dumps the tree rooted at `pid` into the (emptied) image directory.
    /// The tree is gone afterwards; on failure CRIU leaves it running.
    pub fn dump(&self, pid: u32) -> Result<(), CheckpointError> {
        self.clear()?;
        let st = self
            .command("dump")
            .args(["-t", &pid.to_string(), "-o", "dump.log"])
            .status()
            .map_err(|e| CheckpointError::Criu(format!("cannot run criu: {e}")))?;
        if !st.success() {
            return Err(CheckpointError::Criu(format!(
                "dump of {pid} failed ({st}): {}",
                self.log_errors("dump.log")
            )));
        }
        Ok(())
    }

    /// Where a restore writes the restored root's PID.
    pub fn pidfile(&self) -> PathBuf {
        self.images.join("restore.pid")
    }

    /// Program and arguments that restore the dump, detached (the caller
    /// reaps the tree as a child subreaper and learns its root from
    /// [`Criu::pidfile`]). `inherit` maps file descriptors of the restoring
    /// process onto files the job had open, by their paths at dump time
    /// (the capture files of stdout and stderr, which are new on a new
    /// host).
    pub fn restore_command(&self, inherit: &[(i32, &Path)]) -> (PathBuf, Vec<std::ffi::OsString>) {
        let (prog, mut args) = self.program_and_args();
        args.push("restore".into());
        if self.user.is_some() {
            args.push("--unprivileged".into());
        }
        for a in [
            "-d",
            "-o",
            "restore.log",
            "--manage-cgroups=ignore",
            "--pidfile",
        ] {
            args.push(a.into());
        }
        args.push(self.pidfile().into_os_string());
        args.push("-D".into());
        args.push(self.images.clone().into_os_string());
        for (fd, path) in inherit {
            // CRIU names a file by its path without the leading slash.
            let key = path.to_string_lossy();
            args.push("--inherit-fd".into());
            args.push(format!("fd[{fd}]:{}", key.trim_start_matches('/')).into());
        }
        (prog, args)
    }

    /// How the launcher starts [`Criu::restore_command`]: as root (CRIU
    /// drops to the guest user itself, keeping its one capability, so no
    /// `no_new_privs`), under a reaping waiter that learns the restored
    /// root from the pidfile. The caller sets the standard streams (those
    /// named in `inherit`).
    pub fn restore_spec(
        &self,
        sandbox: &Path,
        inherit: &[(i32, &Path)],
    ) -> crate::isolation::GuestSpec {
        let _ = std::fs::remove_file(self.pidfile());
        let (program, args) = self.restore_command(inherit);
        crate::isolation::GuestSpec {
            program,
            args,
            env: vec![(
                "PATH".into(),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
            )],
            no_new_privs: false,
            reaper: true,
            restore_pidfile: Some(self.pidfile()),
            ..crate::isolation::GuestSpec::new("", sandbox)
        }
    }

    /// Why the last restore failed, from its log.
    pub fn restore_errors(&self) -> String {
        self.log_errors("restore.log")
    }

    /// The files of a CRIU checkpoint: every image, and every regular file
    /// at the top of the sandbox except `skip` (the output capture files,
    /// which the home already has). CRIU reopens files by path and checks
    /// their sizes, so the sandbox goes along.
    pub fn bundle_sources(
        &self,
        sandbox: &Path,
        skip: &[&str],
    ) -> Result<Vec<BundleSource>, CheckpointError> {
        let mut out = Vec::new();
        for (dir, prefix) in [
            (&self.images, CRIU_IMAGE_PREFIX),
            (&sandbox.to_path_buf(), ""),
        ] {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .map_err(|e| io_err(dir, e))?
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect();
            names.sort();
            for n in names {
                let local = prefix.is_empty();
                if (local && (skip.contains(&n.as_str()) || n.starts_with(CRIU_IMAGE_PREFIX)))
                    || (!local && CRIU_LOCAL_FILES.contains(&n.as_str()))
                {
                    continue;
                }
                out.push(BundleSource {
                    name: format!("{prefix}{n}"),
                    path: dir.join(&n),
                });
            }
        }
        if !out
            .iter()
            .any(|s| s.name == format!("{CRIU_IMAGE_PREFIX}inventory.img"))
        {
            return Err(CheckpointError::Criu("no dump to collect".into()));
        }
        Ok(out)
    }

    /// Where a file of a CRIU bundle goes: images into the image
    /// directory, the rest into the sandbox.
    fn destination(&self, sandbox: &Path, name: &str) -> PathBuf {
        match name.strip_prefix(CRIU_IMAGE_PREFIX) {
            Some(img) => self.images.join(img),
            None => sandbox.join(name),
        }
    }

    /// Unpacks a CRIU bundle (images into the image directory, the rest
    /// into the sandbox), every file owned by the guest user: CRIU runs as
    /// that user and reads them.
    pub fn unpack(&self, bundle: &Path, sandbox: &Path) -> Result<Manifest, CheckpointError> {
        self.clear()?;
        let f = std::fs::File::open(bundle).map_err(|e| io_err(bundle, e))?;
        let m = read_bundle_routed(
            &mut std::io::BufReader::with_capacity(1 << 20, f),
            &|name: &str| Some(self.destination(sandbox, name)),
        )?;
        if let Some(u) = self.user {
            for e in &m.files {
                let p = self.destination(sandbox, &e.name);
                std::os::unix::fs::chown(&p, Some(u.uid), Some(u.gid))
                    .map_err(|e| io_err(&p, e))?;
            }
        }
        Ok(m)
    }
}

// ----- throttling ------------------------------------------------------------

/// A token bucket in bytes: at most `rate` bytes per second on average,
/// bursts up to `burst`. Pure: the caller passes the time. A rate of 0
/// means unlimited.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(rate_bytes_per_sec: u64, burst: u64, now: Instant) -> Self {
        TokenBucket {
            rate: rate_bytes_per_sec as f64,
            burst: burst.max(1) as f64,
            tokens: burst.max(1) as f64,
            last: now,
        }
    }

    pub fn unlimited(&self) -> bool {
        self.rate <= 0.0
    }

    /// Takes `n` bytes (the balance may go negative: later callers queue
    /// behind) and returns how long the caller must wait before sending.
    pub fn reserve(&mut self, n: u64, now: Instant) -> Duration {
        if self.unlimited() {
            return Duration::ZERO;
        }
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now.max(self.last);
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        self.tokens -= n as f64;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

/// A bucket shared by every transfer of a station.
#[derive(Debug)]
pub struct SharedBucket(std::sync::Mutex<TokenBucket>);

impl SharedBucket {
    pub fn new(rate_bytes_per_sec: u64) -> Self {
        // One second's worth of burst, at least 256 KiB.
        let burst = rate_bytes_per_sec.max(256 * 1024);
        SharedBucket(std::sync::Mutex::new(TokenBucket::new(
            rate_bytes_per_sec,
            burst,
            Instant::now(),
        )))
    }

    /// Waits until `n` more bytes may move.
    pub async fn take(&self, n: u64) {
        let wait = {
            let mut b = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            b.reserve(n, Instant::now())
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// A file as a stream of chunks for an HTTP body, each chunk waiting for
/// `take(len)` first (the station's token bucket): a checkpoint transfer
/// never needs the whole checkpoint in memory.
pub fn throttled_stream<F, Fut>(
    file: tokio::fs::File,
    take: F,
) -> impl futures_util::Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static
where
    F: Fn(u64) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    futures_util::stream::unfold(file, move |mut f| {
        let take = take.clone();
        async move {
            use tokio::io::AsyncReadExt;
            let mut buf = vec![0u8; 256 * 1024];
            match f.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    take(n as u64).await;
                    Some((Ok(buf), f))
                }
                Err(e) => Some((Err(e), f)),
            }
        }
    })
}

/// Exponentially weighted transfer rate (bytes/s) of a pool's checkpoint
/// transfers, for Linger-Longer's `T_migr` (Ryu & Hollingsworth Eq. 5,
/// seeds/002_34f613b0a80e1e58.txt L87): this station's own measurement when
/// it has one, else the pool's (the median the coordinator computes from the
/// stations' ads, see `gleaner_proto::wire::CHECKPOINT_TRANSFER_RATE_ATTR`).
#[derive(Debug, Default)]
pub struct RateMeter {
    own: std::sync::Mutex<Option<f64>>,
    pool: std::sync::Mutex<Option<f64>>,
}

fn read_rate(m: &std::sync::Mutex<Option<f64>>) -> Option<f64> {
    *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RateMeter {
    /// Records one transfer; tiny ones say more about latency than rate.
    pub fn record(&self, bytes: u64, elapsed: Duration) {
        if bytes < 64 * 1024 || elapsed.is_zero() {
            return;
        }
        let r = bytes as f64 / elapsed.as_secs_f64();
        let mut g = self
            .own
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *g = Some(match *g {
            Some(old) => 0.7 * old + 0.3 * r,
            None => r,
        });
    }

    /// The rate for `T_migr`: this station's own when it has measured one
    /// (its own link is the better guess), else the pool's.
    pub fn get(&self) -> Option<f64> {
        self.own().or_else(|| self.pool())
    }

    /// This station's own measurement only (what it advertises: echoing
    /// the pool's figure back would let it feed on itself).
    pub fn own(&self) -> Option<f64> {
        read_rate(&self.own)
    }

    /// The pool's rate as last heard from the coordinator.
    pub fn pool(&self) -> Option<f64> {
        read_rate(&self.pool)
    }

    /// Stores the pool's rate from an advertise reply (`None`: the pool has
    /// none, e.g. after the coordinator forgot the stations that had one).
    /// Non-positive or non-finite values are ignored.
    pub fn set_pool(&self, rate: Option<f64>) {
        let rate = rate.filter(|r| r.is_finite() && *r > 0.0);
        *self
            .pool
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = rate;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn sample() -> (Manifest, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("state"), b"step=42\n").unwrap();
        std::fs::write(dir.path().join("big"), vec![7u8; 3 << 20]).unwrap();
        let sc = SelfCheckpoint {
            exit_code: 85,
            files: vec!["state".into(), "big".into()],
        };
        let b = sc
            .collect(
                dir.path(),
                Manifest {
                    stdout_len: 9,
                    ..Default::default()
                },
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

    #[test]
    fn missing_checkpoint_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let sc = SelfCheckpoint {
            exit_code: 85,
            files: vec!["nothere".into()],
        };
        assert!(matches!(
            sc.collect(dir.path(), Manifest::default()),
            Err(CheckpointError::Missing(_))
        ));
    }

    #[test]
    fn token_bucket_limits_the_average_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(1000, 1000, t0);
        assert_eq!(b.reserve(1000, t0), Duration::ZERO);
        // Empty now: 500 more bytes wait half a second.
        assert_eq!(b.reserve(500, t0), Duration::from_millis(500));
        // A second later 1000 tokens came back, 500 were owed.
        let w = b.reserve(500, t0 + Duration::from_secs(1));
        assert_eq!(w, Duration::ZERO);
        // Unlimited never waits.
        let mut u = TokenBucket::new(0, 1, t0);
        assert_eq!(u.reserve(u64::MAX / 2, t0), Duration::ZERO);
    }

    #[test]
    fn criu_versions_parse() {
        assert_eq!(parse_criu_version("Version: 3.17.1\n"), Some((3, 17)));
        assert_eq!(parse_criu_version("Version: 4.1\nGitID: x"), Some((4, 1)));
        assert_eq!(parse_criu_version("garbage"), None);
    }

    #[test]
    fn rate_meter_ignores_tiny_transfers() {
        let m = RateMeter::default();
        m.record(10, Duration::from_millis(1));
        assert_eq!(m.get(), None);
        m.record(1_000_000, Duration::from_secs(1));
        assert_eq!(m.get(), Some(1_000_000.0));
    }

    #[test]
    fn rate_meter_falls_back_to_the_pool_rate() {
        let m = RateMeter::default();
        assert_eq!(m.get(), None);
        m.set_pool(Some(40e6));
        assert_eq!(m.get(), Some(40e6));
        assert_eq!(m.own(), None, "the pool's rate is not the station's own");
        m.set_pool(Some(f64::NAN));
        assert_eq!(m.get(), None);
        m.set_pool(Some(40e6));
        // Once measured, the station's own rate wins.
        m.record(2_000_000, Duration::from_secs(1));
        assert_eq!(m.get(), Some(2e6));
        m.set_pool(Some(90e6));
        assert_eq!(m.get(), Some(2e6));
        assert_eq!(m.pool(), Some(90e6));
        m.set_pool(None);
        assert_eq!(m.get(), Some(2e6));
    }
}
