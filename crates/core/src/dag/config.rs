//! DAGMan's configuration knobs (`DAGMAN_*`), as a DAG's `CONFIG` file,
//! condor_submit_dag's `-config` file and its options set them.
//!
//! The file is HTCondor configuration: `NAME = value` lines (any case),
//! `#` comments, `\` continuations, `$(NAME)` referring to an earlier
//! setting. Knobs Gleaner acts on set a field of [`DagConfig`]; knobs of
//! HTCondor's DAGMan that have nothing to do here (submit executables,
//! debug caches …) and settings that are not DAGMan's are listed as
//! warnings, never dropped silently.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The knobs the DAG manager follows, with HTCondor 25's defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DagConfig {
    /// `DAGMAN_MAX_JOBS_IDLE` (-maxidle): no node is submitted while this
    /// many of the DAG's jobs are idle (0: no limit).
    pub max_jobs_idle: u32,
    /// `DAGMAN_MAX_JOBS_SUBMITTED` (-maxjobs): nodes with jobs in the queue
    /// at once (0: no limit).
    pub max_jobs_submitted: u32,
    /// `DAGMAN_MAX_PRE_SCRIPTS` (-maxpre), 0: no limit.
    pub max_pre_scripts: u32,
    /// `DAGMAN_MAX_POST_SCRIPTS` (-maxpost), 0: no limit.
    pub max_post_scripts: u32,
    /// `DAGMAN_MAX_HOLD_SCRIPTS`, 0: no limit.
    pub max_hold_scripts: u32,
    /// `DAGMAN_MAX_SUBMITS_PER_INTERVAL`.
    pub max_submits_per_interval: u32,
    /// `DAGMAN_MAX_SUBMIT_ATTEMPTS` (1–16): a node whose jobs cannot be
    /// submitted this many times fails.
    pub max_submit_attempts: u32,
    /// `DAGMAN_MAX_JOB_HOLDS`: a node's jobs are removed after this many
    /// holds (0: never).
    pub max_job_holds: u32,
    /// `DAGMAN_ALWAYS_RUN_POST`: the POST script runs after a failed PRE.
    pub always_run_post: bool,
    /// `DAGMAN_USE_STRICT` (0–3): warnings of this level or below fail.
    pub use_strict: u8,
    /// `DAGMAN_MAX_RESCUE_NUM` (0–999).
    pub max_rescue_num: u32,
    /// `DAGMAN_RESET_RETRIES_UPON_RESCUE`.
    pub reset_retries_upon_rescue: bool,
    /// `DAGMAN_AUTO_RESCUE`: a resubmitted DAG runs from its newest rescue.
    pub auto_rescue: bool,
    /// `DAGMAN_SUBMIT_DEPTH_FIRST`.
    pub submit_depth_first: bool,
    /// `DAGMAN_RETRY_NODE_FIRST`: a retried node goes first.
    pub retry_node_first: bool,
    /// `DAGMAN_DEFAULT_PRIORITY` (-priority).
    pub default_priority: i32,
    /// `DAGMAN_DEFAULT_APPEND_VARS`.
    pub default_append_vars: bool,
    /// `DAGMAN_MUNGE_NODE_NAMES`.
    pub munge_node_names: bool,
    /// `DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS`.
    pub allow_illegal_chars: bool,
    /// `DAGMAN_USE_JOIN_NODES`.
    pub use_join_nodes: bool,
    /// `DAGMAN_REMOVE_JOB_LIST_ON_FAILURE`.
    pub remove_job_list_on_failure: bool,
    /// `DAGMAN_NODE_JOB_FAILURE_TOLERANCE`.
    pub node_job_failure_tolerance: u32,
    /// `DAGMAN_PROHIBIT_MULTI_JOBS`: a node's submit description may queue
    /// one job only.
    pub prohibit_multi_jobs: bool,
    /// `DAGMAN_SUPPRESS_NOTIFICATION`.
    pub suppress_notification: bool,
    /// `DAGMAN_SUPPRESS_JOB_LOGS`: node jobs write no user log of their own.
    pub suppress_job_logs: bool,
    /// `DAGMAN_PUT_FAILED_JOBS_ON_HOLD`.
    pub put_failed_jobs_on_hold: bool,
    /// `DAGMAN_USER_LOG_SCAN_INTERVAL` (s).
    pub user_log_scan_interval: u32,
    /// `DAGMAN_METRICS_FILE_VERSION` (1 or 2).
    pub metrics_file_version: u8,
    /// `DAGMAN_REPORT_GRAPH_METRICS`.
    pub report_graph_metrics: bool,
    /// `DAGMAN_STARTUP_CYCLE_DETECT`: a DAG with a cycle is refused at
    /// submission (otherwise it ends with `DAG_STATUS_CYCLE`).
    pub startup_cycle_detect: bool,
    /// `DAGMAN_NODE_RECORD_INFO`: `Retry` adds `DAGManNodeRetry` to jobs.
    pub node_record_info: String,
    /// `DAGMAN_INHERIT_ATTRS`: DAGMan job attributes copied to node jobs.
    pub inherit_attrs: String,
    /// `DAGMAN_INHERIT_ATTRS_PREFIX`.
    pub inherit_attrs_prefix: String,
    /// `DAGMAN_MAX_SCRIPT_SECONDS` (Gleaner's): a script running longer is
    /// killed (0: no limit).
    pub max_script_seconds: u64,
}

impl DagConfig {
    /// The settings as DAGMan lists them in `dagman.out` when it starts
    /// (`DAGMAN_… setting: value`).
    pub fn settings(&self) -> Vec<String> {
        let b = |v: bool| if v { "True" } else { "False" }.to_string();
        [
            ("DAGMAN_USE_STRICT", self.use_strict.to_string()),
            (
                "DAGMAN_MAX_SUBMIT_ATTEMPTS",
                self.max_submit_attempts.to_string(),
            ),
            ("DAGMAN_STARTUP_CYCLE_DETECT", b(self.startup_cycle_detect)),
            ("DAGMAN_USE_JOIN_NODES", b(self.use_join_nodes)),
            ("DAGMAN_REPORT_GRAPH_METRICS", b(self.report_graph_metrics)),
            (
                "DAGMAN_MAX_SUBMITS_PER_INTERVAL",
                self.max_submits_per_interval.to_string(),
            ),
            ("DAGMAN_AGGRESSIVE_SUBMIT", b(false)),
            ("DAGMAN_DEFAULT_PRIORITY", self.default_priority.to_string()),
            (
                "DAGMAN_SUPPRESS_NOTIFICATION",
                b(self.suppress_notification),
            ),
            (
                "DAGMAN_USER_LOG_SCAN_INTERVAL",
                self.user_log_scan_interval.to_string(),
            ),
            (
                "DAGMAN_PUT_FAILED_JOBS_ON_HOLD",
                b(self.put_failed_jobs_on_hold),
            ),
            ("DAGMAN_MAX_JOBS_IDLE", self.max_jobs_idle.to_string()),
            (
                "DAGMAN_MAX_JOBS_SUBMITTED",
                self.max_jobs_submitted.to_string(),
            ),
            ("DAGMAN_MAX_PRE_SCRIPTS", self.max_pre_scripts.to_string()),
            ("DAGMAN_MAX_POST_SCRIPTS", self.max_post_scripts.to_string()),
            ("DAGMAN_MAX_HOLD_SCRIPTS", self.max_hold_scripts.to_string()),
            ("DAGMAN_MUNGE_NODE_NAMES", b(self.munge_node_names)),
            ("DAGMAN_PROHIBIT_MULTI_JOBS", b(self.prohibit_multi_jobs)),
            ("DAGMAN_SUBMIT_DEPTH_FIRST", b(self.submit_depth_first)),
            ("DAGMAN_ALWAYS_RUN_POST", b(self.always_run_post)),
            ("DAGMAN_MAX_JOB_HOLDS", self.max_job_holds.to_string()),
            ("DAGMAN_RETRY_NODE_FIRST", b(self.retry_node_first)),
            ("DAGMAN_AUTO_RESCUE", b(self.auto_rescue)),
            ("DAGMAN_MAX_RESCUE_NUM", self.max_rescue_num.to_string()),
            (
                "DAGMAN_RESET_RETRIES_UPON_RESCUE",
                b(self.reset_retries_upon_rescue),
            ),
            ("DAGMAN_DEFAULT_APPEND_VARS", b(self.default_append_vars)),
            ("DAGMAN_SUPPRESS_JOB_LOGS", b(self.suppress_job_logs)),
            (
                "DAGMAN_REMOVE_JOB_LIST_ON_FAILURE",
                b(self.remove_job_list_on_failure),
            ),
            (
                "DAGMAN_NODE_JOB_FAILURE_TOLERANCE",
                self.node_job_failure_tolerance.to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| format!("{k} setting: {v}"))
        .collect()
    }
}

impl Default for DagConfig {
    fn default() -> Self {
        DagConfig {
            max_jobs_idle: 1000,
            max_jobs_submitted: 0,
            max_pre_scripts: 20,
            max_post_scripts: 20,
            max_hold_scripts: 20,
            max_submits_per_interval: 100,
            max_submit_attempts: 6,
            max_job_holds: 100,
            always_run_post: false,
            use_strict: 1,
            max_rescue_num: 100,
            reset_retries_upon_rescue: true,
            auto_rescue: true,
            submit_depth_first: false,
            retry_node_first: false,
            default_priority: 0,
            default_append_vars: false,
            munge_node_names: true,
            allow_illegal_chars: false,
            use_join_nodes: true,
            remove_job_list_on_failure: true,
            node_job_failure_tolerance: 0,
            prohibit_multi_jobs: false,
            suppress_notification: false,
            suppress_job_logs: false,
            put_failed_jobs_on_hold: false,
            user_log_scan_interval: 5,
            metrics_file_version: 2,
            report_graph_metrics: false,
            startup_cycle_detect: false,
            node_record_info: String::new(),
            inherit_attrs: String::new(),
            inherit_attrs_prefix: String::new(),
            max_script_seconds: 0,
        }
    }
}

/// HTCondor DAGMan knobs that have no effect in Gleaner, with why.
fn inert(name: &str) -> Option<&'static str> {
    Some(match name {
        "DAGMAN_CONDOR_SUBMIT_EXE" | "DAGMAN_CONDOR_RM_EXE" | "DAGMAN_USE_DIRECT_SUBMIT" => {
            "the DAG manager submits and removes jobs in the station itself"
        }
        "DAGMAN_DEBUG_CACHE_ENABLE"
        | "DAGMAN_DEBUG_CACHE_SIZE"
        | "DAGMAN_VERBOSITY"
        | "DAGMAN_DEBUG_PARSE_TIMING"
        | "DAGMAN_DEBUG"
        | "MAX_DAGMAN_LOG"
        | "DAGMAN_PENDING_REPORT_INTERVAL"
        | "DAGMAN_PRINT_JOB_TABLE_INTERVAL" => "dagman.out has one fixed level of detail",
        "DAGMAN_LOG_ON_NFS_IS_ERROR"
        | "DAGMAN_ALLOW_EVENTS"
        | "DAGMAN_ABORT_DUPLICATES"
        | "DAGMAN_CHECK_QUEUE_INTERVAL"
        | "DAGMAN_QUEUE_UPDATE_INTERVAL"
        | "DAGMAN_ALLOW_LOG_ERROR"
        | "DAGMAN_ABORT_ON_SCARY_SUBMIT" => {
            "the DAG manager reads job states from the station's queue, not from event logs"
        }
        "DAGMAN_AGGRESSIVE_SUBMIT" | "DAGMAN_SUBMIT_DELAY" => {
            "submission is one queue transaction per node"
        }
        "DAGMAN_PRODUCE_JOB_CREDENTIALS" => "Gleaner has no credential producer",
        "DAGMAN_HOLD_CLAIM_TIME" => "the home reuses claims on its own (claim reuse)",
        "DAGMAN_REMOVE_TEMP_SUBMIT_FILES" => "inline descriptions are never written to files",
        "DAGMAN_GENERATE_SUBDAG_SUBMITS" => "sub-DAGs are run by the station without a .condor.sub",
        "DAGMAN_REMOVE_NODE_JOBS" | "DAGMAN_REMOVE_JOBS_AFTER_LIMIT_CHANGE" => {
            "a removed DAG always removes its node jobs"
        }
        "DAGMAN_RECORD_MACHINE_ATTRS" => "no machine attributes are recorded in job ads",
        "DAGMAN_RETRY_SUBMIT_FIRST" => "a failed submission is retried in place",
        "DAGMAN_MANAGER_JOB_APPEND_GETENV" | "DAGMAN_WRITE_PARTIAL_RESCUE" => {
            "Gleaner has no choice here"
        }
        _ => return None,
    })
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" | "on" => Some(true),
        "false" | "f" | "no" | "n" | "0" | "off" => Some(false),
        _ => None,
    }
}

/// Sets one knob (`name` upper case). `Ok(None)`: set; `Ok(Some(w))`:
/// accepted with a warning; `Err`: a bad value.
pub fn set(cfg: &mut DagConfig, name: &str, value: &str) -> Result<Option<String>, String> {
    let v = value.trim();
    let int = |lo: i64, hi: i64| -> Result<i64, String> {
        let n: i64 = v
            .parse()
            .map_err(|_| format!("{name} = {v:?}: expected an integer"))?;
        if n < lo || n > hi {
            return Err(format!("{name} = {n}: must be between {lo} and {hi}"));
        }
        Ok(n)
    };
    let boolean = || parse_bool(v).ok_or_else(|| format!("{name} = {v:?}: expected True or False"));
    let u = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
    match name {
        "DAGMAN_MAX_JOBS_IDLE" => cfg.max_jobs_idle = u(int(0, i64::from(i32::MAX))?),
        "DAGMAN_MAX_JOBS_SUBMITTED" => cfg.max_jobs_submitted = u(int(0, i64::from(i32::MAX))?),
        "DAGMAN_MAX_PRE_SCRIPTS" => cfg.max_pre_scripts = u(int(0, i64::from(i32::MAX))?),
        "DAGMAN_MAX_POST_SCRIPTS" => cfg.max_post_scripts = u(int(0, i64::from(i32::MAX))?),
        "DAGMAN_MAX_HOLD_SCRIPTS" => cfg.max_hold_scripts = u(int(0, i64::from(i32::MAX))?),
        "DAGMAN_MAX_SUBMITS_PER_INTERVAL" => {
            cfg.max_submits_per_interval = u(int(1, i64::from(i32::MAX))?)
        }
        "DAGMAN_MAX_SUBMIT_ATTEMPTS" => cfg.max_submit_attempts = u(int(1, 16)?),
        "DAGMAN_MAX_JOB_HOLDS" => cfg.max_job_holds = u(int(0, 1_000_000)?),
        "DAGMAN_ALWAYS_RUN_POST" => cfg.always_run_post = boolean()?,
        "DAGMAN_USE_STRICT" => cfg.use_strict = int(0, 3)? as u8,
        "DAGMAN_MAX_RESCUE_NUM" => cfg.max_rescue_num = u(int(0, 999)?),
        "DAGMAN_RESET_RETRIES_UPON_RESCUE" => cfg.reset_retries_upon_rescue = boolean()?,
        "DAGMAN_AUTO_RESCUE" => cfg.auto_rescue = boolean()?,
        "DAGMAN_SUBMIT_DEPTH_FIRST" => cfg.submit_depth_first = boolean()?,
        "DAGMAN_RETRY_NODE_FIRST" => cfg.retry_node_first = boolean()?,
        "DAGMAN_DEFAULT_PRIORITY" => {
            cfg.default_priority = int(i64::from(i32::MIN), i64::from(i32::MAX))? as i32
        }
        "DAGMAN_DEFAULT_APPEND_VARS" => cfg.default_append_vars = boolean()?,
        "DAGMAN_MUNGE_NODE_NAMES" => cfg.munge_node_names = boolean()?,
        "DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS" | "DAGMAN_ALLOW_ILLEGAL_CHARS" => {
            cfg.allow_illegal_chars = boolean()?
        }
        "DAGMAN_USE_JOIN_NODES" => cfg.use_join_nodes = boolean()?,
        "DAGMAN_REMOVE_JOB_LIST_ON_FAILURE" => cfg.remove_job_list_on_failure = boolean()?,
        "DAGMAN_NODE_JOB_FAILURE_TOLERANCE" => {
            cfg.node_job_failure_tolerance = u(int(0, i64::from(i32::MAX))?)
        }
        "DAGMAN_PROHIBIT_MULTI_JOBS" => cfg.prohibit_multi_jobs = boolean()?,
        "DAGMAN_SUPPRESS_NOTIFICATION" => cfg.suppress_notification = boolean()?,
        "DAGMAN_SUPPRESS_JOB_LOGS" => cfg.suppress_job_logs = boolean()?,
        "DAGMAN_PUT_FAILED_JOBS_ON_HOLD" => cfg.put_failed_jobs_on_hold = boolean()?,
        "DAGMAN_USER_LOG_SCAN_INTERVAL" => {
            cfg.user_log_scan_interval = u(int(1, i64::from(i32::MAX))?)
        }
        "DAGMAN_METRICS_FILE_VERSION" => cfg.metrics_file_version = int(1, 2)? as u8,
        "DAGMAN_REPORT_GRAPH_METRICS" => cfg.report_graph_metrics = boolean()?,
        "DAGMAN_STARTUP_CYCLE_DETECT" => cfg.startup_cycle_detect = boolean()?,
        "DAGMAN_NODE_RECORD_INFO" => cfg.node_record_info = v.to_string(),
        "DAGMAN_INHERIT_ATTRS" => cfg.inherit_attrs = v.to_string(),
        "DAGMAN_INHERIT_ATTRS_PREFIX" => cfg.inherit_attrs_prefix = v.to_string(),
        "DAGMAN_MAX_SCRIPT_SECONDS" => cfg.max_script_seconds = int(0, i64::MAX)? as u64,
        _ => {
            return Ok(Some(match inert(name) {
                Some(why) => format!("{name} has no effect in Gleaner: {why}"),
                None if name.starts_with("DAGMAN_") => {
                    format!("{name} is not a DAGMan setting Gleaner knows; ignored")
                }
                None => {
                    format!("{name} is not a DAGMan setting; only DAGMAN_* settings apply to a DAG")
                }
            }));
        }
    }
    Ok(None)
}

/// One problem or note in a configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigNote {
    pub line: usize,
    pub message: String,
}

/// Reads a configuration file's text into `cfg`. Returns the warnings, or
/// every error (each with its line) if any setting is invalid.
pub fn read(cfg: &mut DagConfig, text: &str) -> Result<Vec<ConfigNote>, Vec<ConfigNote>> {
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut pending = String::new();
    let mut first_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if pending.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if pending.is_empty() {
            first_line = line;
        }
        if let Some(body) = t.strip_suffix('\\') {
            pending.push_str(body);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        let stmt = std::mem::take(&mut pending);
        let Some((name, value)) = stmt.split_once('=') else {
            let lower = stmt.to_ascii_lowercase();
            if lower.starts_with("if ")
                || lower == "else"
                || lower == "endif"
                || lower.starts_with("elif ")
                || lower.starts_with("include")
                || lower.starts_with("use ")
            {
                errors.push(ConfigNote {
                    line: first_line,
                    message: format!("{stmt:?}: conditionals, includes and metaknobs are not supported in a DAG's configuration file"),
                });
            } else {
                errors.push(ConfigNote {
                    line: first_line,
                    message: format!("{stmt:?} is not NAME = value"),
                });
            }
            continue;
        };
        let name = name.trim().to_ascii_uppercase();
        let value = expand(value.trim(), &seen);
        seen.insert(name.clone(), value.clone());
        match set(cfg, &name, &value) {
            Ok(None) => {}
            Ok(Some(w)) => warnings.push(ConfigNote {
                line: first_line,
                message: w,
            }),
            Err(e) => errors.push(ConfigNote {
                line: first_line,
                message: e,
            }),
        }
    }
    if errors.is_empty() {
        Ok(warnings)
    } else {
        Err(errors)
    }
}

/// `$(NAME)` → an earlier setting's value (unknown names stay as written).
fn expand(value: &str, seen: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("$(") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(j) => {
                let name = after[..j].trim().to_ascii_uppercase();
                match seen.get(&name) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&rest[i..i + 3 + j]),
                }
                rest = &after[j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_knobs_and_warns_about_the_rest() {
        let mut c = DagConfig::default();
        let w = read(
            &mut c,
            "# x\ndagman_max_jobs_idle = 7\nDAGMAN_ALWAYS_RUN_POST = True\nA = 3\nDAGMAN_MAX_PRE_SCRIPTS = $(A)\nDAGMAN_VERBOSITY = 5\nALL_DEBUG = D_FULLDEBUG\n",
        )
        .unwrap();
        assert_eq!(c.max_jobs_idle, 7);
        assert!(c.always_run_post);
        assert_eq!(c.max_pre_scripts, 3);
        assert_eq!(w.len(), 3, "{w:?}");
        assert_eq!(w[0].line, 4);
        let e = read(&mut c, "DAGMAN_MAX_SUBMIT_ATTEMPTS = 99\nfoo\n").unwrap_err();
        assert_eq!(e.len(), 2);
        assert!(e[0].message.contains("between 1 and 16"));
    }
}
