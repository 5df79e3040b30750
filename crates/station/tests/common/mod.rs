//! Helpers shared by the station's real-process test files.

use std::os::fd::AsRawFd;

/// Real-process tests run one at a time, also across test processes
/// (nextest runs each test in its own process): they measure CPU shares, and
/// our own busy loops would be the noisiest neighbour. `flock` on a shared
/// file; released when the file closes, even if the test process dies.
pub fn serial_lock() -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/gleaner-station-real-tests.lock")
        .unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    f
}
