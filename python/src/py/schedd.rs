//! `htcondor2.Schedd`'s native half: each call blocks (GIL released) on
//! the station client in [`crate::schedd`]; the Python class handles
//! the arguments' defaults, callbacks and warnings.

use super::classad::ExprTree;
use super::convert::new_classad;
use super::errors::HTCondorException;
use super::runtime::block_on;
use crate::jobspec::{self, JobSpec, Target};
use crate::schedd::{Action, Query, Schedd, ScheddError, Since};
use gleaner_classad::{Expr, parse_expr};
use gleaner_proto::submit::SubmitContext;
use gleaner_station::client::{ClientError, ClientSettings, StationClient};
use pyo3::exceptions::{PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList, PyString};
use std::sync::Arc;

/// What `submit` returns to Python: (cluster, first proc, procs, the
/// first job's ad, the parser's warnings).
type Submitted = (u64, u32, u32, Py<PyAny>, Vec<String>);

pub fn client_error(e: ClientError) -> PyErr {
    HTCondorException::new_err(e.to_string())
}

fn schedd_error(e: ScheddError) -> PyErr {
    match e {
        ScheddError::Client(c) => client_error(c),
        ScheddError::Submit(m) => HTCondorException::new_err(format!("Submit failed: {m}")),
        ScheddError::Unsupported(m) => PyNotImplementedError::new_err(m),
    }
}

/// A constraint argument: `None`/empty for every job, else an expression.
fn constraint(text: Option<&str>) -> PyResult<Option<Expr>> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => parse_expr(t)
            .map(Some)
            .map_err(|e| PyValueError::new_err(format!("Invalid constraint {t:?}: {e}"))),
    }
}

/// A `job_spec` as HTCondor's bindings take it.
pub fn job_spec(obj: &Bound<'_, PyAny>) -> PyResult<JobSpec> {
    let bad = |e: jobspec::SpecError| PyValueError::new_err(e.0);
    if let Ok(list) = obj.cast::<PyList>() {
        let mut items = Vec::with_capacity(list.len());
        for i in list.iter() {
            items.push(i.extract::<String>().map_err(|_| {
                PyTypeError::new_err("All elements of the job_spec list must be strings.")
            })?);
        }
        return jobspec::from_list(&items).map_err(bad);
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<pyo3::types::PyBool>() {
        let c: u64 = obj
            .extract()
            .map_err(|_| PyValueError::new_err("a cluster id is a non-negative integer"))?;
        return Ok(JobSpec::Targets(vec![Target::Cluster(c)]));
    }
    if let Ok(e) = obj.cast::<ExprTree>() {
        return Ok(JobSpec::Constraint((*e.get().expr).clone()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return jobspec::from_str(s.to_str()?).map_err(bad);
    }
    Err(PyTypeError::new_err(
        "The job_spec must be list of strings, a string, an int, or an ExprTree.",
    ))
}

/// The station's schedd (`htcondor2.Schedd` holds one).
#[pyclass(module = "htcondor2", name = "_Schedd", frozen)]
pub struct NativeSchedd {
    inner: Arc<Schedd>,
    address: String,
}

#[pymethods]
impl NativeSchedd {
    /// The user's station (`$GLEAN_HOME/pool.toml`, or `home`'s), or the
    /// one at `address` (`unix:/path` or a URL, with the user's token).
    #[new]
    #[pyo3(signature = (address = None, home = None))]
    fn new(address: Option<&str>, home: Option<&str>) -> PyResult<Self> {
        let settings = match home {
            Some(h) => ClientSettings::discover_in(std::path::Path::new(h), address, None),
            None => ClientSettings::discover(address, None),
        }
        .map_err(client_error)?;
        let client = StationClient::from_settings(&settings).map_err(client_error)?;
        let address = client.base_url().to_string();
        Ok(NativeSchedd {
            inner: Arc::new(Schedd::new(client)),
            address,
        })
    }

    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// The user name the station queues jobs under.
    fn owner(&self, py: Python<'_>) -> PyResult<String> {
        let s = self.inner.clone();
        block_on(py, async move { s.me().await })?.map_err(client_error)
    }

    /// Parses and queues a submit text; (cluster, first proc, procs,
    /// first job's ad, warnings).
    fn submit(&self, py: Python<'_>, text: &str, cwd: &str, seed: u64) -> PyResult<Submitted> {
        let ctx = SubmitContext::new("htcondor2.Submit", "")
            .with_env(std::env::vars().collect())
            .with_dir(cwd)
            .with_seed(seed);
        let (s, text, cwd) = (self.inner.clone(), text.to_string(), cwd.to_string());
        let done = block_on(py, async move { s.submit(&text, &ctx, &cwd).await })?
            .map_err(schedd_error)?;
        let ad = new_classad(py, done.first_ad)?;
        Ok((
            done.cluster,
            done.first_proc,
            done.num_procs,
            ad,
            done.warnings,
        ))
    }

    /// Job ads of the queue.
    #[pyo3(signature = (constraint, projection, limit))]
    fn query(
        &self,
        py: Python<'_>,
        constraint: Option<&str>,
        projection: Vec<String>,
        limit: i64,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let q = Query {
            constraint: self::constraint(constraint)?,
            projection,
            limit: usize::try_from(limit).ok(),
        };
        let s = self.inner.clone();
        let ads = block_on(py, async move { s.query(&q).await })?.map_err(client_error)?;
        ads.into_iter().map(|a| new_classad(py, a)).collect()
    }

    /// Finished jobs' ads, most recent first.
    #[pyo3(signature = (constraint, projection, limit, since))]
    fn history(
        &self,
        py: Python<'_>,
        constraint: Option<&str>,
        projection: Vec<String>,
        limit: i64,
        since: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let since = match since.filter(|s| !s.is_none()) {
            None => None,
            Some(s) if s.is_instance_of::<PyInt>() => Some(Since::Cluster(s.extract()?)),
            Some(s) => match s.cast::<ExprTree>() {
                Ok(e) => Some(Since::Expr((*e.get().expr).clone())),
                Err(_) => {
                    let t: String = s.extract().map_err(|_| {
                        PyTypeError::new_err("since must be an int, a job id, or an expression")
                    })?;
                    let t = t.trim();
                    if let Ok(id) = t.parse() {
                        Some(Since::Job(id))
                    } else if let Ok(c) = t.parse::<u64>() {
                        Some(Since::Cluster(c))
                    } else {
                        Some(Since::Expr(parse_expr(t).map_err(|e| {
                            PyValueError::new_err(format!("Invalid since {t:?}: {e}"))
                        })?))
                    }
                }
            },
        };
        let q = Query {
            constraint: self::constraint(constraint)?,
            projection,
            limit: usize::try_from(limit).ok(),
        };
        let s = self.inner.clone();
        let ads = block_on(py, async move { s.history(&q, since.as_ref()).await })?
            .map_err(client_error)?;
        ads.into_iter().map(|a| new_classad(py, a)).collect()
    }

    /// Holds, releases or removes jobs; HTCondor's result ad.
    fn act(
        &self,
        py: Python<'_>,
        action: i64,
        job_spec: &Bound<'_, PyAny>,
        reason: &str,
    ) -> PyResult<Py<PyAny>> {
        let action = Action::from_code(action).map_err(schedd_error)?;
        let spec = self::job_spec(job_spec)?;
        let (s, reason) = (self.inner.clone(), reason.to_string());
        let totals = block_on(py, async move { s.act(action, &spec, &reason).await })?
            .map_err(client_error)?;
        new_classad(py, totals.to_ad())
    }

    /// Sets an attribute of the jobs of `job_spec` to an expression; the
    /// number of jobs edited.
    fn edit(
        &self,
        py: Python<'_>,
        job_spec: &Bound<'_, PyAny>,
        attr: &str,
        value: &str,
    ) -> PyResult<u64> {
        let spec = self::job_spec(job_spec)?;
        let (s, attr, value) = (self.inner.clone(), attr.to_string(), value.to_string());
        block_on(py, async move { s.edit(&spec, &attr, &value).await })?.map_err(schedd_error)
    }

    /// Checks a job_spec (`retrieve`, `edit` before they act).
    fn check_spec(&self, job_spec: &Bound<'_, PyAny>) -> PyResult<()> {
        self::job_spec(job_spec).map(|_| ())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeSchedd>()
}
