//! DMW placement: host scores, the placement rules, the UMol arbiter
//! ("umpire") and the uncoordinated least-loaded baseline.
//!
//! Neeracher's DMW (seeds/001_c7470f9b5ea54797.txt, spec
//! `dmw-neeracher.md` §3.2, §3.4, §3.8) places the jobs of many individual
//! schedulers (one per user schedule / home station) on a heterogeneous
//! cluster. This module holds the pure parts of that design:
//!
//! - [`score`]: the printed UMol σ = σ_μ + σ_λ ([`sigma_mu`],
//!   [`sigma_lambda_umol`]) and the proposed heterogeneous index
//!   σ_λ = β·n/max(n, λ+1) ([`sigma_lambda_hetero`]), selected and
//!   thresholded by [`Score`];
//! - [`rules`]: the embargo ([`Embargo`]), job limits ([`job_limit`]), the
//!   dysfunctional back-off ([`Backoff`]) and the progress guarantee
//!   ([`ProgressGuarantee`], [`needs_progress`]), shared with the production
//!   coordinator;
//! - [`umpire`]: the arbiter [`Umpire`]: apportioning and granting with
//!   priority (n_s, t_s, s), the 90 s apportion expiry and the progress
//!   guarantee;
//! - [`baseline`]: [`uncoordinated_pick`]: every scheduler independently picks
//!   the best host from the same stale view, which is the RStat behaviour that
//!   causes host contention (the "herd effect"), kept as a baseline for the
//!   simulator.
//!
//! Nothing here reads a clock: every time-dependent call takes `now`.
//! Ties are broken by id (host id, then scheduler id), so every decision is
//! deterministic; callers wanting random tie-breaks can permute ids.

pub mod baseline;
pub mod rules;
pub mod score;
pub mod umpire;

pub use baseline::{HostSnapshot, uncoordinated_pick};
pub use rules::{
    Backoff, Embargo, Pass, ProgressGuarantee, Room, at_job_limit, job_limit, needs_progress,
};
pub use score::{
    HostLoad, HostSpec, LoadIndex, Score, sigma_lambda_hetero, sigma_lambda_umol, sigma_mu,
    sigma_umol,
};
pub use umpire::{DmwError, HostState, SchedulerState, Umpire, UmpireConfig};

/// Dense host identifier, assigned by [`Umpire::add_host`] in insertion
/// order (DMW's "common host ID assigned by the umpire", L2139–2144).
pub type HostId = u32;

/// Identifier of an individual scheduler (one per user schedule / home
/// station). Chosen by the caller.
pub type SchedId = u32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_inputs_do_not_panic() {
        assert_eq!(sigma_mu(f64::NAN), 0.0);
        assert_eq!(sigma_lambda_umol(f64::NAN), 0.0);
        assert_eq!(sigma_lambda_hetero(f64::NAN, 2, 0.0), 0.0);
        assert_eq!(sigma_lambda_hetero(1.0, 0, 0.0), 1.0);
    }
}
