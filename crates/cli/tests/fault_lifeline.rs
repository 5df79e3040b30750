//! Fault injection with real processes, with the station's default
//! confinement (the guest in PID and mount namespaces of its own): a
//! SIGKILL of the executing station takes its guest with it at once,
//! through the waiter's lifeline (`isolation/launch.rs`), rather than
//! leaving it to run unsupervised until the station starts again. Found
//! by `up_supervision.rs`: a guest that finished while its station was
//! down had done its work once, and its requeued job did it again. The
//! home reruns the job elsewhere after the lease, as before.

mod common;
mod fault_pool;
use fault_pool::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// The first run is long, the rerun short; each beats a heartbeat file
/// named after its run ($$ is 1 inside the namespace).
const GUEST: &str = r#"#!/bin/sh
dir="$1"
if mkdir "$dir/first-run" 2>/dev/null; then n=600; run=first; else n=10; run=rerun; fi
i=0
while [ $i -lt $n ]; do
  echo $i > "$dir/heartbeat.$run"
  i=$((i+1))
  sleep 0.1
done
echo "done $n"
"#;

fn beat(work: &Path) -> Option<u32> {
    std::fs::read_to_string(work.join("heartbeat.first"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Processes of the guest's shell, seen from the host: its script (run
/// from the sandbox) with `work` as its argument.
fn running(work: &Path) -> Vec<i32> {
    let want = work.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            gleaner_station::host::procs::proc_stat(pid)?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd);
            (cmd.contains("lifeline.sh") && cmd.contains(&want)).then_some(pid)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_station_takes_its_namespaced_guest_with_it() {
    let mut pool = Pool::start().await;
    let work = pool.work.clone();
    let script = work.join("lifeline.sh");
    std::fs::write(&script, GUEST).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = format!(
        "executable = lifeline.sh\narguments = {}\noutput = out.txt\nerror = err.txt\nqueue\n",
        work.display()
    );
    let id = pool.submit_text(&text).await;
    let host = pool.running_host(&id).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while beat(&work).is_none() || running(&work).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the guest never ran\n{}",
            pool.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let killed = Instant::now();
    pool.hosts.get_mut(&host).unwrap().kill9();
    // Gone within moments, the station not yet restarted.
    let deadline = killed + Duration::from_secs(5);
    while !running(&work).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the guest outlived its station: {:?}",
            running(&work)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let gone = killed.elapsed();
    let last = beat(&work);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(beat(&work), last, "the guest still beats");
    eprintln!(
        "guest gone {:.0} ms after its station's SIGKILL",
        gone.as_secs_f64() * 1000.0
    );

    // The job reruns elsewhere after the lease and completes.
    let d = pool.wait_done(&id).await;
    pool.assert_completed(&d);
    Pool::assert_left_after_lease(&d, &host);
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "done 10\n"
    );
}
