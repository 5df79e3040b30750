//! A pool in this process for the checkpoint tests: a coordinator, a
//! submit-only home whose hosts reach it through a [`Proxy`], and two
//! execute-only hosts, `x1` and `x2`; and the test job, a shell script
//! that checkpoints itself (a counter and a few MiB of padding that never
//! changes after its first run).

use crate::common::{
    coordinator_config, job_owner, pool_keys, pool_station, serial_lock, shared_tempdir, submit,
};
use crate::proxy::Proxy;
use gleaner_proto::api::JobDetail;
use gleaner_proto::job::JobState;
use gleaner_station::client::StationClient;
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::node::{Running, spawn_for_test};
use gleaner_testkit::{TestKeys, TestOwner};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Lease between home and hosts, seconds.
pub const LEASE: f64 = 3.0;

/// The test job: `ckjob.sh STEPS EVERY MIB [fresh]`. Prints `step N` per
/// step, and `resumed at N` on stderr when it starts from a checkpoint;
/// every EVERY steps and on SIGTERM saves its counter and exits 85. Its
/// padding (MIB MiB of noise) is made once and kept, or with `fresh` made
/// anew at every checkpoint (so that every upload is whole).
const JOB: &str = r#"#!/bin/sh
steps=$1; every=$2; mib=$3; fresh=${4:-}
i=0
if [ -f ck.state ]; then read -r i < ck.state; echo "resumed at $i" >&2; fi
[ -f ck.pad ] || head -c $((mib * 1048576)) /dev/urandom > ck.pad
want=0; since=0
trap 'want=1' TERM
save() {
    [ -n "$fresh" ] && head -c $((mib * 1048576)) /dev/urandom > ck.pad
    echo "$i" > ck.state.tmp && mv ck.state.tmp ck.state; exit 85
}
while [ "$i" -lt "$steps" ]; do
    [ "$want" = 1 ] && save
    [ "$since" -ge "$every" ] && save
    sleep 0.05 & wait $! 2>/dev/null
    [ "$want" = 1 ] && save
    i=$((i + 1)); echo "step $i"; since=$((since + 1))
done
exit 0
"#;

pub struct Pool {
    pub dir: tempfile::TempDir,
    pub keys: TestKeys,
    pub coord: Option<gleaner_coordinator::RunningCoordinator>,
    pub home: Option<Running>,
    pub hosts: HashMap<String, (SocketAddr, Option<Running>)>,
    pub proxy: Proxy,
    pub client: StationClient,
    /// The jobs' account (removed when the pool is dropped).
    _owner: TestOwner,
    pub work: PathBuf,
    _serial: std::fs::File,
}

impl Pool {
    pub async fn start() -> Pool {
        let serial = serial_lock();
        let dir = shared_tempdir();
        let root = dir.path().to_path_buf();
        let keys = pool_keys(&root);
        let coord = gleaner_coordinator::spawn_for_test(coordinator_config(&root))
            .await
            .unwrap();
        let coord_url = format!("http://{}", coord.addr());
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let (proxy, pport) = Proxy::start(port).await;
        let home_cfg = StationConfig {
            listen: format!("127.0.0.1:{port}").parse().unwrap(),
            address: format!("http://127.0.0.1:{pport}"),
            lease_secs: LEASE,
            avoid_host_secs: 120.0,
            ..pool_station(&root, &keys, &coord_url, "home", StationRole::SubmitOnly)
        };
        let (home_addr, home) = spawn_for_test(home_cfg).await.unwrap();
        let mut hosts = HashMap::new();
        for name in ["x1", "x2"] {
            let cfg = StationConfig {
                lease_secs: LEASE,
                checkpoint_grace_secs: 5.0,
                cpus: Some(1),
                ..pool_station(&root, &keys, &coord_url, name, StationRole::ExecuteOnly)
            };
            let (addr, r) = spawn_for_test(cfg).await.unwrap();
            hosts.insert(name.to_string(), (addr, Some(r)));
        }
        let (owner, work) = job_owner(&root);
        let script = work.join("ckjob.sh");
        owner.write(&script, JOB).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let client =
            StationClient::new(format!("http://{home_addr}"), keys.user(owner.name())).unwrap();
        Pool {
            dir,
            keys,
            coord: Some(coord),
            home: Some(home),
            hosts,
            proxy,
            client,
            _owner: owner,
            work,
            _serial: serial,
        }
    }

    /// Submits the test job (`steps`, checkpoint every `every` steps,
    /// `mib` MiB of padding, `fresh` or not), its output in
    /// `out-<tag>.txt` and `err-<tag>.txt`.
    pub async fn submit(&self, tag: &str, steps: u32, every: u32, mib: u32, fresh: bool) -> String {
        let fresh = if fresh { " fresh" } else { "" };
        let text = format!(
            "executable = ckjob.sh\narguments = {steps} {every} {mib}{fresh}\n\
             checkpoint_exit_code = 85\ntransfer_checkpoint_files = ck.state, ck.pad\n\
             output = out-{tag}.txt\nerror = err-{tag}.txt\nlog = job-{tag}.log\nqueue\n"
        );
        submit(&self.client, &text, &self.work).await.jobs[0].to_string()
    }

    /// The job's checkpoint directory at the home.
    pub fn ckpt_dir(&self, id: &str) -> PathBuf {
        self.dir.path().join("home/spool").join(id).join("ckpt")
    }

    pub async fn job(&self, id: &str) -> JobDetail {
        self.client.job(id).await.unwrap()
    }

    /// Waits (up to `secs`) until `cond` holds for the job.
    pub async fn wait_job(
        &self,
        id: &str,
        secs: u64,
        what: &str,
        cond: impl Fn(&JobDetail) -> bool,
    ) -> JobDetail {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let d = self.job(id).await;
            if cond(&d) {
                return d;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: job {id} is {:?}\n{:#?}",
                d.job.state,
                d.events
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the home has stored `n` checkpoints of the job.
    pub async fn wait_checkpoints(&self, id: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let d = self.job(id).await;
            let stored = d
                .events
                .iter()
                .filter(|e| {
                    e.kind == gleaner_proto::job::JobEventKind::Checkpointed
                        && e.detail.contains("checkpoint #")
                })
                .count();
            if stored >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "fewer than {n} checkpoints\n{:#?}",
                d.events
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for the job's end (completed, or held: a failure).
    pub async fn wait_done(&self, id: &str) -> JobDetail {
        self.wait_job(id, 120, "job never ended", |d| {
            d.job.state.is_terminal() || matches!(d.job.state, JobState::Held { .. })
        })
        .await
    }

    /// The host running the job now.
    pub async fn running_on(&self, id: &str) -> String {
        let d = self
            .wait_job(id, 60, "job never ran", |d| {
                d.job.state == JobState::Running
            })
            .await;
        d.job.host.unwrap()
    }

    /// Asks `host` (as an administrator) to vacate the job.
    pub async fn vacate(&self, host: &str, id: &str) {
        let addr = self.hosts[host].0;
        let r = reqwest::Client::new()
            .post(format!("http://{addr}/v1/guests/{id}/vacate"))
            .bearer_auth(self.keys.admin("admin"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202, "{:?}", r.text().await);
    }

    /// Stops `host` (its guests, if any, are vacated).
    pub async fn stop_host(&mut self, host: &str) {
        if let Some(r) = self.hosts.get_mut(host).and_then(|h| h.1.take()) {
            r.stop().await;
        }
    }

    pub async fn stop(mut self) {
        for h in ["x1", "x2"] {
            self.stop_host(h).await;
        }
        if let Some(h) = self.home.take() {
            h.stop().await;
        }
        if let Some(c) = self.coord.take() {
            let _ = c.stop().await;
        }
    }
}

/// The output of one undisturbed run of `steps` steps.
pub fn one_run(steps: u32) -> String {
    (1..=steps).map(|i| format!("step {i}\n")).collect()
}

/// The step a stored checkpoint of the test job resumes from.
pub fn checkpoint_step(bundle: &Path) -> Option<u32> {
    let f = std::fs::File::open(bundle).ok()?;
    let d = tempfile::tempdir().ok()?;
    gleaner_station::checkpoint::read_bundle(&mut std::io::BufReader::new(f), Some(d.path()))
        .ok()?;
    std::fs::read_to_string(d.path().join("ck.state"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Files left in a checkpoint directory that are neither checkpoints nor
/// their manifest: uploads that were never finished or never removed.
pub fn stray_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".incoming"))
                .collect()
        })
        .unwrap_or_default()
}
