//! The metrics file (`FILE.metrics`), version 2 of DAGMan's JSON (or 1,
//! `DAGMAN_METRICS_FILE_VERSION`), written when the DAG ends.

use crate::dag::command::NodeKind;
use crate::dag::run::{Run, Status};

/// Gleaner's version as the metrics' `version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The metrics file's text. Times are UNIX seconds.
pub fn metrics_file(
    run: &Run,
    end: f64,
    exit: i32,
    rescue_num: u32,
    parent_id: Option<u64>,
) -> String {
    let st = run.state();
    let start = st.started_at.as_secs_f64();
    let spec = run.spec();
    let (mut nodes, mut nf, mut ns) = (0, 0, 0);
    let (mut dag, mut df, mut ds) = (0, 0, 0);
    let (mut svc, mut sf, mut ss) = (0, 0, 0);
    for (i, n) in spec.nodes.iter().enumerate() {
        let s = run.node(i).map_or(Status::NotReady, |r| r.status);
        let (t, f, ok) = match n.kind {
            NodeKind::Service => (&mut svc, &mut sf, &mut ss),
            NodeKind::Subdag => (&mut dag, &mut df, &mut ds),
            _ => (&mut nodes, &mut nf, &mut ns),
        };
        *t += 1;
        if s == Status::Error {
            *f += 1;
        }
        if s == Status::Done && !n.done {
            *ok += 1;
        }
    }
    let parent = parent_id.map(|p| p.to_string()).unwrap_or_default();
    let has_final = spec.nodes.iter().any(|n| n.kind == NodeKind::Final);
    let prov = spec.nodes.iter().any(|n| n.kind == NodeKind::Provisioner);
    let mut o = String::from("{\n    \"client\":\"condor_dagman\",\n");
    o.push_str(&format!("    \"version\":\"{VERSION}\",\n"));
    if run.config().metrics_file_version == 1 {
        o.push_str("    \"planner\":\"\",\n    \"planner_version\":\"\",\n    \"type\":\"metrics\",\n    \"wf_uuid\":\"\",\n    \"root_wf_uuid\":\"\",\n");
    } else {
        o.push_str("    \"type\":\"metrics\",\n    \"metrics_version\":2,\n");
    }
    o.push_str(&format!(
        "    \"start_time\":{start:.3},\n    \"end_time\":{end:.3},\n    \"duration\":{:.3},\n",
        end - start
    ));
    o.push_str(&format!("    \"exitcode\":{exit},\n    \"dagman_id\":\"{}\",\n    \"parent_dagman_id\":\"{parent}\",\n    \"rescue_dag_number\":{rescue_num},\n", st.dagman_id));
    if run.config().metrics_file_version == 1 {
        o.push_str(&format!(
            "    \"jobs\":{nodes},\n    \"jobs_failed\":{nf},\n    \"jobs_succeeded\":{ns},\n    \"dag_jobs\":{dag},\n    \"dag_jobs_failed\":{df},\n    \"dag_jobs_succeeded\":{ds},\n    \"total_jobs\":{},\n    \"total_jobs_run\":{},\n",
            nodes + dag,
            st.nodes_run
        ));
    } else {
        o.push_str(&format!("    \"has_final_node\":{has_final},\n"));
        o.push_str(&format!(
            "    \"nodes\":{nodes},\n    \"nodes_failed\":{nf},\n    \"nodes_succeeded\":{ns},\n"
        ));
        o.push_str(&format!("    \"dag_nodes\":{dag},\n    \"dag_nodes_failed\":{df},\n    \"dag_nodes_succeeded\":{ds},\n"));
        o.push_str(&format!("    \"provisioner_nodes\":{},\n", u8::from(prov)));
        o.push_str(&format!("    \"service_nodes\":{svc},\n    \"service_nodes_failed\":{sf},\n    \"service_nodes_succeeded\":{ss},\n"));
        o.push_str(&format!(
            "    \"total_nodes\":{},\n    \"total_nodes_run\":{},\n",
            nodes + dag + svc,
            st.nodes_run
        ));
        o.push_str(&format!(
            "    \"jobs_submitted\":{},\n    \"jobs_succeeded\":{},\n    \"jobs_failed\":{},\n",
            st.jobs_submitted,
            st.jobs_succeeded,
            st.jobs_submitted.saturating_sub(st.jobs_succeeded)
        ));
    }
    o.push_str(&format!("    \"DagStatus\":{}\n}}\n", st.status.code()));
    o
}
