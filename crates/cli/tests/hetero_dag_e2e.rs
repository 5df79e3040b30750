//! Issue #7's end-to-end test: a personal pool of separate real processes
//! (`glean coordinator` with a licence limit of 2, a submit-only home
//! `glean station` and three execute stations that advertise different
//! memory, custom attributes and START policies) runs a 20-node DAG whose
//! nodes only some stations may take. While it runs, a sampler reads the
//! home station's queue (`glean q --json`: the host of each running job)
//! and the coordinator's host listing (`GET /v1/ads`): every job runs only
//! where allowed and never more than 2 licensed jobs run at once. The
//! guests themselves record when and where (their sandbox path) they ran,
//! so the licence limit and the placements are also checked from the
//! guests' side, and the DAG's dependency order from its timestamps.

mod common;
mod dag_common;

use common::{Daemons, UserDirs, free_port, glean_in, shared_dir, socket_line, spawn};
use dag_common::{TWENTY_NODE_EDGES, assert_dependency_order};
use gleaner_coordinator::matchmaker::AdsView;
use gleaner_proto::api::JobInfo;
use gleaner_proto::job::JobState;
use gleaner_station::client::StationClient;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The three execute stations: name, memory (MiB), `[attrs]`, `[policy]`.
/// big has everything; small has the licensed program but little memory;
/// plain has memory but not the program, and its owner only takes
/// memory-hungry jobs.
const STATIONS: [(&str, u64, &str, &str); 3] = [
    ("big", 8192, "HasMatlab = \"true\"\nSite = '\"lab\"'\n", ""),
    (
        "small",
        1024,
        "HasMatlab = \"true\"\nSite = '\"office\"'\n",
        "",
    ),
    (
        "plain",
        8192,
        "Site = '\"lab\"'\n",
        "start = \"TARGET.RequestMemory >= 2048\"\n",
    ),
];

/// Node kinds: submit-file body (after the common lines), the number of
/// jobs it queues and the stations allowed to run them.
type Kind = (&'static str, u32, BTreeSet<&'static str>);

fn kinds() -> BTreeMap<&'static str, Kind> {
    const LIC: &str = "request_memory = 256\nrequirements = HasMatlab =?= true\n\
                       concurrency_limits = matlab\n";
    BTreeMap::from([
        // The licensed program: needs the attribute and a matlab licence.
        ("lic", (LIC, 1, BTreeSet::from(["big", "small"]))),
        // Three licensed jobs in one node: more licensed work ready at
        // once than the limit allows.
        ("lic3", (LIC, 3, BTreeSet::from(["big", "small"]))),
        // Licensed and memory-hungry: only big.
        (
            "biglic",
            (
                "request_memory = 3000\nrequirements = HasMatlab =?= true && Memory >= 3000\n\
                 concurrency_limits = MATLAB\n",
                1,
                BTreeSet::from(["big"]),
            ),
        ),
        // Memory-hungry at the lab: big or plain.
        (
            "hungry",
            (
                "request_memory = 3000\nrequirements = Site == \"lab\"\n",
                1,
                BTreeSet::from(["big", "plain"]),
            ),
        ),
        // Small and unconstrained, but plain's owner refuses small jobs.
        (
            "any",
            (
                "request_memory = 128\n",
                1,
                BTreeSet::from(["big", "small"]),
            ),
        ),
    ])
}

/// 20 nodes: r → a1..a4 → b1..b8 → c1..c4 → s1, s2 → z, with priority
/// chains a1 ⇢ a2 ⇢ a3 and b1 ⇢ b3, b5, b7. The kind of each node.
const NODES: [(&str, &str); 20] = [
    ("r", "any"),
    ("a1", "lic"),
    ("a2", "hungry"),
    ("a3", "hungry"),
    ("a4", "lic"),
    ("b1", "lic3"),
    ("b2", "lic"),
    ("b3", "hungry"),
    ("b4", "biglic"),
    ("b5", "any"),
    ("b6", "lic"),
    ("b7", "lic3"),
    ("b8", "lic"),
    ("c1", "lic"),
    ("c2", "biglic"),
    ("c3", "lic3"),
    ("c4", "lic"),
    ("s1", "any"),
    ("s2", "hungry"),
    ("z", "any"),
];

/// What the sampler saw.
#[derive(Default)]
struct Seen {
    samples: u32,
    peak_licensed: usize,
    running_seen: usize,
}

#[test]
fn heterogeneous_pool_runs_a_licensed_dag_where_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let user = UserDirs::new(tmp.path());
    let (home, work, keys) = (user.home.clone(), user.work.clone(), &user.keys);
    let pc = free_port();
    let coord_url = format!("http://127.0.0.1:{pc}");

    // Short periods keep the run near 30 s. `until_satisfied` lets one
    // pass grant every ready licensed job a host, so only the licence
    // limit holds them back; the stations' `placement_interval_secs = 0`
    // lets the home use all grants of one reply (Mutka's one placement per
    // interval would serialise the pool).
    let cdir = tmp.path().join("coord");
    std::fs::create_dir_all(&cdir).unwrap();
    let ccfg = cdir.join("coordinator.toml");
    std::fs::write(
        &ccfg,
        format!(
            "listen = \"127.0.0.1:{pc}\"\nstate_dir = \"{}\"\n{}\
             scheduling_interval_secs = 0.3\nadvertise_period_secs = 1\n\
             startup_grace_secs = 0\nembargo_secs = 0.3\n\
             [allocator]\nkind = \"updown\"\nper_pass = \"until_satisfied\"\n[licences]\nmatlab = 2\n",
            cdir.join("state").display(),
            common::coordinator_key(keys)
        ),
    )
    .unwrap();
    let mut daemons = Daemons(vec![spawn(
        "coordinator",
        &ccfg,
        &tmp.path().join("coord.log"),
        pc,
    )]);

    // Stations; each one's state (and so its guests' sandboxes) lives
    // under `st-<name>`, which the guests report back.
    let station = |name: &str, extra: &str| -> (PathBuf, u16) {
        let port = free_port();
        let dir = tmp.path().join(format!("st-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("station.toml");
        std::fs::write(
            &cfg,
            format!(
                "name = \"{name}\"\nlisten = \"127.0.0.1:{port}\"\nstate_dir = \"{}\"\n\
                 coordinator = \"{coord_url}\"\n{}\
                 advertise_secs = 1\nplacement_interval_secs = 0\nspeed = 1.0\n{}{extra}{}",
                dir.join("state").display(),
                common::station_creds(keys, name, &dir),
                socket_line(&dir.join("state")),
                common::isolation_toml(),
            ),
        )
        .unwrap();
        (cfg, port)
    };
    let (cfg, p0) = station("home", "role = \"submit_only\"\n");
    daemons
        .0
        .push(spawn("station", &cfg, &tmp.path().join("home.log"), p0));
    for (name, mem, attrs, policy) in STATIONS {
        let (cfg, port) = station(
            name,
            &format!(
                "role = \"execute_only\"\ncpus = 2\nmemory_mb = {mem}\n\
                 [attrs]\n{attrs}[policy]\n{policy}"
            ),
        );
        daemons.0.push(spawn(
            "station",
            &cfg,
            &tmp.path().join(format!("{name}.log")),
            port,
        ));
    }

    std::fs::write(
        home.join("pool.toml"),
        format!("station = \"http://127.0.0.1:{p0}\"\ncoordinator = \"{coord_url}\"\n"),
    )
    .unwrap();
    let token = user.token();
    std::fs::write(home.join("token"), &token).unwrap();

    // Each guest writes `<start ns> <end ns> <sandbox>` for its node into a
    // directory it can write to (guests run as another user).
    let shared = shared_dir();
    let script = shared.path().join("node.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nt0=$(date +%s%N)\nsleep 1\nt1=$(date +%s%N)\n\
             echo \"$t0 $t1 $HOME\" > {}/$1.ran\n",
            shared.path().display()
        ),
    )
    .unwrap();
    let kinds = kinds();
    // The marks exist before the guests run, the test's own: what a slot
    // account creates in a world-writable directory is scrubbed when its
    // slot is released (docs/security.md, "Leftovers").
    for (node, kind) in NODES {
        for p in 0..kinds[kind].1 {
            let mark = shared.path().join(format!("{node}.{p}.ran"));
            std::fs::write(&mark, "").unwrap();
            std::fs::set_permissions(&mark, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
    }
    for (kind, (body, n, _)) in &kinds {
        std::fs::write(
            work.join(format!("{kind}.sub")),
            format!(
                "executable = /bin/sh\narguments = \"{} $(node).$(Process)\"\n{body}queue {n}\n",
                script.display()
            ),
        )
        .unwrap();
    }
    let mut dag = String::from("# issue 7: heterogeneous pool, licence limit 2\n");
    for (n, kind) in NODES {
        dag.push_str(&format!("JOB {n} {kind}.sub\nVARS {n} node=\"{n}\"\n"));
    }
    dag.push_str(TWENTY_NODE_EDGES);
    std::fs::write(work.join("hetero.dag"), dag).unwrap();

    // Wait until the coordinator has all three execute stations' ads, so
    // the first placements already see the whole pool.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let coord = StationClient::new(coord_url.clone(), token).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v: Option<AdsView> = rt.block_on(coord.get_json("/v1/ads")).ok();
        if v.is_some_and(|v| v.stations.iter().filter(|e| !e.ad.submit_only).count() >= 3) {
            break;
        }
        assert!(Instant::now() < deadline, "stations never advertised");
        std::thread::sleep(Duration::from_millis(100));
    }

    let out = glean_in(&home, &work, &["dag", "submit", "hetero.dag"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("DAG 1 submitted: 20 nodes"));

    // node name → kind, and the allowed hosts of each node.
    let kind_of: BTreeMap<&str, &str> = NODES.into_iter().collect();
    let allowed = |node: &str| &kinds[kind_of[node]].2;
    let licensed = |node: &str| kind_of[node].contains("lic");

    // The sampler: until the DAG is done, read the home queue and the
    // coordinator's ads; cluster numbers map to nodes through `dag status`.
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (home, work, stop) = (home.clone(), work.clone(), stop.clone());
        let kinds = kinds.clone();
        std::thread::spawn(move || {
            let kind_of: BTreeMap<&str, &str> = NODES.into_iter().collect();
            let mut seen = Seen::default();
            let mut node_of_cluster: BTreeMap<u64, String> = BTreeMap::new();
            while !stop.load(Ordering::Relaxed) {
                let s = glean_in(&home, &work, &["dag", "status", "1", "--json"]);
                let s: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap_or_default();
                for n in s["nodes"].as_array().into_iter().flatten() {
                    for c in n["clusters"].as_array().into_iter().flatten() {
                        if let (Some(c), Some(name)) = (c.as_u64(), n["name"].as_str()) {
                            node_of_cluster.insert(c, name.to_string());
                        }
                    }
                }
                let node = |cluster: u64| -> &str {
                    node_of_cluster
                        .get(&cluster)
                        .map(String::as_str)
                        .unwrap_or_else(|| panic!("cluster {cluster} is no node of the DAG"))
                };
                // The home station's view: the host of each running job.
                let q = glean_in(&home, &work, &["q", "--json"]);
                let jobs: Vec<JobInfo> = serde_json::from_slice(&q.stdout).unwrap_or_default();
                let mut licensed_now = 0;
                for j in &jobs {
                    // A suspended guest still holds its host and licence.
                    if !matches!(j.state, JobState::Running | JobState::Suspended) {
                        continue;
                    }
                    // DAG 1's own job (condor_dagman's, cluster 1) runs at
                    // the home as the DAG manager, on no host.
                    // A node submitted since `dag status` was read is
                    // looked at on the next round.
                    if j.id.cluster == 1 || !node_of_cluster.contains_key(&j.id.cluster) {
                        continue;
                    }
                    let n = node(j.id.cluster);
                    let host = j.host.as_deref().unwrap_or("?");
                    assert!(
                        kinds[kind_of[n]].2.contains(host),
                        "{n} ({}) runs on {host}: {j:?}",
                        kind_of[n]
                    );
                    licensed_now += usize::from(kind_of[n].contains("lic"));
                    seen.running_seen += 1;
                }
                assert!(licensed_now <= 2, "{licensed_now} licensed jobs at once");
                seen.peak_licensed = seen.peak_licensed.max(licensed_now);
                // The coordinator's view, from the hosts' ads.
                if let Ok(v) = rt.block_on(coord.get_json::<AdsView>("/v1/ads")) {
                    let mut licensed_now = 0;
                    for e in &v.stations {
                        for g in &e.ad.running_guests {
                            if !node_of_cluster.contains_key(&g.job.cluster) {
                                continue;
                            }
                            let n = node(g.job.cluster);
                            assert!(
                                kinds[kind_of[n]].2.contains(e.ad.name.as_str()),
                                "{n} runs on {} per its ad",
                                e.ad.name
                            );
                            licensed_now += usize::from(!g.concurrency_limits.is_empty());
                        }
                    }
                    assert!(
                        licensed_now <= 2,
                        "{licensed_now} licensed guests in the ads"
                    );
                    for l in &v.licences {
                        assert!(l.in_use <= l.limit, "{l:?}");
                    }
                }
                seen.samples += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            seen
        })
    };

    let deadline = Instant::now() + Duration::from_secs(120);
    let s = loop {
        let out = glean_in(&home, &work, &["dag", "status", "1", "--json"]);
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if s["state"] == "done" {
            break s;
        }
        assert!(
            s["state"] == "running" || s.is_null(),
            "DAG did not finish cleanly: {s}"
        );
        if Instant::now() > deadline || sampler.is_finished() {
            stop.store(true, Ordering::Relaxed);
            // A panicking sampler explains itself first.
            let _ = sampler.join();
            panic!("DAG not done: {s}");
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    stop.store(true, Ordering::Relaxed);
    let seen = match sampler.join() {
        Ok(seen) => seen,
        Err(e) => std::panic::resume_unwind(e),
    };
    eprintln!(
        "{} samples, {} running-job sightings, at most {} licensed jobs at once",
        seen.samples, seen.running_seen, seen.peak_licensed
    );
    assert!(seen.running_seen > 0, "the sampler never saw a running job");

    // Dependency order, from the DAG's own timestamps.
    assert_dependency_order(&s, 20, |n| {
        assert_eq!(n["clusters"].as_array().map(Vec::len), Some(1), "{n}");
    });

    // The guests' own record: where each ran, and how many licensed ones
    // overlapped in time.
    let mut intervals = Vec::new();
    let mut jobs = 0;
    for (node, kind) in NODES {
        for p in 0..kinds[kind].1 {
            jobs += 1;
            let path = shared.path().join(format!("{node}.{p}.ran"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let f: Vec<&str> = text.split_whitespace().collect();
            assert_eq!(f.len(), 3, "{node}: {text}");
            let host = STATIONS
                .iter()
                .map(|s| s.0)
                .find(|h| f[2].contains(&format!("/st-{h}/")))
                .unwrap_or_else(|| panic!("{node} ran in {}", f[2]));
            assert!(allowed(node).contains(host), "{node} ran on {host}");
            let (t0, t1): (u128, u128) = (f[0].parse().unwrap(), f[1].parse().unwrap());
            eprintln!("{node:>3}.{p} {:>6} {host:>5} {t0} {t1}", kind_of[node]);
            if licensed(node) {
                intervals.push((t0, t1));
            }
        }
    }
    let peak = intervals
        .iter()
        .map(|&(t0, _)| {
            intervals
                .iter()
                .filter(|&&(a, b)| a <= t0 && t0 < b)
                .count()
        })
        .max()
        .unwrap_or(0);
    eprintln!("guests' record: at most {peak} licensed jobs at once");
    assert!((1..=2).contains(&peak), "{peak} licensed guests overlapped");
    let out = glean_in(&home, &work, &["history", "--json"]);
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Every node's job, and the DAG's own (condor_dagman's).
    assert_eq!(h.as_array().map(Vec::len), Some(jobs + 1), "{h}");
}
