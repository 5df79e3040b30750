//! `gleaner-classad`: a ClassAd-compatible expression language.
//!
//! The language and its semantics follow HTCondor's ClassAd library (checked against the
//! `classad2` Python module of HTCondor 25.x by the differential test in
//! `tests/differential.rs`): three-valued logic with `undefined` and `error`, non-strict
//! `&&`/`||`/`?:`, integer→real promotion, case-insensitive attribute names and string
//! comparison (`=?=` is case-sensitive), `MY.`/`TARGET.` scoping, lazy attribute evaluation with
//! cycle detection, lists, nested ads and the common built-in functions.
//!
//! ```
//! use gleaner_classad::{Ad, EvalContext, matches};
//! let job = Ad::parse("Requirements = TARGET.Memory >= 1024 && Arch == \"X86_64\"\nArch = \"X86_64\"").unwrap();
//! let slot = Ad::parse("[ Memory = 2048; Requirements = TARGET.Owner =!= \"mallory\" ]").unwrap();
//! assert!(matches(&job, &slot, 0));
//! ```
//!
//! # Deliberate deviations from HTCondor
//!
//! * `time()` returns [`EvalContext::now_unix`] (never the wall clock); `random()` is not
//!   provided (unknown function → `error`).
//! * Hexadecimal/octal-looking literals (`0x1F`) are a syntax error; HTCondor silently reads
//!   `0x1F` as `0`. Leading zeros are decimal, as in HTCondor (`010` is 10).
//! * `unparse(attr)` returns the compact one-line form; HTCondor 25 returns its multi-line
//!   "pretty" form for lists and ads.
//! * Strings are UTF-8: octal escapes that produce invalid UTF-8 are replaced by U+FFFD.
//! * A unary minus applied to a number prints as ` - 1` rather than HTCondor's ` -1`, so that
//!   printing and re-parsing gives back the same tree (values are unaffected).
//! * `stringListMember`, `stringListIMember`, `stringListSize`, `countMatches` and
//!   `evalInEachContext` are HTCondor daemon extensions that the pure ClassAd library (and thus
//!   the Python module `classad2` alone) does not register; they are implemented from the
//!   HTCondor manual and sources, not covered by the differential test (`countMatches` and
//!   `evalInEachContext` are checked against values HTCondor 25 gives in `tests/semantics.rs`).
//! * Unscoped names fall back to the `TARGET` ad when [`EvalContext::target_fallback`] is set
//!   (the default, and what [`matches()`] / [`rank()`] use), as HTCondor's matchmaker does; the
//!   Python `ExprTree.eval(scope, target)` used by the oracle does not fall back.
//! * Nesting deeper than [`parser::MAX_DEPTH`] is a parse error and evaluation deeper than
//!   [`eval::MAX_EVAL_DEPTH`] yields `error`, where HTCondor would recurse further (and, for
//!   some self-references through subscripts such as `[a = [p = A]["P"]; p = a + 1].p`,
//!   crashes with a stack overflow; here they are caught as cycles and give `undefined`).
//!
//! # Surprising HTCondor behaviours that are reproduced on purpose
//!
//! * A cyclic attribute reference (`x = x + 1`) evaluates to `undefined`, not `error`.
//! * A real result of +infinity is `error` (`1.0/0`, `1e308*10`), but -infinity and NaN are
//!   kept (`-1.0/0` is `real("-INF")`).
//! * `{1} =?= {1}` is `error`; `"abc" < "ABD"` compares case-insensitively.
//! * `pow` on integers is computed in floating point and truncated after adding 0.5, so
//!   `pow(-2, 3)` is `-7` and `pow(2, 63)` is `-9223372036854775808`.
//! * Shift counts are taken mod 64, except that `>>` on a negative number with a negative count
//!   leaves it unchanged and with a count of 64 or more gives `-1`; `>>>` of a negative number
//!   by 0 (mod 64) gives 0.
//! * `substr` offsets and lengths are truncated to 32 bits; `int()`/`floor()` of NaN or of
//!   out-of-range reals give `-9223372036854775808`; `int("12abc")` is 12 (C `strtod` prefix).
//! * `min`/`max`/`sum` of a one-element list return that element unchanged (`sum({true})` is
//!   `true`), while comparing several elements promotes booleans to integers.
//! * `floor(undefined)` and `pow(undefined, 1)` are `error`; `bool("yes")` is `undefined`;
//!   `unparse()` of an unbound name is `""`; `strcmp(error, undefined)` is `undefined` but
//!   `strcat(error, undefined)` is `error` and `regexp` checks `error` first.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ad;
pub mod ast;
mod builtins;
pub mod error;
pub mod eval;
mod lexer;
pub mod matching;
pub mod parser;
pub mod unparse;
pub mod value;

pub use ad::Ad;
pub use ast::{BinOp, Expr, Literal, Scope, UnOp};
pub use builtins::BUILTINS;
pub use error::{ClassAdError, ParseError};
pub use eval::EvalContext;
pub use matching::{ConjunctReport, ConjunctResult, analyze_requirements, matches, rank};
pub use parser::parse_expr;
pub use unparse::{
    format_real, format_real_short, old_syntax, pretty_ad, pretty_expr, quote_string, unparse_expr,
    unparse_expr_short_reals,
};
pub use value::Value;

/// Library entry point for `glean classad eval EXPR [--my FILE] [--target FILE]`.
///
/// Parses `expr`, evaluates it with `my` as `MY` and `target` as `TARGET` (unscoped names fall
/// back to `target`, as in matchmaking) and `time()` = `now_unix`, and returns the value printed
/// in ClassAd syntax (e.g. `3`, `3.000000000000000E+00`, `"text"`, `undefined`, `{ 1,2 }`).
pub fn eval_command(
    expr: &str,
    my: Option<&Ad>,
    target: Option<&Ad>,
    now_unix: i64,
) -> Result<String, ClassAdError> {
    let e = parse_expr(expr)?;
    let mut ctx = EvalContext::new(now_unix);
    ctx.my = my.cloned();
    ctx.target = target.cloned();
    Ok(ctx.eval(&e).unparse())
}
