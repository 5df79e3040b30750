//! The guests' share of the disks: the lowest I/O weight the kernel
//! offers, on the guests' parent group and on each guest's.
//!
//! | layout | file | lowest | acts with |
//! |---|---|---|---|
//! | v2 `io` controller | `io.weight` (`default N`) | 1 | the `io.cost` model, when the administrator enabled it |
//! | v2 `io` controller | `io.bfq.weight` | 1 | the BFQ scheduler |
//! | v1 `blkio` | `blkio.bfq.weight` | 1 | the BFQ scheduler |
//! | v1 `blkio` | `blkio.weight` | 10 | CFQ (kernels before 5.0) |
//!
//! Every file that exists is written; none existing is no error (a disk
//! with the `none` or `mq-deadline` scheduler and no `io.cost` has no
//! proportional I/O control at all). The guests' `IOPRIO_CLASS_IDLE`
//! (the launcher's, kept by seccomp) is what `mq-deadline` and BFQ honour
//! per request.

use super::IsolationError;
use std::path::Path;

/// (file, lowest value) to try, v2 and v1.
const V2: [(&str, &str); 2] = [("io.weight", "default 1"), ("io.bfq.weight", "1")];
const V1: [(&str, &str); 2] = [("blkio.bfq.weight", "1"), ("blkio.weight", "10")];

/// Writes the lowest weight into every weight file of `dir`; how many it
/// wrote.
pub(crate) fn set_lowest_at(dir: &Path, v2: bool) -> Result<usize, IsolationError> {
    let mut n = 0;
    for (file, value) in if v2 { V2 } else { V1 } {
        let p = dir.join(file);
        match std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&p)
        {
            Ok(mut f) => {
                use std::io::Write;
                f.write_all(value.as_bytes())
                    .map_err(|e| IsolationError::io(&p, e))?;
                n += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(IsolationError::io(&p, e)),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_exists() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("io.weight"), "").unwrap();
        assert_eq!(set_lowest_at(d.path(), true).unwrap(), 1);
        assert_eq!(
            std::fs::read_to_string(d.path().join("io.weight")).unwrap(),
            "default 1"
        );
        std::fs::write(d.path().join("blkio.bfq.weight"), "").unwrap();
        std::fs::write(d.path().join("blkio.weight"), "").unwrap();
        assert_eq!(set_lowest_at(d.path(), false).unwrap(), 2);
        assert_eq!(
            std::fs::read_to_string(d.path().join("blkio.weight")).unwrap(),
            "10"
        );
        assert_eq!(set_lowest_at(&d.path().join("none"), true).unwrap(), 0);
    }
}
