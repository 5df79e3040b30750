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
//! A socket file left by a daemon that died is replaced at start; one that
//! still answers belongs to a running daemon and stops this one from
//! starting. At stop the file is removed, if it is still ours.

use super::DaemonError;
use axum::Router;
use gleaner_edge::PeerCred;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::net::UnixListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Mode of the socket: any local user may connect.
const SOCKET_MODE: u32 = 0o666;
/// Mode of a socket directory the daemon creates.
const DIR_MODE: u32 = 0o755;

/// The bound socket file, removed by [`UserSocket::remove`] if it is still
/// the one this daemon bound.
#[derive(Debug)]
pub struct UserSocket {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl UserSocket {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket file unless another daemon has replaced it.
    pub fn remove(&self) {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino => {
                if let Err(e) = std::fs::remove_file(&self.path) {
                    tracing::warn!(path = %self.path.display(), error = %e, "cannot remove the user socket");
                }
            }
            _ => {}
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
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(DaemonError::Io {
                    what: format!("user socket {shown}"),
                    source: std::io::Error::new(
                        std::io::ErrorKind::AddrInUse,
                        "another daemon is serving on it (set user_socket to another path)",
                    ),
                });
            }
            // Stale: its daemon is gone.
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
    let m = std::fs::symlink_metadata(path).map_err(io(format!("stat {shown}")))?;
    Ok((
        listener,
        UserSocket {
            path: path.to_path_buf(),
            dev: m.dev(),
            ino: m.ino(),
        },
    ))
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
    async fn a_replaced_socket_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u.sock");
        let (l1, first) = bind(&path).unwrap();
        drop(l1);
        // Another daemon replaced the stale file with its own.
        let (_l2, _second) = bind(&path).unwrap();
        first.remove();
        assert!(path.exists(), "the newer daemon's socket stays");
    }
}
