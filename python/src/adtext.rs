//! Several ads in one text, and ads as JSON: what `classad2.parseAds`,
//! `parseNext`, `parseOne` and `ClassAd.printJson` need beyond
//! `gleaner-classad`'s one-ad parsers.
//!
//! Syntaxes, as HTCondor's parser types name them: the old one (`Name =
//! expr` lines, ads separated by blank lines), the new one (`[ … ]`, one
//! after another) and JSON (objects one after another; expressions that
//! are not plain values as `"\/Expr(…)\/"` strings, `undefined` as
//! `null`).

use gleaner_classad::{Ad, Expr, Literal, format_real_short, parse_expr, unparse_expr};
use std::fmt::Write as _;

/// Which syntax a text is in (`classad2.ParserType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// Decided by the first character that is not blank or a comment:
    /// `[` new, `{` JSON, anything else old.
    Auto,
    Old,
    New,
    Json,
}

impl Syntax {
    /// From `classad2.ParserType`'s numbers (-1 auto, 0 old, 2 JSON, 3
    /// new, 4 file-auto); XML (1) has no reader here.
    pub fn from_code(code: i64) -> Result<Syntax, String> {
        match code {
            -1 | 4 => Ok(Syntax::Auto),
            0 => Ok(Syntax::Old),
            2 => Ok(Syntax::Json),
            3 => Ok(Syntax::New),
            1 => Err("the XML ClassAd syntax is not supported".into()),
            n => Err(format!("unknown parser type {n}")),
        }
    }

    fn resolve(self, text: &str) -> Syntax {
        if self != Syntax::Auto {
            return self;
        }
        let first = text
            .lines()
            .map(str::trim_start)
            .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("//"));
        match first.and_then(|l| l.chars().next()) {
            Some('[') => Syntax::New,
            Some('{') => Syntax::Json,
            _ => Syntax::Old,
        }
    }
}

/// Why a text is not a sequence of ads.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AdTextError(pub String);

/// Every ad in `text`, in order.
pub fn parse_ads(text: &str, syntax: Syntax) -> Result<Vec<Ad>, AdTextError> {
    match syntax.resolve(text) {
        Syntax::Old => old_ads(text),
        Syntax::New => new_ads(text),
        Syntax::Json => json_ads(text),
        Syntax::Auto => Ok(Vec::new()),
    }
}

/// Every ad of `text` merged into one, later attributes replacing earlier
/// ones (`classad2.parseOne`).
pub fn parse_one(text: &str, syntax: Syntax) -> Result<Ad, AdTextError> {
    let mut out = Ad::new();
    for ad in parse_ads(text, syntax)? {
        for (n, e) in ad.iter() {
            out.insert_expr(n, e.clone());
        }
    }
    Ok(out)
}

/// Old syntax: blocks of `Name = expr` lines separated by blank lines.
fn old_ads(text: &str) -> Result<Vec<Ad>, AdTextError> {
    let mut ads = Vec::new();
    let mut block = String::new();
    let mut first_line = 1;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            flush_old(&mut block, first_line, &mut ads)?;
            first_line = i + 2;
            continue;
        }
        block.push_str(line);
        block.push('\n');
    }
    flush_old(&mut block, first_line, &mut ads)?;
    Ok(ads)
}

fn flush_old(block: &mut String, first_line: usize, ads: &mut Vec<Ad>) -> Result<(), AdTextError> {
    if block.lines().any(|l| !l.trim_start().starts_with('#')) {
        let ad = Ad::parse_old(block)
            .map_err(|e| AdTextError(format!("ad starting at line {first_line}: {e}")))?;
        ads.push(ad);
    }
    block.clear();
    Ok(())
}

/// New syntax: `[ … ]` ads one after another, split at the brackets that
/// close at depth zero (outside strings and comments).
fn new_ads(text: &str) -> Result<Vec<Ad>, AdTextError> {
    let mut ads = Vec::new();
    for (start, end) in top_level_spans(text, b'[', b']')? {
        let piece = &text[start..end];
        let ad =
            Ad::parse_new(piece).map_err(|e| AdTextError(format!("ad at byte {start}: {e}")))?;
        ads.push(ad);
    }
    Ok(ads)
}

/// Byte spans of the `open … close` groups at depth zero of `text`; only
/// blanks and comments may stand between them.
fn top_level_spans(text: &str, open: u8, close: u8) -> Result<Vec<(usize, usize)>, AdTextError> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    let mut start = 0;
    while i < b.len() {
        let c = b[i];
        if depth == 0 {
            if c.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            if c == b'#' || (c == b'/' && b.get(i + 1) == Some(&b'/')) {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            if c != open {
                return Err(AdTextError(format!(
                    "unexpected {:?} at byte {i}: expected '{}'",
                    char::from(c),
                    char::from(open)
                )));
            }
            start = i;
        }
        match c {
            b'"' | b'\'' => {
                // Skip the quoted text, honouring backslash escapes.
                i += 1;
                while i < b.len() && b[i] != c {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            _ if c == open => depth += 1,
            _ if c == close => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    spans.push((start, i + 1));
                }
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 {
        return Err(AdTextError(format!(
            "the ad starting at byte {start} is not closed"
        )));
    }
    Ok(spans)
}

/// JSON: objects one after another.
fn json_ads(text: &str) -> Result<Vec<Ad>, AdTextError> {
    let mut ads = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    for v in stream {
        let v = v.map_err(|e| AdTextError(format!("JSON: {e}")))?;
        match v {
            serde_json::Value::Object(m) => ads.push(json_object(&m)?),
            other => {
                return Err(AdTextError(format!(
                    "JSON: expected an object for each ad, found {other}"
                )));
            }
        }
    }
    Ok(ads)
}

fn json_object(m: &serde_json::Map<String, serde_json::Value>) -> Result<Ad, AdTextError> {
    let mut ad = Ad::new();
    for (k, v) in m {
        ad.insert_expr(k, json_expr(v)?);
    }
    Ok(ad)
}

fn json_expr(v: &serde_json::Value) -> Result<Expr, AdTextError> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => Expr::Lit(Literal::Undefined),
        J::Bool(b) => Expr::Lit(Literal::Bool(*b)),
        J::Number(n) => match n.as_i64() {
            Some(i) => Expr::Lit(Literal::Int(i)),
            None => Expr::Lit(Literal::Real(n.as_f64().unwrap_or(f64::NAN))),
        },
        J::String(s) => match s.strip_prefix("/Expr(").and_then(|r| r.strip_suffix(")/")) {
            Some(inner) => parse_expr(inner)
                .map_err(|e| AdTextError(format!("JSON expression {inner:?}: {e}")))?,
            None => Expr::Lit(Literal::Str(s.clone())),
        },
        J::Array(items) => Expr::List(std::sync::Arc::new(
            items.iter().map(json_expr).collect::<Result<_, _>>()?,
        )),
        J::Object(m) => Expr::Ad(json_object(m)?),
    })
}

/// An ad as HTCondor prints it in JSON (`printJson`): attributes sorted,
/// two spaces per level, expressions that are not plain values as
/// `"\/Expr(…)\/"`.
pub fn to_json(ad: &Ad) -> String {
    let mut s = String::new();
    json_ad(&mut s, ad, 0);
    s
}

fn indent(s: &mut String, n: usize) {
    s.push('\n');
    s.extend(std::iter::repeat_n(' ', n));
}

fn json_ad(s: &mut String, ad: &Ad, at: usize) {
    let mut attrs: Vec<(&str, &Expr)> = ad.iter().collect();
    attrs.sort_by_cached_key(|(n, _)| n.to_ascii_lowercase());
    s.push('{');
    for (i, (n, e)) in attrs.into_iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        indent(s, at + 2);
        json_string(s, n);
        s.push_str(": ");
        json_value(s, e, at + 2);
    }
    indent(s, at);
    s.push('}');
}

fn json_value(s: &mut String, e: &Expr, at: usize) {
    match e {
        Expr::Lit(Literal::Undefined) => s.push_str("null"),
        Expr::Lit(Literal::Bool(b)) => s.push_str(if *b { "true" } else { "false" }),
        Expr::Lit(Literal::Int(i)) => {
            let _ = write!(s, "{i}");
        }
        Expr::Lit(Literal::Real(r)) if r.is_finite() => s.push_str(&format_real_short(*r)),
        Expr::Lit(Literal::Str(t)) => json_string(s, t),
        Expr::List(items) => {
            s.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                indent(s, at + 2);
                json_value(s, item, at + 2);
            }
            indent(s, at);
            s.push(']');
        }
        Expr::Ad(ad) => json_ad(s, ad, at),
        other => {
            // `\/` keeps the marker apart from any string that happens to
            // start with "/Expr(" when read back.
            let text = format!("\\/Expr({})\\/", unparse_expr(other));
            s.push('"');
            for c in text.chars() {
                match c {
                    '"' => s.push_str("\\\""),
                    _ => s.push(c),
                }
            }
            s.push('"');
        }
    }
}

fn json_string(s: &mut String, t: &str) {
    s.push('"');
    for c in t.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            '\u{8}' => s.push_str("\\b"),
            '\u{c}' => s.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", u32::from(c));
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_syntaxes() {
        let old = parse_ads("# c\na = 1\n  \nb = 2\n", Syntax::Auto).unwrap();
        assert_eq!(old.len(), 2);
        let new = parse_ads("[a=1]\n[b=\"]\"] // x\n", Syntax::Auto).unwrap();
        assert_eq!(new.len(), 2);
        assert_eq!(new[1].to_old_syntax(), "b = \"]\"\n");
        let json = parse_ads(
            r#"{"a": 1, "b": "\/Expr(a+1)\/", "c": null} {"d": [1, 2.5]}"#,
            Syntax::Auto,
        )
        .unwrap();
        assert_eq!(json.len(), 2);
        assert_eq!(json[0].to_old_syntax(), "a = 1\nb = a + 1\nc = undefined\n");
        assert!(parse_ads("[a=1] junk", Syntax::New).is_err());
        assert!(parse_ads("[a=1", Syntax::New).is_err());
        let one = parse_one("a = 1\n\nb = 2\na = 3\n", Syntax::Old).unwrap();
        assert_eq!(one.to_old_syntax(), "a = 3\nb = 2\n");
    }

    // Expected text read off HTCondor 25's `classad2` (`printJson`).
    #[test]
    fn json_as_htcondor_prints_it() {
        let ad = Ad::parse_new(
            "[a={}; b=[]; c=\"x/y\\\\z\"; d=strcat(\"a\",b); e=\"\\t\"; f={[x=1]}; r = 2.5; u = undefined]",
        )
        .unwrap();
        assert_eq!(
            to_json(&ad),
            "{\n  \"a\": [\n  ],\n  \"b\": {\n  },\n  \"c\": \"x/y\\\\z\",\n  \"d\": \"\\/Expr(strcat(\\\"a\\\",b))\\/\",\n  \"e\": \"\\t\",\n  \"f\": [\n    {\n      \"x\": 1\n    }\n  ],\n  \"r\": 2.5,\n  \"u\": null\n}"
        );
        assert_eq!(to_json(&Ad::new()), "{\n}");
        // What is printed reads back as the same ad.
        let back = parse_ads(&to_json(&ad), Syntax::Json).unwrap();
        assert_eq!(back, vec![ad]);
    }
}
