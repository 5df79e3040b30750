//! The macros DAGMan gives a node's scripts and jobs.
//!
//! Scripts ([`script_argv`]): the command line is split on blanks and tabs
//! (no quoting, as DAGMan does), and an argument that is exactly one of
//! `$NODE` (`$JOB`), `$RETRY`, `$MAX_RETRIES`, `$DAG_STATUS`,
//! `$FAILED_COUNT`, `$FUTILE_COUNT`, `$DONE_COUNT`, `$QUEUED_COUNT`,
//! `$NODE_COUNT`, `$DAGID` — and for POST scripts `$JOBID`, `$CLUSTERID`,
//! `$JOB_COUNT`, `$SUCCESS`, `$RETURN`, `$EXIT_CODES`,
//! `$EXIT_CODE_COUNTS`, `$EXIT_CODE_LIST`, `$PRE_SCRIPT_RETURN`,
//! `$JOB_ABORT_COUNT` — is replaced by its value (any case). Other `$`
//! words stay as written.
//!
//! Jobs ([`submit_vars`]): `JOB`, `RETRY`, `DAG_STATUS`, `FAILED_COUNT`,
//! `DAG_PARENT_NAMES`, `DAGManJobId` and the job ad attributes
//! `DAGNodeName`, `DAGManJobId`, `DAGParentNodeNames` …, then the node's
//! `VARS` (before the submit description, or after it with `APPEND`). A
//! `VARS` value that refers to its own name (`VARS n job="$(JOB)"`: macro
//! names ignore case) takes the earlier value there, as HTCondor's macro
//! table does.

use super::command::ScriptKind;
use super::run::Proc;
use super::spec::Var;
use std::collections::BTreeMap;

/// What a script's macros expand to.
#[derive(Clone, Debug, Default)]
pub struct ScriptContext {
    pub kind: Option<ScriptKind>,
    pub node: String,
    pub retry: u32,
    pub max_retries: u32,
    pub dag_status: i32,
    pub failed_count: usize,
    pub futile_count: usize,
    pub done_count: usize,
    pub queued_count: usize,
    pub node_count: usize,
    pub dagman_id: u64,
    pub cluster: Option<u64>,
    pub procs: Vec<Proc>,
    pub job_return: i32,
    pub pre_return: i32,
    pub success: bool,
}

/// The argument list a script runs with.
pub fn script_argv(command: &str, ctx: &ScriptContext) -> Vec<String> {
    let post = ctx.kind != Some(ScriptKind::Pre);
    let mut codes: BTreeMap<i32, usize> = BTreeMap::new();
    let mut list = Vec::new();
    let mut aborted = 0;
    for p in &ctx.procs {
        match p {
            Proc::Exited(c) => {
                *codes.entry(*c).or_default() += 1;
                list.push(c.to_string());
            }
            Proc::Aborted => {
                aborted += 1;
                list.push(String::new());
            }
            _ => list.push(String::new()),
        }
    }
    let cluster = ctx.cluster.map_or(-1, |c| c as i64);
    command
        .split([' ', '\t'])
        .filter(|t| !t.is_empty())
        .map(|t| {
            let upper = t.to_ascii_uppercase();
            let v = match upper.as_str() {
                "$NODE" | "$JOB" => Some(ctx.node.clone()),
                "$RETRY" => Some(ctx.retry.to_string()),
                "$MAX_RETRIES" => Some(ctx.max_retries.to_string()),
                "$DAG_STATUS" => Some(ctx.dag_status.to_string()),
                "$FAILED_COUNT" => Some(ctx.failed_count.to_string()),
                "$FUTILE_COUNT" => Some(ctx.futile_count.to_string()),
                "$DONE_COUNT" => Some(ctx.done_count.to_string()),
                "$QUEUED_COUNT" => Some(ctx.queued_count.to_string()),
                "$NODE_COUNT" => Some(ctx.node_count.to_string()),
                "$DAGID" => Some(ctx.dagman_id.to_string()),
                _ if !post => None,
                "$JOBID" => Some(format!("{cluster}.{}", ctx.procs.len().saturating_sub(1))),
                "$CLUSTERID" => Some(cluster.to_string()),
                "$JOB_COUNT" => Some(ctx.procs.len().to_string()),
                "$SUCCESS" => Some(if ctx.success { "True" } else { "False" }.to_string()),
                "$RETURN" => Some(ctx.job_return.to_string()),
                "$EXIT_CODES" => Some(
                    codes
                        .keys()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                "$EXIT_CODE_COUNTS" => Some(
                    codes
                        .iter()
                        .map(|(c, n)| format!("{c}:{n}"))
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                "$EXIT_CODE_LIST" => Some(list.join(",")),
                "$PRE_SCRIPT_RETURN" => Some(ctx.pre_return.to_string()),
                "$JOB_ABORT_COUNT" => Some(aborted.to_string()),
                _ => None,
            };
            v.unwrap_or_else(|| t.to_string())
        })
        .collect()
}

/// One macro a node's submit description sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmitVar {
    pub key: String,
    pub value: String,
    /// Defined after the submit description (before its `queue`).
    pub append: bool,
}

/// What a node's submission needs to know.
#[derive(Clone, Debug, Default)]
pub struct SubmitContext<'a> {
    pub node: String,
    pub retry: u32,
    pub dag_status: i32,
    pub failed_count: usize,
    pub parents: Vec<String>,
    pub dagman_id: u64,
    pub batch_name: Option<String>,
    pub priority: i32,
    pub hold: bool,
    /// `DAGMAN_NODE_RECORD_INFO` holds `Retry`.
    pub record_retry: bool,
    pub suppress_notification: bool,
    pub suppress_job_logs: bool,
    pub service: bool,
    pub accounting_group: Option<String>,
    pub accounting_group_user: Option<String>,
    /// `DAGMAN_INHERIT_ATTRS`: attributes copied from the DAG's own ad.
    pub inherited: Vec<(String, String)>,
    pub vars: &'a [Var],
}

/// The macros of one node submission, in the order DAGMan defines them.
pub fn submit_vars(c: &SubmitContext) -> Vec<SubmitVar> {
    let mut v: Vec<SubmitVar> = Vec::new();
    let mut pre = |key: &str, value: String| {
        v.push(SubmitVar {
            key: key.to_string(),
            value,
            append: false,
        })
    };
    pre("JOB", c.node.clone());
    pre("RETRY", c.retry.to_string());
    pre("DAG_STATUS", c.dag_status.to_string());
    pre("FAILED_COUNT", c.failed_count.to_string());
    if !c.parents.is_empty() {
        pre("DAG_PARENT_NAMES", c.parents.join(","));
        pre("MY.DAGParentNodeNames", quote(&c.parents.join(",")));
    }
    if let Some(b) = &c.batch_name {
        pre("batch_name", b.clone());
    }
    if c.record_retry && c.retry > 0 {
        pre("MY.DAGManNodeRetry", c.retry.to_string());
    }
    if c.priority != 0 {
        pre("priority", c.priority.to_string());
    }
    if c.hold {
        pre("hold", "true".into());
    }
    if let Some(g) = &c.accounting_group {
        pre("accounting_group", g.clone());
    }
    if let Some(u) = &c.accounting_group_user {
        pre("accounting_group_user", u.clone());
    }
    for (k, val) in &c.inherited {
        pre(&format!("My.{k}"), val.clone());
    }
    let mut post = |key: &str, value: String| {
        v.push(SubmitVar {
            key: key.to_string(),
            value,
            append: true,
        })
    };
    post("MY.DAGNodeName", quote(&c.node));
    if c.dagman_id > 0 {
        post("MY.DAGManJobId", c.dagman_id.to_string());
        post("DAGManJobId", c.dagman_id.to_string());
    }
    if c.suppress_job_logs {
        post("log", String::new());
    }
    if c.suppress_notification {
        post("notification", "NEVER".into());
    }
    if c.service {
        post("MY.DAGLifetimeJob", "true".into());
    }
    for var in c.vars {
        v.push(SubmitVar {
            key: var.key.clone(),
            value: var.value.clone(),
            append: !var.prepend,
        });
    }
    resolve_self_references(&mut v);
    v
}

/// A ClassAd string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        if ch == '"' || ch == '\\' {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('"');
    out
}

/// `key = "…$(key)…"`: the self-reference takes the value the name had
/// before (empty if none), as HTCondor's macro table does on insertion.
fn resolve_self_references(vars: &mut [SubmitVar]) {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for v in vars.iter_mut() {
        let lower = v.key.to_ascii_lowercase();
        let pattern = format!("$({lower})");
        if v.value.to_ascii_lowercase().contains(&pattern) {
            let prior = seen.get(&lower).cloned().unwrap_or_default();
            let mut out = String::new();
            let mut rest = v.value.as_str();
            while let Some(i) = rest.to_ascii_lowercase().find(&pattern) {
                out.push_str(&rest[..i]);
                out.push_str(&prior);
                rest = &rest[i + pattern.len()..];
            }
            out.push_str(rest);
            v.value = out;
        }
        seen.insert(lower, v.value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_macros_are_whole_words() {
        let ctx = ScriptContext {
            kind: Some(ScriptKind::Post),
            node: "A".into(),
            retry: 2,
            max_retries: 3,
            cluster: Some(7),
            procs: vec![Proc::Exited(0), Proc::Exited(3), Proc::Aborted],
            job_return: 3,
            pre_return: -1,
            ..Default::default()
        };
        let argv = script_argv(
            "post.sh $JOB $retry x=$RETURN $RETURN $JOBID $EXIT_CODES $EXIT_CODE_COUNTS $EXIT_CODE_LIST $JOB_ABORT_COUNT $PRE_SCRIPT_RETURN $UNKNOWN",
            &ctx,
        );
        assert_eq!(
            argv,
            [
                "post.sh",
                "A",
                "2",
                "x=$RETURN",
                "3",
                "7.2",
                "0,3",
                "0:1,3:1",
                "0,3,",
                "1",
                "-1",
                "$UNKNOWN"
            ]
        );
        let pre = ScriptContext {
            kind: Some(ScriptKind::Pre),
            ..ctx
        };
        assert_eq!(script_argv("pre $RETURN", &pre), ["pre", "$RETURN"]);
    }

    #[test]
    fn vars_refer_to_the_node_name() {
        let vars = vec![
            Var {
                key: "job".into(),
                value: "$(JOB)".into(),
                prepend: true,
            },
            Var {
                key: "out".into(),
                value: "$(JOB).out".into(),
                prepend: false,
            },
        ];
        let v = submit_vars(&SubmitContext {
            node: "n1".into(),
            vars: &vars,
            dagman_id: 4,
            ..Default::default()
        });
        let job = v.iter().rfind(|x| x.key == "job").map(|x| x.value.clone());
        assert_eq!(job.as_deref(), Some("n1"));
        let out = v.iter().find(|x| x.key == "out").cloned();
        assert_eq!(
            out,
            Some(SubmitVar {
                key: "out".into(),
                value: "$(JOB).out".into(),
                append: true
            })
        );
        assert!(
            v.iter()
                .any(|x| x.key == "MY.DAGManJobId" && x.value == "4" && x.append)
        );
    }
}
