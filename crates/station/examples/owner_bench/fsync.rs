//! Section 6 of the owner bench: the owner's `fsync` latency while a guest
//! writes to the same disk flat out (issue 30, I/O).
//!
//! The owner writes 4 KiB and `fsync`s, every 20 ms, to a file in
//! `/var/tmp` (the disk, not a tmpfs); the bench reports the latency of
//! each `write`+`fsync`. The guest writes 1 MiB blocks without pause,
//! `fdatasync`ing every 64 MiB so that its data really goes to the disk,
//! and starts again at the file's start every 512 MiB. Three cases: no
//! guest; a guest with nothing done to it (best-effort I/O class, the
//! owner's cgroup); the guest as a station runs it: `IOPRIO_CLASS_IDLE`
//! that it cannot leave, the lowest I/O weight on its group, writing into
//! its loop-mounted sandbox.

use super::{Res, me, percentile};
use gleaner_station::isolation::{
    CgroupManager, Confinement, GuestLauncher, GuestSpec, RemoveOnDrop, SandboxDisks,
};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The owner: `write`+`fsync` of 4 KiB every 20 ms in `dir` for `secs`;
/// prints each latency in microseconds.
pub fn owner(dir: &Path, secs: f64) -> Res<()> {
    let path = dir.join("owner-fsync");
    let f = std::fs::File::create(&path)?;
    let block = vec![7u8; 4096];
    let start = Instant::now();
    let mut lat = Vec::new();
    let mut i = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        let t = Instant::now();
        f.write_at(&block, (i % 256) * 4096)?;
        f.sync_all()?;
        lat.push(t.elapsed().as_micros());
        i += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&path);
    let text: Vec<String> = lat.iter().map(u128::to_string).collect();
    println!("{}", text.join(" "));
    Ok(())
}

/// The guest: writes `dir/flood` flat out until killed.
pub fn writer(dir: &Path) -> Res<()> {
    let mut f = std::fs::File::create(dir.join("flood"))?;
    let block = vec![0x5au8; 1 << 20];
    let mut n = 0u64;
    loop {
        f.write_all(&block)?;
        n += 1;
        if n.is_multiple_of(64) {
            f.sync_data()?;
        }
        if n.is_multiple_of(512) {
            use std::io::Seek;
            f.rewind()?;
        }
    }
}

/// Bytes a process made the storage write (`/proc/PID/io`).
fn write_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("write_bytes: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// One case: the owner's latencies while `guest` (if any) writes; the
/// guest's write rate, MB/s.
fn measure(secs: f64, guest: Option<&mut Child>, owner_dir: &Path) -> Res<(Vec<f64>, f64)> {
    let before = guest.as_ref().map_or(0, |g| write_bytes(g.id()));
    let t = Instant::now();
    // Let the guest's writes reach the disk first.
    if guest.is_some() {
        std::thread::sleep(Duration::from_secs(2));
    }
    let o = Command::new(me())
        .args(["fsync", &owner_dir.display().to_string(), &secs.to_string()])
        .stdout(Stdio::piped())
        .spawn()?
        .wait_with_output()?;
    let rate = match guest {
        Some(g) => {
            let mb = write_bytes(g.id()).saturating_sub(before) as f64 / 1e6;
            let r = mb / t.elapsed().as_secs_f64();
            let _ = g.kill();
            let _ = g.wait();
            r
        }
        None => 0.0,
    };
    let v = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .filter_map(|x| x.parse::<f64>().ok())
        .map(|us| us / 1000.0)
        .collect();
    Ok((v, rate))
}

fn row(name: &str, mut v: Vec<f64>, rate: f64) -> String {
    let n = v.len();
    let p50 = percentile(&mut v, 0.5);
    let p99 = percentile(&mut v, 0.99);
    let max = percentile(&mut v, 1.0);
    let rate = if rate > 0.0 {
        format!("{rate:.0}")
    } else {
        "—".to_string()
    };
    format!("| {name} | {n} | {p50:.2} | {p99:.2} | {max:.2} | {rate} |\n")
}

/// The section's table. `cg`: the bench's guest cgroups (root), for the
/// guest's I/O weight.
pub fn section(cg: Option<&CgroupManager>, secs: f64) -> Res<String> {
    let owner_dir = tempfile::tempdir_in("/var/tmp")?;
    let guest_dir = tempfile::tempdir_in("/var/tmp")?;
    let mut out = String::from(
        "| guest | fsyncs | p50 (ms) | p99 (ms) | max (ms) | guest writes (MB/s) |\n\
         |---|---|---|---|---|---|\n",
    );
    let (v, _) = measure(secs, None, owner_dir.path())?;
    out += &row("none", v, 0.0);

    let mut plain = Command::new(me())
        .args(["writer", &guest_dir.path().display().to_string()])
        .spawn()?;
    let (v, rate) = measure(secs, Some(&mut plain), owner_dir.path())?;
    out += &row("writing flat out, nothing done to it", v, rate);

    // As a station runs it.
    let disks = SandboxDisks::for_station(Default::default())?;
    let sandbox = guest_dir.path().join("sandbox");
    let disk = disks.make(&sandbox, 2 * 1024 * 1024, None)?;
    let (group, weights) = match cg {
        Some(m) => {
            let g = RemoveOnDrop(m.create("fsync-guest")?);
            let n = g.set_io_lowest()?;
            (Some(g), n)
        }
        None => (None, 0),
    };
    let spec = GuestSpec::new(me(), &sandbox)
        .arg("writer")
        .arg(sandbox.display().to_string());
    let mut guest =
        GuestLauncher::new().spawn_confined(spec, group.as_deref(), &Confinement::new())?;
    let (v, rate) = measure(secs, Some(&mut guest.child), owner_dir.path())?;
    let how = format!(
        "as a station runs it: idle I/O class, lowest I/O weight{}, {} sandbox",
        if group.is_some() {
            format!(" ({weights} weight files)")
        } else {
            " (no cgroups: none)".to_string()
        },
        if disk.bounded() {
            "loop-mounted"
        } else {
            "plain"
        }
    );
    out += &row(&how, v, rate);
    drop(group);
    drop(disk);
    Ok(out)
}
