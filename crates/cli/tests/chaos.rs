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
//! `CHAOS_SEED` (default 1407) seeds the driver's choices (which daemon,
//! how long it stays down, how long to wait, which moment to aim at); what
//! a kill then hits depends on timing, so two runs of one seed differ.
//! `CHAOS_JOBS` sets the size (a number of short jobs, or `10x` for ten
//! times the default of 40 short and 4 checkpointing jobs); `CHAOS_LOGS` a
//! directory to keep the daemons' logs in. One summary line goes to stdout
//! (shown by nextest for this binary, `.config/nextest.toml`).

mod chaos_kit;
mod common;
mod fault_pool;

use chaos_kit::*;
use fault_pool::*;
use gleaner_proto::job::JobState;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

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
    // Checkpointing jobs first: they start at once, and run while the
    // short jobs come and go.
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
    let short_ids = pool
        .submit_all(&format!(
            "executable = chaosjob.sh\narguments = $(Process) {} {JOB_SECS}\n\
             output = out.$(Process)\nerror = err.$(Process)\n\
             transfer_output_files = result.$(Process)\nqueue {}\n",
            side.display(),
            size.short
        ))
        .await;
    let spool = pool.state_dir("home").join("spool");
    let mut w = Watch {
        ids: short_ids.iter().chain(&ckpt_ids).cloned().collect(),
        states: HashMap::new(),
        ckpts: ckpt_ids
            .iter()
            .enumerate()
            .map(|(p, id)| {
                let latest = spool.join(id).join("ckpt").join("latest.ckpt");
                CkptWatch::new(id, side.join(format!("ck.{p}")), latest)
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
        // Staged files do not count: one left by a home killed before it
        // committed the completion stays (reported below).
        let delivered = (0..size.short).all(|p| {
            work.join(format!("result.{p}")).exists() && work.join(format!("out.{p}")).exists()
        }) && (0..size.ckpt).all(|p| {
            let dir = work.join(format!("ck{p}"));
            dir.join("selfckpt.result").exists() && dir.join("out.txt").exists()
        });
        if delivered || Instant::now() > settle {
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
    // A completion staged but never committed leaves nothing behind.
    assert!(
        staged_left.is_empty(),
        "staged files left behind: {staged_left:?}\n{why}"
    );
    assert_eq!(one_run, jobs, "{why}");
}
