//! Test-only helpers shared by Gleaner's crates (`publish = false`).
//!
//! - [`TestUser`]: a real Unix account made for one test and removed when
//!   it is dropped (its processes killed first), so tests about users,
//!   permissions and isolation exercise the kernel rather than a mock.
//! - [`TestOwner`]: who a test's jobs belong to (a [`TestUser`] under
//!   root, else the test's own account), with directories of its own.
//! - [`slot_prefix`] and [`DefaultSlots`]: slot accounts made by the
//!   stations a test starts are its own and removed afterwards.
//! - [`TestKeys`]: a test pool's signing key, `pool.pub`, and the
//!   tokens and claims it signs.
//! - [`is_root`] and [`skip_unless_root`]: tests that need root print one
//!   clear `skipped: …` line elsewhere instead of failing.

mod keys;
mod oracle;
mod owner;
mod procs;
mod slots;
mod user;

pub use keys::{TestKeys, write_private};
pub use oracle::{htcondor_user_log, oracle_missing};
pub use owner::{TestOwner, reachable};
pub use procs::{kill_user_processes, pids_of_uid};
pub use slots::{DefaultSlots, TEST_SLOT_PREFIX, remove_slot_accounts, slot_prefix};
pub use user::TestUser;

/// Whether this process runs with root's effective uid.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Returns `true` (after printing `skipped: REASON (needs root)`) when the
/// calling test must be skipped because it does not run as root:
///
/// ```no_run
/// if gleaner_testkit::skip_unless_root("creates Unix users") {
///     return;
/// }
/// ```
pub fn skip_unless_root(reason: &str) -> bool {
    if is_root() {
        return false;
    }
    println!(
        "skipped: {reason} (needs root; running as uid {})",
        nix::unistd::geteuid()
    );
    true
}
