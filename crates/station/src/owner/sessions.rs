//! Another user's login session → treat the station as owned (an optional
//! extra). Sessions are found from `<procfs>/<pid>/loginuid`, which PAM's
//! `pam_loginuid` sets at login (ssh, console, display manager) and which
//! survives `su`/`sudo`; processes never logged in carry the unset value
//! 4294967295. No utmp is needed (these machines have none, platform §1.6).
//! Configure the uids that do not count (the guest user, service accounts);
//! everything else with a live process is a session.

use super::OwnerError;
use std::collections::BTreeSet;
use std::path::PathBuf;

const UNSET: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct SessionCheck {
    procfs: PathBuf,
    ignore: BTreeSet<u32>,
}

impl SessionCheck {
    pub fn new(procfs: impl Into<PathBuf>, ignore_uids: impl IntoIterator<Item = u32>) -> Self {
        SessionCheck {
            procfs: procfs.into(),
            ignore: ignore_uids.into_iter().collect(),
        }
    }

    /// Login uids with at least one live process, minus the ignored ones.
    pub fn sessions(&self) -> Result<Vec<u32>, OwnerError> {
        let rd = std::fs::read_dir(&self.procfs).map_err(|e| OwnerError::io(&self.procfs, e))?;
        let mut out = BTreeSet::new();
        for ent in rd.flatten() {
            let name = ent.file_name();
            if !name
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            {
                continue;
            }
            // Processes exit between readdir and read: skip them.
            let Ok(text) = std::fs::read_to_string(ent.path().join("loginuid")) else {
                continue;
            };
            if let Ok(uid) = text.trim().parse::<u32>()
                && uid != UNSET
                && !self.ignore.contains(&uid)
            {
                out.insert(uid);
            }
        }
        Ok(out.into_iter().collect())
    }
}
