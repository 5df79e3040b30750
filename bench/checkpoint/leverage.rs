//! Part 2 of the checkpoint bench: Mutka's leverage (see `ckpt_bench.rs`).

use super::{R, wait_state};
use gleaner_proto::job::JobState;
use gleaner_station::client::StationClient;
use gleaner_station::config::StationRole;
use gleaner_station::node::spawn_for_test;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
pub async fn report_cpu_on_signal(path: PathBuf) {
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

pub async fn leverage_bench(
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
    let (p, coord) = super::pool(advertise).await?;
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
                .map(|_| gleaner_proto::job::JobDescription::new(p.owner.name(), "/bin/true"))
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
    let client = p.client(format!("127.0.0.1:{port}"))?;
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
        let work = p.work_dir(&format!("lev{k}"))?;
        p.owner
            .write(&work.join("cpu_job.py"), std::fs::read(&job_src)?)
            .map_err(|e| e.to_string())?;
        std::fs::set_permissions(
            work.join("cpu_job.py"),
            std::fs::Permissions::from_mode(0o755),
        )?;
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
