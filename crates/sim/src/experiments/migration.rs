//! (being written)
use super::{ExperimentOpts, ExperimentReport};
use crate::SimError;

pub fn run(_opts: &ExperimentOpts) -> Result<ExperimentReport, SimError> {
    Err(SimError::Param {
        name: "experiment".into(),
        msg: "migration is not built yet".into(),
    })
}
