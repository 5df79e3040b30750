//! `GET /metrics` on a running personal pool (`glean up --stations 2`)
//! while jobs run: the coordinator's numbers agree with `glean status` and
//! `glean userprio` (the Up-Down index exactly), the home station's with
//! `glean q`, and both bodies parse with the Prometheus project's own
//! text-format parsers (PyPI `prometheus-client`, `prometheus_parse.py`).
//! The parser check is skipped (with a message) when python3 cannot import
//! `prometheus_client`, unless `GLEANER_REQUIRE_ORACLE=1`.

mod common;

use common::{TestOwner, free_base_port, glean_as, glean_in, up, wait_pool_up};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// One sample: name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

/// A client of the pool at `home` (`glean up` makes it TLS on loopback:
/// the pool CA is `home/pool-ca.pem`).
fn client(home: &Path) -> reqwest::Client {
    let builder = reqwest::Client::builder().timeout(Duration::from_secs(30));
    match gleaner_edge::tls::PoolCa::load("up", &home.join("pool-ca.pem")) {
        Ok(ca) => {
            gleaner_edge::tls::https_client(builder, &ca, None, gleaner_edge::tls::Expect::UrlHost)
                .unwrap()
        }
        Err(_) => builder.build().unwrap(),
    }
}

/// `GET url/metrics` with the bearer `token`; the body (status 200 checked,
/// and its headers).
fn scrape(home: &Path, base: &str, token: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r = client(home)
            .get(format!("{}/metrics", base.trim_end_matches('/')))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let ct = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap_or("").to_ascii_lowercase());
        assert!(
            ct.as_deref()
                .unwrap_or("")
                .starts_with("application/openmetrics-text"),
            "{ct:?}"
        );
        assert!(
            r.headers().get("transfer-encoding").is_none(),
            "{:?}",
            r.headers()
        );
        r.text().await.unwrap()
    })
}

/// Without a token: the status line's code (401: the endpoint is behind
/// the pool's tokens).
fn scrape_status_without_token(home: &Path, base: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r = client(home)
            .get(format!("{}/metrics", base.trim_end_matches('/')))
            .send()
            .await
            .unwrap();
        format!("HTTP/1.1 {}", r.status().as_u16())
    })
}

/// The samples of an OpenMetrics body, read line by line (the values the
/// test compares; the Python parsers check the format itself).
fn samples(body: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => {
                let mut m = BTreeMap::new();
                for pair in rest.trim_end_matches('}').split("\",") {
                    if pair.is_empty() {
                        continue;
                    }
                    let (k, v) = pair.split_once("=\"").unwrap();
                    m.insert(k.to_string(), v.trim_end_matches('"').to_string());
                }
                (n.to_string(), m)
            }
            None => (series.to_string(), BTreeMap::new()),
        };
        out.push((name, labels, value));
    }
    out
}

/// The value of `name` with exactly these labels, if present.
fn value(s: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    s.iter()
        .find(|(n, l, _)| n == name && *l == want)
        .map(|(_, _, v)| *v)
}

/// The Prometheus project's parsers over `body`; `None` when missing.
fn oracle_parse(body: &str) -> Option<Vec<Sample>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/prometheus_parse.py");
    let missing = |why: String| {
        gleaner_testkit::oracle_missing(
            "prometheus_client's parser",
            "python3 -m pip install prometheus-client",
            &why,
        );
        None
    };
    let child = std::process::Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return missing(format!("cannot run python3: {e}")),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.code() == Some(3) {
        return missing(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    assert!(
        out.status.success(),
        "the Prometheus parser refused the body: {}\n--- body ---\n{body}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Vec<(String, BTreeMap<String, String>, f64)> =
        serde_json::from_slice(&out.stdout).unwrap();
    Some(v)
}

/// Checks the oracle read the same samples as the test's reader.
fn same_samples(body: &str, mine: &[Sample]) {
    let Some(theirs) = oracle_parse(body) else {
        return;
    };
    assert_eq!(theirs.len(), mine.len(), "sample counts differ\n{body}");
    for (n, l, v) in &theirs {
        let labels: Vec<(&str, &str)> = l.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mine_v = value(mine, n, &labels);
        assert!(
            mine_v.is_some_and(|m| (m - v).abs() <= 1e-9 * v.abs().max(1.0)),
            "{n}{l:?}: parser {v}, test reader {mine_v:?}"
        );
    }
}

fn json(out: std::process::Output) -> Value {
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A job's state name in `glean q --json` (`{"state": {"state": "idle"}}`).
fn state_of(job: &Value) -> String {
    let s = &job["state"];
    s.as_str()
        .or_else(|| s["state"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Idle and running counts of the owner's jobs, as `glean q` shows them.
fn q_counts(owner: &TestOwner, home: &Path, work: &Path) -> (u64, u64) {
    let jobs = json(glean_as(owner, home, work, &["--json", "q"]));
    let jobs = jobs.as_array().cloned().unwrap_or_default();
    let n = |st: &str| jobs.iter().filter(|j| state_of(j) == st).count() as u64;
    (n("idle"), n("running"))
}

/// Every `gleaner_*` name the sample Grafana dashboard queries is served.
fn dashboard_names_exist(coordinator: &[Sample], station: &[Sample]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana/gleaner.json");
    let text = std::fs::read_to_string(path).unwrap();
    let _: Value = serde_json::from_str(&text).unwrap();
    let served: Vec<&str> = coordinator
        .iter()
        .chain(station)
        .map(|(n, _, _)| n.as_str())
        .collect();
    let mut names = 0;
    for (i, _) in text.match_indices("gleaner_") {
        let name: String = text[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        assert!(
            served.contains(&name.as_str()),
            "dashboard queries {name}, not served"
        );
        names += 1;
    }
    assert!(names >= 10);
}

#[test]
fn metrics_agree_with_status_userprio_and_q_while_jobs_run_and_parse() {
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let owner = TestOwner::new("metrics").unwrap();
    owner.dir(&work).unwrap();
    // Interval 4 s: the Up-Down indices move once per interval, so two
    // reads of `glean userprio` around a scrape usually agree.
    let _pool = up(&home, 2, free_base_port(4), Some(4.0));
    wait_pool_up(&home);
    let token = std::fs::read_to_string(home.join("token"))
        .unwrap()
        .trim()
        .to_string();
    let pool_toml = std::fs::read_to_string(home.join("pool.toml")).unwrap();
    let url_of = |key: &str| {
        pool_toml
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .unwrap()
            .trim_matches('"')
            .to_string()
    };
    let (coordinator, station0) = (url_of("coordinator"), url_of("station"));
    assert!(scrape_status_without_token(&home, &coordinator).contains(" 401"));
    assert!(scrape_status_without_token(&home, &station0).contains(" 401"));

    // More jobs than the pool's CPUs, long enough to be running throughout.
    std::fs::write(
        work.join("job.sub"),
        "executable = /bin/sleep\narguments = 120\nqueue 12\n",
    )
    .unwrap();
    let out = glean_as(&owner, &home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "{out:?}");

    let deadline = Instant::now() + Duration::from_secs(120);
    let mut checked = false;
    let mut last_why = String::new();
    while Instant::now() < deadline && !checked {
        std::thread::sleep(Duration::from_millis(500));
        // Views on both sides of the scrapes: a reading counts only if the
        // pool did not change in between.
        let (q_before, status_before, prio_before) = (
            q_counts(&owner, &home, &work),
            json(glean_in(&home, &work, &["--json", "status"])),
            json(glean_in(&home, &work, &["--json", "userprio"])),
        );
        let coord_body = scrape(&home, &coordinator, &token);
        let station_body = scrape(&home, &station0, &token);
        let (q_after, status_after, prio_after) = (
            q_counts(&owner, &home, &work),
            json(glean_in(&home, &work, &["--json", "status"])),
            json(glean_in(&home, &work, &["--json", "userprio"])),
        );
        let strip_seen = |mut v: Value| {
            for s in v["stations"].as_array_mut().into_iter().flatten() {
                s["last_seen_secs"] = Value::Null;
            }
            v
        };
        if q_before != q_after
            || strip_seen(status_before.clone()) != strip_seen(status_after)
            || prio_before != prio_after
        {
            last_why = "the pool changed during the scrape".into();
            continue;
        }
        let (idle, running) = q_before;
        if running == 0 {
            last_why = "no job running yet".into();
            continue;
        }
        let c = samples(&coord_body);
        let s = samples(&station_body);

        // Coordinator vs `glean userprio`: index, nodes held and wanted.
        let prio_rows = prio_before["stations"].as_array().unwrap();
        assert!(!prio_rows.is_empty());
        for row in prio_rows {
            let name = row["station"].as_str().unwrap();
            let l = [("station", name)];
            assert_eq!(
                value(&c, "gleaner_updown_index", &l),
                row["si"].as_f64(),
                "SI of {name}"
            );
            assert_eq!(
                value(&c, "gleaner_station_nodes_held", &l),
                row["nodes_held"].as_f64(),
                "nodes held by {name}"
            );
            assert_eq!(
                value(&c, "gleaner_station_nodes_wanted", &l),
                row["waiting"].as_f64(),
                "nodes wanted by {name}"
            );
        }
        // Coordinator vs `glean status`: stations by state, guests, demand.
        let rows = status_before["stations"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        for st in ["AV", "NA"] {
            let n = rows.iter().filter(|r| r["state"] == st).count() as f64;
            assert_eq!(value(&c, "gleaner_stations", &[("state", st)]), Some(n));
        }
        let mut guests = 0.0;
        for r in rows {
            let name = r["name"].as_str().unwrap();
            let l = [("station", name)];
            for (metric, field) in [
                ("gleaner_station_guests", "guests"),
                ("gleaner_station_idle_jobs", "idle_jobs"),
                ("gleaner_station_remote_jobs", "remote_jobs"),
            ] {
                assert_eq!(value(&c, metric, &l), r[field].as_f64(), "{metric} {name}");
            }
            guests += r["guests"].as_f64().unwrap();
        }
        assert!(value(&c, "gleaner_grants_total", &[]).unwrap() >= guests);
        // A fresh coordinator may have used less than one clock tick.
        assert!(value(&c, "gleaner_process_cpu_seconds_total", &[]).unwrap() >= 0.0);
        assert!(value(&c, "gleaner_process_resident_memory_bytes", &[]).unwrap() > 1e5);

        // Station0 (the home of every job) vs `glean q`.
        let owner_name = owner.name();
        assert_eq!(
            value(&s, "gleaner_jobs", &[("state", "idle")]),
            Some(idle as f64)
        );
        assert_eq!(
            value(&s, "gleaner_jobs", &[("state", "running")]),
            Some(running as f64)
        );
        assert_eq!(
            value(
                &s,
                "gleaner_user_jobs",
                &[("user", owner_name), ("state", "running")]
            ),
            Some(running as f64)
        );
        if idle > 0 {
            assert_eq!(
                value(
                    &s,
                    "gleaner_user_jobs",
                    &[("user", owner_name), ("state", "idle")]
                ),
                Some(idle as f64)
            );
        }
        let started = value(&s, "gleaner_submit_to_running_seconds_count", &[]).unwrap();
        assert!(
            started >= running as f64,
            "{started} starts observed, {running} running"
        );
        // Every start is a queue wait too (issue 18, item 1).
        let waits = value(&s, "gleaner_queue_wait_seconds_count", &[]).unwrap();
        assert!(
            waits >= started,
            "{waits} queue waits, {started} first starts"
        );
        for who in ["guests", "owner"] {
            let cpu = value(&s, "gleaner_host_cpu_seconds_total", &[("who", who)]);
            assert!(cpu.is_some_and(|c| c >= 0.0), "{who} CPU: {cpu:?}");
        }
        assert!(value(&s, "gleaner_owner_transitions_total", &[("to", "NA")]).is_some());
        assert!(
            value(
                &s,
                "gleaner_guest_actions_total",
                &[("action", "suspended")]
            )
            .is_some()
        );
        let guests_here: f64 = s
            .iter()
            .filter(|(n, _, _)| n == "gleaner_guests")
            .map(|(_, _, v)| v)
            .sum();
        let station0_status = rows.iter().find(|r| r["address"] == station0.as_str());
        eprintln!(
            "scraped: {idle} idle, {running} running; station0 guests {guests_here} (status {:?})",
            station0_status.map(|r| &r["guests"])
        );
        assert!(value(&s, "gleaner_process_resident_memory_bytes", &[]).unwrap() > 1e5);

        same_samples(&coord_body, &c);
        same_samples(&station_body, &s);
        dashboard_names_exist(&c, &s);
        checked = true;
    }
    assert!(
        checked,
        "never a stable reading with jobs running: {last_why}"
    );
}
