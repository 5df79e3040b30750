//! Checkpoints end to end, one test binary:
//!
//! - `bench_smoke`: the checkpoint bench itself (`bench/checkpoint`) at a
//!   small size, as an ordinary user it creates, so that it cannot rot;
//! - `refused`: a corrupted or truncated checkpoint at the home is refused
//!   when a host restores it, the previous one is restored instead, and
//!   the job's output is exactly that of one run;
//! - `interrupted`: a checkpoint upload or a restore cut off in the middle
//!   is tried again and completes; a host whose uploads never arrive
//!   leaves the last good checkpoint in place, and the job resumes from it.
//!
//! Stations run in this process (`spawn_for_test`); the hosts reach the
//! home through a proxy the tests cut (`proxy.rs`). Jobs belong to an
//! account made for the test under root.

#[path = "../common/mod.rs"]
mod common;

mod bench_smoke;
mod interrupted;
mod pool;
mod proxy;
mod refused;
