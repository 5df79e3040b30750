//! The `file` activity kind: a state file whose first word is `active` or
//! `idle` (tests, scripts, `glean up --demo`).

use super::publish;
use gleaner_core::detector::OwnerState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Reads a state file: `active` as its first word means the owner is
/// there; anything else, or no file, means idle.
pub fn read_state_file(path: &Path) -> OwnerState {
    let active = std::fs::read_to_string(path).is_ok_and(|t| {
        t.split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("active"))
    });
    if active {
        OwnerState::Na
    } else {
        OwnerState::Av
    }
}

/// Starts the state-file watch (the `file` activity kind): inotify on the
/// file's directory wakes it at once; a 250 ms poll covers filesystems
/// without inotify.
pub fn spawn_state_file(
    path: PathBuf,
    tx: watch::Sender<OwnerState>,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    use std::os::fd::AsFd;
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let spawned = std::thread::Builder::new()
        .name("owner-file".into())
        .spawn(move || {
            let flags = AddWatchFlags::IN_CLOSE_WRITE
                | AddWatchFlags::IN_MODIFY
                | AddWatchFlags::IN_CREATE
                | AddWatchFlags::IN_MOVED_TO
                | AddWatchFlags::IN_DELETE
                | AddWatchFlags::IN_MOVED_FROM;
            let ino = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
                .and_then(|i| i.add_watch(&dir, flags).map(|_| i))
                .map_err(|e| {
                    tracing::debug!(dir = %dir.display(), error = %e, "no inotify; polling the activity file");
                })
                .ok();
            while !stop2.load(Ordering::Relaxed) && !tx.is_closed() {
                publish(&tx, read_state_file(&path));
                match &ino {
                    Some(i) => {
                        let mut fds = [nix::poll::PollFd::new(
                            i.as_fd(),
                            nix::poll::PollFlags::POLLIN,
                        )];
                        let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(250u16));
                        while let Ok(evs) = i.read_events() {
                            if evs.is_empty() {
                                break;
                            }
                        }
                    }
                    None => std::thread::sleep(Duration::from_millis(250)),
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the activity-file watch");
    }
    tokio::spawn(async move {
        let _ = shutdown.wait_for(|s| *s).await;
        stop.store(true, Ordering::Relaxed);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_file_words() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s");
        assert_eq!(read_state_file(&f), OwnerState::Av);
        std::fs::write(&f, "ACTIVE since 9\n").unwrap();
        assert_eq!(read_state_file(&f), OwnerState::Na);
        std::fs::write(&f, "idle\n").unwrap();
        assert_eq!(read_state_file(&f), OwnerState::Av);
    }
}
