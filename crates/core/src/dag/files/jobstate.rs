//! The jobstate log (`JOBSTATE_LOG`), one line per event in DAGMan's
//! format (`JobstateLog` in HTCondor): `TIME NODE EVENT ID TAG - SEQ`, and
//! `TIME INTERNAL *** DAGMAN_STARTED ID ***` style lines for the DAG.

use crate::dag::run::JobstateEvent;

/// A node event's line. `tag` is the node's job tag (`-` if none).
pub fn event_line(e: &JobstateEvent, node: &str, tag: &str) -> String {
    format!(
        "{} {node} {} {} {tag} - {}",
        e.at.as_micros() / 1_000_000,
        e.event,
        e.condor_id,
        e.seq
    )
}

/// `DAGMAN_STARTED` with the DAG's job id.
pub fn started_line(secs: u64, dagman_id: u64) -> String {
    format!("{secs} INTERNAL *** DAGMAN_STARTED {dagman_id}.0 ***")
}

/// `DAGMAN_FINISHED` with condor_dagman's exit code.
pub fn finished_line(secs: u64, exit: i32) -> String {
    format!("{secs} INTERNAL *** DAGMAN_FINISHED {exit} ***")
}

/// `RECOVERY_STARTED` / `RECOVERY_FINISHED`.
pub fn recovery_line(secs: u64, finished: bool) -> String {
    format!(
        "{secs} INTERNAL *** {} ***",
        if finished {
            "RECOVERY_FINISHED"
        } else {
            "RECOVERY_STARTED"
        }
    )
}

/// The job tag a submit description sets: `+job_tag_name = "+NAME"` names
/// the attribute holding it, else `+pegasus_site`; `-` without one.
pub fn job_tag(attrs: &[(String, String)]) -> String {
    let get = |name: &str| {
        attrs
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
    };
    let name = get("job_tag_name")
        .map(|n| n.trim_start_matches('+').to_string())
        .unwrap_or_else(|| "pegasus_site".into());
    get(&name)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "-".into())
}
