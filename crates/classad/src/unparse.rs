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

/// How reals are written and whether lists and ads are laid out on lines.
#[derive(Clone, Copy)]
struct Style {
    /// `%.15G` with a `.0` kept (`printOld`, JSON) instead of `%.15E`.
    short_reals: bool,
    /// HTCondor's multi-line layout (`str()` of a `classad2.ClassAd`) at this
    /// indentation; `None` prints on one line.
    indent: Option<usize>,
}

const COMPACT: Style = Style {
    short_reals: false,
    indent: None,
};

/// Prints an ad as `[ a = 1; b = 2 ]`, attributes sorted by case-insensitive name as
/// HTCondor prints them.
pub fn unparse_ad(ad: &Ad) -> String {
    let mut s = String::new();
    write_ad(&mut s, ad, COMPACT);
    s
}

/// Attributes sorted by case-insensitive name, as HTCondor prints them.
fn sorted_attrs(ad: &Ad) -> Vec<(&str, &Expr)> {
    let mut attrs: Vec<(&str, &Expr)> = ad.iter().collect();
    attrs.sort_by_cached_key(|(n, _)| n.to_ascii_lowercase());
    attrs
}

fn pad(s: &mut String, n: usize) {
    s.push('\n');
    s.extend(std::iter::repeat_n(' ', n));
}

fn write_ad(s: &mut String, ad: &Ad, style: Style) {
    let attrs = sorted_attrs(ad);
    match style.indent {
        None => {
            s.push_str("[ ");
            for (i, (n, e)) in attrs.into_iter().enumerate() {
                if i > 0 {
                    s.push_str("; ");
                }
                s.push_str(&attr_name(n));
                s.push_str(" = ");
                write_styled(s, e, style);
            }
            s.push_str(" ]");
        }
        Some(at) => {
            // HTCondor's layout: the bracket 4 deeper than its context,
            // each attribute 8 deeper, separated by "; ".
            pad(s, at + 4);
            s.push('[');
            let inner = Style {
                indent: Some(at + 8),
                ..style
            };
            for (i, (n, e)) in attrs.into_iter().enumerate() {
                if i > 0 {
                    s.push_str("; ");
                }
                pad(s, at + 8);
                s.push_str(&attr_name(n));
                s.push_str(" = ");
                write_styled(s, e, inner);
            }
            pad(s, at + 4);
            s.push(']');
        }
    }
}

/// Prints an expression in ClassAd syntax.
pub fn unparse_expr(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(&mut s, e);
    s
}

/// Prints an ad in HTCondor's multi-line layout, as `str()` of a
/// `classad2.ClassAd` does: a leading newline, the bracket indented by 4,
/// each attribute by 8, lists and nested ads laid out below their name.
pub fn pretty_ad(ad: &Ad) -> String {
    let mut s = String::new();
    write_ad(
        &mut s,
        ad,
        Style {
            short_reals: false,
            indent: Some(0),
        },
    );
    s
}

/// Prints an expression with its lists and ads in HTCondor's multi-line
/// layout, as `str()` of a `classad2.ExprTree` does (`repr()` is
/// [`unparse_expr`]'s one line).
pub fn pretty_expr(e: &Expr) -> String {
    let mut s = String::new();
    write_styled(
        &mut s,
        e,
        Style {
            short_reals: false,
            indent: Some(0),
        },
    );
    s
}

/// Prints an ad in the old syntax, one `name = expr` line each (sorted),
/// reals written short (`2.5`, `1E+20`), as `classad2.ClassAd.printOld`.
pub fn old_syntax(ad: &Ad) -> String {
    if ad.is_empty() {
        // HTCondor prints an empty ad as one empty line.
        return "\n".into();
    }
    let mut s = String::new();
    for (n, e) in sorted_attrs(ad) {
        s.push_str(&attr_name(n));
        s.push_str(" = ");
        write_styled(&mut s, e, OLD);
        s.push('\n');
    }
    s
}

/// Old-syntax printing: one line, short reals.
const OLD: Style = Style {
    short_reals: true,
    indent: None,
};

/// Prints an expression on one line with reals written short, as in the
/// old syntax and in JSON (`2.5`, `1E+20`, `1E-07`).
pub fn unparse_expr_short_reals(e: &Expr) -> String {
    let mut s = String::new();
    write_styled(&mut s, e, OLD);
    s
}

/// A real as C's `%.15G`, with `.0` added when that prints no point or
/// exponent (`1.0`, `2.5`, `1E+20`, `1E-07`): HTCondor's old syntax and
/// JSON.
pub fn format_real_short(r: f64) -> String {
    if !r.is_finite() {
        return format_real(r);
    }
    if r == 0.0 {
        return if r.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    const PRECISION: i32 = 15;
    // The exponent after rounding to 15 significant digits.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, r);
    let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut out = if !(-4..PRECISION).contains(&exp) {
        let mant = trim_fraction(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}E{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = usize::try_from(PRECISION - 1 - exp).unwrap_or(0);
        trim_fraction(&format!("{r:.decimals$}")).to_string()
    };
    if !out.contains(['.', 'E']) {
        out.push_str(".0");
    }
    out
}

/// `1.500` → `1.5`, `2.000` → `2` (C's `%G` drops trailing zeros).
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

pub(crate) fn unparse_list(items: &[Expr]) -> String {
    let mut s = String::new();
    write_list(&mut s, items, COMPACT);
    s
}

fn write_list(s: &mut String, items: &[Expr], style: Style) {
    match style.indent {
        None => {
            s.push_str("{ ");
            for (i, e) in items.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                write_styled(s, e, style);
            }
            s.push_str(" }");
        }
        Some(at) => {
            // The brace 3 deeper than its context, each item 6 deeper.
            pad(s, at + 3);
            s.push('{');
            let inner = Style {
                indent: Some(at + 6),
                ..style
            };
            for (i, e) in items.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                pad(s, at + 6);
                write_styled(s, e, inner);
            }
            pad(s, at + 3);
            s.push('}');
        }
    }
}

fn write_expr(s: &mut String, e: &Expr) {
    write_styled(s, e, COMPACT);
}

fn write_styled(s: &mut String, e: &Expr, style: Style) {
    match e {
        Expr::Lit(Literal::Real(r)) if style.short_reals => s.push_str(&format_real_short(*r)),
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
        Expr::List(items) => write_list(s, items, style),
        Expr::Ad(ad) => write_ad(s, ad, style),
        Expr::Select(base, name) => {
            write_styled(s, base, style);
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
            write_styled(s, base, style);
            s.push('[');
            write_styled(s, idx, style);
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
            write_styled(s, inner, style);
            // A digit right after `-` would read back as a negative literal: keep them apart.
            if *op == UnOp::Neg && s.as_bytes().get(at).is_some_and(|b| b.is_ascii_digit()) {
                s.insert(at, ' ');
            }
        }
        Expr::Binary(op, l, r) => {
            write_styled(s, l, style);
            s.push(' ');
            s.push_str(op.symbol());
            s.push(' ');
            write_styled(s, r, style);
        }
        Expr::Cond(c, a, b) => {
            write_styled(s, c, style);
            s.push_str(" ? ");
            write_styled(s, a, style);
            s.push_str(" : ");
            write_styled(s, b, style);
        }
        Expr::Call(name, args) => {
            s.push_str(name);
            s.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                write_styled(s, a, style);
            }
            s.push(')');
        }
        Expr::Paren(inner) => {
            s.push('(');
            write_styled(s, inner, style);
            s.push(')');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> Ad {
        Ad::parse_new(text).unwrap()
    }

    // Expected texts read off HTCondor 25's `classad2` (`str(ClassAd(...))`).
    #[test]
    fn pretty_layout_matches_classad2() {
        assert_eq!(pretty_ad(&ad("[]")), "\n    [\n    ]");
        assert_eq!(
            pretty_ad(&ad("[a = {1}; b = 2]")),
            "\n    [\n        a = \n           {\n              1\n           }; \n        b = 2\n    ]"
        );
        assert_eq!(
            pretty_ad(&ad("[ l = { {1,2}, [a=1] } ]")),
            "\n    [\n        l = \n           {\n              \n                 {\n                    1,\n                    2\n                 },\n              \n                  [\n                      a = 1\n                  ]\n           }\n    ]"
        );
        assert_eq!(
            pretty_ad(&ad("[ x = f({1,2}) ]")),
            "\n    [\n        x = f(\n           {\n              1,\n              2\n           })\n    ]"
        );
        assert_eq!(
            pretty_expr(&crate::parse_expr("size({1, 2})").unwrap()),
            "size(\n   {\n      1,\n      2\n   })"
        );
        assert_eq!(
            pretty_ad(&ad("[ l = {} ]")),
            "\n    [\n        l = \n           {\n           }\n    ]"
        );
    }

    #[test]
    fn short_reals_are_c_percent_g() {
        for (r, s) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e20, "1E+20"),
            (3.24159265358979, "3.24159265358979"),
            (-2.0, "-2.0"),
            (1e-7, "1E-07"),
            (123456789.123, "123456789.123"),
            (2.5, "2.5"),
            (0.0001, "0.0001"),
            (1e15, "1E+15"),
            (123456789012345.0, "123456789012345.0"),
        ] {
            assert_eq!(format_real_short(r), s, "{r}");
        }
        assert_eq!(
            old_syntax(&ad("[ i = 1.5 + x; h = {1.5, 2.0}; a = 1 ]")),
            "a = 1\nh = { 1.5,2.0 }\ni = 1.5 + x\n"
        );
    }
}
