//! The daemon's own state is private (issue 12): the job queue, the spool
//! of users' outputs and checkpoints, and rescue files of last resort are
//! readable by the daemon alone. Applied at every start, so that pools made
//! by earlier versions (0755 directories, 0644 files) are corrected.
//!
//! - the state directory: 0700, or 0711 (others may pass through, not list)
//!   when a root daemon has something below it that others must reach: the
//!   guests' sandboxes (the default `execute_dir`) or the user socket;
//! - `queue.db` and its `-wal`/`-shm`/`-journal`: 0600 (SQLite gives new
//!   companions the database's own mode, so a missing database is first
//!   created empty with 0600);
//! - the spool and `dags/`: directories 0700, files 0600, all the way down
//!   (symlinks are left alone, never followed).

use super::DaemonError;
use crate::config::StationConfig;
use crate::home::private::{DIR_MODE, FILE_MODE};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of a state directory others must pass through.
const PASS_THROUGH: u32 = 0o711;

fn io(what: String) -> impl FnOnce(std::io::Error) -> DaemonError {
    move |source| DaemonError::Io { what, source }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), DaemonError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io(format!("chmod {mode:o} {}", path.display())))
}

/// Creates (if needed) and secures the state directory, the spool and the
/// queue database.
pub fn secure(config: &StationConfig) -> Result<(), DaemonError> {
    let state = &config.state_dir;
    crate::home::private::create_dir(state)
        .map_err(io(format!("state dir {}", state.display())))?;
    // Only a root daemon has others below: an unprivileged one runs its
    // guests as itself and serves only itself.
    let reachable = nix::unistd::geteuid().is_root()
        && (config.execute_dir().starts_with(state)
            || config.user_socket_path().starts_with(state));
    let mode = if reachable { PASS_THROUGH } else { DIR_MODE };
    set_mode(state, mode)?;

    let db = config.queue_path();
    if !db.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&db)
            .map_err(io(format!("create {}", db.display())))?;
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let p = state.join(format!("queue.db{suffix}"));
        if p.exists() {
            set_mode(&p, FILE_MODE)?;
        }
    }

    let spool = config.spool_dir();
    crate::home::private::create_dir(&spool).map_err(io("spool dir".into()))?;
    private_tree(&spool)?;
    let dags = state.join("dags");
    if dags.exists() {
        private_tree(&dags)?;
    }
    Ok(())
}

/// Directories 0700 and regular files 0600 under (and including) `dir`.
fn private_tree(dir: &Path) -> Result<(), DaemonError> {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        set_mode(&d, DIR_MODE)?;
        let entries = std::fs::read_dir(&d).map_err(io(format!("list {}", d.display())))?;
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            let p = e.path();
            if t.is_dir() {
                todo.push(p);
            } else if t.is_file() {
                set_mode(&p, FILE_MODE)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn an_old_pool_is_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let job = state.join("spool/1.0/files");
        std::fs::create_dir_all(&job).unwrap();
        for d in [&state, &state.join("spool"), &job] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(job.join("out"), "x").unwrap();
        std::fs::write(state.join("spool/1.0/stdout"), "x").unwrap();
        std::fs::write(state.join("queue.db"), "").unwrap();
        std::fs::write(state.join("queue.db-wal"), "").unwrap();
        for f in ["queue.db", "queue.db-wal", "spool/1.0/stdout"] {
            std::fs::set_permissions(state.join(f), std::fs::Permissions::from_mode(0o644))
                .unwrap();
        }
        std::os::unix::fs::symlink("/etc/passwd", state.join("spool/1.0/link")).unwrap();
        let config = StationConfig {
            state_dir: state.clone(),
            execute_dir: Some(dir.path().join("execute")),
            user_socket: Some(dir.path().join("user.sock")),
            ..Default::default()
        };
        secure(&config).unwrap();
        assert_eq!(mode(&state), 0o700);
        for f in [
            "queue.db",
            "queue.db-wal",
            "spool/1.0/stdout",
            "spool/1.0/files/out",
        ] {
            assert_eq!(mode(&state.join(f)), 0o600, "{f}");
        }
        for d in ["spool", "spool/1.0", "spool/1.0/files"] {
            assert_eq!(mode(&state.join(d)), 0o700, "{d}");
        }
        assert_eq!(
            mode(Path::new("/etc/passwd")),
            0o644,
            "a symlink is not followed"
        );
        // The default execute dir lies below: a root daemon's guests must
        // pass through (an unprivileged daemon's guests are itself).
        let config = StationConfig {
            state_dir: state.clone(),
            user_socket: Some(dir.path().join("user.sock")),
            ..Default::default()
        };
        secure(&config).unwrap();
        let expected = if nix::unistd::geteuid().is_root() {
            0o711
        } else {
            0o700
        };
        assert_eq!(mode(&state), expected);
    }

    #[test]
    fn a_new_queue_is_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let config = StationConfig {
            state_dir: dir.path().join("s"),
            execute_dir: Some(dir.path().join("execute")),
            user_socket: Some(dir.path().join("user.sock")),
            ..Default::default()
        };
        secure(&config).unwrap();
        let q = crate::queue::JobQueue::open(config.queue_path()).unwrap();
        drop(q);
        assert_eq!(mode(&config.queue_path()), 0o600);
        for f in ["queue.db-wal", "queue.db-shm"] {
            let p = config.state_dir.join(f);
            if p.exists() {
                assert_eq!(mode(&p), 0o600, "{f}");
            }
        }
    }
}
