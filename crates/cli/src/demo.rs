//! The demo workload of `glean up --demo`.
//!
//! Two users of different weight share the personal pool: a heavy user
//! queues 12 jobs at station0 at once, a light user queues 2 jobs at
//! station1 a little later and 2 more later still (Mutka's light and heavy
//! stations, Table 4.4). Meanwhile owners come back to their desks: the
//! owner of station2 (Immediate-Eviction) evicts its guest, which moves to
//! another station; the owner of station3 (Condor-1988) suspends its guest
//! and lets it resume. A status line is printed every two seconds; at the
//! end a summary shows where the jobs ran, how long each user waited, and
//! the coordinator's Up-Down table.
//!
//! Each user is a Unix account and submits from a directory of its own
//! (see [`crate::demo_users`]): as root, two demo accounts with tokens; as
//! an ordinary user, that user twice, on the stations' user sockets.

use anyhow::Context;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gleaner_proto::api::{JobInfo, SubmitBody};
use gleaner_proto::job::JobState;
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::{PROTOCOL_VERSION, UserPrio};
use gleaner_station::client::{JobQuery, StationClient};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Eviction policy of each demo station, by index (the owner decides).
pub const POLICIES: [&str; 4] = [
    "linger_longer",
    "linger_forever",
    "immediate_eviction",
    "condor1988",
];

/// One user of the demo.
pub struct User {
    /// `heavy` or `light`.
    pub name: &'static str,
    /// The Unix account its jobs belong to.
    pub account: String,
    /// Where its jobs' outputs go.
    pub dir: PathBuf,
    pub client: StationClient,
}

/// The clusters this demo run submitted, per user: a reused `$GLEAN_HOME`
/// keeps earlier runs' jobs in the queues, and those must not count.
#[derive(Default)]
struct Mine {
    heavy: Vec<u64>,
    light: Vec<u64>,
}

const JOB: &str = "executable = /bin/sh\n\
arguments = \"-c 'n=0; while [ $n -lt 10 ]; do n=`expr $n + 1`; sleep 1; done; echo job $(Cluster).$(Process) finished'\"\n\
output = demo.$(Cluster).$(Process).out\n\
error = demo.$(Cluster).$(Process).err\n\
log = demo.log\n";

/// Submits `n` demo jobs; returns the new cluster id.
async fn submit(user: &User, n: u32) -> anyhow::Result<u64> {
    let text = format!("{JOB}queue {n}\n");
    let ctx = SubmitContext::new(format!("{}.sub", user.name), user.account.clone());
    let submission = parse_submit(&text, &ctx).map_err(|e| anyhow::anyhow!("demo job: {e:?}"))?;
    let body = SubmitBody {
        protocol: PROTOCOL_VERSION,
        submission,
        submit_dir: Some(user.dir.display().to_string()),
    };
    let r = user.client.submit(&body).await?;
    println!(
        "[demo] {} ({}) submitted {} job(s) as cluster {} at {}",
        user.name,
        user.account,
        r.jobs.len(),
        r.cluster,
        user.client.base_url()
    );
    Ok(r.cluster)
}

async fn jobs(user: &User, clusters: &[u64]) -> Vec<JobInfo> {
    let q = JobQuery {
        all: true,
        owner: None,
        state: None,
    };
    let mut v = user.client.jobs(&q).await.unwrap_or_default();
    v.retain(|j| clusters.contains(&j.id.cluster));
    v
}

fn counts(v: &[JobInfo]) -> String {
    let mut c: BTreeMap<&str, u32> = BTreeMap::new();
    for j in v {
        let k = match j.state {
            JobState::Idle => "idle",
            JobState::Running => "running",
            JobState::Suspended => "suspended",
            JobState::Held { .. } => "held",
            JobState::Completed { .. } => "done",
            JobState::Removed => "removed",
        };
        *c.entry(k).or_default() += 1;
    }
    c.iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn set_owner(home: &Path, station: &str, active: bool) -> anyhow::Result<()> {
    let p = home.join("stations").join(station).join("owner");
    std::fs::write(&p, if active { "active\n" } else { "idle\n" })
        .with_context(|| format!("writing {}", p.display()))?;
    println!(
        "[demo] the owner of {station} {}",
        if active {
            "is back at the keyboard"
        } else {
            "left"
        }
    );
    Ok(())
}

/// Runs the demo against a pool that is already up: `heavy` submits at
/// station0, `light` at station1 (`home` holds the stations' owner files);
/// `coordinator` reads the Up-Down table. Returns false, with no summary,
/// once `stop` is raised (Ctrl-C).
pub fn run(
    home: &Path,
    heavy: User,
    light: User,
    coordinator: StationClient,
    stop: &AtomicBool,
) -> anyhow::Result<bool> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let coord = coordinator;
        for u in [&heavy, &light] {
            println!(
                "[demo] the {} user is the Unix account {}; job outputs go to {}",
                u.name,
                u.account,
                u.dir.display()
            );
        }
        let mut mine = Mine::default();
        mine.heavy.push(submit(&heavy, 12).await?);
        let start = Instant::now();
        let mut light_batches = 0;
        let (mut s2_active, mut s3_active) = (false, false);
        loop {
            let t = start.elapsed().as_secs();
            if light_batches == 0 && t >= 6 {
                mine.light.push(submit(&light, 2).await?);
                light_batches = 1;
            }
            if light_batches == 1 && t >= 30 {
                mine.light.push(submit(&light, 2).await?);
                light_batches = 2;
            }
            if !s2_active && (8..20).contains(&t) {
                set_owner(home, "station2", true)?;
                s2_active = true;
            } else if s2_active && t >= 20 {
                set_owner(home, "station2", false)?;
                s2_active = false;
            }
            if !s3_active && (14..24).contains(&t) {
                set_owner(home, "station3", true)?;
                s3_active = true;
            } else if s3_active && t >= 24 {
                set_owner(home, "station3", false)?;
                s3_active = false;
            }
            let hj = jobs(&heavy, &mine.heavy).await;
            let lj = jobs(&light, &mine.light).await;
            println!(
                "[{t:>3}s] heavy: {:<38} light: {}",
                counts(&hj),
                counts(&lj)
            );
            let done = |v: &[JobInfo]| {
                v.iter()
                    .filter(|j| matches!(j.state, JobState::Completed { .. }))
                    .count()
            };
            if light_batches == 2 && done(&hj) == 12 && done(&lj) == 4 {
                break;
            }
            if stop.load(Ordering::SeqCst) {
                println!("[demo] interrupted");
                return Ok(false);
            }
            if start.elapsed() > Duration::from_secs(600) {
                anyhow::bail!("the demo did not finish within 10 minutes");
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }

        // Summary: where jobs ran, how long each user waited, Up-Down table.
        let mut per_host: BTreeMap<String, (u32, u32)> = BTreeMap::new();
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(vec![
            "user",
            "jobs",
            "mean wait (s)",
            "max wait (s)",
            "mean turnaround (s)",
            "runs/job",
        ]);
        for (u, v) in [
            ("heavy", jobs(&heavy, &mine.heavy).await),
            ("light", jobs(&light, &mine.light).await),
        ] {
            let mut waits = vec![];
            let mut turn = vec![];
            let mut runs = 0u32;
            for j in &v {
                if let Some(h) = &j.host {
                    let e = per_host.entry(h.clone()).or_default();
                    if u == "heavy" { e.0 += 1 } else { e.1 += 1 }
                }
                if let Some(s) = j.started_at {
                    waits.push((s - j.submitted_at).as_secs_f64());
                }
                if let Some(f) = j.finished_at {
                    turn.push((f - j.submitted_at).as_secs_f64());
                }
                runs += j.run_count;
            }
            let mean = |x: &[f64]| {
                if x.is_empty() {
                    0.0
                } else {
                    x.iter().sum::<f64>() / x.len() as f64
                }
            };
            let max = waits.iter().cloned().fold(0.0, f64::max);
            t.add_row(vec![
                u.to_string(),
                v.len().to_string(),
                format!("{:.1}", mean(&waits)),
                format!("{max:.1}"),
                format!("{:.1}", mean(&turn)),
                format!("{:.2}", runs as f64 / v.len().max(1) as f64),
            ]);
        }
        println!("\nWho waited (Up-Down keeps the light user's waits short):\n{t}");
        let mut h = Table::new();
        h.load_preset(UTF8_FULL_CONDENSED);
        h.set_header(vec!["station", "policy", "heavy jobs", "light jobs"]);
        for (k, (host, (a, b))) in per_host.iter().enumerate() {
            let policy = host
                .strip_prefix("station")
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| POLICIES.get(n))
                .copied()
                .unwrap_or("");
            let _ = k;
            h.add_row(vec![
                host.clone(),
                policy.to_string(),
                a.to_string(),
                b.to_string(),
            ]);
        }
        println!("Where jobs last ran:\n{h}");
        if let Ok(up) = coord.get_json::<UserPrio>("/v1/userprio").await {
            let mut u = Table::new();
            u.load_preset(UTF8_FULL_CONDENSED);
            u.set_header(vec!["station", "Up-Down index", "nodes held", "waiting"]);
            for e in up.stations {
                u.add_row(vec![
                    e.station,
                    format!("{}", e.si),
                    e.nodes_held.to_string(),
                    e.waiting.to_string(),
                ]);
            }
            println!("Coordinator's Up-Down table:\n{u}");
        }
        println!("[demo] done; per-job event histories: glean q / glean history --station URL");
        anyhow::Ok(true)
    })
}
