//! `glean up` restarts a daemon that dies (issue 13, item 3): with real
//! processes, the coordinator and the home station are SIGKILLed one after
//! the other; each is started again with its state, `glean up` stays up
//! and says so, and the pool then runs new jobs to completion.

mod common;

use common::{TestOwner, free_base_port, glean_as, up, wait_pool_up};
use std::path::Path;
use std::time::{Duration, Instant};

/// The pid of the daemon whose configuration is `config`, if one runs.
fn daemon_pid(config: &Path) -> Option<i32> {
    let want = config.to_string_lossy().into_owned();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<String> = cmd
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        (args.iter().any(|a| a == "--config") && args.contains(&want)).then_some(pid)
    })
}

/// SIGKILLs the daemon of `config` and waits for its replacement.
fn kill_and_wait_restart(config: &Path) -> Duration {
    let old = daemon_pid(config).expect("daemon running");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let t = Instant::now();
    loop {
        if let Some(new) = daemon_pid(config)
            && new != old
        {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{} not started again",
            config.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn killed_daemons_are_started_again_and_the_pool_keeps_running_jobs() {
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let owner = TestOwner::new("supervised").unwrap();
    owner.dir(&work).unwrap();
    let mut pool = up(&home, 2, free_base_port(5), None);
    wait_pool_up(&home);

    let coordinator = home.join("coordinator/coordinator.toml");
    let station0 = home.join("stations/station0/station.toml");
    let after_coord = kill_and_wait_restart(&coordinator);
    let after_home = kill_and_wait_restart(&station0);
    eprintln!(
        "coordinator started again after {:.1} s, home station after {:.1} s",
        after_coord.as_secs_f64(),
        after_home.as_secs_f64()
    );
    assert!(pool.0.try_wait().unwrap().is_none(), "glean up stopped");

    // The restarted home takes submissions on its socket again, and the
    // pool runs them.
    std::fs::write(work.join("job.sub"), "executable = /bin/true\nqueue 4\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = glean_as(&owner, &home, &work, &["submit", "job.sub"]);
        if out.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "submit refused: {out:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = glean_as(&owner, &home, &work, &["history", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let done = v.as_array().map_or(0, |a| {
            a.iter()
                .filter(|j| j["state"]["state"] == "completed" || j["state"] == "completed")
                .count()
        });
        if done >= 4 {
            break;
        }
        assert!(Instant::now() < deadline, "jobs not completed: {v}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let log = std::fs::read_to_string(home.join("stations/station0/station.log")).unwrap();
    assert!(log.contains("glean up: station0 exited"), "{log}");
    assert!(log.contains("glean up: station0 started again"), "{log}");
    assert!(pool.0.try_wait().unwrap().is_none(), "glean up stopped");
}
