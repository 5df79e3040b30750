//! Users are Unix users (issue 12), through the `glean` CLI run as real
//! accounts made by the test (root needed; skipped with a printed reason
//! otherwise):
//!
//! - on a station run by root, `glean` on the user socket needs no token:
//!   the job belongs to the calling account, and another account cannot
//!   remove it;
//! - a station run by an ordinary user serves only that user, whatever
//!   the token or the socket peer says.

mod common;

use common::{TestKeys, free_port, glean_bin, stop_term};
use gleaner_station::client::{ClientError, StationClient};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::node::spawn_for_test;
use gleaner_testkit::{TestUser, reachable, skip_unless_root};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// `glean ARGS` as `u`, in its job directory, with `GLEAN_HOME=home`.
fn glean_as(u: &TestUser, home: &Path, args: &[&str]) -> Output {
    let mut c = std::process::Command::new(glean_bin());
    u.as_user(&mut c)
        .args(args)
        .env("GLEAN_HOME", home)
        .env("HOME", u.home())
        .env_remove("GLEAN_LOG")
        .current_dir(u.home().join("job"))
        .output()
        .unwrap()
}

/// As `u`: a job directory and a `GLEAN_HOME` whose `pool.toml` names
/// only the station's socket (no token anywhere).
fn socket_home(u: &TestUser, socket: &Path) -> std::path::PathBuf {
    let home = u.home().join("glean");
    for d in [&home, &u.home().join("job")] {
        let out = u.run("mkdir", &["-p", d.to_str().unwrap()]).unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    std::fs::write(
        home.join("pool.toml"),
        format!("socket = \"{}\"\n", socket.display()),
    )
    .unwrap();
    std::fs::write(
        u.home().join("job/job.sub"),
        "executable = /bin/echo\narguments = hi\noutput = out.txt\nqueue 2\n",
    )
    .unwrap();
    home
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn glean_on_the_user_socket_needs_no_token() {
    if skip_unless_root("glean_on_the_user_socket_needs_no_token: creates Unix users") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("state/user.sock");
    reachable(&socket).unwrap();
    let keys = TestKeys::in_dir(&dir.path().join("keys")).unwrap();
    let (_addr, running) = spawn_for_test(StationConfig {
        name: "home".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        state_dir: dir.path().join("state"),
        public_key: keys.public_key(),
        token_file: keys
            .station_token_file("home", &dir.path().join("home.token"))
            .unwrap(),
        role: StationRole::SubmitOnly,
        user_socket: Some(socket.clone()),
        ..Default::default()
    })
    .await
    .unwrap();
    let a = TestUser::create("sockcli").unwrap();
    let b = TestUser::create("sockclib").unwrap();
    let (ha, hb) = (socket_home(&a, &socket), socket_home(&b, &socket));
    let (a, b) = tokio::task::spawn_blocking(move || {
        let out = glean_as(&a, &ha, &["submit", "job.sub"]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("2 job(s) submitted to cluster 1"));
        // `glean q` shows the caller's jobs: the station says who that is.
        let out = glean_as(&a, &ha, &["q", "--json"]);
        let jobs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let jobs = jobs.as_array().unwrap();
        assert_eq!(jobs.len(), 2);
        assert!(jobs.iter().all(|j| j["owner"] == a.name()), "{jobs:?}");
        let out = glean_as(&b, &hb, &["q", "--json"]);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
        // B cannot remove A's jobs; nothing changes.
        let out = glean_as(&b, &hb, &["rm", "1"]);
        assert!(!out.status.success());
        assert!(
            text(&out).contains(&format!("belongs to {}", a.name())),
            "{}",
            text(&out)
        );
        let out = glean_as(&a, &ha, &["q", "--json"]);
        let jobs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(jobs.as_array().unwrap().len(), 2);
        let out = glean_as(&a, &ha, &["rm", "1"]);
        assert!(out.status.success(), "{}", text(&out));
        let out = glean_as(&a, &ha, &["history", "--json"]);
        let jobs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(jobs.as_array().unwrap().len(), 2);
        (a, b)
    })
    .await
    .unwrap();
    running.stop().await;
    assert!(!socket.exists(), "the socket is removed at stop");
    drop((a, b));
}

fn wait_listening(addr: SocketAddr, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            Instant::now() < deadline,
            "station did not listen: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn refusal(r: Result<impl std::fmt::Debug, ClientError>) -> (u16, String) {
    match r {
        Err(ClientError::Api { status, body }) => (status, body.error.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unprivileged_station_serves_only_its_own_account() {
    if skip_unless_root("an_unprivileged_station_serves_only_its_own_account: creates Unix users") {
        return;
    }
    let a = TestUser::create("solo").unwrap();
    let b = TestUser::create("solob").unwrap();
    // The station runs as A, all its files in A's home.
    let sdir = a.home().join("station");
    let out = a.run("mkdir", &["-p", sdir.to_str().unwrap()]).unwrap();
    assert!(out.status.success(), "{out:?}");
    // The pool's keys stay root's (in a private directory A cannot read);
    // A's station gets a copy of pool.pub and its own token, as any
    // station does.
    let keys_dir = tempfile::tempdir().unwrap();
    let keys = TestKeys::in_dir(&keys_dir.path().join("keys")).unwrap();
    let public_key = sdir.join("pool.pub");
    std::fs::copy(keys.public_key(), &public_key).unwrap();
    let token_file = keys
        .station_token_file("solo", &sdir.join("station.token"))
        .unwrap();
    for f in [&public_key, &token_file] {
        std::os::unix::fs::chown(f, Some(a.uid()), Some(a.gid())).unwrap();
    }
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let cfg = sdir.join("station.toml");
    std::fs::write(
        &cfg,
        format!(
            "name = \"solo\"\nlisten = \"{addr}\"\nstate_dir = \"{}\"\npublic_key = \"{}\"\n\
             token_file = \"{}\"\nrole = \"submit_only\"\n",
            sdir.join("state").display(),
            public_key.display(),
            token_file.display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(sdir.join("station.log")).unwrap();
    let mut cmd = std::process::Command::new(glean_bin());
    a.as_user(&mut cmd)
        .args(["station", "--config"])
        .arg(&cfg)
        .env("GLEAN_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let mut child = cmd.spawn().unwrap();
    wait_listening(addr, &sdir.join("station.log"));
    // The unprivileged default: the socket in the (private) state dir.
    let socket = sdir.join("state/user.sock");
    let state_mode = std::fs::metadata(sdir.join("state")).unwrap().mode() & 0o777;
    assert_eq!(state_mode, 0o700);
    assert_eq!(
        std::fs::metadata(sdir.join("state/queue.db"))
            .unwrap()
            .mode()
            & 0o777,
        0o600
    );

    let ha = socket_home(&a, &socket);
    let (a, out) = tokio::task::spawn_blocking(move || {
        let out = glean_as(&a, &ha, &["submit", "job.sub"]);
        (a, out)
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let url = format!("http://{addr}");
    // A by token is served; B by token is not, nor is root on the socket.
    let as_a = StationClient::new(&url, keys.user(a.name())).unwrap();
    assert_eq!(as_a.jobs(&Default::default()).await.unwrap().len(), 2);
    for c in [
        StationClient::new(&url, keys.user(b.name())).unwrap(),
        StationClient::new(&url, keys.admin(b.name())).unwrap(),
        StationClient::unix(&socket).unwrap(),
    ] {
        let (status, msg) = refusal(c.jobs(&Default::default()).await);
        assert_eq!(status, 403, "{msg}");
        assert!(msg.contains(&format!("serves only {}", a.name())), "{msg}");
        let (status, _) = refusal(c.rm("1", None).await);
        assert_eq!(status, 403);
    }
    assert_eq!(as_a.jobs(&Default::default()).await.unwrap().len(), 2);
    stop_term(&mut child);
    assert!(!socket.exists(), "the socket is removed at stop");
}
