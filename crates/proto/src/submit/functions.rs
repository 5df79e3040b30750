//! The function macros of HTCondor's submit language (the manual's
//! "Function Macros in the Submit Description File"): `$INT()`, `$REAL()`,
//! `$F[fpduwnxbqa]()`, `$DIRNAME()`, `$BASENAME()`, `$CHOICE()`,
//! `$SUBSTR()`, `$RANDOM_INTEGER()`, `$RANDOM_CHOICE()`, `$EVAL()`.
//! `$ENV()` is the expander's own. Names are case-sensitive, as in
//! HTCondor.
//!
//! Random choices come from a generator seeded by the submission's seed
//! and the proc number, so a submission expands the same way each time it
//! is expanded (the CLI's check, the station's expansion, `--dry-run`).

use super::SubmitErrorKind;

/// The function macro names (after `$`), longest first where one is a
/// prefix of another.
const NAMES: &[&str] = &[
    "RANDOM_INTEGER",
    "RANDOM_CHOICE",
    "BASENAME",
    "DIRNAME",
    "CHOICE",
    "SUBSTR",
    "REAL",
    "EVAL",
    "INT",
];

/// The function a `$NAME(` at the start of `s` (after the `$`) calls, and
/// the length of `NAME`.
pub(super) fn function_at(s: &str) -> Option<(&str, usize)> {
    let name_len = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    if !s[name_len..].starts_with('(') {
        return None;
    }
    let name = &s[..name_len];
    if NAMES.contains(&name) {
        return Some((name, name_len));
    }
    // $F followed by option letters.
    let opts = name.strip_prefix('F')?;
    opts.chars()
        .all(|c| "fpduwnxbqa".contains(c))
        .then_some((name, name_len))
}

/// The byte offset of the `)` that closes the `(` before `s`.
pub(super) fn closing_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Splits a function's argument text on top-level commas.
pub(super) fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// What a function needs from the expander.
pub(super) trait Env {
    /// The expanded value of macro `name`, if it is one.
    fn macro_value(&self, name: &str) -> Result<Option<String>, SubmitErrorKind>;
    /// The next random number of this proc.
    fn random(&self) -> u64;
    /// The submit file's directory (for `$Ff`).
    fn dir(&self) -> Option<&str>;
}

fn bad(call: &str, why: impl std::fmt::Display) -> SubmitErrorKind {
    SubmitErrorKind::BadMacro(format!("{call}: {why}"))
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == '.')
}

/// `arg` itself, or the value of the macro it names.
fn value_of(env: &dyn Env, arg: &str) -> Result<String, SubmitErrorKind> {
    if is_name(arg)
        && let Some(v) = env.macro_value(arg)?
    {
        return Ok(v);
    }
    Ok(arg.to_string())
}

/// Evaluates `text` as a ClassAd expression without an ad.
fn eval(text: &str) -> Result<gleaner_classad::Value, String> {
    let e = gleaner_classad::parse_expr(text).map_err(|e| e.to_string())?;
    Ok(gleaner_classad::EvalContext::new(0).eval(&e))
}

fn number(call: &str, env: &dyn Env, arg: &str) -> Result<f64, SubmitErrorKind> {
    let v = value_of(env, arg)?;
    let value = eval(&v).map_err(|e| bad(call, format!("{v:?} is not an expression: {e}")))?;
    value
        .as_f64()
        .ok_or_else(|| bad(call, format!("{v:?} is not a number")))
}

/// Calls function `name` with the (already macro-expanded) argument text.
pub(super) fn call(name: &str, args: &str, env: &dyn Env) -> Result<String, SubmitErrorKind> {
    let call = format!("${name}({args})");
    let a = split_args(args);
    let arg = |i: usize| a.get(i).map(String::as_str).unwrap_or("");
    match name {
        "INT" => {
            let n = number(&call, env, arg(0))?;
            let fmt = a.get(1).map_or("%d", String::as_str);
            printf(fmt, n.trunc()).map_err(|e| bad(&call, e))
        }
        "REAL" => {
            let n = number(&call, env, arg(0))?;
            match a.get(1) {
                Some(fmt) => printf(fmt, n).map_err(|e| bad(&call, e)),
                None => Ok(printf("%G", n)
                    .map_err(|e| bad(&call, e))?
                    .trim()
                    .to_string()),
            }
        }
        "EVAL" => {
            let v = eval(args).map_err(|e| bad(&call, e))?;
            Ok(match v.as_str() {
                Some(s) => s.to_string(),
                None => v.unparse(),
            })
        }
        "DIRNAME" => Ok(path_parts("p", &value_of(env, arg(0))?, env.dir())),
        "BASENAME" => Ok(path_parts("nx", &value_of(env, arg(0))?, env.dir())),
        "SUBSTR" => {
            let s = value_of(env, arg(0))?;
            let start = int_arg(&call, env, arg(1))?;
            let len = match a.get(2) {
                Some(l) => Some(int_arg(&call, env, l)?),
                None => None,
            };
            Ok(substr(&s, start, len))
        }
        "CHOICE" => {
            let i = int_arg(&call, env, arg(0))?;
            let list: Vec<String> = if a.len() == 2 && is_name(arg(1)) {
                value_of(env, arg(1))?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .collect()
            } else {
                a[1.min(a.len())..].to_vec()
            };
            usize::try_from(i)
                .ok()
                .and_then(|i| list.get(i))
                .cloned()
                .ok_or_else(|| {
                    bad(
                        &call,
                        format!("index {i} is not in a list of {}", list.len()),
                    )
                })
        }
        "RANDOM_CHOICE" => {
            if a.is_empty() || a.iter().all(String::is_empty) {
                return Err(bad(&call, "nothing to choose from"));
            }
            let i = (env.random() % a.len() as u64) as usize;
            Ok(a[i].clone())
        }
        "RANDOM_INTEGER" => {
            let lo = int_arg(&call, env, arg(0))?;
            let hi = int_arg(&call, env, arg(1))?;
            let step = match a.get(2) {
                Some(s) => int_arg(&call, env, s)?,
                None => 1,
            };
            if hi < lo || step <= 0 {
                return Err(bad(&call, "needs min <= max and a positive step"));
            }
            let choices = ((hi - lo) / step).unsigned_abs() + 1;
            let k = env.random() % choices;
            Ok((lo + (k as i64) * step).to_string())
        }
        f => {
            let opts = f.strip_prefix('F').unwrap_or("");
            Ok(path_parts(opts, &value_of(env, arg(0))?, env.dir()))
        }
    }
}

fn int_arg(call: &str, env: &dyn Env, arg: &str) -> Result<i64, SubmitErrorKind> {
    let n = number(call, env, arg)?;
    if !n.is_finite() || n.abs() > 9.0e15 {
        return Err(bad(call, format!("{arg:?} is out of range")));
    }
    Ok(n.trunc() as i64)
}

/// `$SUBSTR`: from `start` (negative: from the end), `len` characters
/// (negative: all but that many at the end).
fn substr(s: &str, start: i64, len: Option<i64>) -> String {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len() as i64;
    let from = if start < 0 {
        (n + start).max(0)
    } else {
        start.min(n)
    };
    let to = match len {
        None => n,
        Some(l) if l < 0 => (n + l).max(from),
        Some(l) => (from + l).min(n),
    };
    if to <= from {
        return String::new();
    }
    chars[from as usize..to as usize].iter().collect()
}

/// `$F[fpduwnxbqa](path)`.
fn path_parts(opts: &str, path: &str, dir: Option<&str>) -> String {
    let has = |c: char| opts.contains(c);
    let mut p = path.to_string();
    if has('f')
        && !p.starts_with('/')
        && let Some(d) = dir
    {
        p = format!("{}/{p}", d.trim_end_matches('/'));
    }
    if has('u') {
        p = p.replace('\\', "/");
    }
    if has('w') {
        p = p.replace('/', "\\");
    }
    let sep = |c: char| c == '/' || c == '\\';
    let (dirpart, file) = match p.rfind(sep) {
        Some(i) => (&p[..=i], &p[i + 1..]),
        None => ("", p.as_str()),
    };
    let (stem, ext) = match file.rfind('.') {
        Some(i) if i > 0 => (&file[..i], &file[i..]),
        _ => (file, ""),
    };
    let any = "pdnx".chars().any(has);
    let mut out = String::new();
    if !any {
        out = p.clone();
    } else {
        if has('p') {
            out.push_str(dirpart);
        } else if has('d') {
            let inner = dirpart.trim_end_matches(sep);
            let last = inner.rfind(sep).map_or(inner, |i| &inner[i + 1..]);
            if !last.is_empty() {
                out.push_str(last);
                if !has('b') {
                    out.push_str(&dirpart[dirpart.len() - 1..]);
                }
            }
        }
        if has('n') {
            out.push_str(stem);
        }
        if has('x') {
            if has('b') && !has('d') {
                out.push_str(ext.strip_prefix('.').unwrap_or(ext));
            } else {
                out.push_str(ext);
            }
        }
    }
    if has('q') {
        let q = if has('a') { '\'' } else { '"' };
        out = format!("{q}{out}{q}");
    }
    out
}

/// A C `printf` of one number: `%d`, `%04d`, `%x`, `%.2f`, `%e`, `%G`, …
/// with any text around the conversion.
fn printf(fmt: &str, n: f64) -> Result<String, String> {
    let Some(pct) = fmt.find('%') else {
        return Err(format!("format {fmt:?} has no %"));
    };
    let (before, spec) = (&fmt[..pct], &fmt[pct + 1..]);
    let mut chars = spec.char_indices().peekable();
    let mut flags = String::new();
    while let Some(&(_, c)) = chars.peek() {
        if "-+ 0#".contains(c) {
            flags.push(c);
            chars.next();
        } else {
            break;
        }
    }
    let mut width = String::new();
    while let Some(&(_, c)) = chars.peek() {
        if c.is_ascii_digit() {
            width.push(c);
            chars.next();
        } else {
            break;
        }
    }
    let mut prec: Option<usize> = None;
    if let Some(&(_, '.')) = chars.peek() {
        chars.next();
        let mut p = String::new();
        while let Some(&(_, c)) = chars.peek() {
            if c.is_ascii_digit() {
                p.push(c);
                chars.next();
            } else {
                break;
            }
        }
        prec = Some(p.parse().unwrap_or(0));
    }
    // Length modifiers are accepted and ignored.
    while let Some(&(_, c)) = chars.peek() {
        if "hlLqjzt".contains(c) {
            chars.next();
        } else {
            break;
        }
    }
    let Some((at, conv)) = chars.next() else {
        return Err(format!("format {fmt:?} ends early"));
    };
    let after = &spec[at + conv.len_utf8()..];
    let width: usize = width.parse().unwrap_or(0);
    if width > 4096 || prec.is_some_and(|p| p > 4096) {
        return Err(format!("format {fmt:?} is too wide"));
    }
    let mag = n.abs();
    let body = match conv {
        'd' | 'i' | 'u' => format!("{}", mag.trunc() as u128),
        'x' => format!("{:x}", mag.trunc() as u128),
        'X' => format!("{:X}", mag.trunc() as u128),
        'o' => format!("{:o}", mag.trunc() as u128),
        'f' | 'F' => format!("{:.*}", prec.unwrap_or(6), mag),
        'e' | 'E' => {
            let s = exp_form(mag, prec.unwrap_or(6));
            if conv == 'E' { s.to_uppercase() } else { s }
        }
        'g' | 'G' => {
            let s = g_form(mag, prec.unwrap_or(6), flags.contains('#'));
            if conv == 'G' { s.to_uppercase() } else { s }
        }
        c => return Err(format!("format {fmt:?}: %{c} is not a number conversion")),
    };
    let sign = if n < 0.0 {
        "-"
    } else if flags.contains('+') {
        "+"
    } else if flags.contains(' ') {
        " "
    } else {
        ""
    };
    let len = sign.len() + body.len();
    let pad = width.saturating_sub(len);
    let text = if flags.contains('-') {
        format!("{sign}{body}{}", " ".repeat(pad))
    } else if flags.contains('0') {
        format!("{sign}{}{body}", "0".repeat(pad))
    } else {
        format!("{}{sign}{body}", " ".repeat(pad))
    };
    Ok(format!("{before}{text}{after}"))
}

/// `%e`: `d.ddddde+XX`.
fn exp_form(v: f64, prec: usize) -> String {
    let s = format!("{v:.prec$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// `%g`: `%e` or `%f`, whichever C would pick, trailing zeros removed.
fn g_form(v: f64, prec: usize, keep_zeros: bool) -> String {
    let p = prec.max(1);
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.log10().floor() as i32;
    let trim = |s: String| -> String {
        if keep_zeros || !s.contains('.') {
            return s;
        }
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if exp < -4 || exp >= p as i32 {
        let s = exp_form(v, p - 1);
        let (m, e) = s.split_once('e').unwrap_or((&s, ""));
        format!("{}e{e}", trim(m.to_string()))
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim(format!("{v:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct T {
        n: Cell<u64>,
    }
    impl Env for T {
        fn macro_value(&self, name: &str) -> Result<Option<String>, SubmitErrorKind> {
            Ok(match name {
                "Name" => Some("abcdef".into()),
                "MyIndex" => Some("0 + 1".into()),
                "L" => Some("p,q,r".into()),
                _ => None,
            })
        }
        fn random(&self) -> u64 {
            self.n.set(self.n.get() + 7);
            self.n.get()
        }
        fn dir(&self) -> Option<&str> {
            Some("/home/a")
        }
    }

    fn c(name: &str, args: &str) -> String {
        call(name, args, &T { n: Cell::new(0) }).unwrap()
    }

    #[test]
    fn manual_examples_as_htcondor_expands_them() {
        // The values HTCondor 25's own expander gives (htcondor2.Submit.expand).
        assert_eq!(c("INT", "MyIndex,%04d"), "0001");
        assert_eq!(c("INT", "7"), "7");
        assert_eq!(c("REAL", "MyIndex"), "1");
        assert_eq!(c("REAL", "MyIndex,%.2f"), "1.00");
        assert_eq!(c("REAL", "2.5"), "2.5");
        assert_eq!(c("Fnx", "/tmp/dir/simulate.exe"), "simulate.exe");
        assert_eq!(c("Fn", "/tmp/dir/simulate.exe"), "simulate");
        assert_eq!(c("Fx", "/tmp/dir/simulate.exe"), ".exe");
        assert_eq!(c("Fp", "/tmp/dir/simulate.exe"), "/tmp/dir/");
        assert_eq!(c("Fd", "/tmp/dir/simulate.exe"), "dir/");
        assert_eq!(c("Fdb", "/tmp/dir/simulate.exe"), "dir");
        assert_eq!(c("Fqa", "/tmp/dir/simulate.exe"), "'/tmp/dir/simulate.exe'");
        assert_eq!(c("DIRNAME", "/tmp/dir/simulate.exe"), "/tmp/dir/");
        assert_eq!(c("BASENAME", "/tmp/dir/simulate.exe"), "simulate.exe");
        assert_eq!(c("Fxb", "/a/b.tar.gz"), "gz");
        assert_eq!(c("F", "/a/b/c"), "/a/b/c");
        assert_eq!(c("Fu", "a\\b"), "a/b");
        assert_eq!(c("Ff", "rel/x.dat"), "/home/a/rel/x.dat");
        assert_eq!(c("CHOICE", "1, x, y, z"), "y");
        assert_eq!(c("CHOICE", "2, L"), "r");
        assert_eq!(c("SUBSTR", "Name, 2"), "cdef");
        assert_eq!(c("SUBSTR", "Name, 0, -2"), "abcd");
        assert_eq!(c("SUBSTR", "Name, 1, 3"), "bcd");
        assert_eq!(c("SUBSTR", "Name, -1"), "f");
        assert_eq!(c("SUBSTR", "Name, 4, -3"), "");
        assert_eq!(c("RANDOM_INTEGER", "5, 5"), "5");
        assert!(call("CHOICE", "5, x, y", &T { n: Cell::new(0) }).is_err());
        assert!(call("INT", "Name", &T { n: Cell::new(0) }).is_err());
    }

    #[test]
    fn random_functions_stay_in_range_and_on_the_step() {
        let t = T { n: Cell::new(0) };
        for _ in 0..50 {
            let v: i64 = call("RANDOM_INTEGER", "0, 8, 2", &t)
                .unwrap()
                .parse()
                .unwrap();
            assert!((0..=8).contains(&v) && v % 2 == 0, "{v}");
            let c = call("RANDOM_CHOICE", "a,b,c", &t).unwrap();
            assert!(["a", "b", "c"].contains(&c.as_str()));
        }
    }

    #[test]
    fn printf_conversions() {
        assert_eq!(printf("%03d", 5.0).unwrap(), "005");
        assert_eq!(printf("%-4d|", 5.0).unwrap(), "5   |");
        assert_eq!(printf("%x", 255.0).unwrap(), "ff");
        assert_eq!(printf("run-%d.dat", -3.0).unwrap(), "run--3.dat");
        assert_eq!(printf("%e", 1500.0).unwrap(), "1.500000e+03");
        assert_eq!(printf("%g", 0.0001).unwrap(), "0.0001");
        assert_eq!(printf("%g", 1234567.0).unwrap(), "1.23457e+06");
        assert_eq!(printf("%G", 2.5).unwrap(), "2.5");
        assert!(printf("%s", 1.0).is_err());
        assert!(printf("%99999d", 1.0).is_err());
    }
}
