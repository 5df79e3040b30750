//! The exceptions HTCondor's modules raise, and how Rust errors become
//! them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    classad2,
    ClassAdException,
    PyException,
    "A ClassAd text or value that could not be parsed or converted."
);

create_exception!(
    htcondor2,
    HTCondorException,
    PyException,
    "An operation on the pool failed (the station refused it or could not be reached)."
);
