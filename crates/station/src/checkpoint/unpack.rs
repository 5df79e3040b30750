//! Reading a bundle as it arrives: every frame's structure checked in
//! order, every chunk decompressed and checked against its raw digest on a
//! few worker threads and written at its offset, and the root checked at
//! the end. A restore writes into staging directories beside the
//! destinations and renames the files into place only once the whole
//! bundle has verified, so a corrupt or truncated checkpoint leaves nothing
//! behind (`Staging`). Bundles of the first format (`GLCK`) are read too,
//! through the same staging.

use super::bundle::{Manifest, open_new, read_magic, read_v1};
use super::format::{
    ChunkPos, Digest, FrameHead, FrameKind, MAGIC2, RootHasher, check_frame, corrupt, digest,
    digest_hex, layout, read_head, read_header,
};
use super::pack::ChunkSet;
use super::{CheckpointError, io_err};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What reading a bundle gave.
#[derive(Clone, Debug)]
pub struct Unpacked {
    /// Its manifest (with the root, for a chunked bundle).
    pub manifest: Manifest,
    /// Its chunks (a chunked bundle's): the base of the next upload.
    pub chunks: Option<ChunkSet>,
}

/// Where and as whom a restore writes.
pub struct Restore<'a> {
    /// The final path of each file of the bundle.
    pub route: &'a (dyn Fn(&str) -> PathBuf + Sync),
    /// Owner (uid, gid) given to every file.
    pub owner: Option<(u32, u32)>,
    /// Worker threads decompressing, hashing and writing.
    pub threads: usize,
}

/// Reads a bundle of either format from `r` and restores its files; they
/// appear at their destinations only if it all verified.
pub fn restore(r: &mut impl Read, opts: &Restore<'_>) -> Result<Unpacked, CheckpointError> {
    let mut staging = Staging::default();
    let magic = read_magic(r)?;
    let got = if &magic == MAGIC2 {
        let (m, json) = read_header(r)?;
        let mut files = Vec::with_capacity(m.files.len());
        for f in &m.files {
            let path = staging.stage(&(opts.route)(&f.name), &f.name)?;
            let file = open_new(&path)?;
            set_owner_mode(&file, &path, opts.owner, f.mode)?;
            files.push(file);
        }
        let (root, chunks) = decode(r, &m, &json, opts.threads, Some(&files))?;
        Unpacked {
            manifest: Manifest {
                root: Some(digest_hex(&root)),
                ..m
            },
            chunks: Some(chunks),
        }
    } else {
        // The first format's reader takes a `Fn` route.
        let cell = std::cell::RefCell::new(staging);
        let failed = std::cell::RefCell::new(None);
        let route = |name: &str| match cell.borrow_mut().stage(&(opts.route)(name), name) {
            Ok(p) => Some(p),
            Err(e) => {
                *failed.borrow_mut() = Some(e);
                None
            }
        };
        let m = read_v1(r, &route);
        staging = cell.into_inner();
        if let Some(e) = failed.into_inner() {
            return Err(e);
        }
        let m = m?;
        for f in &m.files {
            let path = staging
                .staged(&f.name)
                .ok_or_else(|| corrupt("lost a staged file"))?;
            let file = std::fs::File::open(&path).map_err(|e| io_err(&path, e))?;
            set_owner_mode(&file, &path, opts.owner, f.mode)?;
        }
        Unpacked {
            manifest: m,
            chunks: None,
        }
    };
    staging.commit()?;
    Ok(got)
}

/// Checks a whole bundle of either format without writing anything.
pub fn verify(r: &mut impl Read, threads: usize) -> Result<Unpacked, CheckpointError> {
    let magic = read_magic(r)?;
    if &magic != MAGIC2 {
        let m = read_v1(r, &|_: &str| None)?;
        return Ok(Unpacked {
            manifest: m,
            chunks: None,
        });
    }
    let (m, json) = read_header(r)?;
    let (root, chunks) = decode(r, &m, &json, threads, None)?;
    Ok(Unpacked {
        manifest: Manifest {
            root: Some(digest_hex(&root)),
            ..m
        },
        chunks: Some(chunks),
    })
}

/// A chunked bundle after its magic, written straight to where `route`
/// says (`None`: checked only); for [`super::read_bundle`].
pub(crate) fn read_chunked(
    r: &mut impl Read,
    route: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Manifest, CheckpointError> {
    let (m, json) = read_header(r)?;
    let mut files = Vec::new();
    let mut all = true;
    for f in &m.files {
        match route(&f.name) {
            Some(p) => {
                let file = open_new(&p)?;
                set_owner_mode(&file, &p, None, f.mode)?;
                files.push(file);
            }
            None => all = false,
        }
    }
    let files = if all && !m.files.is_empty() {
        Some(files.as_slice())
    } else {
        None
    };
    let (root, _) = decode(r, &m, &json, 1, files)?;
    Ok(Manifest {
        root: Some(digest_hex(&root)),
        ..m
    })
}

fn set_owner_mode(
    file: &std::fs::File,
    path: &Path,
    owner: Option<(u32, u32)>,
    mode: u32,
) -> Result<(), CheckpointError> {
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(file, Some(uid), Some(gid)).map_err(|e| io_err(path, e))?;
    }
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode & 0o777))
        .map_err(|e| io_err(path, e))
}

/// One chunk for a worker.
struct Job {
    pos: ChunkPos,
    head: FrameHead,
    payload: Vec<u8>,
}

/// Reads the frames after the header, checks them, and (with `files`)
/// writes each chunk at its offset; `threads` workers check and write
/// while the next frames are read. Returns the root and the chunks.
fn decode(
    r: &mut impl Read,
    m: &Manifest,
    json: &[u8],
    threads: usize,
    files: Option<&[std::fs::File]>,
) -> Result<(Digest, ChunkSet), CheckpointError> {
    let chunks = layout(m);
    let mut root = RootHasher::new(json);
    let mut set = ChunkSet::default();
    let failed = AtomicBool::new(false);
    let error: Mutex<Option<CheckpointError>> = Mutex::new(None);
    let fail = |e: CheckpointError| {
        let mut g = error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if g.is_none() {
            *g = Some(e);
        }
        failed.store(true, Ordering::SeqCst);
    };
    let threads = threads.max(1);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(threads * 2);
    let rx = Mutex::new(rx);
    let read: Result<(), CheckpointError> = std::thread::scope(|s| {
        // Owned here, so that however this ends the channel closes and the
        // workers stop before the scope waits for them.
        let tx = tx;
        for _ in 0..threads {
            s.spawn(|| {
                let mut dz = zstd::bulk::Decompressor::new().ok();
                let mut buf = Vec::new();
                loop {
                    let job = {
                        let g = rx.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        g.recv()
                    };
                    let Ok(job) = job else { return };
                    if failed.load(Ordering::SeqCst) {
                        continue;
                    }
                    if let Err(e) = check_and_write(&job, dz.as_mut(), &mut buf, m, files) {
                        fail(e);
                    }
                }
            });
        }
        for pos in &chunks {
            if failed.load(Ordering::SeqCst) {
                break;
            }
            let head = read_head(r)?;
            check_frame(&head, pos, m.chunk_bytes)?;
            if head.kind == FrameKind::Ref {
                return Err(corrupt("a stored checkpoint refers to another"));
            }
            let mut payload = vec![0u8; head.stored_len as usize];
            r.read_exact(&mut payload).map_err(|_| {
                corrupt(format!(
                    "{}: truncated at byte {} of {}",
                    m.files[pos.file].name, pos.offset, m.files[pos.file].size
                ))
            })?;
            root.chunk(head.raw_len, &head.raw_hash);
            set.hashes.insert(head.raw_hash);
            if tx
                .send(Job {
                    pos: *pos,
                    head,
                    payload,
                })
                .is_err()
            {
                break;
            }
        }
        Ok(())
    });
    if let Some(e) = error
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(e);
    }
    read?;
    let end = read_head(r)?;
    if end.kind != FrameKind::End {
        return Err(corrupt("more frames than the manifest's files hold"));
    }
    let want = root.finish();
    if end.raw_hash != want {
        return Err(corrupt("root digest mismatch"));
    }
    let mut extra = [0u8; 1];
    match r.read(&mut extra) {
        Ok(0) => {}
        Ok(_) => return Err(corrupt("bytes after the end frame")),
        Err(e) => return Err(corrupt(e.to_string())),
    }
    set.root = want;
    Ok((want, set))
}

/// Checks one chunk against its raw digest (decompressing it first if it
/// is compressed) and writes it at its offset.
fn check_and_write(
    job: &Job,
    dz: Option<&mut zstd::bulk::Decompressor<'static>>,
    buf: &mut Vec<u8>,
    m: &Manifest,
    files: Option<&[std::fs::File]>,
) -> Result<(), CheckpointError> {
    let name = &m.files[job.pos.file].name;
    let raw: &[u8] = match job.head.kind {
        FrameKind::Zstd => {
            // The stored digest too: no changed byte goes unnoticed, even
            // one that would not change what the chunk decompresses to.
            if digest(&job.payload) != job.head.stored_hash {
                return Err(corrupt(format!(
                    "{name}: BLAKE3 mismatch in the chunk at byte {}",
                    job.pos.offset
                )));
            }
            let dz = dz.ok_or_else(|| corrupt("no zstd decoder"))?;
            buf.clear();
            buf.reserve(job.head.raw_len as usize);
            let n = dz
                .decompress_to_buffer(&job.payload, buf)
                .map_err(|e| corrupt(format!("{name}: chunk at {}: {e}", job.pos.offset)))?;
            if n != job.head.raw_len as usize {
                return Err(corrupt(format!(
                    "{name}: chunk at {} has the wrong size",
                    job.pos.offset
                )));
            }
            buf
        }
        _ => &job.payload,
    };
    if digest(raw) != job.head.raw_hash {
        return Err(corrupt(format!(
            "{name}: BLAKE3 mismatch in the chunk at byte {}",
            job.pos.offset
        )));
    }
    if let Some(files) = files {
        files[job.pos.file]
            .write_all_at(raw, job.pos.offset)
            .map_err(|e| corrupt(format!("{name}: {e}")))?;
    }
    Ok(())
}

/// Directories beside each destination where a restore writes until it
/// has verified; removed with what is in them unless committed.
#[derive(Default)]
struct Staging {
    /// (destination directory, its staging directory).
    dirs: Vec<(PathBuf, PathBuf)>,
    /// (bundle name, staged path, final path).
    files: Vec<(String, PathBuf, PathBuf)>,
}

impl Staging {
    /// The staging directory for `parent`, made on first use: private to
    /// the daemon (0700) whoever owns `parent`, so nothing in it can be
    /// swapped for a link before it is renamed out.
    fn dir_for(&mut self, parent: &Path) -> Result<PathBuf, CheckpointError> {
        if let Some((_, s)) = self.dirs.iter().find(|(p, _)| p == parent) {
            return Ok(s.clone());
        }
        use std::os::unix::fs::DirBuilderExt;
        for n in 0..100u32 {
            let s = parent.join(format!(".gleaner-restore-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&s) {
                Ok(()) => {
                    self.dirs.push((parent.to_path_buf(), s.clone()));
                    return Ok(s);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let _ = std::fs::remove_dir_all(&s);
                }
                Err(e) => return Err(io_err(&s, e)),
            }
        }
        Err(io_err(
            parent,
            std::io::Error::other("no staging directory could be made"),
        ))
    }

    /// Where file `name` (going to `dest`) is written meanwhile.
    fn stage(&mut self, dest: &Path, name: &str) -> Result<PathBuf, CheckpointError> {
        let parent = dest
            .parent()
            .ok_or_else(|| CheckpointError::BadName(name.to_string()))?;
        let dir = self.dir_for(parent)?;
        let staged = dir.join(name);
        self.files
            .push((name.to_string(), staged.clone(), dest.to_path_buf()));
        Ok(staged)
    }

    fn staged(&self, name: &str) -> Option<PathBuf> {
        self.files
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, s, _)| s.clone())
    }

    /// Renames every staged file to its destination and removes the
    /// staging directories.
    fn commit(mut self) -> Result<(), CheckpointError> {
        for (_, staged, dest) in std::mem::take(&mut self.files) {
            std::fs::rename(&staged, &dest).map_err(|e| io_err(&dest, e))?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for (_, s) in &self.dirs {
            let _ = std::fs::remove_dir_all(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::bundle::BundleSource;
    use crate::checkpoint::pack::{PackOptions, pack};
    use proptest::prelude::*;

    /// Files of every kind a checkpoint meets: empty, smaller than a
    /// chunk, several chunks of text (compresses) and of noise (does not).
    fn files() -> Vec<(&'static str, Vec<u8>)> {
        let text: Vec<u8> = (0..300_000u32)
            .flat_map(|i| format!("cell {i} temp {}\n", i % 977).into_bytes())
            .collect();
        let mut x = 88172645463325252u64;
        let noise: Vec<u8> = (0..(2 << 20) + 12345)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        vec![
            ("empty", Vec::new()),
            ("small", b"step=42\n".to_vec()),
            ("text", text),
            ("noise", noise),
        ]
    }

    fn bundle_of(
        files: &[(&str, Vec<u8>)],
        opts: &PackOptions,
    ) -> (Vec<u8>, crate::checkpoint::Packed) {
        let dir = tempfile::tempdir().unwrap();
        let sources: Vec<BundleSource> = files
            .iter()
            .map(|(n, data)| {
                std::fs::write(dir.path().join(n), data).unwrap();
                BundleSource {
                    name: n.to_string(),
                    path: dir.path().join(n),
                }
            })
            .collect();
        let mut out = Vec::new();
        let p = pack(
            Manifest {
                backend: "self".into(),
                seq: 3,
                stdout_len: 17,
                ..Default::default()
            },
            &sources,
            opts,
            &mut out,
        )
        .unwrap();
        (out, p)
    }

    fn restore_to(dir: &Path, b: &[u8]) -> Result<Unpacked, CheckpointError> {
        let d = dir.to_path_buf();
        let route = move |n: &str| d.join(n);
        restore(
            &mut &b[..],
            &Restore {
                route: &route,
                owner: None,
                threads: 3,
            },
        )
    }

    #[test]
    fn chunked_bundles_round_trip_compressed_where_it_pays() {
        let files = files();
        let (b, packed) = bundle_of(&files, &PackOptions::default());
        assert!(b.starts_with(crate::checkpoint::MAGIC2));
        assert!(packed.compressed > 0, "the text compresses");
        let raw: usize = files.iter().map(|f| f.1.len()).sum();
        assert!(b.len() < raw, "{} ≥ {raw}", b.len());
        let out = tempfile::tempdir().unwrap();
        // A stale file of the same name is replaced.
        std::fs::write(out.path().join("small"), b"old").unwrap();
        let got = restore_to(out.path(), &b).unwrap();
        for (n, data) in &files {
            assert_eq!(&std::fs::read(out.path().join(n)).unwrap(), data, "{n}");
        }
        assert_eq!(got.manifest.seq, 3);
        assert_eq!(got.manifest.stdout_len, 17);
        assert_eq!(got.manifest.root, packed.manifest.root);
        assert_eq!(got.chunks.as_ref(), Some(&packed.chunks));
        // Nothing of the staging is left.
        let left: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), files.len(), "{left:?}");
        // The same through read_bundle and verify.
        let m = crate::checkpoint::read_bundle(&mut &b[..], None).unwrap();
        assert_eq!(m.root, packed.manifest.root);
        assert!(verify(&mut &b[..], 2).is_ok());
        // Uncompressed packs verify alike, and name the same root.
        let (plain, p2) = bundle_of(
            &files,
            &PackOptions {
                level: None,
                ..PackOptions::default()
            },
        );
        assert_eq!(p2.compressed, 0);
        assert_eq!(p2.manifest.root, packed.manifest.root);
        assert!(verify(&mut &plain[..], 1).is_ok());
    }

    #[test]
    fn a_bad_bundle_leaves_nothing_and_the_old_files_stand() {
        let (b, _) = bundle_of(&files(), &PackOptions::default());
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("small"), b"old").unwrap();
        let mut cases: Vec<Vec<u8>> = vec![
            b[..b.len() / 2].to_vec(),
            b[..b.len() - 1].to_vec(),
            [b.clone(), vec![0]].concat(),
        ];
        for at in [6, 40, b.len() / 3, b.len() - 40, b.len() - 2] {
            let mut f = b.clone();
            f[at] ^= 0x10;
            cases.push(f);
        }
        for (i, bad) in cases.iter().enumerate() {
            assert!(restore_to(out.path(), bad).is_err(), "case {i}");
            let left: Vec<_> = std::fs::read_dir(out.path())
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect();
            assert_eq!(left, vec![std::ffi::OsString::from("small")], "case {i}");
            assert_eq!(std::fs::read(out.path().join("small")).unwrap(), b"old");
        }
    }

    #[test]
    fn first_format_bundles_still_restore() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("state"), b"v1 state").unwrap();
        let mut b = Vec::new();
        crate::checkpoint::write_bundle(
            Manifest::default(),
            &[BundleSource {
                name: "state".into(),
                path: dir.path().join("state"),
            }],
            &mut b,
        )
        .unwrap();
        let out = tempfile::tempdir().unwrap();
        let got = restore_to(out.path(), &b).unwrap();
        assert!(got.chunks.is_none());
        assert_eq!(
            std::fs::read(out.path().join("state")).unwrap(),
            b"v1 state"
        );
        let mut bad = b.clone();
        let n = bad.len() - 1;
        bad[n] ^= 1;
        let out2 = tempfile::tempdir().unwrap();
        assert!(restore_to(out2.path(), &bad).is_err());
        assert_eq!(std::fs::read_dir(out2.path()).unwrap().count(), 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any single changed byte of a bundle is refused.
        #[test]
        fn every_flipped_byte_is_refused(
            sizes in proptest::collection::vec(0usize..20_000, 1..4),
            seed in any::<u64>(),
            pick in any::<proptest::sample::Index>(),
            bit in 0u8..8,
        ) {
            let mut x = seed | 1;
            let files: Vec<(String, Vec<u8>)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    // Half text-like (compresses), half noise.
                    let data = (0..n)
                        .map(|j| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            if i % 2 == 0 { b"abcd\n"[j % 5] } else { x as u8 }
                        })
                        .collect();
                    (format!("f{i}"), data)
                })
                .collect();
            let dir = tempfile::tempdir().unwrap();
            let sources: Vec<BundleSource> = files
                .iter()
                .map(|(n, d)| {
                    std::fs::write(dir.path().join(n), d).unwrap();
                    BundleSource { name: n.clone(), path: dir.path().join(n) }
                })
                .collect();
            let mut b = Vec::new();
            // Small chunks would need a small chunk size in the format;
            // files of up to 20 kB still make several frames per bundle.
            pack(Manifest::default(), &sources, &PackOptions::default(), &mut b).unwrap();
            prop_assert!(verify(&mut &b[..], 2).is_ok());
            let at = pick.index(b.len());
            b[at] ^= 1 << bit;
            prop_assert!(verify(&mut &b[..], 2).is_err(), "flip at {} of {}", at, b.len());
        }
    }
}
