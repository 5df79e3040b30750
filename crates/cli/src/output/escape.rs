//! The one escape for user-controlled text bound for a terminal.
//!
//! Job arguments, file names, batch names, hold reasons, owners, station
//! names, DAG node names and messages all come from users, and other
//! people (administrators, other users) print them with `glean q --all`,
//! `condor_q -af`, `condor_history` and friends. A byte that a terminal
//! acts on (ESC starts CSI/OSC sequences that move the cursor, rewrite the
//! title or the clipboard, BEL rings, C1 controls are 8-bit escapes) or a
//! character that reorders what is shown (bidi overrides) must never reach
//! it raw. Every renderer passes such text through [`term`] before
//! printing: tables, `-af`, `-format`, `-long`, history, DAG status,
//! `tail`'s metadata lines and error messages.
//!
//! Printable text, including any non-ASCII letter, is left exactly as it
//! is, so ordinary output stays byte for byte what HTCondor prints. A
//! control character becomes a visible escape: `\n`, `\r`, `\t` by name,
//! other C0 bytes and DEL as `\xHH`, C1 controls and the invisible
//! format characters as `\u{HHHH}`. The escape is applied whether or not
//! standard output is a terminal: output saved to a file or piped into
//! `less -R` reaches a terminal later, and a script that parses a line per
//! job must not be split by a newline inside a value.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as it is: C0 and C1 controls,
/// DEL, and the characters that change how the text around them is
/// shown (bidi embeddings, overrides and isolates, the line and paragraph
/// separators, the Arabic letter mark, the zero-width space and the
/// invisible operators that hide text). The zero-width joiners, which
/// scripts and emoji need, are left alone.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'              // Arabic letter mark
                | '\u{200B}' | '\u{200E}' | '\u{200F}' // zero-width space, LRM, RLM
                | '\u{2028}' | '\u{2029}' // line and paragraph separators
                | '\u{202A}'..='\u{202E}' // bidi embeddings and overrides
                | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
                | '\u{2066}'..='\u{2069}' // bidi isolates
                | '\u{FEFF}' // zero-width no-break space
        )
}

/// `s` with every character a terminal would act on replaced by a visible
/// escape; borrowed unchanged when there is none (the common case).
pub fn term(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_unsafe(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

/// [`term`] for text that may span lines on purpose (a ClassAd printed
/// one attribute a line, a block of table rows): each line escaped, the
/// line breaks kept.
pub fn term_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Cow::Borrowed(s);
    }
    let lines: Vec<Cow<'_, str>> = s.split('\n').map(term).collect();
    Cow::Owned(lines.join("\n"))
}

/// A JSON document with the characters JSON itself allows raw in strings
/// but a terminal acts on (DEL, C1 controls, bidi and invisible format
/// characters) written as `\uXXXX` escapes: the same JSON value, safe to
/// print. `serde_json` already escapes C0 controls. These characters can
/// only occur inside strings, so each is replaced where it stands.
pub fn json(doc: &str) -> Cow<'_, str> {
    if !doc.chars().any(is_unsafe_in_json) {
        return Cow::Borrowed(doc);
    }
    let mut out = String::with_capacity(doc.len() + 16);
    for c in doc.chars() {
        if is_unsafe_in_json(c) {
            // Every such character is in the Basic Multilingual Plane.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The unsafe characters a JSON writer leaves raw (it escapes C0 itself;
/// a raw newline between tokens of pretty output is layout, not data).
fn is_unsafe_in_json(c: char) -> bool {
    is_unsafe(c) && u32::from(c) >= 0x20
}

/// Escapes a byte stream arriving in pieces (a job's output shown to
/// someone else's terminal): line breaks and tabs kept, every other
/// unsafe character escaped as [`term`] does, bytes that are not UTF-8 as
/// `\xHH`. A character split between two pieces is escaped whole.
#[derive(Debug, Default)]
pub struct StreamEscaper {
    carry: Vec<u8>,
}

impl StreamEscaper {
    /// The escaped text of `bytes` (and of what the last piece left
    /// incomplete).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(bytes);
        let mut out = String::with_capacity(buf.len());
        let mut rest: &[u8] = &buf;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    push_stream_text(&mut out, s);
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    // The prefix was just checked to be UTF-8.
                    push_stream_text(&mut out, std::str::from_utf8(good).unwrap_or_default());
                    match e.error_len() {
                        // Incomplete at the end: wait for the next piece.
                        None => {
                            self.carry = bad.to_vec();
                            break;
                        }
                        Some(n) => {
                            for b in &bad[..n] {
                                let _ = write!(out, "\\x{b:02x}");
                            }
                            rest = &bad[n..];
                        }
                    }
                }
            }
        }
        out
    }
}

fn push_stream_text(out: &mut String, s: &str) {
    for c in s.chars() {
        if c == '\n' || c == '\t' || !is_unsafe(c) {
            out.push(c);
        } else {
            out.push_str(&term(c.encode_utf8(&mut [0; 4])));
        }
    }
}

/// Prints `text` and a newline on standard output, every line escaped.
pub fn emit(text: &str) {
    println!("{}", term_lines(text));
}

/// [`emit`] on standard error.
pub fn emit_err(text: &str) {
    eprintln!("{}", term_lines(text));
}

/// Table cells, each escaped: one line per cell whatever the user wrote.
pub fn cells(row: Vec<String>) -> Vec<String> {
    row.into_iter()
        .map(|c| match term(&c) {
            Cow::Borrowed(_) => c,
            Cow::Owned(o) => o,
        })
        .collect()
}

/// `println!` for renderers: the formatted text goes out escaped.
macro_rules! say {
    ($($t:tt)*) => { $crate::output::escape::emit(&format!($($t)*)) };
}

/// `eprintln!` for renderers, escaped.
macro_rules! shout {
    ($($t:tt)*) => { $crate::output::escape::emit_err(&format!($($t)*)) };
}

pub(crate) use {say, shout};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in ["", "/bin/sleep 60", "Jörg's café 日本", "C:\\path\\x1b"] {
            assert!(matches!(term(s), Cow::Borrowed(t) if t == s));
        }
    }

    #[test]
    fn control_sequences_become_visible() {
        assert_eq!(term("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(term("\x07bell"), "\\x07bell");
        assert_eq!(term("\x1b]0;owned\x07title"), "\\x1b]0;owned\\x07title");
        assert_eq!(term("\u{9b}31m"), "\\u{009b}31m");
        assert_eq!(term("x\u{7f}"), "x\\x7f");
        assert_eq!(term("one\ntwo\r\tthree"), "one\\ntwo\\r\\tthree");
        assert_eq!(term("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(term("a\u{2066}b\u{2069}"), "a\\u{2066}b\\u{2069}");
        assert_eq!(term("\0"), "\\x00");
    }

    #[test]
    fn lines_keep_their_breaks() {
        assert_eq!(
            term_lines("A = 1\nB = \"\x1b\"\n"),
            "A = 1\nB = \"\\x1b\"\n"
        );
        assert!(matches!(term_lines("A = 1\nB = 2\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_the_same_value() {
        let v = serde_json::json!({ "a": "x\u{9b}y\u{202e}z\u{7f}\x1b" });
        let doc = serde_json::to_string_pretty(&v).unwrap();
        let safe = json(&doc);
        assert!(!safe.chars().any(|c| c != '\n' && is_unsafe(c)), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn streams_keep_lines_and_split_characters() {
        let mut e = StreamEscaper::default();
        let bytes = "a\x1b[2Jb\né\u{9b}\tz\n".as_bytes();
        // Fed a byte at a time, the same as fed whole.
        let mut one = String::new();
        for b in bytes {
            one.push_str(&e.push(std::slice::from_ref(b)));
        }
        let whole = StreamEscaper::default().push(bytes);
        assert_eq!(one, whole);
        assert_eq!(whole, "a\\x1b[2Jb\né\\u{009b}\tz\n");
        let mut e = StreamEscaper::default();
        assert_eq!(e.push(&[b'x', 0xff, b'y', 0xc3]), "x\\xffy");
        // The incomplete character waits for the rest of it.
        assert_eq!(e.push(&[0xa9]), "é");
    }

    proptest! {
        #[test]
        fn nothing_unsafe_survives(s in any::<String>()) {
            let t = term(&s);
            prop_assert!(!t.chars().any(is_unsafe));
            // Safe text is never changed.
            if !s.chars().any(is_unsafe) {
                prop_assert_eq!(t.as_ref(), s.as_str());
            }
        }

        #[test]
        fn json_escaping_keeps_the_value(s in any::<String>()) {
            let v = serde_json::json!([s]);
            let doc = serde_json::to_string(&v).unwrap();
            let safe = json(&doc);
            prop_assert!(!safe.chars().any(is_unsafe));
            let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
            prop_assert_eq!(back, v);
        }
    }
}
