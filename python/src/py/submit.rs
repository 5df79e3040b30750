//! `htcondor2.Submit`'s native half: the description itself
//! ([`crate::submit_desc::SubmitDesc`]), its macro expansion and items
//! (Gleaner's submit parser, `gleaner_proto::submit::inspect`), and the
//! text a submission sends.

use crate::submit_desc::{self, ItemData, SubmitDesc};
use gleaner_proto::submit::SubmitContext;
use gleaner_proto::submit::inspect::{expand_macros, queue_items};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::sync::Mutex;

fn desc_error(e: submit_desc::DescError) -> PyErr {
    PyValueError::new_err(e.0)
}

/// The description held by an `htcondor2.Submit`.
#[pyclass(module = "htcondor2", name = "_SubmitDesc", frozen)]
pub struct NativeSubmit {
    desc: Mutex<SubmitDesc>,
}

impl NativeSubmit {
    fn with<T>(&self, f: impl FnOnce(&mut SubmitDesc) -> T) -> PyResult<T> {
        let mut d = self
            .desc
            .lock()
            .map_err(|_| PyValueError::new_err("the Submit object's lock is poisoned"))?;
        Ok(f(&mut d))
    }
}

fn context(cwd: &str) -> SubmitContext {
    SubmitContext::new("htcondor2.Submit", "")
        .with_env(std::env::vars().collect())
        .with_dir(cwd)
}

#[pymethods]
impl NativeSubmit {
    /// Empty, or read from a submit text.
    #[new]
    #[pyo3(signature = (text = None))]
    fn new(text: Option<&str>) -> PyResult<Self> {
        let desc = match text {
            None => SubmitDesc::new(),
            Some(t) => SubmitDesc::parse(t).map_err(desc_error)?,
        };
        Ok(NativeSubmit {
            desc: Mutex::new(desc),
        })
    }

    fn get(&self, key: &str) -> PyResult<Option<String>> {
        self.with(|d| d.get(key).map(str::to_string))
    }

    fn set(&self, key: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = value
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err("value must be a string"))?
            .to_str()?
            .to_string();
        if key.trim().is_empty() {
            return Err(PyValueError::new_err("key must not be empty"));
        }
        self.with(|d| d.set(key, &value))
    }

    fn keys(&self) -> PyResult<Vec<String>> {
        self.with(|d| d.keys().map(str::to_string).collect())
    }

    fn __len__(&self) -> PyResult<usize> {
        self.with(|d| d.len())
    }

    fn __str__(&self) -> PyResult<String> {
        self.with(|d| d.to_string())
    }

    fn qargs(&self) -> PyResult<String> {
        self.with(|d| d.qargs().to_string())
    }

    fn set_qargs(&self, args: &str) -> PyResult<()> {
        self.with(|d| d.set_qargs(args))?.map_err(desc_error)
    }

    fn copy(&self) -> PyResult<NativeSubmit> {
        let d = self.with(|d| d.clone())?;
        Ok(NativeSubmit {
            desc: Mutex::new(d),
        })
    }

    /// The value of `key` with its macros expanded (KeyError when it is
    /// not set or does not expand).
    fn expand(&self, key: &str, cwd: &str) -> PyResult<String> {
        let (commands, value) = self.with(|d| {
            let commands: Vec<(String, String)> = d
                .keys()
                .map(|k| (k.to_string(), d.get(k).unwrap_or("").to_string()))
                .collect();
            (commands, d.get(key).map(str::to_string))
        })?;
        let value = value.ok_or_else(|| PyKeyError::new_err(key.to_string()))?;
        expand_macros(&commands, &value, &context(cwd))
            .map_err(|e| PyKeyError::new_err(format!("{key}: {e}")))
    }

    /// The items of the queue statement (`qargs`, or the description's
    /// own): a list of dicts, or None when it binds no items.
    #[pyo3(signature = (cwd, qargs = None))]
    fn itemdata(
        &self,
        py: Python<'_>,
        cwd: &str,
        qargs: Option<&str>,
    ) -> PyResult<Option<Vec<Py<PyAny>>>> {
        let (commands, args, rows) = self.with(|d| {
            let commands: Vec<(String, String)> = d
                .keys()
                .map(|k| (k.to_string(), d.get(k).unwrap_or("").to_string()))
                .collect();
            match qargs {
                None => (
                    commands,
                    Ok(d.qargs().to_string()),
                    d.inline_items().map(<[String]>::to_vec),
                ),
                Some(q) => {
                    let mut probe = SubmitDesc::new();
                    let set = probe.set_qargs(q);
                    (
                        commands,
                        set.map(|()| probe.qargs().to_string()),
                        probe.inline_items().map(<[String]>::to_vec),
                    )
                }
            }
        })?;
        let args = args.map_err(desc_error)?;
        let items = queue_items(&commands, &args, rows.as_deref(), &context(cwd))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let Some(items) = items else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let d = PyDict::new(py);
            for (k, v) in item {
                d.set_item(k, v)?;
            }
            out.push(d.into_any().unbind());
        }
        Ok(Some(out))
    }

    /// The submit text of a submission with `count`, `itemdata` and
    /// `queue` as `Schedd.submit` takes them. `itemdata` is a list of
    /// strings or of dicts (already read from the caller's iterator).
    #[pyo3(signature = (count, itemdata, queue))]
    fn submit_text(
        &self,
        count: i64,
        itemdata: Option<&Bound<'_, PyAny>>,
        queue: Option<&str>,
    ) -> PyResult<String> {
        let count =
            u32::try_from(count.max(0)).map_err(|_| PyValueError::new_err("count is too large"))?;
        let items = match itemdata.filter(|i| !i.is_none()) {
            None => None,
            Some(list) => Some(item_data(list)?),
        };
        let d = self.with(|d| d.clone())?;
        let plan = submit_desc::queue_plan(&d, count, items.as_ref(), queue).map_err(desc_error)?;
        let d = plan.apply_commands(&d);
        Ok(d.submit_text(&plan.statement, plan.rows.as_deref()))
    }
}

/// Item data from a list of strings or of dicts (only the first dict's
/// keys count, as HTCondor's bindings take them).
fn item_data(list: &Bound<'_, PyAny>) -> PyResult<ItemData> {
    let mut lines = Vec::new();
    let mut keys: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for item in list.try_iter()? {
        let item = item?;
        if let Ok(s) = item.cast::<PyString>() {
            if keys.is_some() {
                return Err(PyTypeError::new_err(
                    "itemdata must be all strings or all dicts",
                ));
            }
            lines.push(s.to_str()?.to_string());
        } else if let Ok(d) = item.cast::<PyDict>() {
            if !lines.is_empty() {
                return Err(PyTypeError::new_err(
                    "itemdata must be all strings or all dicts",
                ));
            }
            let names = keys.get_or_insert_with(|| {
                d.keys()
                    .iter()
                    .filter_map(|k| k.extract::<String>().ok())
                    .collect()
            });
            let mut row = Vec::with_capacity(names.len());
            for n in names.iter() {
                let v = match d.get_item(n)? {
                    Some(v) => v.str()?.to_str()?.to_string(),
                    None => String::new(),
                };
                row.push(v);
            }
            rows.push(row);
        } else {
            return Err(PyTypeError::new_err(
                "itemdata must be an iterator of strings or of dicts",
            ));
        }
    }
    Ok(match keys {
        Some(keys) => ItemData::Dicts { keys, rows },
        None => ItemData::Lines(lines),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeSubmit>()
}
