//! The node status file (`NODE_STATUS_FILE`), in DAGMan's format
//! (`Dag::DumpNodeStatus`): new-ClassAd records, one `DagStatus`, one
//! `NodeStatus` per node, one `StatusEnd`, each value with DAGMan's
//! comments. Tools such as Pegasus's monitor read it.

use super::ctime;
use crate::dag::macros::quote;
use crate::dag::run::{DagStatus, Run, Status};

/// The node status file's text at `now` (UNIX seconds). `held`: the DAG
/// is on hold.
pub fn status_file(run: &Run, now: u64, held: bool) -> String {
    let st = run.state();
    let (dag_status, note, mark_error) = match st.finished {
        Some(0) => (Status::Done, "success", true),
        Some(_) => (
            Status::Error,
            if st.removed {
                "removed"
            } else if st.status == DagStatus::Abort || st.aborted {
                "aborted"
            } else {
                "failed"
            },
            true,
        ),
        None if held => (Status::Submitted, "held", false),
        None if st.removed => (Status::Submitted, "removed", false),
        None if st.aborted => (Status::Submitted, "aborted", false),
        None => (Status::Submitted, "", false),
    };
    let mut o = String::from("[\n  Type = \"DagStatus\";\n  DagFiles = {\n");
    let files: Vec<String> = run
        .spec()
        .files
        .iter()
        .map(|f| format!("    {}", quote(f)))
        .collect();
    o.push_str(&files.join(",\n"));
    o.push_str("\n  };\n");
    o.push_str(&format!(
        "  Timestamp = {now}; /* {} */\n",
        quote(&ctime(now))
    ));
    o.push_str(&format!(
        "  DagStatus = {}; /* {} */\n",
        dag_status.code(),
        quote(&format!("{} ({note})", dag_status.name()))
    ));
    let (mut pre, mut queued, mut post, mut failed) = (
        run.pre_count(),
        run.queued_count(),
        run.post_count(),
        run.failed_count(),
    );
    let (mut held_procs, mut idle) = (run.held_procs(), run.idle_procs());
    if mark_error {
        failed += pre + queued + post;
        pre = 0;
        queued = 0;
        post = 0;
        held_procs = 0;
        idle = 0;
    }
    o.push_str(&format!("  NodesTotal = {};\n", run.node_count()));
    o.push_str(&format!("  NodesDone = {};\n", run.done_count()));
    o.push_str(&format!("  NodesPre = {pre};\n"));
    o.push_str(&format!("  NodesQueued = {queued};\n"));
    o.push_str(&format!("  NodesPost = {post};\n"));
    o.push_str(&format!("  NodesReady = {};\n", run.ready_count()));
    o.push_str(&format!("  NodesUnready = {};\n", run.unready_count()));
    o.push_str(&format!("  NodesFutile = {};\n", run.futile_count()));
    o.push_str(&format!("  NodesFailed = {failed};\n"));
    o.push_str(&format!("  JobProcsHeld = {held_procs};\n"));
    o.push_str(&format!("  JobProcsIdle = {idle}; /* includes held */\n"));
    o.push_str("]\n");
    for (i, spec) in run.spec().nodes.iter().enumerate() {
        let Some(n) = run.node(i) else { continue };
        let mut status = n.status;
        let mut detail = String::new();
        let (mut queued, mut held) = (n.queued_procs(), n.held_procs());
        match status {
            Status::Submitted if mark_error => {
                status = Status::Error;
                detail = "Was STATUS_SUBMITTED".into();
                queued = 0;
                held = 0;
            }
            Status::Submitted => {
                detail = if n.procs.first().is_some_and(|p| p.is_idle()) {
                    "idle".into()
                } else {
                    "not_idle".into()
                };
            }
            Status::Error => detail = n.error.clone(),
            Status::PreRun | Status::PostRun if mark_error => {
                detail = format!("Was {}", status.name());
                status = Status::Error;
            }
            Status::Futile => detail = "Had an ancestor node fail".into(),
            Status::Done if spec.done => detail = "User defined as DONE".into(),
            _ => {}
        }
        o.push_str("[\n  Type = \"NodeStatus\";\n");
        o.push_str(&format!("  Node = {};\n", quote(&spec.name)));
        o.push_str(&format!(
            "  NodeStatus = {}; /* {} */\n",
            status.code(),
            quote(status.name())
        ));
        o.push_str(&format!("  StatusDetails = {};\n", quote(&detail)));
        o.push_str(&format!("  RetryCount = {};\n", n.retries));
        o.push_str(&format!("  JobProcsQueued = {queued};\n"));
        o.push_str(&format!("  JobProcsHeld = {held};\n"));
        o.push_str("]\n");
    }
    o.push_str("[\n  Type = \"StatusEnd\";\n");
    o.push_str(&format!(
        "  EndTime = {now}; /* {} */\n",
        quote(&ctime(now))
    ));
    if st.finished.is_some() {
        o.push_str("  NextUpdate = 0; /* \"none\" */\n");
    } else {
        let next = now + run.spec().status_file.as_ref().map_or(60, |s| s.min_update);
        o.push_str(&format!(
            "  NextUpdate = {next}; /* {} */\n",
            quote(&ctime(next))
        ));
    }
    o.push_str("]\n");
    o
}
