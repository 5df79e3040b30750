//! The configuration knobs `htcondor2.param` answers: HTCondor's names
//! for what a Gleaner pool has (where the user's pool directory is, the
//! coordinator's host, this machine's name) and the usual defaults of the
//! knobs tools read. `_CONDOR_KNOB` environment variables override them,
//! as they override HTCondor's configuration.

use std::path::Path;

/// Knobs whose value does not depend on the pool, as HTCondor 25
/// defaults them.
const FIXED: &[(&str, &str)] = &[
    ("UPDATE_INTERVAL", "300"),
    ("MAX_JOBS_RUNNING", "10000"),
    ("MAX_JOBS_SUBMITTED", "2147483647"),
    ("DAGMAN_MAX_JOBS_IDLE", "1000"),
    ("DAGMAN_MAX_JOBS_SUBMITTED", "0"),
    ("JOB_DEFAULT_REQUESTMEMORY", "128"),
    ("JOB_DEFAULT_REQUESTDISK", "DiskUsage"),
    ("JOB_DEFAULT_REQUESTCPUS", "1"),
    ("ENABLE_SSH_TO_JOB", "false"),
    ("FILETRANSFER_PLUGINS", ""),
    ("SEC_DEFAULT_AUTHENTICATION_METHODS", "TOKEN"),
    ("SHADOW_LOG", ""),
    ("TOOL_DEBUG", ""),
];

/// This machine's name (the kernel's, as `hostname` prints it).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The host of a URL (`https://central:9618` → `central:9618`).
fn url_host(url: &str) -> &str {
    url.split("://")
        .nth(1)
        .unwrap_or(url)
        .split('/')
        .next()
        .unwrap_or(url)
}

/// Every knob and its value for the pool directory `home`.
pub fn defaults(home: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = FIXED
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let host = hostname();
    let home_s = home.display().to_string();
    let log = home.join("log").display().to_string();
    for (k, v) in [
        ("LOCAL_DIR", home_s.clone()),
        ("GLEAN_HOME", home_s.clone()),
        ("LOG", log.clone()),
        ("SPOOL", home.join("spool").display().to_string()),
        ("EXECUTE", home.join("execute").display().to_string()),
        ("SCHEDD_LOG", format!("{log}/SchedLog")),
        ("MASTER_LOG", format!("{log}/MasterLog")),
        ("COLLECTOR_LOG", format!("{log}/CollectorLog")),
        ("STARTD_LOG", format!("{log}/StartLog")),
        ("FULL_HOSTNAME", host.clone()),
        (
            "HOSTNAME",
            host.split('.').next().unwrap_or(&host).to_string(),
        ),
        ("SCHEDD_HOST", host.clone()),
        ("UID_DOMAIN", host.clone()),
        ("FILESYSTEM_DOMAIN", host.clone()),
        ("CONDOR_VERSION", crate::version::htcondor_version()),
    ] {
        out.push((k.to_string(), v));
    }
    if let Ok(text) = std::fs::read_to_string(home.join("pool.toml"))
        && let Ok(pool) = toml::from_str::<toml::Table>(&text)
        && let Some(url) = pool.get("coordinator").and_then(|v| v.as_str())
    {
        let h = url_host(url).to_string();
        out.push(("CONDOR_HOST".into(), h.clone()));
        out.push(("COLLECTOR_HOST".into(), h));
    }
    for (k, v) in std::env::vars() {
        if let Some(knob) = k.strip_prefix("_CONDOR_")
            && !knob.is_empty()
        {
            out.retain(|(n, _)| !n.eq_ignore_ascii_case(knob));
            out.push((knob.to_string(), v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_of_a_pool_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("pool.toml"),
            "socket = \"/run/x.sock\"\ncoordinator = \"https://central:9618\"\n",
        )
        .unwrap();
        let k = defaults(d.path());
        let get = |n: &str| k.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("CONDOR_HOST").as_deref(), Some("central:9618"));
        assert_eq!(get("LOCAL_DIR"), Some(d.path().display().to_string()));
        assert_eq!(get("UPDATE_INTERVAL").as_deref(), Some("300"));
        assert!(get("SCHEDD_LOG").unwrap().ends_with("/log/SchedLog"));
    }
}
