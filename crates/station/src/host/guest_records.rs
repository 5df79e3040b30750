//! Durable records of the guests running on this station, so that a guest
//! orphaned by a crash of the daemon is found and killed at the next start,
//! with or without cgroups.
//!
//! One small JSON file per guest in `<state_dir>/guests/` (the daemon's
//! private directory: a guest that could write a record could make the
//! station kill any process at its next start), written when the guest is
//! spawned and removed when it is reaped. A file is replaced atomically
//! (temporary file, fsync, rename, fsync of the directory), so a crash
//! leaves either the old record or the new one, never half of one.
//!
//! A record names the guest's pid, its process group and the process's
//! start time (`/proc/<pid>/stat` field 22, clock ticks after boot) with the
//! boot id: a pid that now belongs to another process has another start
//! time (or the machine rebooted), and such a process is never touched.
//! Without cgroups the guest is found through its process group (every
//! guest is a session leader, `isolation/launch.rs`) and through the
//! descendants of its pid (a PID-namespace guest is the waiter's child in a
//! session of its own), and, as root, by its slot account's uid: every
//! process of that uid is the guest's, whatever it did to leave its group
//! or its parent (a double fork and `setsid`). The record names the slot
//! too, so that a uid whose account is no longer that slot's is never
//! killed.

use super::procs::{kill_guest, proc_stat};
use gleaner_proto::job::JobId;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The records' directory under a station's state directory.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("guests")
}

/// What is kept of one running guest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestRecord {
    pub guest_id: String,
    pub job: String,
    /// The guest's home station: `job` is that home's job (records of
    /// older stations name none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub home: String,
    /// The spawned process (with a PID namespace: the waiter).
    pub pid: i32,
    /// Its process group (== pid: the guest is a session leader).
    pub pgid: i32,
    /// `/proc/<pid>/stat` field 22 when the record was written.
    pub start_time: u64,
    /// `/proc/sys/kernel/random/boot_id`: start times count from boot.
    #[serde(default)]
    pub boot_id: String,
    /// The slot account the guest ran as (none in a personal pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// Its uid: every process of it is the guest's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
}

/// Errors of the record files; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("guest record {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("guest record {path} is corrupt: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("process {pid}: no start time in /proc/{pid}/stat")]
    NoProcess { pid: i32 },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl GuestRecord {
    /// A record of `pid` as it runs now.
    pub fn of_process(guest_id: &str, job: JobId, pid: i32) -> Result<Self, RecordError> {
        let st = proc_stat(pid).ok_or(RecordError::NoProcess { pid })?;
        Ok(GuestRecord {
            guest_id: guest_id.to_string(),
            job: job.to_string(),
            home: String::new(),
            pid,
            pgid: st.pgrp,
            start_time: st.start_time,
            boot_id: boot_id(),
            slot: None,
            uid: None,
        })
    }
}

/// The uid of a record's slot, if it may be killed wholesale: the account
/// of that uid must still be the recorded slot (a uid whose account was
/// removed and reused belongs to someone else now).
pub fn slot_uid(rec: &GuestRecord) -> Option<u32> {
    let (slot, uid) = (rec.slot.as_deref()?, rec.uid?);
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) if u.name == slot => Some(uid),
        _ => {
            tracing::warn!(guest = %rec.guest_id, uid, slot,
                "recorded slot uid no longer belongs to that slot account; not killed by uid");
            None
        }
    }
}

/// What became of a recorded guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The recorded process still runs.
    Alive,
    /// No such process (or a zombie).
    Gone,
    /// The pid belongs to another process now (or to another boot).
    Recycled,
    /// The record names a pid or group the station must never signal.
    Refused,
}

/// Is the recorded process still the one that was recorded?
pub fn liveness(rec: &GuestRecord) -> Liveness {
    let me = std::process::id() as i32;
    // SAFETY: getpgrp has no preconditions.
    let my_group = unsafe { libc::getpgrp() };
    if rec.pid <= 1 || rec.pgid <= 1 || rec.pid == me || rec.pgid == my_group {
        return Liveness::Refused;
    }
    if !rec.boot_id.is_empty() {
        let now = boot_id();
        if !now.is_empty() && now != rec.boot_id {
            return Liveness::Recycled;
        }
    }
    match proc_stat(rec.pid) {
        None => Liveness::Gone,
        Some(s) if s.start_time == rec.start_time => Liveness::Alive,
        Some(_) => Liveness::Recycled,
    }
}

/// A record file and what it holds (or why it cannot be read).
pub type LoadedRecord = (PathBuf, Result<GuestRecord, RecordError>);

/// The record files of one station.
#[derive(Clone, Debug)]
pub struct GuestRecords {
    dir: PathBuf,
}

impl GuestRecords {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        GuestRecords { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a guest. Guest ids are `<job>-r<run>-<seq>`; anything
    /// else is mapped to a safe name so that no id can leave the directory.
    pub fn path_of(&self, guest_id: &str) -> PathBuf {
        let safe: String = guest_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let safe = safe.trim_start_matches('.');
        self.dir.join(format!("{safe}.json"))
    }

    /// Writes (or replaces) a guest's record atomically and durably.
    pub fn write(&self, rec: &GuestRecord) -> Result<(), RecordError> {
        // Only the records directory is private: a recursive 0700 would
        // also make a missing state directory private, and guests must be
        // able to pass through it to their sandboxes.
        if let Some(parent) = self.dir.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(&self.dir)(e)),
        }
        let path = self.path_of(&rec.guest_id);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let tmp = self.dir.join(format!(".{}.tmp", name.unwrap_or_default()));
        let body = serde_json::to_vec_pretty(rec).map_err(|e| RecordError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io(&tmp))?;
        f.write_all(&body).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        drop(f);
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        std::fs::File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))
    }

    /// Removes a guest's record (none is fine).
    pub fn remove(&self, guest_id: &str) -> Result<(), RecordError> {
        let path = self.path_of(guest_id);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&path)(e)),
        }
    }

    /// Reads one record file.
    pub fn read(path: &Path) -> Result<GuestRecord, RecordError> {
        let text = std::fs::read(path).map_err(io(path))?;
        serde_json::from_slice(&text).map_err(|e| RecordError::Corrupt {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Every record file with what it holds; a missing directory is no
    /// record. Temporaries of an interrupted write are not records.
    pub fn load(&self) -> Result<Vec<LoadedRecord>, RecordError> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&self.dir)(e)),
        };
        let mut out = Vec::new();
        for e in rd {
            let e = e.map_err(io(&self.dir))?;
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            let rec = Self::read(&path);
            out.push((path, rec));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Kills every recorded guest that still runs (its process group and
    /// every descendant of its pid), then clears the records, temporaries
    /// included. A record that cannot be read is reported by name and
    /// removed: it can name no process safely. Returns how many guests
    /// were killed.
    pub fn kill_leftovers(&self) -> usize {
        let records = match self.load() {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the guest records of a previous run");
                return 0;
            }
        };
        let mut killed = 0;
        for (path, rec) in records {
            match rec {
                Err(e) => tracing::warn!(error = %e, "unreadable guest record removed"),
                Ok(rec) => {
                    killed += usize::from(kill_recorded(&rec));
                }
            }
            if let Err(e) = std::fs::remove_file(&path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a guest record");
            }
        }
        self.remove_temporaries();
        killed
    }

    fn remove_temporaries(&self) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with('.') {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Kills what is left of one recorded guest: its process tree if the
/// recorded process still runs, and every process of its slot's uid
/// whether or not it does (the guest's main process may have exited and
/// left an escapee). Whether anything was killed.
fn kill_recorded(rec: &GuestRecord) -> bool {
    let mut killed = false;
    match liveness(rec) {
        Liveness::Alive => {
            let pids = kill_guest(rec.pid, rec.pgid, rec.start_time);
            tracing::warn!(
                guest = %rec.guest_id, job = %rec.job, home = %rec.home, pid = rec.pid, pgid = rec.pgid,
                processes = pids,
                "killed a guest left running by a previous run of this station"
            );
            killed = true;
        }
        Liveness::Gone => {
            tracing::debug!(guest = %rec.guest_id, pid = rec.pid, "recorded guest already gone");
        }
        Liveness::Recycled => tracing::info!(
            guest = %rec.guest_id, pid = rec.pid,
            "recorded guest is gone and its pid now belongs to another process; left alone"
        ),
        Liveness::Refused => {
            tracing::warn!(
                guest = %rec.guest_id, pid = rec.pid, pgid = rec.pgid,
                "guest record names a process the station must not signal; ignored"
            );
            return false;
        }
    }
    // By uid, with or without cgroups: what left the tree (a double fork
    // and `setsid`) still runs as the slot.
    if let Some(uid) = slot_uid(rec) {
        match crate::host::orphans::kill_and_reap(uid, crate::isolation::REAP_TIMEOUT) {
            Ok(r) if !r.found.is_empty() => {
                tracing::warn!(
                    guest = %rec.guest_id, uid, processes = ?r.found, rounds = r.rounds,
                    ms = r.elapsed.as_millis() as u64,
                    "killed by uid what a guest of a previous run left"
                );
                killed = true;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(guest = %rec.guest_id, uid, error = %e,
                "cannot kill a previous run's guest by uid"),
        }
    }
    killed
}

/// Keeps the record of one guest while it runs: [`GuestTracker::spawned`]
/// after each spawn (a job restarted in place after a checkpoint gets a new
/// pid), [`GuestTracker::reaped`] when it ended; dropping it also removes
/// the record. Without a directory it does nothing.
pub struct GuestTracker {
    records: Option<GuestRecords>,
    guest_id: String,
    job: JobId,
    home: String,
    slot: Option<String>,
    uid: Option<u32>,
    written: bool,
}

impl GuestTracker {
    pub fn new(dir: Option<&Path>, guest_id: &str, job: JobId) -> Self {
        GuestTracker {
            records: dir.map(GuestRecords::new),
            guest_id: guest_id.to_string(),
            job,
            home: String::new(),
            slot: None,
            uid: None,
            written: false,
        }
    }

    /// The guest's home station, recorded with its job.
    pub fn with_home(mut self, home: &str) -> Self {
        self.home = home.to_string();
        self
    }

    /// The slot account the guest runs as, recorded with it.
    pub fn with_slot(mut self, slot: Option<String>, uid: Option<u32>) -> Self {
        self.slot = slot;
        self.uid = uid;
        self
    }

    /// Records the guest just spawned as `pid`. A failure is logged: the
    /// guest runs on, only a crash would then leave it unfound.
    pub fn spawned(&mut self, pid: u32) {
        let Some(r) = &self.records else { return };
        let Ok(pid) = i32::try_from(pid) else { return };
        let res = GuestRecord::of_process(&self.guest_id, self.job, pid).and_then(|mut rec| {
            rec.slot = self.slot.clone();
            rec.uid = self.uid;
            rec.home = self.home.clone();
            r.write(&rec)
        });
        match res {
            Ok(()) => self.written = true,
            // Already gone (exited at once): nothing to find after a crash.
            Err(RecordError::NoProcess { .. }) => {}
            Err(e) => tracing::warn!(guest = %self.guest_id, error = %e, "cannot record the guest"),
        }
    }

    /// The guest ended and was reaped: forget it.
    pub fn reaped(&mut self) {
        if !std::mem::take(&mut self.written) {
            return;
        }
        if let Some(r) = &self.records
            && let Err(e) = r.remove(&self.guest_id)
        {
            tracing::warn!(guest = %self.guest_id, error = %e, "cannot remove the guest record");
        }
    }
}

impl Drop for GuestTracker {
    fn drop(&mut self) {
        self.reaped();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::procs::process_table;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};
    use std::time::{Duration, Instant};

    fn job() -> JobId {
        JobId::new(7, 0)
    }

    /// A `sleep` in a process group of its own (as a guest is).
    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn wait_gone(c: &mut Child) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(c.try_wait(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn records_round_trip_and_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let r = GuestRecords::new(dir(d.path()));
        assert!(r.load().unwrap().is_empty(), "no directory: no record");
        let rec = GuestRecord::of_process("7.0-r0-0", job(), std::process::id() as i32).unwrap();
        assert_eq!(rec.job, "7.0");
        assert!(rec.start_time > 0);
        r.write(&rec).unwrap();
        let loaded = r.load().unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].0, r.path_of("7.0-r0-0"));
        assert_eq!(loaded[0].1.as_ref().unwrap(), &rec);
        // Replacing keeps one file and leaves no temporary.
        let mut rec2 = rec.clone();
        rec2.pid += 1;
        r.write(&rec2).unwrap();
        let names: Vec<_> = std::fs::read_dir(r.dir()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
        assert_eq!(r.load().unwrap()[0].1.as_ref().unwrap(), &rec2);
        r.remove("7.0-r0-0").unwrap();
        r.remove("7.0-r0-0").unwrap();
        assert!(r.load().unwrap().is_empty());
    }

    #[test]
    fn ids_never_leave_the_directory() {
        let r = GuestRecords::new("/x/guests");
        assert_eq!(
            r.path_of("../../etc/passwd"),
            Path::new("/x/guests/_.._etc_passwd.json")
        );
        assert_eq!(r.path_of("1.0-r2-3"), Path::new("/x/guests/1.0-r2-3.json"));
    }

    #[test]
    fn a_torn_record_is_a_clear_error_and_is_cleared() {
        let d = tempfile::tempdir().unwrap();
        let r = GuestRecords::new(d.path());
        let rec = GuestRecord::of_process("7.0-r0-0", job(), std::process::id() as i32).unwrap();
        r.write(&rec).unwrap();
        let path = r.path_of("7.0-r0-0");
        let text = std::fs::read(&path).unwrap();
        std::fs::write(&path, &text[..text.len() / 2]).unwrap();
        // A temporary left by a write interrupted by the crash.
        std::fs::write(d.path().join(".7.0-r1-1.json.tmp"), b"{\"gue").unwrap();
        let loaded = r.load().unwrap();
        assert_eq!(loaded.len(), 1, "temporaries are not records");
        let err = loaded[0].1.as_ref().unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("corrupt"), "{err}");
        // Start-up recovery survives it and leaves nothing behind.
        assert_eq!(r.kill_leftovers(), 0);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_recycled_pid_is_never_killed() {
        let d = tempfile::tempdir().unwrap();
        let r = GuestRecords::new(d.path());
        let mut c = sleeper();
        let pid = c.id() as i32;
        let mut rec = GuestRecord::of_process("7.0-r0-0", job(), pid).unwrap();
        assert_eq!(rec.pgid, pid);
        assert_eq!(liveness(&rec), Liveness::Alive);
        // The same pid, another process: another start time.
        rec.start_time += 1;
        assert_eq!(liveness(&rec), Liveness::Recycled);
        r.write(&rec).unwrap();
        assert_eq!(r.kill_leftovers(), 0);
        assert!(
            matches!(c.try_wait(), Ok(None)),
            "the other process must live"
        );
        // Another boot: start times mean nothing.
        rec.start_time -= 1;
        rec.boot_id = "not-this-boot".into();
        assert_eq!(liveness(&rec), Liveness::Recycled);
        let _ = c.kill();
        let _ = c.wait();
        rec.boot_id = String::new();
        assert_eq!(liveness(&rec), Liveness::Gone);
    }

    #[test]
    fn never_the_station_itself() {
        let me = GuestRecord::of_process("x", job(), std::process::id() as i32).unwrap();
        assert_eq!(liveness(&me), Liveness::Refused);
        let mut init = me.clone();
        init.pid = 1;
        init.pgid = 1;
        assert_eq!(liveness(&init), Liveness::Refused);
    }

    #[test]
    fn a_live_guest_and_its_children_are_killed() {
        let d = tempfile::tempdir().unwrap();
        let r = GuestRecords::new(d.path());
        // A shell with a child in its group and one in a session of its own
        // (as a PID-namespace guest's program is).
        let mut c = Command::new("sh")
            .args(["-c", "sleep 60 & setsid sleep 61 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = c.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(10);
        let kids = loop {
            let k: Vec<i32> = process_table()
                .into_iter()
                .filter(|(_, s)| s.ppid == pid)
                .map(|(p, _)| p)
                .collect();
            if k.len() >= 2 || Instant::now() > deadline {
                break k;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(kids.len(), 2, "children did not start");
        let mut t = GuestTracker::new(Some(d.path()), "7.0-r0-0", job());
        t.spawned(c.id());
        std::mem::forget(t); // as a SIGKILL of the station would
        assert_eq!(r.kill_leftovers(), 1);
        assert!(wait_gone(&mut c), "the guest survived");
        let deadline = Instant::now() + Duration::from_secs(10);
        while kids.iter().any(|k| proc_stat(*k).is_some()) {
            assert!(Instant::now() < deadline, "a child of the guest survived");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(r.load().unwrap().is_empty());
    }

    #[test]
    fn the_tracker_removes_its_record() {
        let d = tempfile::tempdir().unwrap();
        let r = GuestRecords::new(d.path());
        let mut c = sleeper();
        {
            let mut t = GuestTracker::new(Some(d.path()), "7.0-r0-0", job());
            t.spawned(c.id());
            assert_eq!(r.load().unwrap().len(), 1);
            t.reaped();
            assert!(r.load().unwrap().is_empty());
            t.spawned(c.id());
            assert_eq!(r.load().unwrap().len(), 1);
        }
        assert!(r.load().unwrap().is_empty(), "drop removes the record");
        let _ = c.kill();
        let _ = c.wait();
        // No directory: nothing kept, nothing fails.
        GuestTracker::new(None, "7.0-r0-1", job()).spawned(std::process::id());
    }
}
