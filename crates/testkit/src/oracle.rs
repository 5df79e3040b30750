//! The Python oracles tests compare against (HTCondor's modules, the
//! Prometheus parser): skipped with a message when missing, a failure when
//! CI requires them (`GLEANER_REQUIRE_ORACLE=1`).

use std::path::Path;
use std::process::Command;

/// An oracle is missing: fails when oracles are required, else says the
/// test is skipped. `what` names the oracle, `install` how to get it.
pub fn oracle_missing(what: &str, install: &str, why: &str) {
    let required = std::env::var("GLEANER_REQUIRE_ORACLE").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "GLEANER_REQUIRE_ORACLE=1 but {what} is unavailable ({why}); install it with `{install}`"
    );
    println!("SKIPPED: cannot use {what} ({why})");
}

/// The events of the user log `log` as HTCondor's own reader
/// (`htcondor2.JobEventLog`, through `crates/station/tests/htcondor_user_log.py`)
/// sees them, one JSON object each; `None` when the oracle is missing. The
/// reader runs in a time zone other than UTC: it must honour the log's `Z`.
pub fn htcondor_user_log(log: &Path) -> Option<Vec<serde_json::Value>> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../station/tests/htcondor_user_log.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(log)
        .env("TZ", "America/Chicago")
        .output();
    let missing = |why: String| {
        oracle_missing(
            "HTCondor's htcondor2 module",
            "python3 -m pip install htcondor",
            &why,
        );
        None
    };
    let out = match out {
        Ok(o) => o,
        Err(e) => return missing(format!("cannot run python3: {e}")),
    };
    if out.status.code() == Some(3) {
        return missing(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    assert!(
        out.status.success(),
        "HTCondor's reader rejected the log:\n{}\n--- log ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(log).unwrap_or_default()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let events: Result<Vec<serde_json::Value>, _> =
        text.lines().map(serde_json::from_str).collect();
    Some(events.unwrap_or_else(|e| panic!("HTCondor reader's output: {e}\n{text}")))
}
