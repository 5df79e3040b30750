//! Terminal activity from tty/pty access times: the classic Condor signal
//! (`idle_time.cpp` stats all `/dev/tty*` and `/dev/pts/*` when utmp is
//! unreliable; anchors.md §1.2). Reading input updates the slave's atime;
//! on the development machines with 8-second granularity (platform.md §1.6),
//! so this source is never more precise than that.

use super::{IdleSource, OwnerError};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Default patterns: every pty slave and every tty, as HTCondor does with
/// `STARTD_HAS_BAD_UTMP` (these machines have no utmp).
pub fn default_tty_patterns() -> Vec<String> {
    vec!["/dev/pts/*".to_string(), "/dev/tty*".to_string()]
}

/// Latest atime over files matching a list of patterns. A pattern may use
/// `*` and `?` in its last component only (`/dev/pts/*`, `/dev/tty*`);
/// a pattern without wildcards names one file.
pub struct TtySource {
    patterns: Vec<String>,
    exclude: Vec<String>,
}

impl TtySource {
    pub fn new(patterns: Vec<String>) -> Self {
        TtySource {
            patterns,
            // ptmx is the multiplexer, not a terminal anyone types on.
            exclude: vec!["ptmx".to_string()],
        }
    }

    /// File names (last component, wildcards allowed) to skip.
    pub fn excluding(mut self, names: Vec<String>) -> Self {
        self.exclude = names;
        self
    }

    /// Paths matching the patterns now.
    pub fn matching_paths(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for p in &self.patterns {
            let path = Path::new(p);
            let (Some(dir), Some(last)) =
                (path.parent(), path.file_name().and_then(|f| f.to_str()))
            else {
                continue;
            };
            if !last.contains(['*', '?']) {
                out.push(path.to_path_buf());
                continue;
            }
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for ent in rd.flatten() {
                let name = ent.file_name();
                let Some(name) = name.to_str() else { continue };
                if glob_match(last, name) && !self.exclude.iter().any(|x| glob_match(x, name)) {
                    out.push(ent.path());
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

impl Default for TtySource {
    fn default() -> Self {
        Self::new(default_tty_patterns())
    }
}

impl IdleSource for TtySource {
    fn name(&self) -> &str {
        "tty"
    }

    fn last_activity(&mut self, _now: SystemTime) -> Result<Option<SystemTime>, OwnerError> {
        let mut best: Option<SystemTime> = None;
        for p in self.matching_paths() {
            // Terminals come and go between readdir and stat; skip those.
            match std::fs::metadata(&p) {
                Ok(m) => {
                    if let Ok(t) = m.accessed() {
                        best = Some(best.map_or(t, |b| b.max(t)));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(OwnerError::io(&p, e)),
            }
        }
        Ok(best)
    }
}

/// Shell-style match of `*` (any run) and `?` (one char).
pub(crate) fn glob_match(pat: &str, s: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let t: Vec<char> = s.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globbing() {
        assert!(glob_match("*", "0"));
        assert!(glob_match("tty*", "tty"));
        assert!(glob_match("tty*", "ttyS0"));
        assert!(!glob_match("tty*", "pty0"));
        assert!(glob_match("tty?", "tty1"));
        assert!(!glob_match("tty?", "tty12"));
        assert!(glob_match("*x*y", "axbxy"));
        assert!(!glob_match("ptmx", "ptm"));
    }
}
