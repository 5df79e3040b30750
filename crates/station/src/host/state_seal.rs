//! The execute directory's neighbours, sealed from guests.
//!
//! By default the execute directory lies in the station's state directory
//! (`<state_dir>/execute`), beside the home's queue (`queue.db`), its spool
//! and the station's keys. Guests must pass through the state directory to
//! reach their sandboxes, so it cannot be 0700; it is made 0711 (searchable,
//! not listable), and everything else in it loses every permission it gave
//! to others: a guest, which is "other" to all of it, then reaches its own
//! sandbox and nothing beside it, whatever mode a file was created with.
//! Unix sockets are left as they are: a local user API socket there is
//! meant to be reached (its peer credentials identify the caller).

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// What [`seal_execute_parent`] changed: (path, old mode, new mode).
pub type Sealed = Vec<(std::path::PathBuf, u32, u32)>;

/// If `execute_dir`'s parent is `state_dir`, make the state directory 0711
/// and take the others' permissions from every other entry in it (see the
/// module comment). Returns what changed; errors are logged and skipped
/// (the station still starts: the home side sets the same modes).
pub fn seal_execute_parent(state_dir: &Path, execute_dir: &Path) -> Sealed {
    let mut changed = Sealed::new();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let Some(parent) = execute_dir.parent() else {
        return changed;
    };
    if !same(parent, state_dir) {
        return changed;
    }
    let mut set = |p: &Path, mode: u32| match std::fs::symlink_metadata(p) {
        Ok(md) if md.file_type().is_symlink() || md.file_type().is_socket() => {}
        Ok(md) if md.mode() & 0o7777 != mode => {
            match std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)) {
                Ok(()) => changed.push((p.to_path_buf(), md.mode() & 0o7777, mode)),
                Err(e) => tracing::warn!(path = %p.display(), error = %e,
                    "cannot seal a state file from guests"),
            }
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(path = %p.display(), error = %e, "cannot stat a state file"),
    };
    set(state_dir, 0o711);
    let Ok(rd) = std::fs::read_dir(state_dir) else {
        return changed;
    };
    let exec_name = execute_dir.file_name();
    for e in rd.flatten() {
        if Some(e.file_name().as_os_str()) == exec_name {
            continue;
        }
        let p = e.path();
        if let Ok(md) = std::fs::symlink_metadata(&p) {
            set(&p, md.mode() & 0o7770);
        }
    }
    if !changed.is_empty() {
        tracing::info!(
            sealed = ?changed.iter().map(|(p, a, b)| format!("{} {a:o}->{b:o}", p.display())).collect::<Vec<_>>(),
            "state directory sealed from guests (only the execute directory is theirs to reach)"
        );
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_execute_dir_stays_reachable() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
        let exec = state.join("execute");
        std::fs::create_dir(&exec).unwrap();
        std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(0o711)).unwrap();
        std::fs::write(state.join("queue.db"), "q").unwrap();
        std::fs::set_permissions(
            state.join("queue.db"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        std::fs::create_dir(state.join("spool")).unwrap();
        std::fs::set_permissions(state.join("spool"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let sock = state.join("api.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().mode() & 0o7777;
        let changed = seal_execute_parent(&state, &exec);
        assert_eq!(mode(&state), 0o711);
        assert_eq!(mode(&state.join("queue.db")), 0o640);
        assert_eq!(mode(&state.join("spool")), 0o750);
        assert_eq!(mode(&exec), 0o711, "the execute dir is the guests'");
        assert_eq!(mode(&sock), 0o777, "sockets are left alone");
        assert_eq!(changed.len(), 3);
        assert!(seal_execute_parent(&state, &exec).is_empty(), "idempotent");
        // An execute dir elsewhere: the state dir is not touched.
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(seal_execute_parent(&state, &d.path().join("elsewhere/execute")).is_empty());
        assert_eq!(mode(&state), 0o755);
    }
}
