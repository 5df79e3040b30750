//! A pool on separate hosts (issue 13): a coordinator and three stations,
//! each in a network namespace of its own (a veth pair into a switch
//! namespace holding a bridge, an address of its own) and a mount
//! namespace of its own (its own `/etc/gleaner`, `/var/lib/gleaner` and
//! `/run/gleaner`, bind-mounted from a private directory), all real
//! `glean` processes, enrolled as an administrator would: `glean pool
//! init`, `glean token create --station`, `glean station join`, `glean
//! user add`. TLS on every connection.
//!
//! - Two Unix users submit from two stations (one over TLS with the
//!   client directory `glean user add` made, one on its station's user
//!   socket): 30 jobs with input and output files complete, and their
//!   outputs are right.
//! - A partition of the host running a self-checkpointing job, shorter
//!   than the lease: the job stays where it is and its output is that of
//!   an undisturbed run. Longer than the lease: it restarts on another
//!   host from its last checkpoint, output identical again.
//! - A plain-text client against a TLS daemon is refused, and nothing
//!   changes.
//!
//! Stations run with `cgroups = "off"`: `ip netns exec` remounts `/sys`,
//! so the cgroup hierarchies are not mounted in these namespaces. Guests
//! still run as slot accounts in their own PID and mount namespaces.
//!
//! Needs root (namespaces, accounts); prints why and passes otherwise.
//! Everything it makes carries the prefix `gltls-` and is removed at the
//! end, even on failure, and at the start if a killed run left it.

mod common;
mod fault_pool;

use common::glean_bin;
use fault_pool::{EVERY, STEPS, redone_steps, reference_run, serial_lock};
use gleaner_proto::api::JobDetail;
use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_station::client::{JobQuery, StationClient};
use gleaner_testkit::TestUser;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Names of namespaces and links start so.
const PREFIX: &str = "gltls";
const SUBNET: &str = "10.231.7";
/// Lease between homes and hosts, seconds.
const LEASE: u64 = 4;
const HOSTS: [&str; 3] = ["h1", "h2", "h3"];
/// Seconds a step of the partition job takes (80 steps: 8 s of work, so
/// that a partition falls in the middle of it).
const STEP_SECS: &str = "0.1";
/// The whole test's bound.
const DEADLINE: Duration = Duration::from_secs(240);
/// Standard paths each host has to itself.
const PRIVATE: [(&str, &str); 3] = [
    ("etc", "/etc/gleaner"),
    ("var", "/var/lib/gleaner"),
    ("run", "/run/gleaner"),
];
/// A file left in each standard path on the real host while the test
/// runs. Another test that removes an empty `/var/lib/gleaner` (a root
/// `glean up`'s cleanup) would otherwise succeed, and removing a directory
/// detaches whatever other mount namespaces have mounted on it: the
/// hosts' private directories would vanish under their daemons.
const GUARD: &str = ".gltls-in-use";

fn ns(host: &str) -> String {
    format!("{PREFIX}-{host}")
}

fn ip_of(host: &str) -> String {
    let n = match host {
        "c" => 10,
        h => 10 + h.trim_start_matches('h').parse::<u32>().unwrap(),
    };
    format!("{SUBNET}.{n}")
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn ip(args: &[&str]) {
    run(Command::new("ip").args(args));
}

/// Removes every namespace of this test (and kills what runs in them),
/// and the mount points it made.
fn cleanup(made_dirs: &[PathBuf]) {
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    for line in String::from_utf8_lossy(&list.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if !name.starts_with(&format!("{PREFIX}-")) {
            continue;
        }
        let pids = Command::new("ip")
            .args(["netns", "pids", name])
            .output()
            .unwrap();
        for pid in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
        let _ = Command::new("ip").args(["netns", "del", name]).status();
    }
    for (_, at) in PRIVATE {
        let _ = std::fs::remove_file(Path::new(at).join(GUARD));
    }
    for d in made_dirs {
        let _ = std::fs::remove_dir(d);
    }
}

/// The test's network and hosts; removed on drop.
struct Net {
    root: tempfile::TempDir,
    made_dirs: Vec<PathBuf>,
    daemons: Vec<(String, Child)>,
    /// Directories outside `root` removed with everything in them.
    remove_at_end: Vec<PathBuf>,
}

impl Drop for Net {
    fn drop(&mut self) {
        for (_, c) in &mut self.daemons {
            common::stop_term(c);
        }
        cleanup(&self.made_dirs);
        for d in &self.remove_at_end {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl Net {
    fn build() -> Net {
        cleanup(&[]);
        let root = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut made_dirs = Vec::new();
        for (_, at) in PRIVATE {
            if !Path::new(at).exists() {
                std::fs::create_dir_all(at).unwrap();
                made_dirs.push(PathBuf::from(at));
            }
            std::fs::write(Path::new(at).join(GUARD), b"").unwrap();
        }
        let net = Net {
            root,
            made_dirs,
            daemons: Vec::new(),
            remove_at_end: Vec::new(),
        };
        let sw = ns("sw");
        ip(&["netns", "add", &sw]);
        ip(&["-n", &sw, "link", "set", "lo", "up"]);
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &sw, "link", "set", "br0", "up"]);
        for host in ["c"].into_iter().chain(HOSTS) {
            let n = ns(host);
            let (a, b) = (format!("{PREFIX}-{host}a"), format!("{PREFIX}-{host}b"));
            ip(&["netns", "add", &n]);
            ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]);
            ip(&["link", "set", &a, "netns", &n]);
            ip(&["link", "set", &b, "netns", &sw]);
            ip(&["-n", &sw, "link", "set", &b, "master", "br0", "up"]);
            ip(&["-n", &n, "link", "set", "lo", "up"]);
            ip(&[
                "-n",
                &n,
                "addr",
                "add",
                &format!("{}/24", ip_of(host)),
                "dev",
                &a,
            ]);
            ip(&["-n", &n, "link", "set", &a, "up"]);
            for (sub, _) in PRIVATE {
                let d = net.dir(host).join(sub);
                std::fs::create_dir_all(&d).unwrap();
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        net
    }

    fn dir(&self, host: &str) -> PathBuf {
        self.root.path().join(host)
    }

    /// `program args` on `host`: in its network namespace and a mount
    /// namespace of its own where its private directories are the
    /// standard paths.
    fn on(&self, host: &str, program: &Path, args: &[&str]) -> Command {
        let mut script = String::from("set -e; ");
        for (sub, at) in PRIVATE {
            script.push_str(&format!(
                "mount --bind '{}' '{at}'; ",
                self.dir(host).join(sub).display()
            ));
        }
        script.push_str("exec \"$@\"");
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &ns(host),
            "unshare",
            "--mount",
            "--propagation",
            "private",
        ])
        .args(["sh", "-c", &script, "sh"])
        .arg(program)
        .args(args);
        c
    }

    fn glean(&self, host: &str, args: &[&str]) -> Output {
        run(&mut self.on(host, &glean_bin(), args))
    }

    fn spawn(&mut self, host: &str, args: &[&str]) {
        let log = std::fs::File::create(self.dir(host).join("daemon.log")).unwrap();
        let child = self
            .on(host, &glean_bin(), args)
            .env("GLEAN_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.daemons.push((host.to_string(), child));
    }

    /// Cuts or heals `host`'s link to the switch.
    fn link(&self, host: &str, up: bool) {
        let b = format!("{PREFIX}-{host}b");
        ip(&[
            "-n",
            &ns("sw"),
            "link",
            "set",
            &b,
            if up { "up" } else { "down" },
        ]);
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for h in ["c"].into_iter().chain(HOSTS) {
            let text = std::fs::read_to_string(self.dir(h).join("daemon.log")).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            s.push_str(&format!("--- {h}\n"));
            for l in tail.into_iter().rev() {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    }

    /// The station `host`'s user socket, as seen from outside its mount
    /// namespace.
    fn socket(&self, host: &str) -> PathBuf {
        self.dir(host).join("run").join(format!("{host}.sock"))
    }
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Waits for `cond`, up to `secs`.
fn wait_for(what: &str, secs: u64, net: &Net, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            Instant::now() < end,
            "timed out waiting for {what}\n{}",
            net.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn details(rt: &tokio::runtime::Runtime, c: &StationClient) -> Vec<JobDetail> {
    rt.block_on(async {
        let jobs = c
            .jobs(&JobQuery {
                all: true,
                ..Default::default()
            })
            .await
            .unwrap_or_default();
        let mut out = Vec::new();
        for j in jobs {
            if let Ok(d) = c.job(&j.id.to_string()).await {
                out.push(d);
            }
        }
        out
    })
}

const JOB_SH: &str =
    "#!/bin/sh\nset -e\nsleep 1\ntr a-z A-Z < in_$1.txt > out_$1.txt\necho \"done $1\"\n";

/// A user's work directory with the job and its 15 inputs.
fn work_dir(user: &TestUser, tag: &str) -> PathBuf {
    let w = user.home().join("work");
    std::fs::create_dir_all(&w).unwrap();
    std::fs::write(w.join("job.sh"), JOB_SH).unwrap();
    std::fs::set_permissions(w.join("job.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    for p in 0..15 {
        std::fs::write(w.join(format!("in_{p}.txt")), format!("{tag} input {p}\n")).unwrap();
    }
    std::fs::write(
        w.join("job.sub"),
        "executable = job.sh\narguments = $(Process)\ntransfer_input_files = in_$(Process).txt\n\
         transfer_output_files = out_$(Process).txt\noutput = stdout_$(Process).txt\n\
         error = stderr_$(Process).txt\nlog = jobs.log\nqueue 15\n",
    )
    .unwrap();
    run(Command::new("chown")
        .args(["-R", &format!("{}:{}", user.uid(), user.gid())])
        .arg(&w));
    w
}

#[test]
fn a_pool_on_separate_hosts_with_tls() {
    if gleaner_testkit::skip_unless_root("network namespaces and Unix accounts") {
        return;
    }
    let _serial = serial_lock();
    let started = Instant::now();
    let mut net = Net::build();

    // The coordinator's host: pool init, tokens, users.
    let init = net.glean(
        "c",
        &["pool", "init", "--name", "lab", "--address", &ip_of("c")],
    );
    println!("{}", text(&init));
    let ccfg = net.dir("c").join("etc/coordinator.toml");
    let body = std::fs::read_to_string(&ccfg).unwrap();
    std::fs::write(
        &ccfg,
        format!(
            "scheduling_interval_secs = 0.5\nadvertise_period_secs = 1\nstartup_grace_secs = 0.0\n{body}"
        ),
    )
    .unwrap();
    net.spawn(
        "c",
        &["coordinator", "--config", "/etc/gleaner/coordinator.toml"],
    );
    let url = format!("https://{}:9618", ip_of("c"));
    let mut join_tokens = BTreeMap::new();
    for h in HOSTS {
        let t = net.glean(
            "c",
            &[
                "token",
                "create",
                "--config",
                "/etc/gleaner/coordinator.toml",
                "--station",
                h,
            ],
        );
        join_tokens.insert(h, text(&t));
    }
    // Each station joins from its own host, with defaults everywhere but
    // the test's timings and slot accounts.
    let extra = format!(
        "advertise_secs = 1\nplacement_interval_secs = 0.0\nlease_secs = {LEASE}.0\ncpus = 2\n\
         avoid_host_secs = 120.0\ncheckpoint_grace_secs = 5.0\n"
    );
    // The partition job's progress log (below) is written by guests
    // outside their sandboxes: each station shows them its directory.
    let shared = PathBuf::from(format!("/var/lib/{PREFIX}-shared-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&shared);
    std::fs::create_dir_all(&shared).unwrap();
    net.remove_at_end.push(shared.clone());
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    for h in HOSTS {
        let tables = format!(
            "[isolation]\ncgroups = \"off\"\nslot_prefix = \"{}\"\nexpose = [\"{}:rw\"]\n",
            gleaner_testkit::slot_prefix(),
            shared.display()
        );
        let out = net.glean(
            h,
            &[
                "station",
                "join",
                &url,
                "--token",
                &join_tokens[h],
                "--name",
                h,
                "--extra",
                &extra,
                "--tables",
                &tables,
            ],
        );
        println!("{}", text(&out));
        // The same token again: refused, nothing written.
        let again = net
            .on(
                h,
                &glean_bin(),
                &[
                    "station",
                    "join",
                    &url,
                    "--token",
                    &join_tokens[h],
                    "--name",
                    h,
                    "--config",
                    "/etc/gleaner/again.toml",
                ],
            )
            .output()
            .unwrap();
        assert!(!again.status.success());
        assert!(
            String::from_utf8_lossy(&again.stderr).contains("used already"),
            "{again:?}"
        );
        assert!(!net.dir(h).join("etc/again.toml").exists());
        net.spawn(h, &["station", "--config", "/etc/gleaner/station.toml"]);
    }
    let enrolled = started.elapsed();

    // Two users: alice on h1 over TLS with `glean user add`'s directory,
    // bob on h2's user socket.
    let alice = TestUser::create("gltlsa").unwrap();
    let bob = TestUser::create("gltlsb").unwrap();
    let client_dir = format!("/etc/gleaner/{}.glean", alice.name());
    net.glean(
        "c",
        &[
            "user",
            "add",
            alice.name(),
            "--station",
            &format!("https://{}:9620", ip_of("h1")),
            "--config",
            "/etc/gleaner/coordinator.toml",
            "--out",
            &client_dir,
        ],
    );
    let alice_home = alice.home().join(".glean");
    std::fs::create_dir_all(&alice_home).unwrap();
    for f in ["pool.toml", "pool-ca.pem", "token"] {
        std::fs::copy(
            net.dir("c")
                .join("etc")
                .join(format!("{}.glean", alice.name()))
                .join(f),
            alice_home.join(f),
        )
        .unwrap();
    }
    run(Command::new("chown")
        .args(["-R", &format!("{}:{}", alice.uid(), alice.gid())])
        .arg(&alice_home));
    let alice_work = work_dir(&alice, "alice");
    let bob_work = work_dir(&bob, "bob");
    let h1 = StationClient::unix(net.socket("h1")).unwrap();
    let h2 = StationClient::unix(net.socket("h2")).unwrap();
    let rt = rt();
    wait_for("the stations to answer on their sockets", 30, &net, || {
        rt.block_on(h1.jobs(&Default::default())).is_ok()
            && rt.block_on(h2.jobs(&Default::default())).is_ok()
    });
    // alice: `glean submit` run as alice on h1, over TLS.
    let mut sub = Command::new("ip");
    sub.args(["netns", "exec", &ns("h1"), "setpriv"])
        .arg(format!("--reuid={}", alice.uid()))
        .arg(format!("--regid={}", alice.gid()))
        .args(["--init-groups", "--"])
        .arg(glean_bin())
        .args(["submit", "job.sub"])
        .env("GLEAN_HOME", &alice_home)
        .env("HOME", alice.home())
        .current_dir(&alice_work);
    println!("alice: {}", text(&run(&mut sub)));
    // bob: on h2's user socket.
    let out = run(bob
        .command(glean_bin())
        .args(["submit", "job.sub", "--station"])
        .arg(format!("unix:{}", net.socket("h2").display()))
        .current_dir(&bob_work));
    println!("bob: {}", text(&out));
    let submitted = Instant::now();
    let end = Instant::now() + Duration::from_secs(150);
    let done = loop {
        let mut done = details(&rt, &h1);
        done.extend(details(&rt, &h2));
        if done.len() == 30
            && done
                .iter()
                .all(|d| matches!(d.job.state, JobState::Completed { .. }))
        {
            break done;
        }
        if Instant::now() > end {
            let mut why = String::new();
            for d in done
                .iter()
                .filter(|d| !matches!(d.job.state, JobState::Completed { .. }))
            {
                why.push_str(&format!(
                    "{} {} {:?}: {:#?}\n",
                    d.job.owner, d.job.id, d.job.state, d.events
                ));
                for w in [&alice_work, &bob_work] {
                    let p = w.join(format!("stderr_{}.txt", d.job.id.proc));
                    why.push_str(&format!(
                        "{}: {:?}\n",
                        p.display(),
                        std::fs::read_to_string(&p)
                    ));
                }
            }
            panic!("30 jobs did not complete:\n{why}\n{}", net.logs());
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let jobs_secs = submitted.elapsed().as_secs_f64();
    let mut hosts_used = BTreeSet::new();
    for d in &done {
        assert_eq!(
            d.job.state,
            JobState::Completed { exit_code: 0 },
            "{:#?}",
            d.events
        );
        hosts_used.insert(d.job.host.clone().unwrap_or_default());
    }
    for (user, work, tag) in [(&alice, &alice_work, "alice"), (&bob, &bob_work, "bob")] {
        for p in 0..15 {
            let out = work.join(format!("out_{p}.txt"));
            let got = std::fs::read_to_string(&out).unwrap();
            assert_eq!(got, format!("{tag} input {p}\n").to_uppercase());
            let meta = std::fs::metadata(&out).unwrap();
            use std::os::unix::fs::MetadataExt;
            assert_eq!((meta.uid(), meta.gid()), (user.uid(), user.gid()));
            assert_eq!(
                std::fs::read_to_string(work.join(format!("stdout_{p}.txt"))).unwrap(),
                format!("done {p}\n")
            );
        }
    }
    assert!(hosts_used.len() >= 2, "jobs ran on {hosts_used:?} only");

    // A plain-text client against TLS daemons: refused, nothing changes.
    let before = details(&rt, &h1).len();
    let mut raw = String::new();
    // Retried: one full-suite run saw three empty answers in a row (the
    // connection closed with nothing said); the logs below say why if it
    // happens again.
    for _ in 0..10 {
        let o = net
            .on("c", Path::new("/bin/bash"), &[
                "-c",
                &format!(
                    "exec 3<>/dev/tcp/{}/9620; printf 'POST /v1/jobs HTTP/1.1\\r\\nHost: h1\\r\\nContent-Length: 2\\r\\n\\r\\n{{}}' >&3; timeout 5 cat <&3",
                    ip_of("h1")
                ),
            ])
            .output()
            .unwrap();
        raw = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        if raw.starts_with("HTTP/1.1 400") {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        raw.starts_with("HTTP/1.1 400") && raw.contains("HTTPS only"),
        "plain-text probe answered {raw:?}\n{}",
        net.logs()
    );
    let plain = net
        .on(
            "h1",
            &glean_bin(),
            &[
                "q",
                "--station",
                &format!("http://{}:9618", ip_of("c")),
                "--token",
                "/etc/gleaner/station.token",
            ],
        )
        .output()
        .unwrap();
    assert!(!plain.status.success());
    assert!(
        String::from_utf8_lossy(&plain.stderr).contains("only on loopback"),
        "{plain:?}"
    );
    assert_eq!(details(&rt, &h1).len(), before);

    // Partitions, with a self-checkpointing job of alice's on h2 or h3.
    // The job's progress log, outside its sandbox where every host's
    // guests may write it (the user's home is closed to them), in the
    // directory the stations expose (`[isolation] expose`): a guest sees
    // nothing else of its host, and the test would never see its
    // progress ("timed out waiting for the partition job to run").
    let progress = shared.join("progress.log");
    std::fs::copy(
        fault_pool::repo_root().join("examples/jobs/selfckpt.sh"),
        alice_work.join("selfckpt.sh"),
    )
    .unwrap();
    run(Command::new("chown")
        .arg(format!("{}:{}", alice.uid(), alice.gid()))
        .arg(alice_work.join("selfckpt.sh")));
    let (ref_out, ref_result) = reference_run();
    let mut outcomes = Vec::new();
    for (k, cut_secs) in [(0, LEASE / 2), (1, 2 * LEASE + 2)] {
        std::fs::write(&progress, "").unwrap();
        std::fs::set_permissions(&progress, std::fs::Permissions::from_mode(0o666)).unwrap();
        let sub = format!(
            "executable = selfckpt.sh\narguments = {STEPS} {EVERY} {STEP_SECS}\n\
             requirements = TARGET.Machine != \"h1\"\ncheckpoint_exit_code = 85\n\
             transfer_checkpoint_files = selfckpt.state\ntransfer_output_files = selfckpt.result\n\
             output = p{k}.out\nerror = p{k}.err\nlog = p.log\n\
             environment = \"SELFCKPT_PROGRESS={}\"\nqueue\n",
            progress.display()
        );
        std::fs::write(alice_work.join(format!("p{k}.sub")), sub).unwrap();
        let out = run(alice
            .command(glean_bin())
            .args(["submit", &format!("p{k}.sub"), "--station"])
            .arg(format!("unix:{}", net.socket("h1").display()))
            .current_dir(&alice_work));
        // "1 job(s) submitted to cluster N."
        let id = text(&out)
            .rsplit(' ')
            .next()
            .and_then(|w| w.trim_end_matches('.').parse::<u64>().ok())
            .map(|c| format!("{c}.0"))
            .unwrap_or_else(|| panic!("no job id in {:?}", text(&out)));
        let mut host = String::new();
        wait_for("the partition job to run", 60, &net, || {
            let d = rt.block_on(h1.job(&id));
            if let Ok(d) = d
                && d.job.state == JobState::Running
                && let Some(h) = d.job.host
            {
                host = h;
            }
            !host.is_empty()
                && std::fs::read_to_string(&progress)
                    .unwrap_or_default()
                    .lines()
                    .count()
                    >= (EVERY + EVERY / 2) as usize
        });
        net.link(&host, false);
        std::thread::sleep(Duration::from_secs(cut_secs));
        net.link(&host, true);
        let mut d = None;
        wait_for("the partition job to finish", 90, &net, || {
            d = rt
                .block_on(h1.job(&id))
                .ok()
                .filter(|d| matches!(d.job.state, JobState::Completed { .. }));
            d.is_some()
        });
        let d = d.unwrap();
        assert_eq!(
            d.job.state,
            JobState::Completed { exit_code: 0 },
            "{:#?}",
            d.events
        );
        assert_eq!(
            std::fs::read_to_string(alice_work.join(format!("p{k}.out"))).unwrap(),
            ref_out
        );
        assert_eq!(
            std::fs::read_to_string(alice_work.join("selfckpt.result")).unwrap(),
            ref_result
        );
        let evicted = d
            .events
            .iter()
            .filter(|e| e.kind == JobEventKind::Evicted)
            .count();
        let steps = fault_pool::progress_of(&progress);
        let ended = d.job.host.clone().unwrap_or_default();
        if k == 0 {
            // Shorter than the lease: rode it out where it was.
            assert_eq!(ended, host, "{:#?}", d.events);
            assert_eq!(evicted, 0, "{:#?}", d.events);
            assert!(redone_steps(&steps).is_empty(), "{steps:?}");
        } else {
            // Longer: restarted elsewhere from its last checkpoint.
            assert_ne!(ended, host, "{:#?}", d.events);
            assert!(
                d.events
                    .iter()
                    .any(|e| e.kind == JobEventKind::Evicted && e.detail.contains("lease expired")),
                "{:#?}",
                d.events
            );
            assert!(
                redone_steps(&steps).iter().all(|r| *r <= EVERY),
                "{steps:?}"
            );
        }
        outcomes.push(format!(
            "cut {cut_secs} s of {host}: ended on {ended}, evictions {evicted}, steps redone {:?}",
            redone_steps(&steps)
        ));
    }
    println!(
        "multihost_tls: enrolled coordinator + {} stations in {:.1} s; 30 jobs (2 users) in {jobs_secs:.1} s on {:?}; {}; total {:.1} s",
        HOSTS.len(),
        enrolled.as_secs_f64(),
        hosts_used,
        outcomes.join("; "),
        started.elapsed().as_secs_f64()
    );
    assert!(started.elapsed() < DEADLINE, "took {:?}", started.elapsed());
}
