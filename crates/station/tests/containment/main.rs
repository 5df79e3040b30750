//! Issue 30, the host's side: a guest sees nothing of the owner nor of
//! earlier guests, its disk and I/O are bounded, and held or removed
//! guests leave nothing behind. One test binary, a module per finding;
//! each test runs real guests as slot accounts on a real station (in
//! process, placed through `/v1/place` as a home would, `harness.rs`),
//! attacks as a guest would, and asserts that the attack fails and that
//! nothing changed.
//!
//! - `view`: the guest's own root (findings 6 and 7): `/home` and `/root`
//!   empty, the system read-only, no daemon state, no other sandbox, a
//!   `/proc` and `/sys` of its own, exposed directories and volumes as
//!   the owner allows; `ionice -c2 -n0` and the keyrings refused; the
//!   guest's I/O weight the lowest.
//! - `scrub`: slot release (finding 1): what a guest plants in every
//!   world-writable directory it can find, in SysV IPC and POSIX message
//!   queues is gone before the next guest of the same uid runs.
//! - `network`: its own network (finding 5): the owner's loopback service
//!   and `/proc/net` sockets out of reach, its listening ports invisible to
//!   the owner, the station's routable address reachable; the same in
//!   `network = "host"`.
//! - `disk`: `request_disk` (finding 2): a flood held at its request with
//!   its sandbox freed; after a removal the sandbox goes at once and no
//!   output is sent again after the home's 409.
//! - `zombies`: held and removed guests are reaped.
//!
//! They need root and `/usr/bin/python3` (the guests are Python scripts)
//! and print `skipped: …` otherwise. Every user, cgroup, mount, namespace
//! and process they make is removed, on failure too.

#[path = "../common/mod.rs"]
mod common;

mod disk;
mod harness;
mod network;
mod scrub;
mod view;
mod zombies;
