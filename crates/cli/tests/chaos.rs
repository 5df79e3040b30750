//! The chaos suite (issue 14 item 7): a personal pool of real `glean`
//! processes (a coordinator, a home, three execute stations) runs short
//! jobs that record each run (a random nonce in stdout, in a result file
//! and as one line appended to a side-effect file outside the sandbox) and
//! self-checkpointing jobs (`examples/jobs/selfckpt.sh`). A driver driven
//! by a seeded RNG SIGKILLs one daemon at a time at random moments, some
//! aimed at a checkpoint upload (a checkpointing job's step is printed but
//! its checkpoint not yet stored) or at output delivery (a staged output
//! beside the user's files, or a completion just seen), and starts it
//! again with the same configuration and state.
//!
//! At the end: every job completed (none lost); each job's outputs are
//! those of one run (one nonce in stdout and result file; a checkpointed
//! job's stdout is byte for byte an undisturbed run's); no restored run of
//! a checkpointed job started before a checkpoint the home had already
//! stored; every station's SQLite files pass `PRAGMA integrity_check` and
//! every daemon's JSON state parses. Side effects are counted, not
//! asserted: execution is at-least-once.
//!
//! `CHAOS_SEED` (default 1407) picks the kills; `CHAOS_JOBS` the size (a
//! number of short jobs, or `10x` for ten times the default); `CHAOS_LOGS`
//! a directory to keep the daemons' logs in. One summary line goes to
//! stdout (`--nocapture`).

mod common;
mod fault_pool;

use fault_pool::*;
use gleaner_proto::api::JobInfo;
use gleaner_proto::job::JobState;
use gleaner_station::client::JobQuery;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

const DEFAULT_SEED: u64 = 1407;
/// Default size: short jobs and self-checkpointing jobs.
const SHORT: usize = 40;
const CKPT: usize = 4;
/// Seconds a short job runs.
const JOB_SECS: &str = "1";
const HOSTS: [&str; 3] = ["x1", "x2", "x3"];
/// The driver looks at the pool this often.
const TICK: Duration = Duration::from_millis(100);
/// A restored run is compared with the checkpoints seen stored this many
/// ticks before its first step appeared (time for the run to fetch its
/// checkpoint and print a step).
const MARGIN_TICKS: u64 = 3;

/// One run of a short chaos job: its nonce in stdout (first and last
/// line), one line in the side-effect file, the nonce in its result file.
const JOB_SCRIPT: &str = r#"#!/bin/sh
# chaosjob.sh PROC SIDE_DIR SECS
set -u
n=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || echo "$$.$(date +%s%N)")
echo "run $$ $n"
echo "$n" >> "$2/s.$1"
sleep "$3"
echo "$n" > "result.$1"
echo "run $$ $n"
"#;

struct Size {
    short: usize,
    ckpt: usize,
    kills: u32,
    deadline: Duration,
}

impl Size {
    fn from_env() -> Size {
        let spec = std::env::var("CHAOS_JOBS").unwrap_or_default();
        let spec = spec.trim();
        let (short, ckpt) = if spec.is_empty() {
            (SHORT, CKPT)
        } else if let Some(k) = spec.strip_suffix('x') {
            let k: usize = k.parse().expect("CHAOS_JOBS=Nx");
            (SHORT * k, CKPT * k)
        } else {
            let n: usize = spec.parse().expect("CHAOS_JOBS=N or Nx");
            (n, (n / 8).max(1))
        };
        let jobs = (short + ckpt) as u64;
        Size {
            short,
            ckpt,
            kills: (jobs as u32 / 2).max(4),
            deadline: Duration::from_secs(120 + 3 * jobs),
        }
    }
}

/// A self-checkpointing job as the driver watches it: the steps it
/// executes (its progress log) and the checkpoints its home has stored.
struct CkptWatch {
    id: String,
    progress: PathBuf,
    latest: PathBuf,
    lines: usize,
    last: Option<(u32, u32)>,
    /// (tick, step) of every stored checkpoint seen.
    stored: Vec<(u64, u32)>,
    stored_key: Option<(u64, SystemTime)>,
    /// (tick, step restored from, highest step stored before it).
    restores: Vec<(u64, u32, u32)>,
    done: bool,
}

impl CkptWatch {
    fn observe(&mut self, tick: u64) {
        // Checkpoints first: one stored before this tick's read of the
        // progress log was stored before any step seen in it.
        if let Ok(m) = std::fs::metadata(&self.latest) {
            let key = (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH));
            if self.stored_key != Some(key)
                && let Some(step) = checkpoint_step(&self.latest)
            {
                self.stored_key = Some(key);
                self.stored.push((tick, step));
            }
        }
        let text = std::fs::read_to_string(&self.progress).unwrap_or_default();
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        for l in complete.lines().skip(self.lines) {
            self.lines += 1;
            let mut it = l.split_whitespace();
            let (Some(Ok(pid)), Some(Ok(step))) = (
                it.next().map(str::parse::<u32>),
                it.next().map(str::parse::<u32>),
            ) else {
                continue;
            };
            let new_run = self
                .last
                .is_none_or(|(lp, ls): (u32, u32)| lp != pid || step <= ls);
            if new_run {
                let bound = self
                    .stored
                    .iter()
                    .filter(|(t, _)| *t + MARGIN_TICKS <= tick)
                    .map(|&(_, s)| s)
                    .max()
                    .unwrap_or(0);
                self.restores.push((tick, step.saturating_sub(1), bound));
            }
            self.last = Some((pid, step));
        }
    }

    /// The job printed a checkpoint step its home has not stored yet: it
    /// is saving or uploading that checkpoint now.
    fn checkpointing(&self) -> bool {
        let stored = self.stored.iter().map(|&(_, s)| s).max().unwrap_or(0);
        !self.done
            && self
                .last
                .is_some_and(|(_, s)| s % EVERY == 0 && s < STEPS && s > stored)
    }

    fn rollbacks(&self) -> Vec<(u64, u32, u32)> {
        self.restores
            .iter()
            .copied()
            .filter(|&(_, from, bound)| from < bound)
            .collect()
    }

    fn steps(&self) -> Vec<(u32, u32)> {
        std::fs::read_to_string(&self.progress)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
            })
            .collect()
    }
}

/// The step a stored checkpoint bundle of `selfckpt.sh` resumes from.
fn checkpoint_step(bundle: &Path) -> Option<u32> {
    let mut f = std::fs::File::open(bundle).ok()?;
    let d = tempfile::tempdir().ok()?;
    gleaner_station::checkpoint::read_bundle(&mut f, Some(d.path())).ok()?;
    let s = std::fs::read_to_string(d.path().join("selfckpt.state")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Moment {
    Random,
    Checkpoint,
    Delivery,
}

/// Kills one daemon at a time and starts it again.
struct Driver {
    rng: StdRng,
    left: u32,
    moment: Moment,
    /// When a random kill is due, or an aimed one gives up waiting.
    due: Instant,
    down: Option<(String, Instant)>,
    completed_when_armed: usize,
    by_kind: BTreeMap<&'static str, u32>,
    by_moment: BTreeMap<&'static str, u32>,
    log: Vec<String>,
}

impl Driver {
    fn new(seed: u64, kills: u32) -> Driver {
        let mut rng = StdRng::seed_from_u64(seed);
        let due = Instant::now() + Duration::from_secs_f64(rng.random_range(1.0..3.0));
        Driver {
            rng,
            left: kills,
            moment: Moment::Random,
            due,
            down: None,
            completed_when_armed: 0,
            by_kind: BTreeMap::new(),
            by_moment: BTreeMap::new(),
            log: Vec::new(),
        }
    }

    fn kills(&self) -> u32 {
        self.by_kind.values().sum()
    }

    fn random_victim(&mut self) -> String {
        // Weights: coordinator 1, home 2, each host 1.
        let k = self.rng.random_range(0..3 + HOSTS.len());
        match k {
            0 => "coord".into(),
            1 | 2 => "home".into(),
            h => HOSTS[h - 3].into(),
        }
    }

    fn kill(&mut self, pool: &mut Pool, victim: String, moment: Moment, t0: Instant) {
        let down = Duration::from_secs_f64(self.rng.random_range(0.2..4.0));
        pool.daemon_mut(&victim).kill9();
        let kind = match victim.as_str() {
            "coord" => "coordinator",
            "home" => "home",
            _ => "host",
        };
        *self.by_kind.entry(kind).or_default() += 1;
        let m = match moment {
            Moment::Random => "random",
            Moment::Checkpoint => "checkpoint",
            Moment::Delivery => "delivery",
        };
        *self.by_moment.entry(m).or_default() += 1;
        self.log.push(format!(
            "{:7.2}s kill {victim} ({m}), down {:.1}s",
            t0.elapsed().as_secs_f64(),
            down.as_secs_f64()
        ));
        self.left -= 1;
        self.down = Some((victim, Instant::now() + down));
    }

    /// Starts a killed daemon whose time is up; then arms the next kill.
    fn restart_due(&mut self, pool: &mut Pool, completed: usize) {
        let Some((name, at)) = &self.down else {
            return;
        };
        if Instant::now() < *at {
            return;
        }
        pool.daemon_mut(name).restart();
        self.down = None;
        let r: f64 = self.rng.random_range(0.0..1.0);
        self.moment = if r < 0.5 {
            Moment::Random
        } else if r < 0.75 {
            Moment::Checkpoint
        } else {
            Moment::Delivery
        };
        let wait = match self.moment {
            Moment::Random => self.rng.random_range(0.3..2.0),
            _ => 8.0,
        };
        self.due = Instant::now() + Duration::from_secs_f64(wait);
        self.completed_when_armed = completed;
    }

    /// One look: kills a daemon if the armed moment has come.
    fn step(&mut self, pool: &mut Pool, w: &Watch, t0: Instant) {
        if self.down.is_some() || self.left == 0 {
            return;
        }
        let now = Instant::now();
        match self.moment {
            Moment::Checkpoint => {
                if let Some(c) = w.ckpts.iter().find(|c| c.checkpointing()) {
                    let host = w
                        .states
                        .get(&c.id)
                        .filter(|j| j.state == JobState::Running)
                        .and_then(|j| j.host.clone())
                        .filter(|h| HOSTS.contains(&h.as_str()));
                    let victim = match host {
                        Some(h) if self.rng.random_bool(0.5) => h,
                        _ => "home".into(),
                    };
                    self.kill(pool, victim, Moment::Checkpoint, t0);
                    return;
                }
            }
            Moment::Delivery => {
                if staged_outputs(&pool.work) > 0 || w.completed() > self.completed_when_armed {
                    self.kill(pool, "home".into(), Moment::Delivery, t0);
                    return;
                }
            }
            Moment::Random => {}
        }
        if now >= self.due {
            let v = self.random_victim();
            self.kill(pool, v, Moment::Random, t0);
        }
    }
}

/// Files being delivered: staged beside the user's outputs, in `work`
/// and the checkpointing jobs' directories under it.
fn staged_outputs(work: &Path) -> usize {
    staged_names(work).len()
}

/// The names of [`staged_outputs`].
fn staged_names(work: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(work).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains(".gleaner-") {
            v.push(name);
        } else if name.starts_with("ck") && e.file_type().is_ok_and(|t| t.is_dir()) {
            v.extend(
                staged_names(&e.path())
                    .into_iter()
                    .map(|n| format!("{name}/{n}")),
            );
        }
    }
    v
}

/// What the driver knows of the jobs.
struct Watch {
    ids: Vec<String>,
    states: HashMap<String, JobInfo>,
    ckpts: Vec<CkptWatch>,
}

impl Watch {
    async fn poll(&mut self, pool: &Pool) {
        let q = JobQuery {
            all: true,
            ..Default::default()
        };
        if let Ok(jobs) = pool.client.jobs(&q).await {
            for j in jobs {
                self.states.insert(j.id.to_string(), j);
            }
        }
        for c in &mut self.ckpts {
            c.done = self
                .states
                .get(&c.id)
                .is_some_and(|j| matches!(j.state, JobState::Completed { .. }));
        }
    }

    fn completed(&self) -> usize {
        self.ids
            .iter()
            .filter(|id| {
                self.states
                    .get(*id)
                    .is_some_and(|j| matches!(j.state, JobState::Completed { .. }))
            })
            .count()
    }

    /// Every job completed, held or removed: nothing more will happen.
    fn settled(&self) -> bool {
        self.ids.iter().all(|id| {
            self.states.get(id).is_some_and(|j| {
                matches!(
                    j.state,
                    JobState::Completed { .. } | JobState::Held { .. } | JobState::Removed
                )
            })
        })
    }
}

/// A short job's delivered outputs.
#[derive(Debug, Default)]
struct ShortOutcome {
    one_run: bool,
    side_effects: usize,
    problem: Option<String>,
}

fn check_short(work: &Path, side: &Path, p: usize) -> ShortOutcome {
    let out = std::fs::read_to_string(work.join(format!("out.{p}"))).unwrap_or_default();
    let result = std::fs::read_to_string(work.join(format!("result.{p}"))).unwrap_or_default();
    let sides = std::fs::read_to_string(side.join(format!("s.{p}"))).unwrap_or_default();
    let side_effects = sides.lines().count();
    let runs: Vec<&str> = out.lines().collect();
    let mut distinct = runs.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let nonce = runs
        .first()
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or("");
    let problem = if runs.len() != 2 || distinct.len() != 1 {
        Some(format!("stdout is not one whole run: {out:?}"))
    } else if result.trim() != nonce {
        Some(format!(
            "result {:?} is not stdout's run {nonce}",
            result.trim()
        ))
    } else if !sides.lines().any(|l| l == nonce) {
        Some(format!("run {nonce} left no side effect: {sides:?}"))
    } else {
        None
    };
    ShortOutcome {
        one_run: problem.is_none(),
        side_effects,
        problem,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_kills_lose_nothing_and_outputs_are_one_runs() {
    if gleaner_testkit::skip_unless_root("chaos: creates Unix users and slot accounts") {
        return;
    }
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let size = Size::from_env();
    let mut pool = Pool::start_hosts("", false, &HOSTS).await;
    let work = pool.work.clone();
    // Side effects land outside every sandbox, written by whatever slot
    // account runs the job: files made writable for all beforehand.
    let side = pool.dir.path().join("side");
    std::fs::create_dir(&side).unwrap();
    std::fs::set_permissions(&side, std::fs::Permissions::from_mode(0o777)).unwrap();
    let open_file = |p: &Path| {
        std::fs::write(p, "").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o666)).unwrap();
    };
    for p in 0..size.short {
        open_file(&side.join(format!("s.{p}")));
    }
    for p in 0..size.ckpt {
        open_file(&side.join(format!("ck.{p}")));
        pool.owner.dir(&work.join(format!("ck{p}"))).unwrap();
    }
    let script = work.join("chaosjob.sh");
    std::fs::write(&script, JOB_SCRIPT).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let t0 = Instant::now();
    let short_ids = pool
        .submit_all(&format!(
            "executable = chaosjob.sh\narguments = $(Process) {} {JOB_SECS}\n\
             output = out.$(Process)\nerror = err.$(Process)\n\
             transfer_output_files = result.$(Process)\nqueue {}\n",
            side.display(),
            size.short
        ))
        .await;
    let ckpt_ids = pool
        .submit_all(&format!(
            "executable = {}\ninitialdir = ck$(Process)\narguments = {STEPS} {EVERY} {STEP_SECS}\n\
             checkpoint_exit_code = 85\ntransfer_checkpoint_files = selfckpt.state\n\
             transfer_output_files = selfckpt.result\noutput = out.txt\nerror = err.txt\n\
             environment = \"SELFCKPT_PROGRESS={}/ck.$(Process)\"\nqueue {}\n",
            work.join("selfckpt.sh").display(),
            side.display(),
            size.ckpt
        ))
        .await;
    let spool = pool.state_dir("home").join("spool");
    let mut w = Watch {
        ids: short_ids.iter().chain(&ckpt_ids).cloned().collect(),
        states: HashMap::new(),
        ckpts: ckpt_ids
            .iter()
            .enumerate()
            .map(|(p, id)| CkptWatch {
                id: id.clone(),
                progress: side.join(format!("ck.{p}")),
                latest: spool.join(id).join("ckpt").join("latest.ckpt"),
                lines: 0,
                last: None,
                stored: Vec::new(),
                stored_key: None,
                restores: Vec::new(),
                done: false,
            })
            .collect(),
    };
    let mut driver = Driver::new(seed, size.kills);
    let deadline = t0 + size.deadline;
    let mut tick = 0u64;
    loop {
        tick += 1;
        for c in &mut w.ckpts {
            c.observe(tick);
        }
        if tick.is_multiple_of(5) {
            w.poll(&pool).await;
        }
        driver.restart_due(&mut pool, w.completed());
        driver.step(&mut pool, &w, t0);
        if driver.down.is_none() && w.settled() {
            break;
        }
        if Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(TICK).await;
    }
    let drain = t0.elapsed();
    let t_drained = Instant::now();
    // Every daemon up again (a kill may still be pending at the deadline).
    if let Some((name, _)) = driver.down.take() {
        pool.daemon_mut(&name).restart();
    }
    // The last completions' outputs may still be on their way.
    let settle = Instant::now() + Duration::from_secs(30);
    loop {
        w.poll(&pool).await;
        let delivered = (0..size.short).all(|p| work.join(format!("result.{p}")).exists())
            && (0..size.ckpt).all(|p| work.join(format!("ck{p}/selfckpt.result")).exists());
        if (delivered && staged_outputs(&work) == 0) || Instant::now() > settle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let delivered_after = t_drained.elapsed();
    let staged_left = staged_names(&work);

    // The figures.
    let completed = w.completed();
    let lost: Vec<String> = w
        .ids
        .iter()
        .filter(|id| {
            !w.states
                .get(*id)
                .is_some_and(|j| j.state == JobState::Completed { exit_code: 0 })
        })
        .map(|id| format!("{id}: {:?}", w.states.get(id).map(|j| &j.state)))
        .collect();
    let mut problems: Vec<String> = Vec::new();
    let (mut one_run, mut side_total, mut side_multi) = (0usize, 0usize, 0usize);
    for (p, id) in short_ids.iter().enumerate() {
        let o = check_short(&work, &side, p);
        one_run += usize::from(o.one_run);
        side_total += o.side_effects;
        side_multi += usize::from(o.side_effects > 1);
        if let Some(why) = o.problem {
            problems.push(format!("{id}: {why}"));
        }
    }
    let (ref_out, ref_result) = reference_run();
    let mut rollbacks = Vec::new();
    let mut redone = Vec::new();
    let mut restores = 0usize;
    for (p, c) in w.ckpts.iter().enumerate() {
        let dir = work.join(format!("ck{p}"));
        let out = std::fs::read_to_string(dir.join("out.txt")).unwrap_or_default();
        let result = std::fs::read_to_string(dir.join("selfckpt.result")).unwrap_or_default();
        if out == ref_out && result == ref_result {
            one_run += 1;
        } else {
            problems.push(format!(
                "{}: stdout/result differ from an undisturbed run ({} of {} bytes, result {:?})",
                c.id,
                out.len(),
                ref_out.len(),
                result.trim()
            ));
        }
        restores += c.restores.len().saturating_sub(1);
        redone.extend(redone_steps(&c.steps()));
        for (t, from, bound) in c.rollbacks() {
            rollbacks.push(format!(
                "{}: a run restored step {from} at {:.1}s after step {bound} was stored",
                c.id,
                t as f64 * TICK.as_secs_f64()
            ));
        }
    }
    let corrupted = pool.integrity_problems();
    let jobs = w.ids.len();
    let kinds = |k: &str| driver.by_kind.get(k).copied().unwrap_or(0);
    let moments = |k: &str| driver.by_moment.get(k).copied().unwrap_or(0);
    println!(
        "chaos seed={seed} jobs={jobs} (short {}, checkpointing {}) kills={} \
         (coordinator {}, home {}, host {}; aimed at checkpoint {}, at delivery {}) \
         completed={completed} one_run_outputs={one_run} side_effects={side_total} \
         (jobs run more than once {side_multi}) restores={restores} redone_steps={} \
         rollbacks={} lost={} corrupted={} drain={:.1}s (outputs all in place {:.1}s later; \
         staged files left behind {})",
        size.short,
        size.ckpt,
        driver.kills(),
        kinds("coordinator"),
        kinds("home"),
        kinds("host"),
        moments("checkpoint"),
        moments("delivery"),
        redone.iter().sum::<u32>(),
        rollbacks.len(),
        lost.len(),
        corrupted.len(),
        drain.as_secs_f64(),
        delivered_after.as_secs_f64(),
        staged_left.len(),
    );
    if !staged_left.is_empty() {
        eprintln!("staged files left in the work directory: {staged_left:?}");
    }
    for l in &driver.log {
        eprintln!("{l}");
    }
    if let Ok(dir) = std::env::var("CHAOS_LOGS") {
        pool.copy_logs(Path::new(&dir));
    }
    let failed = !lost.is_empty() || !problems.is_empty() || !rollbacks.is_empty();
    let why = format!(
        "seed {seed}\nlost: {lost:#?}\noutputs: {problems:#?}\nrollbacks: {rollbacks:#?}\n\
         corrupted: {corrupted:#?}\n{}",
        if failed { pool.logs() } else { String::new() }
    );
    assert!(lost.is_empty(), "{why}");
    assert!(problems.is_empty(), "{why}");
    assert!(rollbacks.is_empty(), "{why}");
    assert!(corrupted.is_empty(), "{why}");
    assert_eq!(one_run, jobs, "{why}");
}
