//! Browser tests of the coordinator's dashboard and a station's owner page
//! (issue 18) on a real personal pool (`glean up --stations 2`), driven by
//! Debian's headless Chromium through Playwright for Python
//! (`tests/browser/web_e2e.py`). What it asserts:
//!
//! - the dashboard loads from a `glean dashboard` login link with no
//!   console errors, its session cookie HttpOnly, SameSite=Strict and
//!   unreadable by scripts;
//! - submitted jobs appear as running on the stations `glean q` names,
//!   without a reload;
//! - after an owner returns (`active` in the station's owner file) the
//!   station shows owner-active within 2 s, and its guest suspended
//!   (the pool's `condor1988` policy);
//! - on the owner's page (a `glean owner` link), "Stop lending now" turns
//!   the station NA on both pages and in `glean status`, suspends its
//!   guest (owner's page, dashboard, `glean q`), and a job submitted then
//!   gets no placement there; "Lend again" resumes the guest; a forged
//!   CSRF token is refused (403) and changes nothing; the page records
//!   each guest's event→action latency;
//! - a user's dashboard shows no administrator actions, and its POST of
//!   one is refused (403) with nothing changed; an administrator's (an
//!   admin token's link) has them: "Drain" marks the station drained
//!   without a reload, on both pages and in `glean status`, "Undrain"
//!   ends it; "Vacate" (confirmed) sends the station's guests back to
//!   the queue; "Revoke" on the administrator's own token ends its
//!   session (401) and the token no longer drains anything.
//!
//! Skipped with a printed reason when Chromium or Playwright is missing,
//! unless `GLEANER_REQUIRE_BROWSER=1`. Screenshots go to
//! `$GLEANER_SCREENSHOTS` (e.g. `docs/img`), else a temporary directory.

mod common;

use common::{TestOwner, free_base_port, glean_in, up, wait_pool_up};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Why the browser test cannot run here, if it cannot.
fn browser_missing() -> Option<String> {
    if !Path::new(CHROMIUM).exists() {
        return Some(format!(
            "no Chromium at {CHROMIUM} (apt-get install chromium)"
        ));
    }
    let ok = Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (!ok).then(|| "python3 cannot import playwright (pip install playwright)".to_string())
}

fn skip_or_fail(why: &str) {
    let required = std::env::var("GLEANER_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    assert!(!required, "GLEANER_REQUIRE_BROWSER=1 but {why}");
    println!("SKIPPED: browser test: {why}");
}

/// The single line a `glean dashboard` / `glean owner` prints: a URL.
fn link(out: std::process::Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn dashboard_and_owner_page_in_a_real_browser() {
    if let Some(why) = browser_missing() {
        skip_or_fail(&why);
        return;
    }
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let owner = TestOwner::new("webui").unwrap();
    owner.dir(&work).unwrap();
    let base = free_base_port(5);
    let _pool = up(&home, 2, base, Some(1.0));
    wait_pool_up(&home);
    // One job per station (each offers one CPU), long enough to watch.
    std::fs::write(
        work.join("job.sub"),
        "executable = /bin/sleep\narguments = 600\nqueue 2\n",
    )
    .unwrap();
    std::fs::write(
        work.join("more.sub"),
        "executable = /bin/sleep\narguments = 600\nqueue 1\n",
    )
    .unwrap();
    // Two seconds of CPU each, one per station.
    let burn = work.join("burn.sh");
    owner
        .write(
            &burn,
            "#!/bin/sh\ntimeout 2 sha256sum /dev/zero >/dev/null\nexit 0\n",
        )
        .unwrap();
    std::fs::set_permissions(&burn, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(work.join("short.sub"), "executable = burn.sh\nqueue 2\n").unwrap();
    let stations = ["station0", "station1"];
    let dashboard_url = link(glean_in(&home, &work, &["dashboard"]));
    let admin_token = home.join("admin.token").display().to_string();
    let admin_dashboard_url = link(glean_in(
        &home,
        &work,
        &["dashboard", "--token", &admin_token],
    ));
    // Each station's owner link, on its own user socket (`glean up` puts
    // station K's at /run/gleaner/up-PORT.sock, PORT = base + 2 + K).
    let mut owner_urls = serde_json::Map::new();
    let mut owner_files = serde_json::Map::new();
    let mut owner_sockets = serde_json::Map::new();
    for (k, s) in stations.iter().enumerate() {
        let sock = format!("unix:/run/gleaner/up-{}.sock", base + 2 + k as u16);
        owner_urls.insert(
            s.to_string(),
            link(glean_in(&home, &work, &["owner", "--station", &sock])).into(),
        );
        owner_sockets.insert(s.to_string(), sock.clone().into());
        owner_files.insert(
            s.to_string(),
            home.join("stations")
                .join(s)
                .join("owner")
                .display()
                .to_string()
                .into(),
        );
    }
    let shots = std::env::var("GLEANER_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| tmp.path().join("shots"));
    std::fs::create_dir_all(&shots).unwrap();
    let config = serde_json::json!({
        "chromium": CHROMIUM,
        "glean": common::glean_bin(),
        "glean_home": home,
        "work": work,
        "user_uid": owner.uid(),
        "user_gid": owner.gid(),
        "stations": stations,
        "jobs": 2,
        "dashboard_url": dashboard_url,
        "admin_dashboard_url": admin_dashboard_url,
        "admin_token": admin_token,
        "owner_urls": owner_urls,
        "owner_files": owner_files,
        "owner_sockets": owner_sockets,
        "screenshots": shots,
        // Several scheduling intervals (1 s) for a placement to happen.
        "no_guest_wait_secs": 6,
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/web_e2e.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(config.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        skip_or_fail(stderr.trim());
        return;
    }
    assert!(
        out.status.success(),
        "browser test failed:\n{stderr}\nmeasured so far: {stdout}"
    );
    let m: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    println!("measured: {m:#}");
    let shown = m["owner_active_shown_secs"].as_f64().unwrap();
    assert!(shown < 2.0, "owner-active shown after {shown} s");
    for f in ["dashboard.png", "owner.png", "dashboard-admin.png"] {
        let png = std::fs::read(shots.join(f)).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{f}");
    }
}
