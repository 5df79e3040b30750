//! Leasing slot accounts to guests: one free slot per guest, exclusive
//! while leased, never one that still has processes.
//!
//! Two modes, chosen once at start ([`SlotPool::for_daemon`]):
//!
//! - **Slots** (the daemon is root): each guest runs as its own slot
//!   account. A lease ends with every process of the slot's uid killed
//!   ([`SlotLease::release`], `reap.rs`), and a slot whose uid still owns
//!   a live process (an escapee the kill missed, a process someone started
//!   by hand) is skipped until it has none.
//! - **Personal** (the daemon is not root): a single-user personal pool.
//!   Guests run as the daemon's own user, as nothing else is possible
//!   without privileges; leases always succeed, carry no identity
//!   ([`SlotLease::user`] is `None`, the launcher's "keep the daemon's
//!   identity") and never kill by uid, since that uid is the daemon's.
//!   Guests are then protected from one another only as much as processes
//!   of one user are: run such a station only for one's own jobs.
//!
//! Several stations on one machine may name the same accounts (`glean up`
//! as root, or test pools that share slot uids as CRIU needs): a lease also
//! holds an exclusive `flock` on `/run/gleaner-slots/<account>.lock`, so a
//! slot is never leased by two stations at once, and a station's start-up
//! reap skips slots another live station holds. The kernel drops the lock
//! when its station dies, however it dies.

use super::reap::{REAP_TIMEOUT, ReapReport, kill_uid, processes_of_uid};
use super::{GuestUser, IsolationError, Scrubber, Slot, SlotAccounts, SlotConfig};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The per-slot lock files (see the module comment).
const LOCK_DIR: &str = "/run/gleaner-slots";

/// The machine-wide lock of one slot account.
enum SlotLock {
    /// Held by us until dropped (the lock lives with the descriptor).
    Held(#[allow(dead_code)] File),
    /// No lock could be made (no lock directory): go on without.
    Unavailable,
}

/// How long a slot that its last release proved empty is leased again
/// without a scan of `/proc` (see [`SlotPool::lease`]).
const PROVEN_FOR: Duration = Duration::from_secs(30);

impl SlotLock {
    /// The lock file's marker: who last leased or released the slot.
    fn marker(&self) -> Option<String> {
        use std::io::{Read, Seek};
        let SlotLock::Held(f) = self else { return None };
        let mut f = f;
        let mut s = String::new();
        f.rewind().ok()?;
        f.take(128).read_to_string(&mut s).ok()?;
        Some(s)
    }

    /// Writes `marker` into the lock file (best effort: a failure only
    /// costs the next lease a scan).
    fn set_marker(&self, marker: &str) {
        use std::io::{Seek, Write};
        let SlotLock::Held(f) = self else { return };
        let mut f = f;
        let ok =
            f.rewind().is_ok() && f.set_len(0).is_ok() && f.write_all(marker.as_bytes()).is_ok();
        if !ok {
            tracing::debug!("cannot write the slot lock's marker");
        }
    }
}

/// Unique per lease and release of this process.
fn new_marker(what: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{} {} {what}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Takes `name`'s lock without waiting; `None`: another process holds it.
fn try_lock(name: &str) -> Option<SlotLock> {
    let dir = Path::new(LOCK_DIR);
    let opened = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(dir.join(format!("{name}.lock")))
        });
    let f = match opened {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(slot = name, error = %e,
                "no slot lock file: another station on this machine could lease this slot too");
            return Some(SlotLock::Unavailable);
        }
    };
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        Some(SlotLock::Held(f))
    } else {
        None
    }
}

#[derive(Debug)]
struct Inner {
    /// Empty in personal mode.
    slots: Vec<Slot>,
    personal: bool,
    /// The job holding each slot (same order as `slots`), with the slot's
    /// machine-wide lock.
    leased: Mutex<Vec<Option<(String, SlotLock)>>>,
    /// Per slot: the marker its last release wrote into the lock file
    /// after proving the uid had no process left, and when.
    proven: Mutex<Vec<Option<(String, std::time::Instant)>>>,
    /// Removes what a released slot's uid left anywhere writable
    /// (`scrub.rs`), before the slot is free again.
    scrubber: std::sync::OnceLock<Scrubber>,
    /// Per slot: released without its scrub (a process of its uid
    /// survived the kill); scrubbed when next leased.
    dirty: Mutex<Vec<bool>>,
}

impl std::fmt::Debug for SlotLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SlotLock::Held(_) => "held",
            SlotLock::Unavailable => "unavailable",
        })
    }
}

impl Inner {
    fn proven(&self) -> MutexGuard<'_, Vec<Option<(String, std::time::Instant)>>> {
        self.proven.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn dirty(&self) -> MutexGuard<'_, Vec<bool>> {
        self.dirty.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn leased(&self) -> MutexGuard<'_, Vec<Option<(String, SlotLock)>>> {
        // A panic while holding the lock leaves the table consistent (each
        // change is one assignment): keep using it.
        self.leased.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The station's slots and who holds them. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct SlotPool {
    inner: Arc<Inner>,
}

impl SlotPool {
    /// A pool over checked accounts.
    pub fn new(accounts: SlotAccounts) -> Self {
        let slots = accounts.slots().to_vec();
        let leased = Mutex::new(slots.iter().map(|_| None).collect());
        let proven = Mutex::new(slots.iter().map(|_| None).collect());
        let dirty = Mutex::new(vec![false; slots.len()]);
        SlotPool {
            inner: Arc::new(Inner {
                slots,
                personal: false,
                leased,
                dirty,
                proven,
                scrubber: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The single-user personal pool of an unprivileged daemon (see the
    /// module comment).
    pub fn personal() -> Self {
        SlotPool {
            inner: Arc::new(Inner {
                slots: Vec::new(),
                personal: true,
                leased: Mutex::new(Vec::new()),
                proven: Mutex::new(Vec::new()),
                scrubber: std::sync::OnceLock::new(),
                dirty: Mutex::new(Vec::new()),
            }),
        }
    }

    /// As root: the slot accounts of `cfg` (created if allowed, checked);
    /// otherwise the personal pool, said once in the log.
    pub fn for_daemon(cfg: &SlotConfig) -> Result<Self, IsolationError> {
        if nix::unistd::geteuid().is_root() {
            let accounts = SlotAccounts::ensure(cfg)?;
            tracing::info!(
                slots = accounts.slots().len(),
                prefix = %cfg.prefix,
                "guests run as slot accounts, one per guest"
            );
            Ok(SlotPool::new(accounts))
        } else {
            tracing::warn!(
                uid = nix::unistd::geteuid().as_raw(),
                "not root: personal pool, guests run as the daemon's own user \
                 (no slot accounts, no kill by uid, no isolation between guests)"
            );
            Ok(SlotPool::personal())
        }
    }

    /// From now on every release scrubs the slot's uid (`scrub.rs`)
    /// before the slot is free; the first scrubber set stays.
    pub fn set_scrubber(&self, s: Scrubber) {
        let _ = self.inner.scrubber.set(s);
    }

    pub fn is_personal(&self) -> bool {
        self.inner.personal
    }

    pub fn slots(&self) -> &[Slot] {
        &self.inner.slots
    }

    /// (slot name, job) of every current lease.
    pub fn leases(&self) -> Vec<(String, String)> {
        let leased = self.inner.leased();
        self.inner
            .slots
            .iter()
            .zip(leased.iter())
            .filter_map(|(s, j)| Some((s.name.clone(), j.as_ref()?.0.clone())))
            .collect()
    }

    /// Lease the first free slot for `job`: not leased, and no live
    /// process of its uid. In personal mode, always a lease without
    /// identity.
    pub fn lease(&self, job: &str) -> Result<SlotLease, IsolationError> {
        self.lease_where(job, |_| true)
    }

    /// Lease the slot whose uid is `uid`, if it is free: a CRIU job must be
    /// restored as the uid it was dumped as (see `SlotConfig::first_uid`).
    /// In personal mode, a lease without identity whatever `uid` is (the
    /// daemon's own uid is the only one there).
    pub fn lease_uid(&self, job: &str, uid: u32) -> Result<SlotLease, IsolationError> {
        self.lease_where(job, |s| s.user.uid == uid)
    }

    fn lease_where(
        &self,
        job: &str,
        wanted: impl Fn(&Slot) -> bool,
    ) -> Result<SlotLease, IsolationError> {
        if self.inner.personal {
            return Ok(SlotLease {
                pool: self.clone(),
                index: None,
                job: job.to_string(),
            });
        }
        let mut leased = self.inner.leased();
        let mut busy = 0;
        for (i, s) in self.inner.slots.iter().enumerate() {
            if leased[i].is_some() || !wanted(s) {
                continue;
            }
            let Some(lock) = try_lock(&s.name) else {
                tracing::debug!(slot = %s.name, "slot held by another station on this machine");
                busy += 1;
                continue;
            };
            // The uid must have no process. Its last release here proved
            // that, and if the lock file still holds the marker it wrote
            // then, no other station has leased the slot since (each
            // lessee writes its own): no scan of /proc is needed.
            let proven = self.inner.proven()[i].take();
            let still = proven.is_some_and(|(m, at)| {
                at.elapsed() < PROVEN_FOR && lock.marker().is_some_and(|now| now == m)
            });
            if !still {
                let procs = processes_of_uid(s.user.uid);
                if !procs.is_empty() {
                    tracing::warn!(slot = %s.name, uid = s.user.uid, pids = ?procs,
                        "slot not leased: processes of its uid still run");
                    busy += 1;
                    continue;
                }
            }
            // Released while a process of it lived: scrubbed now that
            // none does, before anyone has it.
            let dirty = self.inner.dirty().get_mut(i).is_some_and(std::mem::take);
            if dirty && let Some(sc) = self.inner.scrubber.get() {
                sc.scrub(s.user.uid);
            }
            lock.set_marker(&new_marker("leased"));
            leased[i] = Some((job.to_string(), lock));
            tracing::debug!(slot = %s.name, job, "slot leased");
            return Ok(SlotLease {
                pool: self.clone(),
                index: Some(i),
                job: job.to_string(),
            });
        }
        Err(IsolationError::NoFreeSlot {
            job: job.to_string(),
            total: self.inner.slots.iter().filter(|s| wanted(s)).count(),
            leased: (self.inner.slots.iter().zip(leased.iter()))
                .filter(|(s, j)| j.is_some() && wanted(s))
                .count(),
            busy,
        })
    }

    /// Kill every process of every slot not currently leased (by this
    /// station or, through the slot locks, by another on this machine): at
    /// station start, the leftovers of a run that crashed (there are no
    /// leases then). One result per slot that had processes.
    pub fn reap_unleased(
        &self,
        timeout: Duration,
    ) -> Vec<(String, Result<ReapReport, IsolationError>)> {
        let free: Vec<Slot> = {
            let leased = self.inner.leased();
            self.inner
                .slots
                .iter()
                .zip(leased.iter())
                .filter(|(_, j)| j.is_none())
                .map(|(s, _)| s.clone())
                .collect()
        };
        let mut out = Vec::new();
        for s in free {
            if processes_of_uid(s.user.uid).is_empty() {
                continue;
            }
            // Held until the kill is over.
            let Some(_lock) = try_lock(&s.name) else {
                tracing::info!(slot = %s.name, "slot in use by another station on this machine");
                continue;
            };
            let r = kill_uid(s.user.uid, timeout);
            match &r {
                Ok(rep) => tracing::warn!(slot = %s.name, killed = rep.found.len(),
                    "killed processes a previous run left in its slot"),
                Err(e) => tracing::error!(slot = %s.name, error = %e, "cannot clear slot"),
            }
            out.push((s.name, r));
        }
        out
    }

    /// Frees slot `index`; `proven_empty`: a scan after the guest's end
    /// found no process of its uid (the next lease may skip its own).
    /// What the uid left anywhere writable goes first (blocking), while
    /// the slot is still held: no guest is leased it before.
    fn free(&self, index: usize, proven_empty: bool) {
        if let (Some(s), Some(slot)) = (self.inner.scrubber.get(), self.inner.slots.get(index)) {
            if proven_empty {
                s.scrub(slot.user.uid);
            } else if let Some(d) = self.inner.dirty().get_mut(index) {
                *d = true;
            }
        }
        let mut leased = self.inner.leased();
        if let Some(j) = leased.get_mut(index) {
            let proof = match (proven_empty, j.as_ref()) {
                (true, Some((_, lock))) => {
                    let m = new_marker("empty");
                    lock.set_marker(&m);
                    Some((m, std::time::Instant::now()))
                }
                _ => None,
            };
            if let Some(p) = self.inner.proven().get_mut(index) {
                *p = proof;
            }
            *j = None;
        }
    }
}

/// One guest's hold on a slot. Release it with [`SlotLease::release`] once
/// the guest has ended; dropping it without does the same, best effort
/// (and blocks while killing).
#[derive(Debug)]
pub struct SlotLease {
    pool: SlotPool,
    /// `None` in personal mode, or once released.
    index: Option<usize>,
    job: String,
}

impl SlotLease {
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The slot, `None` in personal mode.
    pub fn slot(&self) -> Option<&Slot> {
        self.pool.inner.slots.get(self.index?)
    }

    /// Who the guest runs as ([`super::GuestSpec::user`]); `None` in
    /// personal mode (the daemon's own identity).
    pub fn user(&self) -> Option<GuestUser> {
        self.slot().map(|s| s.user)
    }

    /// Live processes of the slot's uid (none known in personal mode).
    pub fn processes(&self) -> Vec<i32> {
        self.user()
            .map(|u| processes_of_uid(u.uid))
            .unwrap_or_default()
    }

    /// Kill every process of the slot's uid (`glean rm`, a vacate, the
    /// end of the guest); the lease stays held. A no-op in personal mode.
    pub fn kill_all(&self, timeout: Duration) -> Result<ReapReport, IsolationError> {
        match self.user() {
            Some(u) => kill_uid(u.uid, timeout),
            None => Ok(ReapReport {
                uid: nix::unistd::geteuid().as_raw(),
                found: Vec::new(),
                rounds: 0,
                elapsed: Duration::ZERO,
            }),
        }
    }

    /// Kill every process of the slot and give the slot back. The slot is
    /// freed even when the kill fails; [`SlotPool::lease`] then skips it
    /// as long as anything of its uid lives.
    pub fn release(self, timeout: Duration) -> Result<ReapReport, IsolationError> {
        let r = self.kill_all(timeout);
        self.free_killed(r.is_ok());
        r
    }

    /// Gives the slot back once the caller killed every process of its uid
    /// (`proven_empty`: and a scan found none left).
    pub fn free_killed(mut self, proven_empty: bool) {
        if let Some(i) = self.index.take() {
            self.pool.free(i, proven_empty);
            tracing::debug!(job = %self.job, "slot released");
        }
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        let Some(i) = self.index else { return };
        let ok = match self.kill_all(REAP_TIMEOUT) {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(job = %self.job, error = %e, "slot lease dropped: kill by uid failed");
                false
            }
        };
        self.pool.free(i, ok);
    }
}
