//! The owner's controls over lending (issue 18, item 3): stop lending now
//! or until a time, a weekly schedule (operating windows that replace
//! `[policy] windows`), the eviction policy for new guests, and a cap on
//! the guests' memory. Set from the owner's page or `glean owner`, kept in
//! `<state_dir>/owner_controls.json` (0600) so they outlive a restart, and
//! published on a `watch` channel the lending gate and the starter follow.

use gleaner_core::eviction::EvictionPolicy;
use gleaner_core::owner_rules::Windows;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tokio::sync::watch;

/// The smallest memory cap accepted, MiB (below it no guest could run).
pub const MIN_MEMORY_CAP_MB: u64 = 64;

/// The owner's controls as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OwnerControls {
    /// Lending stopped by the owner, if it is.
    pub stop: Option<Stop>,
    /// Operating windows replacing `[policy] windows` (`None`: the
    /// configuration's; an empty list: always open).
    pub schedule: Option<Vec<String>>,
    /// The eviction policy for guests placed from now on (`None`: the
    /// configuration's `eviction_policy`).
    pub eviction_policy: Option<String>,
    /// The guests' memory together, MiB (`None`: what the station offers).
    pub guest_memory_mb: Option<u64>,
}

/// A stop: since when, and until when (`None`: until the owner resumes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stop {
    pub since_unix: u64,
    pub until_unix: Option<u64>,
}

/// One change the owner asks for (`POST /owner/api/controls`,
/// `POST /v1/owner/controls`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum ControlChange {
    /// Stop lending now, until `until_unix` or until resumed.
    Stop { until_unix: Option<u64> },
    /// Lend again.
    Resume,
    /// The weekly schedule (`None`: back to the configuration's).
    Schedule { windows: Option<Vec<String>> },
    /// The eviction policy by name (`None`: the configuration's).
    Policy { name: Option<String> },
    /// The guests' memory cap (`None`: no cap of the owner's).
    Memory { mb: Option<u64> },
}

impl OwnerControls {
    /// Applies `change` at `now_unix`; the error names the field.
    pub fn apply(
        &mut self,
        change: ControlChange,
        now_unix: u64,
    ) -> Result<(), (&'static str, String)> {
        match change {
            ControlChange::Stop { until_unix } => {
                if until_unix.is_some_and(|u| u <= now_unix) {
                    return Err((
                        "until_unix",
                        "the time to lend again is not in the future".into(),
                    ));
                }
                self.stop = Some(Stop {
                    since_unix: now_unix,
                    until_unix,
                });
            }
            ControlChange::Resume => self.stop = None,
            ControlChange::Schedule { windows } => {
                if let Some(w) = &windows {
                    Windows::parse(w).map_err(|e| ("windows", e.to_string()))?;
                }
                self.schedule = windows;
            }
            ControlChange::Policy { name } => {
                if let Some(n) = &name
                    && EvictionPolicy::from_name(n).is_none()
                {
                    return Err(("name", format!("unknown eviction policy {n:?}")));
                }
                self.eviction_policy = name;
            }
            ControlChange::Memory { mb } => {
                if mb.is_some_and(|m| m < MIN_MEMORY_CAP_MB) {
                    return Err((
                        "mb",
                        format!("a cap below {MIN_MEMORY_CAP_MB} MiB leaves no room for a guest"),
                    ));
                }
                self.guest_memory_mb = mb;
            }
        }
        Ok(())
    }

    /// Whether the stop is in force at `now_unix`.
    pub fn stopped(&self, now_unix: u64) -> bool {
        self.stop.is_some_and(|s| {
            gleaner_core::owner_rules::lending(true, true, true, s.until_unix, now_unix).is_err()
        })
    }
}

/// Why the controls cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ControlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not the owner's controls: {message}")]
    Corrupt { path: PathBuf, message: String },
}

/// The stored controls and their channel.
pub struct ControlsStore {
    path: PathBuf,
    tx: watch::Sender<OwnerControls>,
    /// Serialises changes (read, apply, write, publish).
    lock: std::sync::Mutex<()>,
}

impl ControlsStore {
    pub fn path_in(state_dir: &Path) -> PathBuf {
        state_dir.join("owner_controls.json")
    }

    /// Reads `<state_dir>/owner_controls.json` (none: no controls). A file
    /// that cannot be read stops the start, with its path: starting without
    /// it could lend a machine its owner stopped.
    pub fn open(state_dir: &Path) -> Result<Self, ControlsError> {
        let path = Self::path_in(state_dir);
        let controls = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| ControlsError::Corrupt {
                path: path.clone(),
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => OwnerControls::default(),
            Err(source) => return Err(ControlsError::Io { path, source }),
        };
        Ok(ControlsStore {
            path,
            tx: watch::channel(controls).0,
            lock: std::sync::Mutex::new(()),
        })
    }

    pub fn get(&self) -> OwnerControls {
        self.tx.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<OwnerControls> {
        self.tx.subscribe()
    }

    /// Applies `change`, writes the file (0600, atomically) and only then
    /// publishes the new controls.
    pub fn change(
        &self,
        change: ControlChange,
        now_unix: u64,
    ) -> Result<OwnerControls, ChangeError> {
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut c = self.get();
        c.apply(change, now_unix)
            .map_err(|(f, m)| ChangeError::Invalid(f, m))?;
        let bytes = serde_json::to_vec_pretty(&c).map_err(|e| ChangeError::Io(e.to_string()))?;
        gleaner_proto::creds::write_atomic(&self.path, &bytes, 0o600)
            .map_err(|e| ChangeError::Io(format!("{}: {e}", self.path.display())))?;
        self.tx.send_replace(c.clone());
        Ok(c)
    }
}

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("{0}: {1}")]
    Invalid(&'static str, String),
    #[error("cannot save the owner's controls: {0}")]
    Io(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_checked_saved_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let s = ControlsStore::open(dir.path()).unwrap();
        assert_eq!(s.get(), OwnerControls::default());
        let rx = s.subscribe();
        s.change(
            ControlChange::Stop {
                until_unix: Some(200),
            },
            100,
        )
        .unwrap();
        assert!(rx.has_changed().unwrap());
        assert!(s.get().stopped(150) && !s.get().stopped(200));
        // Bad changes name their field and change nothing.
        for (bad, field) in [
            (
                ControlChange::Stop {
                    until_unix: Some(50),
                },
                "until_unix",
            ),
            (
                ControlChange::Schedule {
                    windows: Some(vec!["Someday 9-5".into()]),
                },
                "windows",
            ),
            (
                ControlChange::Policy {
                    name: Some("nice".into()),
                },
                "name",
            ),
            (ControlChange::Memory { mb: Some(1) }, "mb"),
        ] {
            match s.change(bad, 100) {
                Err(ChangeError::Invalid(f, _)) => assert_eq!(f, field),
                other => panic!("{other:?}"),
            }
        }
        s.change(
            ControlChange::Policy {
                name: Some("IE".into()),
            },
            100,
        )
        .unwrap();
        s.change(ControlChange::Memory { mb: Some(512) }, 100)
            .unwrap();
        s.change(
            ControlChange::Schedule {
                windows: Some(vec!["Mon-Fri 18:00-08:00".into()]),
            },
            100,
        )
        .unwrap();
        let path = ControlsStore::path_in(dir.path());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let again = ControlsStore::open(dir.path()).unwrap();
        assert_eq!(again.get(), s.get());
        s.change(ControlChange::Resume, 100).unwrap();
        assert!(!s.get().stopped(150));
        // A corrupt file stops the start, naming it.
        std::fs::write(&path, "{").unwrap();
        let e = ControlsStore::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains("owner_controls.json"), "{e}");
    }

    #[test]
    fn the_wire_form_is_tagged_by_action() {
        let c: ControlChange =
            serde_json::from_str(r#"{"action":"stop","until_unix":null}"#).unwrap();
        assert_eq!(c, ControlChange::Stop { until_unix: None });
        assert!(serde_json::from_str::<ControlChange>(r#"{"action":"format_disk"}"#).is_err());
    }
}
