//! ClassAd values to Python values and back, as `classad2` converts
//! them: literals become `int`, `float`, `str`, `bool` or
//! `classad2.Value.Undefined`/`Error`; lists become `list`s (their items
//! converted, unevaluated ones as `ExprTree`); nested ads become
//! `ClassAd`s; any other expression is an `ExprTree`.

use super::classad::{ClassAdCore, ExprTree};
use gleaner_classad::{Ad, Expr, Literal, Value};
use pyo3::IntoPyObjectExt;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::sync::Arc;

static CLASSAD: PyOnceLock<Py<pyo3::types::PyType>> = PyOnceLock::new();
static VALUE: PyOnceLock<Py<pyo3::types::PyType>> = PyOnceLock::new();

/// A `classad2.ClassAd` (the Python class, with its mapping methods)
/// holding `ad`.
pub fn new_classad(py: Python<'_>, ad: Ad) -> PyResult<Py<PyAny>> {
    let cls = CLASSAD.import(py, "gleaner.classad2", "ClassAd")?;
    let obj = cls.call0()?;
    obj.cast::<ClassAdCore>()?.borrow_mut().ad = ad;
    Ok(obj.unbind())
}

/// `classad2.Value.Undefined` (2) or `classad2.Value.Error` (1).
fn value_member(py: Python<'_>, error: bool) -> PyResult<Py<PyAny>> {
    let cls = VALUE.import(py, "gleaner.classad2", "Value")?;
    Ok(cls.call1((if error { 1 } else { 2 },))?.unbind())
}

fn literal(py: Python<'_>, l: &Literal) -> PyResult<Py<PyAny>> {
    match l {
        Literal::Undefined => value_member(py, false),
        Literal::Error => value_member(py, true),
        Literal::Bool(b) => b.into_py_any(py),
        Literal::Int(i) => i.into_py_any(py),
        Literal::Real(r) => r.into_py_any(py),
        Literal::Str(s) => s.into_py_any(py),
    }
}

/// What `ClassAd[key]` gives for the expression bound to `key`.
pub fn expr_to_py(py: Python<'_>, e: &Expr) -> PyResult<Py<PyAny>> {
    match e {
        Expr::Lit(l) => literal(py, l),
        Expr::List(items) => {
            let list = PyList::empty(py);
            for i in items.iter() {
                list.append(expr_to_py(py, i)?)?;
            }
            Ok(list.into_any().unbind())
        }
        Expr::Ad(ad) => new_classad(py, ad.clone()),
        other => ExprTree::from_expr(other.clone()).into_py_any(py),
    }
}

/// What evaluating an expression gives in Python.
pub fn value_to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    match v {
        Value::Undefined => value_member(py, false),
        Value::Error => value_member(py, true),
        Value::Bool(b) => b.into_py_any(py),
        Value::Int(i) => i.into_py_any(py),
        Value::Real(r) => r.into_py_any(py),
        Value::Str(s) => s.into_py_any(py),
        // A list's items stay as written (HTCondor evaluates them lazily).
        Value::List(l) => {
            let list = PyList::empty(py);
            for i in l.items() {
                list.append(expr_to_py(py, i)?)?;
            }
            Ok(list.into_any().unbind())
        }
        Value::Ad(a) => new_classad(py, a.ad().clone()),
    }
}

/// A Python value as a ClassAd expression (what `ClassAd[key] = value`
/// and `ClassAd(dict)` store).
pub fn py_to_expr(obj: &Bound<'_, PyAny>) -> PyResult<Expr> {
    let py = obj.py();
    if let Ok(e) = obj.cast::<ExprTree>() {
        return Ok((*e.get().expr).clone());
    }
    if let Ok(a) = obj.cast::<ClassAdCore>() {
        return Ok(Expr::Ad(a.borrow().ad.clone()));
    }
    if obj.is_none() {
        return Ok(Expr::Lit(Literal::Undefined));
    }
    let value_cls = VALUE.import(py, "gleaner.classad2", "Value")?;
    if obj.is_instance(value_cls)? {
        let code: i64 = obj.extract()?;
        return Ok(Expr::Lit(if code == 1 {
            Literal::Error
        } else {
            Literal::Undefined
        }));
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Expr::Lit(Literal::Bool(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        let i: i64 = obj
            .extract()
            .map_err(|_| PyValueError::new_err("integer too large for a ClassAd (64 bits)"))?;
        return Ok(Expr::Lit(Literal::Int(i)));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Expr::Lit(Literal::Real(obj.extract()?)));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Expr::Lit(Literal::Str(s.to_str()?.to_string())));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(Expr::Ad(dict_to_ad(d.as_any())?));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for i in obj.try_iter()? {
            items.push(py_to_expr(&i?)?);
        }
        return Ok(Expr::List(Arc::new(items)));
    }
    // Any other mapping (a ClassAd subclass is handled above).
    if obj.hasattr("keys")? && obj.hasattr("__getitem__")? {
        return Ok(Expr::Ad(dict_to_ad(obj)?));
    }
    Err(PyTypeError::new_err(format!(
        "Unable to convert Python object of type {} to a ClassAd expression",
        obj.get_type().name()?
    )))
}

/// A mapping of `str` keys to values as an ad.
pub fn dict_to_ad(obj: &Bound<'_, PyAny>) -> PyResult<Ad> {
    let mut ad = Ad::new();
    for key in obj.call_method0("keys")?.try_iter()? {
        let key = key?;
        let name: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err("ClassAd keys must be strings"))?;
        let value = obj.get_item(&key)?;
        ad.insert_expr(&name, py_to_expr(&value)?);
    }
    Ok(ad)
}
