//! `glean up` restarts a daemon that dies (issue 13, item 3), tested with
//! real processes as the issue asks: while jobs run in a `glean up
//! --stations 3` pool, the coordinator and then each station are SIGKILLed
//! in turn. Each is started again (its log and `glean up`'s output say
//! so), `glean up` itself stays up, and every job completes exactly once:
//! each appends its id to a shared file as its last act (no id missing,
//! none twice) and its output comes back whole.
//!
//! A station is killed while its guests are in the middle of their runs
//! (each job logs when it starts). A guest dies with its station
//! (`fault_lifeline.rs`), and its job runs again. What is not covered: a
//! host killed in the moment between its guest's exit and the home's
//! record of the completion loses that completion, and the job runs again
//! (its outputs in the sandbox are not reported after the restart), so a
//! side effect outside the sandbox happens twice, as under HTCondor when a
//! starter dies then.

mod common;

use common::{TestOwner, free_base_port, glean_as, glean_bin};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Jobs in the cluster and how long each runs, seconds: three stations of
/// one node each run them in waves, so every kill lands while some run.
const JOBS: usize = 9;
const RUN_SECS: u32 = 8;

/// The job: logs its start (`$4`), runs, then appends its id to the
/// shared file and says so on its stdout. The append is its last act, so
/// a run cut short appends nothing and a duplicated run shows as a
/// doubled line.
const JOB: &str = r#"#!/bin/sh
echo "$1 $(date +%s.%N)" >> "$4"
sleep "$3"
echo "$1" >> "$2"
echo "job $1 done"
"#;

/// A guest this close to its end (seconds) is not in the middle of its
/// run: its station is not killed yet.
const END_MARGIN: f64 = 3.0;

/// The parent of process `pid`.
fn ppid(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))?
        .trim()
        .parse()
        .ok()
}

/// The pid of the daemon whose configuration is `config`, if one runs:
/// a child of `glean up` (`up`), not one of the daemon's own forks (a
/// guest's waiter has the daemon's command line).
fn daemon_pid(up: u32, config: &Path) -> Option<i32> {
    let want = config.to_string_lossy().into_owned();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        if ppid(pid)? != up {
            return None;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<String> = cmd
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        (args.iter().any(|a| a == "--config") && args.contains(&want)).then_some(pid)
    })
}

/// SIGKILLs the daemon of `config` and waits for its replacement to accept
/// connections on `port`; how long that took.
fn kill_and_wait_restart(up: u32, config: &Path, port: u16) -> Duration {
    let old = daemon_pid(up, config).expect("daemon running");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let t = Instant::now();
    loop {
        if let Some(new) = daemon_pid(up, config)
            && new != old
            && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{} not started again",
            config.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Each job's latest start (UNIX seconds), from the jobs' start log.
fn starts(log: &Path) -> BTreeMap<String, f64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (id, t) = l.split_once(' ')?;
            Some((id.to_string(), t.parse().ok()?))
        })
        .collect()
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The running jobs' hosts, by job id.
fn hosts(owner: &TestOwner, home: &Path, work: &Path) -> BTreeMap<String, String> {
    let out = glean_as(owner, home, work, &["q", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|j| j["state"]["state"] == "running" || j["state"] == "running")
        .filter_map(|j| Some((j["id"].as_str()?.into(), j["host"].as_str()?.into())))
        .collect()
}

/// `glean history --json` and `glean q --json` of the owner, by job id:
/// (state, run count).
fn jobs(owner: &TestOwner, home: &Path, work: &Path) -> BTreeMap<String, (String, u64)> {
    let mut all = BTreeMap::new();
    for cmd in ["q", "history"] {
        let out = glean_as(owner, home, work, &[cmd, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        for j in v.as_array().into_iter().flatten() {
            let state = j["state"]["state"]
                .as_str()
                .or(j["state"].as_str())
                .unwrap_or("?")
                .to_string();
            let id = j["id"].as_str().unwrap_or("?").to_string();
            all.insert(id, (state, j["run_count"].as_u64().unwrap_or(0)));
        }
    }
    all
}

/// `glean up` with GLEAN_HOME=home, its stderr (where it reports deaths
/// and restarts) in `stderr`; SIGINT (Ctrl-C) and reaped on drop.
struct Up(std::process::Child);
impl Drop for Up {
    fn drop(&mut self) {
        common::stop_child(
            &mut self.0,
            "-INT",
            Duration::from_secs(15),
            Duration::from_millis(100),
        );
    }
}

#[test]
fn each_daemon_killed_in_turn_is_restarted_and_every_job_completes_exactly_once() {
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let owner = TestOwner::new("supervised").unwrap();
    owner.dir(&work).unwrap();
    // Guests run as slot accounts: the work directory and the shared file
    // are theirs to reach and append to.
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    let shared = work.join("done.txt");
    let started_log = work.join("started.txt");
    for f in [&shared, &started_log] {
        std::fs::write(f, "").unwrap();
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    std::fs::write(work.join("job.sh"), JOB).unwrap();
    std::fs::set_permissions(work.join("job.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();

    let port = free_base_port(6);
    gleaner_testkit::reachable(&home).unwrap();
    let up_err = tmp.path().join("up.stderr");
    // Guests have roots of their own: the pool shows them the work
    // directory, as an owner would a shared one.
    let expose = format!("{}:rw", work.display());
    let mut pool = Up(Command::new(glean_bin())
        .args(["up", "--stations", "3", "--interval", "1"])
        .args(["--expose", &expose])
        .args(["--port", &port.to_string()])
        .env("GLEAN_HOME", &home)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&up_err).unwrap())
        .spawn()
        .unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !home.join("pool.toml").exists() {
        assert!(
            pool.0.try_wait().unwrap().is_none(),
            "glean up exited: {}",
            std::fs::read_to_string(&up_err).unwrap_or_default()
        );
        assert!(Instant::now() < deadline, "pool did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }

    std::fs::write(
        work.join("job.sub"),
        format!(
            "executable = job.sh\narguments = $(Cluster).$(Process) {} {RUN_SECS} {}\n\
             output = out.$(Process)\nerror = err.$(Process)\nqueue {JOBS}\n",
            shared.display(),
            started_log.display()
        ),
    )
    .unwrap();
    let out = glean_as(&owner, &home, &work, &["submit", "job.sub"]);
    assert!(out.status.success(), "submit: {out:?}");
    let started = Instant::now();

    // Kill only once jobs run, so that each kill lands in the middle of work.
    let running = |min: usize| {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let n = jobs(&owner, &home, &work)
                .values()
                .filter(|(s, _)| s == "running")
                .count();
            if n >= min {
                return;
            }
            assert!(Instant::now() < deadline, "fewer than {min} jobs running");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    running(2);
    let daemons = [
        (
            "coordinator",
            home.join("coordinator/coordinator.toml"),
            port,
        ),
        (
            "station0",
            home.join("stations/station0/station.toml"),
            port + 2,
        ),
        (
            "station1",
            home.join("stations/station1/station.toml"),
            port + 3,
        ),
        (
            "station2",
            home.join("stations/station2/station.toml"),
            port + 4,
        ),
    ];
    let up = pool.0.id();
    for (name, config, port) in &daemons {
        running(1);
        // A station only while each of its guests is mid-run.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let t = starts(&started_log);
            let now = unix_now();
            let on_it: Vec<(String, f64)> = hosts(&owner, &home, &work)
                .into_iter()
                .filter(|(_, host)| host == name)
                .map(|(id, _)| {
                    let age = t.get(&id).map_or(0.0, |s| now - s);
                    (id, age)
                })
                .collect();
            if on_it
                .iter()
                .all(|(_, age)| *age <= f64::from(RUN_SECS) - END_MARGIN)
            {
                eprintln!("{name}: its guests' ages (s) when killed: {on_it:?}");
                break;
            }
            assert!(Instant::now() < deadline, "{name}'s guests never mid-run");
            std::thread::sleep(Duration::from_millis(100));
        }
        let took = kill_and_wait_restart(up, config, *port);
        eprintln!(
            "{name} killed at {:.1} s, serving again after {:.1} s",
            started.elapsed().as_secs_f64(),
            took.as_secs_f64()
        );
        assert!(pool.0.try_wait().unwrap().is_none(), "glean up stopped");
        // The next kill at another point of the jobs' runs.
        std::thread::sleep(Duration::from_secs(3));
    }

    // Every job completes, each once.
    let deadline = Instant::now() + Duration::from_secs(400);
    let finished = loop {
        let all = jobs(&owner, &home, &work);
        let done = all.values().filter(|(s, _)| s == "completed").count();
        if done == JOBS {
            break all;
        }
        assert!(
            Instant::now() < deadline,
            "jobs not all completed: {all:?}\n{}",
            std::fs::read_to_string(&up_err).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!(
        "all {JOBS} jobs completed {:.1} s after submission; runs per job: {:?}",
        started.elapsed().as_secs_f64(),
        finished.values().map(|(_, r)| r).collect::<Vec<_>>()
    );
    let mut lines: Vec<String> = std::fs::read_to_string(&shared)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    let want: Vec<String> = finished.keys().cloned().collect();
    assert_eq!(lines, want, "each job's line exactly once: {finished:?}");
    for id in finished.keys() {
        let proc = id.rsplit('.').next().unwrap();
        let out = std::fs::read_to_string(work.join(format!("out.{proc}"))).unwrap_or_default();
        assert_eq!(out, format!("job {id} done\n"), "output of {id}");
    }

    // Each daemon was seen to die and started again, in its own log and on
    // `glean up`'s output; `glean up` never stopped.
    let said = std::fs::read_to_string(&up_err).unwrap();
    for (name, config, _) in &daemons {
        let dir = config.parent().unwrap();
        let log = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .find(|e| e.path().extension().is_some_and(|x| x == "log"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .unwrap_or_default();
        for line in [format!("{name} exited"), format!("{name} started again")] {
            assert!(log.contains(&format!("glean up: {line}")), "{name}: {log}");
            assert!(said.contains(&format!("glean up: {line}")), "{said}");
        }
    }
    assert!(pool.0.try_wait().unwrap().is_none(), "glean up stopped");
}
