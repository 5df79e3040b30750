//! Plumbing shared by the `glean` integration tests: ports, daemon
//! processes, running `glean` as a user, pool tokens. Each test binary
//! uses part of it.
#![allow(dead_code)]

pub use gleaner_testkit::{TestKeys, TestOwner};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn glean_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("glean")
}

/// A free loopback port (bound and released; the daemon binds it next).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A base port P with P..P+span all free (`glean up` uses P and P+2..).
pub fn free_base_port(span: u16) -> u16 {
    for _ in 0..50 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        drop(l);
        if p > 60000 {
            continue;
        }
        let ok = (0..span).all(|i| std::net::TcpListener::bind(("127.0.0.1", p + i)).is_ok());
        if ok {
            return p;
        }
    }
    panic!("no free port range");
}

/// Sends `signal` (e.g. "-INT", "-TERM"), waits up to `grace` polling every
/// `poll`, then SIGKILLs a child that lingers.
pub fn stop_child(c: &mut Child, signal: &str, grace: Duration, poll: Duration) {
    let _ = Command::new("kill")
        .args([signal, &c.id().to_string()])
        .status();
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if matches!(c.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(poll);
    }
    let _ = c.kill();
    let _ = c.wait();
}

/// SIGTERM, as an operator stops a daemon; SIGKILL after 5 s.
pub fn stop_term(c: &mut Child) {
    stop_child(
        c,
        "-TERM",
        Duration::from_secs(5),
        Duration::from_millis(50),
    );
}

/// SIGKILL and reap: no chance to clean up.
pub fn kill9(c: &mut Child) {
    let _ = c.kill();
    let _ = c.wait();
}

/// Child daemons, killed on drop.
pub struct Daemons(pub Vec<Child>);
impl Drop for Daemons {
    fn drop(&mut self) {
        for c in &mut self.0 {
            kill9(c);
        }
    }
}

/// The last lines of a daemon's log, for a failing test's message.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// `glean WHAT --config CONFIG` logging to `log`; returns once it accepts
/// connections on `port`.
pub fn spawn(what: &str, config: &Path, log: &Path, port: u16) -> Child {
    let out = std::fs::File::create(log).unwrap();
    let mut c = Command::new(glean_bin())
        .arg(what)
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .env("GLEAN_LOG", "info")
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        // The test's directory is gone by the time anyone reads the
        // panic: the log's end goes into the message.
        assert!(
            c.try_wait().unwrap().is_none(),
            "{what} exited; {} ends with:\n{}",
            log.display(),
            log_tail(log)
        );
        assert!(Instant::now() < deadline, "{what} did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    c
}

/// `glean up --stations N --interval 1 --port PORT` with GLEAN_HOME=home
/// (made reachable, so that a test's job owner can read `pool.toml`).
pub fn spawn_up(home: &Path, stations: u16, port: u16, stdout: Stdio) -> Child {
    spawn_up_with(home, stations, port, stdout, &[])
}

/// [`spawn_up`] with more `glean up` arguments (`--expose DIR:rw`).
#[allow(dead_code)] // not every test binary passes any
pub fn spawn_up_with(home: &Path, stations: u16, port: u16, stdout: Stdio, more: &[&str]) -> Child {
    gleaner_testkit::reachable(home).unwrap();
    Command::new(glean_bin())
        .args([
            "up",
            "--stations",
            &stations.to_string(),
            "--interval",
            "1",
            "--port",
            &port.to_string(),
        ])
        .args(more)
        .env("GLEAN_HOME", home)
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Waits for `glean up` to write `home/pool.toml`.
pub fn wait_pool_up(home: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !home.join("pool.toml").exists() {
        assert!(Instant::now() < deadline, "pool did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `glean up --stations N --port PORT [--interval S]` with GLEAN_HOME=home.
pub fn up(home: &Path, stations: u16, port: u16, interval: Option<f64>) -> UpProcess {
    up_with(home, stations, port, interval, &[])
}

/// [`up`] with more arguments for `glean up` (e.g. `--plain-http`).
pub fn up_with(
    home: &Path,
    stations: u16,
    port: u16,
    interval: Option<f64>,
    extra: &[&str],
) -> UpProcess {
    gleaner_testkit::reachable(home).unwrap();
    let mut c = Command::new(glean_bin());
    c.args(["up", "--stations", &stations.to_string()])
        .args(["--port", &port.to_string()])
        .args(extra);
    if let Some(i) = interval {
        c.args(["--interval", &i.to_string()]);
    }
    UpProcess(
        c.env("GLEAN_HOME", home)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    )
}

/// A `glean up` process, stopped with SIGINT (as Ctrl-C) on drop.
pub struct UpProcess(pub Child);
impl Drop for UpProcess {
    fn drop(&mut self) {
        stop_child(
            &mut self.0,
            "-INT",
            Duration::from_secs(10),
            Duration::from_millis(100),
        );
        // A root `glean up` may have made /var/lib/gleaner for sandboxes;
        // left empty it would look like a package's state to
        // scripts/test-deb.sh (removed only if empty).
        let _ = std::fs::remove_dir("/var/lib/gleaner");
    }
}

/// `glean ARGS` in `dir` with GLEAN_HOME=home.
pub fn glean_in(home: &Path, dir: &Path, args: &[&str]) -> Output {
    // No client logs in what a test parses (a daemon's GLEAN_LOG is
    // set on the daemon's command, never in the test's own environment).
    Command::new(glean_bin())
        .args(args)
        .env("GLEAN_HOME", home)
        .env_remove("GLEAN_LOG")
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A station's `user_socket` line for a station whose state is `state`
/// (tests side by side must not share `/run/gleaner/<name>.sock`).
pub fn socket_line(state: &Path) -> String {
    format!("user_socket = \"{}\"\n", state.join("user.sock").display())
}

/// `glean ARGS` in `dir` with GLEAN_HOME=home, run as `owner` (on a `glean
/// up` pool: its station knows the owner from the user socket).
pub fn glean_as(owner: &TestOwner, home: &Path, dir: &Path, args: &[&str]) -> Output {
    owner
        .command(glean_bin())
        .args(args)
        .env("GLEAN_HOME", home)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// The `[isolation]` table of a test station (goes last in its
/// configuration): slot accounts of its own, under a prefix of this test
/// process's that is removed when it exits (`gleaner_testkit::slot_prefix`),
/// so that stations of parallel tests never share (or reap) each other's
/// slots; no cgroups, which every station would otherwise make under the
/// same default parent; guests on the host's file system (`own_root =
/// false`, and the host's `/tmp`), since these tests' jobs write their
/// progress into the test's directories, which are in `/tmp`. Station-wide defaults (a guest's own root among them,
/// `crates/station/tests/containment`) are tested in the station crate.
pub fn isolation_toml() -> String {
    isolation_toml_with(&gleaner_testkit::slot_prefix(), "")
}

/// [`isolation_toml`] with a given slot prefix and more keys of the table.
pub fn isolation_toml_with(slot_prefix: &str, keys: &str) -> String {
    let cgroups = if keys.contains("cgroups") {
        ""
    } else {
        "cgroups = \"off\"\n"
    };
    let own_root = if keys.contains("own_root") || keys.contains("expose") {
        ""
    } else {
        "own_root = false\nprivate_tmp = false\n"
    };
    format!("[isolation]\n{cgroups}{own_root}slot_prefix = \"{slot_prefix}\"\n{keys}")
}

/// A directory every guest may write to: guests run as another user and
/// cannot enter the test's private temporary directory.
pub fn shared_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// The configuration lines that give station `name` the pool's public key
/// and its own token (written to `dir/station.token`, 0600): a station
/// holds nothing that signs.
pub fn station_creds(keys: &TestKeys, name: &str, dir: &Path) -> String {
    let token = keys
        .station_token_file(name, &dir.join("station.token"))
        .unwrap();
    format!(
        "public_key = \"{}\"\ntoken_file = \"{}\"\n",
        keys.public_key().display(),
        token.display()
    )
}

/// The coordinator's configuration line naming the test pool's signing key.
pub fn coordinator_key(keys: &TestKeys) -> String {
    format!("signing_key = \"{}\"\n", keys.signing_key().display())
}

/// A user's GLEAN_HOME and submit directory under `root`, and the pool's
/// keys in `root/keys`. The user is a real Unix account under root (see
/// [`TestOwner`]): its jobs run as it, so the submit directory is its own.
pub struct UserDirs {
    pub home: PathBuf,
    pub work: PathBuf,
    pub keys: TestKeys,
    pub owner: TestOwner,
}

impl UserDirs {
    pub fn new(root: &Path) -> UserDirs {
        let (home, work) = (root.join("home"), root.join("work"));
        let owner = TestOwner::new("alice").unwrap();
        std::fs::create_dir_all(&home).unwrap();
        owner.dir(&work).unwrap();
        let keys = TestKeys::in_dir(&root.join("keys")).unwrap();
        UserDirs {
            home,
            work,
            keys,
            owner,
        }
    }

    /// A user token for the owner.
    pub fn token(&self) -> String {
        self.keys.user(self.owner.name())
    }
}

/// Starts `glean WHAT --config CONFIG` with its output appended to `log`
/// (each start of the same daemon appends, so a failure shows all runs)
/// and waits until it listens on `addr`; panics with the log if it exits
/// first or does not listen within 30 s.
pub fn start_daemon(what: &str, config: &Path, log: &Path, addr: SocketAddr) -> Child {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let err = out.try_clone().unwrap();
    let mut child = Command::new(glean_bin())
        .arg(what)
        .arg("--config")
        .arg(config)
        .env("GLEAN_LOG", "info")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{what} {} exited at start ({status}):\n{}",
                config.display(),
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "{what} did not listen on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}
