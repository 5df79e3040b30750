//! One personal pool (`glean up`) for a test, with HTCondor's command
//! names linked to `glean` in a directory of its own, and users who run
//! them on the station's user socket (no token) or, from another process,
//! with a token of theirs (`glean user add`).

use crate::common::{TestOwner, UpProcess, free_base_port, glean_bin, up, wait_pool_up};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub struct Pool {
    pub home: PathBuf,
    pub bin: PathBuf,
    pub root: PathBuf,
    // Dropped in this order: the pool's daemons, the slot lock, the files.
    _up: UpProcess,
    _slots: gleaner_testkit::DefaultSlots,
    _tmp: tempfile::TempDir,
}

impl Pool {
    /// `glean up --stations N` and the `condor_*` links.
    pub fn start(stations: u16) -> Pool {
        // As root the pool's stations make and share the default slots.
        let slots = gleaner_testkit::DefaultSlots::hold();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let home = root.join("home");
        let bin = root.join("bin");
        let port = free_base_port(2 + stations);
        let upp = up(&home, stations, port, Some(1.0));
        wait_pool_up(&home);
        let out = Command::new(glean_bin())
            .args(["condor-links"])
            .arg(&bin)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        gleaner_testkit::reachable(&bin).unwrap();
        Pool {
            home,
            bin,
            root,
            _up: upp,
            _slots: slots,
            _tmp: tmp,
        }
    }

    /// HTCondor's `tool` run as `owner` in `dir`, on the station's socket.
    pub fn condor(&self, owner: &TestOwner, dir: &Path, tool: &str, args: &[&str]) -> Output {
        owner
            .command(self.bin.join(tool))
            .args(args)
            .env("GLEAN_HOME", &self.home)
            .env("PATH", path_with(&self.bin))
            .env_remove("GLEAN_LOG")
            .current_dir(dir)
            .output()
            .unwrap()
    }

    /// `glean ARGS` as `owner` in `dir`.
    pub fn glean(&self, owner: &TestOwner, dir: &Path, args: &[&str]) -> Output {
        owner
            .command(glean_bin())
            .args(args)
            .env("GLEAN_HOME", &self.home)
            .env_remove("GLEAN_LOG")
            .current_dir(dir)
            .output()
            .unwrap()
    }

    /// A client directory for `owner` (their token, over TCP), for tools
    /// run by another process as that user.
    pub fn client_dir(&self, owner: &TestOwner) -> PathBuf {
        let dir = self.root.join(format!("{}.glean", owner.name()));
        let pool: toml::Table =
            toml::from_str(&std::fs::read_to_string(self.home.join("pool.toml")).unwrap()).unwrap();
        let station = pool["station"].as_str().unwrap().to_string();
        let out = Command::new(glean_bin())
            .args(["user", "add", owner.name(), "--station", &station, "--out"])
            .arg(&dir)
            .arg("--config")
            .arg(self.home.join("coordinator/coordinator.toml"))
            .env("GLEAN_HOME", &self.home)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        dir
    }

    /// Waits until `done(stdout of condor_q -af …)` or 90 s.
    pub fn wait_for(&self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(90);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

/// `PATH` with `bin` first.
pub fn path_with(bin: &Path) -> String {
    let rest = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    format!("{}:{rest}", bin.display())
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts success and returns standard output.
pub fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}
