//! Evaluated values.

use std::fmt;
use std::sync::Arc;

use crate::ad::Ad;
use crate::ast::{Expr, Literal};
use crate::unparse::{format_real, quote_string, unparse_ad, unparse_list};

/// Which top-level ad a scope frame belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    My = 0,
    Target = 1,
}

impl Side {
    pub(crate) fn other(self) -> Side {
        match self {
            Side::My => Side::Target,
            Side::Target => Side::My,
        }
    }
}

/// One ad in a chain of lexically enclosing ads.
pub(crate) struct Frame {
    pub(crate) ad: Ad,
    pub(crate) parent: Option<Arc<Frame>>,
    pub(crate) side: Side,
}

/// A list value: the (unevaluated) element expressions and the scope they are evaluated in.
#[derive(Clone)]
pub struct ListValue {
    pub(crate) items: Arc<Vec<Expr>>,
    pub(crate) scope: Option<Arc<Frame>>,
}

impl ListValue {
    /// The element expressions, unevaluated (HTCondor keeps list elements lazy).
    pub fn items(&self) -> &[Expr] {
        &self.items
    }
}

/// A nested-ad value, together with its enclosing scopes.
#[derive(Clone)]
pub struct AdValue {
    pub(crate) frame: Arc<Frame>,
}

impl AdValue {
    /// The ad's attributes, unevaluated.
    pub fn ad(&self) -> &Ad {
        &self.frame.ad
    }
}

/// The result of evaluating an expression.
#[derive(Clone)]
pub enum Value {
    /// `undefined`: a missing attribute, or an operation on one.
    Undefined,
    /// `error`: a type error, division by zero, and so on.
    Error,
    /// `true` / `false`.
    Bool(bool),
    /// 64-bit integer.
    Int(i64),
    /// Double-precision real.
    Real(f64),
    /// String.
    Str(String),
    /// List (elements are evaluated on demand).
    List(ListValue),
    /// Nested ad.
    Ad(AdValue),
}

impl Value {
    /// Prints the value in ClassAd syntax, as HTCondor's Python bindings do.
    pub fn unparse(&self) -> String {
        match self {
            Value::Undefined => "undefined".into(),
            Value::Error => "error".into(),
            Value::Bool(b) => if *b { "true" } else { "false" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Real(r) => format_real(*r),
            Value::Str(s) => quote_string(s),
            Value::List(l) => unparse_list(&l.items),
            Value::Ad(a) => unparse_ad(&a.frame.ad),
        }
    }

    /// True for `undefined`.
    pub fn is_undefined(&self) -> bool {
        matches!(self, Value::Undefined)
    }

    /// True for `error`.
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error)
    }

    /// `Some(b)` for a boolean value; numbers are not converted.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Numeric value of an integer, real or boolean (as 0/1).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(r) => Some(*r),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }

    /// The string, for a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A short type name (`"integer"`, `"string"`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Undefined => "undefined",
            Value::Error => "error",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Real(_) => "real",
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Ad(_) => "classad",
        }
    }

    /// Converts a scalar value back into a literal expression; lists and ads become literals of
    /// their (unevaluated) contents.
    pub fn to_expr(&self) -> Expr {
        match self {
            Value::Undefined => Expr::Lit(Literal::Undefined),
            Value::Error => Expr::Lit(Literal::Error),
            Value::Bool(b) => Expr::Lit(Literal::Bool(*b)),
            Value::Int(i) => Expr::Lit(Literal::Int(*i)),
            Value::Real(r) => Expr::Lit(Literal::Real(*r)),
            Value::Str(s) => Expr::Lit(Literal::Str(s.clone())),
            Value::List(l) => Expr::List(l.items.clone()),
            Value::Ad(a) => Expr::Ad(a.frame.ad.clone()),
        }
    }
}

impl From<&Literal> for Value {
    fn from(l: &Literal) -> Self {
        match l {
            Literal::Undefined => Value::Undefined,
            Literal::Error => Value::Error,
            Literal::Bool(b) => Value::Bool(*b),
            Literal::Int(i) => Value::Int(*i),
            Literal::Real(r) => Value::Real(*r),
            Literal::Str(s) => Value::Str(s.clone()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.unparse())
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Value({})", self.unparse())
    }
}
