//! C's `printf` for one value, as HTCondor's `-format FMT ATTR` applies
//! it: the format's literal text around one conversion (`%d`, `%5.2f`,
//! `%-10s`, `%x`, `%c`, …, and HTCondor's own `%v`, `%V`, `%r`, `%T`,
//! `%Y`), and `%%` for a percent sign. The conversion is parsed as
//! HTCondor parses it (flags `#0- +'`, width, `.precision`, length
//! modifiers `hlLqjzt`); `*` widths and `%n` are refused as HTCondor
//! refuses them (the format is then printed as it is).
//!
//! Also the one real-number form HTCondor's tools print values in
//! (`%.16G` with `.0` added to a whole number: [`old_real`]).

use std::fmt::Write as _;

/// What a conversion prints (HTCondor's `printf_fmt_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `d i o u x X`
    Int,
    /// `e E f F g G a A`
    Float,
    /// `c C`
    Char,
    /// `s S`
    Str,
    /// `p`
    Pointer,
    /// `v V`: the value in its own form.
    Value,
    /// `r R`: the expression as written, unevaluated.
    Raw,
    /// `T`: seconds as `D+HH:MM:SS`.
    Time,
    /// `Y`: a UNIX time as a local date.
    Date,
}

/// One parsed conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub kind: Kind,
    pub letter: char,
    pub alt: bool,
    pub zero: bool,
    pub left: bool,
    pub space: bool,
    pub plus: bool,
    pub width: usize,
    pub precision: Option<usize>,
    /// Byte range of the conversion (from its `%`) in the format.
    pub start: usize,
    pub end: usize,
}

/// Why a format has no usable conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoSpec {
    /// No conversion at all (literal text, or a truncated one).
    None,
    /// `%n` or a `*` width or precision: never applied.
    Unsafe,
}

/// The first conversion of `fmt` (skipping `%%`).
pub fn parse(fmt: &str) -> Result<Spec, NoSpec> {
    let b = fmt.as_bytes();
    let mut i = 0;
    loop {
        while i < b.len() && b[i] != b'%' {
            i += 1;
        }
        if i >= b.len() {
            return Err(NoSpec::None);
        }
        let start = i;
        i += 1;
        if i >= b.len() {
            return Err(NoSpec::None);
        }
        let mut spec = Spec {
            kind: Kind::Int,
            letter: 'd',
            alt: false,
            zero: false,
            left: false,
            space: false,
            plus: false,
            width: 0,
            precision: None,
            start,
            end: 0,
        };
        while let Some(&c) = b.get(i) {
            match c {
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                b'-' => spec.left = true,
                b' ' => spec.space = true,
                b'+' => spec.plus = true,
                b'\'' => {}
                _ => break,
            }
            i += 1;
        }
        let mut unsafe_star = false;
        if b.get(i) == Some(&b'*') {
            unsafe_star = true;
            i += 1;
        } else {
            let (n, next) = digits(b, i);
            spec.width = n;
            i = next;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if b.get(i) == Some(&b'*') {
                unsafe_star = true;
                i += 1;
            } else {
                let (n, next) = digits(b, i);
                spec.precision = Some(n);
                i = next;
            }
        }
        while matches!(
            b.get(i),
            Some(b'h' | b'l' | b'L' | b'q' | b'j' | b'z' | b't')
        ) {
            i += 1;
        }
        let Some(&letter) = b.get(i) else {
            return Err(NoSpec::None);
        };
        i += 1;
        spec.end = i;
        spec.letter = char::from(letter);
        spec.kind = match letter {
            b'd' | b'i' | b'o' | b'u' | b'x' | b'X' => Kind::Int,
            b'e' | b'E' | b'f' | b'F' | b'g' | b'G' | b'a' | b'A' => Kind::Float,
            b'c' | b'C' => Kind::Char,
            b's' | b'S' => Kind::Str,
            b'p' => Kind::Pointer,
            b'v' | b'V' => Kind::Value,
            b'r' | b'R' => Kind::Raw,
            b'T' => Kind::Time,
            b'Y' => Kind::Date,
            b'n' => return Err(NoSpec::Unsafe),
            // `%%`: literal; look further.
            b'%' => continue,
            _ => return Err(NoSpec::None),
        };
        if unsafe_star {
            return Err(NoSpec::Unsafe);
        }
        return Ok(spec);
    }
}

fn digits(b: &[u8], mut i: usize) -> (usize, usize) {
    let mut n: usize = 0;
    while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(usize::from(d - b'0'));
        i += 1;
    }
    // A width beyond any terminal is clamped: output stays bounded.
    (n.min(4096), i)
}

/// The literal text of a format piece: `%%` is one percent sign.
pub fn literal(s: &str) -> String {
    s.replace("%%", "%")
}

/// The value a conversion formats.
#[derive(Clone, Debug)]
pub enum Arg<'a> {
    Int(i64),
    Float(f64),
    Str(&'a str),
}

/// `fmt` with its conversion `spec` replaced by `arg` formatted as C
/// would, the text around it kept. `escape` is applied to the formatted
/// value alone (the format's own text is the caller's).
pub fn apply(fmt: &str, spec: &Spec, arg: Arg<'_>, escape: impl Fn(&str) -> String) -> String {
    let value = escape(&one(spec, arg));
    let mut out = literal(&fmt[..spec.start]);
    out.push_str(&value);
    out.push_str(&literal(&fmt[spec.end..]));
    out
}

/// One conversion formatted as C's `printf` would.
pub fn one(spec: &Spec, arg: Arg<'_>) -> String {
    let body = match (spec.kind, arg) {
        (Kind::Int | Kind::Pointer, Arg::Int(v)) => int(spec, v),
        (Kind::Int | Kind::Pointer, Arg::Float(v)) => int(spec, v as i64),
        (Kind::Float, Arg::Float(v)) => return pad(spec, float(spec, v), true),
        (Kind::Float, Arg::Int(v)) => return pad(spec, float(spec, v as f64), true),
        (Kind::Char, Arg::Int(v)) => {
            // The low byte, as C's `(unsigned char)` conversion.
            let byte = (v & 0xff) as u8;
            let s = if byte.is_ascii() {
                char::from(byte).to_string()
            } else {
                format!("\\x{byte:02x}")
            };
            return pad_str(spec, &s);
        }
        (_, Arg::Str(s)) => {
            let s = match spec.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            };
            return pad_str(spec, &s);
        }
        (_, Arg::Int(v)) => v.to_string(),
        (_, Arg::Float(v)) => old_real(v),
    };
    pad(spec, body, true)
}

/// An integer conversion without its width padding.
fn int(spec: &Spec, v: i64) -> String {
    let unsigned = v as u64;
    let (mut digits, sign) = match spec.letter {
        'o' => (format!("{unsigned:o}"), ""),
        'x' => (format!("{unsigned:x}"), ""),
        'X' => (format!("{unsigned:X}"), ""),
        'u' => (unsigned.to_string(), ""),
        'p' => (format!("{unsigned:x}"), ""),
        _ => {
            let sign = if v < 0 {
                "-"
            } else if spec.plus {
                "+"
            } else if spec.space {
                " "
            } else {
                ""
            };
            (v.unsigned_abs().to_string(), sign)
        }
    };
    if let Some(p) = spec.precision {
        if p == 0 && v == 0 {
            digits.clear();
        }
        while digits.len() < p {
            digits.insert(0, '0');
        }
    }
    let prefix = match spec.letter {
        'o' if spec.alt && !digits.starts_with('0') => "0",
        'x' if spec.alt && v != 0 => "0x",
        'X' if spec.alt && v != 0 => "0X",
        'p' => "0x",
        _ => "",
    };
    format!("{sign}{prefix}{digits}")
}

/// Width padding for a numeric body: zeros after the sign and prefix when
/// `0` is given (and no precision for integers), else spaces.
fn pad(spec: &Spec, body: String, numeric: bool) -> String {
    let len = body.chars().count();
    if len >= spec.width {
        return body;
    }
    let fill = spec.width - len;
    if spec.left {
        return format!("{body}{}", " ".repeat(fill));
    }
    let zero_ok = spec.zero
        && numeric
        && !(spec.kind == Kind::Int && spec.precision.is_some())
        && body.chars().last().is_some_and(|c| c.is_ascii_hexdigit());
    if zero_ok {
        let split = body
            .find(|c: char| c.is_ascii_digit())
            .map_or(0, |i| match &body[i..] {
                t if t.starts_with("0x") || t.starts_with("0X") => i + 2,
                _ => i,
            });
        let (head, tail) = body.split_at(split);
        return format!("{head}{}{tail}", "0".repeat(fill));
    }
    format!("{}{body}", " ".repeat(fill))
}

fn pad_str(spec: &Spec, s: &str) -> String {
    let len = s.chars().count();
    if len >= spec.width {
        return s.to_string();
    }
    let fill = " ".repeat(spec.width - len);
    if spec.left {
        format!("{s}{fill}")
    } else {
        format!("{fill}{s}")
    }
}

/// A floating-point conversion without its width padding.
fn float(spec: &Spec, v: f64) -> String {
    let upper = spec.letter.is_ascii_uppercase();
    let sign = if v.is_sign_negative() {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    let a = v.abs();
    if !a.is_finite() {
        let s = if a.is_nan() { "nan" } else { "inf" };
        let s = if upper { s.to_uppercase() } else { s.into() };
        return format!("{sign}{s}");
    }
    let p = spec.precision.unwrap_or(6);
    let body = match spec.letter.to_ascii_lowercase() {
        'f' => fixed(a, p, spec.alt),
        'e' => exp(a, p, spec.alt),
        'a' => hex_float(a, spec.precision),
        _ => general(a, p, spec.alt),
    };
    let body = if upper { body.to_uppercase() } else { body };
    format!("{sign}{body}")
}

fn fixed(a: f64, p: usize, alt: bool) -> String {
    let mut s = format!("{a:.p$}");
    if alt && p == 0 {
        s.push('.');
    }
    s
}

/// `%e`: one digit, `.`, `p` digits, `e`, sign, at least two exponent
/// digits.
fn exp(a: f64, p: usize, alt: bool) -> String {
    let s = format!("{a:.p$e}");
    let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let mut mant = mant.to_string();
    if alt && p == 0 {
        mant.push('.');
    }
    let sign = if e < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", e.unsigned_abs())
}

/// `%g`: `%e` or `%f` by the exponent, trailing zeros removed (unless
/// `#`).
fn general(a: f64, p: usize, alt: bool) -> String {
    let p = p.max(1);
    if a == 0.0 {
        return if alt {
            format!("{:.*}", p - 1, 0.0)
        } else {
            "0".into()
        };
    }
    // The exponent after rounding to p significant digits.
    let e_form = format!("{:.*e}", p - 1, a);
    let x: i64 = e_form
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let p_i = i64::try_from(p).unwrap_or(i64::MAX);
    let s = if x < -4 || x >= p_i {
        exp(a, p - 1, alt)
    } else {
        let decimals = usize::try_from(p_i - 1 - x).unwrap_or(0);
        fixed(a, decimals, alt)
    };
    if alt {
        return s;
    }
    strip_zeros(&s)
}

/// Trailing zeros of the fraction removed (and the point, if nothing is
/// left of it); an exponent kept.
fn strip_zeros(s: &str) -> String {
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    if !mant.contains('.') {
        return s.to_string();
    }
    let mant = mant.trim_end_matches('0').trim_end_matches('.');
    format!("{mant}{exp}")
}

/// `%a`: hexadecimal floating point (`0x1.8p+1`).
fn hex_float(a: f64, precision: Option<usize>) -> String {
    if a == 0.0 {
        return match precision {
            Some(p) if p > 0 => format!("0x0.{}p+0", "0".repeat(p)),
            _ => "0x0p+0".into(),
        };
    }
    let bits = a.to_bits();
    let raw_exp = ((bits >> 52) & 0x7ff) as i64;
    let mut frac = bits & ((1u64 << 52) - 1);
    let (lead, e) = if raw_exp == 0 {
        (0u64, -1022)
    } else {
        (1u64, raw_exp - 1023)
    };
    let mut digits = format!("{frac:013x}");
    if let Some(p) = precision.filter(|p| *p < 13) {
        // Round the 52-bit fraction to p hex digits, half to even.
        let drop = 4 * (13 - p) as u32;
        let half = 1u64 << (drop - 1);
        let rest = frac & ((1u64 << drop) - 1);
        frac >>= drop;
        if rest > half || (rest == half && frac & 1 == 1) {
            frac += 1;
        }
        digits = if p == 0 {
            String::new()
        } else {
            format!("{frac:0p$x}")
        };
        if frac >> (4 * p) != 0 {
            // Carried into the leading digit.
            return format!(
                "0x{}{}p{:+}",
                lead + 1,
                dot(&digits[1.min(digits.len())..]),
                e
            );
        }
    } else {
        digits = digits.trim_end_matches('0').to_string();
    }
    format!("0x{lead}{}p{e:+}", dot(&digits))
}

fn dot(digits: &str) -> String {
    if digits.is_empty() {
        String::new()
    } else {
        format!(".{digits}")
    }
}

/// A real as HTCondor's tools print values (`%.16G`, then `.0` when that
/// looks like a whole number), e.g. `2.5`, `3.0`, `1E+20`,
/// `0.3333333333333333`; `0.0`, and `real("INF")`/`real("NaN")` for the
/// rest, as the ClassAd unparser does.
pub fn old_real(r: f64) -> String {
    if r == 0.0 {
        return if r.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
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
    let spec = Spec {
        kind: Kind::Float,
        letter: 'G',
        alt: false,
        zero: false,
        left: false,
        space: false,
        plus: false,
        width: 0,
        precision: Some(16),
        start: 0,
        end: 0,
    };
    let mut s = float(&spec, r);
    if !s.contains(['.', 'E', 'e']) {
        s.push_str(".0");
    }
    s
}

/// HTCondor's `format_time`: `%3d+%02d:%02d:%02d` of days, hours,
/// minutes and seconds.
pub fn format_time(secs: i64) -> String {
    let s = secs.max(0);
    format!(
        "{:3}+{:02}:{:02}:{:02}",
        s / 86_400,
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60
    )
}

/// `secs` as local `MM/DD/YY HH:MM:SS` (`condor_q`'s title).
pub fn local_stamp(secs: i64) -> String {
    let Ok(ts) = jiff::Timestamp::from_second(secs) else {
        return String::new();
    };
    let t = jiff::tz::TimeZone::system().to_datetime(ts);
    format!(
        "{:02}/{:02}/{:02} {:02}:{:02}:{:02}",
        t.month(),
        t.day(),
        t.year().rem_euclid(100),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// HTCondor's `format_date`: `%2d/%-2d %02d:%02d` (month/day hour:minute)
/// in local time; `    ???    ` for a negative time.
pub fn format_date(secs: i64) -> String {
    if secs < 0 {
        return "    ???    ".into();
    }
    let Ok(ts) = jiff::Timestamp::from_second(secs) else {
        return "    ???    ".into();
    };
    let t = jiff::tz::TimeZone::system().to_datetime(ts);
    let mut out = String::new();
    let _ = write!(
        out,
        "{:2}/{:<2} {:02}:{:02}",
        t.month(),
        t.day(),
        t.hour(),
        t.minute()
    );
    out
}

/// Collapses the backslash escapes in a format given on the command line
/// as HTCondor's `collapse_escapes` does: `\n`, `\t`, `\r`, `\a`, `\b`,
/// `\f`, `\v`, `\\`, `\?`, `\'`, `\"`, digits and `\x` followed by hex
/// digits (with HTCondor's arithmetic, `v += v*8 + d` and `v += v*16 + d`,
/// to the low byte), and any other escaped character as itself.
pub fn collapse_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(n) = chars.next() else {
            out.push('\\');
            break;
        };
        let byte = |v: u32| char::from((v & 0xff) as u8);
        match n {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '0'..='9' => {
                let mut v = n.to_digit(10).unwrap_or(0);
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                    v = v.wrapping_add(v.wrapping_mul(8)).wrapping_add(d);
                    chars.next();
                }
                out.push(byte(v));
            }
            'x' => {
                let mut v = 0u32;
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(16)) {
                    v = v.wrapping_add(v.wrapping_mul(16)).wrapping_add(d);
                    chars.next();
                }
                out.push(byte(v));
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, arg: Arg<'_>) -> String {
        let spec = parse(fmt).unwrap();
        apply(fmt, &spec, arg, |s| s.to_string())
    }

    #[test]
    fn integers_as_c_prints_them() {
        assert_eq!(f("%d", Arg::Int(12)), "12");
        assert_eq!(f("%4d.", Arg::Int(591)), " 591.");
        assert_eq!(f("%-3d|", Arg::Int(0)), "0  |");
        assert_eq!(f("%05d", Arg::Int(-42)), "-0042");
        assert_eq!(f("%+d", Arg::Int(7)), "+7");
        assert_eq!(f("% d", Arg::Int(7)), " 7");
        assert_eq!(f("%x %%", Arg::Int(255)), "ff %");
        assert_eq!(f("%#X", Arg::Int(255)), "0XFF");
        assert_eq!(f("%#o", Arg::Int(8)), "010");
        assert_eq!(f("%.3d", Arg::Int(7)), "007");
        assert_eq!(f("%6.3d", Arg::Int(7)), "   007");
        assert_eq!(f("%lld", Arg::Int(i64::MIN)), "-9223372036854775808");
        assert_eq!(f("%u", Arg::Int(-1)), "18446744073709551615");
        assert_eq!(f("%c", Arg::Int(65)), "A");
        assert_eq!(f("%d", Arg::Float(2.9)), "2");
    }

    #[test]
    fn floats_as_c_prints_them() {
        assert_eq!(f("%f", Arg::Float(2.5)), "2.500000");
        assert_eq!(f("%.2f", Arg::Float(1.23456)), "1.23");
        assert_eq!(f("%8.3f|", Arg::Float(-1.5)), "  -1.500|");
        assert_eq!(f("%08.3f", Arg::Float(-1.5)), "-001.500");
        assert_eq!(f("%e", Arg::Float(12345.678)), "1.234568e+04");
        assert_eq!(f("%E", Arg::Float(0.00012)), "1.200000E-04");
        assert_eq!(f("%g", Arg::Float(0.0001)), "0.0001");
        assert_eq!(f("%g", Arg::Float(0.00001)), "1e-05");
        assert_eq!(f("%g", Arg::Float(123456.0)), "123456");
        assert_eq!(f("%g", Arg::Float(1234567.0)), "1.23457e+06");
        assert_eq!(f("%g", Arg::Float(2.5)), "2.5");
        assert_eq!(f("%G", Arg::Float(1e20)), "1E+20");
        assert_eq!(f("%.1f", Arg::Float(0.0)), "0.0");
        assert_eq!(f("%f", Arg::Int(3)), "3.000000");
        assert_eq!(f("%a", Arg::Float(3.0)), "0x1.8p+1");
        assert_eq!(f("%a", Arg::Float(1.0)), "0x1p+0");
        assert_eq!(f("%.1a", Arg::Float(1.0)), "0x1.0p+0");
    }

    #[test]
    fn strings_as_c_prints_them() {
        assert_eq!(f("%s\n", Arg::Str("alice")), "alice\n");
        assert_eq!(f("[%-8s]", Arg::Str("bob")), "[bob     ]");
        assert_eq!(f("[%8s]", Arg::Str("bob")), "[     bob]");
        assert_eq!(f("[%.2s]", Arg::Str("bob")), "[bo]");
        assert_eq!(f("%% done: %s", Arg::Str("x")), "% done: x");
    }

    #[test]
    fn formats_without_a_usable_conversion() {
        assert_eq!(parse("hello\n"), Err(NoSpec::None));
        assert_eq!(parse("100%%"), Err(NoSpec::None));
        assert_eq!(parse("%n"), Err(NoSpec::Unsafe));
        assert_eq!(parse("%*d"), Err(NoSpec::Unsafe));
        assert_eq!(parse("%.*f"), Err(NoSpec::Unsafe));
        assert_eq!(parse("%"), Err(NoSpec::None));
        assert_eq!(parse("%k"), Err(NoSpec::None));
        let s = parse("ID: %v!").unwrap();
        assert_eq!((s.kind, s.start, s.end), (Kind::Value, 4, 6));
        assert_eq!(parse("%T").unwrap().kind, Kind::Time);
        assert_eq!(parse("%-5Y").unwrap().kind, Kind::Date);
    }

    #[test]
    fn reals_as_htcondor_prints_values() {
        assert_eq!(old_real(2.5), "2.5");
        assert_eq!(old_real(3.0), "3.0");
        assert_eq!(old_real(1e20), "1E+20");
        assert_eq!(old_real(0.1), "0.1");
        assert_eq!(old_real(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(old_real(-0.5), "-0.5");
        assert_eq!(old_real(0.0), "0.0");
        assert_eq!(old_real(123456789012.0), "123456789012.0");
        assert_eq!(old_real(1e-5), "1E-05");
        assert_eq!(old_real(f64::INFINITY), "real(\"INF\")");
    }

    #[test]
    fn times_and_dates() {
        assert_eq!(format_time(13), "  0+00:00:13");
        assert_eq!(format_time(90061), "  1+01:01:01");
        assert_eq!(format_date(-1), "    ???    ");
        assert_eq!(format_date(0).len(), 11);
    }

    #[test]
    fn escapes_on_the_command_line() {
        assert_eq!(collapse_escapes("%d\\n"), "%d\n");
        assert_eq!(collapse_escapes("a\\tb\\\\c"), "a\tb\\c");
        // HTCondor's own arithmetic: \\7 is 7, \\x41 is 4*17+1.
        assert_eq!(collapse_escapes("\\7\\x41"), "\x07E");
        assert_eq!(collapse_escapes("end\\"), "end\\");
        assert_eq!(collapse_escapes("\\q"), "q");
    }
}
