//! The chunked bundle (`GLC2`), the format checkpoints travel and are
//! stored in now: the magic `GLC2`, a big-endian `u32` header
//! length, the header (a [`Manifest`] as JSON: names, sizes and modes, no
//! digests), then one frame per chunk of every file in header order, and an
//! end frame.
//!
//! Files are cut into chunks of the header's `chunk_bytes` (the last chunk
//! of a file shorter, an empty file none), so a frame's file and offset
//! follow from its position alone. Each frame is a fixed [`FRAME_HEAD`]
//! head — kind, raw length, stored length, the BLAKE3 digest of the raw
//! chunk and of the stored bytes — then the stored bytes: the chunk itself
//! (`Raw`), the chunk compressed with zstd (`Zstd`), or nothing (`Ref`: a
//! chunk the receiver already holds, by its raw digest; only an upload
//! whose header names a `base` may use it, and the home stores the chunk
//! itself). The end frame carries the bundle's root digest, over the header
//! and every chunk's raw length and digest: it names the checkpoint and
//! proves the frames complete and in order, whatever form each chunk was
//! stored in.
//!
//! A receiver can check the stored digests without decompressing (the
//! home, as bytes arrive) and the raw ones after (the host restoring, end
//! to end); a frame's head alone tells where the next begins, so the home
//! indexes a stored bundle without reading its payload.

use super::CheckpointError;
use super::bundle::{MAX_FILES, MAX_MANIFEST, Manifest, plain_name};
use std::io::Read;

/// First bytes of a chunked bundle.
pub const MAGIC2: &[u8; 4] = b"GLC2";
/// Chunk size the writer uses.
pub const CHUNK_BYTES: u64 = 1 << 20;
/// Smallest and largest chunk size a reader accepts.
pub const MIN_CHUNK: u64 = 4096;
pub const MAX_CHUNK: u64 = 16 << 20;
/// Bytes of a frame head.
pub const FRAME_HEAD: usize = 76;
/// Context string of the root digest (BLAKE3's key derivation mode keeps it
/// apart from any other use of the hash).
const ROOT_CONTEXT: &str = "gleaner 2026 checkpoint bundle v2 root";

/// A 32-byte BLAKE3 digest.
pub type Digest = [u8; 32];

/// How a frame holds its chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// The chunk's bytes as they are.
    Raw,
    /// The chunk compressed with zstd.
    Zstd,
    /// No bytes: the receiver holds a chunk with this raw digest.
    Ref,
    /// The last frame: its raw digest is the bundle's root.
    End,
}

impl FrameKind {
    fn code(self) -> u8 {
        match self {
            FrameKind::Raw => 0,
            FrameKind::Zstd => 1,
            FrameKind::Ref => 2,
            FrameKind::End => 0xff,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            0 => FrameKind::Raw,
            1 => FrameKind::Zstd,
            2 => FrameKind::Ref,
            0xff => FrameKind::End,
            _ => return None,
        })
    }
}

/// A frame's fixed head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHead {
    pub kind: FrameKind,
    pub raw_len: u32,
    pub stored_len: u32,
    pub raw_hash: Digest,
    pub stored_hash: Digest,
}

impl FrameHead {
    pub fn encode(&self) -> [u8; FRAME_HEAD] {
        let mut b = [0u8; FRAME_HEAD];
        b[0] = self.kind.code();
        b[4..8].copy_from_slice(&self.raw_len.to_be_bytes());
        b[8..12].copy_from_slice(&self.stored_len.to_be_bytes());
        b[12..44].copy_from_slice(&self.raw_hash);
        b[44..76].copy_from_slice(&self.stored_hash);
        b
    }

    /// Decodes a head, checking what can be checked without context.
    pub fn decode(b: &[u8; FRAME_HEAD]) -> Result<Self, CheckpointError> {
        let kind = FrameKind::from_code(b[0])
            .ok_or_else(|| corrupt(format!("unknown frame kind {}", b[0])))?;
        if b[1..4] != [0, 0, 0] {
            return Err(corrupt("frame head has reserved bytes set"));
        }
        let word = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut raw_hash = [0u8; 32];
        raw_hash.copy_from_slice(&b[12..44]);
        let mut stored_hash = [0u8; 32];
        stored_hash.copy_from_slice(&b[44..76]);
        let h = FrameHead {
            kind,
            raw_len: word(4),
            stored_len: word(8),
            raw_hash,
            stored_hash,
        };
        let ok = match kind {
            FrameKind::Raw => h.stored_len == h.raw_len && h.stored_hash == h.raw_hash,
            FrameKind::Zstd => h.stored_len > 0,
            FrameKind::Ref => h.stored_len == 0 && h.stored_hash == [0; 32],
            FrameKind::End => h.raw_len == 0 && h.stored_len == 0 && h.stored_hash == [0; 32],
        };
        if !ok {
            return Err(corrupt(format!("inconsistent {kind:?} frame head")));
        }
        Ok(h)
    }

    /// A frame holding `chunk` as it is.
    pub fn raw(chunk: &[u8], hash: Digest) -> Self {
        FrameHead {
            kind: FrameKind::Raw,
            raw_len: len32(chunk.len()),
            stored_len: len32(chunk.len()),
            raw_hash: hash,
            stored_hash: hash,
        }
    }

    /// The end frame for `root`.
    pub fn end(root: Digest) -> Self {
        FrameHead {
            kind: FrameKind::End,
            raw_len: 0,
            stored_len: 0,
            raw_hash: root,
            stored_hash: [0; 32],
        }
    }
}

/// A chunk's length as a frame holds it (chunks are at most
/// [`MAX_CHUNK`], far below `u32::MAX`).
pub(crate) fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub(crate) fn corrupt(msg: impl Into<String>) -> CheckpointError {
    CheckpointError::Corrupt(msg.into())
}

/// BLAKE3 of `data`.
pub fn digest(data: &[u8]) -> Digest {
    *blake3::hash(data).as_bytes()
}

/// Lower-case hex of a digest.
pub fn digest_hex(d: &Digest) -> String {
    super::bundle::hex(d)
}

/// A digest from lower-case hex.
pub fn parse_digest(s: &str) -> Option<Digest> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The root digest, fed the header and then each chunk in order.
pub struct RootHasher(blake3::Hasher);

impl RootHasher {
    pub fn new(header_json: &[u8]) -> Self {
        let mut h = blake3::Hasher::new_derive_key(ROOT_CONTEXT);
        h.update(&(header_json.len() as u64).to_be_bytes());
        h.update(header_json);
        RootHasher(h)
    }

    pub fn chunk(&mut self, raw_len: u32, raw_hash: &Digest) {
        self.0.update(&raw_len.to_be_bytes());
        self.0.update(raw_hash);
    }

    pub fn finish(&self) -> Digest {
        *self.0.finalize().as_bytes()
    }
}

/// Where a chunk lies: its file (index into the manifest) and offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkPos {
    pub file: usize,
    pub offset: u64,
    pub len: u32,
}

/// Every chunk of `m`'s files in bundle order.
pub fn layout(m: &Manifest) -> Vec<ChunkPos> {
    let chunk = m.chunk_bytes.max(1);
    let mut out = Vec::new();
    for (file, f) in m.files.iter().enumerate() {
        let mut offset = 0u64;
        while offset < f.size {
            let len = chunk.min(f.size - offset);
            out.push(ChunkPos {
                file,
                offset,
                len: len32(usize::try_from(len).unwrap_or(usize::MAX)),
            });
            offset += len;
        }
    }
    out
}

/// The header as JSON, exactly as it is written (the root covers these
/// bytes): the manifest without its root.
pub fn header_json(m: &Manifest) -> Result<Vec<u8>, CheckpointError> {
    let head = Manifest {
        root: None,
        ..m.clone()
    };
    let json = serde_json::to_vec(&head).map_err(|e| corrupt(format!("manifest: {e}")))?;
    if json.len() > MAX_MANIFEST as usize {
        return Err(corrupt("manifest too large"));
    }
    Ok(json)
}

/// Reads and checks the header after the magic; returns the manifest and
/// the header's bytes (for the root).
pub fn read_header(r: &mut impl Read) -> Result<(Manifest, Vec<u8>), CheckpointError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|_| corrupt("shorter than its header"))?;
    let len = u32::from_be_bytes(len);
    if len > MAX_MANIFEST {
        return Err(corrupt(format!("manifest of {len} bytes is too large")));
    }
    let mut json = vec![0u8; len as usize];
    r.read_exact(&mut json)
        .map_err(|_| corrupt("truncated manifest"))?;
    let m = parse_header(&json)?;
    Ok((m, json))
}

/// Parses and checks a header's JSON.
pub fn parse_header(json: &[u8]) -> Result<Manifest, CheckpointError> {
    let m: Manifest =
        serde_json::from_slice(json).map_err(|e| corrupt(format!("manifest: {e}")))?;
    if m.format != 2 {
        return Err(corrupt(format!("format {} in a GLC2 bundle", m.format)));
    }
    if !(MIN_CHUNK..=MAX_CHUNK).contains(&m.chunk_bytes) {
        return Err(corrupt(format!(
            "chunk size {} out of range",
            m.chunk_bytes
        )));
    }
    if m.files.len() > MAX_FILES {
        return Err(corrupt("too many files"));
    }
    if m.root.is_some() {
        return Err(corrupt("a header names its own root"));
    }
    if m.base.as_deref().is_some_and(|b| parse_digest(b).is_none()) {
        return Err(corrupt("base is not a digest"));
    }
    let mut seen = std::collections::HashSet::new();
    for f in &m.files {
        if !plain_name(&f.name) || !seen.insert(f.name.as_str()) {
            return Err(CheckpointError::BadName(f.name.clone()));
        }
    }
    Ok(m)
}

/// Reads a frame head; `Ok(None)` on a clean end of input before it.
pub fn read_head(r: &mut impl Read) -> Result<FrameHead, CheckpointError> {
    let mut b = [0u8; FRAME_HEAD];
    r.read_exact(&mut b)
        .map_err(|e| corrupt(format!("truncated: no frame head ({e})")))?;
    FrameHead::decode(&b)
}

/// Checks a frame head against the chunk it must hold.
pub fn check_frame(h: &FrameHead, pos: &ChunkPos, chunk_bytes: u64) -> Result<(), CheckpointError> {
    if h.kind == FrameKind::End {
        return Err(corrupt(
            "truncated: the end frame comes before the last chunk",
        ));
    }
    if h.raw_len != pos.len {
        return Err(corrupt(format!(
            "frame of {} bytes where a chunk of {} belongs",
            h.raw_len, pos.len
        )));
    }
    // A compressed chunk larger than the chunk size is never written.
    if u64::from(h.stored_len) > chunk_bytes {
        return Err(corrupt("frame larger than a chunk"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::ManifestEntry;

    #[test]
    fn frame_heads_round_trip_and_reject_nonsense() {
        let h = FrameHead::raw(b"abc", digest(b"abc"));
        assert_eq!(FrameHead::decode(&h.encode()).unwrap(), h);
        let e = FrameHead::end([7; 32]);
        assert_eq!(FrameHead::decode(&e.encode()).unwrap(), e);
        let mut b = h.encode();
        b[0] = 9;
        assert!(FrameHead::decode(&b).is_err());
        let mut b = h.encode();
        b[2] = 1;
        assert!(FrameHead::decode(&b).is_err());
        // A raw frame whose stored digest differs from its raw digest.
        let mut b = h.encode();
        b[50] ^= 1;
        assert!(FrameHead::decode(&b).is_err());
    }

    #[test]
    fn layout_cuts_files_into_chunks() {
        let m = Manifest {
            chunk_bytes: 4096,
            files: vec![
                ManifestEntry::new("a", 10_000, 0o600),
                ManifestEntry::new("empty", 0, 0o600),
                ManifestEntry::new("b", 4096, 0o600),
            ],
            ..Default::default()
        };
        let l = layout(&m);
        let got: Vec<(usize, u64, u32)> = l.iter().map(|p| (p.file, p.offset, p.len)).collect();
        assert_eq!(
            got,
            vec![(0, 0, 4096), (0, 4096, 4096), (0, 8192, 1808), (2, 0, 4096)]
        );
    }

    #[test]
    fn digests_parse_back() {
        let d = digest(b"x");
        assert_eq!(parse_digest(&digest_hex(&d)), Some(d));
        assert_eq!(parse_digest("zz"), None);
    }
}
