//! Checkpoint benchmark (issue #6). Run with `bench/checkpoint/run.sh`.
//!
//! Part 1, per state size (10 MB, 100 MB, 1 GB by default): the time to
//! take a self-checkpoint (read, SHA-256, bundle), to send it to a real
//! home station's shadow over loopback HTTP (streamed to disk, verified,
//! rotated), to fetch it back (verified again), and to restore it into a
//! sandbox (verify and write) — beside a raw disk copy (with fsync) and a
//! raw loopback TCP copy of the same bytes. Throttling is off here. Every
//! step streams through files, as the starter does. Where a working CRIU
//! exists, a second row per size does the same for a process holding that
//! much memory: CRIU dump (as the unprivileged guest user), bundle, send,
//! fetch, unpack and `criu restore` until the process runs again.
//!
//! Part 2, Mutka's leverage: remote CPU seconds gained per CPU second the
//! home station spends supporting the job. The home station runs in its
//! own process (this binary with `--serve-station`), which reports its CPU
//! time (getrusage, all threads) when sent SIGUSR1; a CPU-bound self-checkpointing job runs on another
//! station for two lengths, and the home's CPU is fitted as `a + b·W`
//! (fixed cost per job + cost per wall-second the job is out) to
//! extrapolate a 1-hour job that gets a full CPU:
//! leverage(1 h) = 3600 / (a + b·3600).

use gleaner_coordinator::CoordinatorConfig;
use gleaner_proto::api::SubmitBody;
use gleaner_proto::job::JobState;
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::checkpoint::{
    Checkpointer, Criu, CriuStatus, Manifest, SelfCheckpoint, criu_status, read_bundle,
    write_bundle_file,
};
use gleaner_station::client::StationClient;
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::isolation::{GuestLauncher, GuestSpec, GuestUser, prepare_sandbox};
use gleaner_station::node::spawn_for_test;
use gleaner_testkit::TestKeys;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type R<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> R<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve-station") {
        let cfg = StationConfig::load(Path::new(&args[2]))?;
        let cpu_file = args.get(3).map(PathBuf::from);
        let rt = tokio::runtime::Runtime::new()?;
        return rt.block_on(async {
            if let Some(f) = cpu_file {
                tokio::spawn(report_cpu_on_signal(f));
            }
            gleaner_station::node::run(cfg, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|e| e.into())
        });
    }
    let mut sizes_mb = vec![10u64, 100, 1000];
    let mut lev = vec![20.0f64, 60.0];
    let mut every = 10.0f64;
    let mut advertise = 10u64;
    let mut poll_ms = 0u64;
    let mut idle_secs = 30.0f64;
    let mut history = 0usize;
    let mut it = args.iter().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--sizes" => sizes_mb = parse_list(value()?)?,
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
        if !sizes_mb.is_empty() {
            transfer_bench(&sizes_mb).await?;
        }
        if !lev.is_empty() {
            leverage_bench(&lev, every, advertise, poll_ms, idle_secs, history).await?;
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

/// Deterministic incompressible-looking bytes.
fn fill(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for chunk in v.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
    v
}

struct Pool {
    _dir: tempfile::TempDir,
    root: PathBuf,
    keys: TestKeys,
    coord_url: String,
    advertise: u64,
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
    Ok((
        Pool {
            _dir: dir,
            root,
            keys,
            coord_url,
            advertise,
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
            ..Default::default()
        }
    }

    async fn submit(&self, client: &StationClient, text: &str, dir: &Path) -> R<String> {
        let sub = parse_submit(text, &SubmitContext::new("bench.sub", "bench"))?;
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

async fn transfer_bench(sizes_mb: &[u64]) -> R<()> {
    let (p, coord) = pool(10).await?;
    let (home_addr, home) = spawn_for_test(p.station("home", StationRole::SubmitOnly)).await?;
    let (_x_addr, exec) = spawn_for_test(p.station("exec", StationRole::ExecuteOnly)).await?;
    let client = StationClient::new(format!("http://{home_addr}"), p.keys.user("bench"))?;
    let work = p.root.join("work");
    std::fs::create_dir_all(&work)?;
    // A running job gives the shadow a job to hold checkpoints for.
    let id = p
        .submit(
            &client,
            "executable = /bin/sleep\ntransfer_executable = false\narguments = 3600\nqueue\n",
            &work,
        )
        .await?;
    wait_state(&client, &id, false).await?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3600))
        .build()?;
    // Only the job's host may put and fetch its checkpoints.
    let token = p.keys.station("exec");
    let url = format!("http://{home_addr}/v1/shadow/{id}/checkpoint");

    println!();
    println!(
        "| state | checkpoint (collect) | send home (PUT) | fetch (GET) | restore | ckpt+send+fetch+restore | raw disk copy | raw loopback copy |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &mb in sizes_mb {
        let n = usize::try_from(mb * 1_000_000)?;
        let sb = p.root.join(format!("sandbox-{mb}"));
        std::fs::create_dir_all(&sb)?;
        std::fs::write(sb.join("state"), fill(n))?;
        // Cold-ish start: the bytes were just written; page cache is warm
        // for every column alike.
        let sc = SelfCheckpoint {
            exit_code: 85,
            files: vec!["state".into()],
        };
        let bundle = p.root.join(format!("bundle-{mb}"));
        let t = Instant::now();
        sc.collect_to(&sb, Manifest::default(), &bundle)?;
        let t_collect = t.elapsed();
        let t_put = put_file(&http, &url, &token, &bundle).await?;
        std::fs::remove_file(&bundle)?;
        let t_get = get_to_file(&http, &url, &token, &bundle).await?;

        let out = p.root.join(format!("restore-{mb}"));
        std::fs::create_dir_all(&out)?;
        let t = Instant::now();
        read_bundle(
            &mut std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&bundle)?),
            Some(&out),
        )?;
        let t_restore = t.elapsed();
        std::fs::remove_file(&bundle)?;

        let t = Instant::now();
        std::fs::copy(sb.join("state"), p.root.join("copy"))?;
        std::fs::File::open(p.root.join("copy"))?.sync_all()?;
        let t_disk = t.elapsed();
        std::fs::remove_file(p.root.join("copy"))?;

        let t_loop = loopback_copy(&sb.join("state"))?;
        let total = t_collect + t_put + t_get + t_restore;
        println!(
            "| {mb} MB | {} s | {} s ({:.0} MB/s) | {} s | {} s | {} s | {} s | {} s |",
            secs(t_collect),
            secs(t_put),
            mb as f64 / t_put.as_secs_f64(),
            secs(t_get),
            secs(t_restore),
            secs(total),
            secs(t_disk),
            secs(t_loop),
        );
        std::fs::remove_dir_all(&sb)?;
        std::fs::remove_dir_all(&out)?;
        if criu_status().available() {
            criu_row(mb, &p.root, &http, &url, &token).await?;
        }
    }
    let _ = client.rm(&id, None).await;
    home.stop().await;
    exec.stop().await;
    let _ = coord.stop().await;
    Ok(())
}

/// Streams a file to `url` (PUT), as the starter ships a checkpoint.
async fn put_file(http: &reqwest::Client, url: &str, token: &str, path: &Path) -> R<Duration> {
    let t = Instant::now();
    let len = std::fs::metadata(path)?.len();
    let r = http
        .put(url)
        .bearer_auth(token)
        .header("content-length", len)
        .body(reqwest::Body::wrap_stream(
            gleaner_station::checkpoint::throttled_stream(
                tokio::fs::File::open(path).await?,
                |_| async {},
            ),
        ))
        .send()
        .await?;
    if !r.status().is_success() {
        return Err(format!("PUT failed: {} {}", r.status(), r.text().await?).into());
    }
    Ok(t.elapsed())
}

/// Streams `url` (GET) into a new file, as the starter fetches one.
async fn get_to_file(http: &reqwest::Client, url: &str, token: &str, path: &Path) -> R<Duration> {
    use tokio::io::AsyncWriteExt;
    let t = Instant::now();
    let mut r = http.get(url).bearer_auth(token).send().await?;
    if !r.status().is_success() {
        return Err(format!("GET failed: {}", r.status()).into());
    }
    let mut f = tokio::fs::File::create(path).await?;
    while let Some(c) = r.chunk().await? {
        f.write_all(&c).await?;
    }
    f.flush().await?;
    Ok(t.elapsed())
}

/// One CRIU row: a process holding `mb` MB of memory, run as `nobody`
/// under the starter's reaping launcher, is dumped, bundled, sent home,
/// fetched, unpacked and restored (until the restored process runs).
async fn criu_row(mb: u64, root: &Path, http: &reqwest::Client, url: &str, token: &str) -> R<()> {
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755))?;
    let user = GuestUser::lookup("nobody")?;
    let sb = root.join(format!("criu-sandbox-{mb}"));
    let criu = Criu {
        images: root.join(format!("criu-images-{mb}")),
        user: Some(user),
    };
    prepare_sandbox(&sb, Some(user))?;
    prepare_sandbox(&criu.images, Some(user))?;
    let n = mb * 1_000_000;
    let spec = GuestSpec {
        user: Some(user),
        reaper: true,
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..GuestSpec::new("/usr/bin/python3", &sb)
            .arg("-c")
            .arg(format!(
                "import time\nb = b'\\x01' * {n}\nopen('ready', 'w').close()\ntime.sleep(3600)\n"
            ))
    };
    let mut job = GuestLauncher::new().spawn(spec, None)?;
    let deadline = Instant::now() + Duration::from_secs(300);
    while !sb.join("ready").exists() {
        if Instant::now() > deadline {
            return Err("the CRIU test process did not start".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = job.job_pid().ok_or("no job under the reaper")?;

    let c = criu.clone();
    let t = Instant::now();
    tokio::task::spawn_blocking(move || c.dump(pid)).await??;
    let t_dump = t.elapsed();
    let _ = job.wait();
    let bundle = root.join(format!("criu-bundle-{mb}"));
    let t = Instant::now();
    let m = write_bundle_file(
        Manifest {
            backend: "criu".into(),
            ..Default::default()
        },
        &criu.bundle_sources(&sb, &[])?,
        &bundle,
    )?;
    let t_collect = t.elapsed();
    let t_put = put_file(http, url, token, &bundle).await?;
    std::fs::remove_file(&bundle)?;
    let t_get = get_to_file(http, url, token, &bundle).await?;

    // As on a new host: only the bundle is left.
    std::fs::remove_dir_all(&sb)?;
    std::fs::remove_dir_all(&criu.images)?;
    prepare_sandbox(&sb, Some(user))?;
    prepare_sandbox(&criu.images, Some(user))?;
    let t = Instant::now();
    criu.unpack(&bundle, &sb)?;
    let spec = criu.restore_spec(&sb, &[]);
    let mut restored = GuestLauncher::new().spawn(spec, None)?;
    let waiter = restored.pid();
    let root_pid = loop {
        let pid = std::fs::read_to_string(criu.pidfile())
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        let parent = pid.and_then(|p| {
            let st = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            st.rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse::<u32>()
                .ok()
        });
        if let (Some(p), Some(pp)) = (pid, parent)
            && pp == waiter
        {
            break p;
        }
        if restored.try_wait()?.is_some() {
            return Err(format!("criu restore failed: {}", criu.restore_errors()).into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let t_restore = t.elapsed();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &root_pid.to_string()])
        .status();
    let _ = restored.wait();
    let total = t_dump + t_collect + t_put + t_get + t_restore;
    println!(
        "| {mb} MB, CRIU ({:.0} MB of images) | {} s (dump {} s + bundle {} s) | {} s ({:.0} MB/s) | {} s | {} s | {} s | | |",
        m.payload_bytes() as f64 / 1e6,
        secs(t_dump + t_collect),
        secs(t_dump),
        secs(t_collect),
        secs(t_put),
        m.payload_bytes() as f64 / 1e6 / t_put.as_secs_f64(),
        secs(t_get),
        secs(t_restore),
        secs(total),
    );
    std::fs::remove_file(&bundle)?;
    std::fs::remove_dir_all(&sb)?;
    std::fs::remove_dir_all(&criu.images)?;
    Ok(())
}

/// Reads the file and sends it through a loopback TCP socket.
fn loopback_copy(path: &Path) -> R<Duration> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let sink = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut s, _) = l.accept()?;
        let mut buf = vec![0u8; 1 << 20];
        let mut n = 0u64;
        loop {
            let k = s.read(&mut buf)?;
            if k == 0 {
                return Ok(n);
            }
            n += k as u64;
        }
    });
    let t = Instant::now();
    let mut f = std::fs::File::open(path)?;
    let mut s = std::net::TcpStream::connect(addr)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            break;
        }
        s.write_all(&buf[..k])?;
    }
    drop(s);
    sink.join().map_err(|_| "sink panicked")??;
    Ok(t.elapsed())
}

/// This process's CPU time (user + system, all threads including finished
/// ones), to the microsecond.
fn own_cpu_secs() -> f64 {
    // SAFETY: getrusage only writes into the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// In the home station's process: on every SIGUSR1, writes "n cpu_secs"
/// to `path` (n counts the signals), so the bench reads the home's CPU
/// time to the microsecond; /proc's stat has only 10 ms ticks, too coarse
/// for a home that spends a few milliseconds per minute.
async fn report_cpu_on_signal(path: PathBuf) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut sig) = signal(SignalKind::user_defined1()) else {
        return;
    };
    let tmp = path.with_extension("tmp");
    let mut n = 0u64;
    while sig.recv().await.is_some() {
        n += 1;
        let line = format!("{n} {:.6}\n", own_cpu_secs());
        if std::fs::write(&tmp, line).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
}

/// Asks the home (SIGUSR1) for its CPU time and waits for the answer.
async fn home_cpu_secs(pid: u32, path: &Path, n: &mut u64) -> R<f64> {
    *n += 1;
    let pid = i32::try_from(pid)?;
    // SAFETY: kill only sends a signal to our own child.
    if unsafe { libc::kill(pid, libc::SIGUSR1) } != 0 {
        return Err("cannot signal the home station".into());
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Some((k, v)) = text.trim().split_once(' ')
            && k.parse::<u64>().ok() == Some(*n)
        {
            return Ok(v.parse()?);
        }
        if Instant::now() > deadline {
            return Err("the home station did not report its CPU time".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits for a leverage job to finish. With `poll_ms` 0 the bench does not
/// ask the home while the job runs (a user's `glean q` every 100 ms is not
/// support the home gives the job): it watches the job's result file, which
/// the home writes into the submit directory when the job completes, and
/// only then asks for the final state. Otherwise it polls the home's job
/// API every `poll_ms` (the bench before 2026-11-21 polled every 100 ms).
async fn wait_done(
    client: &StationClient,
    id: &str,
    result: &Path,
    poll_ms: u64,
) -> R<gleaner_proto::api::JobDetail> {
    if poll_ms > 0 {
        let deadline = Instant::now() + Duration::from_secs(3600);
        loop {
            let d = client.job(id).await?;
            if d.job.state.is_terminal() || matches!(d.job.state, JobState::Held { .. }) {
                return Ok(d);
            }
            if Instant::now() > deadline {
                return Err(format!("job {id} stuck: {:?}", d.job.state).into());
            }
            tokio::time::sleep(Duration::from_millis(poll_ms)).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(3600);
    while !result.exists() {
        if Instant::now() > deadline {
            return Err(format!("job {id}: no {} after an hour", result.display()).into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_state(client, id, true).await
}

async fn leverage_bench(
    lengths: &[f64],
    every: f64,
    advertise: u64,
    poll_ms: u64,
    idle_secs: f64,
    history: usize,
) -> R<()> {
    println!();
    println!(
        "leverage: checkpoint every {every} s of job CPU (1 MB state), ads every {advertise} s, lease 120 s, {}",
        if poll_ms > 0 {
            format!("job state polled every {poll_ms} ms")
        } else {
            "job state not polled while it runs".to_string()
        }
    );
    let (p, coord) = pool(advertise).await?;
    let mut home_cfg = p.station("home", StationRole::SubmitOnly);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?.port()
    };
    home_cfg.listen = format!("127.0.0.1:{port}").parse()?;
    if history > 0 {
        // A home that has been in use: `history` finished (removed) jobs
        // in its queue, as a station accumulates them over months.
        std::fs::create_dir_all(&home_cfg.state_dir)?;
        let mut q = gleaner_station::queue::JobQueue::open(home_cfg.queue_path())?;
        let at = gleaner_core::time::Time::from_secs(1);
        let ids = q.submit_with(at, |_| {
            Ok((0..history)
                .map(|_| gleaner_proto::job::JobDescription::new("bench", "/bin/true"))
                .collect())
        })?;
        for id in ids {
            q.transition(id, JobState::Removed, "bench history", at)?;
        }
        println!("home queue pre-filled with {history} removed jobs");
    }
    let cfg_path = p.root.join("home.toml");
    std::fs::write(&cfg_path, toml::to_string(&home_cfg)?)?;
    let exe = std::env::current_exe()?;
    let cpu_path = p.root.join("home.cpu");
    let mut cpu_n = 0u64;
    let mut child = std::process::Command::new(exe)
        .arg("--serve-station")
        .arg(&cfg_path)
        .arg(&cpu_path)
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let (_x, exec) = spawn_for_test(p.station("exec", StationRole::ExecuteOnly)).await?;
    let client = StationClient::new(format!("http://127.0.0.1:{port}"), p.keys.user("bench"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.jobs(&Default::default()).await.is_err() {
        if Instant::now() > deadline {
            return Err("home station did not start".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if idle_secs > 0.0 {
        // The floor: the home with an empty queue (ads and timers only).
        let cpu0 = home_cpu_secs(child.id(), &cpu_path, &mut cpu_n).await?;
        let t = Instant::now();
        tokio::time::sleep(Duration::from_secs_f64(idle_secs)).await;
        let cpu = home_cpu_secs(child.id(), &cpu_path, &mut cpu_n).await? - cpu0;
        println!(
            "idle home (no jobs): {cpu:.4} s CPU in {:.1} s = {:.3} ms per second",
            t.elapsed().as_secs_f64(),
            cpu * 1000.0 / t.elapsed().as_secs_f64()
        );
    }
    let job_src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/checkpoint/cpu_job.py");
    let mut rows = Vec::new();
    println!();
    println!("| job CPU (s) | wall (s) | checkpoints | home daemon CPU (s) | leverage |");
    println!("|---|---|---|---|---|");
    for (k, &len) in lengths.iter().enumerate() {
        let work = p.root.join(format!("lev{k}"));
        std::fs::create_dir_all(&work)?;
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777))?;
        std::fs::copy(&job_src, work.join("cpu_job.py"))?;
        let text = format!(
            "executable = cpu_job.py\narguments = {len} {every} 1000000\ncheckpoint_exit_code = 85\n\
             transfer_checkpoint_files = cpu_job.state\ntransfer_output_files = cpu_job.result\n\
             output = out.txt\nqueue\n"
        );
        let cpu0 = home_cpu_secs(child.id(), &cpu_path, &mut cpu_n).await?;
        let t = Instant::now();
        let id = p.submit(&client, &text, &work).await?;
        let d = wait_done(&client, &id, &work.join("cpu_job.result"), poll_ms).await?;
        let wall = t.elapsed();
        let home_cpu = home_cpu_secs(child.id(), &cpu_path, &mut cpu_n).await? - cpu0;
        if d.job.state != (JobState::Completed { exit_code: 0 }) {
            return Err(format!("leverage job ended {:?}", d.job.state).into());
        }
        let job_cpu: f64 = std::fs::read_to_string(work.join("cpu_job.result"))?
            .trim()
            .parse()?;
        let ckpts = d
            .events
            .iter()
            .filter(|e| e.kind == gleaner_proto::job::JobEventKind::Checkpointed)
            .count();
        println!(
            "| {job_cpu:.1} | {:.1} | {ckpts} | {home_cpu:.4} | {:.0} |",
            wall.as_secs_f64(),
            job_cpu / home_cpu.max(1e-9)
        );
        rows.push((wall.as_secs_f64(), home_cpu));
    }
    if rows.len() >= 2 {
        let (x1, y1) = rows[0];
        let (x2, y2) = rows[rows.len() - 1];
        let b = ((y2 - y1) / (x2 - x1)).max(0.0);
        let a = (y1 - b * x1).max(0.0);
        let hour = a + b * 3600.0;
        println!();
        // The home's cost grows with the job's wall time (ads, lease
        // renewals, checkpoints), so the fit is against wall time; the
        // 1-hour job is assumed to get its CPU in full (wall = CPU).
        println!(
            "home CPU ≈ {a:.3} s per job + {:.3} ms per wall-second; 1-hour job: {hour:.2} s → leverage ≈ {:.0}",
            b * 1000.0,
            3600.0 / hour.max(1e-9)
        );
    }
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
    exec.stop().await;
    let _ = coord.stop().await;
    Ok(())
}
