//! File transfer: `should_transfer_files`, `when_to_transfer_output`,
//! `transfer_input_files`, `transfer_output_files` and the standard files'
//! `transfer_input`, `transfer_output`, `transfer_error`, read with
//! HTCondor's spellings and refused in the combinations HTCondor's submit
//! refuses (with its reasons), once every command of a proc is known.
//!
//! Gleaner's default is `should_transfer_files = YES` (its stations share
//! no file system), where HTCondor's is `IF_NEEDED`.

use super::build::parse_bool;
use super::{Assignment, ErrorSink, SubmitErrorKind};
use crate::job::{JobDescription, ShouldTransferFiles, WhenToTransferOutput};

/// The commands this module reads.
pub(super) const COMMANDS: &[&str] = &[
    "should_transfer_files",
    "when_to_transfer_output",
    "transfer_input_files",
    "transfer_output_files",
    "transfer_input",
    "transfer_output",
    "transfer_error",
];

/// `when_to_transfer_output`, with HTCondor's `NEVER` (no transfer at
/// all), which only `should_transfer_files = NO` goes with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    Output(WhenToTransferOutput),
    Never,
}

/// What the commands said, gathered before they are checked together.
#[derive(Default)]
pub(super) struct Transfer {
    should: Option<(ShouldTransferFiles, Assignment)>,
    when: Option<(When, Assignment)>,
    inputs: Option<Assignment>,
    outputs: Option<Assignment>,
}

fn bad(errs: &mut ErrorSink, a: &Assignment, reason: String) {
    errs.push_at(
        a,
        SubmitErrorKind::BadValue {
            key: a.name.clone(),
            reason,
        },
    );
}

/// A file list as HTCondor splits it: on commas, each name trimmed (blanks
/// inside a name are part of it), quotes around the whole list dropped.
pub(super) fn file_list(v: &str) -> Vec<String> {
    let v = v.trim();
    let v = v
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(v);
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether a file name is a URL (`scheme://…`), which HTCondor hands to
/// a file-transfer plugin.
fn is_url(name: &str) -> bool {
    name.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    })
}

impl Transfer {
    /// Reads command `name` (one of [`COMMANDS`]) with its expanded value.
    pub(super) fn gather(
        &mut self,
        name: &str,
        value: &str,
        a: &Assignment,
        d: &mut JobDescription,
        errs: &mut ErrorSink,
    ) {
        let upper = value.to_ascii_uppercase();
        match name {
            "should_transfer_files" => {
                let stf = match upper.as_str() {
                    "YES" | "TRUE" | "ALWAYS" => ShouldTransferFiles::Yes,
                    "NO" | "FALSE" | "NEVER" => ShouldTransferFiles::No,
                    "IF_NEEDED" | "AUTO" => ShouldTransferFiles::IfNeeded,
                    _ => {
                        return bad(
                            errs,
                            a,
                            format!("\"{value}\" (expected YES, NO or IF_NEEDED)"),
                        );
                    }
                };
                self.should = Some((stf, a.clone()));
            }
            "when_to_transfer_output" => {
                let when = match upper.as_str() {
                    "ON_EXIT" | "ONEXIT" => When::Output(WhenToTransferOutput::OnExit),
                    "ON_EXIT_OR_EVICT" | "ALWAYS" => {
                        When::Output(WhenToTransferOutput::OnExitOrEvict)
                    }
                    "ON_SUCCESS" | "ONSUCCESS" => When::Output(WhenToTransferOutput::OnSuccess),
                    "NONE" | "NULL" => When::Never,
                    _ => {
                        return bad(
                            errs,
                            a,
                            format!(
                                "\"{value}\" (expected ON_EXIT, ON_EXIT_OR_EVICT or ON_SUCCESS)"
                            ),
                        );
                    }
                };
                self.when = Some((when, a.clone()));
            }
            "transfer_input_files" => {
                d.transfer_input_files = file_list(value);
                if let Some(url) = d.transfer_input_files.iter().find(|f| is_url(f)) {
                    return bad(
                        errs,
                        a,
                        format!(
                            "\"{url}\" is a URL: Gleaner transfers inputs from your directory \
                             only (it has no file-transfer plugins)"
                        ),
                    );
                }
                if !d.transfer_input_files.is_empty() {
                    self.inputs = Some(a.clone());
                }
            }
            // Empty is not given, as in HTCondor; `""` lists nothing.
            "transfer_output_files" if !value.is_empty() => {
                d.transfer_output_files = Some(file_list(value));
                self.outputs = Some(a.clone());
            }
            "transfer_input" | "transfer_output" | "transfer_error" => match parse_bool(value) {
                Some(b) => {
                    let flag = match name {
                        "transfer_input" => &mut d.untransferred.input,
                        "transfer_output" => &mut d.untransferred.output,
                        _ => &mut d.untransferred.error,
                    };
                    *flag = !b;
                }
                None => bad(errs, a, format!("\"{value}\" is not true or false")),
            },
            _ => {}
        }
    }

    /// Checks the commands together as HTCondor's submit does and sets
    /// the description's transfer mode.
    pub(super) fn finish(self, d: &mut JobDescription, errs: &mut ErrorSink) {
        let should = self.should.as_ref().map(|(s, _)| *s);
        if should == Some(ShouldTransferFiles::No) {
            let listed = match (&self.inputs, &self.outputs) {
                (Some(a), Some(_)) => {
                    Some((a, "\"transfer_input_files\" and \"transfer_output_files\""))
                }
                (Some(a), None) => Some((a, "\"transfer_input_files\"")),
                (None, Some(a)) => Some((a, "\"transfer_output_files\"")),
                (None, None) => None,
            };
            if let Some((a, what)) = listed {
                return bad(
                    errs,
                    a,
                    format!(
                        "you specified files to transfer via {what}, but you disabled \
                         should_transfer_files"
                    ),
                );
            }
        }
        // `should_transfer_files = NO` alone means no output transfer.
        let when = match (&self.when, should) {
            (Some((w, _)), _) => Some(*w),
            (None, Some(ShouldTransferFiles::No)) => Some(When::Never),
            (None, _) => None,
        };
        let contradiction = match (should, when) {
            (Some(ShouldTransferFiles::No), Some(When::Output(_))) => true,
            (Some(s), Some(When::Never)) => s != ShouldTransferFiles::No,
            (None, Some(When::Never)) => true,
            _ => false,
        };
        let blamed = self
            .when
            .as_ref()
            .map(|(_, a)| a)
            .or(self.should.as_ref().map(|(_, a)| a));
        if contradiction && let Some(a) = blamed {
            return bad(
                errs,
                a,
                "when_to_transfer_output and should_transfer_files contradict each other: \
                 with should_transfer_files = NO nothing is transferred, and a transfer needs \
                 a time (ON_EXIT, ON_EXIT_OR_EVICT or ON_SUCCESS)"
                    .into(),
            );
        }
        if should == Some(ShouldTransferFiles::IfNeeded)
            && when == Some(When::Output(WhenToTransferOutput::OnExitOrEvict))
            && let Some((_, a)) = &self.should
        {
            return bad(
                errs,
                a,
                "\"when_to_transfer_output = ON_EXIT_OR_EVICT\" and \"should_transfer_files = \
                 IF_NEEDED\" are incompatible: set when_to_transfer_output = ON_EXIT to keep \
                 IF_NEEDED, or should_transfer_files = YES to keep ON_EXIT_OR_EVICT"
                    .into(),
            );
        }
        if let Some(s) = should {
            d.should_transfer_files = s;
        }
        if let Some(When::Output(w)) = when {
            d.when_to_transfer_output = w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_lists_split_on_commas_only() {
        assert_eq!(file_list("a b, c ,d"), vec!["a b", "c", "d"]);
        assert_eq!(file_list("\"x,y\""), vec!["x", "y"]);
        assert!(file_list(" , ").is_empty());
        assert!(is_url("HTTPS://example.com/x"));
        assert!(is_url("s3://bucket/key"));
        assert!(!is_url("dir/file"));
        assert!(!is_url("a b://c"));
    }
}
