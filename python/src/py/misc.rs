//! `htcondor2`'s module functions that are plain facts (`version`,
//! `platform`) and the configuration knobs tools read (`param`).

use pyo3::prelude::*;

#[pyfunction]
fn _version() -> String {
    crate::version::version_string()
}

#[pyfunction]
fn _platform() -> String {
    crate::version::platform_string()
}

/// The knobs `htcondor2.param` starts with.
#[pyfunction]
fn _param_defaults() -> Vec<(String, String)> {
    crate::param::defaults(&gleaner_station::client::glean_home())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_version, m)?)?;
    m.add_function(wrap_pyfunction!(_platform, m)?)?;
    m.add_function(wrap_pyfunction!(_param_defaults, m)?)?;
    Ok(())
}
