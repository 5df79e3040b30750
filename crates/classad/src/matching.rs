//! Matchmaking helpers: symmetric `Requirements`, `Rank`, and a per-conjunct analysis for
//! `glean q --analyze`.

use serde::Serialize;

use crate::ad::Ad;
use crate::ast::{BinOp, Expr};
use crate::eval::EvalContext;
use crate::unparse::unparse_expr;
use crate::value::Value;

/// The attribute holding a side's constraint.
pub const REQUIREMENTS: &str = "Requirements";
/// The attribute holding a side's preference.
pub const RANK: &str = "Rank";

fn is_true(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Real(r) => *r != 0.0,
        _ => false,
    }
}

fn requirements_hold(my: &Ad, target: &Ad, now_unix: i64) -> bool {
    let ctx = EvalContext::new(now_unix).with_my(my).with_target(target);
    my.contains(REQUIREMENTS) && is_true(&ctx.eval_attr(REQUIREMENTS))
}

/// True when both ads' `Requirements` evaluate to true, each with itself as `MY` and the other
/// as `TARGET` (non-zero numbers count as true; `undefined`, `error`, a missing `Requirements`
/// and anything else count as false).
pub fn matches(job: &Ad, machine: &Ad, now_unix: i64) -> bool {
    requirements_hold(job, machine, now_unix) && requirements_hold(machine, job, now_unix)
}

/// `my.Rank` evaluated against `target`, as a float; booleans count as 1/0, and a missing or
/// non-numeric rank (including `undefined`/`error`) is 0.0, as in HTCondor.
pub fn rank(my: &Ad, target: &Ad, now_unix: i64) -> f64 {
    let ctx = EvalContext::new(now_unix).with_my(my).with_target(target);
    match ctx.eval_attr(RANK) {
        v @ (Value::Int(_) | Value::Real(_) | Value::Bool(_)) => v.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// How one conjunct evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConjunctResult {
    /// Satisfied.
    True,
    /// Not satisfied.
    False,
    /// Refers to something missing.
    Undefined,
    /// A type error or similar.
    Error,
    /// Evaluated to a non-boolean value (number, string, ...); numbers are judged by `is_true`.
    Other,
}

/// One conjunct of a `Requirements` expression and its value against a target ad.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConjunctReport {
    /// The conjunct, printed in ClassAd syntax.
    pub expr: String,
    /// Its classification.
    pub result: ConjunctResult,
    /// Its value, printed in ClassAd syntax.
    pub value: String,
    /// Whether this conjunct prevents the match (false, undefined, error, or a false-y value).
    pub blocks_match: bool,
}

fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e.strip_parens() {
        Expr::Binary(BinOp::And, l, r) => {
            conjuncts(l, out);
            conjuncts(r, out);
        }
        other => out.push(other),
    }
}

/// Splits `requirements` at its top-level `&&` (looking through parentheses) and evaluates each
/// conjunct with `my` as `MY` and `target` as `TARGET`, reporting which ones fail.
pub fn analyze_requirements(
    requirements: &Expr,
    my: &Ad,
    target: &Ad,
    now_unix: i64,
) -> Vec<ConjunctReport> {
    let ctx = EvalContext::new(now_unix).with_my(my).with_target(target);
    let mut parts = Vec::new();
    conjuncts(requirements, &mut parts);
    parts
        .into_iter()
        .map(|c| {
            let v = ctx.eval(c);
            let result = match &v {
                Value::Bool(true) => ConjunctResult::True,
                Value::Bool(false) => ConjunctResult::False,
                Value::Undefined => ConjunctResult::Undefined,
                Value::Error => ConjunctResult::Error,
                _ => ConjunctResult::Other,
            };
            ConjunctReport {
                expr: unparse_expr(c).trim_start().to_string(),
                result,
                value: v.unparse(),
                blocks_match: !is_true(&v),
            }
        })
        .collect()
}
