//! HTCondor DAGMan workflows on Gleaner, in one test binary: the census of
//! HTCondor's DAG files (`census`), Gleaner's own DAG tests on a personal
//! pool (`basics`), HTCondor's test workflows run by their own drivers
//! (`workflows`), a workflow written by HTCondor's Python DAG library
//! (`pydags`), and the home killed under a DAG's scripts (`chaos`). Tests
//! that need a pool share one per module where they can.

#[path = "../common/mod.rs"]
mod common;
#[path = "../fault_pool/mod.rs"]
mod fault_pool;
#[path = "../dag_common/mod.rs"]
mod pool;

mod basics;
mod census;
mod chaos;
mod pydags;
mod workflows;
