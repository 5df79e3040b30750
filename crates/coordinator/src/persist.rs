//! The durable fairness state: station ids and the Up-Down table.
//!
//! Written after every scheduling interval as `fairness.json` in the state
//! directory, atomically (temporary file, fsync, rename, fsync of the
//! directory), so a crash leaves either the old or the new table.

use crate::CoordinatorError;
use gleaner_core::fair_share::SavedUsage;
use gleaner_core::time::Time;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

const FILE: &str = "fairness.json";
const VERSION: u32 = 1;

/// One station: its id is its position in [`FairnessState::stations`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StationEntry {
    pub name: String,
    /// Schedule index; `None` when the allocator keeps none.
    #[serde(default)]
    pub si: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FairnessState {
    pub version: u32,
    pub stations: Vec<StationEntry>,
    /// Each `SUBMITTER@HOME`'s decayed usage (`pool::accounting`); absent
    /// in files written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounting: Option<SavedAccounting>,
}

/// [`FairnessState::accounting`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedAccounting {
    /// When the usage was last brought up to date, UNIX microseconds.
    pub at_micros: u64,
    pub usage: std::collections::BTreeMap<String, f64>,
}

impl SavedAccounting {
    pub fn from_usage(u: &SavedUsage) -> Self {
        SavedAccounting {
            at_micros: u.at.as_micros(),
            usage: u.usage.clone(),
        }
    }

    pub fn to_usage(&self) -> SavedUsage {
        SavedUsage {
            at: Time::from_micros(self.at_micros),
            usage: self.usage.clone(),
        }
    }
}

impl FairnessState {
    pub fn new(stations: Vec<(String, Option<f64>)>) -> Self {
        FairnessState {
            version: VERSION,
            stations: stations
                .into_iter()
                .map(|(name, si)| StationEntry { name, si })
                .collect(),
            accounting: None,
        }
    }

    pub fn path(dir: &Path) -> PathBuf {
        dir.join(FILE)
    }

    /// Loads the state, or an empty one if the file does not exist yet.
    pub fn load(dir: &Path) -> Result<Self, CoordinatorError> {
        let path = Self::path(dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(FairnessState::new(Vec::new()));
            }
            Err(source) => return Err(CoordinatorError::Io { path, source }),
        };
        let bad = |why: String| CoordinatorError::State {
            path: path.clone(),
            why,
        };
        let state: FairnessState = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if state.version != VERSION {
            return Err(bad(format!("unsupported version {}", state.version)));
        }
        let mut seen = std::collections::HashSet::new();
        for e in &state.stations {
            if !seen.insert(e.name.as_str()) {
                return Err(bad(format!("station {:?} listed twice", e.name)));
            }
            if e.si.is_some_and(|v| !v.is_finite()) {
                return Err(bad(format!("station {:?} has a non-finite index", e.name)));
            }
        }
        for (name, u) in state.accounting.iter().flat_map(|a| &a.usage) {
            if !(u.is_finite() && *u >= 0.0) {
                return Err(bad(format!("submitter {name:?} has usage {u}")));
            }
        }
        Ok(state)
    }

    /// Writes the state atomically.
    pub fn save(&self, dir: &Path) -> Result<(), CoordinatorError> {
        write_atomic(dir, FILE, self)
    }
}

/// Writes `value` as `dir/file` atomically: temporary file, fsync, rename,
/// fsync of the directory.
pub(crate) fn write_atomic<T: Serialize>(
    dir: &Path,
    file: &str,
    value: &T,
) -> Result<(), CoordinatorError> {
    let path = dir.join(file);
    let tmp = dir.join(format!("{file}.tmp"));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| CoordinatorError::Io { path: p, source }
    };
    let json = serde_json::to_vec_pretty(value).map_err(|e| CoordinatorError::State {
        path: path.clone(),
        why: e.to_string(),
    })?;
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(&json).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    // Make the rename itself durable.
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    Ok(())
}

const CLAIMS_FILE: &str = "claims.json";

/// A pending claim as persisted: the licences it holds must still count
/// after a coordinator restart until the host shows the guest or the claim
/// expires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedClaim {
    pub host: String,
    pub home: String,
    pub claim_id: String,
    #[serde(default)]
    pub class: Option<String>,
    #[serde(default)]
    pub licences: Vec<(String, u32)>,
    /// UNIX seconds.
    pub expires_at: u64,
    pub baseline: u32,
}

/// `claims.json`: the pending claims, written before a grant that takes a
/// licence is handed out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsState {
    pub version: u32,
    pub claims: Vec<SavedClaim>,
}

impl ClaimsState {
    pub fn new(claims: Vec<SavedClaim>) -> Self {
        ClaimsState {
            version: VERSION,
            claims,
        }
    }

    /// Loads the claims, or none if the file does not exist yet.
    pub fn load(dir: &Path) -> Result<Self, CoordinatorError> {
        let path = dir.join(CLAIMS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ClaimsState::new(Vec::new()));
            }
            Err(source) => return Err(CoordinatorError::Io { path, source }),
        };
        let state: ClaimsState =
            serde_json::from_str(&text).map_err(|e| CoordinatorError::State {
                path: path.clone(),
                why: e.to_string(),
            })?;
        if state.version != VERSION {
            return Err(CoordinatorError::State {
                path,
                why: format!("unsupported version {}", state.version),
            });
        }
        Ok(state)
    }

    pub fn save(&self, dir: &Path) -> Result<(), CoordinatorError> {
        write_atomic(dir, CLAIMS_FILE, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(FairnessState::load(dir.path()).unwrap().stations.is_empty());
        let s = FairnessState::new(vec![("a".into(), Some(-2.0)), ("b".into(), None)]);
        s.save(dir.path()).unwrap();
        assert_eq!(FairnessState::load(dir.path()).unwrap(), s);
    }

    #[test]
    fn claims_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ClaimsState::load(dir.path()).unwrap().claims.is_empty());
        let s = ClaimsState::new(vec![SavedClaim {
            host: "h".into(),
            home: "a".into(),
            claim_id: "c".into(),
            class: Some("k".into()),
            licences: vec![("matlab".into(), 1)],
            expires_at: 99,
            baseline: 0,
        }]);
        s.save(dir.path()).unwrap();
        assert_eq!(ClaimsState::load(dir.path()).unwrap(), s);
        std::fs::write(dir.path().join(CLAIMS_FILE), "{").unwrap();
        assert!(ClaimsState::load(dir.path()).is_err());
    }

    #[test]
    fn corrupt_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(FairnessState::path(dir.path()), "{\"version\":1,").unwrap();
        assert!(FairnessState::load(dir.path()).is_err());
        std::fs::write(
            FairnessState::path(dir.path()),
            r#"{"version":1,"stations":[{"name":"a"},{"name":"a"}]}"#,
        )
        .unwrap();
        assert!(FairnessState::load(dir.path()).is_err());
        // A submitter's usage that is no usage is refused and named.
        std::fs::write(
            FairnessState::path(dir.path()),
            r#"{"version":1,"stations":[],"accounting":{"at_micros":5,"usage":{"ann@a":-1.0}}}"#,
        )
        .unwrap();
        let e = FairnessState::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("ann@a"), "{e}");
        // Written before accounting was kept: read, with none.
        std::fs::write(
            FairnessState::path(dir.path()),
            r#"{"version":1,"stations":[{"name":"a","si":1.0}]}"#,
        )
        .unwrap();
        assert_eq!(FairnessState::load(dir.path()).unwrap().accounting, None);
    }
}
