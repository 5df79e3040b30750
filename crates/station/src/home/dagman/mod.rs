//! The DAG manager: runs job DAGs (`glean dag submit`) on the user's home
//! station.
//!
//! A DAG is a schedule of jobs with DMW's two dependence kinds (Neeracher
//! 1998, seeds/001_c7470f9b5ea54797.txt L391, L996–1012; format in
//! `docs/dag-format.md`):
//! - a node's jobs enter this station's queue only after every **data**
//!   parent's jobs all completed with exit code 0;
//! - and not before every **priority** parent's jobs *started* running
//!   (some proc of its cluster has a start time).
//!
//! Eligibility is the core's [`Dag`](gleaner_core::dag::Dag), unchanged. The manager keeps each
//! DAG's nodes in two tables of the queue's own SQLite database, so that
//! submitting a node's cluster and recording it on the node commit in one
//! transaction ([`JobQueue::submit_linked`](crate::queue::JobQueue::submit_linked)); every other state change of a
//! node or DAG is one transaction too. After a crash (even SIGKILL) the
//! manager rebuilds every running DAG from these rows and the job queue and
//! carries on: nothing is submitted twice and nothing is lost.
//!
//! A failed attempt is retried while the node's `RETRY` budget lasts. When a
//! DAG fails (a node failed for good and nothing else can run) or is
//! removed, the manager writes a rescue file naming the DAG file, the nodes
//! done and the attempts used; `glean dag submit` of the rescue file
//! resumes there. It is written as the DAG's owner, outside the queue lock:
//! `<dag file>.rescue`, or `~owner/dag-<id>.rescue` if that directory is
//! not writable, or as a last resort under the station's state directory.
//!
//! Node submissions are checked as the owner at DAG submit
//! (`submit_check`), missing files allowed (a parent may make them); every
//! file is opened as the owner when used.
//!
//! - [`api`]: the request and response types of `/v1/dags`;
//! - `store`: the manager's tables in the queue's database;
//! - `submit`, `tick`, `remove`, `status`: the manager's steps, each a
//!   function of the queue and the time;
//! - `service`: its loop and endpoints in the daemon.

pub mod api;
mod remove;
mod service;
mod status;
mod store;
mod submit;
mod tick;

pub use api::{
    DagNodeStatus, DagNodeSubmit, DagRmResponse, DagState, DagStatus, DagSubmitBody,
    DagSubmitResponse,
};
pub use remove::{RemovedJobs, recover, remove};
pub(crate) use service::{router, run_loop};
pub use status::{status, status_one};
pub use store::{RescueFile, init, record_rescue};
pub use submit::submit;
pub use tick::{TickReport, tick};

#[cfg(test)]
mod tests;
