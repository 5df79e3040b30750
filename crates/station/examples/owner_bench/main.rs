//! Owner-protection benchmark (issue 5; Linger-Longer spec §7): how much the
//! owner feels a guest, how much idle CPU the guest harvests, the owner's
//! wake-up latency, the time from an activity event to the guest frozen, and
//! the station daemon's own cost while it watches an idle machine.
//!
//! Run with `bench/owner/run.sh` (root, for cgroups). Prints a Markdown
//! report on stdout. The binary re-executes itself for its worker roles
//! (`spin`, `work`, `duty`, `periodic`, `daemon`, `fsync`, `writer`).

use gleaner_core::detector::DetectorProfile;
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::wire::{PlacementRequest, PlacementResponse};
use gleaner_station::config::{ActivitySource, StationConfig, StationRole};
use gleaner_station::host::owner_watch::{OwnerWatchConfig, SourceKind};
use gleaner_station::host::starter::GuestListing;
use gleaner_station::isolation::{
    CgroupConfig, CgroupLayout, CgroupManager, CgroupMode, CgroupSettings, Controller,
    GuestLauncher, GuestProcess, GuestSpec, RemoveOnDrop,
};
use gleaner_testkit::TestKeys;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod fsync;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    match arg(1) {
        "spin" => loop {
            black_box(spin_iters(1_000_000));
        },
        "work" => {
            let n: u64 = arg(2).parse()?;
            let t = Instant::now();
            black_box(spin_iters(n));
            println!("{}", t.elapsed().as_micros());
            Ok(())
        }
        "duty" => duty(arg(2).parse()?, Duration::from_secs_f64(arg(3).parse()?)),
        "periodic" => periodic(Duration::from_secs_f64(arg(2).parse()?)),
        "fsync" => fsync::owner(Path::new(arg(2)), arg(3).parse()?),
        "writer" => fsync::writer(Path::new(arg(2))),
        "daemon" => {
            let cfg = StationConfig::load(Path::new(arg(2)))?;
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(gleaner_station::node::run(cfg, async {
                let _ = tokio::signal::ctrl_c().await;
            }))?;
            Ok(())
        }
        "all" | "" => all(args.iter().any(|a| a == "--quick")),
        // Section 6 alone.
        "io" => {
            println!("{}", io_section(args.iter().any(|a| a == "--quick"))?);
            Ok(())
        }
        other => Err(format!("unknown mode {other:?}").into()),
    }
}

/// CPU-bound work: an xorshift chain the optimiser cannot drop.
fn spin_iters(n: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Owner at `util` of one core: busy for util·P, asleep for the rest of
/// each P = 20 ms period. Prints its CPU seconds.
fn duty(util: f64, total: Duration) -> Res<()> {
    let period = Duration::from_millis(20);
    let busy = period.mul_f64(util.clamp(0.0, 1.0));
    let start = Instant::now();
    let mut next = start;
    while start.elapsed() < total {
        let t = Instant::now();
        while t.elapsed() < busy {
            black_box(spin_iters(1000));
        }
        next += period;
        if let Some(d) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    }
    Ok(())
}

/// An interactive owner task: wake every 10 ms, 1 ms of work. Prints the
/// wake-up lateness of each period in microseconds.
fn periodic(total: Duration) -> Res<()> {
    let period = Duration::from_millis(10);
    let start = Instant::now();
    let mut next = start + period;
    let mut late = Vec::new();
    while start.elapsed() < total {
        if let Some(d) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
        late.push(Instant::now().saturating_duration_since(next).as_micros());
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(1) {
            black_box(spin_iters(100));
        }
        next += period;
        // After an overrun, skip missed periods rather than bunching.
        while next < Instant::now() {
            next += period;
        }
    }
    let text: Vec<String> = late.iter().map(u128::to_string).collect();
    println!("{}", text.join(" "));
    Ok(())
}

fn me() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("owner_bench"))
}

fn ncpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn median(mut v: Vec<f64>) -> f64 {
    percentile(&mut v, 0.5)
}

// ---- guests -----------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// No guest at all (baseline).
    NoGuest,
    /// (a) guests at normal priority, no isolation.
    Plain,
    /// (b) guests at nice 19.
    Nice19,
    /// (c) guests with SCHED_IDLE in an idle cgroup.
    Idle,
}

struct Guests {
    children: Vec<Child>,
    idle: Vec<GuestProcess>,
    /// Dropped after the processes are gone (kill, then rmdir).
    groups: Vec<RemoveOnDrop>,
}

impl Drop for Guests {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for p in &mut self.idle {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
        self.groups.clear();
    }
}

impl Guests {
    fn pids(&self) -> Vec<i32> {
        let a = self.children.iter().map(|c| c.id() as i32);
        let b = self.idle.iter().map(|p| p.pid() as i32);
        a.chain(b).collect()
    }
}

struct Ctx {
    cg: Option<CgroupManager>,
    tmp: tempfile::TempDir,
    iters: u64,
    seq: u32,
}

fn start_guests(ctx: &mut Ctx, mode: Mode, n: usize) -> Res<Guests> {
    let mut g = Guests {
        children: Vec::new(),
        idle: Vec::new(),
        groups: Vec::new(),
    };
    for _ in 0..n {
        match mode {
            Mode::NoGuest => {}
            Mode::Plain | Mode::Nice19 => {
                let c = Command::new(me()).arg("spin").spawn()?;
                if mode == Mode::Nice19 {
                    // SAFETY: plain syscall on our child's pid.
                    unsafe { libc::setpriority(libc::PRIO_PROCESS, c.id(), 19) };
                }
                g.children.push(c);
            }
            Mode::Idle => {
                ctx.seq += 1;
                let name = format!("g{}", ctx.seq);
                let cg = match &ctx.cg {
                    Some(m) => {
                        let c = m.create(&name)?;
                        c.set_idle(true)?;
                        Some(c)
                    }
                    None => None,
                };
                let mut spec = GuestSpec::new(me(), ctx.tmp.path().join(&name)).arg("spin");
                spec.sched_idle = true;
                g.idle.push(GuestLauncher::new().spawn(spec, cg.as_ref())?);
                g.groups.extend(cg.map(RemoveOnDrop));
            }
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    Ok(g)
}

/// utime+stime of a process, seconds.
fn proc_cpu(pid: i32) -> f64 {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    let Some((_, rest)) = s.rsplit_once(')') else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (t(11) + t(12)) / hz
}

/// Total and idle (idle + iowait) jiffies from /proc/stat.
fn proc_stat() -> (f64, f64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(l) = text.lines().next() else {
        return (0.0, 0.0);
    };
    let v: Vec<f64> = l
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: f64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0.0) + v.get(4).copied().unwrap_or(0.0);
    (total, idle)
}

// ---- (1) owner slowdown ------------------------------------------------------

/// Runs one CPU-bound owner per core, each a fixed amount of work; returns
/// the mean wall time of the owners, seconds.
fn owners_fixed_work(iters: u64, n: usize) -> Res<f64> {
    let kids: Vec<Child> = (0..n)
        .map(|_| {
            Command::new(me())
                .args(["work", &iters.to_string()])
                .stdout(Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut sum = 0.0;
    for k in kids {
        let out = k.wait_with_output()?;
        let us: f64 = String::from_utf8_lossy(&out.stdout).trim().parse()?;
        sum += us / 1e6;
    }
    Ok(sum / n as f64)
}

fn slowdown(ctx: &mut Ctx, reps: usize) -> Res<String> {
    let n = ncpu();
    let modes = [Mode::NoGuest, Mode::Plain, Mode::Nice19, Mode::Idle];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    // Interleaved, so that the neighbours' load drifts over all modes alike.
    for _ in 0..reps {
        for (i, m) in modes.iter().enumerate() {
            let g = start_guests(ctx, *m, n)?;
            times[i].push(owners_fixed_work(ctx.iters, n)?);
            drop(g);
        }
    }
    let base = median(times[0].clone());
    let mut out = String::from(
        "| guests (one per core) | owner time, median (s) | owner slowdown | all runs (s) |\n|---|---|---|---|\n",
    );
    let names = [
        "none (baseline)",
        "(a) no isolation",
        "(b) nice 19",
        "(c) SCHED_IDLE + idle cgroup",
    ];
    for (i, name) in names.iter().enumerate() {
        let m = median(times[i].clone());
        let runs: Vec<String> = times[i].iter().map(|t| format!("{t:.3}")).collect();
        out += &format!(
            "| {name} | {m:.3} | {:+.2} % | {} |\n",
            (m / base - 1.0) * 100.0,
            runs.join(", ")
        );
    }
    Ok(out)
}

// ---- (2) harvest ---------------------------------------------------------------

fn harvest(ctx: &mut Ctx, secs: f64) -> Res<String> {
    let n = ncpu();
    let mut out = String::from(
        "| owner utilisation (target) | owner CPU (core-s) | guest CPU (core-s) | other tenants (core-s) | idle left (core-s) | harvest = guest / (guest + idle left) | guest / (capacity − owner) |\n|---|---|---|---|---|---|---|\n",
    );
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    for util in [0.1, 0.5, 0.9] {
        let g = start_guests(ctx, Mode::Idle, n)?;
        let owners: Vec<Child> = (0..n)
            .map(|_| {
                Command::new(me())
                    .args(["duty", &util.to_string(), &secs.to_string()])
                    .spawn()
            })
            .collect::<Result<_, _>>()?;
        std::thread::sleep(Duration::from_millis(300));
        let opids: Vec<i32> = owners.iter().map(|c| c.id() as i32).collect();
        let o0: f64 = opids.iter().map(|&p| proc_cpu(p)).sum();
        let g0: f64 = g.pids().iter().map(|&p| proc_cpu(p)).sum();
        let (t0, i0) = proc_stat();
        std::thread::sleep(Duration::from_secs_f64(secs - 0.6));
        let o1: f64 = opids.iter().map(|&p| proc_cpu(p)).sum();
        let g1: f64 = g.pids().iter().map(|&p| proc_cpu(p)).sum();
        let (t1, i1) = proc_stat();
        for mut o in owners {
            let _ = o.wait();
        }
        drop(g);
        let guest = g1 - g0;
        let owner = o1 - o0;
        let idle = (i1 - i0) / hz;
        let others = ((t1 - t0) / hz - idle - guest - owner).max(0.0);
        let cap = (secs - 0.6) * n as f64;
        let of_left = 100.0 * guest / (cap - owner).max(1e-9);
        let share = if guest + idle > 0.005 {
            format!("{:.1} %", 100.0 * guest / (guest + idle))
        } else {
            "n/a (no idle CPU left by other tenants)".to_string()
        };
        out += &format!(
            "| {:.0} % | {owner:.2} | {guest:.2} | {others:.2} | {idle:.2} | {share} | {of_left:.1} % |\n",
            util * 100.0,
        );
    }
    Ok(out)
}

// ---- (3) wake-up latency -----------------------------------------------------

fn wakeup(ctx: &mut Ctx, secs: f64) -> Res<String> {
    let n = ncpu();
    let mut out = String::from(
        "| guests | wake-ups | p50 (µs) | p99 (µs) | max (µs) |\n|---|---|---|---|---|\n",
    );
    for (mode, name) in [
        (Mode::NoGuest, "none"),
        (Mode::Idle, "lingering: SCHED_IDLE + idle cgroup"),
        (Mode::Plain, "normal priority (for contrast)"),
    ] {
        let g = start_guests(ctx, mode, n)?;
        let o = Command::new(me())
            .args(["periodic", &secs.to_string()])
            .stdout(Stdio::piped())
            .spawn()?
            .wait_with_output()?;
        drop(g);
        let mut v: Vec<f64> = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        let len = v.len();
        let p50 = percentile(&mut v, 0.5);
        let p99 = percentile(&mut v, 0.99);
        let max = percentile(&mut v, 1.0);
        out += &format!("| {name} | {len} | {p50:.0} | {p99:.0} | {max:.0} |\n");
    }
    Ok(out)
}

// ---- (4) activity event → guest frozen, through the daemon ------------------

const BUSY: &str = "#!/bin/sh\nwhile :; do :; done\n";
const HOST: &str = "bench-host";

async fn shadow() -> Res<String> {
    use axum::routing::{get, post, put};
    async fn input(
        axum::extract::Path((_j, name)): axum::extract::Path<(String, String)>,
    ) -> (axum::http::StatusCode, Vec<u8>) {
        if name == "job.sh" {
            (axum::http::StatusCode::OK, BUSY.as_bytes().to_vec())
        } else {
            (axum::http::StatusCode::NOT_FOUND, Vec::new())
        }
    }
    async fn ok(_b: axum::body::Bytes) -> axum::http::StatusCode {
        axum::http::StatusCode::OK
    }
    let app = axum::Router::new()
        .route("/v1/shadow/{job}/input/{name}", get(input))
        .route("/v1/shadow/{job}/output/{stream}", post(ok))
        .route("/v1/shadow/{job}/files/{name}", put(ok))
        .route("/v1/jobs/{job}/status", post(ok));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = l.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    Ok(format!("http://{addr}"))
}

/// The placing home's station token.
fn daemon_token(keys: &TestKeys) -> String {
    keys.station("home")
}

/// Places a busy job until the station accepts it; returns the guest id.
async fn place(addr: &str, key: &TestKeys, shadow: &str) -> Res<String> {
    let http = reqwest::Client::new();
    let start = Instant::now();
    loop {
        let claim = key.claim(HOST, "home", shadow);
        let mut d = JobDescription::new("alice", "job.sh");
        d.transfer_output_files = None;
        let req = PlacementRequest {
            protocol: gleaner_proto::wire::PROTOCOL_VERSION,
            job_id: JobId::new(1, 0),
            home: "home".into(),
            claim_id: claim,
            description: d,
            shadow: shadow.into(),
            checkpoint: None,
            run_count: 0,
            lease_secs: None,
            run: None,
            claim_seq: 0,
        };
        let r: PlacementResponse = http
            .post(format!("{addr}/v1/place"))
            .bearer_auth(daemon_token(key))
            .json(&req)
            .send()
            .await?
            .json()
            .await?;
        if let PlacementResponse::Accepted { guest_id } = r {
            // Wait until it runs.
            loop {
                let l: Vec<GuestListing> = http
                    .get(format!("{addr}/v1/guests"))
                    .bearer_auth(daemon_token(key))
                    .send()
                    .await?
                    .json()
                    .await?;
                if l.iter().any(|g| g.pid.is_some() && g.state != "starting") {
                    return Ok(guest_id);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        if start.elapsed() > Duration::from_secs(30) {
            return Err(format!("placement refused: {r:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn write_atomic(path: &Path, text: &str) -> Res<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Measures write → frozen for `reps` events; `active`/`idle` write the
/// owner's presence/absence.
async fn event_to_frozen(linux: bool, reps: usize, root: &Path, parent: &str) -> Res<Vec<f64>> {
    let dir = tempfile::tempdir_in(root)?;
    let key = TestKeys::in_dir(&dir.path().join("coord"))?;
    let activity = dir.path().join("activity");
    let mut cfg = StationConfig {
        name: HOST.into(),
        listen: "127.0.0.1:0".parse()?,
        state_dir: dir.path().join("station"),
        public_key: key.public_key(),
        token_file: key.station_token_file(HOST, &dir.path().join("station.token"))?,
        role: StationRole::ExecuteOnly,
        eviction_policy: "condor1988".into(),
        isolation: CgroupSettings {
            cgroups: CgroupMode::Auto,
            parent: parent.into(),
            parent_idle: false,
            required: true,
            ..Default::default()
        },
        ..Default::default()
    };
    if linux {
        cfg.activity = ActivitySource::Linux;
        cfg.owner = OwnerWatchConfig {
            sources: vec![SourceKind::File],
            activity_file: Some(activity.clone()),
            profile: DetectorProfile::Mutka1988,
            idle_wait_secs: Some(0.3),
            sample_period_na_secs: Some(0.2),
            sample_period_av_secs: Some(0.2),
            ..Default::default()
        };
    } else {
        cfg.activity = ActivitySource::File {
            path: activity.clone(),
        };
    }
    let (addr, daemon) = gleaner_station::node::spawn_for_test(cfg).await?;
    let shadow = shadow().await?;
    let guest = place(&format!("http://{addr}"), &key, &shadow).await?;
    let mut c = CgroupConfig::new(CgroupLayout::detect()?);
    c.parent = parent.into();
    c.parent_idle = false;
    let m = CgroupManager::new(c)?;
    let g = m.open(&guest)?;
    let mut lat = Vec::new();
    for i in 0..reps {
        let t0 = Instant::now();
        if linux {
            // FileSource: one `active` line per event (mtime = the event).
            write_atomic(&activity, &format!("active\n# {i}\n"))?;
        } else {
            write_atomic(&activity, "active\n")?;
        }
        while !g.is_frozen().unwrap_or(false) {
            if t0.elapsed() > Duration::from_secs(10) {
                return Err("guest never froze".into());
            }
            std::hint::spin_loop();
        }
        lat.push(t0.elapsed().as_secs_f64() * 1e3);
        if !linux {
            write_atomic(&activity, "idle\n")?;
        }
        let t1 = Instant::now();
        while g.is_frozen().unwrap_or(false) {
            if t1.elapsed() > Duration::from_secs(20) {
                return Err("guest never thawed".into());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The daemon's stop leaves guests to the runtime's teardown: vacate.
    let http = reqwest::Client::new();
    let base = format!("http://{addr}");
    let _ = http
        .post(format!("{base}/v1/guests/{}/vacate", JobId::new(1, 0)))
        .bearer_auth(daemon_token(&key))
        .send()
        .await;
    for _ in 0..200 {
        let l: Vec<GuestListing> = http
            .get(format!("{base}/v1/guests"))
            .bearer_auth(daemon_token(&key))
            .send()
            .await?
            .json()
            .await?;
        if l.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    daemon.stop().await;
    for _ in 0..100 {
        if m.list().unwrap_or_default().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = m.remove_parent();
    Ok(lat)
}

// ---- (5) daemon overhead -----------------------------------------------------

/// Runtime of all threads of a process (schedstat, ns → s).
fn proc_runtime(pid: u32) -> f64 {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    rd.flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e9
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn overhead(root: &Path, secs: f64) -> Res<String> {
    let dir = tempfile::tempdir_in(root)?;
    let keys = TestKeys::in_dir(&dir.path().join("coord"))?;
    let token = keys.station_token_file("idle-watch", &dir.path().join("station.token"))?;
    let toml = format!(
        "name = \"idle-watch\"\nlisten = \"127.0.0.1:0\"\nstate_dir = {:?}\npublic_key = {:?}\n\
         token_file = {:?}\nrole = \"execute_only\"\nactivity = {{ source = \"linux\" }}\n\
         [owner]\nsources = [\"evdev\", \"tty\", \"logind\", \"power\", \"load\"]\n\
         [isolation]\ncgroups = \"auto\"\nparent = \"gleaner-bench-daemon\"\n",
        dir.path().join("state"),
        keys.public_key(),
        token,
    );
    let cfg = dir.path().join("station.toml");
    std::fs::write(&cfg, &toml)?;
    let mut child = Command::new(me())
        .arg("daemon")
        .arg(&cfg)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id();
    std::thread::sleep(Duration::from_secs(3));
    let c0 = proc_runtime(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let c1 = proc_runtime(pid);
    let wall = t0.elapsed().as_secs_f64();
    let rss = rss_kb(pid);
    // SAFETY: SIGINT to our own child: the daemon's graceful stop.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let _ = child.wait();
    let mut c = CgroupConfig::new(CgroupLayout::detect()?);
    c.parent = "gleaner-bench-daemon".into();
    let _ = CgroupManager::new(c)?.remove_parent();
    Ok(format!(
        "| watch window | daemon CPU | CPU % of one core | RSS |\n|---|---|---|---|\n| {wall:.1} s | {:.1} ms | {:.4} % | {:.1} MiB |\n",
        (c1 - c0) * 1e3,
        100.0 * (c1 - c0) / wall,
        rss as f64 / 1024.0
    ))
}

// ---- driver --------------------------------------------------------------------

fn lat_row(name: &str, mut v: Vec<f64>) -> String {
    let n = v.len();
    let p50 = percentile(&mut v, 0.5);
    let p99 = percentile(&mut v, 0.99);
    let max = percentile(&mut v, 1.0);
    format!("| {name} | {n} | {p50:.2} | {p99:.2} | {max:.2} |\n")
}

fn all(quick: bool) -> Res<()> {
    let root = nix_is_root();
    let tmp = tempfile::tempdir()?;
    // The guests' subtree for (c): idle CPU class on the cpu hierarchy.
    // The shield: this machine is shared with other tenants (load average
    // ~10 on 2 CPUs while this ran). The benchmark's owner and guests run in
    // a cpu group of maximal weight so the tenants disturb it less; inside
    // it, owner and guests compete exactly as on a machine of their own.
    let shield = format!("gleaner-bench-shield-{}", std::process::id());
    let cg = if root && std::env::var_os("NO_SHIELD").is_none() {
        let layout = CgroupLayout::detect()?;
        let mut c = CgroupConfig::new(layout.clone());
        c.parent = format!("{shield}/guests");
        c.parent_idle = true;
        let m = CgroupManager::new(c)?;
        for r in m.roots() {
            std::fs::create_dir_all(r.join(&shield))?;
        }
        if let Some((cpu, false)) = m.controller_root(Controller::Cpu) {
            std::fs::write(cpu.join(&shield).join("cpu.shares"), "262144")?;
            std::fs::write(
                cpu.join(&shield).join("cgroup.procs"),
                std::process::id().to_string(),
            )?;
        }
        m.ensure_parent()?;
        Some(m)
    } else if root {
        let mut c = CgroupConfig::new(CgroupLayout::detect()?);
        c.parent = format!("gleaner-bench-{}", std::process::id());
        c.parent_idle = true;
        let m = CgroupManager::new(c)?;
        m.ensure_parent()?;
        Some(m)
    } else {
        None
    };
    // Calibrate the owner's fixed work to ~2 s on an unloaded core.
    let t = Instant::now();
    black_box(spin_iters(50_000_000));
    let rate = 50_000_000.0 / t.elapsed().as_secs_f64();
    let target = if quick { 0.5 } else { 2.0 };
    let mut ctx = Ctx {
        cg,
        tmp,
        iters: (rate * target) as u64,
        seq: 0,
    };
    let (l, _) = std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_once(' ')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap_or_default();
    println!("# Owner protection benchmark\n");
    println!(
        "Machine: {} CPUs, kernel {}, load average at start {l}.",
        ncpu(),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    match &ctx.cg {
        Some(m) => {
            let (cpu_root, v2) = m
                .controller_root(Controller::Cpu)
                .unwrap_or_else(|| (PathBuf::from("(none)"), false));
            let (fr, fv2) = m
                .controller_root(Controller::Freezer)
                .unwrap_or_else(|| (PathBuf::from("signals"), false));
            // Which mechanism the kernel took: cpu.idle, or minimum weight.
            let probe = RemoveOnDrop(m.create("probe")?);
            let how = match probe.set_idle(true)? {
                gleaner_station::isolation::IdleOutcome::CpuIdle => "`cpu.idle=1`",
                gleaner_station::isolation::IdleOutcome::MinimumWeight => {
                    "minimum weight (`cpu.shares=2` / `cpu.weight=1`)"
                }
                gleaner_station::isolation::IdleOutcome::Unavailable => {
                    "nothing (no cpu controller)"
                }
            };
            drop(probe);
            println!(
                "Isolation (c): SCHED_IDLE per task + {how} on each guest's group and on their parent, cpu hierarchy {} ({}); freezer {} ({}).\n",
                cpu_root.display(),
                if v2 { "cgroup v2" } else { "cgroup v1" },
                fr.display(),
                if fv2 {
                    "v2 cgroup.freeze"
                } else {
                    "v1 freezer.state"
                },
            );
        }
        None => println!("Isolation (c): not root, SCHED_IDLE per task only.\n"),
    }
    let reps = if quick { 1 } else { 3 };
    if std::env::var_os("NO_SHIELD").is_none() && root {
        println!(
            "Shield: owner and guests of sections 1-3 run inside a v1 cpu group with `cpu.shares=262144`, so the other tenants of this shared machine take less of the CPU; set NO_SHIELD=1 to run without it.\n"
        );
    }
    println!("## Owner slowdown (one CPU-bound owner + one guest per core)\n");
    println!("{}", slowdown(&mut ctx, reps)?);
    println!("## Guest harvest of otherwise idle CPU (guests as in (c))\n");
    println!("{}", harvest(&mut ctx, if quick { 2.0 } else { 5.0 })?);
    println!("## Owner wake-up latency (1 ms work every 10 ms)\n");
    println!("{}", wakeup(&mut ctx, if quick { 2.0 } else { 5.0 })?);
    println!(
        "## Owner `fsync` latency while a guest writes flat out (4 KiB + fsync every 20 ms)\n"
    );
    println!(
        "{}",
        fsync::section(ctx.cg.as_ref(), if quick { 5.0 } else { 20.0 })?
    );
    if let Some(m) = ctx.cg.take() {
        drop(ctx);
        let _ = m.remove_parent();
        if let Some((cpu, _)) = m.controller_root(Controller::Cpu) {
            let _ = std::fs::write(cpu.join("cgroup.procs"), std::process::id().to_string());
        }
        for r in m.roots() {
            let _ = std::fs::remove_dir(r.join(&shield));
        }
    }
    if root {
        println!("## Activity event → guest frozen (station daemon, condor1988 policy)\n");
        println!("| path | events | p50 (ms) | p99 (ms) | max (ms) |\n|---|---|---|---|---|");
        let rt = tokio::runtime::Runtime::new()?;
        let reps = if quick { 5 } else { 20 };
        let pid = std::process::id();
        let base = tempfile::tempdir()?;
        std::fs::set_permissions(
            base.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )?;
        let v = rt.block_on(event_to_frozen(
            false,
            reps,
            base.path(),
            &format!("gleaner-bench-ev-{pid}"),
        ))?;
        print!(
            "{}",
            lat_row(
                "`file` state source (inotify) → watch → ladder → freezer",
                v
            )
        );
        let v = rt.block_on(event_to_frozen(
            true,
            reps.min(10),
            base.path(),
            &format!("gleaner-bench-evl-{pid}"),
        ))?;
        print!(
            "{}",
            lat_row(
                "`linux` watch, `file` activity source → detector `on_activity` → ladder → freezer",
                v
            )
        );
        println!();
        println!("## Station daemon watching an idle machine\n");
        println!(
            "{}",
            overhead(base.path(), if quick { 10.0 } else { 60.0 })?
        );
    }
    println!("{}", io_section(quick)?);
    Ok(())
}

/// Section 6 with its own guest cgroups (root: for the guest's group and
/// its loop-mounted sandbox).
fn io_section(quick: bool) -> Res<String> {
    let cg = if nix_is_root() {
        let mut c = CgroupConfig::new(CgroupLayout::detect()?);
        c.parent = format!("gleaner-bench-io-{}", std::process::id());
        let m = CgroupManager::new(c)?;
        m.ensure_parent()?;
        Some(m)
    } else {
        None
    };
    let r = fsync::section(cg.as_ref(), if quick { 5.0 } else { 20.0 });
    if let Some(m) = cg {
        let _ = m.remove_parent();
    }
    Ok(format!(
        "## Owner `fsync` latency while a guest writes flat out (4 KiB + fsync every 20 ms)\n\n{}",
        r?
    ))
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
