//! Tokenizer for the ClassAd language.

use crate::error::ParseError;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// Integer literal; kept wide so that `-9223372036854775808` can be folded exactly.
    Int(i128),
    Real(f64),
    Str(String),
    /// An identifier; `quoted` is true for `'odd name'` attribute names (never keywords).
    Ident {
        name: String,
        quoted: bool,
    },
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Semi,
    Dot,
    Question,
    Colon,
    Assign,
    Op(&'static str),
    Eof,
}

#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub offset: usize,
}

/// Splits `src` into tokens. Never panics.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    let bytes = src.as_bytes();
    let mut i = 0usize;
    let mut out = Vec::new();
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // Comments: `// ...` to end of line and `/* ... */`.
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            let start = i;
            i += 2;
            loop {
                if i + 1 >= bytes.len() {
                    return Err(ParseError::at(src, start, "unterminated comment"));
                }
                if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let (tok, end) = lex_number(src, i)?;
            out.push(Token { tok, offset: start });
            i = end;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident {
                    name: src[start..i].to_string(),
                    quoted: false,
                },
                offset: start,
            });
            continue;
        }
        if c == b'"' || c == b'\'' {
            let (s, end) = lex_quoted(src, i, c)?;
            let tok = if c == b'"' {
                Tok::Str(s)
            } else {
                if s.is_empty() {
                    return Err(ParseError::at(src, start, "empty quoted attribute name"));
                }
                Tok::Ident {
                    name: s,
                    quoted: true,
                }
            };
            out.push(Token { tok, offset: start });
            i = end;
            continue;
        }
        let rest = &bytes[i..];
        let three: &[(&[u8], &'static str)] = &[(b"=?=", "=?="), (b"=!=", "=!="), (b">>>", ">>>")];
        let two: &[(&[u8], &'static str)] = &[
            (b"==", "=="),
            (b"!=", "!="),
            (b"<=", "<="),
            (b">=", ">="),
            (b"<<", "<<"),
            (b">>", ">>"),
            (b"&&", "&&"),
            (b"||", "||"),
        ];
        if let Some((pat, op)) = three.iter().find(|(p, _)| rest.starts_with(p)) {
            out.push(Token {
                tok: Tok::Op(op),
                offset: start,
            });
            i += pat.len();
            continue;
        }
        if let Some((pat, op)) = two.iter().find(|(p, _)| rest.starts_with(p)) {
            out.push(Token {
                tok: Tok::Op(op),
                offset: start,
            });
            i += pat.len();
            continue;
        }
        let tok = match c {
            b'(' => Tok::LParen,
            b')' => Tok::RParen,
            b'{' => Tok::LBrace,
            b'}' => Tok::RBrace,
            b'[' => Tok::LBracket,
            b']' => Tok::RBracket,
            b',' => Tok::Comma,
            b';' => Tok::Semi,
            b'.' => Tok::Dot,
            b'?' => Tok::Question,
            b':' => Tok::Colon,
            b'=' => Tok::Assign,
            b'<' => Tok::Op("<"),
            b'>' => Tok::Op(">"),
            b'+' => Tok::Op("+"),
            b'-' => Tok::Op("-"),
            b'*' => Tok::Op("*"),
            b'/' => Tok::Op("/"),
            b'%' => Tok::Op("%"),
            b'!' => Tok::Op("!"),
            b'~' => Tok::Op("~"),
            b'&' => Tok::Op("&"),
            b'|' => Tok::Op("|"),
            b'^' => Tok::Op("^"),
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(ParseError::at(
                    src,
                    start,
                    format!("unexpected character {ch:?}"),
                ));
            }
        };
        out.push(Token { tok, offset: start });
        i += 1;
    }
    out.push(Token {
        tok: Tok::Eof,
        offset: bytes.len(),
    });
    Ok(out)
}

fn lex_number(src: &str, start: usize) -> Result<(Tok, usize), ParseError> {
    let bytes = src.as_bytes();
    let mut i = start;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    let mut is_real = false;
    if i < bytes.len() && bytes[i] == b'.' {
        // HTCondor requires a digit after the point ("5." is a syntax error).
        if bytes.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
            is_real = true;
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        } else {
            return Err(ParseError::at(src, i, "expected a digit after '.'"));
        }
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            is_real = true;
            i = j;
        } else {
            return Err(ParseError::at(src, i, "malformed exponent"));
        }
    }
    if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
        return Err(ParseError::at(
            src,
            i,
            "unexpected letter in numeric literal (hex/octal literals are not supported)",
        ));
    }
    let text = &src[start..i];
    if is_real {
        let v: f64 = text
            .parse()
            .map_err(|_| ParseError::at(src, start, "invalid real literal"))?;
        Ok((Tok::Real(v), i))
    } else {
        // Like strtoll, out-of-range integers saturate (see `Parser::primary`).
        let v = text.parse::<i128>().unwrap_or(i128::MAX);
        Ok((Tok::Int(v), i))
    }
}

fn lex_quoted(src: &str, start: usize, quote: u8) -> Result<(String, usize), ParseError> {
    let bytes = src.as_bytes();
    let mut i = start + 1;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let Some(&c) = bytes.get(i) else {
            return Err(ParseError::at(src, start, "unterminated string"));
        };
        if c == quote {
            i += 1;
            break;
        }
        if c == b'\\' {
            let Some(&e) = bytes.get(i + 1) else {
                return Err(ParseError::at(src, start, "unterminated string"));
            };
            i += 2;
            match e {
                b'n' => buf.push(b'\n'),
                b't' => buf.push(b'\t'),
                b'r' => buf.push(b'\r'),
                b'b' => buf.push(8),
                b'f' => buf.push(12),
                b'0'..=b'7' => {
                    // Up to three octal digits (two more only if the first is 0-3).
                    let mut v: u32 = u32::from(e - b'0');
                    let max_more = if e <= b'3' { 2 } else { 1 };
                    let mut n = 0;
                    while n < max_more {
                        match bytes.get(i) {
                            Some(&d @ b'0'..=b'7') => {
                                v = v * 8 + u32::from(d - b'0');
                                i += 1;
                                n += 1;
                            }
                            _ => break,
                        }
                    }
                    buf.push((v & 0xff) as u8);
                }
                // Any other escaped character stands for itself (`\"`, `\\`, `\'`, `\x`).
                other => buf.push(other),
            }
            continue;
        }
        buf.push(c);
        i += 1;
    }
    Ok((String::from_utf8_lossy(&buf).into_owned(), i))
}
