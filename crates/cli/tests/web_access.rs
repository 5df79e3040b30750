//! Who gets into the dashboard and the owner's page, on a real personal
//! pool (`glean up --stations 2`), and what a refused caller leaves
//! unchanged (docs/dashboard.md, docs/owner.md):
//!
//! - dashboard: a ticket is spent once; an unknown or missing one gives no
//!   session; the page's state needs the session (a bearer token is not
//!   one); a station token gets no ticket; logout without the CSRF token
//!   is refused and the session lives on;
//! - `glean drain`/`vacate` with a user's token are refused and change
//!   nothing; with the administrator's, `glean status` shows the drain
//!   (`AV drained`) and `--cancel` ends it;
//! - owner: another Unix user's `glean owner` (link, status, stop) is
//!   refused and the controls stay as they were; the page's API needs the
//!   session, and a change without the CSRF token is refused with nothing
//!   changed; root's `glean owner stop/policy/memory/schedule` take effect,
//!   are kept 0600 on disk and survive a SIGKILL of the station (which
//!   `glean up` restarts).
//!
//! Needs root (it makes a second Unix account); prints `skipped` otherwise.

mod common;

use common::{TestOwner, free_base_port, glean_as, glean_in, up_with, wait_pool_up};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// One HTTP/1.1 request; (status line, headers, body).
fn http(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// The session cookie a login link sets, if it does.
fn login(url: &str) -> (u16, Option<String>) {
    let (base, path) = url.split_at(url.find("/dashboard/").or(url.find("/owner/")).unwrap());
    let (status, head, _) = http(base, "GET", path, &[], "");
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .map(|c| c.split(';').next().unwrap_or_default().to_string());
    (status, cookie)
}

fn link(out: std::process::Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn json(out: std::process::Output) -> Value {
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn only_viewers_with_sessions_and_only_the_owner_get_in() {
    if !nix::unistd::geteuid().is_root() {
        println!("skipped: needs root to make a second Unix account");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let other = TestOwner::new("webacc").unwrap();
    other.dir(&work).unwrap();
    let base = free_base_port(5);
    // Plain HTTP on loopback: this test speaks raw HTTP to check the
    // access rules; TLS is `tls_attacks.rs`'s, the browser test's pages
    // are served over it.
    let _pool = up_with(&home, 2, base, Some(1.0), &["--plain-http"]);
    wait_pool_up(&home);
    let coord = format!("http://127.0.0.1:{base}");
    let station1 = format!("http://127.0.0.1:{}", base + 3);
    let sock1 = format!("unix:/run/gleaner/up-{}.sock", base + 3);

    // --- the dashboard ---
    let (s, _, _) = http(&coord, "GET", "/dashboard/api/state", &[], "");
    assert_eq!(s, 401, "state without a session");
    let token = std::fs::read_to_string(home.join("token")).unwrap();
    let bearer = format!("Bearer {}", token.trim());
    let (s, _, _) = http(
        &coord,
        "GET",
        "/dashboard/api/state",
        &[("Authorization", &bearer)],
        "",
    );
    assert_eq!(s, 401, "a pool token is no dashboard session");
    let (s, cookie) = login(&format!("{coord}/dashboard/login?ticket=00ff"));
    assert_eq!((s, cookie), (401, None), "an unknown ticket");
    let (s, cookie) = login(&format!("{coord}/dashboard/login"));
    assert_eq!((s, cookie), (401, None), "no ticket");
    let url = link(glean_in(&home, &work, &["dashboard"]));
    let (s, cookie) = login(&url);
    assert_eq!(s, 303);
    let cookie = cookie.expect("a session cookie");
    let (s, again) = login(&url);
    assert_eq!((s, again), (401, None), "a ticket is spent once");
    let (s, _, body) = http(
        &coord,
        "GET",
        "/dashboard/api/state",
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(s, 200, "{body}");
    let state: Value = serde_json::from_str(&body).unwrap();
    let csrf = state["viewer"]["csrf"].as_str().unwrap().to_string();
    assert!(
        !body.contains(token.trim()),
        "the page never sees the pool token"
    );
    // Logout without the CSRF token: refused, the session lives on.
    let (s, _, _) = http(
        &coord,
        "POST",
        "/dashboard/logout",
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(s, 403);
    assert_eq!(
        http(
            &coord,
            "GET",
            "/dashboard/api/state",
            &[("Cookie", &cookie)],
            ""
        )
        .0,
        200
    );
    // A station's token gets no ticket; no token, none either.
    let st = std::fs::read_to_string(home.join("stations/station0/station.token")).unwrap();
    let (s, _, _) = http(
        &coord,
        "POST",
        "/v1/dashboard/ticket",
        &[("Authorization", &format!("Bearer {}", st.trim()))],
        "",
    );
    assert_eq!(s, 403, "a station token asking for a ticket");
    assert_eq!(http(&coord, "POST", "/v1/dashboard/ticket", &[], "").0, 401);
    // With it, logout ends the session.
    let (s, _, _) = http(
        &coord,
        "POST",
        "/dashboard/logout",
        &[
            ("Cookie", &cookie),
            ("X-Gleaner-CSRF", &csrf),
            ("Origin", &coord),
        ],
        "",
    );
    assert_eq!(s, 204);
    assert_eq!(
        http(
            &coord,
            "GET",
            "/dashboard/api/state",
            &[("Cookie", &cookie)],
            ""
        )
        .0,
        401
    );

    // --- an administrator's hold on a station, from the command line ---
    let admin_token = home.join("admin.token").display().to_string();
    // A station the coordinator knows (the pool may still be announcing
    // the second).
    let deadline = Instant::now() + Duration::from_secs(30);
    let host = loop {
        let st = json(glean_in(&home, &work, &["--json", "status"]));
        if let Some(n) = st["stations"][0]["name"].as_str() {
            break n.to_string();
        }
        assert!(Instant::now() < deadline, "no station in glean status");
        std::thread::sleep(Duration::from_millis(300));
    };
    let host = host.as_str();
    let drained = |name: &str| {
        json(glean_in(&home, &work, &["--json", "status"]))["stations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == name && s["drained"] == true)
    };
    for args in [vec!["drain", host], vec!["vacate", host]] {
        let out = glean_in(&home, &work, &args);
        assert!(
            !out.status.success(),
            "{args:?} with a user's token: {out:?}"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("403"), "{err}");
    }
    assert!(!drained(host), "a refused drain changed nothing");
    let out = glean_in(&home, &work, &["drain", host, "--token", &admin_token]);
    assert!(out.status.success(), "{out:?}");
    assert!(drained(host));
    let table = glean_in(&home, &work, &["status"]);
    assert!(
        String::from_utf8_lossy(&table.stdout).contains(" drained"),
        "{table:?}"
    );
    let out = glean_in(
        &home,
        &work,
        &["drain", "--cancel", host, "--token", &admin_token],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(!drained(host));
    let out = glean_in(
        &home,
        &work,
        &["vacate", "nowhere", "--token", &admin_token],
    );
    assert!(!out.status.success(), "vacate of an unknown station");

    // --- the owner's side of station1 ---
    let status = |h: &Path| {
        json(glean_in(
            h,
            &work,
            &["--json", "owner", "status", "--station", &sock1],
        ))
    };
    let before = status(&home);
    assert_eq!(before["lending"], true);
    for args in [
        vec!["owner", "--station", &sock1],
        vec!["owner", "status", "--station", &sock1],
        vec!["owner", "stop", "--station", &sock1],
        vec!["owner", "policy", "ie", "--station", &sock1],
    ] {
        let out = glean_as(&other, &home, &work, &args);
        assert!(!out.status.success(), "{args:?} as another user: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not the owner"), "{err}");
    }
    assert_eq!(
        status(&home)["controls"],
        before["controls"],
        "nothing changed"
    );
    assert_eq!(status(&home)["lending"], true);

    // The page: no session 401; a change without CSRF 403, nothing changed.
    assert_eq!(http(&station1, "GET", "/owner/api/state", &[], "").0, 401);
    let (s, cookie) = login(&link(glean_in(
        &home,
        &work,
        &["owner", "--station", &sock1],
    )));
    assert_eq!(s, 303);
    let cookie = cookie.unwrap();
    let stop = r#"{"action":"stop","until_unix":null}"#;
    let (s, _, _) = http(
        &station1,
        "POST",
        "/owner/api/controls",
        &[("Cookie", &cookie), ("Content-Type", "application/json")],
        stop,
    );
    assert_eq!(s, 403, "a change without the CSRF token");
    assert_eq!(status(&home)["lending"], true);
    // A bearer token (even the pool's) does not open the page.
    assert_eq!(
        http(
            &station1,
            "GET",
            "/owner/api/state",
            &[("Authorization", &bearer)],
            ""
        )
        .0,
        401
    );

    // The page's event stream, open while the owner stops lending: the
    // stop reaches it without a reload.
    let events = event_lines(&station1, "/owner/api/events", &cookie);
    let first = events
        .recv_timeout(Duration::from_secs(10))
        .expect("the stream's first event");
    assert!(first.1.contains("\"lending\":true"), "{}", first.1);

    // Root's controls take effect, are kept 0600, survive a SIGKILL.
    let mut stopped_at = None;
    for args in [
        vec!["owner", "stop", "--until", "+1h"],
        vec!["owner", "policy", "ie"],
        vec!["owner", "memory", "512"],
        vec!["owner", "schedule", "Mon-Sun 00:00-24:00"],
    ] {
        let mut a = args.clone();
        a.extend(["--station", sock1.as_str()]);
        let out = glean_in(&home, &work, &a);
        assert!(out.status.success(), "{a:?}: {out:?}");
        stopped_at.get_or_insert_with(Instant::now);
    }
    let stopped_at = stopped_at.unwrap();
    let seen = loop {
        let (at, line) = events
            .recv_timeout(Duration::from_secs(10))
            .expect("the stop reaches the open stream");
        if line.contains("\"lending\":false") && line.contains("\"why\":\"stopped\"") {
            break at;
        }
    };
    println!(
        "owner's stop reached the open page stream {:.0} ms after `glean owner stop` returned",
        seen.saturating_duration_since(stopped_at).as_secs_f64() * 1000.0
    );
    let after = status(&home);
    assert_eq!(
        (after["lending"].as_bool(), after["why"].as_str()),
        (Some(false), Some("stopped"))
    );
    assert_eq!(after["policy"], "immediate_eviction");
    assert_eq!(after["offered_memory_mb"], 512);
    let file = home.join("stations/station1/state/owner_controls.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let pid = station_pid(&home.join("stations/station1/station.toml")).expect("station1's pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let restarted = loop {
        std::thread::sleep(Duration::from_millis(300));
        let out = glean_in(
            &home,
            &work,
            &["--json", "owner", "status", "--station", &sock1],
        );
        if out.status.success()
            && station_pid(&home.join("stations/station1/station.toml")).is_some_and(|p| p != pid)
        {
            break serde_json::from_slice::<Value>(&out.stdout).unwrap();
        }
        assert!(Instant::now() < deadline, "station1 did not come back");
    };
    assert_eq!(
        restarted["controls"], after["controls"],
        "controls survive the restart"
    );
    assert_eq!(restarted["why"], "stopped");
    let out = glean_in(&home, &work, &["owner", "resume", "--station", &sock1]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(status(&home)["lending"], true);
}

/// The `data:` lines of a server-sent-events stream at `base` `path` with
/// the session `cookie`, each with when it arrived; the channel closes
/// with the stream.
fn event_lines(
    base: &str,
    path: &str,
    cookie: &str,
) -> std::sync::mpsc::Receiver<(Instant, String)> {
    use std::io::BufRead;
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(addr).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(s).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("data:") && tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    rx
}

/// The pid of the `glean station` process reading `config`.
fn station_pid(config: &Path) -> Option<i32> {
    let want = config.to_string_lossy().to_string();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<String> = cmd
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        (args.iter().any(|a| a == "station") && args.contains(&want)).then_some(pid)
    })
}
