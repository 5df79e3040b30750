//! How the queue's commits reach the disk: group commit.
//!
//! The queue runs SQLite's WAL with `synchronous=NORMAL`: a commit appends
//! its pages to the `-wal` file with `write(2)` before `COMMIT` returns,
//! without an `fsync`. The bytes are then in the kernel's page cache, which
//! belongs to no process: a daemon killed at any instant (SIGKILL, a panic,
//! the OOM killer) loses no commit that returned. Only the machine losing
//! power could lose them.
//!
//! Against power loss, two rules:
//!
//! - What a user was told is done (a submission, `rm`, `hold`,
//!   `release`) commits with `synchronous=FULL` ([`JobQueue::durably`]):
//!   the WAL is synced before the answer, and with it every commit before.
//! - Every other change (placements, starts, completions reported by hosts:
//!   a burst of them when many short jobs end together) is made durable by
//!   one `fsync` of the WAL per [`GROUP_WINDOW`], from a thread of its own
//!   ([`GroupSync`]), never under the queue's lock. After a power loss at
//!   most that window of such changes is gone, and the home recovers as
//!   after a crash of its own: a job it still thinks placed gets a fresh
//!   lease and is requeued if its host no longer runs it (so a job whose
//!   completion was lost runs again; its outputs are delivered again).
//!
//! SQLite syncs the WAL itself before each checkpoint, and the database
//! file after it, so the WAL never runs ahead of a synced database.

use super::{JobQueue, Result};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Changes made by hosts' reports are on disk within this long, with one
/// `fsync` for all of them.
pub const GROUP_WINDOW: Duration = Duration::from_millis(50);

#[derive(Default)]
struct Flags {
    /// Commits since the last sync.
    dirty: bool,
    /// The queue is closed: the thread ends.
    closed: bool,
}

/// The group-commit thread's side of one queue: woken after each commit,
/// it waits [`GROUP_WINDOW`] for more, then syncs the WAL once.
pub(super) struct GroupSync {
    flags: Mutex<Flags>,
    wake: Condvar,
    wal: PathBuf,
}

impl GroupSync {
    /// Starts the thread for the queue file `db`; `None` if no thread can
    /// be started (the queue then syncs every commit, see
    /// [`JobQueue::open`]).
    pub(super) fn start(db: &Path) -> Option<Arc<Self>> {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let me = Arc::new(GroupSync {
            flags: Mutex::new(Flags::default()),
            wake: Condvar::new(),
            wal: PathBuf::from(wal),
        });
        let thread = me.clone();
        match std::thread::Builder::new()
            .name("queue-sync".into())
            .spawn(move || thread.run())
        {
            Ok(_) => Some(me),
            Err(e) => {
                tracing::warn!(error = %e, "no group-commit thread: every commit syncs");
                None
            }
        }
    }

    fn flags(&self) -> std::sync::MutexGuard<'_, Flags> {
        self.flags
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A commit happened: sync within the window.
    pub(super) fn dirty(&self) {
        let mut f = self.flags();
        if !f.dirty {
            f.dirty = true;
            self.wake.notify_one();
        }
    }

    /// The queue is gone: sync what is left, then end.
    pub(super) fn close(&self) {
        self.flags().closed = true;
        self.wake.notify_one();
    }

    fn run(&self) {
        loop {
            {
                let mut f = self.flags();
                while !f.dirty && !f.closed {
                    f = self
                        .wake
                        .wait(f)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                if f.closed && !f.dirty {
                    return;
                }
            }
            // Let the burst gather: everything committed until the sync
            // starts rides on it.
            std::thread::sleep(GROUP_WINDOW);
            self.flags().dirty = false;
            self.sync();
        }
    }

    /// `fsync` of the WAL's inode: it covers every byte any connection
    /// wrote to it. A WAL that does not exist (checkpointed and removed)
    /// has nothing to sync.
    fn sync(&self) {
        match std::fs::File::open(&self.wal) {
            Ok(f) => {
                if let Err(e) = f.sync_data() {
                    tracing::error!(path = %self.wal.display(), error = %e, "cannot sync the queue's WAL");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::error!(path = %self.wal.display(), error = %e, "cannot open the queue's WAL to sync it")
            }
        }
    }
}

impl JobQueue {
    /// Runs `f` with every commit it makes synced to disk before it
    /// returns (`synchronous=FULL`): for what a user is told is done.
    pub fn durably<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.group.is_none() {
            // Every commit syncs already.
            return f(self);
        }
        self.conn.pragma_update(None, "synchronous", "FULL")?;
        let r = f(self);
        let back = self.conn.pragma_update(None, "synchronous", "NORMAL");
        let r = r?;
        back?;
        Ok(r)
    }

    /// Syncs every commit made so far to disk now (after a commit made
    /// outside [`JobQueue::durably`] that a user is told is done).
    pub(crate) fn sync_now(&self) {
        if let Some(g) = &self.group {
            g.sync();
        }
    }

    /// Called after each commit of a change: the group-commit thread syncs
    /// it within [`GROUP_WINDOW`].
    pub(crate) fn committed(&self) {
        if let Some(g) = &self.group {
            g.dirty();
        }
    }
}
