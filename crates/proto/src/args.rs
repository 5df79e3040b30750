//! HTCondor's two syntaxes for a job's arguments and environment, read as
//! `condor_submit` reads them and written as its job ads hold them.
//!
//! - **V2** (a value in double quotes): words separated by whitespace,
//!   single quotes group text with blanks (`''` inside them is a `'`), and
//!   `""` is a literal `"` (the submit file's escape, gone once read). The
//!   job ad keeps the *raw* form, without the outer quotes and with `"`
//!   as itself: `Arguments = "one 'two words'"`, `Environment = "A=1
//!   B='x y'"`. Writing a word quotes each blank and `'` alone, merging
//!   neighbouring quoted runs, as HTCondor does (`a b` → `a' 'b`).
//! - **V1** (anything else): arguments split on blanks, `\"` a literal
//!   `"` and a bare `"` an error; the ad's `Args` holds them joined by one
//!   space. The environment is `NAME=VALUE` entries separated by `;` (or
//!   by the first character, when it is one of HTCondor's delimiters), each
//!   entry's leading blanks dropped and the rest kept as written, blanks
//!   in names and values too (`A = b` sets `"A "` to `" b"`); the ad's
//!   `Env` joins them with `;` and says so in `EnvDelim`.
//!
//! The ad keeps the syntax the file used ([`Syntax`]): V1 input is written
//! as `Args`/`Env`, V2 as `Arguments`/`Environment`, except that HTCondor
//! prefers V2 for an environment unless the file used the `env` command.

use std::collections::BTreeMap;

/// Which of HTCondor's two syntaxes a value was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    V1,
    V2,
}

/// Why an argument or environment string cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("unterminated single quote")]
    UnterminatedQuote,
    #[error("unterminated double quote")]
    UnterminatedDoubleQuote,
    #[error(
        "unexpected characters after the closing double quote (a double quote inside a \
         double-quoted value is written twice: \"\")"
    )]
    TrailingText,
    #[error(
        "a double quote without a backslash in old-style (unquoted) text: write \\\" for a \
         literal double quote, or put the whole value in double quotes"
    )]
    LoneDoubleQuote,
    #[error("missing '=' after environment variable {0:?}")]
    NotAssignment(String),
    #[error("missing variable name in {0:?}")]
    MissingName(String),
    #[error(
        "environment entry {0:?} cannot be written in the old (env) syntax, which has no way to \
         hold ';' or a newline; use environment = \"...\""
    )]
    NotV1(String),
}

/// Blanks as HTCondor's argument syntaxes know them.
fn blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Whether `value` is in V2 syntax: its first non-blank is a `"`.
pub fn is_v2_quoted(value: &str) -> bool {
    value.trim_start().starts_with('"')
}

/// The raw text of a V2-quoted value: the outer quotes removed, `""`
/// turned into `"`; blanks may follow the closing quote, nothing else.
pub fn v2_quoted_to_raw(value: &str) -> Result<String, ArgsError> {
    let v = value.trim_start();
    let Some(rest) = v.strip_prefix('"') else {
        return Err(ArgsError::UnterminatedDoubleQuote);
    };
    let mut out = String::with_capacity(rest.len());
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            if chars.peek() == Some(&'"') {
                chars.next();
                out.push('"');
                continue;
            }
            return if chars.all(char::is_whitespace) {
                Ok(out)
            } else {
                Err(ArgsError::TrailingText)
            };
        }
        out.push(c);
    }
    Err(ArgsError::UnterminatedDoubleQuote)
}

/// Splits V2 raw text into words (HTCondor's `split_args`).
pub fn split_v2_raw(s: &str) -> Result<Vec<String>, ArgsError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        None => return Err(ArgsError::UnterminatedQuote),
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                            cur.push('\'');
                        }
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                    }
                }
            }
            c if blank(c) => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Appends one word to V2 raw text as HTCondor writes it: each blank and
/// `'` in single quotes (`'` doubled), neighbouring quoted runs merged; an
/// empty word as `''`.
fn append_v2_word(out: &mut String, word: &str) {
    if !out.is_empty() {
        out.push(' ');
    }
    if word.is_empty() {
        out.push_str("''");
    }
    for c in word.chars() {
        if blank(c) || c == '\'' {
            // Reopen the quoted run just closed rather than start another.
            if out.ends_with('\'') {
                out.pop();
            } else {
                out.push('\'');
            }
            if c == '\'' {
                out.push('\'');
            }
            out.push(c);
            out.push('\'');
        } else {
            out.push(c);
        }
    }
}

/// Words as V2 raw text (HTCondor's `join_args`): what the job ad's
/// `Arguments` and `Environment` hold. [`split_v2_raw`] gives them back.
pub fn join_v2_raw<S: AsRef<str>>(words: &[S]) -> String {
    let mut out = String::new();
    for w in words {
        append_v2_word(&mut out, w.as_ref());
    }
    out
}

/// Words as a V2-quoted value, as a submit file writes it.
pub fn v2_quoted<S: AsRef<str>>(words: &[S]) -> String {
    format!("\"{}\"", join_v2_raw(words).replace('"', "\"\""))
}

/// Arguments as V1 raw text (the ad's `Args`): joined by one space;
/// `None` when an argument holds a blank, which V1 cannot express.
pub fn join_v1_raw<S: AsRef<str>>(args: &[S]) -> Option<String> {
    if args.iter().any(|a| a.as_ref().contains(blank)) {
        return None;
    }
    Some(args.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(" "))
}

/// Reads an `arguments` value in either syntax.
pub fn parse_arguments_syntax(value: &str) -> Result<(Vec<String>, Syntax), ArgsError> {
    if is_v2_quoted(value) {
        let raw = v2_quoted_to_raw(value)?;
        return Ok((split_v2_raw(&raw)?, Syntax::V2));
    }
    // V1: `\"` is a literal quote, a bare one an error; blanks separate.
    let mut raw = String::with_capacity(value.len());
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Err(ArgsError::LoneDoubleQuote),
            '\\' if chars.peek() == Some(&'"') => {
                chars.next();
                raw.push('"');
            }
            c => raw.push(c),
        }
    }
    let args = raw
        .split(blank)
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    Ok((args, Syntax::V1))
}

/// The V1 delimiters HTCondor recognises as a value's first character.
const V1_DELIMITERS: &str = "!#$%&*+,-/:;<>?@^`|~\x1F";

/// The V1 delimiter of a Unix job (`EnvDelim`).
pub const ENV_V1_DELIMITER: char = ';';

/// Adds one `NAME=VALUE` entry (HTCondor's `SetEnvWithErrorMessage`):
/// the name is everything before the first `=`, kept as written.
fn set_env(env: &mut BTreeMap<String, String>, entry: &str) -> Result<(), ArgsError> {
    match entry.split_once('=') {
        Some(("", _)) => Err(ArgsError::MissingName(entry.to_string())),
        Some((k, v)) => {
            env.insert(k.to_string(), v.to_string());
            Ok(())
        }
        None => Err(ArgsError::NotAssignment(entry.to_string())),
    }
}

/// Reads an `environment` (or `env`) value in either syntax.
pub fn parse_environment_syntax(
    value: &str,
) -> Result<(BTreeMap<String, String>, Syntax), ArgsError> {
    let mut env = BTreeMap::new();
    if is_v2_quoted(value) {
        let raw = v2_quoted_to_raw(value)?;
        for entry in split_v2_raw(&raw)? {
            set_env(&mut env, &entry)?;
        }
        return Ok((env, Syntax::V2));
    }
    let mut delim = ENV_V1_DELIMITER;
    let mut text = value;
    if let Some(first) = value.chars().next()
        && V1_DELIMITERS.contains(first)
    {
        delim = first;
        text = &value[first.len_utf8()..];
    }
    for entry in text.split([delim, '\n']) {
        let entry = entry.trim_start_matches(blank);
        if !entry.is_empty() {
            set_env(&mut env, entry)?;
        }
    }
    Ok((env, Syntax::V1))
}

/// Whether V1 can hold `s` (no `;`, no newline).
pub fn is_safe_env_v1(s: &str) -> bool {
    !s.contains([ENV_V1_DELIMITER, '\n'])
}

/// The environment as V2 raw text (the ad's `Environment`), by name.
pub fn env_v2_raw(env: &BTreeMap<String, String>) -> String {
    let entries: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    join_v2_raw(&entries)
}

/// The environment as V1 raw text (the ad's `Env`, delimited by
/// [`ENV_V1_DELIMITER`]), or the first entry V1 cannot hold.
pub fn env_v1_raw(env: &BTreeMap<String, String>) -> Result<String, ArgsError> {
    let mut out = String::new();
    for (k, v) in env {
        if !is_safe_env_v1(k) || !is_safe_env_v1(v) {
            return Err(ArgsError::NotV1(format!("{k}={v}")));
        }
        if !out.is_empty() {
            out.push(ENV_V1_DELIMITER);
        }
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn v2_raw_quotes_blanks_one_by_one_as_htcondor() {
        assert_eq!(join_v2_raw(&words(&["a b"])), "a' 'b");
        assert_eq!(join_v2_raw(&words(&["a  b"])), "a'  'b");
        assert_eq!(join_v2_raw(&words(&["it's"])), "it''''s");
        assert_eq!(join_v2_raw(&words(&["", "x"])), "'' x");
        assert_eq!(join_v2_raw(&words(&["say \"hi\""])), "say' '\"hi\"");
        assert_eq!(
            join_v2_raw(&words(&["one", "two words"])),
            "one two' 'words"
        );
    }

    #[test]
    fn both_syntaxes_read_as_condor_submit_reads_them() {
        assert_eq!(
            parse_arguments_syntax(r#""one ""two"" 'spacey ''quoted'' argument'""#).unwrap(),
            (
                words(&["one", "\"two\"", "spacey 'quoted' argument"]),
                Syntax::V2
            )
        );
        assert_eq!(
            parse_arguments_syntax(r#"one \"two\" 'three'"#).unwrap(),
            (words(&["one", "\"two\"", "'three'"]), Syntax::V1)
        );
        assert_eq!(
            parse_arguments_syntax(r#"a "b""#),
            Err(ArgsError::LoneDoubleQuote)
        );
        assert_eq!(
            parse_arguments_syntax(r#""100 "soft"""#),
            Err(ArgsError::TrailingText)
        );
        let (env, s) = parse_environment_syntax("A = b;;C=1").unwrap();
        assert_eq!(s, Syntax::V1);
        assert_eq!(env.get("A "), Some(&" b".to_string()));
        assert_eq!(env.get("C"), Some(&"1".to_string()));
        let (env, _) = parse_environment_syntax("|A=1;2|B=3").unwrap();
        assert_eq!(env.get("A"), Some(&"1;2".to_string()));
        assert!(env_v1_raw(&env).is_err());
        let (env, s) =
            parse_environment_syntax(r#""one=1 two=""2"" three='spacey ''quoted'' value'""#)
                .unwrap();
        assert_eq!(s, Syntax::V2);
        assert_eq!(env.get("two"), Some(&"\"2\"".to_string()));
        assert_eq!(
            env_v2_raw(&env),
            "one=1 three=spacey' '''quoted''' 'value two=\"2\""
        );
        assert!(matches!(
            parse_environment_syntax("=x"),
            Err(ArgsError::MissingName(_))
        ));
    }

    proptest::proptest! {
        #[test]
        fn v2_raw_round_trips(args in proptest::collection::vec("(?s).{0,12}", 0..6)) {
            let raw = join_v2_raw(&args);
            proptest::prop_assert_eq!(split_v2_raw(&raw).unwrap(), args.clone());
            let quoted = v2_quoted(&args);
            proptest::prop_assert_eq!(parse_arguments_syntax(&quoted).unwrap().0, args);
        }
    }
}
