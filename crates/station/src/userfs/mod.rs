//! Acting on a user's files as that user.
//!
//! The home station runs as root, but everything it does with a job's
//! files — reading the executable and inputs, writing stdout, stderr and
//! output files, appending to the user log — must be done with the job
//! owner's rights, never root's (issue 12, "privilege separation on the
//! home side"; HTCondor's schedd and shadow likewise switch to the user's
//! uid for file work). [`UserFs`] is that mechanism and
//! [`validate::validate_job`] applies it at submit time.
//!
//! # Mechanism: one short-lived thread per operation
//!
//! Linux credentials belong to threads. Each operation runs on a fresh OS
//! thread that (1) sets its own supplementary groups, fsgid and fsuid to
//! the user's with raw system calls (glibc's wrappers would change every
//! thread of the daemon), (2) drops all its capabilities, (3) reads all of
//! that back and gives up if anything differs, (4) resolves and opens the
//! path safely ([`AsUser`]), (5) checks its credentials again, and (6)
//! hands the open [`File`] back and exits. Its credentials die with it, so
//! they can never leak into a daemon thread, even if the work panics. The
//! returned descriptor keeps the access the user was granted, as with any
//! file a process opens and passes on.
//!
//! Only fsuid/fsgid change: the thread's real, effective and saved uids
//! stay root, so the user cannot signal or ptrace it (as they could a
//! thread whose uids were all theirs). A per-user helper process was the
//! alternative; it needs a protocol and a process to supervise per user,
//! and buys nothing here, since each operation's credentials already live
//! and die in their own thread.
//!
//! When the daemon is not root it switches nothing and serves only the
//! account it runs as ([`UserFsError::NotServed`] for anyone else). Root
//! itself is never served ([`UserFsError::Root`]): jobs never run as root.
//!
//! # Limits
//!
//! - Nothing else in the daemon may call glibc's `setuid`/`setgroups`
//!   family while it runs (glibc would broadcast the change to our threads
//!   too); the check after the work catches such a change, but not one
//!   that happens and is undone during it.
//! - Changing a thread's fsuid marks the whole process non-dumpable (the
//!   kernel's rule for any credential change): no core dumps of the daemon.
//! - An operation on a hung file system (NFS, FUSE) blocks its thread;
//!   async callers are not blocked (see below), sync callers are.
//! - Without `faccessat2` (Linux < 5.8) the submit-time write checks read
//!   mode bits and ignore ACLs; the real opens are always the kernel's.
//! - Resource limits (file size, open files) are the daemon's, not the
//!   user's.
//! - `/proc/self` in a user's path names the daemon; the user gets only
//!   what they could read of the daemon's `/proc` entries anyway (its
//!   magic links are walked as text, by the same rules).
//!
//! # Calling from async code
//!
//! The plain methods block the caller until the operation's thread is done
//! (tens of microseconds normally). The `*_async` methods and
//! [`UserFs::run_async`] wait for the thread without blocking the runtime;
//! they need no `spawn_blocking`.

mod account;
mod creds;
mod error;
mod stage;
mod sys;
pub mod validate;
mod walk;

pub use account::{AccountError, UnixUser};
pub use error::{Op, PathError, PathErrorKind, UserFsError};
pub use stage::{Staged, new_tag};
pub use validate::{PathProblem, validate_job};
pub use walk::{AsUser, MAX_HOPS};

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Acts on one user's files with that user's rights. Cheap to clone.
#[derive(Clone, Debug)]
pub struct UserFs {
    user: Arc<UnixUser>,
    /// Whether each operation switches credentials (the daemon is root).
    switch: bool,
}

impl UserFs {
    /// Serves `user`: any non-root account when the daemon runs as root,
    /// only the daemon's own account otherwise.
    pub fn new(user: UnixUser) -> Result<UserFs, UserFsError> {
        let daemon_uid = nix::unistd::geteuid().as_raw();
        if user.uid == 0 {
            return Err(UserFsError::Root { user: user.name });
        }
        if daemon_uid != 0 && daemon_uid != user.uid {
            return Err(UserFsError::NotServed {
                user: user.name,
                uid: user.uid,
                daemon_uid,
            });
        }
        Ok(UserFs {
            user: Arc::new(user),
            switch: daemon_uid == 0,
        })
    }

    /// Serves the account called `name` (the job's owner): looks it up,
    /// then as [`Self::new`].
    pub fn for_user(name: &str) -> Result<UserFs, UserFsError> {
        Self::new(UnixUser::lookup(name)?)
    }

    /// The user served.
    pub fn user(&self) -> &UnixUser {
        &self.user
    }

    /// Runs `work` on a fresh thread acting as the user and returns its
    /// result (blocking). Inside, use only [`AsUser`]'s operations on
    /// users' paths: they are what refuses foreign symlinks and FIFOs.
    pub fn run<T, F>(&self, work: F) -> Result<T, UserFsError>
    where
        T: Send + 'static,
        F: FnOnce(&AsUser<'_>) -> Result<T, UserFsError> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.spawn(work, move |r| {
            let _ = tx.send(r);
        })?;
        rx.recv().map_err(|_| self.lost())?
    }

    /// [`Self::run`] without blocking the async runtime.
    pub async fn run_async<T, F>(&self, work: F) -> Result<T, UserFsError>
    where
        T: Send + 'static,
        F: FnOnce(&AsUser<'_>) -> Result<T, UserFsError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.spawn(work, move |r| {
            let _ = tx.send(r);
        })?;
        rx.await.map_err(|_| self.lost())?
    }

    fn lost(&self) -> UserFsError {
        UserFsError::Lost {
            user: self.user.name.clone(),
        }
    }

    /// Starts the operation's thread; `deliver` receives the outcome. A
    /// thread that panics drops `deliver` unsent.
    fn spawn<T, F, D>(&self, work: F, deliver: D) -> Result<(), UserFsError>
    where
        T: Send + 'static,
        F: FnOnce(&AsUser<'_>) -> Result<T, UserFsError> + Send + 'static,
        D: FnOnce(Result<T, UserFsError>) + Send + 'static,
    {
        let user = Arc::clone(&self.user);
        let switch = self.switch;
        std::thread::Builder::new()
            .name("userfs".into())
            .spawn(move || deliver(act_as(&user, switch, work)))
            .map(drop)
            .map_err(|source| UserFsError::Thread {
                user: self.user.name.clone(),
                source,
            })
    }

    /// Opens an existing regular file for reading.
    pub fn open_read(&self, path: impl AsRef<Path>) -> Result<File, UserFsError> {
        let path = path.as_ref().to_path_buf();
        self.run(move |u| u.open_read(&path))
    }

    /// Opens (emptying it) or creates a regular file for writing; a new
    /// file is owned by the user with `mode` less umask 022.
    pub fn create_truncate(&self, path: impl AsRef<Path>, mode: u32) -> Result<File, UserFsError> {
        let path = path.as_ref().to_path_buf();
        self.run(move |u| u.create_truncate(&path, mode))
    }

    /// Opens or creates a regular file for appending.
    pub fn open_append_create(
        &self,
        path: impl AsRef<Path>,
        mode: u32,
    ) -> Result<File, UserFsError> {
        let path = path.as_ref().to_path_buf();
        self.run(move |u| u.open_append_create(&path, mode))
    }

    /// `Ok` if `path` is a regular file the user can read.
    pub fn check_readable(&self, path: impl AsRef<Path>) -> Result<(), UserFsError> {
        let path = path.as_ref().to_path_buf();
        self.run(move |u| u.check_readable(&path))
    }

    /// `Ok` if the user can write the regular file `path`, or create it.
    /// Changes nothing.
    pub fn check_writable(&self, path: impl AsRef<Path>) -> Result<(), UserFsError> {
        let path = path.as_ref().to_path_buf();
        self.run(move |u| u.check_writable(&path))
    }

    /// `Ok` if `path` is a directory the user may enter.
    pub fn check_dir(&self, path: impl AsRef<Path>) -> Result<(), UserFsError> {
        let path = path.as_ref().to_path_buf();
        self.run(move |u| u.check_dir(&path))
    }

    /// Whether `path` is a directory (`false` if it does not exist).
    pub fn is_dir(&self, path: impl AsRef<Path>) -> Result<bool, UserFsError> {
        let path = path.as_ref().to_path_buf();
        self.run(move |u| u.is_dir(&path))
    }

    /// [`Self::open_read`] without blocking the async runtime.
    pub async fn open_read_async(&self, path: PathBuf) -> Result<File, UserFsError> {
        self.run_async(move |u| u.open_read(&path)).await
    }

    /// [`Self::create_truncate`] without blocking the async runtime.
    pub async fn create_truncate_async(
        &self,
        path: PathBuf,
        mode: u32,
    ) -> Result<File, UserFsError> {
        self.run_async(move |u| u.create_truncate(&path, mode))
            .await
    }

    /// [`Self::open_append_create`] without blocking the async runtime.
    pub async fn open_append_create_async(
        &self,
        path: PathBuf,
        mode: u32,
    ) -> Result<File, UserFsError> {
        self.run_async(move |u| u.open_append_create(&path, mode))
            .await
    }
}

/// The body of an operation's thread: become the user, work, check the
/// credentials held throughout. On a failed check the work's result (and
/// any file it opened) is dropped.
fn act_as<T>(
    user: &UnixUser,
    switch: bool,
    work: impl FnOnce(&AsUser<'_>) -> Result<T, UserFsError>,
) -> Result<T, UserFsError> {
    let refused = |detail: String| UserFsError::Credentials {
        user: user.name.clone(),
        detail,
    };
    if switch {
        creds::assume(user).map_err(refused)?;
    }
    let out = work(&AsUser::new(user));
    if switch {
        creds::check(user).map_err(|d| refused(format!("changed during the operation: {d}")))?;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_never_served() {
        let root = UnixUser::lookup("root").expect("root");
        let e = UserFs::new(root).unwrap_err();
        assert!(matches!(e, UserFsError::Root { .. }), "{e}");
        assert!(matches!(
            UserFs::for_user("root"),
            Err(UserFsError::Root { .. })
        ));
    }

    #[test]
    fn unknown_owners_are_named() {
        let e = UserFs::for_user("bob-has-no-account").unwrap_err();
        assert_eq!(
            e.to_string(),
            "no Unix account \"bob-has-no-account\" on this station"
        );
    }

    #[test]
    fn an_unprivileged_daemon_serves_only_itself() {
        let me = nix::unistd::geteuid().as_raw();
        if me == 0 {
            // As root every account but root is served; the rule for
            // unprivileged daemons is the branch below.
            return;
        }
        let other = UnixUser {
            name: "someone".into(),
            uid: me + 1,
            gid: me + 1,
            groups: vec![me + 1],
            home: "/nonexistent".into(),
        };
        let e = UserFs::new(other).unwrap_err();
        assert!(e.to_string().contains("acts only for that account"), "{e}");
        let fs = UserFs::new(UnixUser::current().expect("me")).expect("own account");
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("x");
        fs.create_truncate(&f, 0o666).expect("create");
        assert!(fs.open_read(&f).is_ok());
    }
}

#[cfg(test)]
mod walk_tests;
