//! HTCondor's `-af[:jlhVrTY,tng] ATTR…` and `-format FMT ATTR` over
//! ClassAds (`condor_q`, `condor_history`, `condor_status`, `glean q`):
//! each argument is an attribute name or an expression, evaluated in the
//! ad, then printed as HTCondor's `AttrListPrintMask` prints it:
//!
//! - `%v` prints a string as it is and any other value in ClassAd form
//!   (`12`, `2.5`, `true`, `undefined`); `%V` quotes strings; `%r` prints
//!   the expression unevaluated; `%T` seconds as `D+HH:MM:SS`; `%Y` a
//!   UNIX time as a local date.
//! - `%d`/`%f`/… print numbers (a boolean is 0 or 1, a real is cut to an
//!   integer for `%d`); a value of another type prints nothing at all.
//! - `%s` prints a string attribute, and any other attribute as its
//!   expression; an expression that is not a string prints nothing.
//! - A format with no conversion is printed as it is, for every ad.
//!
//! `-af` separates values with a space (`t`: a tab; `,`: a comma after
//! each; `n`: a newline after each; `g`: a newline between ads), ends each
//! ad with a newline, and can add the job id (`j`), labels (`l`) or
//! headings (`h`). `-format` adds nothing: its format says where lines
//! end. Every value is escaped for the terminal (`super::escape`); the
//! formats themselves are the caller's own text.

use super::escape::term;
use super::layout::{Cells, Col, Layout};
use super::printf::{self, Arg, Kind, NoSpec};
use gleaner_classad::{Ad, EvalContext, Expr, Literal, Value, parse_expr, unparse_expr};

/// One formatting argument, in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// `-format FMT ATTR` (FMT as typed: backslash escapes are applied
    /// here).
    Format { fmt: String, attr: String },
    /// `-af[:OPTS] ATTR…`.
    Auto { opts: String, attrs: Vec<String> },
}

/// Where a column's text comes from.
#[derive(Clone, Debug)]
enum Source {
    /// A printf format (or none: `%v`) over an attribute or expression.
    Printf {
        attr: String,
        /// The attribute as an expression, when it is not one of the ad's
        /// own attributes (parsed once).
        expr: Option<Expr>,
        fmt: Option<String>,
    },
    /// `-af:j`: the job id `CLUSTER.PROC` (within `fmt`, e.g. `ID = %v`).
    JobId { fmt: String },
}

/// A bad formatting argument.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("invalid expression {0:?}: {1}")]
    Expression(String, String),
    #[error("-af:{0} and -af:{1} cannot be used together")]
    Conflict(char, char),
}

/// The columns built from the formatting arguments.
#[derive(Clone, Debug)]
pub struct AdFormat {
    layout: Layout,
    sources: Vec<Source>,
    headings: bool,
}

impl AdFormat {
    /// Builds the columns; every expression is checked first.
    pub fn new(args: &[FormatArg]) -> Result<AdFormat, FormatError> {
        let mut f = AdFormat {
            layout: Layout {
                cols: Vec::new(),
                row_prefix: String::new(),
                col_prefix: String::new(),
                col_suffix: String::new(),
                row_suffix: String::new(),
            },
            sources: Vec::new(),
            headings: false,
        };
        for a in args {
            match a {
                FormatArg::Format { fmt, attr } => {
                    let expr = check(attr)?;
                    f.layout.cols.push(Col {
                        heading: String::new(),
                        ..Default::default()
                    });
                    f.sources.push(Source::Printf {
                        attr: attr.clone(),
                        expr,
                        fmt: Some(printf::collapse_escapes(fmt)),
                    });
                }
                FormatArg::Auto { opts, attrs } => f.auto(opts, attrs)?,
            }
        }
        Ok(f)
    }

    fn auto(&mut self, opts: &str, attrs: &[String]) -> Result<(), FormatError> {
        let has = |c: char| opts.contains(c);
        if has('n') && has(',') {
            return Err(FormatError::Conflict('n', ','));
        }
        if has('l') && has('h') {
            return Err(FormatError::Conflict('l', 'h'));
        }
        let (mut row_prefix, mut col_prefix, mut col_suffix) = ("", " ", "");
        for c in opts.chars() {
            match c {
                ',' => col_suffix = ",",
                'n' => col_suffix = "\n",
                'g' => {
                    col_prefix = "";
                    row_prefix = "\n";
                }
                't' => col_prefix = "\t",
                _ => {}
            }
        }
        self.layout.row_prefix = row_prefix.into();
        self.layout.col_prefix = col_prefix.into();
        self.layout.col_suffix = col_suffix.into();
        self.layout.row_suffix = "\n".into();
        let label = has('l');
        self.headings |= has('h');
        let default = if has('r') || has('o') {
            "%r"
        } else if has('V') {
            "%V"
        } else if has('Y') {
            "%Y"
        } else if has('T') {
            "%T"
        } else {
            "%v"
        };
        if has('j') {
            let mut col = Col {
                left: true,
                ..Default::default()
            };
            if self.headings {
                col.heading = " ID".into();
                col.auto = true;
            }
            self.layout.cols.push(col);
            self.sources.push(Source::JobId {
                fmt: if label { "ID = %v" } else { "%v" }.into(),
            });
        }
        for attr in attrs {
            let expr = check(attr)?;
            let mut col = Col::default();
            let mut fmt = String::new();
            if self.headings {
                col.heading = attr.clone();
                col.width = attr.chars().count();
                col.left = true;
                col.auto = true;
            } else if label {
                fmt = format!("{attr} = ");
            }
            fmt.push_str(default);
            self.layout.cols.push(col);
            self.sources.push(Source::Printf {
                attr: attr.clone(),
                expr,
                fmt: Some(fmt),
            });
        }
        Ok(())
    }

    /// One ad's cells, evaluated at `now` (seconds since the epoch).
    pub fn render(&self, ad: &Ad, now: i64) -> Cells {
        self.sources.iter().map(|s| cell(s, ad, now)).collect()
    }

    /// The rows of `ads` as text: the heading line first (`-af:h`), each
    /// automatic column as wide as its widest value.
    pub fn print(&self, ads: &[Ad], now: i64) -> String {
        let rows: Vec<Cells> = ads.iter().map(|ad| self.render(ad, now)).collect();
        let mut layout = self.layout.clone();
        layout.fit(&rows);
        let mut out = String::new();
        if self.headings {
            out.push_str(&layout.header());
        }
        for r in &rows {
            out.push_str(&layout.row(r));
        }
        out
    }
}

/// `attr` as an expression when it is not a plain attribute name (a name
/// is looked up in each ad first, as HTCondor does).
fn check(attr: &str) -> Result<Option<Expr>, FormatError> {
    parse_expr(attr)
        .map(Some)
        .map_err(|e| FormatError::Expression(attr.to_string(), e.to_string()))
}

fn eval(ad: &Ad, e: &Expr, now: i64) -> Value {
    let mut ctx = EvalContext::new(now);
    ctx.my = Some(ad.clone());
    ctx.target_fallback = false;
    ctx.eval(e)
}

/// A string in the old ClassAd form HTCondor's tools print (`"…"`, only
/// the quote escaped).
fn old_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\\\""))
}

/// A value as `%v` (`cap`: `%V`) prints it.
pub fn value_text(v: &Value, cap: bool) -> String {
    match v {
        Value::Str(s) if cap => old_quote(s),
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Real(r) => printf::old_real(*r),
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::Undefined => "undefined".into(),
        Value::Error => "error".into(),
        other => other.unparse(),
    }
}

/// An expression as `%r` prints it: as written.
fn raw_text(e: &Expr) -> String {
    match e {
        Expr::Lit(Literal::Str(s)) => old_quote(s),
        Expr::Lit(Literal::Real(r)) => printf::old_real(*r),
        other => unparse_expr(other),
    }
}

/// The number of a value (`IsNumber`: integers, reals, booleans).
fn number(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Real(r) => Some(*r as i64),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn escaped(s: &str) -> String {
    term(s).into_owned()
}

fn cell(src: &Source, ad: &Ad, now: i64) -> Option<String> {
    match src {
        Source::JobId { fmt } => {
            let c = ad.get("ClusterId").map(|e| eval(ad, e, now));
            let p = ad.get("ProcId").map(|e| eval(ad, e, now));
            let id = match (c.as_ref().and_then(int_of), p.as_ref().and_then(int_of)) {
                (Some(c), Some(p)) => format!("{c}.{p}"),
                (Some(c), None) => format!("{c}.-1"),
                _ => return None,
            };
            let spec = printf::parse(fmt).ok()?;
            Some(printf::apply(fmt, &spec, Arg::Str(&id), escaped))
        }
        Source::Printf { attr, expr, fmt } => printf_cell(ad, attr, expr.as_ref(), fmt, now),
    }
}

fn printf_cell(
    ad: &Ad,
    attr: &str,
    parsed: Option<&Expr>,
    fmt: &Option<String>,
    now: i64,
) -> Option<String> {
    // `%s` alone: the value's string, no printf.
    let fmt = fmt.as_deref().filter(|f| *f != "%s");
    let spec = match fmt.map(printf::parse) {
        None => None,
        Some(Ok(s)) => Some(s),
        // No conversion (or an unsafe one): the format itself, as it is.
        Some(Err(NoSpec::None | NoSpec::Unsafe)) => return fmt.map(str::to_string),
    };
    let kind = spec.as_ref().map_or(Kind::Str, |s| s.kind);
    // The ad's own attribute, else the argument as an expression.
    let (tree, is_expr) = match ad.get(attr) {
        Some(e) => (e.clone(), false),
        None => (parsed?.clone(), true),
    };
    let mut kind = kind;
    let mut string: Option<String> = None;
    if kind == Kind::Str && !is_expr {
        match eval(ad, &tree, now) {
            Value::Str(s) => string = Some(s),
            // `%s` of anything else prints the expression as written.
            _ => kind = Kind::Raw,
        }
    }
    let value = if kind == Kind::Raw {
        let raw = if is_expr && matches!(tree, Expr::Attr { .. }) {
            "undefined".to_string()
        } else {
            raw_text(&tree)
        };
        Value::Str(raw)
    } else if let Some(s) = string {
        Value::Str(s)
    } else {
        eval(ad, &tree, now)
    };
    let Some(spec) = spec else {
        // No printf: the string value only.
        return value.as_str().map(escaped);
    };
    let fmt = fmt.unwrap_or_default();
    // Printed as the format says (a `%s` whose value was unparsed above
    // prints that text).
    match spec.kind {
        Kind::Int | Kind::Char | Kind::Pointer => {
            let i = int_of(&value)?;
            Some(printf::apply(fmt, &spec, Arg::Int(i), escaped))
        }
        Kind::Float => {
            let f = number(&value)?;
            Some(printf::apply(fmt, &spec, Arg::Float(f), escaped))
        }
        Kind::Time => Some(pad_left(printf::format_time(int_of(&value)?), spec.width)),
        Kind::Date => Some(pad_left(printf::format_date(int_of(&value)?), spec.width)),
        Kind::Str => {
            let s = value.as_str()?;
            Some(printf::apply(fmt, &spec, Arg::Str(s), escaped))
        }
        Kind::Value | Kind::Raw => {
            let text = match (&value, spec.letter) {
                (Value::Str(s), 'v' | 'r' | 'R') => s.clone(),
                (v, _) => value_text(v, true),
            };
            Some(printf::apply(fmt, &spec, Arg::Str(&text), escaped))
        }
    }
}

/// `%T`/`%Y` ignore the format's text and pad to its width, as HTCondor's
/// `format_value` does.
fn pad_left(s: String, width: usize) -> String {
    let w = s.chars().count();
    if width > w {
        format!("{}{s}", " ".repeat(width - w))
    } else {
        s
    }
}

/// An ad in the long form (`condor_q -long`): `Name = value` lines sorted
/// by name, strings quoted, reals as HTCondor prints them, escaped for the
/// terminal, and a blank line after the ad.
pub fn long_form(ad: &Ad) -> String {
    let mut attrs: Vec<(&str, &Expr)> = ad.iter().collect();
    attrs.sort_by_cached_key(|(n, _)| n.to_ascii_lowercase());
    let mut out = String::new();
    for (name, e) in attrs {
        out.push_str(&term(name));
        out.push_str(" = ");
        out.push_str(&term(&raw_text(e)));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// A string escaped as HTCondor's JSON writer escapes it (`\"`, `\\`,
/// `\b\f\n\r\t`, other C0 bytes as `\u00XX`).
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 32 => out.push_str(&format!("\\u00{:02X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One expression as HTCondor's JSON writer prints it: literals as JSON
/// values, lists and ads nested, anything else as `"\/Expr(…)\/"`.
fn json_expr(out: &mut String, e: &Expr, indent: usize) {
    match e {
        Expr::Lit(Literal::Str(s)) => out.push_str(&json_string(s)),
        Expr::Lit(Literal::Int(i)) => out.push_str(&i.to_string()),
        Expr::Lit(Literal::Real(r)) if r.is_finite() => out.push_str(&printf::old_real(*r)),
        Expr::Lit(Literal::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        Expr::Lit(Literal::Undefined) => out.push_str("null"),
        Expr::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('\n');
                out.push_str(&" ".repeat(indent + 2));
                json_expr(out, item, indent + 2);
            }
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        Expr::Ad(ad) => json_ad(out, ad, indent),
        other => {
            out.push_str("\"\\/Expr(");
            let inner = json_string(&unparse_expr(other));
            out.push_str(&inner[1..inner.len() - 1]);
            out.push_str(")\\/\"");
        }
    }
}

fn json_ad(out: &mut String, ad: &Ad, indent: usize) {
    let mut attrs: Vec<(&str, &Expr)> = ad.iter().collect();
    attrs.sort_by_cached_key(|(n, _)| n.to_ascii_lowercase());
    out.push('{');
    for (i, (name, e)) in attrs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('\n');
        out.push_str(&" ".repeat(indent + 2));
        out.push_str(&json_string(name));
        out.push_str(": ");
        json_expr(out, e, indent + 2);
    }
    out.push('\n');
    out.push_str(&" ".repeat(indent));
    out.push('}');
}

/// Ads as `condor_q -json` prints them: `[`, each ad (attributes sorted by
/// name) separated by `,`, `]`; nothing at all for no ad. Safe for a
/// terminal (`super::escape::json`).
pub fn json_list(ads: &[Ad]) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut out = String::from("[\n");
    for (i, ad) in ads.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        json_ad(&mut out, ad, 0);
        out.push('\n');
    }
    out.push_str("]\n");
    super::escape::json(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad() -> Ad {
        Ad::parse(
            "[ ClusterId = 12; ProcId = 3; Owner = \"alice\"; JobStatus = 2; \
             Weight = 2.5; Whole = 3.0; Ok = true; Requirements = Memory > 100; \
             Args = \"a \\\"b\\\" c\"; QDate = 0; RemoteWallClockTime = 90061 ]",
        )
        .map(|mut ad| {
            ad.insert_str("Bad", "x\x1b]0;t\x07y");
            ad
        })
        .unwrap()
    }

    fn af(opts: &str, attrs: &[&str]) -> String {
        let f = AdFormat::new(&[FormatArg::Auto {
            opts: opts.into(),
            attrs: attrs.iter().map(|s| s.to_string()).collect(),
        }])
        .unwrap();
        f.print(&[ad()], 0)
    }

    fn format(pairs: &[(&str, &str)]) -> String {
        let args: Vec<FormatArg> = pairs
            .iter()
            .map(|(f, a)| FormatArg::Format {
                fmt: f.to_string(),
                attr: a.to_string(),
            })
            .collect();
        AdFormat::new(&args).unwrap().print(&[ad()], 0)
    }

    #[test]
    fn autoformat_values() {
        assert_eq!(
            af(
                "",
                &["ClusterId", "Owner", "Weight", "Whole", "Ok", "Missing"]
            ),
            "12 alice 2.5 3.0 true undefined\n"
        );
        assert_eq!(
            af("", &["ClusterId * 2", "strcat(Owner, \"!\")"]),
            "24 alice!\n"
        );
        assert_eq!(af("V", &["Owner", "ClusterId"]), "\"alice\" 12\n");
        assert_eq!(
            af("r", &["Requirements", "Missing", "Owner"]),
            "Memory > 100 undefined \"alice\"\n"
        );
        assert_eq!(af(",", &["ClusterId", "ProcId"]), "12, 3\n");
        assert_eq!(af("t", &["ClusterId", "ProcId"]), "12\t3\n");
        assert_eq!(af("n", &["ClusterId", "ProcId"]), "12\n 3\n");
        assert_eq!(af("g", &["ClusterId", "ProcId"]), "\n123\n");
        assert_eq!(af("jr", &["JobStatus"]), "12.3 2\n");
        assert_eq!(af("l", &["Owner"]), "Owner = alice\n");
        assert_eq!(af("lj", &["Owner"]), "ID = 12.3 Owner = alice\n");
        assert_eq!(af("T", &["RemoteWallClockTime"]), "  1+01:01:01\n");
    }

    #[test]
    fn autoformat_headings() {
        assert_eq!(
            af("h", &["ClusterId", "Owner"]),
            "ClusterId Owner\n12        alice\n"
        );
        assert_eq!(af("jh", &["Owner"]), " ID  Owner\n12.3 alice\n");
    }

    #[test]
    fn printf_formats() {
        assert_eq!(
            format(&[("%d.", "ClusterId"), ("%d\\n", "ProcId")]),
            "12.3\n"
        );
        assert_eq!(
            format(&[("%s ", "Owner"), ("%s\\n", "ClusterId")]),
            "alice 12\n"
        );
        // %s of an expression attribute prints it as written.
        assert_eq!(format(&[("%s\\n", "Requirements")]), "Memory > 100\n");
        // A value of the wrong type prints nothing, not even the text.
        assert_eq!(format(&[("[%d]", "Owner"), ("<%s>", "ClusterId + 1")]), "");
        assert_eq!(
            format(&[("%v|", "Missing"), ("%V|", "Owner")]),
            "undefined|\"alice\"|"
        );
        assert_eq!(
            format(&[("%5.1f|", "Weight"), ("%-4d|", "Ok")]),
            "  2.5|1   |"
        );
        assert_eq!(format(&[("hello\\n", "Owner")]), "hello\n");
        assert_eq!(format(&[("%n", "Owner")]), "%n");
        assert_eq!(
            format(&[("x%Ty\\n", "RemoteWallClockTime")]),
            "  1+01:01:01"
        );
    }

    #[test]
    fn values_are_escaped_formats_are_not() {
        let out = format(&[("%s\\n", "Bad")]);
        assert_eq!(out, "x\\x1b]0;t\\x07y\n");
        let out = af("", &["Bad"]);
        assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
        let long = long_form(&ad());
        assert!(!long.contains('\x1b'), "{long}");
        assert!(long.contains("Weight = 2.5\n"), "{long}");
        assert!(long.starts_with("Args = "), "{long}");
    }

    #[test]
    fn json_as_htcondor_writes_it() {
        let ad = Ad::parse("[ B = true; S = \"a\\\"b\"; R = Memory > 10; X = 2.5; U = undefined ]")
            .unwrap();
        assert_eq!(
            json_list(&[ad]),
            "[\n{\n  \"B\": true,\n  \"R\": \"\\/Expr(Memory > 10)\\/\",\n  \"S\": \"a\\\"b\",\n  \"U\": null,\n  \"X\": 2.5\n}\n]\n"
        );
        assert_eq!(json_list(&[]), "");
    }

    #[test]
    fn bad_expressions_are_named() {
        let e = AdFormat::new(&[FormatArg::Auto {
            opts: String::new(),
            attrs: vec!["Owner ==".into()],
        }])
        .unwrap_err();
        assert!(e.to_string().contains("\"Owner ==\""), "{e}");
        let e = AdFormat::new(&[FormatArg::Auto {
            opts: "lh".into(),
            attrs: vec!["Owner".into()],
        }])
        .unwrap_err();
        assert!(matches!(e, FormatError::Conflict('l', 'h')));
    }
}
