//! A bundle received and stored by the home, in one pass as it arrives:
//! each frame's stored bytes checked against their digest (no
//! decompression: the host that restores checks the raw digests end to
//! end), chunks an upload refers to copied from the base it names, the
//! root checked, and the file synced — with writeback started as the bytes
//! come in, so the final sync waits for little. The stored bundle never
//! refers to another. Uploads in the first format are checked as before
//! (sizes and SHA-256) while they are written.
//!
//! Also: the index of a stored bundle's chunks (from the frame heads
//! alone) and the cheap check that a stored bundle is whole.

use super::bundle::{Manifest, read_v1};
use super::format::{
    Digest, FRAME_HEAD, FrameHead, FrameKind, MAGIC2, RootHasher, check_frame, corrupt, digest,
    digest_hex, layout, len32, parse_digest, read_head, read_header,
};
use super::{CheckpointError, MAGIC, io_err};
use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Start writeback every this many bytes written.
const WRITEBACK_EVERY: u64 = 8 << 20;

/// Why an upload was not stored.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// It names a base the home does not hold (any more): send it whole.
    #[error("the base checkpoint {0} is not the latest here")]
    BaseMismatch(String),
    #[error(transparent)]
    Bad(#[from] CheckpointError),
}

/// A stored bundle's chunks, by raw digest: where each frame lies.
#[derive(Debug, Default)]
pub struct StoredIndex {
    pub root: Digest,
    /// Raw digest → (offset of the frame's payload, its head).
    pub frames: HashMap<Digest, (u64, FrameHead)>,
}

/// Indexes a stored chunked bundle by reading its frame heads only.
pub fn index_stored(path: &Path) -> Result<StoredIndex, CheckpointError> {
    let f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut r = std::io::BufReader::with_capacity(FRAME_HEAD * 4, f);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)
        .map_err(|_| corrupt("shorter than its header"))?;
    if &magic != MAGIC2 {
        return Err(corrupt("not a chunked bundle"));
    }
    let (m, _) = read_header(&mut r)?;
    let mut idx = StoredIndex::default();
    let mut at = r.stream_position().map_err(|e| io_err(path, e))?;
    for pos in layout(&m) {
        let head = read_head(&mut r)?;
        check_frame(&head, &pos, m.chunk_bytes)?;
        at += FRAME_HEAD as u64;
        idx.frames.entry(head.raw_hash).or_insert((at, head));
        r.seek_relative(i64::from(head.stored_len))
            .map_err(|e| io_err(path, e))?;
        at += u64::from(head.stored_len);
    }
    let end = read_head(&mut r)?;
    if end.kind != FrameKind::End {
        return Err(corrupt("more frames than the manifest's files hold"));
    }
    idx.root = end.raw_hash;
    Ok(idx)
}

/// The manifest of a stored bundle of either format, if it is whole: a
/// chunked bundle's header and end frame are read (not its payload: the
/// host checks every digest when it restores); a bundle of the first
/// format is verified whole, as before.
pub fn check_stored(path: &Path) -> Result<Manifest, CheckpointError> {
    let f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    let len = f.metadata().map_err(|e| io_err(path, e))?.len();
    let mut r = std::io::BufReader::with_capacity(1 << 16, &f);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)
        .map_err(|_| corrupt("shorter than its header"))?;
    if &magic == MAGIC {
        let mut r = std::io::BufReader::with_capacity(1 << 20, r);
        return read_v1(&mut r, &|_: &str| None);
    }
    if &magic != MAGIC2 {
        return Err(corrupt("bad magic"));
    }
    let (m, _) = read_header(&mut r)?;
    let mut tail = [0u8; FRAME_HEAD];
    if len < FRAME_HEAD as u64 + 8 {
        return Err(corrupt("truncated"));
    }
    f.read_exact_at(&mut tail, len - FRAME_HEAD as u64)
        .map_err(|e| io_err(path, e))?;
    let end = FrameHead::decode(&tail).map_err(|_| corrupt("truncated: no end frame"))?;
    if end.kind != FrameKind::End {
        return Err(corrupt("truncated: no end frame"));
    }
    Ok(Manifest {
        root: Some(digest_hex(&end.raw_hash)),
        ..m
    })
}

/// What was stored.
#[derive(Clone, Debug)]
pub struct Stored {
    pub manifest: Manifest,
    /// Bytes of the stored bundle.
    pub stored_bytes: u64,
    /// Chunks copied from the base instead of received.
    pub from_base: u64,
}

/// A file written in order, with writeback started every few MiB.
struct Out<'a> {
    file: &'a std::fs::File,
    path: &'a Path,
    written: u64,
    flushed: u64,
    limit: u64,
}

impl Out<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), CheckpointError> {
        self.written += bytes.len() as u64;
        if self.written > self.limit {
            return Err(corrupt(format!(
                "larger than max_checkpoint_bytes ({})",
                self.limit
            )));
        }
        let mut w = self.file;
        w.write_all(bytes).map_err(|e| {
            corrupt(format!(
                "cannot store: {}",
                crate::disk::describe(self.path, &e)
            ))
        })?;
        if self.written - self.flushed >= WRITEBACK_EVERY {
            start_writeback(self.file, self.flushed, self.written - self.flushed);
            self.flushed = self.written;
        }
        Ok(())
    }
}

/// Asks the kernel to start writing a range back now (not waiting), so a
/// later fsync has less left to wait for.
fn start_writeback(file: &std::fs::File, from: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(from), Ok(len)) = (i64::try_from(from), i64::try_from(len)) else {
        return;
    };
    // SAFETY: sync_file_range only reads its arguments; the descriptor is
    // open for as long as `file` lives. Failure only loses the head start.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), from, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// Reads an upload from `r` into `out` (a new, empty file at `path`),
/// checking it as it comes; `base` is the latest stored bundle, whose
/// chunks a chunked upload may name instead of sending them. The file is
/// synced before this returns `Ok`.
pub fn receive(
    r: &mut impl Read,
    out: &std::fs::File,
    path: &Path,
    base: Option<&Path>,
    max_bytes: u64,
) -> Result<Stored, StoreError> {
    let mut o = Out {
        file: out,
        path,
        written: 0,
        flushed: 0,
        limit: max_bytes,
    };
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)
        .map_err(|_| corrupt("shorter than its header"))?;
    o.put(&magic)?;
    let (manifest, from_base) = if &magic == MAGIC {
        // The first format: every byte read is stored, and checked.
        let mut tee = Tee { r, o: &mut o };
        (read_v1(&mut tee, &|_: &str| None)?, 0)
    } else if &magic == MAGIC2 {
        receive_chunked(r, &mut o, base)?
    } else {
        return Err(corrupt("bad magic").into());
    };
    out.sync_all()
        .map_err(|e| corrupt(format!("cannot store: {}", crate::disk::describe(path, &e))))?;
    Ok(Stored {
        manifest,
        stored_bytes: o.written,
        from_base,
    })
}

/// Everything read from `r` also goes to `o`.
struct Tee<'a, 'b, R> {
    r: &'a mut R,
    o: &'a mut Out<'b>,
}

impl<R: Read> Read for Tee<'_, '_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.r.read(buf)?;
        self.o
            .put(&buf[..n])
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(n)
    }
}

fn receive_chunked(
    r: &mut impl Read,
    o: &mut Out<'_>,
    base: Option<&Path>,
) -> Result<(Manifest, u64), StoreError> {
    let (m, json) = read_header(r)?;
    let base = match m.base.as_deref() {
        None => None,
        Some(want) => {
            let want_d = parse_digest(want).ok_or_else(|| corrupt("base is not a digest"))?;
            let path = base.ok_or_else(|| StoreError::BaseMismatch(want.to_string()))?;
            let idx = index_stored(path).map_err(|_| StoreError::BaseMismatch(want.to_string()))?;
            if idx.root != want_d {
                return Err(StoreError::BaseMismatch(want.to_string()));
            }
            let f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
            Some((f, idx))
        }
    };
    o.put(&len32(json.len()).to_be_bytes())?;
    o.put(&json)?;
    let mut root = RootHasher::new(&json);
    let mut payload = Vec::new();
    let mut from_base = 0u64;
    for pos in layout(&m) {
        let head = read_head(r)?;
        check_frame(&head, &pos, m.chunk_bytes)?;
        let name = &m.files[pos.file].name;
        let head = if head.kind == FrameKind::Ref {
            let (f, idx) = base
                .as_ref()
                .ok_or_else(|| corrupt("a reference without a base"))?;
            let (at, bh) = idx
                .frames
                .get(&head.raw_hash)
                .ok_or_else(|| corrupt(format!("{name}: refers to a chunk the base lacks")))?;
            payload.resize(bh.stored_len as usize, 0);
            f.read_exact_at(&mut payload, *at)
                .map_err(|e| corrupt(format!("reading the base: {e}")))?;
            from_base += 1;
            *bh
        } else {
            payload.resize(head.stored_len as usize, 0);
            r.read_exact(&mut payload).map_err(|_| {
                corrupt(format!(
                    "{name}: truncated at byte {} of {}",
                    pos.offset, m.files[pos.file].size
                ))
            })?;
            head
        };
        if digest(&payload) != head.stored_hash {
            return Err(corrupt(format!(
                "{name}: BLAKE3 mismatch in the chunk at byte {}",
                pos.offset
            ))
            .into());
        }
        root.chunk(head.raw_len, &head.raw_hash);
        o.put(&head.encode())?;
        o.put(&payload)?;
    }
    let end = read_head(r)?;
    if end.kind != FrameKind::End {
        return Err(corrupt("more frames than the manifest's files hold").into());
    }
    let want = root.finish();
    if end.raw_hash != want {
        return Err(corrupt("root digest mismatch").into());
    }
    let mut extra = [0u8; 1];
    match r.read(&mut extra) {
        Ok(0) => {}
        Ok(_) => return Err(corrupt("bytes after the end frame").into()),
        Err(e) => return Err(corrupt(format!("partial upload: {e}")).into()),
    }
    o.put(&end.encode())?;
    Ok((
        Manifest {
            root: Some(digest_hex(&want)),
            ..m
        },
        from_base,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::bundle::BundleSource;
    use crate::checkpoint::pack::{PackOptions, pack};
    use std::sync::Arc;

    fn write_files(dir: &Path, files: &[(&str, &[u8])]) -> Vec<BundleSource> {
        files
            .iter()
            .map(|(n, d)| {
                std::fs::write(dir.join(n), d).unwrap();
                BundleSource {
                    name: n.to_string(),
                    path: dir.join(n),
                }
            })
            .collect()
    }

    fn store(bundle: &[u8], at: &Path, base: Option<&Path>) -> Result<Stored, StoreError> {
        let f = std::fs::File::create(at).unwrap();
        receive(&mut &bundle[..], &f, at, base, 1 << 30)
    }

    /// Distinct noise per seed, `n` bytes.
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn uploads_are_stored_as_sent_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let big = noise(3 << 20, 7);
        let src = write_files(dir.path(), &[("state", b"x=1\n"), ("big", &big)]);
        let mut b = Vec::new();
        let p = pack(Manifest::default(), &src, &PackOptions::default(), &mut b).unwrap();
        let at = dir.path().join("stored");
        let s = store(&b, &at, None).unwrap();
        assert_eq!(std::fs::read(&at).unwrap(), b);
        assert_eq!(s.manifest.root, p.manifest.root);
        assert_eq!(check_stored(&at).unwrap().root, p.manifest.root);
        assert_eq!(index_stored(&at).unwrap().root, p.chunks.root);
        // Cut short, padded, flipped: refused.
        for bad in [
            b[..b.len() - 1].to_vec(),
            b[..b.len() / 2].to_vec(),
            [b.clone(), vec![1]].concat(),
        ] {
            assert!(store(&bad, &dir.path().join("bad"), None).is_err());
        }
        let mut flipped = b.clone();
        let n = flipped.len() / 2;
        flipped[n] ^= 4;
        assert!(matches!(
            store(&flipped, &dir.path().join("bad"), None),
            Err(StoreError::Bad(CheckpointError::Corrupt(m))) if m.contains("BLAKE3")
        ));
        // A stored bundle cut short is not whole.
        let cut = dir.path().join("cut");
        std::fs::write(&cut, &b[..b.len() - 10]).unwrap();
        assert!(check_stored(&cut).is_err());
        // Too large for the limit.
        let f = std::fs::File::create(dir.path().join("big")).unwrap();
        assert!(receive(&mut &b[..], &f, &dir.path().join("big"), None, 1000).is_err());
    }

    #[test]
    fn unchanged_chunks_are_not_sent_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut big = noise(5 << 20, 9);
        let src = write_files(dir.path(), &[("big", &big)]);
        let mut first = Vec::new();
        let p1 = pack(
            Manifest::default(),
            &src,
            &PackOptions::default(),
            &mut first,
        )
        .unwrap();
        let latest = dir.path().join("latest");
        store(&first, &latest, None).unwrap();
        // One MiB changes.
        big[(2 << 20) + 5] ^= 1;
        let src = write_files(dir.path(), &[("big", &big)]);
        let opts = PackOptions {
            base: Some(Arc::new(p1.chunks.clone())),
            ..PackOptions::default()
        };
        let mut second = Vec::new();
        let p2 = pack(Manifest::default(), &src, &opts, &mut second).unwrap();
        assert_eq!(p2.referenced, 4);
        assert!(second.len() < (3 << 20), "{}", second.len());
        let at = dir.path().join("incoming");
        let s = store(&second, &at, Some(&latest)).unwrap();
        assert_eq!(s.from_base, 4);
        // What is stored is whole: it restores without the base.
        let out = tempfile::tempdir().unwrap();
        let f = std::fs::File::open(&at).unwrap();
        crate::checkpoint::read_bundle(&mut std::io::BufReader::new(f), Some(out.path())).unwrap();
        assert_eq!(std::fs::read(out.path().join("big")).unwrap(), big);
        assert_eq!(s.manifest.root, p2.manifest.root);
        // Against another base, or none: the home says so.
        let other = dir.path().join("other");
        std::fs::write(&other, &second).unwrap();
        assert!(matches!(
            store(&second, &dir.path().join("x"), Some(&at)),
            Err(StoreError::BaseMismatch(_))
        ));
        assert!(matches!(
            store(&second, &dir.path().join("x"), None),
            Err(StoreError::BaseMismatch(_))
        ));
        // A bundle holding references is never restored as it is.
        let out2 = tempfile::tempdir().unwrap();
        assert!(crate::checkpoint::read_bundle(&mut &second[..], Some(out2.path())).is_err());
    }

    #[test]
    fn first_format_uploads_are_checked_and_stored() {
        let dir = tempfile::tempdir().unwrap();
        let src = write_files(dir.path(), &[("state", b"old host")]);
        let mut b = Vec::new();
        crate::checkpoint::write_bundle(Manifest::default(), &src, &mut b).unwrap();
        let at = dir.path().join("stored");
        store(&b, &at, None).unwrap();
        assert_eq!(std::fs::read(&at).unwrap(), b);
        assert!(check_stored(&at).is_ok());
        let mut bad = b.clone();
        let n = bad.len() - 1;
        bad[n] ^= 1;
        assert!(store(&bad, &dir.path().join("bad"), None).is_err());
    }
}
