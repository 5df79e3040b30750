//! The events of a user log, written in HTCondor's text format so that
//! HTCondor's readers (`htcondor2.JobEventLog`, `condor_wait`, DAGMan)
//! can follow a Gleaner job.
//!
//! Layout (HTCondor's `condor_event.cpp`, checked by reading the result
//! with `htcondor2.JobEventLog` in `crates/cli/tests/user_log_htcondor.rs`):
//! a header line `NNN (CLUSTER.PROC.SUBPROC) YYYY-MM-DD HH:MM:SSZ text`
//! (ISO date, `Z` for UTC, which HTCondor's reader honours), body lines
//! indented by a tab, and a line `...` closing the event. Each event's
//! body has the fields its reader insists on (usage lines for checkpoints,
//! evictions and terminations, code lines for holds), even where Gleaner
//! has no figure to give (CPU usage is written as zero).

use gleaner_core::time::Time;
use gleaner_proto::job::JobId;

/// One event of a job's life, as the user log tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserEvent {
    /// 000: queued at this home (its address).
    Submitted { host: String },
    /// 001: running on a host.
    Executing { host: String },
    /// 003: a checkpoint was stored at home (`bytes` of it).
    Checkpointed { bytes: u64, detail: String },
    /// 004: off its host and back in the queue.
    Evicted { checkpointed: bool, reason: String },
    /// 004 of a job that exited and went back to the queue (its
    /// `on_exit_remove` was false): HTCondor's "Job terminated and was
    /// requeued".
    Requeued { exit_code: i32, reason: String },
    /// 005: exited with `exit_code` (a negative code is a signal);
    /// `detail` says where the outputs went.
    Terminated { exit_code: i32, detail: String },
    /// 009: removed.
    Aborted { reason: String },
    /// 010: frozen on its host.
    Suspended,
    /// 011: thawed.
    Unsuspended,
    /// 012: held, with HTCondor's `HoldReasonCode` and subcode
    /// (`gleaner_proto::wire::hold_code`; 0 when none applies).
    Held {
        reason: String,
        code: u32,
        subcode: i32,
    },
    /// 013: released.
    Released { reason: String },
    /// 007: a run that failed (its program could not be started).
    ShadowException { message: String },
    /// 008: anything else worth a line (a rejected checkpoint, an output
    /// that could not be delivered).
    Generic { text: String },
    /// 016: a DAG node's POST script ended (DAGMan's `nodes.log`).
    PostScriptTerminated { exit_code: i32, node: String },
}

impl UserEvent {
    /// HTCondor's event number.
    pub fn code(&self) -> u16 {
        match self {
            UserEvent::Submitted { .. } => 0,
            UserEvent::Executing { .. } => 1,
            UserEvent::Checkpointed { .. } => 3,
            UserEvent::Evicted { .. } | UserEvent::Requeued { .. } => 4,
            UserEvent::Terminated { .. } => 5,
            UserEvent::Generic { .. } => 8,
            UserEvent::Aborted { .. } => 9,
            UserEvent::Suspended => 10,
            UserEvent::Unsuspended => 11,
            UserEvent::ShadowException { .. } => 7,
            UserEvent::Held { .. } => 12,
            UserEvent::Released { .. } => 13,
            UserEvent::PostScriptTerminated { .. } => 16,
        }
    }
}

/// CPU usage Gleaner does not measure per run: HTCondor's readers need the
/// line, so it says zero.
const NO_USAGE: &str = "Usr 0 00:00:00, Sys 0 00:00:00";

/// One line of free text: HTCondor's readers take a line at a time, so
/// line breaks become `|` (as HTCondor itself writes them).
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\n' => '|',
            '\r' | '\t' => ' ',
            c => c,
        })
        .collect::<String>()
        .trim()
        .to_string()
}

/// A run's usage and bytes, as the eviction events carry them.
fn run_usage() -> String {
    format!(
        "\t\t{NO_USAGE}  -  Run Remote Usage\n\t\t{NO_USAGE}  -  Run Local Usage\n\
         \t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n"
    )
}

/// How the program ended: its return value, or the signal (a negative
/// `exit_code`).
fn termination(exit_code: i32) -> String {
    if exit_code >= 0 {
        format!("\t(1) Normal termination (return value {exit_code})\n")
    } else {
        format!(
            "\t(0) Abnormal termination (signal {})\n\t(0) No core file\n",
            exit_code.unsigned_abs()
        )
    }
}

/// The event as HTCondor writes it, `...` line included.
pub fn format_event(id: JobId, at: Time, e: &UserEvent) -> String {
    let mut out = format!(
        "{:03} ({:03}.{:03}.000) {}Z ",
        e.code(),
        id.cluster,
        id.proc,
        gleaner_proto::api::utc_datetime(at)
    );
    match e {
        UserEvent::Submitted { host } => {
            out += &format!("Job submitted from host: {}\n", one_line(host));
        }
        UserEvent::Executing { host } => {
            out += &format!("Job executing on host: {}\n", one_line(host));
        }
        UserEvent::Checkpointed { bytes, detail } => {
            out += "Job was checkpointed.\n";
            out += &format!("\t{NO_USAGE}  -  Run Remote Usage\n");
            out += &format!("\t{NO_USAGE}  -  Run Local Usage\n");
            out += &format!("\t{bytes}  -  Run Bytes Sent By Job For Checkpoint\n");
            // Read past by HTCondor (it skips to the `...` line).
            if !detail.is_empty() {
                out += &format!("\t{}\n", one_line(detail));
            }
        }
        UserEvent::Evicted {
            checkpointed,
            reason,
        } => {
            out += "Job was evicted.\n";
            out += if *checkpointed {
                "\t(1) Job was checkpointed.\n"
            } else {
                "\t(0) CPU times\n"
            };
            out += &run_usage();
            if !reason.is_empty() {
                out += &format!("\tReason: {}\n", one_line(reason));
            }
        }
        UserEvent::Requeued { exit_code, reason } => {
            out += "Job was evicted.\n\t(0) Job terminated and was requeued\n";
            out += &run_usage();
            out += &termination(*exit_code);
            if !reason.is_empty() {
                out += &format!("\t{}\n", one_line(reason));
            }
        }
        UserEvent::Terminated { exit_code, detail } => {
            out += "Job terminated.\n";
            out += &termination(*exit_code);
            for what in ["Run Remote", "Run Local", "Total Remote", "Total Local"] {
                out += &format!("\t\t{NO_USAGE}  -  {what} Usage\n");
            }
            for what in [
                "Run Bytes Sent",
                "Run Bytes Received",
                "Total Bytes Sent",
                "Total Bytes Received",
            ] {
                out += &format!("\t0  -  {what} By Job\n");
            }
            // After the figures, where HTCondor's reader skips to `...`.
            if !detail.is_empty() {
                out += &format!("\t{}\n", one_line(detail));
            }
        }
        UserEvent::Aborted { reason } => {
            out += "Job was aborted.\n";
            if !reason.is_empty() {
                out += &format!("\t{}\n", one_line(reason));
            }
        }
        UserEvent::Suspended => {
            // Gleaner freezes the guest's whole process tree at once.
            out += "Job was suspended.\n\tNumber of processes actually suspended: 1\n";
        }
        UserEvent::Unsuspended => out += "Job was unsuspended.\n",
        UserEvent::PostScriptTerminated { exit_code, node } => {
            out += "POST Script terminated.\n";
            out += &termination(*exit_code);
            out += &format!("    DAG Node: {}\n", one_line(node));
        }
        UserEvent::Held {
            reason,
            code,
            subcode,
        } => {
            let r = one_line(reason);
            let r = if r.is_empty() {
                "Reason unspecified".to_string()
            } else {
                r
            };
            out += &format!("Job was held.\n\t{r}\n\tCode {code} Subcode {subcode}\n");
        }
        UserEvent::Released { reason } => {
            out += "Job was released.\n";
            if !reason.is_empty() {
                out += &format!("\t{}\n", one_line(reason));
            }
        }
        UserEvent::ShadowException { message } => {
            out += "Shadow exception!\n";
            out += &format!("\t\t{}\n", one_line(message));
            out += "\t0  -  Run Bytes Sent By Job\n";
            out += "\t0  -  Run Bytes Received By Job\n";
        }
        UserEvent::Generic { text } => {
            out += &one_line(text);
            out += "\n";
        }
    }
    out += "...\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Time = Time::from_secs(1_763_707_800);

    #[test]
    fn header_is_htcondor_iso_utc() {
        let e = UserEvent::Submitted {
            host: "http://127.0.0.1:9618".into(),
        };
        assert_eq!(
            format_event(JobId::new(12, 3), AT, &e),
            "000 (012.003.000) 2025-11-21 06:50:00Z Job submitted from host: http://127.0.0.1:9618\n...\n"
        );
    }

    #[test]
    fn terminated_has_return_value_and_usage() {
        let s = format_event(
            JobId::new(1, 0),
            AT,
            &UserEvent::Terminated {
                exit_code: 7,
                detail: String::new(),
            },
        );
        assert!(
            s.contains("\t(1) Normal termination (return value 7)\n"),
            "{s}"
        );
        assert!(s.contains("Total Local Usage\n"), "{s}");
        assert!(s.ends_with("Total Bytes Received By Job\n...\n"), "{s}");
    }

    #[test]
    fn reasons_stay_on_one_line() {
        let s = format_event(
            JobId::new(1, 0),
            AT,
            &UserEvent::Held {
                reason: "a\nb".into(),
                code: 1,
                subcode: 0,
            },
        );
        assert!(s.contains("\ta|b\n\tCode 1 Subcode 0\n"), "{s}");
    }
}
