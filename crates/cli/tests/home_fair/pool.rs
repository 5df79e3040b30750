//! A pool of real `glean` daemons for these tests: a coordinator, one
//! submit-only home and execute-only hosts of one CPU each, configured
//! per test; users are real Unix accounts (`TestOwner`) with a token.

use crate::common::{
    TestKeys, TestOwner, free_port, glean_in, kill9, socket_line, start_daemon, stop_term,
};
use gleaner_proto::api::{JobDetail, QueueSummary};
use gleaner_station::client::StationClient;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

pub struct Daemon {
    pub log: PathBuf,
    cfg: PathBuf,
    pub addr: SocketAddr,
    child: Option<Child>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_term(&mut c);
        }
    }
}

/// What a test's pool looks like.
pub struct Spec {
    pub hosts: usize,
    /// Lines for the coordinator's configuration (top level).
    pub coordinator: String,
    /// Lines for the home's configuration: tables (`[limits]`, `[share]`).
    pub home_tables: String,
}

pub struct Pool {
    pub dir: PathBuf,
    keys: TestKeys,
    pub coordinator: Daemon,
    pub home: Daemon,
    pub hosts: Vec<Daemon>,
    _tmp: tempfile::TempDir,
}

fn q(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

impl Pool {
    pub fn start(spec: Spec) -> Pool {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        // Guests and users reach their files below it.
        gleaner_testkit::reachable(&dir).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let keys = TestKeys::in_dir(&dir.join("keys")).unwrap();
        let cdir = dir.join("coordinator");
        std::fs::create_dir_all(&cdir).unwrap();
        let caddr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let ccfg = cdir.join("coordinator.toml");
        std::fs::write(
            &ccfg,
            format!(
                "listen = \"{caddr}\"\nstate_dir = {}\n{}advertise_period_secs = 1\nseed = 7\n\
                 {}\n[allocator]\nkind = \"updown\"\nper_pass = \"until_satisfied\"\n",
                q(&cdir.join("state")),
                crate::common::coordinator_key(&keys),
                spec.coordinator,
            ),
        )
        .unwrap();
        let clog = cdir.join("coordinator.log");
        let coordinator = Daemon {
            child: Some(start_daemon("coordinator", &ccfg, &clog, caddr)),
            log: clog,
            cfg: ccfg,
            addr: caddr,
        };
        let station = |name: &str, role: &str, tables: &str| {
            let sdir = dir.join(name);
            std::fs::create_dir_all(&sdir).unwrap();
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            let cfg = sdir.join("station.toml");
            std::fs::write(
                &cfg,
                format!(
                    "name = \"{name}\"\nrole = \"{role}\"\nlisten = \"{addr}\"\nstate_dir = {}\n\
                     coordinator = \"http://{caddr}\"\n{}advertise_secs = 1\n\
                     placement_interval_secs = 0\ncpus = 1\nlease_secs = 30\n{}{tables}\n{}",
                    q(&sdir.join("state")),
                    crate::common::station_creds(&keys, name, &sdir),
                    socket_line(&sdir.join("state")),
                    crate::common::isolation_toml(),
                ),
            )
            .unwrap();
            let log = sdir.join("station.log");
            Daemon {
                child: Some(start_daemon("station", &cfg, &log, addr)),
                log,
                cfg,
                addr,
            }
        };
        let home = station("home", "submit_only", &spec.home_tables);
        let hosts = (0..spec.hosts)
            .map(|k| station(&format!("host{k}"), "execute_only", ""))
            .collect();
        Pool {
            dir,
            keys,
            coordinator,
            home,
            hosts,
            _tmp: tmp,
        }
    }

    /// A user of the home: a Unix account, its `GLEAN_HOME` and its job
    /// directory.
    pub fn user(&self, prefix: &str) -> User {
        let owner = TestOwner::new(prefix).unwrap();
        let ghome = self.dir.join(format!("glean-{}", owner.name()));
        let work = self.dir.join(format!("work-{}", owner.name()));
        std::fs::create_dir_all(&ghome).unwrap();
        owner.dir(&work).unwrap();
        std::fs::write(
            ghome.join("pool.toml"),
            format!(
                "station = \"http://{}\"\ncoordinator = \"http://{}\"\n",
                self.home.addr, self.coordinator.addr
            ),
        )
        .unwrap();
        let token = self.keys.user(owner.name());
        std::fs::write(ghome.join("token"), &token).unwrap();
        let client = StationClient::new(format!("http://{}", self.home.addr), token).unwrap();
        User {
            home: ghome,
            work,
            owner,
            client,
        }
    }

    /// The home's state directory (queue and spool).
    pub fn home_state(&self) -> PathBuf {
        self.dir.join("home/state")
    }

    /// The spool directory of job `id` at the home.
    pub fn spool_of(&self, id: &str) -> PathBuf {
        self.home_state().join("spool").join(id)
    }

    /// SIGKILL the home: no chance to clean up.
    pub fn kill_home(&mut self) {
        if let Some(mut c) = self.home.child.take() {
            kill9(&mut c);
        }
    }

    /// Starts the home again with its state.
    pub fn start_home(&mut self) {
        let d = &mut self.home;
        d.child = Some(start_daemon("station", &d.cfg, &d.log, d.addr));
    }

    /// Every daemon's log, for a failing assertion.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        for d in [&self.coordinator, &self.home]
            .into_iter()
            .chain(&self.hosts)
        {
            let text = std::fs::read_to_string(&d.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(60).collect();
            s += &format!("==== {} (last lines) ====\n", d.log.display());
            for l in tail.into_iter().rev() {
                s += l;
                s += "\n";
            }
        }
        s
    }
}

pub struct User {
    pub home: PathBuf,
    pub work: PathBuf,
    pub owner: TestOwner,
    client: StationClient,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

impl User {
    pub fn name(&self) -> &str {
        self.owner.name()
    }

    pub fn glean(&self, args: &[&str]) -> Output {
        glean_in(&self.home, &self.work, args)
    }

    /// Writes `text` as the submit file `file` and submits it: the output.
    pub fn try_submit(&self, file: &str, text: &str) -> Output {
        std::fs::write(self.work.join(file), text).unwrap();
        self.glean(&["submit", file])
    }

    /// [`User::try_submit`] that must succeed: the cluster id.
    pub fn submit(&self, file: &str, text: &str) -> u64 {
        let out = self.try_submit(file, text);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "submit failed: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        said.split("cluster ")
            .nth(1)
            .and_then(|s| s.trim().trim_end_matches('.').parse().ok())
            .unwrap_or_else(|| panic!("no cluster in {said:?}"))
    }

    /// This user's queue by state (the home's indexed counts).
    pub fn summary(&self) -> QueueSummary {
        runtime()
            .block_on(self.client.queue_summary(Some(self.name())))
            .unwrap()
    }

    /// One job's record and history.
    pub fn job(&self, id: &str) -> JobDetail {
        runtime().block_on(self.client.job(id)).unwrap()
    }
}

/// Polls `f` every 100 ms until it gives a value, for at most `limit`.
pub fn wait_for<T>(
    limit: Duration,
    what: &str,
    pool: &Pool,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}\n{}",
            pool.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
