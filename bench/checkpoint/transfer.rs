//! Part 1 of the checkpoint bench: a checkpoint's round trip through a
//! real home station, per state size and kind, beside raw copies of the
//! same bytes.

use super::{Pool, R, secs, wait_state};
use gleaner_station::checkpoint::stream::FetchError;
use gleaner_station::checkpoint::{
    BundleSource, Checkpointer, Criu, Manifest, PackOptions, RestoreTo, SelfCheckpoint,
    criu_status, fetch_checkpoint, send_checkpoint,
};
use gleaner_station::config::StationRole;
use gleaner_station::isolation::{GuestLauncher, GuestSpec, GuestUser, prepare_sandbox};
use gleaner_station::node::spawn_for_test;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// What a state holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Random bytes: nothing to compress.
    Random,
    /// A program's text state (numbered records of numbers): compresses
    /// several times over, as logs, tables and sparse arrays do.
    Text,
}

impl Kind {
    pub fn parse(s: &str) -> R<Vec<Kind>> {
        s.split(',')
            .map(|k| match k {
                "random" => Ok(Kind::Random),
                "text" => Ok(Kind::Text),
                other => Err(format!("unknown state kind {other:?} (random, text)").into()),
            })
            .collect()
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Random => "incompressible",
            Kind::Text => "compressible",
        }
    }
}

/// Writes `n` bytes of state of `kind` to `path`, a MiB at a time.
fn write_state(path: &Path, n: u64, kind: Kind) -> R<()> {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut left = n;
    let mut rec = 0u64;
    let mut buf = Vec::with_capacity(1 << 20);
    while left > 0 {
        buf.clear();
        match kind {
            Kind::Random => {
                buf.resize(1 << 20, 0);
                for chunk in buf.chunks_mut(8) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
                }
            }
            Kind::Text => {
                while buf.len() < 1 << 20 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let v = (x % 1_000_000) as f64 / 1000.0;
                    let _ = writeln!(buf, "cell {rec:>10} temp {v:>10.3} flux {:>8} ok", x % 977);
                    rec += 1;
                }
            }
        }
        let k = usize::try_from(left.min(buf.len() as u64))?;
        f.write_all(&buf[..k])?;
        left -= k as u64;
    }
    f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

/// Where the bench talks to the home as the job's host would.
struct Shadow {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Shadow {
    /// Packs `sources` and sends them home as they are packed.
    async fn send(
        &self,
        manifest: Manifest,
        sources: Vec<BundleSource>,
    ) -> R<(Duration, gleaner_station::checkpoint::Packed)> {
        let t = Instant::now();
        let sent = send_checkpoint(
            self.http.put(&self.url).bearer_auth(&self.token),
            manifest,
            sources,
            PackOptions::default(),
            |_| async {},
        )
        .await?;
        Ok((t.elapsed(), sent.packed))
    }

    /// Fetches the latest checkpoint and restores it as it arrives.
    async fn fetch(&self, to: RestoreTo) -> R<Duration> {
        let t = Instant::now();
        let r = self
            .http
            .get(&self.url)
            .bearer_auth(&self.token)
            .send()
            .await?;
        if !r.status().is_success() {
            return Err(format!("GET failed: {}", r.status()).into());
        }
        fetch_checkpoint(r, to, |_| async {})
            .await
            .map_err(|e: FetchError| e.to_string())?;
        Ok(t.elapsed())
    }
}

/// The table: per size and kind, a self-checkpoint's round trip (pack and
/// send home; fetch and restore) beside a raw disk copy with fsync and a
/// raw loopback TCP copy; and where CRIU works, a process holding that
/// much memory dumped, sent, fetched and restored.
pub async fn transfer_bench(sizes_mb: &[u64], kinds: &[Kind], criu: bool) -> R<()> {
    let (p, coord) = super::pool(10).await?;
    let (home_addr, home) = spawn_for_test(p.station("home", StationRole::SubmitOnly)).await?;
    let (_x_addr, exec) = spawn_for_test(p.station("exec", StationRole::ExecuteOnly)).await?;
    let client = p.client(home_addr)?;
    let work = p.work_dir("work")?;
    // A running job gives the shadow a job to hold checkpoints for.
    let id = p
        .submit(
            &client,
            "executable = /bin/sleep\ntransfer_executable = false\narguments = 3600\nqueue\n",
            &work,
        )
        .await?;
    wait_state(&client, &id, false).await?;
    // The shadow hears only the job's current run.
    let run = gleaner_station::queue::JobQueue::open_read_only(
        p.station("home", StationRole::SubmitOnly).queue_path(),
    )?
    .current_run(id.parse()?)?
    .ok_or("the running job has no run")?;
    let mut url = reqwest::Url::parse(&format!("http://{home_addr}/v1/shadow/{id}/checkpoint"))?;
    url.query_pairs_mut().append_pair("run", &run);
    // Only the job's host may put and fetch its checkpoints.
    let shadow = Shadow {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(3600))
            .build()?,
        url: url.to_string(),
        token: p.keys.station("exec"),
    };

    println!();
    println!(
        "| state | checkpoint + send home | fetch + restore | round trip | sent | raw disk copy | round trip / disk copy | raw loopback copy |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &mb in sizes_mb {
        for &kind in kinds {
            self_row(&p, &shadow, mb, kind).await?;
        }
        if criu && criu_status().available() {
            for &kind in kinds {
                criu_row(&p.root, &shadow, mb, kind).await?;
            }
        }
    }
    let _ = client.rm(&id, None).await;
    home.stop().await;
    exec.stop().await;
    let _ = coord.stop().await;
    Ok(())
}

/// One self-checkpoint row.
async fn self_row(p: &Pool, shadow: &Shadow, mb: u64, kind: Kind) -> R<()> {
    let sb = p.root.join(format!("sandbox-{mb}"));
    std::fs::create_dir_all(&sb)?;
    let state = sb.join("state");
    write_state(&state, mb * 1_000_000, kind)?;
    // The raw copies first, while the state is as warm in the page cache
    // as it is for the checkpoint.
    let copy = p.root.join("copy");
    let t = Instant::now();
    std::fs::copy(&state, &copy)?;
    std::fs::File::open(&copy)?.sync_all()?;
    let t_disk = t.elapsed();
    std::fs::remove_file(&copy)?;
    let t_loop = loopback_copy(&state)?;

    let sc = SelfCheckpoint {
        exit_code: 85,
        files: vec!["state".into()],
    };
    let manifest = Manifest {
        backend: "self".into(),
        ..Default::default()
    };
    let (t_send, packed) = shadow.send(manifest, sc.sources(&sb)?).await?;
    let out = p.root.join(format!("restore-{mb}"));
    std::fs::create_dir_all(&out)?;
    let o = out.clone();
    let t_fetch = shadow
        .fetch(RestoreTo {
            route: Box::new(move |name: &str| o.join(name)),
            owner: None,
            threads: gleaner_station::checkpoint::pack::default_threads(),
        })
        .await?;
    let total = t_send + t_fetch;
    println!(
        "| {mb} MB, {} | {} s | {} s | {} s | {:.0} MB | {} s | **{:.2}×** | {} s |",
        kind.name(),
        secs(t_send),
        secs(t_fetch),
        secs(total),
        packed.wire_bytes as f64 / 1e6,
        secs(t_disk),
        total.as_secs_f64() / t_disk.as_secs_f64(),
        secs(t_loop),
    );
    std::fs::remove_dir_all(&sb)?;
    std::fs::remove_dir_all(&out)?;
    Ok(())
}

/// One CRIU row: a process holding `mb` MB of memory, run as `nobody`
/// under the starter's reaping launcher, is dumped, packed and sent home,
/// fetched and unpacked, and restored (until the restored process runs).
async fn criu_row(root: &Path, shadow: &Shadow, mb: u64, kind: Kind) -> R<()> {
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
    let make = match kind {
        Kind::Random => format!("import os\nb = os.urandom({n})\n"),
        // A MiB of text records, repeated.
        Kind::Text => format!(
            "r = b''.join(b'cell %10d temp %10.3f ok\\n' % (i, (i * 7919 % 100000) / 1000) for i in range(32768))\nb = r * ({n} // len(r))\n"
        ),
    };
    let spec = GuestSpec {
        user: Some(user),
        reaper: true,
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..GuestSpec::new("/usr/bin/python3", &sb)
            .arg("-c")
            .arg(format!(
                "import time\n{make}open('ready', 'w').close()\ntime.sleep(3600)\n"
            ))
    };
    let mut job = GuestLauncher::new().spawn(spec, None)?;
    let deadline = Instant::now() + Duration::from_secs(600);
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
    let manifest = Manifest {
        backend: "criu".into(),
        uid: Some(user.uid),
        ..Default::default()
    };
    let (t_send, packed) = shadow
        .send(manifest, criu.bundle_sources(&sb, &[])?)
        .await?;

    // As on a new host: nothing of the job is left.
    std::fs::remove_dir_all(&sb)?;
    std::fs::remove_dir_all(&criu.images)?;
    prepare_sandbox(&sb, Some(user))?;
    prepare_sandbox(&criu.images, Some(user))?;
    let (c, s) = (criu.clone(), sb.clone());
    let t_fetch = shadow
        .fetch(RestoreTo {
            route: Box::new(move |name: &str| c.destination(&s, name)),
            owner: Some((user.uid, user.gid)),
            threads: gleaner_station::checkpoint::pack::default_threads(),
        })
        .await?;
    let t = Instant::now();
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
    let total = t_dump + t_send + t_fetch + t_restore;
    println!(
        "| {mb} MB, {}, CRIU ({:.0} MB of images) | {} s (dump {} s) | {} s (+ criu restore {} s) | {} s | {:.0} MB | | | |",
        kind.name(),
        packed.raw_bytes as f64 / 1e6,
        secs(t_dump + t_send),
        secs(t_dump),
        secs(t_fetch + t_restore),
        secs(t_restore),
        secs(total),
        packed.wire_bytes as f64 / 1e6,
    );
    std::fs::remove_dir_all(&sb)?;
    std::fs::remove_dir_all(&criu.images)?;
    Ok(())
}

/// Reads the file and sends it through a loopback TCP socket.
pub fn loopback_copy(path: &Path) -> R<Duration> {
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

/// Packs `mb` MB of each kind of state at several zstd levels (and none)
/// into nothing, on the packer's default threads: the speed and the size
/// each level gives, to choose the level by (`pack::DEFAULT_LEVEL`).
pub fn level_table(root: &Path, mb: u64, kinds: &[Kind], levels: &[i32]) -> R<()> {
    use gleaner_station::checkpoint::{BundleSource, PackOptions, pack};
    println!();
    println!(
        "zstd levels: {mb} MB packed into nothing, {} threads",
        gleaner_station::checkpoint::pack::default_threads()
    );
    println!();
    println!("| state | level | pack time | MB/s | packed size | ratio |");
    println!("|---|---|---|---|---|---|");
    for &kind in kinds {
        let path = root.join("level-state");
        write_state(&path, mb * 1_000_000, kind)?;
        let src = [BundleSource {
            name: "state".into(),
            path: path.clone(),
        }];
        let mut all: Vec<Option<i32>> = vec![None];
        all.extend(levels.iter().map(|l| Some(*l)));
        for level in all {
            let opts = PackOptions {
                level,
                ..PackOptions::default()
            };
            // Best of three: the machine is shared.
            let mut best = Duration::MAX;
            let mut size = 0;
            for _ in 0..3 {
                let t = Instant::now();
                let p = pack(Manifest::default(), &src, &opts, &mut std::io::sink())?;
                best = best.min(t.elapsed());
                size = p.wire_bytes;
            }
            println!(
                "| {} | {} | {} s | {:.0} | {:.1} MB | {:.2} |",
                kind.name(),
                level.map_or("none".to_string(), |l| l.to_string()),
                secs(best),
                mb as f64 / best.as_secs_f64(),
                size as f64 / 1e6,
                (mb * 1_000_000) as f64 / size as f64,
            );
        }
        std::fs::remove_file(&path)?;
    }
    Ok(())
}
