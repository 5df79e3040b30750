//! The DAG file's lines and tokens, as HTCondor 25's DAG parser reads them.
//!
//! A file is read a command at a time ([`Lines`]): blank lines and lines
//! whose first non-blank characters are `#` or `//` are skipped, each line
//! is trimmed, and a line ending in `\` continues on the next one (joined
//! with one blank). Inline submit descriptions are read raw, line by line,
//! up to their closing line ([`Lines::raw`]).
//!
//! A command's tokens ([`Lexer`]) are separated by blanks, tabs and
//! carriage returns. A token may hold quoted parts (`"…"` or `'…'`), in
//! which blanks are kept and a backslash takes the next character as it
//! is; the quotes stay in the token unless the caller asks for them to be
//! trimmed. `key = "value"` pairs may have blanks around `=`
//! ([`Lexer::next_pair`]).

/// One command's text and the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub line: usize,
    pub text: String,
}

/// The commands of one file, in order.
pub struct Lines<'a> {
    raw: std::str::Lines<'a>,
    line_no: usize,
}

fn skip(line: &str) -> bool {
    line.is_empty() || line.starts_with('#') || line.starts_with("//")
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        Lines {
            raw: text.lines(),
            line_no: 0,
        }
    }

    /// The next command (continuation lines joined), or `None` at the end.
    pub fn next_command(&mut self) -> Option<Line> {
        let mut joined = String::new();
        let mut first = 0;
        for raw in self.raw.by_ref() {
            self.line_no += 1;
            let t = raw.trim();
            if skip(t) {
                continue;
            }
            if joined.is_empty() {
                first = self.line_no;
            } else {
                joined.push(' ');
            }
            joined.push_str(t);
            if joined.ends_with('\\') {
                joined.pop();
            } else {
                return Some(Line {
                    line: first,
                    text: joined,
                });
            }
        }
        // A last line ending in a continuation: what was gathered.
        (!joined.is_empty()).then_some(Line {
            line: first,
            text: joined,
        })
    }

    /// The next non-blank, non-comment line, trimmed, without joining
    /// continuations (the lines of an inline submit description).
    pub fn raw(&mut self) -> Option<Line> {
        for raw in self.raw.by_ref() {
            self.line_no += 1;
            let t = raw.trim();
            if skip(t) {
                continue;
            }
            return Some(Line {
                line: self.line_no,
                text: t.to_string(),
            });
        }
        None
    }

    /// Line number of the last line read.
    pub fn line_no(&self) -> usize {
        self.line_no
    }
}

/// Whether a token's quotes are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quotes {
    Keep,
    Trim,
}

/// Tokens of one command.
#[derive(Clone, Debug)]
pub struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

fn is_delim(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r')
}

fn is_quote(c: char) -> bool {
    c == '"' || c == '\''
}

impl<'a> Lexer<'a> {
    pub fn new(s: &'a str) -> Self {
        Lexer { s, pos: 0 }
    }

    /// The next token, `Ok(None)` at the end; an unterminated quote is an
    /// error.
    pub fn next(&mut self, quotes: Quotes) -> Result<Option<String>, String> {
        let mut token = String::new();
        let mut started = false;
        let mut escaped = false;
        let mut quote: Option<char> = None;
        let rest = &self.s[self.pos..];
        let mut consumed = rest.len();
        for (i, c) in rest.char_indices() {
            if escaped {
                token.push(c);
                escaped = false;
            } else if let Some(q) = quote {
                if c == '\\' {
                    escaped = true;
                } else if c == q {
                    if quotes == Quotes::Keep {
                        token.push(q);
                    }
                    quote = None;
                } else {
                    token.push(c);
                }
            } else if is_delim(c) {
                if started {
                    consumed = i;
                    break;
                }
            } else {
                started = true;
                if is_quote(c) {
                    quote = Some(c);
                    if quotes == Quotes::Keep {
                        token.push(c);
                    }
                } else {
                    token.push(c);
                }
            }
        }
        self.pos += consumed;
        if quote.is_some() {
            return Err("invalid quoting: no ending quote found".into());
        }
        Ok(started.then_some(token))
    }

    /// The next token with its quotes kept.
    pub fn word(&mut self) -> Result<Option<String>, String> {
        self.next(Quotes::Keep)
    }

    /// The next token without moving on.
    pub fn peek(&self) -> Option<String> {
        self.clone().next(Quotes::Keep).ok().flatten()
    }

    /// The rest of the command, trimmed (possibly empty).
    pub fn remain(&mut self) -> String {
        let r = self.s[self.pos..].trim().to_string();
        self.pos = self.s.len();
        r
    }

    /// Whether only blanks are left.
    pub fn at_end(&self) -> bool {
        self.s[self.pos..].chars().all(is_delim)
    }

    /// The next `key=value` pair (blanks allowed around `=`), `Ok(None)` at
    /// the end. The value is one token: its quotes are trimmed when asked
    /// (an unquoted value stays as written).
    pub fn next_pair(&mut self, quotes: Quotes) -> Result<Option<(String, String)>, String> {
        let rest = &self.s[self.pos..];
        let mut key = String::new();
        let mut after_equals = false;
        let mut iter = rest.char_indices().peekable();
        // The key: up to a blank or `=`.
        while let Some(&(_, c)) = iter.peek() {
            if is_delim(c) && key.is_empty() {
                iter.next();
                continue;
            }
            if is_delim(c) || c == '=' {
                break;
            }
            if is_quote(c) {
                return Err("VARS key contains a quotation mark".into());
            }
            key.push(c);
            iter.next();
        }
        if key.is_empty() {
            if let Some(&(_, '=')) = iter.peek() {
                return Err("key=value pair has no key".into());
            }
            self.pos = self.s.len();
            return Ok(None);
        }
        // The `=`, with blanks on either side.
        let mut value_at = None;
        for (i, c) in iter {
            if is_delim(c) {
                continue;
            }
            if c == '=' {
                if after_equals {
                    return Err(format!("key {key:?}: two `=` in one pair"));
                }
                after_equals = true;
                continue;
            }
            if !after_equals {
                return Err(format!(
                    "{key:?} is not followed by `=`: expected key=\"value\""
                ));
            }
            value_at = Some(i);
            break;
        }
        let Some(at) = value_at else {
            return Err(if after_equals {
                format!("key {key:?} has no value")
            } else {
                format!("{key:?} is not followed by `=`: expected key=\"value\"")
            });
        };
        self.pos += at;
        let value = self
            .next(Quotes::Keep)?
            .ok_or_else(|| format!("key {key:?} has no value"))?;
        let value = match value.chars().next() {
            Some(q) if is_quote(q) && quotes == Quotes::Trim => {
                // `next` guarantees a matching closing quote at the end of a
                // quoted token that starts with a quote, unless the token
                // continued after it (`"a"b`): keep those as written.
                if value.len() >= 2 && value.ends_with(q) {
                    value[1..value.len() - 1].to_string()
                } else {
                    value
                }
            }
            _ => value,
        };
        Ok(Some((key, value)))
    }
}

/// Keyword comparison as HTCondor does it: any case, `-` and `_` alike.
pub fn is_keyword(token: &str, keyword: &str) -> bool {
    let norm = |c: char| {
        if c == '-' {
            '_'
        } else {
            c.to_ascii_lowercase()
        }
    };
    token.len() == keyword.len() && token.chars().map(norm).eq(keyword.chars().map(norm))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        let mut l = Lexer::new(s);
        let mut out = Vec::new();
        while let Some(w) = l.word().unwrap() {
            out.push(w);
        }
        out
    }

    #[test]
    fn tokens_keep_quoted_blanks() {
        assert_eq!(
            words("JOB  a\t'b c' \"d\\\"e\""),
            ["JOB", "a", "'b c'", "\"d\"e\""]
        );
        let mut l = Lexer::new("\"x y\" z");
        assert_eq!(l.next(Quotes::Trim).unwrap().as_deref(), Some("x y"));
        assert!(Lexer::new("\"open").word().is_err());
    }

    #[test]
    fn pairs_allow_blanks_around_equals() {
        let mut l = Lexer::new(r#"a = "1" b="x \"y\"" c='q' d=plain +E = "\"s\"""#);
        let mut got = Vec::new();
        while let Some(p) = l.next_pair(Quotes::Trim).unwrap() {
            got.push(p);
        }
        assert_eq!(
            got,
            [
                ("a".into(), "1".into()),
                ("b".into(), "x \"y\"".into()),
                ("c".into(), "q".into()),
                ("d".into(), "plain".into()),
                ("+E".into(), "\"s\"".into()),
            ]
        );
        assert!(Lexer::new("a").next_pair(Quotes::Trim).is_err());
        assert!(Lexer::new("a =").next_pair(Quotes::Trim).is_err());
        assert!(Lexer::new("= 1").next_pair(Quotes::Trim).is_err());
        assert!(Lexer::new("a == 1").next_pair(Quotes::Trim).is_err());
    }

    #[test]
    fn lines_skip_comments_and_join_continuations() {
        let text = "# c\n\n  JOB a \\\n   a.sub\n// x\nPARENT a CHILD b\\";
        let mut l = Lines::new(text);
        assert_eq!(
            l.next_command(),
            Some(Line {
                line: 3,
                text: "JOB a  a.sub".into()
            })
        );
        assert_eq!(
            l.next_command(),
            Some(Line {
                line: 6,
                text: "PARENT a CHILD b".into()
            })
        );
        assert_eq!(l.next_command(), None);
    }

    #[test]
    fn keywords_ignore_case_and_dashes() {
        assert!(is_keyword("abort-dag-on", "ABORT_DAG_ON"));
        assert!(is_keyword("Unless-Exit", "UNLESS_EXIT"));
        assert!(!is_keyword("RETRYX", "RETRY"));
    }
}
