//! What a long-running daemon keeps in memory while it idles on an owner's
//! machine.
//!
//! Unmapping the code it ran only to start: a daemon runs most of its code
//! once (configuration, credentials, TLS set-up, the queue's schema check,
//! the HTTP router). Those pages stay mapped for the daemon's whole life,
//! and mapped executable pages are the ones the kernel keeps longest when
//! memory runs short (they get another pass on the active list), so the
//! owner's own pages would go before them. Once the daemon is up, it drops
//! the mappings of its own binary's code and read-only data. They are clean
//! pages of the file: nothing is lost, and a page run again is mapped again
//! from the page cache at its next use. Mappings holding pages that are not
//! the file's (a relocated read-only segment, a debugger's breakpoint) are
//! left alone.
//!
//! One malloc arena: glibc gives each thread that allocates its own arena
//! and keeps what it frees there (about half a MiB each for a daemon's few
//! threads); a daemon allocates little, so one arena shared by its threads
//! costs it nothing measurable (bench/README.md) and returns that memory.

use std::path::Path;

/// A read-only mapping of the daemon's own binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: usize,
    pub end: usize,
}

/// The mappings of `exe` in a `/proc/PID/smaps` text that are safe to drop:
/// not writable, and with no anonymous (copied) page.
pub fn droppable(smaps: &str, exe: &Path) -> Vec<Mapping> {
    let exe = exe.to_string_lossy();
    let mut out = Vec::new();
    // The mapping being read, if it is one of ours and read-only.
    let mut current: Option<Mapping> = None;
    let mut clean = true;
    let flush = |m: Option<Mapping>, clean: bool, out: &mut Vec<Mapping>| {
        if let Some(m) = m.filter(|_| clean) {
            out.push(m);
        }
    };
    for line in smaps.lines() {
        if let Some((range, rest)) = header(line) {
            flush(current.take(), clean, &mut out);
            clean = true;
            let mut fields = rest.split_whitespace();
            let perms = fields.next().unwrap_or("");
            // offset, device, inode, then the path (may contain spaces).
            let path = fields.skip(3).collect::<Vec<_>>().join(" ");
            if perms.starts_with('r') && !perms.contains('w') && path == exe {
                current = Some(range);
            }
        } else if let Some(v) = line.strip_prefix("Anonymous:") {
            // Pages copied from the file (relocations, breakpoints) would be
            // lost by the drop: keep the whole mapping.
            if v.trim().trim_end_matches("kB").trim() != "0" {
                clean = false;
            }
        }
    }
    flush(current, clean, &mut out);
    out
}

/// A mapping's header line: `start-end perms offset dev inode path`.
fn header(line: &str) -> Option<(Mapping, &str)> {
    let (range, rest) = line.split_once(' ')?;
    let (a, b) = range.split_once('-')?;
    let start = usize::from_str_radix(a, 16).ok()?;
    let end = usize::from_str_radix(b, 16).ok()?;
    (end > start).then_some((Mapping { start, end }, rest))
}

/// Keeps this process's heap in one malloc arena (see the module docs).
/// Call before any thread starts.
pub fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before the
    // daemon starts threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Turns glibc's fastbins off in the coordinator. It takes apart and frees
/// every station's ad as it comes (with 10 000 stations, tens of thousands
/// of small blocks a second); glibc keeps small freed blocks in fastbins
/// and merges them all (`malloc_consolidate`) whenever a block of 1 KiB or
/// more is asked for, which with the allocations around it was a quarter
/// of the criterion round with 10 000 ads. With `M_MXFAST` = 0 (a
/// documented `mallopt` setting) freed blocks go straight to the bins they
/// are merged in: the round took 20 ms instead of 27 (bench/README.md,
/// "The coordinator's round"). mimalloc as the binary's allocator was
/// faster still (17 ms) but more than doubled the idle memory of every
/// daemon, the stations on owners' machines included.
/// Call before any thread starts.
pub fn no_fastbins() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before the
    // daemon starts threads.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

/// Drops the mappings of this process's start-up code (see the module
/// docs). Returns the bytes no longer mapped.
pub fn drop_mappings() -> std::io::Result<usize> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut dropped = 0;
    for m in droppable(&smaps, &exe) {
        let len = m.end - m.start;
        let Some(addr) = std::ptr::NonNull::new(m.start as *mut std::ffi::c_void) else {
            continue;
        };
        // SAFETY: the range is a whole read-only private mapping of this
        // process's own executable with no anonymous page (checked above),
        // so every page can be read again from the file unchanged; nothing
        // in the process holds the mapping's contents apart from the code
        // and constants, which the kernel maps again on their next use.
        unsafe { nix::sys::mman::madvise(addr, len, nix::sys::mman::MmapAdvise::MADV_DONTNEED) }
            .map_err(std::io::Error::from)?;
        dropped += len;
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
5600000000-5600001000 r--p 00000000 fe:00 12 /usr/bin/glean
Rss:                   4 kB
Anonymous:             0 kB
5600001000-5600003000 r-xp 00001000 fe:00 12 /usr/bin/glean
Rss:                   8 kB
Anonymous:             0 kB
5600003000-5600004000 r--p 00003000 fe:00 12 /usr/bin/glean
Anonymous:             4 kB
5600004000-5600005000 rw-p 00004000 fe:00 12 /usr/bin/glean
Anonymous:             4 kB
7f00000000-7f00001000 r-xp 00000000 fe:00 13 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f00002000-7f00003000 r-xp 00000000 fe:00 14 /usr/bin/glean (deleted)
Anonymous:             0 kB
";

    #[test]
    fn only_clean_read_only_mappings_of_the_binary_are_dropped() {
        let got = droppable(SMAPS, Path::new("/usr/bin/glean"));
        assert_eq!(
            got,
            vec![
                Mapping {
                    start: 0x5600000000,
                    end: 0x5600001000
                },
                Mapping {
                    start: 0x5600001000,
                    end: 0x5600003000
                },
            ],
            "the relocated read-only page, the writable data, libc and another file are kept"
        );
    }

    #[test]
    fn a_path_with_spaces_is_matched_whole() {
        let smaps = "1000-2000 r-xp 00000000 fe:00 12 /opt/my tools/glean\nAnonymous: 0 kB\n";
        assert_eq!(droppable(smaps, Path::new("/opt/my tools/glean")).len(), 1);
        assert!(droppable(smaps, Path::new("/opt/my")).is_empty());
    }

    #[test]
    fn the_process_keeps_running_its_code_after_the_drop() {
        let before = format!("{:?}", (1..10).map(|x| x * 3).collect::<Vec<_>>());
        let dropped = drop_mappings().unwrap_or_else(|e| panic!("drop: {e}"));
        assert!(dropped > 0, "the test binary has read-only code mapped");
        let after = format!("{:?}", (1..10).map(|x| x * 3).collect::<Vec<_>>());
        assert_eq!(before, after);
    }
}
