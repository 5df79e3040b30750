//! The README's first command, `glean up --demo`, end to end: the
//! personal pool made as any pool (pool init, join tokens, TLS), the demo
//! workload run to its summary with every job done, and the pool stopped
//! with nothing left running. Then a second demo interrupted with SIGINT
//! (Ctrl-C) in the middle: `glean up` stops its daemons and removes the
//! demo's accounts rather than dying and leaving them behind.
//!
//! One test: the demo's accounts (`gleaner-demo-heavy`, `-light`) are
//! machine-wide, so two demos must not overlap.

mod common;

use common::{free_base_port, glean_bin};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Daemons whose configuration lies under `home` (none once the pool is
/// down).
fn daemons_under(home: &Path) -> Vec<String> {
    let want = home.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name().to_str()?.parse::<i32>().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmd).replace('\0', " ");
            (text.contains("--config") && text.contains(&want)).then_some(text)
        })
        .collect()
}

fn account_exists(name: &str) -> bool {
    Command::new("getent")
        .args(["passwd", name])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Nothing of the pool under `home` runs, and the demo's accounts are gone.
fn assert_all_gone(home: &Path) {
    let left = daemons_under(home);
    assert!(left.is_empty(), "daemons left running: {left:?}");
    for a in ["gleaner-demo-heavy", "gleaner-demo-light"] {
        assert!(!account_exists(a), "account {a} left behind");
    }
}

/// `glean up --demo` on `port` with GLEAN_HOME=home; its stdout lines come
/// through the channel.
fn demo(home: &Path, port: u16) -> (Child, mpsc::Receiver<String>) {
    let mut c = Command::new(glean_bin())
        .args(["up", "--demo", "--port", &port.to_string()])
        .env("GLEAN_HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = c.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (c, rx)
}

/// Lines until one satisfies `want` (returned) or `within` passes.
fn until(rx: &mpsc::Receiver<String>, seen: &mut Vec<String>, within: Duration, want: &str) {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                let hit = l.contains(want);
                seen.push(l);
                if hit {
                    return;
                }
            }
            Err(_) => panic!(
                "no line with {want:?} within {within:?}:\n{}",
                seen.join("\n")
            ),
        }
    }
}

fn wait_exit(c: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = c.kill();
            panic!("glean up did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Removes what a root demo keeps outside GLEAN_HOME.
struct DemoDirs(u16);
impl Drop for DemoDirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(format!("/var/lib/gleaner/up-{}", self.0));
        let _ = std::fs::remove_dir_all(format!("/tmp/gleaner-up-{}", self.0));
        // The parent too if nothing else is in it (a package's state is
        // checked by scripts/test-deb.sh after the tests).
        let _ = std::fs::remove_dir("/var/lib/gleaner");
    }
}

#[test]
fn the_demo_runs_to_its_summary_over_tls_and_sigint_stops_a_demo_cleanly() {
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    gleaner_testkit::reachable(&home).unwrap();
    let port = free_base_port(7);
    let _dirs = DemoDirs(port);

    // 1. The whole demo.
    let started = Instant::now();
    let (mut up, rx) = demo(&home, port);
    let mut seen = Vec::new();
    until(&rx, &mut seen, Duration::from_secs(120), "Personal pool up");
    until(
        &rx,
        &mut seen,
        Duration::from_secs(60),
        "coordinator  https://",
    );
    until(&rx, &mut seen, Duration::from_secs(600), "[demo] done");
    let status = wait_exit(&mut up, Duration::from_secs(60));
    seen.extend(rx.try_iter());
    let text = seen.join("\n");
    assert!(status.success(), "{status}\n{text}");
    let took = started.elapsed();
    // Every job done: the last status line counts 12 heavy and 4 light.
    let last = seen
        .iter()
        .rev()
        .find(|l| l.contains("heavy:"))
        .expect("status lines");
    assert!(
        last.contains("12 done") && last.contains("4 done") && !last.contains("idle"),
        "{last}"
    );
    for want in [
        "Who waited",
        "Where jobs last ran",
        "Coordinator's Up-Down table",
        "stopping the pool",
    ] {
        assert!(text.contains(want), "no {want:?}:\n{text}");
    }
    // Over TLS: every station listed with https, each daemon said so.
    let https = text.matches("https://127.0.0.1:").count();
    assert!(https >= 5, "{https} https addresses:\n{text}");
    let mut logs = vec![home.join("coordinator/coordinator.log")];
    logs.extend((0..4).map(|k| home.join(format!("stations/station{k}/station.log"))));
    for log in &logs {
        let l = std::fs::read_to_string(log).unwrap();
        assert!(l.contains("TLS on"), "{}: {l}", log.display());
    }
    let pool = std::fs::read_to_string(home.join("pool.toml")).unwrap();
    assert!(
        pool.contains("https://") && pool.contains("ca = "),
        "{pool}"
    );
    assert_all_gone(&home);
    // A root pool's user sockets and their lock files go with it.
    for k in 0..4u16 {
        let sock = format!("/run/gleaner/up-{}.sock", port + 2 + k);
        for p in [sock.clone(), format!("{sock}.lock")] {
            assert!(!Path::new(&p).exists(), "{p} left behind");
        }
    }
    eprintln!("demo finished in {:.1} s", took.as_secs_f64());

    // 2. Ctrl-C in the middle of a demo.
    let (mut up, rx) = demo(&home, port);
    let mut seen = Vec::new();
    until(&rx, &mut seen, Duration::from_secs(120), "light (");
    assert!(account_exists("gleaner-demo-heavy"));
    let t = Instant::now();
    let _ = Command::new("kill")
        .args(["-INT", &up.id().to_string()])
        .status();
    let status = wait_exit(&mut up, Duration::from_secs(60));
    let stopped = t.elapsed();
    seen.extend(rx.try_iter());
    let text = seen.join("\n");
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(text.contains("[demo] interrupted"), "{text}");
    assert!(text.contains("stopping the pool"), "{text}");
    assert_all_gone(&home);
    eprintln!(
        "SIGINT: glean up and its daemons gone {:.1} s later",
        stopped.as_secs_f64()
    );
}
