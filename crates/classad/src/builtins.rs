//! Built-in functions. Names are case-insensitive; an unknown name, or a wrong number of
//! arguments, yields `error` (as in HTCondor).

use std::sync::Arc;

use crate::ast::{BinOp, Expr};
use crate::eval::{Evaluator, Num, Tv, arith, binary, cmp_ci, identical, num, truth};
use crate::parser::parse_expr;
use crate::unparse::{format_real, unparse_expr};
use crate::value::{Frame, ListValue, Value};

/// Names of the supported built-in functions (lower case).
pub const BUILTINS: &[&str] = &[
    "ifthenelse",
    "isundefined",
    "iserror",
    "isstring",
    "isinteger",
    "isreal",
    "isboolean",
    "islist",
    "isclassad",
    "member",
    "identicalmember",
    "size",
    "strcat",
    "substr",
    "strcmp",
    "stricmp",
    "toupper",
    "tolower",
    "int",
    "real",
    "string",
    "bool",
    "floor",
    "ceiling",
    "round",
    "pow",
    "regexp",
    "regexps",
    "sum",
    "avg",
    "min",
    "max",
    "time",
    "unparse",
    "eval",
    "stringlistmember",
    "stringlistimember",
    "stringlistsize",
    "countmatches",
    "evalineachcontext",
];

pub(crate) fn call(ev: &mut Evaluator<'_>, name: &str, args: &[Expr], f: &Arc<Frame>) -> Value {
    let lname = name.to_ascii_lowercase();
    let n = args.len();
    // Lazy functions first.
    match lname.as_str() {
        "ifthenelse" => {
            if n != 3 {
                return Value::Error;
            }
            return match truth(&ev.eval(&args[0], f)) {
                Tv::T => ev.eval(&args[1], f),
                Tv::F => ev.eval(&args[2], f),
                Tv::U => Value::Undefined,
                Tv::E => Value::Error,
            };
        }
        "unparse" => {
            if n != 1 {
                return Value::Error;
            }
            return match args[0].strip_parens() {
                Expr::Attr { .. } => {
                    // The bound expression, printed; an unbound name gives "".
                    match find_bound(ev, &args[0], f) {
                        Some(e) => Value::Str(unparse_expr(&e)),
                        None => Value::Str(String::new()),
                    }
                }
                _ => Value::Error,
            };
        }
        "eval" => {
            if n != 1 {
                return Value::Error;
            }
            return match ev.eval(&args[0], f) {
                Value::Str(s) => match parse_expr(&s) {
                    Ok(e) => ev.eval(&e, f),
                    Err(_) => Value::Error,
                },
                Value::Undefined | Value::Error => Value::Error,
                other => other,
            };
        }
        "countmatches" | "evalineachcontext" => {
            if n != 2 {
                return Value::Error;
            }
            return each_context(ev, &lname, args, f);
        }
        "time" => {
            return if n == 0 {
                Value::Int(ev.ctx.now_unix)
            } else {
                Value::Error
            };
        }
        _ => {}
    }
    if !BUILTINS.contains(&lname.as_str()) {
        return Value::Error;
    }
    let vals: Vec<Value> = args.iter().map(|a| ev.eval(a, f)).collect();
    strict(ev, &lname, &vals, f)
}

/// HTCondor's `countMatches(expr, ads)` and `evalInEachContext(expr,
/// ads)`: `expr` evaluated with each nested ad of the list as its scope
/// (its enclosing ads, and in a match the other ad, behind it). An
/// attribute reference as `expr` stands for the expression it is bound
/// to (`countMatches(RequireGPUs, AvailableGPUs)` evaluates the job's
/// constraint in each GPU's ad). `countMatches` counts the true (or
/// non-zero) results and gives 0 for an undefined list; an element that
/// is not an ad counts as no match (error in `evalInEachContext`).
fn each_context(ev: &mut Evaluator<'_>, name: &str, args: &[Expr], f: &Arc<Frame>) -> Value {
    let count = name == "countmatches";
    let expr = match args[0].strip_parens() {
        Expr::Attr { .. } => find_bound(ev, &args[0], f).unwrap_or_else(|| args[0].clone()),
        _ => args[0].clone(),
    };
    let elements = match ev.eval(&args[1], f) {
        Value::List(l) => ev.list_values_in(&l, f),
        Value::Undefined if count => return Value::Int(0),
        Value::Undefined => return Value::Undefined,
        _ => return Value::Error,
    };
    let mut matches = 0i64;
    let mut results = Vec::with_capacity(elements.len());
    for el in elements {
        let v = match el {
            Value::Ad(a) => ev.eval(&expr, &a.frame),
            Value::Undefined => Value::Undefined,
            _ => Value::Error,
        };
        if count {
            matches += i64::from(truth(&v) == Tv::T);
        } else {
            results.push(v.to_expr());
        }
    }
    if count {
        Value::Int(matches)
    } else {
        Value::List(ListValue {
            items: Arc::new(results),
            scope: None,
        })
    }
}

fn find_bound(ev: &Evaluator<'_>, e: &Expr, f: &Arc<Frame>) -> Option<Expr> {
    if let Expr::Attr { scope, name, .. } = e.strip_parens() {
        let frames: Vec<Arc<Frame>> = match scope {
            None => {
                let mut v = Vec::new();
                let mut cur = Some(f.clone());
                while let Some(fr) = cur {
                    cur = fr.parent.clone();
                    v.push(fr);
                }
                v
            }
            Some(crate::ast::Scope::My) => vec![ev.roots[f.side as usize].clone()],
            Some(crate::ast::Scope::Target) => vec![ev.roots[f.side.other() as usize].clone()],
        };
        for fr in frames {
            if let Some(b) = fr.ad.get(name) {
                return Some(b.clone());
            }
        }
    }
    None
}

fn is_type(vals: &[Value], pred: fn(&Value) -> bool) -> Value {
    if vals.len() != 1 {
        return Value::Error;
    }
    Value::Bool(pred(&vals[0]))
}

/// Converts a value to text the way `strcat` and friends do.
fn to_text(v: &Value) -> Option<String> {
    match v {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Real(r) => Some(format_real(*r)),
        Value::Bool(b) => Some(if *b { "true" } else { "false" }.into()),
        Value::List(_) | Value::Ad(_) => Some(v.unparse()),
        Value::Undefined | Value::Error => None,
    }
}

/// `undefined`/`error` short-circuit for strict functions: any `undefined` argument wins over
/// any `error` argument (HTCondor: `strcmp(error, undefined)` is `undefined`).
fn first_special(vals: &[Value]) -> Option<Value> {
    if vals.iter().any(Value::is_undefined) {
        Some(Value::Undefined)
    } else if vals.iter().any(Value::is_error) {
        Some(Value::Error)
    } else {
        None
    }
}

/// Parses the longest numeric prefix of `s` like C's `strtod` (leading blanks, decimal or hex,
/// `inf`/`nan`); `None` when there is none.
fn strtod(s: &str) -> Option<f64> {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let neg = b.first() == Some(&b'-');
    let rest = &t[i..];
    let lower = rest.to_ascii_lowercase();
    if lower.starts_with("inf") {
        return Some(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if lower.starts_with("nan") {
        return Some(f64::NAN);
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        let digits: String = hex.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
        if digits.is_empty() {
            return Some(0.0);
        }
        let v = u64::from_str_radix(&digits, 16)
            .map(|v| v as f64)
            .unwrap_or(f64::INFINITY);
        return Some(if neg { -v } else { v });
    }
    let mut saw_digit = false;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        saw_digit = true;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            saw_digit = true;
        }
    }
    if !saw_digit {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    t[..i].parse::<f64>().ok()
}

/// Real → integer conversion as x86 `cvttsd2si` does it: NaN and out-of-range give `i64::MIN`.
fn real_to_int(r: f64) -> i64 {
    // 2^63 is exactly representable; the valid range is [-2^63, 2^63).
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if r.is_nan() || !(-TWO_63..TWO_63).contains(&r) {
        i64::MIN
    } else {
        r as i64
    }
}

/// Numeric conversion used by `floor`, `ceiling`, `round` and `pow` (strings are parsed).
fn to_num_lenient(v: &Value) -> Option<Num> {
    match v {
        Value::Str(s) => strtod(s).map(Num::R),
        _ => num(v),
    }
}

fn strict(ev: &mut Evaluator<'_>, name: &str, vals: &[Value], f: &Arc<Frame>) -> Value {
    let n = vals.len();
    match name {
        "isundefined" => is_type(vals, |v| matches!(v, Value::Undefined)),
        "iserror" => is_type(vals, |v| matches!(v, Value::Error)),
        "isstring" => is_type(vals, |v| matches!(v, Value::Str(_))),
        "isinteger" => is_type(vals, |v| matches!(v, Value::Int(_))),
        "isreal" => is_type(vals, |v| matches!(v, Value::Real(_))),
        "isboolean" => is_type(vals, |v| matches!(v, Value::Bool(_))),
        "islist" => is_type(vals, |v| matches!(v, Value::List(_))),
        "isclassad" => is_type(vals, |v| matches!(v, Value::Ad(_))),
        "member" | "identicalmember" => {
            if n != 2 {
                return Value::Error;
            }
            let identical_only = name == "identicalmember";
            let x = &vals[0];
            if !identical_only {
                if let Some(s) = first_special(vals) {
                    return s;
                }
            } else if vals[1].is_undefined() || vals[1].is_error() {
                return vals[1].clone();
            }
            let Value::List(l) = &vals[1] else {
                return Value::Error;
            };
            if matches!(x, Value::List(_) | Value::Ad(_)) {
                return Value::Error;
            }
            for item in ev.list_values_in(l, f) {
                let r = if identical_only {
                    identical(x, &item)
                } else {
                    binary(BinOp::Eq, x, &item)
                };
                if matches!(r, Value::Bool(true)) {
                    return Value::Bool(true);
                }
            }
            Value::Bool(false)
        }
        "size" => {
            if n != 1 {
                return Value::Error;
            }
            match &vals[0] {
                Value::Str(s) => Value::Int(s.len() as i64),
                Value::List(l) => Value::Int(l.items.len() as i64),
                Value::Ad(a) => Value::Int(a.frame.ad.len() as i64),
                Value::Undefined => Value::Undefined,
                _ => Value::Error,
            }
        }
        "strcat" => {
            let mut out = String::new();
            for v in vals {
                match to_text(v) {
                    Some(t) => out.push_str(&t),
                    None => return v.clone(),
                }
            }
            Value::Str(out)
        }
        "substr" => {
            if !(2..=3).contains(&n) {
                return Value::Error;
            }
            if let Some(s) = first_special(vals) {
                return s;
            }
            let Value::Str(s) = &vals[0] else {
                return Value::Error;
            };
            let Value::Int(off) = vals[1] else {
                return Value::Error;
            };
            // HTCondor keeps offsets and lengths in a C `int`: truncate to 32 bits as it does.
            let off = i64::from(off as i32);
            let blen = s.len() as i64;
            let mut start = if off < 0 { blen + off } else { off };
            start = start.clamp(0, blen);
            let mut end = blen;
            if n == 3 {
                let Value::Int(len) = vals[2] else {
                    return Value::Error;
                };
                let len = i64::from(len as i32);
                end = if len < 0 {
                    blen + len
                } else {
                    start.saturating_add(len)
                };
                end = end.clamp(0, blen);
            }
            if end <= start {
                return Value::Str(String::new());
            }
            let bytes = &s.as_bytes()[start as usize..end as usize];
            Value::Str(String::from_utf8_lossy(bytes).into_owned())
        }
        "strcmp" | "stricmp" => {
            if n != 2 {
                return Value::Error;
            }
            if let Some(s) = first_special(vals) {
                return s;
            }
            let (Some(a), Some(b)) = (to_text(&vals[0]), to_text(&vals[1])) else {
                return Value::Error;
            };
            let o = if name == "strcmp" {
                a.as_bytes().cmp(b.as_bytes())
            } else {
                cmp_ci(&a, &b)
            };
            Value::Int(o as i64)
        }
        "toupper" | "tolower" => {
            if n != 1 {
                return Value::Error;
            }
            if let Some(s) = first_special(vals) {
                return s;
            }
            let Some(t) = to_text(&vals[0]) else {
                return Value::Error;
            };
            Value::Str(if name == "toupper" {
                t.to_ascii_uppercase()
            } else {
                t.to_ascii_lowercase()
            })
        }
        "int" | "real" => {
            if n != 1 {
                return Value::Error;
            }
            let want_int = name == "int";
            match &vals[0] {
                Value::Undefined => Value::Undefined,
                Value::Error => Value::Error,
                Value::Int(i) => {
                    if want_int {
                        Value::Int(*i)
                    } else {
                        Value::Real(*i as f64)
                    }
                }
                Value::Bool(b) => {
                    if want_int {
                        Value::Int(i64::from(*b))
                    } else {
                        Value::Real(if *b { 1.0 } else { 0.0 })
                    }
                }
                Value::Real(r) => {
                    if want_int {
                        Value::Int(real_to_int(*r))
                    } else {
                        Value::Real(*r)
                    }
                }
                Value::Str(s) => match strtod(s) {
                    Some(r) => {
                        if want_int {
                            Value::Int(real_to_int(r))
                        } else {
                            Value::Real(r)
                        }
                    }
                    None => Value::Error,
                },
                _ => Value::Error,
            }
        }
        "string" => {
            if n != 1 {
                return Value::Error;
            }
            match to_text(&vals[0]) {
                Some(t) => Value::Str(t),
                None => vals[0].clone(),
            }
        }
        "bool" => {
            if n != 1 {
                return Value::Error;
            }
            match &vals[0] {
                Value::Undefined => Value::Undefined,
                Value::Bool(b) => Value::Bool(*b),
                Value::Int(i) => Value::Bool(*i != 0),
                Value::Real(r) => Value::Bool(*r != 0.0),
                Value::Str(s) => {
                    if s.eq_ignore_ascii_case("true") {
                        Value::Bool(true)
                    } else if s.eq_ignore_ascii_case("false") {
                        Value::Bool(false)
                    } else {
                        Value::Undefined
                    }
                }
                _ => Value::Error,
            }
        }
        "floor" | "ceiling" | "round" => {
            if n != 1 {
                return Value::Error;
            }
            match to_num_lenient(&vals[0]) {
                Some(Num::I(i)) => Value::Int(i),
                Some(Num::R(r)) => Value::Int(real_to_int(match name {
                    "floor" => r.floor(),
                    "ceiling" => r.ceil(),
                    _ => r.round_ties_even(),
                })),
                None => Value::Error,
            }
        }
        "pow" => {
            if n != 2 {
                return Value::Error;
            }
            match (&vals[0], &vals[1]) {
                (Value::Int(b), Value::Int(e)) => {
                    if *e < 0 {
                        Value::Real((*b as f64).powf(*e as f64))
                    } else {
                        Value::Int(int_pow(*b, *e))
                    }
                }
                (a, b) => match (to_num_lenient(a), to_num_lenient(b)) {
                    (Some(x), Some(y)) => Value::Real(x.f().powf(y.f())),
                    _ => Value::Error,
                },
            }
        }
        "regexp" | "regexps" => regex_fn(name, vals),
        "sum" | "avg" | "min" | "max" => {
            if n != 1 {
                return Value::Error;
            }
            match &vals[0] {
                Value::List(l) => aggregate(ev, name, l, f),
                Value::Undefined => Value::Undefined,
                _ => Value::Error,
            }
        }
        "stringlistmember" | "stringlistimember" => {
            if !(2..=3).contains(&n) {
                return Value::Error;
            }
            if let Some(s) = first_special(vals) {
                return s;
            }
            let (Value::Str(x), Value::Str(list)) = (&vals[0], &vals[1]) else {
                return Value::Error;
            };
            let delims = match vals.get(2) {
                Some(Value::Str(d)) => d.clone(),
                Some(_) => return Value::Error,
                None => " ,".into(),
            };
            let ci = name == "stringlistimember";
            Value::Bool(split_list(list, &delims).any(|item| {
                if ci {
                    item.eq_ignore_ascii_case(x)
                } else {
                    item == x
                }
            }))
        }
        "stringlistsize" => {
            if !(1..=2).contains(&n) {
                return Value::Error;
            }
            if let Some(s) = first_special(vals) {
                return s;
            }
            let Value::Str(list) = &vals[0] else {
                return Value::Error;
            };
            let delims = match vals.get(1) {
                Some(Value::Str(d)) => d.clone(),
                Some(_) => return Value::Error,
                None => " ,".into(),
            };
            Value::Int(split_list(list, &delims).count() as i64)
        }
        _ => Value::Error,
    }
}

fn split_list<'a>(list: &'a str, delims: &'a str) -> impl Iterator<Item = &'a str> {
    list.split(move |c: char| delims.contains(c))
        .filter(|s| !s.is_empty())
}

/// Integer power as HTCondor computes it: in floating point, then `(i64)(x + 0.5)`. This is
/// why `pow(-2, 3)` is `-7` and `pow(2, 63)` is `-9223372036854775808` in HTCondor 25.
fn int_pow(b: i64, e: i64) -> i64 {
    real_to_int((b as f64).powf(e as f64) + 0.5)
}

fn aggregate(ev: &mut Evaluator<'_>, name: &str, l: &ListValue, f: &Arc<Frame>) -> Value {
    let vals = ev.list_values_in(l, f);
    let mut acc: Option<Value> = None;
    let mut count = 0i64;
    let mut any_real = false;
    for v in vals {
        match v {
            Value::Undefined => continue,
            Value::Error => return Value::Error,
            Value::Int(_) | Value::Real(_) | Value::Bool(_) => {}
            _ => return Value::Error,
        }
        if matches!(v, Value::Real(_)) {
            any_real = true;
        }
        count += 1;
        acc = Some(match acc {
            None => v,
            Some(a) => match name {
                "sum" | "avg" => arith(BinOp::Add, &a, &v),
                "min" => {
                    if matches!(binary(BinOp::Lt, &v, &a), Value::Bool(true)) {
                        v
                    } else {
                        a
                    }
                }
                _ => {
                    if matches!(binary(BinOp::Gt, &v, &a), Value::Bool(true)) {
                        v
                    } else {
                        a
                    }
                }
            },
        });
    }
    match (name, acc) {
        ("sum" | "avg", None) => Value::Int(0),
        (_, None) => Value::Undefined,
        ("sum", Some(a)) => a,
        ("avg", Some(a)) => match num(&a) {
            Some(x) => Value::Real(x.f() / count as f64),
            None => Value::Error,
        },
        (_, Some(a)) => {
            if count >= 2 && !any_real {
                // Once elements have been compared, booleans have been promoted to integers.
                if let Value::Bool(b) = a {
                    return Value::Int(i64::from(b));
                }
                a
            } else if any_real {
                match num(&a) {
                    Some(x) => Value::Real(x.f()),
                    None => Value::Error,
                }
            } else {
                a
            }
        }
    }
}

fn regex_fn(name: &str, vals: &[Value]) -> Value {
    let n = vals.len();
    let want = if name == "regexp" { 2 } else { 3 };
    if n != want && n != want + 1 {
        return Value::Error;
    }
    // Unlike most functions, regexp checks for `error` before `undefined`.
    if vals.iter().any(Value::is_error) {
        return Value::Error;
    }
    if vals.iter().any(Value::is_undefined) {
        return Value::Undefined;
    }
    let mut strs = Vec::with_capacity(n);
    for v in vals {
        let Value::Str(s) = v else {
            return Value::Error;
        };
        strs.push(s.as_str());
    }
    let opts = if n == want + 1 { strs[n - 1] } else { "" };
    let mut b = regex::RegexBuilder::new(strs[0]);
    for c in opts.chars() {
        match c {
            'i' => {
                b.case_insensitive(true);
            }
            'm' => {
                b.multi_line(true);
            }
            's' => {
                b.dot_matches_new_line(true);
            }
            'x' => {
                b.ignore_whitespace(true);
            }
            _ => {}
        }
    }
    b.size_limit(1 << 20);
    let Ok(re) = b.build() else {
        return Value::Error;
    };
    if name == "regexp" {
        return Value::Bool(re.is_match(strs[1]));
    }
    // regexps: the substitution string with \0..\9 replaced by the captures, or "" on no match.
    let Some(caps) = re.captures(strs[1]) else {
        return Value::Str(String::new());
    };
    let sub = strs[2].as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut lit_start = 0;
    while i < sub.len() {
        if sub[i] == b'\\' && i + 1 < sub.len() && sub[i + 1].is_ascii_digit() {
            out.push_str(&strs[2][lit_start..i]);
            let g = usize::from(sub[i + 1] - b'0');
            if g >= re.captures_len() {
                // HTCondor reports a reference to a group the pattern does not have as error.
                return Value::Error;
            }
            if let Some(m) = caps.get(g) {
                out.push_str(m.as_str());
            }
            i += 2;
            lit_start = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&strs[2][lit_start..]);
    Value::Str(out)
}
