//! Activity reported through a file or FIFO, for tests and integrations
//! (a screen locker hook, a desktop agent, a remote session broker).
//!
//! Line format, one report per line:
//! - `active`: the owner was active when the line was written. For a FIFO
//!   that is when we read it; for a regular file it is the file's mtime.
//! - a number: wall-clock seconds since the Unix epoch (fractions allowed)
//!   of the last activity.
//! - empty lines and lines starting with `#` are ignored; anything else is
//!   logged and ignored.
//!
//! The latest time reported wins. A regular file is re-read whenever its
//! mtime or size changes; a FIFO is drained at each reading and its
//! descriptor wakes [`super::MinIdle::wait_activity`]. A regular file wakes
//! it too, through an inotify watch on its directory (so a writer's report
//! reaches the detector in milliseconds, not at the next poll).

use super::{IdleSource, OwnerError};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub struct FileSource {
    path: PathBuf,
    fifo: Option<File>,
    partial: String,
    seen: Option<(SystemTime, u64)>,
    last: Option<SystemTime>,
    /// Watch on the file's directory (the file may not exist yet, and
    /// writers often replace it by rename).
    inotify: Option<Inotify>,
}

impl FileSource {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path: PathBuf = path.into();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let flags = AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_MODIFY
            | AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_ATTRIB;
        let inotify = match Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .and_then(|i| i.add_watch(&dir, flags).map(|_| i))
        {
            Ok(i) => Some(i),
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "no inotify watch; the file is polled");
                None
            }
        };
        FileSource {
            path,
            fifo: None,
            partial: String::new(),
            seen: None,
            last: None,
            inotify,
        }
    }

    /// Empty the inotify queue (its events only wake the poll).
    fn drain_inotify(&mut self) {
        let Some(i) = &self.inotify else { return };
        loop {
            match i.read_events() {
                Ok(evs) if !evs.is_empty() => {
                    if evs
                        .iter()
                        .any(|e| e.mask.contains(AddWatchFlags::IN_IGNORED))
                    {
                        self.inotify = None;
                        return;
                    }
                }
                Ok(_) | Err(nix::errno::Errno::EAGAIN) => return,
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e, "inotify read failed; polling");
                    self.inotify = None;
                    return;
                }
            }
        }
    }

    fn note(&mut self, t: SystemTime) {
        self.last = Some(self.last.map_or(t, |l| l.max(t)));
    }

    fn apply_line(&mut self, line: &str, active_at: SystemTime) {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return;
        }
        if line.eq_ignore_ascii_case("active") {
            self.note(active_at);
            return;
        }
        match line.parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => {
                self.note(UNIX_EPOCH + Duration::from_secs_f64(s));
            }
            _ => {
                tracing::warn!(path = %self.path.display(), line, "unrecognised activity line")
            }
        }
    }

    fn read_fifo(&mut self, now: SystemTime) -> Result<(), OwnerError> {
        let Some(f) = self.fifo.as_mut() else {
            return Ok(());
        };
        let mut buf = [0u8; 4096];
        let mut text = std::mem::take(&mut self.partial);
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(OwnerError::io(&self.path, e)),
            }
        }
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        self.partial = text[complete..].to_string();
        for line in text[..complete].lines() {
            self.apply_line(line, now);
        }
        Ok(())
    }
}

impl IdleSource for FileSource {
    fn name(&self) -> &str {
        "file"
    }

    fn last_activity(&mut self, now: SystemTime) -> Result<Option<SystemTime>, OwnerError> {
        self.drain_inotify();
        if self.fifo.is_some() {
            self.read_fifo(now)?;
            return Ok(self.last);
        }
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            // Not written yet: no information, not an error.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self.last),
            Err(e) => return Err(OwnerError::io(&self.path, e)),
        };
        if meta.file_type().is_fifo() {
            // Read-write so the FIFO never reports EOF/HUP when writers come
            // and go (a reader-only FIFO makes poll spin after the first
            // writer closes).
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&self.path)
                .map_err(|e| OwnerError::io(&self.path, e))?;
            self.fifo = Some(f);
            self.read_fifo(now)?;
            return Ok(self.last);
        }
        let mtime = meta.modified().map_err(|e| OwnerError::io(&self.path, e))?;
        let stamp = (mtime, meta.len());
        if self.seen != Some(stamp) {
            self.seen = Some(stamp);
            let text =
                std::fs::read_to_string(&self.path).map_err(|e| OwnerError::io(&self.path, e))?;
            for line in text.lines() {
                self.apply_line(line, mtime);
            }
        }
        Ok(self.last)
    }

    fn wake_fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut v: Vec<BorrowedFd<'_>> = self.fifo.iter().map(|f| f.as_fd()).collect();
        v.extend(self.inotify.iter().map(|i| i.as_fd()));
        v
    }
}
