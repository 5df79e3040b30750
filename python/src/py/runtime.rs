//! The async runtime the bindings block on, with the GIL released while
//! they wait. One per process: a forked child (multiprocessing, joblib)
//! makes its own rather than inherit a parent's, whose threads it does
//! not have.

use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

static RUNTIME: Mutex<Option<(u32, Arc<tokio::runtime::Runtime>)>> = Mutex::new(None);

fn runtime() -> PyResult<Arc<tokio::runtime::Runtime>> {
    let pid = std::process::id();
    let mut slot = RUNTIME
        .lock()
        .map_err(|_| super::errors::HTCondorException::new_err("the runtime lock is poisoned"))?;
    if let Some((owner, rt)) = slot.as_ref()
        && *owner == pid
    {
        return Ok(rt.clone());
    }
    // A current-thread runtime: no thread to lose across a fork, and the
    // calls are one at a time anyway.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(Arc::new)
        .map_err(|e| super::errors::HTCondorException::new_err(format!("async runtime: {e}")))?;
    // A parent's runtime is left to leak in the child: dropping it would
    // wait for threads that are not there.
    if let Some(old) = slot.take() {
        std::mem::forget(old);
    }
    *slot = Some((pid, rt.clone()));
    Ok(rt)
}

/// Runs `fut` to completion with the GIL released.
pub fn block_on<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: std::future::Future<Output = T> + Send,
    T: Send,
{
    let rt = runtime()?;
    Ok(py.detach(|| rt.block_on(fut)))
}
