//! Checkpoints: the backends behind one [`Checkpointer`] interface, the
//! bundle that carries a checkpoint home, the streams that move it in one
//! pass, transfer throttling, and CRIU detection.
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
//! Bundle format (`application/x-gleaner-checkpoint`): the magic
//! `GLC2`, a manifest, then the files in chunks of 1 MiB, each chunk
//! hashed with BLAKE3 and compressed with zstd when that pays, and a root
//! digest over all of them (`format.rs`). A checkpoint is packed while it
//! is sent (collect, hash, compress and send are one pass), checked by the
//! home as it arrives (stored digests, no decompression) and by the host
//! that restores it (raw digests, end to end) as it arrives, and restored
//! only once all of it verified. An upload may name a base checkpoint the
//! home holds and send only the chunks it lacks. The first format (`GLCK`,
//! SHA-256 per file) is still read everywhere, so checkpoints stored before
//! and older hosts keep working.
//!
//! - [`bundle`]: the first format and the [`Manifest`] both share;
//! - [`format`]: the chunked format: frames, root digest, chunk layout;
//! - [`pack`]: a checkpoint into frames on worker threads, in one pass;
//! - [`unpack`]: frames checked and restored through staging directories;
//! - [`store`]: the home's side: an upload checked and stored as it comes;
//! - [`stream`]: packs and restores fed by and feeding HTTP bodies;
//! - [`criu`]: CRIU detection and the [`Criu`] backend;
//! - [`throttle`]: token buckets for transfers and the rate meters behind
//!   `T_migr`.

pub mod bundle;
pub mod criu;
pub mod format;
pub mod pack;
pub mod store;
pub mod stream;
pub mod throttle;
pub mod unpack;

pub use bundle::{
    BundleSource, MAGIC, MAX_FILES, MAX_MANIFEST, Manifest, ManifestEntry, hex, read_bundle,
    read_bundle_routed, verify_bundle_file, write_bundle, write_bundle_file,
};
pub use criu::{CRIU_IMAGE_PREFIX, Criu, CriuStatus, criu_status, detect_criu, parse_criu_version};
pub use format::{CHUNK_BYTES, MAGIC2};
pub use pack::{ChunkSet, DEFAULT_LEVEL, PackOptions, Packed, pack};
pub use store::{StoreError, Stored, check_stored, receive};
pub use stream::{Fetched, RestoreTo, Sent, fetch_checkpoint, send_checkpoint};
pub use throttle::{RateMeter, SharedBucket, TokenBucket, throttled_stream};
pub use unpack::{Restore, Unpacked, restore, verify};

use bundle::plain_name;
use std::path::{Path, PathBuf};

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

pub(crate) fn io_err(path: &Path, source: std::io::Error) -> CheckpointError {
    CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A checkpointing method. `sources` names what the job left behind that
/// makes up a checkpoint; `collect`/`collect_to` turn it into a (chunked)
/// bundle; `restore` puts a bundle back before a run. The starter streams
/// instead ([`send_checkpoint`]); these serve tests and tools.
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
        pack(
            manifest,
            &self.sources(sandbox)?,
            &PackOptions::default(),
            &mut out,
        )?;
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
        let f = bundle::open_new(out)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let p = pack(
            manifest,
            &self.sources(sandbox)?,
            &PackOptions::default(),
            &mut w,
        )?;
        let f = w.into_inner().map_err(|e| io_err(out, e.into_error()))?;
        f.sync_all().map_err(|e| io_err(out, e))?;
        Ok(p.manifest)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
