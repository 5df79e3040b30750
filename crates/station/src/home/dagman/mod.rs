//! The DAG manager: HTCondor DAGMan workflows run on the user's home
//! station.
//!
//! A DAG is loaded and run by the core's pure code
//! ([`gleaner_core::dag::load`], [`gleaner_core::dag::run`]); this module
//! gives it a home:
//!
//! - [`api`]: the request and response types of `/v1/dags`;
//! - [`prepare`]: a submission made ready (options, configuration,
//!   rescue DAG, DAG files, node submit descriptions), shared with
//!   `glean dag submit --dry-run`;
//! - `nodes`: a DAG created (its DAGMan job, `universe = scheduler`,
//!   whose cluster is the DAG's id and every node job's `DAGManJobId`),
//!   and a node's jobs submitted in the transaction that records them;
//! - `store`: the manager's tables in the queue's database;
//! - `manager`: the loop keeping every running DAG's run in memory, fed
//!   with what the queue, the DAG's job and the scripts say; `observe`
//!   turns queue states into the run's events; `act` carries out its
//!   actions (scripts as the owner, `crate::home::local_run`);
//! - `outputs`: DAGMan's files (`FILE.dagman.out`, `FILE.nodes.log`,
//!   the jobstate log, node status file, dot file, metrics, rescue DAGs,
//!   save points), written as the DAG's owner;
//! - `status`, `remove`, `service`: `glean dag status` and `rm`, the
//!   endpoints.
//!
//! A home killed at any moment (SIGKILL included) resumes its DAGs: what
//! was committed stands, scripts that were running run again, nothing is
//! submitted twice (each node's cluster is recorded in the transaction
//! that queues it).

mod act;
pub mod api;
mod manager;
mod nodes;
mod observe;
mod outputs;
pub mod prepare;
mod remove;
mod service;
mod status;
mod store;

pub use api::{
    DagNodeStatus, DagRmResponse, DagState, DagStatus, DagSubmitBody, DagSubmitResponse,
};
pub(crate) use manager::run_loop;
pub use prepare::{DagFs, DagOptions, Prepared, RescueUsed, node_submission, prepare};
pub(crate) use service::router;
pub use status::{status, status_one};
pub use store::{init, is_dag_job, record_rescue};
