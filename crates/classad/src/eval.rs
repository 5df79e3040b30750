//! Evaluation with HTCondor semantics.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::ad::Ad;
use crate::ast::{BinOp, Expr, Scope, UnOp};
use crate::builtins;
use crate::value::{AdValue, Frame, ListValue, Side, Value};

/// Maximum evaluation nesting (expression depth plus attribute indirections); beyond it the
/// result is `error` instead of a stack overflow.
pub const MAX_EVAL_DEPTH: usize = 256;

/// Everything an evaluation may depend on besides the expression itself.
#[derive(Clone, Debug, Default)]
pub struct EvalContext {
    /// The ad the expression belongs to (`MY.`); unscoped names are looked up here first.
    pub my: Option<Ad>,
    /// The other ad of a match (`TARGET.`).
    pub target: Option<Ad>,
    /// The value of `time()` (seconds since the Unix epoch); the library never reads the clock.
    pub now_unix: i64,
    /// When true (matchmaking), an unscoped name that is not found in `my` (or its enclosing
    /// ads) is looked up in `target`, as HTCondor's match ads do. HTCondor's Python
    /// `ExprTree.eval(scope, target)` does *not* do this, so the differential test turns it off.
    pub target_fallback: bool,
}

impl EvalContext {
    /// A context with no ads, `time()` = `now_unix`, and target fallback on.
    pub fn new(now_unix: i64) -> Self {
        EvalContext {
            my: None,
            target: None,
            now_unix,
            target_fallback: true,
        }
    }

    /// Sets the `MY` ad.
    pub fn with_my(mut self, ad: &Ad) -> Self {
        self.my = Some(ad.clone());
        self
    }

    /// Sets the `TARGET` ad.
    pub fn with_target(mut self, ad: &Ad) -> Self {
        self.target = Some(ad.clone());
        self
    }

    /// Turns the unscoped-name fallback to `target` on or off.
    pub fn with_target_fallback(mut self, on: bool) -> Self {
        self.target_fallback = on;
        self
    }

    /// The same context seen from the other ad (MY and TARGET swapped).
    pub fn swapped(&self) -> Self {
        EvalContext {
            my: self.target.clone(),
            target: self.my.clone(),
            now_unix: self.now_unix,
            target_fallback: self.target_fallback,
        }
    }

    /// Evaluates `expr` as if it were an attribute of `my`.
    pub fn eval(&self, expr: &Expr) -> Value {
        let mut ev = Evaluator::new(self);
        let root = ev.roots[Side::My as usize].clone();
        ev.eval(expr, &root)
    }

    /// Evaluates the attribute `name` of `my` (`undefined` if absent).
    pub fn eval_attr(&self, name: &str) -> Value {
        let mut ev = Evaluator::new(self);
        let root = ev.roots[Side::My as usize].clone();
        ev.lookup_in(&root, name)
    }
}

/// Three-valued truth used by the logical operators.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tv {
    T,
    F,
    U,
    E,
}

pub(crate) fn truth(v: &Value) -> Tv {
    match v {
        Value::Bool(true) => Tv::T,
        Value::Bool(false) => Tv::F,
        Value::Int(i) => {
            if *i != 0 {
                Tv::T
            } else {
                Tv::F
            }
        }
        Value::Real(r) => {
            if *r != 0.0 {
                Tv::T
            } else {
                Tv::F
            }
        }
        Value::Undefined => Tv::U,
        _ => Tv::E,
    }
}

fn tv_value(t: Tv) -> Value {
    match t {
        Tv::T => Value::Bool(true),
        Tv::F => Value::Bool(false),
        Tv::U => Value::Undefined,
        Tv::E => Value::Error,
    }
}

pub(crate) struct Evaluator<'c> {
    pub(crate) ctx: &'c EvalContext,
    pub(crate) roots: [Arc<Frame>; 2],
    /// Attributes being evaluated: (ad, position).
    active: Vec<(usize, usize)>,
    depth: usize,
}

impl<'c> Evaluator<'c> {
    pub(crate) fn new(ctx: &'c EvalContext) -> Self {
        let mk = |ad: &Option<Ad>, side| {
            Arc::new(Frame {
                ad: ad.clone().unwrap_or_default(),
                parent: None,
                side,
            })
        };
        Evaluator {
            ctx,
            roots: [mk(&ctx.my, Side::My), mk(&ctx.target, Side::Target)],
            active: Vec::new(),
            depth: 0,
        }
    }

    pub(crate) fn eval(&mut self, e: &Expr, f: &Arc<Frame>) -> Value {
        if self.depth >= MAX_EVAL_DEPTH {
            return Value::Error;
        }
        self.depth += 1;
        let v = self.eval_inner(e, f);
        self.depth -= 1;
        v
    }

    fn eval_inner(&mut self, e: &Expr, f: &Arc<Frame>) -> Value {
        match e {
            Expr::Lit(l) => Value::from(l),
            Expr::Paren(inner) => self.eval(inner, f),
            Expr::Attr {
                scope: None, name, ..
            } => self.lookup_chain(f, name),
            Expr::Attr {
                scope: Some(Scope::My),
                name,
                ..
            } => {
                let root = self.roots[f.side as usize].clone();
                self.lookup_in(&root, name)
            }
            Expr::Attr {
                scope: Some(Scope::Target),
                name,
                ..
            } => {
                let root = self.roots[f.side.other() as usize].clone();
                self.lookup_in(&root, name)
            }
            Expr::List(items) => Value::List(ListValue {
                items: items.clone(),
                scope: Some(f.clone()),
            }),
            Expr::Ad(ad) => Value::Ad(AdValue {
                frame: Arc::new(Frame {
                    ad: ad.clone(),
                    parent: Some(f.clone()),
                    side: f.side,
                }),
            }),
            Expr::Select(base, name) => {
                let b = self.eval(base, f);
                self.select(b, name, f)
            }
            Expr::Index(base, idx) => {
                let b = self.eval(base, f);
                let i = self.eval(idx, f);
                self.index(b, i)
            }
            Expr::Unary(op, inner) => {
                let v = self.eval(inner, f);
                unary(*op, v)
            }
            Expr::Binary(BinOp::And, l, r) => {
                let lt = truth(&self.eval(l, f));
                match lt {
                    Tv::F => Value::Bool(false),
                    Tv::E => Value::Error,
                    Tv::T => tv_value(truth(&self.eval(r, f))),
                    Tv::U => match truth(&self.eval(r, f)) {
                        Tv::F => Value::Bool(false),
                        Tv::E => Value::Error,
                        Tv::T | Tv::U => Value::Undefined,
                    },
                }
            }
            Expr::Binary(BinOp::Or, l, r) => {
                let lt = truth(&self.eval(l, f));
                match lt {
                    Tv::T => Value::Bool(true),
                    Tv::E => Value::Error,
                    Tv::F => tv_value(truth(&self.eval(r, f))),
                    Tv::U => match truth(&self.eval(r, f)) {
                        Tv::T => Value::Bool(true),
                        Tv::E => Value::Error,
                        Tv::F | Tv::U => Value::Undefined,
                    },
                }
            }
            Expr::Binary(BinOp::Elvis, l, r) => match self.eval(l, f) {
                Value::Undefined => self.eval(r, f),
                v => v,
            },
            Expr::Binary(op, l, r) => {
                let a = self.eval(l, f);
                let b = self.eval(r, f);
                binary(*op, &a, &b)
            }
            Expr::Cond(c, a, b) => match truth(&self.eval(c, f)) {
                Tv::T => self.eval(a, f),
                Tv::F => self.eval(b, f),
                Tv::U => Value::Undefined,
                Tv::E => Value::Error,
            },
            Expr::Call(name, args) => builtins::call(self, name, args, f),
        }
    }

    /// Unscoped lookup: the frame, then its enclosing ads, then (matchmaking) the other ad.
    pub(crate) fn lookup_chain(&mut self, f: &Arc<Frame>, name: &str) -> Value {
        let mut cur = Some(f.clone());
        while let Some(fr) = cur {
            if let Some((at, e)) = fr.ad.get_at(name) {
                return self.eval_bound(&fr, at, e);
            }
            cur = fr.parent.clone();
        }
        if self.ctx.target_fallback {
            let other = self.roots[f.side.other() as usize].clone();
            if let Some((at, e)) = other.ad.get_at(name) {
                return self.eval_bound(&other, at, e);
            }
        }
        Value::Undefined
    }

    /// Lookup in exactly one ad.
    pub(crate) fn lookup_in(&mut self, fr: &Arc<Frame>, name: &str) -> Value {
        match fr.ad.get_at(name) {
            Some((at, e)) => self.eval_bound(fr, at, e),
            None => Value::Undefined,
        }
    }

    /// Evaluates the expression of the attribute at position `at` of the
    /// frame's ad, detecting reference cycles. As in HTCondor, a cyclic
    /// reference evaluates to `undefined`. An attribute is known by its ad
    /// and position, so a lookup allocates nothing.
    fn eval_bound(&mut self, fr: &Arc<Frame>, at: usize, e: &Expr) -> Value {
        let key = (fr.ad.id(), at);
        if self.active.contains(&key) {
            return Value::Undefined;
        }
        self.active.push(key);
        let v = self.eval(e, fr);
        self.active.pop();
        v
    }

    /// Evaluates a list element in the list's scope.
    pub(crate) fn eval_item(&mut self, l: &ListValue, e: &Expr) -> Value {
        let scope = l
            .scope
            .clone()
            .unwrap_or_else(|| self.roots[Side::My as usize].clone());
        self.eval(e, &scope)
    }

    /// Evaluates every element of a list in the caller's scope `f`. HTCondor's list functions
    /// (`member`, `sum`, ...) and selection over a list evaluate elements where the list is
    /// *used*, whereas subscripting evaluates the element where the list was *written*.
    pub(crate) fn list_values_in(&mut self, l: &ListValue, f: &Arc<Frame>) -> Vec<Value> {
        let items = l.items.clone();
        items.iter().map(|e| self.eval(e, f)).collect()
    }

    fn select(&mut self, b: Value, name: &str, f: &Arc<Frame>) -> Value {
        match b {
            Value::Ad(a) => self.lookup_chain(&a.frame, name),
            Value::Undefined => Value::Undefined,
            Value::List(l) => {
                let items = l.items.clone();
                let out: Vec<Expr> = items
                    .iter()
                    .map(|e| {
                        // Elements are evaluated where the list is used, except that an ad
                        // literal keeps the scope it was written in as its parent.
                        let v = match (e.strip_parens(), &l.scope) {
                            (Expr::Ad(_), Some(home)) => self.eval(e, home),
                            _ => self.eval(e, f),
                        };
                        match v {
                            Value::Ad(a) => self.lookup_chain(&a.frame, name),
                            Value::Undefined => Value::Undefined,
                            _ => Value::Error,
                        }
                        .to_expr()
                    })
                    .collect();
                Value::List(ListValue {
                    items: Arc::new(out),
                    scope: None,
                })
            }
            _ => Value::Error,
        }
    }

    fn index(&mut self, b: Value, i: Value) -> Value {
        match (&b, &i) {
            (Value::Error, _) | (_, Value::Error) => Value::Error,
            (Value::Undefined, _) | (_, Value::Undefined) => Value::Undefined,
            (Value::List(l), Value::Int(n)) => {
                match usize::try_from(*n).ok().and_then(|k| l.items.get(k)) {
                    Some(e) => self.eval_item(l, e),
                    None => Value::Error,
                }
            }
            (Value::Ad(a), Value::Str(s)) => self.lookup_chain(&a.frame, s),
            _ => Value::Error,
        }
    }
}

fn unary(op: UnOp, v: Value) -> Value {
    match v {
        Value::Undefined => return Value::Undefined,
        Value::Error => return Value::Error,
        _ => {}
    }
    match (op, v) {
        (UnOp::Neg, Value::Int(i)) => Value::Int(i.wrapping_neg()),
        (UnOp::Neg, Value::Real(r)) => Value::Real(-r),
        (UnOp::Plus, v @ (Value::Int(_) | Value::Real(_))) => v,
        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
        (UnOp::Not, Value::Int(i)) => Value::Bool(i == 0),
        (UnOp::Not, Value::Real(r)) => Value::Bool(r == 0.0),
        (UnOp::BitNot, Value::Int(i)) => Value::Int(!i),
        _ => Value::Error,
    }
}

/// A number after boolean promotion.
#[derive(Clone, Copy)]
pub(crate) enum Num {
    I(i64),
    R(f64),
}

pub(crate) fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Int(i) => Some(Num::I(*i)),
        Value::Real(r) => Some(Num::R(*r)),
        Value::Bool(b) => Some(Num::I(i64::from(*b))),
        _ => None,
    }
}

impl Num {
    pub(crate) fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::R(r) => r,
        }
    }
}

/// HTCondor reports a real result of +infinity as `error` (but lets -infinity and NaN through).
fn real_result(r: f64) -> Value {
    if r == f64::INFINITY {
        Value::Error
    } else {
        Value::Real(r)
    }
}

pub(crate) fn arith(op: BinOp, a: &Value, b: &Value) -> Value {
    let (Some(x), Some(y)) = (num(a), num(b)) else {
        return Value::Error;
    };
    match (x, y) {
        (Num::I(x), Num::I(y)) => match op {
            BinOp::Add => Value::Int(x.wrapping_add(y)),
            BinOp::Sub => Value::Int(x.wrapping_sub(y)),
            BinOp::Mul => Value::Int(x.wrapping_mul(y)),
            BinOp::Div => {
                if y == 0 {
                    Value::Error
                } else if x == i64::MIN && y == -1 {
                    Value::Int(i64::MAX)
                } else {
                    Value::Int(x / y)
                }
            }
            BinOp::Mod => {
                if y == 0 {
                    Value::Error
                } else {
                    Value::Int(x.checked_rem(y).unwrap_or(0))
                }
            }
            _ => Value::Error,
        },
        (x, y) => {
            let (x, y) = (x.f(), y.f());
            match op {
                BinOp::Add => real_result(x + y),
                BinOp::Sub => real_result(x - y),
                BinOp::Mul => real_result(x * y),
                BinOp::Div => real_result(x / y),
                _ => Value::Error,
            }
        }
    }
}

/// Case-insensitive (ASCII) string ordering, like `strcasecmp`.
pub(crate) fn cmp_ci(a: &str, b: &str) -> Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

fn compare(op: BinOp, a: &Value, b: &Value) -> Value {
    let ord = match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some(cmp_ci(x, y)),
        _ => match (num(a), num(b)) {
            (Some(Num::I(x)), Some(Num::I(y))) => Some(x.cmp(&y)),
            (Some(x), Some(y)) => match x.f().partial_cmp(&y.f()) {
                Some(o) => Some(o),
                None => {
                    // NaN: every ordered comparison is false, != is true.
                    return Value::Bool(op == BinOp::Ne);
                }
            },
            _ => return Value::Error,
        },
    };
    let Some(o) = ord else {
        return Value::Error;
    };
    Value::Bool(match op {
        BinOp::Lt => o == Ordering::Less,
        BinOp::Le => o != Ordering::Greater,
        BinOp::Gt => o == Ordering::Greater,
        BinOp::Ge => o != Ordering::Less,
        BinOp::Eq => o == Ordering::Equal,
        BinOp::Ne => o != Ordering::Equal,
        _ => return Value::Error,
    })
}

/// `=?=`: same type and same value; never undefined. Comparing two lists or two ads is `error`.
pub(crate) fn identical(a: &Value, b: &Value) -> Value {
    Value::Bool(match (a, b) {
        (Value::Undefined, Value::Undefined) | (Value::Error, Value::Error) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Real(x), Value::Real(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(_), Value::List(_)) | (Value::Ad(_), Value::Ad(_)) => return Value::Error,
        _ => false,
    })
}

/// Strict binary operators (everything except `&&` and `||`).
pub(crate) fn binary(op: BinOp, a: &Value, b: &Value) -> Value {
    match op {
        BinOp::Elvis if a.is_undefined() => return b.clone(),
        BinOp::Elvis => return a.clone(),
        BinOp::Is => return identical(a, b),
        BinOp::Isnt => {
            return match identical(a, b) {
                Value::Bool(x) => Value::Bool(!x),
                other => other,
            };
        }
        _ => {}
    }
    if a.is_error() || b.is_error() {
        return Value::Error;
    }
    if a.is_undefined() || b.is_undefined() {
        return Value::Undefined;
    }
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => arith(op, a, b),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => compare(op, a, b),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr | BinOp::UShr => {
            let (Value::Int(x), Value::Int(y)) = (a, b) else {
                return Value::Error;
            };
            let (x, y) = (*x, *y);
            // Shift counts use the low six bits, as x86 does.
            let s = (y & 63) as u32;
            Value::Int(match op {
                BinOp::BitAnd => x & y,
                BinOp::BitOr => x | y,
                BinOp::BitXor => x ^ y,
                BinOp::Shl => x.wrapping_shl(s),
                // Observed HTCondor 25 behaviour for a negative left operand: a negative count
                // leaves it unchanged and a count of 64 or more gives -1 (no mod-64 wrap).
                BinOp::Shr if x < 0 => {
                    if y < 0 {
                        x
                    } else if y >= 64 {
                        -1
                    } else {
                        x >> y
                    }
                }
                BinOp::Shr => x.wrapping_shr(s),
                // HTCondor's `>>>` masks an arithmetic shift with `~(-1 << (64 - s))`, with the
                // shift count taken mod 64, so a negative value shifted by 0 (mod 64) gives 0.
                _ => {
                    if x < 0 {
                        x.wrapping_shr(s) & !(-1i64).wrapping_shl(64 - s)
                    } else {
                        x.wrapping_shr(s)
                    }
                }
            })
        }
        BinOp::And | BinOp::Or | BinOp::Is | BinOp::Isnt | BinOp::Elvis => Value::Error,
    }
}
