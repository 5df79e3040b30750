//! Keyboard/mouse activity from `/dev/input/event*` (platform.md §4; BOINC's
//! Linux client does the same through libevdev).
//!
//! Devices are opened read-only and non-blocking and are **never grabbed**
//! (no `EVIOCGRAB`): the owner's session must keep receiving every event.
//! Any event counts as activity. Records are the kernel's 24-byte
//! `struct input_event` (64-bit `timeval`, u16 type, u16 code, i32 value),
//! parsed by hand so tests can feed them from plain files or FIFOs; the
//! development machines have no `/dev/input` and no uinput (platform.md §1.6).
//!
//! Hot-plug: an inotify watch on the directory triggers a rescan when a node
//! appears, changes permissions (udev sets them after creation) or vanishes.
//! Without inotify (directory missing at start) the directory is rescanned at
//! every reading until it shows up.

use super::{IdleSource, OwnerError};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Size of `struct input_event` on 64-bit Linux.
pub const INPUT_EVENT_SIZE: usize = 24;

/// One decoded `struct input_event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputEvent {
    pub sec: i64,
    pub usec: i64,
    pub kind: u16,
    pub code: u16,
    pub value: i32,
}

impl InputEvent {
    pub fn decode(b: &[u8; INPUT_EVENT_SIZE]) -> Self {
        let i64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            i64::from_ne_bytes(a)
        };
        InputEvent {
            sec: i64_at(0),
            usec: i64_at(8),
            kind: u16::from_ne_bytes([b[16], b[17]]),
            code: u16::from_ne_bytes([b[18], b[19]]),
            value: i32::from_ne_bytes([b[20], b[21], b[22], b[23]]),
        }
    }

    pub fn encode(&self) -> [u8; INPUT_EVENT_SIZE] {
        let mut b = [0u8; INPUT_EVENT_SIZE];
        b[0..8].copy_from_slice(&self.sec.to_ne_bytes());
        b[8..16].copy_from_slice(&self.usec.to_ne_bytes());
        b[16..18].copy_from_slice(&self.kind.to_ne_bytes());
        b[18..20].copy_from_slice(&self.code.to_ne_bytes());
        b[20..24].copy_from_slice(&self.value.to_ne_bytes());
        b
    }

    /// The event's kernel timestamp (CLOCK_REALTIME unless a client changed
    /// the device clock), if it is a plausible recent wall-clock time.
    fn time(&self, now: SystemTime) -> Option<SystemTime> {
        let secs = u64::try_from(self.sec).ok()?;
        let usec = u64::try_from(self.usec).ok().filter(|u| *u < 1_000_000)?;
        let t = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(usec);
        // A monotonic-clock stamp or garbage would be far in the past; only
        // trust stamps within a day of now, else use the read time.
        let recent = now
            .duration_since(t)
            .is_ok_and(|d| d < Duration::from_secs(86_400));
        recent.then_some(t)
    }
}

struct Device {
    file: File,
    /// Bytes of a partial record left over from the previous read.
    partial: Vec<u8>,
}

/// Activity from evdev devices under a directory (default `/dev/input`).
pub struct EvdevSource {
    dir: PathBuf,
    prefix: String,
    inotify: Option<Inotify>,
    devices: HashMap<PathBuf, Device>,
    last: Option<SystemTime>,
    scanned: bool,
    started: SystemTime,
}

impl EvdevSource {
    /// Watch `/dev/input/event*`.
    pub fn new() -> Self {
        Self::with_dir("/dev/input")
    }

    /// Watch `<dir>/event*` (tests point this at a temp dir of FIFOs/files).
    pub fn with_dir(dir: impl Into<PathBuf>) -> Self {
        let mut s = EvdevSource {
            dir: dir.into(),
            prefix: "event".to_string(),
            inotify: None,
            devices: HashMap::new(),
            last: None,
            scanned: false,
            started: SystemTime::now(),
        };
        s.try_watch();
        s
    }

    /// Paths of the devices currently open.
    pub fn devices(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = self.devices.keys().cloned().collect();
        v.sort();
        v
    }

    fn try_watch(&mut self) {
        if self.inotify.is_some() || !self.dir.is_dir() {
            return;
        }
        let flags = AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_MOVED_FROM;
        match Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .and_then(|i| i.add_watch(&self.dir, flags).map(|_| i))
        {
            Ok(i) => {
                self.inotify = Some(i);
                // Anything that appeared before the watch was set up is
                // picked up by this rescan.
                self.scanned = false;
            }
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "inotify watch failed; rescanning at every reading");
            }
        }
    }

    /// Drain inotify; returns true if the directory changed.
    fn drain_inotify(&mut self) -> bool {
        let Some(i) = &self.inotify else {
            return true;
        };
        let mut changed = false;
        loop {
            match i.read_events() {
                Ok(evs) if evs.is_empty() => break,
                Ok(evs) => {
                    changed = true;
                    if evs
                        .iter()
                        .any(|e| e.mask.contains(AddWatchFlags::IN_IGNORED))
                    {
                        // The directory itself went away (e.g. /dev/input
                        // removed when the last device was unplugged).
                        self.inotify = None;
                        break;
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(e) => {
                    tracing::warn!(dir = %self.dir.display(), error = %e, "inotify read failed");
                    self.inotify = None;
                    break;
                }
            }
        }
        changed
    }

    fn rescan(&mut self) {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) => {
                if !self.devices.is_empty() || e.kind() != std::io::ErrorKind::NotFound {
                    tracing::debug!(dir = %self.dir.display(), error = %e, "input directory unreadable");
                }
                self.devices.clear();
                return;
            }
        };
        let mut present = Vec::new();
        for ent in entries.flatten() {
            let name = ent.file_name();
            let Some(name) = name.to_str() else { continue };
            if !name.starts_with(&self.prefix) {
                continue;
            }
            let path = ent.path();
            present.push(path.clone());
            if self.devices.contains_key(&path) {
                continue;
            }
            match open_device(&path) {
                Ok(file) => {
                    tracing::info!(device = %path.display(), "input device opened");
                    self.devices.insert(
                        path,
                        Device {
                            file,
                            partial: Vec::new(),
                        },
                    );
                }
                // Permission may arrive later through udev (IN_ATTRIB).
                Err(e) => {
                    tracing::debug!(device = %path.display(), error = %e, "cannot open input device yet")
                }
            }
        }
        self.devices.retain(|p, _| present.contains(p));
    }

    /// Read every pending record; returns the latest activity time.
    fn read_devices(&mut self, now: SystemTime) -> Option<SystemTime> {
        let mut latest: Option<SystemTime> = None;
        let mut gone = Vec::new();
        let mut buf = [0u8; INPUT_EVENT_SIZE * 64];
        for (path, dev) in &mut self.devices {
            loop {
                match dev.file.read(&mut buf) {
                    Ok(0) => break, // file/FIFO without data: not an unplug
                    Ok(n) => {
                        dev.partial.extend_from_slice(&buf[..n]);
                        let whole = dev.partial.len() / INPUT_EVENT_SIZE * INPUT_EVENT_SIZE;
                        for rec in dev.partial[..whole].chunks_exact(INPUT_EVENT_SIZE) {
                            let mut a = [0u8; INPUT_EVENT_SIZE];
                            a.copy_from_slice(rec);
                            let t = InputEvent::decode(&a).time(now).unwrap_or(now);
                            latest = Some(latest.map_or(t, |l| l.max(t)));
                        }
                        dev.partial.drain(..whole);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // ENODEV after an unplug: drop it; a re-plug comes
                        // back through inotify.
                        tracing::info!(device = %path.display(), error = %e, "input device closed");
                        gone.push(path.clone());
                        break;
                    }
                }
            }
        }
        for p in gone {
            self.devices.remove(&p);
        }
        latest
    }
}

impl Default for EvdevSource {
    fn default() -> Self {
        Self::new()
    }
}

fn open_device(path: &Path) -> std::io::Result<File> {
    let meta = std::fs::metadata(path)?;
    let is_fifo = std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type());
    let mut o = std::fs::OpenOptions::new();
    o.read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY);
    if is_fifo {
        // A FIFO opened read-only reports EOF/POLLHUP forever once its last
        // writer closes; holding a write end too keeps it quiet (EAGAIN).
        o.write(true);
    }
    o.open(path)
}

impl IdleSource for EvdevSource {
    fn name(&self) -> &str {
        "evdev"
    }

    fn last_activity(&mut self, now: SystemTime) -> Result<Option<SystemTime>, OwnerError> {
        self.try_watch();
        if self.drain_inotify() || !self.scanned {
            self.rescan();
            self.scanned = true;
        }
        if let Some(t) = self.read_devices(now) {
            self.last = Some(self.last.map_or(t, |l| l.max(t)));
        }
        match self.last {
            Some(t) => Ok(Some(t)),
            // With no device at all this source knows nothing (a headless
            // machine), rather than "idle forever".
            None if self.devices.is_empty() => Ok(None),
            // Devices but no event yet: idle at least since we started
            // watching, and no longer than that (the conservative reading).
            None => Ok(Some(self.started)),
        }
    }

    fn wake_fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut v: Vec<BorrowedFd<'_>> = self.devices.values().map(|d| d.file.as_fd()).collect();
        if let Some(i) = &self.inotify {
            v.push(i.as_fd());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_roundtrip() {
        let e = InputEvent {
            sec: 1_700_000_000,
            usec: 5,
            kind: 1,
            code: 30,
            value: 1,
        };
        assert_eq!(InputEvent::decode(&e.encode()), e);
    }

    #[test]
    fn implausible_stamps_fall_back() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mono = InputEvent {
            sec: 1234,
            usec: 0,
            kind: 0,
            code: 0,
            value: 0,
        };
        assert_eq!(mono.time(now), None);
        let ok = InputEvent {
            sec: 1_799_999_990,
            ..mono
        };
        assert_eq!(
            ok.time(now),
            Some(UNIX_EPOCH + Duration::from_secs(1_799_999_990))
        );
        let future = InputEvent {
            sec: 1_800_000_100,
            ..mono
        };
        assert_eq!(future.time(now), None);
    }
}
