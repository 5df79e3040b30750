//! File globbing for `queue … matching` on the local file system.

use crate::limits::MAX_PROCS;
use std::path::Path;

/// The paths under `dir` matching `pattern` (relative patterns are taken
/// from `dir` and returned relative to it), sorted, with whether each is a
/// directory. A leading dot must be matched literally, as in a shell.
pub(super) fn glob(dir: &Path, pattern: &str) -> Result<Vec<(String, bool)>, String> {
    let absolute = Path::new(pattern).is_absolute();
    let full = if absolute {
        pattern.to_string()
    } else {
        let base = glob::Pattern::escape(&dir.to_string_lossy());
        format!("{}/{pattern}", base.trim_end_matches('/'))
    };
    let opts = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: true,
    };
    let paths =
        glob::glob_with(&full, opts).map_err(|e| format!("bad pattern {pattern:?}: {e}"))?;
    let mut out = Vec::new();
    for p in paths {
        let p = p.map_err(|e| format!("while matching {pattern:?}: {e}"))?;
        let is_dir = p.is_dir();
        let shown = if absolute {
            p.to_string_lossy().into_owned()
        } else {
            p.strip_prefix(dir)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned()
        };
        // HTCondor names a matched directory with a trailing slash.
        let shown = if is_dir && !shown.ends_with('/') {
            format!("{shown}/")
        } else {
            shown
        };
        out.push((shown, is_dir));
        if out.len() as u64 > MAX_PROCS {
            return Err(format!(
                "{pattern:?} matches more than {MAX_PROCS} files, more than one submission may queue"
            ));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_relative_names_sorted_without_hidden_files() {
        let d = tempfile::tempdir().unwrap();
        for f in ["b.dat", "a.dat", ".h.dat", "c.txt"] {
            std::fs::write(d.path().join(f), "").unwrap();
        }
        std::fs::create_dir(d.path().join("sub.dat")).unwrap();
        let got = glob(d.path(), "*.dat").unwrap();
        assert_eq!(
            got,
            [
                ("a.dat".to_string(), false),
                ("b.dat".to_string(), false),
                ("sub.dat/".to_string(), true)
            ]
        );
    }
}
