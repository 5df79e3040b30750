//! Checkpoint benchmark. Run with
//! `bench/checkpoint/run.sh`; `crates/station/tests/checkpoint` runs it
//! at a small size in CI so that it cannot rot.
//!
//! Part 1 (`transfer.rs`), per state size (1, 4 GB by default) and kind
//! (incompressible, compressible): a self-checkpoint's round trip through
//! a real home station on loopback — packed and sent home in one pass
//! (read, BLAKE3, zstd where it pays, HTTP; the home checks and stores it
//! as it arrives, synced), then fetched and restored as it arrives
//! (checked end to end, staged, renamed into place) — beside a raw disk
//! copy (with fsync) and a raw loopback TCP copy of the same bytes.
//! Throttling is off here. Where a working CRIU exists, a row per size
//! and kind does the same for a process holding that much memory: CRIU
//! dump (as the unprivileged guest user), pack and send, fetch and
//! unpack, `criu restore` until the process runs again.
//!
//! Part 2 (`leverage.rs`), Mutka's leverage: remote CPU seconds gained
//! per CPU second the home station spends supporting the job. The home
//! station runs in its own process (this binary with `--serve-station`),
//! which reports its CPU time (getrusage, all threads) when sent SIGUSR1;
//! a CPU-bound self-checkpointing job runs on another station for two
//! lengths, and the home's CPU is fitted as `a + b·W` (a fixed cost per
//! job plus a cost per wall-second the job is out) to extrapolate a
//! 1-hour job that gets a full CPU: leverage(1 h) = 3600 / (a + b·3600).
//!
//! `--levels 1,3 --level-mb 256`: before part 1, a table of the zstd
//! levels' speed and ratio on each kind of state, to choose the packer's
//! level by.
//!
//! Not here yet: a guest migrating between two stations in network
//! namespaces of their own behind links limited with `tc` (the owner's
//! disturbance beside a raw copy over the same links).
//!
//! Jobs are submitted by an account made for the run (under root; else by
//! the account running the bench).

#[path = "leverage.rs"]
mod leverage;
#[path = "transfer.rs"]
mod transfer;

use gleaner_coordinator::CoordinatorConfig;
use gleaner_proto::api::SubmitBody;
use gleaner_proto::job::JobState;
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::checkpoint::{CriuStatus, criu_status};
use gleaner_station::client::StationClient;
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::isolation::{CgroupMode, CgroupSettings};
use gleaner_testkit::{TestKeys, TestOwner};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub type R<T> = Result<T, Box<dyn std::error::Error>>;

#[allow(dead_code)]
fn main() -> R<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    run(&args)
}

/// The bench with command-line arguments (without the program name).
pub fn run(args: &[String]) -> R<()> {
    if args.first().map(String::as_str) == Some("--serve-station") {
        let cfg = StationConfig::load(Path::new(args.get(1).ok_or("--serve-station CONFIG")?))?;
        let cpu_file = args.get(2).map(PathBuf::from);
        let rt = tokio::runtime::Runtime::new()?;
        return rt.block_on(async {
            if let Some(f) = cpu_file {
                tokio::spawn(leverage::report_cpu_on_signal(f));
            }
            gleaner_station::node::run(cfg, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|e| e.into())
        });
    }
    let mut sizes_mb = vec![1000u64, 4000];
    let mut kinds = vec![transfer::Kind::Random, transfer::Kind::Text];
    let mut criu = true;
    let mut levels: Vec<i32> = Vec::new();
    let mut level_mb = 256u64;
    let mut lev = vec![20.0f64, 60.0];
    let mut every = 10.0f64;
    let mut advertise = 10u64;
    let mut poll_ms = 0u64;
    let mut idle_secs = 30.0f64;
    let mut history = 0usize;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--sizes" => sizes_mb = parse_list(value()?)?,
            "--kinds" => kinds = transfer::Kind::parse(value()?)?,
            "--no-criu" => criu = false,
            "--levels" => levels = parse_list(value()?)?,
            "--level-mb" => level_mb = value()?.parse()?,
            "--leverage-secs" => lev = parse_list(value()?)?,
            "--no-leverage" => lev.clear(),
            "--no-transfer" => sizes_mb.clear(),
            "--ckpt-every" => every = value()?.parse()?,
            "--advertise-secs" => advertise = value()?.parse()?,
            "--poll-ms" => poll_ms = value()?.parse()?,
            "--history" => history = value()?.parse()?,
            "--idle-secs" => idle_secs = value()?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        match criu_status() {
            CriuStatus::Available { version } => println!("CRIU {version}: CRIU rows included"),
            CriuStatus::Unavailable { reason } => println!("CRIU rows skipped: {reason}"),
        }
        if !levels.is_empty() {
            let dir = tempfile::tempdir()?;
            transfer::level_table(dir.path(), level_mb, &kinds, &levels)?;
        }
        if !sizes_mb.is_empty() {
            transfer::transfer_bench(&sizes_mb, &kinds, criu).await?;
        }
        if !lev.is_empty() {
            leverage::leverage_bench(&lev, every, advertise, poll_ms, idle_secs, history).await?;
        }
        Ok(())
    })
}

/// `10,100,1000` → a list.
fn parse_list<T: std::str::FromStr>(s: &str) -> R<Vec<T>>
where
    T::Err: std::error::Error + 'static,
{
    Ok(s.split(',').map(str::parse).collect::<Result<_, _>>()?)
}

struct Pool {
    _dir: tempfile::TempDir,
    root: PathBuf,
    keys: TestKeys,
    coord_url: String,
    advertise: u64,
    /// Who submits the bench's jobs: an account made for the run (removed
    /// at its end) under root, else the account running the bench.
    owner: TestOwner,
}

async fn pool(advertise: u64) -> R<(Pool, gleaner_coordinator::RunningCoordinator)> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().to_path_buf();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;
    // The coordinator finds the signing key in its state directory.
    let keys = TestKeys::in_dir(&root.join("coord"))?;
    let coord = gleaner_coordinator::spawn_for_test(CoordinatorConfig {
        state_dir: root.join("coord"),
        scheduling_interval_secs: 1.0,
        advertise_period_secs: advertise,
        startup_grace_secs: Some(0.0),
        ..Default::default()
    })
    .await?;
    let coord_url = format!("http://{}", coord.addr());
    let owner = TestOwner::new("glbench").map_err(|e| format!("the bench's job owner: {e}"))?;
    Ok((
        Pool {
            _dir: dir,
            root,
            keys,
            coord_url,
            advertise,
            owner,
        },
        coord,
    ))
}

impl Pool {
    fn station(&self, name: &str, role: StationRole) -> StationConfig {
        StationConfig {
            name: name.into(),
            listen: "127.0.0.1:0".parse().unwrap_or_else(|_| unreachable!()),
            state_dir: self.root.join(name),
            public_key: self.keys.public_key(),
            token_file: self
                .keys
                .station_token_file(name, &self.root.join(format!("{name}.token")))
                .unwrap_or_else(|e| panic!("station token: {e}")),
            coordinator: self.coord_url.clone(),
            role,
            advertise_secs: self.advertise,
            placement_interval_secs: 0.0,
            checkpoint_bytes_per_sec: 0,
            max_checkpoint_bytes: 4 << 30,
            cpus: Some(1),
            // Slot accounts of this process's own, removed when it exits.
            isolation: CgroupSettings {
                cgroups: CgroupMode::Off,
                slot_prefix: gleaner_testkit::slot_prefix(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// A client of `addr`'s user API as the bench's job owner.
    fn client(&self, addr: impl std::fmt::Display) -> R<StationClient> {
        Ok(StationClient::new(
            format!("http://{addr}"),
            self.keys.user(self.owner.name()),
        )?)
    }

    /// A submit directory owned by the job owner.
    fn work_dir(&self, name: &str) -> R<PathBuf> {
        let work = self.root.join(name);
        self.owner.dir(&work).map_err(|e| e.to_string())?;
        Ok(work)
    }

    async fn submit(&self, client: &StationClient, text: &str, dir: &Path) -> R<String> {
        let sub = parse_submit(text, &SubmitContext::new("bench.sub", self.owner.name()))?;
        let resp = client
            .submit(&SubmitBody {
                protocol: PROTOCOL_VERSION,
                submission: sub,
                submit_dir: Some(dir.to_string_lossy().into_owned()),
            })
            .await?;
        Ok(resp.jobs[0].to_string())
    }
}

async fn wait_state(
    client: &StationClient,
    id: &str,
    done: bool,
) -> R<gleaner_proto::api::JobDetail> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let d = client.job(id).await?;
        let ok = if done {
            d.job.state.is_terminal() || matches!(d.job.state, JobState::Held { .. })
        } else {
            d.job.state == JobState::Running
        };
        if ok {
            return Ok(d);
        }
        if Instant::now() > deadline {
            return Err(format!("job {id} stuck: {:?}", d.job.state).into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn secs(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}
