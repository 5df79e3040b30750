//! Gleaner's discrete-event simulator.
//!
//! The simulator proves that the policies of `gleaner-core` reproduce the
//! papers, and lets users try a policy on their own pool's recorded history
//! before deploying it. It calls the policy core unchanged — there is no
//! second copy of Up-Down or of the eviction ladder here.
//!
//! - [`engine`]: the deterministic event queue (same seed ⇒ byte-identical output).
//! - [`availability`]: Mutka's availability models M1–M4 and CSV trace replay/export.
//! - [`workload`]: background-job workloads (Poisson arrivals, permanent jobs, families).
//! - [`metrics`]: RCWR, remote cycle percentage, response ratios, profiling tables.
//! - [`papers`]: the papers' availability tables, cited by seed file and line.
//! - [`local_load`]: Linger-Longer's two-level local CPU workload model.
//! - [`workstations`]: the owned-workstation pool of Mutka §4.4, with the bare allocator or the production coordinator (`gleaner_coordinator::Pool`) handing out remote capacity.
//! - [`experiments`]: the papers' experiments behind `glean sim NAME`.
//! - [`plot`]: SVG figures.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]

pub mod availability;
pub mod cluster;
pub mod engine;
pub mod experiments;
pub mod local_load;
pub mod metrics;
pub mod papers;
pub mod plot;
pub mod workload;
pub mod workstations;

/// Errors of the simulator (bad trace files, bad parameters, output I/O).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("{path}: line {line}: {msg}")]
    Trace {
        path: String,
        line: u64,
        msg: String,
    },
    #[error("invalid parameter {name}: {msg}")]
    Param { name: String, msg: String },
    #[error("unknown experiment {0:?} (known: {1})")]
    UnknownExperiment(String, String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("csv output {path}: {source}")]
    Csv {
        path: String,
        #[source]
        source: csv::Error,
    },
    #[error("plot {path}: {msg}")]
    Plot { path: String, msg: String },
}

impl SimError {
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        SimError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}
