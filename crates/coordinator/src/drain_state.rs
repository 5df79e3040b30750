//! `drained.json`: the hosts an administrator drained (`glean drain`, the
//! dashboard), kept in the state directory so a drain survives a restart
//! of the coordinator. Written atomically before the drain takes effect;
//! a file that cannot be read stops the start (serving without it would
//! hand a drained host new guests).

use crate::CoordinatorError;
use crate::persist::write_atomic;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const FILE: &str = "drained.json";
const VERSION: u32 = 1;

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DrainFile {
    version: u32,
    hosts: BTreeSet<String>,
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// The drained hosts; none when the file does not exist yet.
pub(crate) fn load(dir: &Path) -> Result<BTreeSet<String>, CoordinatorError> {
    let path = path(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(source) => return Err(CoordinatorError::Io { path, source }),
    };
    let bad = |why: String| CoordinatorError::State {
        path: path.clone(),
        why,
    };
    let f: DrainFile = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if f.version != VERSION {
        return Err(bad(format!("unsupported version {}", f.version)));
    }
    Ok(f.hosts)
}

/// Writes the set atomically.
pub(crate) fn save(dir: &Path, hosts: &BTreeSet<String>) -> Result<(), CoordinatorError> {
    write_atomic(
        dir,
        FILE,
        &DrainFile {
            version: VERSION,
            hosts: hosts.clone(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_and_read_back_and_a_corrupt_file_names_itself() {
        let d = tempfile::tempdir().unwrap();
        assert!(load(d.path()).unwrap().is_empty());
        let hosts: BTreeSet<String> = ["ws1".to_string(), "ws2".into()].into();
        save(d.path(), &hosts).unwrap();
        assert_eq!(load(d.path()).unwrap(), hosts);
        std::fs::write(path(d.path()), "{\"version\":1,\"hosts\":[1]}").unwrap();
        let e = load(d.path()).unwrap_err().to_string();
        assert!(e.contains("drained.json"), "{e}");
    }
}
