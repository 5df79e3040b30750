//! The extension module `gleaner._native`: the Rust classes and functions
//! behind `gleaner.classad2` and `gleaner.htcondor2` (their Python files
//! in `pysrc/` add only Pythonic sugar: enums, mapping mixins, aliases).

use pyo3::prelude::*;

mod classad;
mod collector;
mod convert;
mod errors;
mod eventlog;
mod misc;
mod runtime;
mod schedd;
mod submit;

/// `gleaner._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add(
        "ClassAdException",
        py.get_type::<errors::ClassAdException>(),
    )?;
    m.add(
        "HTCondorException",
        py.get_type::<errors::HTCondorException>(),
    )?;
    classad::register(m)?;
    collector::register(m)?;
    eventlog::register(m)?;
    misc::register(m)?;
    schedd::register(m)?;
    submit::register(m)?;
    Ok(())
}
