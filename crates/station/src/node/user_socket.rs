//! The user API on a local Unix socket (issue 12, "users are Unix users").
//!
//! Local users reach their station without a token: the kernel tells the
//! daemon who connected (`SO_PEERCRED`, see [`gleaner_edge::peer`]), as
//! HTCondor's FS method and munge do. The socket is world-writable (0666)
//! in a directory everyone may search (0755 when the daemon makes it), so
//! that every local user can connect; who they are decides what they may
//! do. Only the user API is served there: no shadow, checkpoint, lease or
//! starter endpoint.
//!
//! The daemon holds an exclusive `flock` on `<socket>.lock` for as long as
//! it serves: a second daemon pointed at the same path refuses to start,
//! and a socket file left by a daemon that died (its lock released by the
//! kernel) is replaced. At stop the file is removed; the lock says it is
//! still ours (an inode number cannot: a replacement may reuse it).

use super::DaemonError;
use axum::Router;
use gleaner_edge::PeerCred;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::net::UnixListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Mode of the socket: any local user may connect.
const SOCKET_MODE: u32 = 0o666;
/// Mode of a socket directory the daemon creates.
const DIR_MODE: u32 = 0o755;

/// The bound socket file and the lock that makes it this daemon's, removed
/// by [`UserSocket::remove`].
#[derive(Debug)]
pub struct UserSocket {
    path: PathBuf,
    /// Holds `flock(LOCK_EX)` on `<path>.lock` until dropped.
    _lock: std::fs::File,
}

impl UserSocket {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket file (ours while we hold the lock). The lock file
    /// stays: removing it would let two daemons lock two different files.
    pub fn remove(&self) {
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot remove the user socket");
            }
        }
    }
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> DaemonError {
    move |source| DaemonError::Io { what, source }
}

/// Binds the user socket at `path` (see the module docs).
pub fn bind(path: &Path) -> Result<(UnixListener, UserSocket), DaemonError> {
    let shown = path.display().to_string();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .map_err(io(format!("user socket directory {}", dir.display())))?;
    }
    let lock = take_lock(path)?;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            // Something that takes no lock (another program) still serves.
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(DaemonError::Io {
                    what: format!("user socket {shown}"),
                    source: std::io::Error::new(
                        std::io::ErrorKind::AddrInUse,
                        "another program is serving on it (set user_socket to another path)",
                    ),
                });
            }
            // Stale: the daemon that bound it is gone (we hold the lock).
            std::fs::remove_file(path).map_err(io(format!("stale user socket {shown}")))?;
            tracing::info!(path = %shown, "replaced a stale user socket");
        }
        Ok(_) => {
            return Err(DaemonError::Io {
                what: format!("user socket {shown}"),
                source: std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "exists and is not a socket",
                ),
            });
        }
        Err(_) => {}
    }
    let listener = UnixListener::bind(path).map_err(io(format!(
        "bind the user socket {shown} (a path of at most 107 bytes)"
    )))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))
        .map_err(io(format!("chmod {shown}")))?;
    Ok((
        listener,
        UserSocket {
            path: path.to_path_buf(),
            _lock: lock,
        },
    ))
}

/// Takes `flock(LOCK_EX | LOCK_NB)` on `<path>.lock` (created 0600), or
/// says that another daemon serves on `path`.
fn take_lock(path: &Path) -> Result<std::fs::File, DaemonError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lock_path)
        .map_err(io(format!("user socket lock {}", lock_path.display())))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(DaemonError::Io {
            what: format!("user socket {}", path.display()),
            source: std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                "another daemon is serving on it (set user_socket to another path)",
            ),
        });
    }
    Ok(f)
}

/// Serves `app` (the user API behind authentication) on `listener` until
/// shutdown; each request's caller is its connection's peer.
pub fn serve(
    listener: UnixListener,
    app: Router,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<PeerCred>(),
    )
    .with_graceful_shutdown(async move {
        let _ = shutdown.wait_for(|s| *s).await;
    });
    tokio::spawn(async move {
        if let Err(e) = server.await {
            tracing::error!(error = %e, "user socket server failed");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stale_sockets_are_replaced_live_ones_and_files_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/u.sock");
        // A daemon that died left its socket file behind.
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let (listener, sock) = bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
        // While it answers, a second daemon may not take it.
        let e = bind(&path).unwrap_err();
        assert!(e.to_string().contains("another daemon"), "{e}");
        drop(listener);
        sock.remove();
        drop(sock);
        assert!(!path.exists());
        // Not a socket: never deleted.
        std::fs::write(&path, "data").unwrap();
        let e = bind(&path).unwrap_err();
        assert!(e.to_string().contains("not a socket"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
        // A directory the daemon makes is 0755.
        let fresh = dir.path().join("new/dir/u.sock");
        let (_l, _s) = bind(&fresh).unwrap();
        let mode = std::fs::metadata(fresh.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o755);
    }

    #[tokio::test]
    async fn a_live_daemons_socket_is_never_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u.sock");
        let (l1, first) = bind(&path).unwrap();
        // Even with its listener gone, the first daemon holds the socket.
        drop(l1);
        let e = bind(&path).unwrap_err().to_string();
        assert!(e.contains("another daemon"), "{e}");
        assert!(path.exists());
        // Once it is gone (lock released), the socket is replaced, and
        // the second daemon's stop removes its own file.
        drop(first);
        let (_l2, second) = bind(&path).unwrap();
        second.remove();
        assert!(!path.exists());
    }
}
