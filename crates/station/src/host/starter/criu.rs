//! What the starter does around CRIU: a sandbox path that is the same on
//! every station (locked per job), dumps off the runtime, and waiting for
//! a detached restore to hand over the job.

use super::config::{StarterConfig, StarterError, io_err};
use super::control::parent_of;
use crate::checkpoint::Criu;
use gleaner_proto::job::JobId;
use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Takes a CRIU job's sandbox: its images name files by path, so it has
/// one path pool-wide, held under a lock so that a new run of the job on
/// this machine waits for the old one's cleanup. Returns the sandbox and
/// the lock (held until the run's cleanup is done).
pub(crate) async fn claim_sandbox(
    config: &StarterConfig,
    home: &str,
    job: JobId,
) -> Result<(PathBuf, File), StarterError> {
    let dir = config.criu_sandbox_dir.join(criu_sandbox_name(home, job));
    let lock = lock_sandbox(&config.criu_sandbox_dir, &dir).await?;
    // Whatever is there was left by a run that died (its station was
    // killed): this run starts clean.
    if let Err(e) = std::fs::remove_dir_all(&dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %dir.display(), error = %e, "cannot clear a stale CRIU sandbox");
    }
    Ok((dir, lock))
}

/// Directory name of a CRIU job's sandbox: the home and the job id, with
/// anything but `[A-Za-z0-9._-]` replaced.
fn criu_sandbox_name(home: &str, job: JobId) -> String {
    let clean: String = home
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{clean}-{job}")
}

/// Takes the lock of a CRIU sandbox (`<dir>.lock`, flock), waiting up to
/// 30 s for another run of the same job on this machine to finish its
/// cleanup. The parent is created root-owned and must not be writable by
/// anyone else: guests must not be able to plant files or links there.
async fn lock_sandbox(parent: &Path, dir: &Path) -> Result<File, StarterError> {
    check_sandbox_parent(parent)?;
    let lock_path = dir.with_extension("lock");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&lock_path)
        .map_err(|e| io_err(&lock_path, e))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&f),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        } == 0
        {
            return Ok(f);
        }
        if Instant::now() > deadline {
            return Err(io_err(
                &lock_path,
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "another run of this job still holds its sandbox",
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates the CRIU sandboxes' parent if needed and checks that it is the
/// daemon's alone. Mode 0711, as the execute directory: each guest reaches
/// its own sandbox by name, none lists the others.
fn check_sandbox_parent(parent: &Path) -> Result<(), StarterError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .mode(0o711)
        .recursive(true)
        .create(parent)
        .map_err(|e| io_err(parent, e))?;
    let md = std::fs::symlink_metadata(parent).map_err(|e| io_err(parent, e))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !md.is_dir() || md.uid() != me || md.mode() & 0o022 != 0 {
        return Err(io_err(
            parent,
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "must be a directory owned by the daemon and writable only by it",
            ),
        ));
    }
    if md.mode() & 0o7777 != 0o711 {
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o711))
            .map_err(|e| io_err(parent, e))?;
    }
    Ok(())
}

/// Dumps a CRIU job (blocking work off the runtime).
pub(crate) async fn criu_dump(c: &Criu, root: u32) -> Result<(), String> {
    let c = c.clone();
    let t0 = Instant::now();
    let r = tokio::task::spawn_blocking(move || c.dump(root))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string());
    if r.is_ok() {
        tracing::info!(
            pid = root,
            secs = t0.elapsed().as_secs_f64(),
            "CRIU dump taken"
        );
    }
    r
}

/// Waits until a detached CRIU restore started under `waiter` has
/// restored the job; returns the restored root's PID (`None` if it already
/// finished). The pidfile is written by CRIU as the guest user, so a PID
/// is trusted only if the waiter is its parent: the station signals that
/// process group as root.
pub(crate) async fn await_restore(c: &Criu, waiter: u32) -> Result<Option<u32>, String> {
    // CRIU writes the pidfile before the restore is over, and the waiter
    // removes it when CRIU fails: success is the root re-parented to the
    // waiter (CRIU has exited), or the pidfile outliving the waiter.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let root = std::fs::read_to_string(c.pidfile())
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        let waiter_alive = parent_of(waiter).is_some();
        match root {
            Some(r) if parent_of(r) == Some(waiter) => return Ok(Some(r)),
            // Finished already: its exit status reaches the waiter.
            Some(_) if !waiter_alive => return Ok(None),
            None if !waiter_alive => {
                let errs = c.restore_errors();
                return Err(if errs.is_empty() {
                    "criu restore did not finish".into()
                } else {
                    errs
                });
            }
            _ => {}
        }
        if Instant::now() > deadline {
            return Err(match root {
                Some(r) => format!("restored process {r} never came under the restorer {waiter}"),
                None => "criu restore timed out".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
