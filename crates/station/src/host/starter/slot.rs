//! A guest's slot account (issue 12, item 4): leased at placement, held in
//! the guest's entry while it runs, swapped for the dumped uid before a
//! CRIU restore, and given back only once every process of its uid is
//! gone.
//!
//! The lease's own `Drop` kills by uid (blocking), so a guest whose task
//! panics or is cancelled leaves nothing behind; the normal ends
//! ([`SlotHold::release`]) do the same work off the runtime.
//!
//! A guest in its own cgroup and PID namespace whose cgroup is empty after
//! the kill has nothing left of its uid: it cannot leave the cgroup (its
//! `cgroup.procs` files are root's), and whatever it left in the
//! namespace died and was reaped with the namespace's first process. The
//! scan of `/proc` by uid is then skipped, at the kill and at the release
//! (it was a fifth of a trivial job's cost to the station). Without that
//! proof, the kill scans, and a scan that killed everything stands as the
//! proof for the release, until the next start of the program.

use super::control::Control;

use crate::host::orphans::kill_and_reap;
use crate::isolation::{GuestUser, REAP_TIMEOUT, SlotLease};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The slot of one guest (no identity in a personal pool).
#[derive(Debug)]
pub(crate) struct SlotHold {
    lease: Mutex<Option<SlotLease>>,
    /// No process of the slot's uid lives since the program's last start
    /// (see the module's comment).
    empty: AtomicBool,
}

impl SlotHold {
    pub(crate) fn new(lease: SlotLease) -> Self {
        SlotHold {
            lease: Mutex::new(Some(lease)),
            empty: AtomicBool::new(false),
        }
    }

    /// The program is about to start (again): whatever proved the slot
    /// empty no longer holds.
    pub(crate) fn starting(&self) {
        self.empty.store(false, Ordering::SeqCst);
    }

    /// After `ctl`'s kill: every process of the slot's uid killed and
    /// reaped, by the cgroup's proof when it has one, else by uid.
    pub(crate) async fn kill_left(&self, ctl: &Control, job: &str) {
        if ctl.contained_and_empty() {
            // The namespace's first process outlives its waiter when both
            // are killed at once: it then comes to this daemon (the
            // subreaper) and must be reaped here, or it stays a zombie.
            ctl.reap_root();
            self.empty.store(true, Ordering::SeqCst);
            tracing::debug!(job, "guest's cgroup empty: no scan by uid");
            return;
        }
        self.kill_all(job).await;
    }

    fn lock(&self) -> MutexGuard<'_, Option<SlotLease>> {
        // Each change is one assignment: a poisoned lock is consistent.
        self.lease.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Who the guest runs as; `None` in a personal pool (the daemon's own
    /// identity) or once released.
    pub(crate) fn user(&self) -> Option<GuestUser> {
        self.lock().as_ref().and_then(SlotLease::user)
    }

    /// The slot account's name, for the listing and the records.
    pub(crate) fn name(&self) -> Option<String> {
        self.lock()
            .as_ref()
            .and_then(|l| l.slot().map(|s| s.name.clone()))
    }

    /// Kills every process of the slot's uid and reaps their orphans; the
    /// slot stays held (stragglers after an exit or a dump, a vacate).
    /// Off the runtime; failures are logged.
    pub(crate) async fn kill_all(&self, job: &str) {
        let Some(u) = self.user() else { return };
        let job = job.to_string();
        let r = tokio::task::spawn_blocking(move || kill_and_reap(u.uid, REAP_TIMEOUT)).await;
        self.empty.store(matches!(r, Ok(Ok(_))), Ordering::SeqCst);
        log_kill(&job, u.uid, r, "stragglers killed by uid");
    }

    /// Replaces the lease (a CRIU restore needs the uid it was dumped as);
    /// the old one is released off the runtime.
    pub(crate) async fn replace(&self, new: SlotLease, job: &str) {
        self.starting();
        let old = self.lock().replace(new);
        if let Some(old) = old {
            release_lease(old, job).await;
        }
    }

    /// The guest is over: every process of the slot killed (by uid, with
    /// or without cgroups), their orphans reaped, the slot given back.
    pub(crate) async fn release(&self, job: &str) {
        let lease = self.lock().take();
        if let Some(l) = lease {
            if self.empty.load(Ordering::SeqCst) {
                // Off the runtime: the slot is scrubbed before it is free.
                let _ = tokio::task::spawn_blocking(move || l.free_killed(true)).await;
                tracing::debug!(job, "slot released (proven empty)");
                return;
            }
            release_lease(l, job).await;
        }
    }

    /// [`SlotHold::release`] without a runtime at hand (blocking).
    pub(crate) fn release_now(&self) {
        let lease = self.lock().take();
        if let Some(l) = lease {
            if self.empty.load(Ordering::SeqCst) {
                l.free_killed(true);
                return;
            }
            let job = l.job().to_string();
            if let Some((uid, r)) = kill_and_free(l) {
                log_kill(&job, uid, Ok(r), "slot released");
            }
        }
    }
}

impl Drop for SlotHold {
    fn drop(&mut self) {
        self.release_now();
    }
}

async fn release_lease(l: SlotLease, job: &str) {
    let Some(uid) = l.user().map(|u| u.uid) else {
        // Personal pool: nothing to kill by uid.
        drop(l);
        return;
    };
    let r = tokio::task::spawn_blocking(move || kill_and_free(l).map(|(_, r)| r)).await;
    let r = match r {
        Ok(Some(r)) => Ok(r),
        Ok(None) => return,
        Err(e) => Err(e),
    };
    log_kill(job, uid, r, "slot released");
}

/// Kills every process of the lease's uid and reaps them (one scan of
/// /proc when nothing is left), then frees the slot, proven empty if the
/// kill succeeded. Blocking; `None` in a personal pool.
fn kill_and_free(l: SlotLease) -> Option<(u32, KillResult)> {
    let uid = l.user()?.uid;
    let r = kill_and_reap(uid, REAP_TIMEOUT);
    l.free_killed(r.is_ok());
    Some((uid, r))
}

type KillResult = Result<crate::isolation::ReapReport, crate::isolation::IsolationError>;

fn log_kill(job: &str, uid: u32, r: Result<KillResult, tokio::task::JoinError>, what: &str) {
    match r {
        Ok(Ok(rep)) if rep.found.is_empty() => tracing::debug!(job, uid, "{what}: none left"),
        Ok(Ok(rep)) => tracing::info!(
            job,
            uid,
            killed = rep.found.len(),
            rounds = rep.rounds,
            ms = rep.elapsed.as_millis() as u64,
            "{what}"
        ),
        Ok(Err(e)) => tracing::error!(job, uid, error = %e, "{what}: kill by uid failed"),
        Err(e) => tracing::error!(job, uid, error = %e, "{what}: killer task failed"),
    }
}

/// Gives `dir` and the entries at its top to `user`, without following
/// links: the sandbox and images of a CRIU job whose lease was swapped
/// before it ran here (nothing in them is the guest's making yet).
pub(crate) fn reown_top(dir: &Path, user: GuestUser) -> std::io::Result<()> {
    use std::os::unix::fs::lchown;
    lchown(dir, Some(user.uid), Some(user.gid))?;
    for e in std::fs::read_dir(dir)? {
        lchown(e?.path(), Some(user.uid), Some(user.gid))?;
    }
    Ok(())
}
