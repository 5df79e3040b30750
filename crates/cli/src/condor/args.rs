//! HTCondor's command-line conventions: single-dash long options that may
//! be abbreviated down to a minimum prefix (`-const` for `-constraint`,
//! `-tot` for `-totals`), a double dash asking for the whole word, and
//! `-af:jh`-style qualifiers after a colon. The same rules as HTCondor's
//! `is_dash_arg_prefix` and `is_dash_arg_colon_prefix`, written for a
//! cursor over the arguments.

use std::ffi::OsString;

/// Whether `arg` names option `word` when at least `min` letters are
/// given (`min` 0 or 1: any non-empty prefix). `--word` must be whole.
pub fn is_opt(arg: &str, word: &str, min: usize) -> bool {
    opt_with_colon(arg, word, min).is_some_and(|(_, colon)| colon.is_none())
}

/// [`is_opt`] allowing `-word:QUALIFIERS`: returns the qualifiers (after
/// the colon) when given.
pub fn opt_colon<'a>(arg: &'a str, word: &str, min: usize) -> Option<Option<&'a str>> {
    opt_with_colon(arg, word, min).map(|(_, colon)| colon)
}

fn opt_with_colon<'a>(arg: &'a str, word: &str, min: usize) -> Option<(&'a str, Option<&'a str>)> {
    let rest = arg.strip_prefix('-')?;
    let (rest, whole) = match rest.strip_prefix('-') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let (name, colon) = match rest.split_once(':') {
        Some((n, q)) => (n, Some(q)),
        None => (rest, None),
    };
    if name.is_empty() || !word.starts_with(name) {
        return None;
    }
    if whole && name != word {
        return None;
    }
    if name.len() < min.max(1) {
        return None;
    }
    Some((name, colon))
}

/// The arguments of one command, read left to right.
#[derive(Debug)]
pub struct Cursor {
    args: Vec<String>,
    pos: usize,
    /// The command's name, for messages (`condor_q`).
    pub tool: String,
}

/// A command-line problem: the message to print and the exit status.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Usage {
    pub message: String,
    pub status: u8,
}

impl Usage {
    pub fn new(message: impl Into<String>) -> Usage {
        Usage {
            message: message.into(),
            status: 1,
        }
    }
}

impl Cursor {
    /// `args` without the command's name. Arguments that are not UTF-8
    /// are refused (every option and value HTCondor's tools take is
    /// text).
    pub fn new(tool: &str, args: Vec<OsString>) -> Result<Cursor, Usage> {
        let args = args
            .into_iter()
            .map(|a| {
                a.into_string().map_err(|a| {
                    Usage::new(format!(
                        "{tool}: argument {:?} is not valid UTF-8",
                        a.to_string_lossy()
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Cursor {
            args,
            pos: 0,
            tool: tool.to_string(),
        })
    }

    /// The next argument, consumed.
    pub fn next(&mut self) -> Option<String> {
        let a = self.args.get(self.pos).cloned();
        if a.is_some() {
            self.pos += 1;
        }
        a
    }

    /// The next argument, not consumed.
    pub fn peek(&self) -> Option<&str> {
        self.args.get(self.pos).map(String::as_str)
    }

    /// The value of option `opt`: the next argument, which must exist
    /// (and, with `no_dash`, must not look like an option).
    pub fn value(&mut self, opt: &str, no_dash: bool) -> Result<String, Usage> {
        match self.peek() {
            Some(v) if !(no_dash && v.starts_with('-') && v != "-") => {
                let v = v.to_string();
                self.pos += 1;
                Ok(v)
            }
            _ => Err(Usage::new(format!(
                "{}: {opt} requires another argument",
                self.tool
            ))),
        }
    }

    /// Every following argument up to the next that starts with `-`; a
    /// lone `-` ends the list and is consumed (HTCondor's `-af` rule).
    pub fn words(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(a) = self.peek() {
            if a == "-" {
                self.pos += 1;
                break;
            }
            if a.starts_with('-') {
                break;
            }
            out.push(a.to_string());
            self.pos += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_as_htcondor_matches_them() {
        assert!(is_opt("-constraint", "constraint", 1));
        assert!(is_opt("-const", "constraint", 1));
        assert!(is_opt("-c", "constraint", 1));
        assert!(is_opt("-tot", "totals", 3));
        assert!(!is_opt("-to", "totals", 3));
        assert!(!is_opt("-totalsx", "totals", 3));
        assert!(is_opt("--totals", "totals", 3));
        assert!(!is_opt("--tot", "totals", 3));
        assert!(!is_opt("totals", "totals", 1));
        assert!(!is_opt("-", "totals", 0));
        assert!(!is_opt("-af:j", "af", 2));
        assert_eq!(opt_colon("-af:jr", "af", 2), Some(Some("jr")));
        assert_eq!(opt_colon("-af", "af", 2), Some(None));
        assert_eq!(opt_colon("-autoformat:h", "autoformat", 5), Some(Some("h")));
        assert_eq!(opt_colon("-auto:h", "autoformat", 5), None);
        assert_eq!(opt_colon("-a", "af", 2), None);
    }

    #[test]
    fn lists_end_at_the_next_option() {
        let mut c = Cursor::new(
            "condor_q",
            ["A", "B", "-", "C", "-x"]
                .iter()
                .map(OsString::from)
                .collect(),
        )
        .unwrap();
        assert_eq!(c.words(), ["A", "B"]);
        assert_eq!(c.next().as_deref(), Some("C"));
        assert!(c.value("-name", true).is_err());
        assert_eq!(c.value("-format", false).unwrap(), "-x");
    }
}
