//! Printing expressions and values in ClassAd syntax, in the compact form HTCondor's Python
//! bindings use for `repr()` (`classad2`, 25.x):
//!
//! * reals as `%.15E` (`3.000000000000000E+00`), zero as `0.0` / `-0.0`, and non-finite values as
//!   `real("INF")`, `real("-INF")`, `real("NaN")`;
//! * strings in double quotes with `\"`, `\\`, `\n`, `\t`, `\r`, `\b`, `\f` escapes and other
//!   control or non-ASCII bytes as three-digit octal escapes (`"é"` prints as `"\303\251"`);
//! * lists as `{ 1,2 }` (empty: `{  }`), ads as `[ a = 1; b = 2 ]` (empty: `[  ]`);
//! * binary operators spaced (`1 + 2`), `=?=`/`=!=` as `is`/`isnt`, unary operators with a
//!   leading space (` -x`), calls as `f(a,b)`. A `-` written directly before a number is a
//!   negative literal (`-1`); a unary minus applied to a number prints as ` - 1` (HTCondor prints
//!   ` -1`, which would read back as a literal).

use std::fmt::Write as _;

use crate::ad::{Ad, is_identifier};
use crate::ast::{Expr, Literal, Scope, UnOp};
use crate::parser::is_reserved;

/// Formats a real the way HTCondor does.
pub fn format_real(r: f64) -> String {
    if r.is_nan() {
        return "real(\"NaN\")".into();
    }
    if r.is_infinite() {
        return if r > 0.0 {
            "real(\"INF\")".into()
        } else {
            "real(\"-INF\")".into()
        };
    }
    if r == 0.0 {
        return if r.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust prints `3.000000000000000e0`; C prints `3.000000000000000E+00`.
    let s = format!("{r:.15e}");
    match s.split_once('e') {
        Some((mant, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            if digits.len() < 2 {
                format!("{mant}E{sign}0{digits}")
            } else {
                format!("{mant}E{sign}{digits}")
            }
        }
        None => s,
    }
}

/// Quotes a string with ClassAd escapes.
pub fn quote_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &b in s.as_bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            8 => out.push_str("\\b"),
            12 => out.push_str("\\f"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

fn attr_name(name: &str) -> String {
    if is_identifier(name) && !is_reserved(name) {
        name.to_string()
    } else {
        let mut s = String::from("'");
        for &b in name.as_bytes() {
            match b {
                b'\'' => s.push_str("\\'"),
                b'\\' => s.push_str("\\\\"),
                0x20..=0x7e => s.push(char::from(b)),
                _ => {
                    let _ = write!(s, "\\{b:03o}");
                }
            }
        }
        s.push('\'');
        s
    }
}

pub(crate) fn unparse_literal(l: &Literal) -> String {
    match l {
        Literal::Undefined => "undefined".into(),
        Literal::Error => "error".into(),
        Literal::Bool(b) => if *b { "true" } else { "false" }.into(),
        Literal::Int(i) => i.to_string(),
        Literal::Real(r) => format_real(*r),
        Literal::Str(s) => quote_string(s),
    }
}

/// Prints an ad as `[ a = 1; b = 2 ]`, attributes sorted by case-insensitive name as
/// HTCondor prints them.
pub fn unparse_ad(ad: &Ad) -> String {
    let mut s = String::from("[ ");
    let mut first = true;
    let mut attrs: Vec<(&str, &Expr)> = ad.iter().collect();
    attrs.sort_by_cached_key(|(n, _)| n.to_ascii_lowercase());
    for (n, e) in attrs {
        if !first {
            s.push_str("; ");
        }
        first = false;
        s.push_str(&attr_name(n));
        s.push_str(" = ");
        write_expr(&mut s, e);
    }
    s.push_str(" ]");
    s
}

/// Prints an expression in ClassAd syntax.
pub fn unparse_expr(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(&mut s, e);
    s
}

pub(crate) fn unparse_list(items: &[Expr]) -> String {
    let mut s = String::from("{ ");
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_expr(&mut s, e);
    }
    s.push_str(" }");
    s
}

fn write_expr(s: &mut String, e: &Expr) {
    match e {
        Expr::Lit(l) => s.push_str(&unparse_literal(l)),
        Expr::Attr {
            scope,
            scope_word,
            name,
        } => {
            match (scope, scope_word) {
                (Some(_), Some(w)) => {
                    s.push_str(w);
                    s.push('.');
                }
                (Some(Scope::My), None) => s.push_str("MY."),
                (Some(Scope::Target), None) => s.push_str("TARGET."),
                (None, _) => {}
            }
            s.push_str(&attr_name(name));
        }
        Expr::List(items) => s.push_str(&unparse_list(items)),
        Expr::Ad(ad) => s.push_str(&unparse_ad(ad)),
        Expr::Select(base, name) => {
            write_expr(s, base);
            // `1 .p` selects from the number 1; `1.p` would read as a
            // malformed real (found by the classad_parse_eval fuzz target).
            // Not after `real("INF")`, which reads back as a call.
            if matches!(**base, Expr::Lit(Literal::Int(_) | Literal::Real(_)))
                && s.ends_with(|c: char| c.is_ascii_digit())
            {
                s.push(' ');
            }
            s.push('.');
            s.push_str(&attr_name(name));
        }
        Expr::Index(base, idx) => {
            write_expr(s, base);
            s.push('[');
            write_expr(s, idx);
            s.push(']');
        }
        Expr::Unary(op, inner) => {
            s.push(' ');
            s.push(match op {
                UnOp::Neg => '-',
                UnOp::Plus => '+',
                UnOp::Not => '!',
                UnOp::BitNot => '~',
            });
            let at = s.len();
            write_expr(s, inner);
            // A digit right after `-` would read back as a negative literal: keep them apart.
            if *op == UnOp::Neg && s.as_bytes().get(at).is_some_and(|b| b.is_ascii_digit()) {
                s.insert(at, ' ');
            }
        }
        Expr::Binary(op, l, r) => {
            write_expr(s, l);
            s.push(' ');
            s.push_str(op.symbol());
            s.push(' ');
            write_expr(s, r);
        }
        Expr::Cond(c, a, b) => {
            write_expr(s, c);
            s.push_str(" ? ");
            write_expr(s, a);
            s.push_str(" : ");
            write_expr(s, b);
        }
        Expr::Call(name, args) => {
            s.push_str(name);
            s.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                write_expr(s, a);
            }
            s.push(')');
        }
        Expr::Paren(inner) => {
            s.push('(');
            write_expr(s, inner);
            s.push(')');
        }
    }
}
