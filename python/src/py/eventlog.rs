//! `htcondor2.JobEventLog`'s native half: a follower of the log file
//! ([`crate::eventlog::Follower`]) that waits for the next event up to a
//! deadline, with the GIL released and Ctrl-C honoured while it waits.

use super::convert::new_classad;
use super::errors::HTCondorException;
use crate::eventlog::Follower;
use pyo3::prelude::*;
use std::sync::Mutex;
use std::time::Duration;

/// How often a waiting reader looks at the file again.
const POLL: Duration = Duration::from_millis(100);

#[pyclass(module = "htcondor2", name = "_EventLog", frozen)]
pub struct NativeEventLog {
    follower: Mutex<Follower>,
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl NativeEventLog {
    fn poll(&self) -> PyResult<Option<crate::eventlog::Event>> {
        let mut f = self
            .follower
            .lock()
            .map_err(|_| HTCondorException::new_err("the event log's lock is poisoned"))?;
        f.poll()
            .map_err(|e| HTCondorException::new_err(e.to_string()))
    }
}

#[pymethods]
impl NativeEventLog {
    #[new]
    fn new(path: &str) -> PyResult<Self> {
        let f = Follower::open(std::path::Path::new(path))
            .map_err(|e| HTCondorException::new_err(e.to_string()))?;
        Ok(NativeEventLog {
            follower: Mutex::new(f),
        })
    }

    /// The next event as (text, ClassAd), waiting until `deadline`
    /// (seconds since the epoch; 0 waits for ever); None when the
    /// deadline passes first.
    fn next(&self, py: Python<'_>, deadline: f64) -> PyResult<Option<(String, Py<PyAny>)>> {
        loop {
            if let Some(e) = self.poll()? {
                let ad = new_classad(py, e.ad)?;
                return Ok(Some((e.text, ad)));
            }
            if deadline > 0.0 && now_secs() >= deadline {
                return Ok(None);
            }
            let wait = if deadline > 0.0 {
                POLL.min(Duration::from_secs_f64((deadline - now_secs()).max(0.0)))
            } else {
                POLL
            };
            py.detach(|| std::thread::sleep(wait));
            py.check_signals()?;
        }
    }

    fn close(&self) -> PyResult<()> {
        self.follower
            .lock()
            .map_err(|_| HTCondorException::new_err("the event log's lock is poisoned"))?
            .close();
        Ok(())
    }

    fn offset(&self) -> PyResult<u64> {
        Ok(self
            .follower
            .lock()
            .map_err(|_| HTCondorException::new_err("the event log's lock is poisoned"))?
            .offset())
    }

    fn set_offset(&self, offset: u64) -> PyResult<()> {
        self.follower
            .lock()
            .map_err(|_| HTCondorException::new_err("the event log's lock is poisoned"))?
            .set_offset(offset);
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeEventLog>()
}
