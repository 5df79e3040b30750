//! What HTCondor's submit commands do, with real `glean` daemons (issue
//! 19): a coordinator, a home and two execute stations (`fault_pool`), and
//! jobs that write what happens to them into a file of the work directory
//! (outside their sandbox):
//!
//! - `hold = true` queues the job held (HoldReasonCode 15) until released;
//! - `max_retries` reruns a failing job, then completes it; HTCondor's
//!   reader sees "terminated and requeued" in the user log;
//! - `on_exit_hold` holds it on exit, `periodic_release` releases it;
//! - `deferral_time` starts it not before its time, a missed window holds
//!   it (HoldReasonCode 20);
//! - a CronTab job (`cron_minute`) runs at each matching minute and is
//!   requeued in between;
//! - `kill_sig` and `job_max_vacate_time`: a vacated job gets its signal,
//!   then SIGKILL after its vacate time; `glean rm` kills at once unless
//!   `want_graceful_removal`, then with `remove_kill_sig`; `glean hold`
//!   sends `hold_kill_sig`;
//! - request expressions are evaluated by the host, `require_gpus` picks
//!   the station whose GPU satisfies it and the guest finds that GPU in
//!   `CUDA_VISIBLE_DEVICES`; quoted arguments and environment reach the
//!   guest as written; `transfer_output = false` keeps stdout from home.

mod common;
mod fault_pool;
use fault_pool::*;
use gleaner_proto::job::JobState;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A job script in the work directory: appends `start <unix time>` and
/// what it is asked to `$2` (a file of the work directory), then exits
/// with `$1`, or runs until killed if `$1` is `forever`, reporting every
/// signal it traps and a heartbeat every 0.1 s.
const SCRIPT: &str = r#"#!/bin/sh
log=$2
now() { date +%s.%N; }
echo "start $(now)" >> "$log"
for s in USR1 USR2 HUP TERM INT; do
  trap "echo \"sig $s \$(now)\" >> \"$log\"" $s
done
if [ "$1" = forever ]; then
  while true; do echo "beat $(now)" >> "$log"; sleep 0.1; done
fi
exit "$1"
"#;

/// A file of the work directory the guests may append to.
fn shared_file(pool: &Pool, name: &str) -> PathBuf {
    let p = pool.work.join(name);
    std::fs::write(&p, "").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
    p
}

fn install_script(pool: &Pool) {
    let p = pool.work.join("probe.sh");
    std::fs::write(&p, SCRIPT).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Submits the probe job with `arguments = ARGS LOG` (LOG the shared file
/// `log`) and the submit lines `extra`; its id and log.
async fn probe(pool: &Pool, log: &str, args: &str, extra: &str) -> (String, PathBuf) {
    let log = shared_file(pool, log);
    let text = format!(
        "executable = probe.sh\narguments = {args} {}\n{extra}queue\n",
        log.display()
    );
    (pool.submit_text(&text).await, log)
}

/// `(what, unix time)` of each line of a probe log.
fn lines(p: &PathBuf) -> Vec<(String, f64)> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (what, t) = l.rsplit_once(' ')?;
            Some((what.to_string(), t.parse().ok()?))
        })
        .collect()
}

async fn wait_state(pool: &Pool, id: &str, want: impl Fn(&JobState) -> bool, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let d = pool.client.job(id).await.unwrap();
        if want(&d.job.state) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {id} is {:?}\n{:#?}\n{}",
            d.job.state,
            d.events,
            pool.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hold_retries_exit_hold_and_periodic_release() {
    let pool = Pool::start().await;
    install_script(&pool);

    // hold = true: queued held, HTCondor's code 15; released, it runs.
    let (id, log) = probe(&pool, "hold.log", "0", "hold = true\n").await;
    let d = pool.client.job(&id).await.unwrap();
    assert!(
        matches!(d.job.state, JobState::Held { .. }),
        "{:?}",
        d.job.state
    );
    assert_eq!(d.job.hold_code, Some(15));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(lines(&log).is_empty(), "a held job does not run");
    pool.client.release(&id, None).await.unwrap();
    let d = pool.wait_done(&id).await;
    pool.assert_completed(&d);
    assert_eq!(lines(&log).len(), 1);

    // max_retries = 2 of a job that always fails: three runs, then done
    // (with its exit code), two "terminated and requeued" in the user log.
    let (id, log) = probe(
        &pool,
        "retry.log",
        "3",
        "max_retries = 2\nlog = retry.userlog\n",
    )
    .await;
    let d = pool.wait_done(&id).await;
    assert_eq!(
        d.job.state,
        JobState::Completed { exit_code: 3 },
        "{:#?}",
        d.events
    );
    assert_eq!(lines(&log).len(), 3, "{:?}", lines(&log));
    assert_eq!(d.job.run_count, 3);
    assert_eq!(d.job.completions, 3);
    let userlog = pool.work.join("retry.userlog");
    if let Some(events) = gleaner_testkit::htcondor_user_log(&userlog) {
        let requeued: Vec<_> = events
            .iter()
            .filter(|e| e["type"] == 4 && e["ad"]["TerminatedAndRequeued"] == true)
            .collect();
        assert_eq!(requeued.len(), 2, "{events:#?}");
        assert_eq!(requeued[0]["ad"]["ReturnValue"], 3, "{events:#?}");
        assert_eq!(events.last().unwrap()["type"], 5, "{events:#?}");
    }

    // A run that succeeds ends the retries.
    let (id, log) = probe(&pool, "ok.log", "0", "max_retries = 5\n").await;
    let d = pool.wait_done(&id).await;
    pool.assert_completed(&d);
    assert_eq!(lines(&log).len(), 1);

    // on_exit_hold holds a failed run (code 3, the job's subcode);
    // periodic_release lets it run once more; then it stays held.
    let (id, log) = probe(&pool, "exithold.log", "4", "on_exit_hold = ExitCode != 0\non_exit_hold_subcode = ExitCode\non_exit_hold_reason = strcat(\"failed with \", ExitCode)\nperiodic_release = HoldReasonCode == 3 && NumJobStarts < 2\n").await;
    wait_state(&pool, &id, |s| matches!(s, JobState::Held { .. }), 90).await;
    let d = pool.client.job(&id).await.unwrap();
    assert_eq!(
        (d.job.hold_code, d.job.hold_subcode),
        (Some(3), Some(4)),
        "{:#?}",
        d.events
    );
    // Released by its policy (evaluated every 10 s), run, held again.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let d = pool.client.job(&id).await.unwrap();
        if d.job.run_count == 2 && matches!(d.job.state, JobState::Held { .. }) {
            assert_eq!(
                d.job.state,
                JobState::Held {
                    reason: "failed with 4".into()
                }
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{:#?}\n{}",
            d.events,
            pool.logs()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // NumJobStarts is 2 now: it stays held.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let d = pool.client.job(&id).await.unwrap();
    assert!(
        matches!(d.job.state, JobState::Held { .. }),
        "{:#?}",
        d.events
    );
    assert_eq!(lines(&log).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deferral_and_crontab() {
    let pool = Pool::start().await;
    install_script(&pool);

    // deferral_time: matched early (prep time), started at its time.
    let submitted = unix_now();
    let (id, log) = probe(&pool, "deferred.log", "0", "deferral_time = QDate + 8\n").await;
    let d = pool.wait_done(&id).await;
    pool.assert_completed(&d);
    let qdate = (d.job.submitted_at.as_micros() / 1_000_000) as f64;
    let started = lines(&log)[0].1;
    assert!(
        started >= qdate + 8.0,
        "started {:.1} s after QDate, deferral_time is QDate + 8",
        started - qdate
    );
    assert!(started < submitted + 60.0);

    // A deferral time long gone and a 10 s window: held, code 20.
    let id = pool
        .submit_text(
            "executable = probe.sh\narguments = 0 /dev/null\ndeferral_time = QDate - 100\n\
             deferral_window = 10\nqueue\n",
        )
        .await;
    wait_state(&pool, &id, |s| matches!(s, JobState::Held { .. }), 30).await;
    let d = pool.client.job(&id).await.unwrap();
    assert_eq!(d.job.hold_code, Some(20), "{:#?}", d.events);

    // A CronTab job every minute, removed after its second run: each run
    // starts on a minute, the next one on the next minute.
    let (id, log) = probe(
        &pool,
        "cron.log",
        "0",
        "cron_minute = *\non_exit_remove = NumJobCompletions >= 2\n",
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(200);
    let d = loop {
        let d = pool.client.job(&id).await.unwrap();
        if d.job.state.is_terminal() {
            break d;
        }
        assert!(
            Instant::now() < deadline,
            "{:#?}\n{}",
            d.events,
            pool.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    pool.assert_completed(&d);
    assert_eq!(d.job.completions, 2);
    let starts: Vec<f64> = lines(&log).iter().map(|l| l.1).collect();
    assert_eq!(starts.len(), 2, "{starts:?}");
    for s in &starts {
        // On the minute (the host waited for it), up to a few seconds
        // late on a busy machine.
        assert!(
            s.rem_euclid(60.0) < 10.0,
            "a run started {s} ({:.1} s into its minute)",
            s.rem_euclid(60.0)
        );
    }
    let minutes: Vec<i64> = starts.iter().map(|s| (*s / 60.0).floor() as i64).collect();
    assert_eq!(
        minutes[1],
        minutes[0] + 1,
        "consecutive minutes: {starts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_signals_and_vacate_time() {
    let pool = Pool::start().await;
    install_script(&pool);

    // Vacated: kill_sig, then SIGKILL after job_max_vacate_time (3 s, under
    // the host's 5 s limit); the job goes back to the queue.
    let (id, log) = probe(
        &pool,
        "vacate.log",
        "forever",
        "kill_sig = SIGUSR1\njob_max_vacate_time = 3\n",
    )
    .await;
    let host = pool.running_host(&id).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let status = pool.vacate(&host, &id).await;
    assert!(status.contains("202"), "{status}");
    tokio::time::sleep(Duration::from_secs(8)).await;
    // The first run's lines (the job goes back to the queue and may run
    // again meanwhile).
    let all = lines(&log);
    let second = all
        .iter()
        .enumerate()
        .filter(|(_, (w, _))| w == "start")
        .nth(1)
        .map_or(all.len(), |(i, _)| i);
    let l = &all[..second];
    let sig = l
        .iter()
        .find(|(w, _)| w == "sig USR1")
        .unwrap_or_else(|| panic!("no USR1: {l:?}\n{}", pool.logs()))
        .1;
    let last_beat = l
        .iter()
        .filter(|(w, _)| w == "beat")
        .map(|x| x.1)
        .fold(0.0, f64::max);
    let grace = last_beat - sig;
    assert!(
        (2.0..5.5).contains(&grace),
        "the job lived {grace:.2} s after its signal; its job_max_vacate_time is 3 s\n{all:?}\n{}",
        pool.logs()
    );
    assert!(!l.iter().any(|(w, _)| w == "sig TERM"), "{l:?}");
    pool.client.rm(&id, None).await.unwrap();

    // glean rm: SIGKILL at once, no signal first.
    let (id, log) = probe(
        &pool,
        "rm.log",
        "forever",
        "kill_sig = SIGUSR1\njob_max_vacate_time = 3\n",
    )
    .await;
    pool.running_host(&id).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let at = unix_now();
    pool.client.rm(&id, None).await.unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let l = lines(&log);
    assert!(!l.iter().any(|(w, _)| w.starts_with("sig")), "{l:?}");
    let last_beat = l.iter().map(|x| x.1).fold(0.0, f64::max);
    assert!(last_beat < at + 2.0, "ran {:.1} s after rm", last_beat - at);

    // want_graceful_removal: remove_kill_sig, then the vacate time.
    let (id, log) = probe(&pool, "graceful.log", "forever", "kill_sig = SIGUSR1\nremove_kill_sig = SIGUSR2\nwant_graceful_removal = true\njob_max_vacate_time = 2\n").await;
    pool.running_host(&id).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    pool.client.rm(&id, None).await.unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let l = lines(&log);
    assert!(l.iter().any(|(w, _)| w == "sig USR2"), "{l:?}");
    assert!(!l.iter().any(|(w, _)| w == "sig USR1"), "{l:?}");

    // glean hold: hold_kill_sig.
    let (id, log) = probe(
        &pool,
        "hold.log",
        "forever",
        "kill_sig = SIGUSR1\nhold_kill_sig = SIGHUP\njob_max_vacate_time = 2\n",
    )
    .await;
    pool.running_host(&id).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    pool.client.hold(&id, Some("test")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let l = lines(&log);
    assert!(l.iter().any(|(w, _)| w == "sig HUP"), "{l:?}");
    let d = pool.client.job(&id).await.unwrap();
    assert!(matches!(d.job.state, JobState::Held { .. }));
}

/// A job script that writes, into the file `$1` of the work directory,
/// each further argument on a line of its own (`arg <argument>`), then its
/// environment's `X`, `Y`, `CUDA_VISIBLE_DEVICES` and
/// `_CONDOR_AssignedGPUs`, and a line of stdout (which must not come
/// home: `transfer_output = false`).
const ECHO_SCRIPT: &str = r#"#!/bin/sh
log=$1
shift
for a in "$@"; do printf 'arg %s\n' "$a" >> "$log"; done
printf 'X %s\n' "$X" >> "$log"
printf 'Y %s\n' "$Y" >> "$log"
printf 'CUDA %s\n' "${CUDA_VISIBLE_DEVICES-unset}" >> "$log"
printf 'ASSIGNED %s\n' "${_CONDOR_AssignedGPUs-unset}" >> "$log"
echo "stdout stays on the host"
"#;

/// Request expressions, GPUs, arguments and environment with quotes, and
/// `transfer_output = false`, through real daemons: the two execute
/// stations advertise a GPU each (`[gpus]`); the job's `require_gpus`
/// accepts x2's only, so it runs there and finds that GPU in
/// `CUDA_VISIBLE_DEVICES`; its memory and CPU requests are expressions
/// the host evaluates; its argv and environment are what the file wrote;
/// its stdout is not written home.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_gpus_and_quoted_arguments_reach_the_guest() {
    let pool = Pool::start_with(
        "[gpus]\ndetect = false\n[[gpus.devices]]\nid = \"GPU-{name}\"\ndevice_name = \"Test GPU\"\n\
         capability = 8.6\nglobal_memory_mb = 16000\n",
    )
    .await;
    let script = pool.work.join("echo.sh");
    std::fs::write(&script, ECHO_SCRIPT).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = shared_file(&pool, "echo.log");
    let text = format!(
        "executable = echo.sh\n\
         arguments = \"{} one 'two words' \"\"three\"\" 'it''s' ''\"\n\
         environment = \"X=1 Y='a b'\"\n\
         request_memory = ifThenElse(MemoryUsage =!= undefined, MemoryUsage * 2, 100)\n\
         request_cpus = (Cpus > 8 ? 8 : Cpus) ?: 4\n\
         request_gpus = 1\n\
         require_gpus = Capability >= 8 && Id == \"GPU-x2\"\n\
         output = echo.out\n\
         transfer_output = false\n\
         queue\n",
        log.display()
    );
    let id = pool.submit_text(&text).await;
    // The job ad keeps the expressions, and the arguments as HTCondor
    // writes them.
    let d = pool.client.job(&id).await.unwrap();
    let ad = gleaner_proto::job_ad::detail_ad(&d);
    let shown = |name: &str| ad.get(name).map(gleaner_classad::unparse_expr);
    let memory = shown("RequestMemory").unwrap();
    assert!(memory.contains("MemoryUsage * 2"), "{memory}");
    assert!(shown("RequestCpus").unwrap().contains("?:"));
    assert_eq!(shown("RequestGPUs").as_deref(), Some("1"));
    assert_eq!(shown("TransferOut").as_deref(), Some("false"));
    let args = ad
        .get("Arguments")
        .and_then(|e| {
            gleaner_classad::EvalContext::new(0)
                .eval(e)
                .as_str()
                .map(str::to_string)
        })
        .unwrap();
    assert!(
        args.ends_with("one two' 'words \"three\" it''''s ''"),
        "{args}"
    );
    let d = pool.wait_done(&id).await;
    pool.assert_completed(&d);
    assert_eq!(
        d.job.host.as_deref(),
        Some("x2"),
        "require_gpus picks x2's GPU\n{:#?}",
        d.events
    );
    let got = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        got,
        "arg one\narg two words\narg \"three\"\narg it's\narg \nX 1\nY a b\nCUDA GPU-x2\n\
         ASSIGNED GPU-x2\n",
        "{}",
        pool.logs()
    );
    assert!(
        !pool.work.join("echo.out").exists(),
        "transfer_output = false: stdout is not written home"
    );

    // A GPU job whose constraint no station's GPU meets stays idle, and
    // the analysis says why.
    let text = "executable = echo.sh\narguments = /dev/null\nrequest_gpus = 1\n\
                require_gpus = GlobalMemoryMb >= 80000\nqueue\n";
    let id = pool.submit_text(text).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let d = pool.client.job(&id).await.unwrap();
    assert_eq!(d.job.state, JobState::Idle, "{:#?}", d.events);
    pool.client.rm(&id, None).await.unwrap();
}
