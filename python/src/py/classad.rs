//! `classad2`'s classes and functions: `ExprTree`, the core of `ClassAd`
//! (the Python class adds the mapping mixins), `quote`, `unquote` and the
//! parsers of texts with several ads.

use super::convert::{dict_to_ad, expr_to_py, new_classad, py_to_expr, value_to_py};
use super::errors::ClassAdException;
use crate::adtext::{self, Syntax};
use crate::refs;
use gleaner_classad::{
    Ad, EvalContext, Expr, Literal, old_syntax, parse_expr, pretty_ad, pretty_expr, quote_string,
    unparse_expr,
};
use pyo3::IntoPyObjectExt;
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use std::sync::Arc;

/// Seconds since the epoch, for `time()` in expressions.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn parse_failure(what: &str, e: impl std::fmt::Display) -> PyErr {
    ClassAdException::new_err(format!("Unable to parse string into a {what}. ({e})"))
}

/// A ClassAd expression (`classad2.ExprTree`).
#[pyclass(module = "classad2", name = "ExprTree", frozen)]
pub struct ExprTree {
    pub expr: Arc<Expr>,
}

impl ExprTree {
    pub fn from_expr(expr: Expr) -> Self {
        ExprTree {
            expr: Arc::new(expr),
        }
    }
}

/// Evaluates `e` with `scope` as MY and `target` as TARGET, as
/// `ExprTree.eval` does (an unscoped name not in the scope is looked up
/// in the target, as in a match).
fn eval_in(e: &Expr, scope: Option<&Ad>, target: Option<&Ad>) -> gleaner_classad::Value {
    let mut ctx = EvalContext::new(now_unix());
    ctx.my = scope.cloned();
    ctx.target = target.cloned();
    ctx.eval(e)
}

fn ad_of(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Ad>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match o.cast::<ClassAdCore>() {
            Ok(a) => Ok(Some(a.borrow().ad.clone())),
            Err(_) => Err(PyTypeError::new_err("scope and target must be ClassAds")),
        },
    }
}

#[pymethods]
impl ExprTree {
    #[new]
    #[pyo3(signature = (expr = None))]
    fn new(expr: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(expr) = expr.filter(|e| !e.is_none()) else {
            return Ok(ExprTree::from_expr(Expr::Lit(Literal::Undefined)));
        };
        if let Ok(e) = expr.cast::<ExprTree>() {
            return Ok(ExprTree {
                expr: e.get().expr.clone(),
            });
        }
        let text: String = expr
            .extract()
            .map_err(|_| PyTypeError::new_err("ExprTree() takes a string or an ExprTree"))?;
        parse_expr(&text)
            .map(ExprTree::from_expr)
            .map_err(|e| parse_failure("ClassAd", e))
    }

    fn __str__(&self) -> String {
        pretty_expr(&self.expr)
    }

    fn __repr__(&self) -> String {
        unparse_expr(&self.expr)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<ExprTree>()
            .is_ok_and(|o| *o.get().expr == *self.expr)
    }

    #[classattr]
    const __hash__: Option<Py<PyAny>> = None;

    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<(Py<PyAny>, (String,))> {
        let cls = slf.get_type().into_any().unbind();
        Ok((cls, (unparse_expr(&slf.get().expr),)))
    }

    /// The expression's value with `scope` as MY and `target` as TARGET.
    #[pyo3(signature = (scope = None, target = None))]
    fn eval(
        &self,
        py: Python<'_>,
        scope: Option<&Bound<'_, PyAny>>,
        target: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (scope, target) = (ad_of(scope)?, ad_of(target)?);
        value_to_py(py, &eval_in(&self.expr, scope.as_ref(), target.as_ref()))
    }

    /// The value as an expression (`ExprTree`).
    #[pyo3(signature = (scope = None, target = None))]
    fn simplify(
        &self,
        scope: Option<&Bound<'_, PyAny>>,
        target: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ExprTree> {
        let (scope, target) = (ad_of(scope)?, ad_of(target)?);
        let v = eval_in(&self.expr, scope.as_ref(), target.as_ref());
        Ok(ExprTree::from_expr(v.to_expr()))
    }
}

/// The state of a `classad2.ClassAd`: the Python class derives from this
/// and from `collections.abc.MutableMapping`.
#[pyclass(module = "classad2", name = "_ClassAdCore", subclass)]
pub struct ClassAdCore {
    pub ad: Ad,
}

fn key_error(key: &str) -> PyErr {
    PyKeyError::new_err(key.to_string())
}

#[pymethods]
impl ClassAdCore {
    #[new]
    #[pyo3(signature = (input = None))]
    fn new(input: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let ad = match input.filter(|i| !i.is_none()) {
            None => Ad::new(),
            Some(i) => {
                if let Ok(s) = i.cast::<PyString>() {
                    let text = s.to_str()?;
                    Ad::parse_new(text).map_err(|e| parse_failure("ClassAd", e))?
                } else if let Ok(a) = i.cast::<ClassAdCore>() {
                    a.borrow().ad.clone()
                } else if i.hasattr("keys")? {
                    dict_to_ad(i)?
                } else {
                    return Err(PyTypeError::new_err(
                        "ClassAd() takes a string in the new syntax or a dict",
                    ));
                }
            }
        };
        Ok(ClassAdCore { ad })
    }

    fn __getitem__(&self, py: Python<'_>, key: &str) -> PyResult<Py<PyAny>> {
        match self.ad.get(key) {
            Some(e) => expr_to_py(py, e),
            None => Err(key_error(key)),
        }
    }

    fn __setitem__(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err("ClassAd keys must be strings"))?;
        let e = py_to_expr(value)?;
        self.ad.insert_expr(&key, e);
        Ok(())
    }

    fn __delitem__(&mut self, key: &str) -> PyResult<()> {
        match self.ad.remove(key) {
            Some(_) => Ok(()),
            None => Err(key_error(key)),
        }
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> bool {
        key.extract::<String>().is_ok_and(|k| self.ad.contains(&k))
    }

    fn __len__(&self) -> usize {
        self.ad.len()
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let keys: Vec<&str> = self.ad.iter().map(|(n, _)| n).collect();
        let list = PyList::new(py, keys)?;
        Ok(list.try_iter()?.into_any().unbind())
    }

    fn __str__(&self) -> String {
        pretty_ad(&self.ad)
    }

    fn __repr__(&self) -> String {
        gleaner_classad::ad::Ad::to_string(&self.ad)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<ClassAdCore>()
            .is_ok_and(|o| o.borrow().ad == self.ad)
    }

    fn __ne__(&self, other: &Bound<'_, PyAny>) -> bool {
        !self.__eq__(other)
    }

    #[classattr]
    const __hash__: Option<Py<PyAny>> = None;

    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<(Py<PyAny>, (String,))> {
        let cls = slf.get_type().into_any().unbind();
        Ok((cls, (slf.borrow().ad.to_string(),)))
    }

    /// The value of attribute `attr` (KeyError when it is not there).
    fn eval(&self, py: Python<'_>, attr: &str) -> PyResult<Py<PyAny>> {
        if !self.ad.contains(attr) {
            return Err(key_error(attr));
        }
        let ctx = EvalContext::new(now_unix())
            .with_my(&self.ad)
            .with_target_fallback(false);
        value_to_py(py, &ctx.eval_attr(attr))
    }

    /// The expression bound to `attr`, always as an `ExprTree`.
    fn lookup(&self, attr: &str) -> PyResult<ExprTree> {
        match self.ad.get(attr) {
            Some(e) => Ok(ExprTree::from_expr(e.clone())),
            None => Err(key_error(attr)),
        }
    }

    #[pyo3(name = "printOld")]
    fn print_old(&self) -> String {
        old_syntax(&self.ad)
    }

    #[pyo3(name = "formatOld")]
    fn format_old(&self) -> String {
        old_syntax(&self.ad)
    }

    #[pyo3(name = "printJson")]
    fn print_json(&self) -> String {
        adtext::to_json(&self.ad)
    }

    #[pyo3(name = "formatJson")]
    fn format_json(&self) -> String {
        adtext::to_json(&self.ad)
    }

    /// True when this ad's `Requirements` hold against `ad`.
    fn matches(&self, ad: &Bound<'_, PyAny>) -> PyResult<bool> {
        let other = ad_of(Some(ad))?.unwrap_or_default();
        Ok(requirements_hold(&self.ad, &other))
    }

    /// True when both ads' `Requirements` hold against each other.
    #[pyo3(name = "symmetricMatch")]
    fn symmetric_match(&self, ad: &Bound<'_, PyAny>) -> PyResult<bool> {
        let other = ad_of(Some(ad))?.unwrap_or_default();
        Ok(gleaner_classad::matches(&self.ad, &other, now_unix()))
    }

    /// Attributes `expr` needs from outside this ad.
    #[pyo3(name = "externalRefs")]
    fn external_refs(&self, expr: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        Ok(refs::external_internal(&self.ad, &expr_arg(expr)?).0)
    }

    /// Attributes of this ad `expr` uses.
    #[pyo3(name = "internalRefs")]
    fn internal_refs(&self, expr: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        Ok(refs::external_internal(&self.ad, &expr_arg(expr)?).1)
    }

    /// `expr` with what this ad decides evaluated.
    fn flatten(&self, py: Python<'_>, expr: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let flat = refs::flatten(&self.ad, &expr_arg(expr)?, now_unix());
        match flat {
            Expr::Lit(l) => expr_to_py(py, &Expr::Lit(l)),
            other => ExprTree::from_expr(other).into_py_any(py),
        }
    }
}

fn requirements_hold(my: &Ad, target: &Ad) -> bool {
    let ctx = EvalContext::new(now_unix()).with_my(my).with_target(target);
    match ctx.eval_attr("Requirements") {
        gleaner_classad::Value::Bool(b) => b,
        gleaner_classad::Value::Int(i) => i != 0,
        gleaner_classad::Value::Real(r) => r != 0.0,
        _ => false,
    }
}

/// An `ExprTree` argument, or a string parsed as one.
fn expr_arg(obj: &Bound<'_, PyAny>) -> PyResult<Expr> {
    if let Ok(e) = obj.cast::<ExprTree>() {
        return Ok((*e.get().expr).clone());
    }
    let text: String = obj
        .extract()
        .map_err(|_| PyTypeError::new_err("expected an ExprTree or a string"))?;
    parse_expr(&text).map_err(|e| parse_failure("ClassAd", e))
}

/// `classad2.quote`: the string as a ClassAd string literal.
#[pyfunction]
fn quote(input: &str) -> String {
    quote_string(input)
}

/// `classad2.unquote`: the string a ClassAd string literal stands for.
#[pyfunction]
fn unquote(input: &str) -> PyResult<String> {
    match parse_expr(input) {
        Ok(Expr::Lit(Literal::Str(s))) => Ok(s),
        _ => Err(PyValueError::new_err(
            "String does not parse to a ClassAd literal",
        )),
    }
}

fn syntax(code: i64) -> PyResult<Syntax> {
    Syntax::from_code(code).map_err(PyValueError::new_err)
}

/// Every ad in `text` (`classad2.parseAds` over a string).
#[pyfunction]
fn _parse_ads(py: Python<'_>, text: &str, parser: i64) -> PyResult<Vec<Py<PyAny>>> {
    let ads = adtext::parse_ads(text, syntax(parser)?).map_err(|e| {
        PyValueError::new_err(format!("Unable to parse input stream into a ClassAd: {e}"))
    })?;
    ads.into_iter().map(|a| new_classad(py, a)).collect()
}

/// The ads of `text` merged into one (`classad2.parseOne`).
#[pyfunction]
fn _parse_one(py: Python<'_>, text: &str, parser: i64) -> PyResult<Py<PyAny>> {
    let ad = adtext::parse_one(text, syntax(parser)?)
        .map_err(|e| ClassAdException::new_err(format!("Unable to parse input: {e}")))?;
    new_classad(py, ad)
}

/// `classad2.version()`.
#[pyfunction]
fn _classad_version() -> String {
    crate::version::htcondor_version()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_classad_version, m)?)?;
    m.add_class::<ExprTree>()?;
    m.add_class::<ClassAdCore>()?;
    m.add_function(wrap_pyfunction!(quote, m)?)?;
    m.add_function(wrap_pyfunction!(unquote, m)?)?;
    m.add_function(wrap_pyfunction!(_parse_ads, m)?)?;
    m.add_function(wrap_pyfunction!(_parse_one, m)?)?;
    Ok(())
}
