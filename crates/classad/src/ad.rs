//! The `Ad` record type and ad-file parsing (old and new syntax).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::ast::{Expr, Literal};
use crate::error::{ClassAdError, ParseError};
use crate::parser::{Parser, is_reserved, parse_expr};

/// The name index of an ad: looked up for every attribute reference in
/// matchmaking, so foldhash (seeded at random per map, like std's SipHash,
/// and several times faster on short names).
type Index = HashMap<String, usize, foldhash::fast::RandomState>;

/// A ClassAd: an ordered map from case-insensitive attribute names to expressions.
///
/// Cloning is cheap (the contents are shared and copied on write).
#[derive(Clone, Default)]
pub struct Ad {
    inner: Arc<AdInner>,
}

/// Where an attribute is in one ad ([`Ad::slot_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    index: usize,
    layout: u64,
}

struct AdInner {
    attrs: Vec<(String, Arc<Expr>)>,
    /// Lower-cased name → position in `attrs`.
    index: Index,
    /// Names these contents and the positions in them: unique in the
    /// process, new for a copy and whenever a removal moves attributes, so
    /// a [`Slot`] taken from other contents, or before a removal, is seen
    /// to be stale without reading the attribute's name.
    layout: u64,
}

fn new_layout() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Default for AdInner {
    fn default() -> Self {
        AdInner {
            attrs: Vec::new(),
            index: Index::default(),
            layout: new_layout(),
        }
    }
}

impl Clone for AdInner {
    fn clone(&self) -> Self {
        AdInner {
            attrs: self.attrs.clone(),
            index: self.index.clone(),
            layout: new_layout(),
        }
    }
}

/// Two ads are equal when they bind the same names (ignoring case and order) to equal
/// expressions.
impl PartialEq for Ad {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(n, e)| other.get(n).is_some_and(|o| o == e))
    }
}

impl fmt::Debug for Ad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::unparse::unparse_ad(self))
    }
}

impl fmt::Display for Ad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::unparse::unparse_ad(self))
    }
}

impl Ad {
    /// An empty ad.
    pub fn new() -> Self {
        Ad::default()
    }

    /// Parses an ad in either syntax: new (`[ a = 1; b = 2 ]`) when the first significant
    /// character is `[`, otherwise old (`Name = expr` per line, `#` comments).
    pub fn parse(text: &str) -> Result<Ad, ClassAdError> {
        let first = text
            .lines()
            .map(str::trim_start)
            .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("//"));
        match first {
            Some(l) if l.starts_with('[') => Ad::parse_new(text),
            _ => Ad::parse_old(text),
        }
    }

    /// Parses the new syntax: `[ name = expr; ... ]`.
    pub fn parse_new(text: &str) -> Result<Ad, ClassAdError> {
        // Lines starting with `#` are comments here too; blank them (keeping byte offsets).
        let cleaned: String = text
            .split_inclusive('\n')
            .map(|line| {
                if line.trim_start().starts_with('#') {
                    let body = line.trim_end_matches('\n');
                    format!("{}{}", " ".repeat(body.len()), &line[body.len()..])
                } else {
                    line.to_string()
                }
            })
            .collect();
        let text = cleaned.as_str();
        let mut p = Parser::new(text)?;
        if !p.eat_lbracket() {
            return Err(ParseError::at(text, 0, "expected '[' at start of ad").into());
        }
        let ad = p.ad_body()?;
        p.expect_eof()?;
        Ok(ad)
    }

    /// Parses the old syntax: one `Name = expression` per line; blank lines and lines starting
    /// with `#` are ignored. Error positions refer to the whole text.
    pub fn parse_old(text: &str) -> Result<Ad, ClassAdError> {
        let mut ad = Ad::new();
        let mut base = 0usize;
        for raw in text.split_inclusive('\n') {
            let line_start = base;
            base += raw.len();
            let line = raw.trim_end_matches(['\n', '\r']);
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let lead = line.len() - trimmed.len();
            let Some(eq) = find_assign(trimmed) else {
                return Err(ParseError::at(
                    text,
                    line_start + lead,
                    "expected 'Name = expression'",
                )
                .into());
            };
            let name = trimmed[..eq].trim();
            if !is_identifier(name) || is_reserved(name) {
                return Err(ParseError::at(
                    text,
                    line_start + lead,
                    format!("invalid attribute name {name:?}"),
                )
                .into());
            }
            let expr_text = &trimmed[eq + 1..];
            let expr_base = line_start + lead + eq + 1;
            let e = parse_expr(expr_text).map_err(|e| e.relocate(text, expr_base))?;
            ad.insert_expr(name, e);
        }
        Ok(ad)
    }

    /// Parses `expr` and binds it to `name` (replacing any attribute of that name, whatever its case).
    pub fn insert(&mut self, name: &str, expr: &str) -> Result<(), ParseError> {
        let e = parse_expr(expr)?;
        self.insert_expr(name, e);
        Ok(())
    }

    /// Binds an already-parsed expression.
    pub fn insert_expr(&mut self, name: &str, expr: Expr) {
        let inner = Arc::make_mut(&mut self.inner);
        // Replacing a value (the coordinator does for every ad's free disk)
        // allocates nothing when the name is spelt as before.
        if let Some(slot) = position(&inner.index, name).and_then(|i| inner.attrs.get_mut(i)) {
            if slot.0 != name {
                slot.0 = name.to_string();
            }
            match Arc::get_mut(&mut slot.1) {
                Some(e) => *e = expr,
                None => slot.1 = Arc::new(expr),
            }
            return;
        }
        inner
            .index
            .insert(name.to_ascii_lowercase(), inner.attrs.len());
        inner.attrs.push((name.to_string(), Arc::new(expr)));
    }

    /// Where `name` is bound now: with [`Ad::replace_at`], a value that
    /// changes often (a machine's free disk in every ad) is replaced without
    /// looking its name up again.
    pub fn slot_of(&self, name: &str) -> Option<Slot> {
        position(&self.inner.index, name).map(|index| Slot {
            index,
            layout: self.inner.layout,
        })
    }

    /// Replaces the value at `slot` and returns true, if `slot` was taken
    /// from this ad's contents as they are (no copy made and no attribute
    /// removed since); otherwise changes nothing (look the slot up again).
    pub fn replace_at(&mut self, slot: Slot, expr: Expr) -> bool {
        // A shared content would be copied (a new layout): not this slot's.
        if self.inner.layout != slot.layout || Arc::strong_count(&self.inner) != 1 {
            return false;
        }
        let inner = Arc::make_mut(&mut self.inner);
        let Some((_, e)) = inner.attrs.get_mut(slot.index) else {
            return false;
        };
        match Arc::get_mut(e) {
            Some(e) => *e = expr,
            None => *e = Arc::new(expr),
        }
        true
    }

    /// Binds an integer.
    pub fn insert_int(&mut self, name: &str, v: i64) {
        self.insert_expr(name, Expr::Lit(Literal::Int(v)));
    }

    /// Binds a real.
    pub fn insert_real(&mut self, name: &str, v: f64) {
        self.insert_expr(name, Expr::Lit(Literal::Real(v)));
    }

    /// Binds a string.
    pub fn insert_str(&mut self, name: &str, v: &str) {
        self.insert_expr(name, Expr::Lit(Literal::Str(v.to_string())));
    }

    /// Binds a boolean.
    pub fn insert_bool(&mut self, name: &str, v: bool) {
        self.insert_expr(name, Expr::Lit(Literal::Bool(v)));
    }

    /// Removes an attribute; returns its expression if it was present.
    pub fn remove(&mut self, name: &str) -> Option<Expr> {
        let key = name.to_ascii_lowercase();
        if !self.inner.index.contains_key(&key) {
            return None;
        }
        let inner = Arc::make_mut(&mut self.inner);
        let i = inner.index.remove(&key)?;
        inner.layout = new_layout();
        let (_, e) = inner.attrs.remove(i);
        let e = Arc::unwrap_or_clone(e);
        for v in inner.index.values_mut() {
            if *v > i {
                *v -= 1;
            }
        }
        Some(e)
    }

    /// The expression bound to `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&Expr> {
        self.get_shared(name).map(|e| &**e)
    }

    /// The shared expression bound to `name` (cheap to clone during evaluation).
    pub(crate) fn get_shared(&self, name: &str) -> Option<&Arc<Expr>> {
        self.get_at(name).map(|(_, e)| e)
    }

    /// The expression bound to `name` with its position in this ad.
    pub(crate) fn get_at(&self, name: &str) -> Option<(usize, &Arc<Expr>)> {
        let i = position(&self.inner.index, name)?;
        self.inner.attrs.get(i).map(|(_, e)| (i, e))
    }

    /// Whether `name` is bound.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.inner.attrs.len()
    }

    /// True when the ad has no attributes.
    pub fn is_empty(&self) -> bool {
        self.inner.attrs.is_empty()
    }

    /// Attributes in insertion order, names as first written.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Expr)> {
        self.inner.attrs.iter().map(|(n, e)| (n.as_str(), &**e))
    }

    /// Identity of the shared contents (used for cycle detection).
    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// Prints the ad in the old one-attribute-per-line syntax.
    pub fn to_old_syntax(&self) -> String {
        let mut s = String::new();
        for (n, e) in self.iter() {
            s.push_str(n);
            s.push_str(" = ");
            s.push_str(&crate::unparse::unparse_expr(e));
            s.push('\n');
        }
        s
    }
}

fn find_assign(line: &str) -> Option<usize> {
    // The first '=' that is not part of '==', '=?=', '=!=', '<=', '>=', '!='.
    let b = line.as_bytes();
    (0..b.len()).find(|&i| {
        b[i] == b'='
            && b.get(i + 1)
                .is_none_or(|c| !matches!(c, b'=' | b'?' | b'!'))
            && (i == 0 || !matches!(b[i - 1], b'<' | b'>' | b'!' | b'='))
    })
}

pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where `name` (any case) is in an ad's index. Lower-cases on the stack
/// when the name is short, as attribute names are: a lookup during
/// matchmaking allocates nothing.
fn position(index: &Index, name: &str) -> Option<usize> {
    if !name.bytes().any(|b| b.is_ascii_uppercase()) {
        return index.get(name).copied();
    }
    let mut buf = [0u8; 64];
    match buf.get_mut(..name.len()) {
        Some(out) => {
            out.copy_from_slice(name.as_bytes());
            out.make_ascii_lowercase();
            // ASCII lower-casing keeps UTF-8 valid.
            index.get(std::str::from_utf8(out).ok()?).copied()
        }
        None => index.get(&name.to_ascii_lowercase()).copied(),
    }
}
