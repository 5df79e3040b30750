//! Packing a checkpoint into a chunked bundle (`format.rs`) in one pass:
//! each chunk is read once, hashed with BLAKE3, compressed with zstd when
//! that pays, and handed on as a finished frame while later chunks are
//! still being read, on a few worker threads, in bundle order. Nothing is
//! written to disk on the way: the frames go wherever the caller sends
//! them (an HTTP body, a file).
//!
//! Compression: a chunk is stored compressed only when that saves at least
//! 1/32 of it. A file whose chunks keep not compressing (encrypted,
//! already compressed or random state) is then only sampled, one chunk in
//! [`SAMPLE_EVERY`], so incompressible state costs little more than its
//! hash. The level is [`DEFAULT_LEVEL`] (see its note).
//!
//! With a base (the chunks the receiver already holds, by raw digest), a
//! chunk found there is sent as a reference: unchanged parts of files and
//! of CRIU's page images are not sent again.

use super::bundle::{BundleSource, Manifest, ManifestEntry, open_source};
use super::format::{
    CHUNK_BYTES, ChunkPos, Digest, FRAME_HEAD, FrameHead, FrameKind, MAGIC2, RootHasher, digest,
    digest_hex, header_json, layout, len32,
};
use super::{CheckpointError, io_err};
use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// zstd level for checkpoints. Chosen by measurement (bench/README.md,
/// "Checkpoints"): level 1 compresses typical numeric and text state about
/// as well as 3 at roughly twice the speed, and keeps up with a disk; the
/// negative levels save little time more on this hardware and give up
/// much of the ratio.
pub const DEFAULT_LEVEL: i32 = 1;
/// After this many chunks of a file in a row did not compress, only one
/// chunk in [`SAMPLE_EVERY`] is tried.
const GIVE_UP_AFTER: u32 = 4;
pub const SAMPLE_EVERY: u64 = 16;

/// The raw digests of a checkpoint's chunks: what a receiver holding that
/// checkpoint has, and so what an upload based on it need not send.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkSet {
    /// The checkpoint's root digest.
    pub root: Digest,
    pub hashes: HashSet<Digest>,
}

/// How to pack.
#[derive(Clone, Debug)]
pub struct PackOptions {
    /// zstd level for chunks that compress; `None` stores every chunk as
    /// it is.
    pub level: Option<i32>,
    /// Worker threads reading, hashing and compressing chunks.
    pub threads: usize,
    /// What the receiver holds already (an upload's base).
    pub base: Option<Arc<ChunkSet>>,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            level: Some(DEFAULT_LEVEL),
            threads: default_threads(),
            base: None,
        }
    }
}

/// Worker threads for packing and unpacking: the machine's CPUs, at most
/// four (the hash and zstd are fast; more threads would only take the
/// owner's CPUs for little).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4))
}

/// What a pack produced.
#[derive(Clone, Debug)]
pub struct Packed {
    /// The manifest written, with its root.
    pub manifest: Manifest,
    /// Bytes of the files.
    pub raw_bytes: u64,
    /// Bytes of the bundle.
    pub wire_bytes: u64,
    /// Chunks sent compressed, and sent as references to the base.
    pub compressed: u64,
    pub referenced: u64,
    /// This checkpoint's chunks, the base of the next upload.
    pub chunks: ChunkSet,
}

/// Where finished bundle bytes go. Each call hands over one buffer: a
/// frame (head and payload together) or the header.
pub trait FrameOut {
    fn put(&mut self, bytes: Vec<u8>) -> std::io::Result<()>;
}

impl<W: std::io::Write> FrameOut for W {
    fn put(&mut self, bytes: Vec<u8>) -> std::io::Result<()> {
        self.write_all(&bytes)
    }
}

/// One finished frame: head and payload in one buffer.
struct Frame {
    bytes: Vec<u8>,
    head: FrameHead,
}

/// What the workers and the writer share.
struct Shared {
    st: Mutex<State>,
    cv: Condvar,
}

struct State {
    /// Next chunk a worker takes.
    next: usize,
    /// Chunks handed to the output so far.
    emitted: usize,
    done: BTreeMap<usize, Frame>,
    failed: Option<CheckpointError>,
}

/// Packs `sources` into a chunked bundle sent to `out`. The files are
/// opened once, without following links; a file whose size changes while
/// it is read fails the pack (callers pack a stopped or exited job).
pub fn pack(
    mut manifest: Manifest,
    sources: &[BundleSource],
    opts: &PackOptions,
    out: &mut dyn FrameOut,
) -> Result<Packed, CheckpointError> {
    if sources.len() > super::MAX_FILES {
        return Err(CheckpointError::Corrupt("too many files".into()));
    }
    let mut files = Vec::with_capacity(sources.len());
    manifest.files.clear();
    for src in sources {
        if !super::bundle::plain_name(&src.name) {
            return Err(CheckpointError::BadName(src.name.clone()));
        }
        let f = open_source(src)?;
        let md = f.metadata().map_err(|e| io_err(&src.path, e))?;
        let mode = std::os::unix::fs::PermissionsExt::mode(&md.permissions()) & 0o777;
        manifest
            .files
            .push(ManifestEntry::new(src.name.clone(), md.len(), mode));
        files.push(f);
    }
    manifest.format = 2;
    manifest.chunk_bytes = CHUNK_BYTES;
    manifest.root = None;
    manifest.base = opts.base.as_ref().map(|b| digest_hex(&b.root));
    let json = header_json(&manifest)?;
    let mut root = RootHasher::new(&json);
    let mut head = Vec::with_capacity(8 + json.len());
    head.extend_from_slice(MAGIC2);
    head.extend_from_slice(&len32(json.len()).to_be_bytes());
    head.extend_from_slice(&json);
    let werr = |e: std::io::Error| CheckpointError::Corrupt(format!("writing bundle: {e}"));
    let mut wire_bytes = head.len() as u64;
    out.put(head).map_err(werr)?;

    let chunks = layout(&manifest);
    let streaks: Vec<AtomicU32> = files.iter().map(|_| AtomicU32::new(0)).collect();
    let shared = Shared {
        st: Mutex::new(State {
            next: 0,
            emitted: 0,
            done: BTreeMap::new(),
            failed: None,
        }),
        cv: Condvar::new(),
    };
    let threads = opts.threads.max(1);
    // Chunks in flight at most: each worker a few ahead of the writer.
    let window = threads * 3;
    let mut set = ChunkSet::default();
    let (mut compressed, mut referenced) = (0u64, 0u64);
    let written: Result<(), CheckpointError> = std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                worker(
                    &shared, &chunks, &files, sources, &streaks, opts, window, &manifest,
                )
            });
        }
        let r = emit(&shared, chunks.len(), |frame| {
            root.chunk(frame.head.raw_len, &frame.head.raw_hash);
            set.hashes.insert(frame.head.raw_hash);
            match frame.head.kind {
                FrameKind::Zstd => compressed += 1,
                FrameKind::Ref => referenced += 1,
                _ => {}
            }
            wire_bytes += frame.bytes.len() as u64;
            out.put(frame.bytes).map_err(werr)
        });
        if r.is_err() {
            // Stop the workers.
            let mut st = lock(&shared.st);
            if st.failed.is_none() {
                st.failed = Some(CheckpointError::Corrupt("stopped".into()));
            }
            shared.cv.notify_all();
        }
        r
    });
    written?;
    for ((f, e), src) in files.iter().zip(&manifest.files).zip(sources) {
        let now = f.metadata().map_err(|err| io_err(&src.path, err))?.len();
        if now != e.size {
            return Err(CheckpointError::Corrupt(format!(
                "{}: changed while it was collected",
                e.name
            )));
        }
    }
    let r = root.finish();
    out.put(FrameHead::end(r).encode().to_vec()).map_err(werr)?;
    wire_bytes += FRAME_HEAD as u64;
    set.root = r;
    manifest.root = Some(digest_hex(&r));
    Ok(Packed {
        raw_bytes: manifest.payload_bytes(),
        manifest,
        wire_bytes,
        compressed,
        referenced,
        chunks: set,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Hands the frames to `put` in bundle order as the workers finish them.
fn emit(
    shared: &Shared,
    n: usize,
    mut put: impl FnMut(Frame) -> Result<(), CheckpointError>,
) -> Result<(), CheckpointError> {
    for i in 0..n {
        let frame = {
            let mut st = lock(&shared.st);
            loop {
                if let Some(e) = st.failed.take() {
                    st.failed = Some(CheckpointError::Corrupt("stopped".into()));
                    shared.cv.notify_all();
                    return Err(e);
                }
                if let Some(f) = st.done.remove(&i) {
                    st.emitted = i + 1;
                    shared.cv.notify_all();
                    break f;
                }
                st = shared
                    .cv
                    .wait(st)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        };
        put(frame)?;
    }
    Ok(())
}

/// A worker: takes the next chunk (at most `window` ahead of the writer),
/// makes its frame, hands it back; stops at the end or on any failure.
#[allow(clippy::too_many_arguments)]
fn worker(
    shared: &Shared,
    chunks: &[ChunkPos],
    files: &[std::fs::File],
    sources: &[BundleSource],
    streaks: &[AtomicU32],
    opts: &PackOptions,
    window: usize,
    manifest: &Manifest,
) {
    let mut zstd = opts.level.and_then(|l| zstd::bulk::Compressor::new(l).ok());
    loop {
        let i = {
            let mut st = lock(&shared.st);
            loop {
                if st.failed.is_some() || st.next >= chunks.len() {
                    return;
                }
                if st.next < st.emitted + window {
                    break;
                }
                st = shared
                    .cv
                    .wait(st)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            st.next += 1;
            st.next - 1
        };
        let pos = chunks[i];
        let made = make_frame(
            &pos,
            &files[pos.file],
            &sources[pos.file],
            &streaks[pos.file],
            zstd.as_mut(),
            opts.base.as_deref(),
            manifest.chunk_bytes,
        );
        let mut st = lock(&shared.st);
        match made {
            Ok(f) => {
                st.done.insert(i, f);
            }
            Err(e) => {
                if st.failed.is_none() {
                    st.failed = Some(e);
                }
            }
        }
        shared.cv.notify_all();
    }
}

/// Reads one chunk and makes its frame.
fn make_frame(
    pos: &ChunkPos,
    file: &std::fs::File,
    src: &BundleSource,
    streak: &AtomicU32,
    zstd: Option<&mut zstd::bulk::Compressor<'static>>,
    base: Option<&ChunkSet>,
    chunk_bytes: u64,
) -> Result<Frame, CheckpointError> {
    let len = pos.len as usize;
    // Head room for the frame head, so the frame is one buffer.
    let mut buf = vec![0u8; FRAME_HEAD + len];
    file.read_exact_at(&mut buf[FRAME_HEAD..], pos.offset)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                CheckpointError::Corrupt(format!("{}: changed while it was collected", src.name))
            }
            _ => io_err(&src.path, e),
        })?;
    let raw_hash = digest(&buf[FRAME_HEAD..]);
    if base.is_some_and(|b| b.hashes.contains(&raw_hash)) {
        let head = FrameHead {
            kind: FrameKind::Ref,
            raw_len: pos.len,
            stored_len: 0,
            raw_hash,
            stored_hash: [0; 32],
        };
        return Ok(Frame {
            bytes: head.encode().to_vec(),
            head,
        });
    }
    if let Some(z) = zstd
        && should_try(streak, pos.offset / chunk_bytes.max(1))
    {
        // Worth it only if it saves 1/32 of the chunk.
        let limit = len - len / 32;
        let mut out = Vec::with_capacity(FRAME_HEAD + limit);
        out.resize(FRAME_HEAD, 0);
        // Compressed straight after the head's room.
        let mut cur = std::io::Cursor::new(out);
        cur.set_position(FRAME_HEAD as u64);
        match z.compress_to_buffer(&buf[FRAME_HEAD..], &mut cur) {
            Ok(n) if n > 0 && n < limit => {
                streak.store(0, Ordering::Relaxed);
                let mut out = cur.into_inner();
                out.truncate(FRAME_HEAD + n);
                let head = FrameHead {
                    kind: FrameKind::Zstd,
                    raw_len: pos.len,
                    stored_len: len32(n),
                    raw_hash,
                    stored_hash: digest(&out[FRAME_HEAD..]),
                };
                out[..FRAME_HEAD].copy_from_slice(&head.encode());
                return Ok(Frame { bytes: out, head });
            }
            // Did not fit: the chunk does not compress.
            _ => {
                streak.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let head = FrameHead::raw(&buf[FRAME_HEAD..], raw_hash);
    buf[..FRAME_HEAD].copy_from_slice(&head.encode());
    Ok(Frame { bytes: buf, head })
}

/// Whether to try compressing chunk `index` of a file with this streak of
/// chunks that did not compress.
fn should_try(streak: &AtomicU32, index: u64) -> bool {
    streak.load(Ordering::Relaxed) < GIVE_UP_AFTER || index.is_multiple_of(SAMPLE_EVERY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incompressible_files_are_only_sampled() {
        let s = AtomicU32::new(0);
        assert!(should_try(&s, 5));
        s.store(GIVE_UP_AFTER, Ordering::Relaxed);
        assert!(!should_try(&s, 5));
        assert!(should_try(&s, SAMPLE_EVERY * 3));
    }
}
