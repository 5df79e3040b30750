//! The home's fair share between its users, per-user limits and the
//! spool's bounds (issue 30, findings 2 and 3), with real daemons and real
//! Unix users (root needed: each test is skipped with a printed reason
//! otherwise):
//!
//! - `share`: another user's job starts within one scheduling interval and
//!   one placement while the first user has 20 000 jobs queued, with claims
//!   reused or not, and when its job needs another kind of node than the
//!   claims the flood holds;
//! - `limits`: refusals over `max_jobs_per_submission` and
//!   `max_jobs_per_owner` name the limit and the numbers and change
//!   nothing; `max_running_per_owner` holds a user to its nodes while
//!   another runs; `glean users` shows the limits and each user's jobs;
//! - `spool`: an output flood is held at its job's bound and at its
//!   user's, its spool removed at once; `rm` frees a running job's spool;
//!   a home killed between the commit and the clean-up removes what was
//!   left when it starts again, following no planted link.

#[path = "../common/mod.rs"]
mod common;
mod limits;
mod pool;
mod share;
mod spool;
