//! Fault injection with real processes, without cgroups: a SIGKILL of the
//! executing station leaves its guest running, unsupervised (nothing kills
//! a process group when its parent dies). When the station starts again
//! with the same state directory it finds the guest through its record
//! (`host/guest_records.rs`) and kills it with its children; the home
//! reruns the job elsewhere after the lease, as before.

mod common;
mod fault_pool;
use fault_pool::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// The first run is long (an orphan would outlive the test by far), the
/// rerun short. Each run logs its shell's pid and a background child's,
/// and beats a heartbeat file of its own.
const GUEST: &str = r#"#!/bin/sh
dir="$1"
if mkdir "$dir/first-run" 2>/dev/null; then n=600; else n=10; fi
sleep 600 &
echo "$$ $!" >> "$dir/pids"
i=0
while [ $i -lt $n ]; do
  echo $i > "$dir/heartbeat.$$"
  i=$((i+1))
  sleep 0.1
done
kill $! 2>/dev/null
echo "done $n"
"#;

/// Does `pid` run (a zombie does not)?
fn alive(pid: u32) -> bool {
    gleaner_station::host::procs::proc_stat(pid as i32).is_some()
}

fn first_run_pids(work: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(work.join("pids")).ok()?;
    let mut it = text.lines().next()?.split_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

fn beat(work: &Path, pid: u32) -> Option<u32> {
    std::fs::read_to_string(work.join(format!("heartbeat.{pid}")))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Kills the orphan if the test fails before the station does.
struct Reap(u32, u32);
impl Drop for Reap {
    fn drop(&mut self) {
        for p in [self.0, self.1] {
            if alive(p) {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &p.to_string()])
                    .status();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_station_kills_the_guest_its_crash_orphaned() {
    // Without PID namespaces too, so that the pids the guest logs are the
    // host's (in a namespace its shell would log 1).
    let mut pool = Pool::start_with("[isolation]\nnamespaces = \"off\"\n").await;
    let work = pool.work.clone();
    std::fs::write(work.join("orphan.sh"), GUEST).unwrap();
    std::fs::set_permissions(
        work.join("orphan.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let text = format!(
        "executable = orphan.sh\narguments = {}\noutput = out.txt\nerror = err.txt\n\
         log = job.log\nqueue\n",
        work.display()
    );
    let id = pool.submit_text(&text).await;
    let host = pool.running_host(&id).await;

    // The guest runs and beats.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (shell, child) = loop {
        if let Some((s, c)) = first_run_pids(&work)
            && beat(&work, s).is_some()
        {
            break (s, c);
        }
        assert!(
            Instant::now() < deadline,
            "the guest never ran\n{}",
            pool.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    let _reap = Reap(shell, child);
    pool.hosts.get_mut(&host).unwrap().kill9();

    // The bug: nothing stops the guest when its station dies.
    let before = beat(&work, shell);
    let deadline = Instant::now() + Duration::from_secs(20);
    while beat(&work, shell) == before {
        assert!(
            Instant::now() < deadline,
            "the orphaned guest stopped beating by itself"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        alive(shell) && alive(child),
        "the guest died with its station"
    );

    // The station comes back with the same state directory.
    pool.hosts.get_mut(&host).unwrap().restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(shell) || alive(child) {
        assert!(
            Instant::now() < deadline,
            "the orphaned guest (pids {shell}, {child}) survived the restart\n{}",
            pool.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = std::fs::read_to_string(&pool.hosts[&host].log).unwrap();
    assert!(
        log.contains("killed a guest left running by a previous run"),
        "{log}"
    );

    // The job reruns elsewhere after the lease and completes as before.
    let d = pool.wait_done(&id).await;
    pool.assert_completed(&d);
    Pool::assert_left_after_lease(&d, &host);
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "done 10\n"
    );
}
