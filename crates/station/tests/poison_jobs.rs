//! Poison jobs go on hold and never block the queue (issue 14, item 3),
//! with real station daemons: a coordinator, a submit-only home `a` and
//! two hosts `b` and `c`.
//!
//! The home gets, in this order: a job with arguments the kernel refuses
//! (E2BIG: the hosts run with a small stack limit, which allows 128 KiB of
//! arguments and environment), one with an environment it refuses
//! likewise, one whose executable is missing on the hosts (not
//! transferred), one with an input file name no sandbox can hold (every
//! host refuses the placement), one whose interpreter line names a
//! program that does not exist (ENOENT at exec), and then a plain
//! job. The station's limit is 3 failed starts in a row; each poison job is
//! held with a reason naming the cause and HTCondor's code 6 and the errno
//! as subcode, its history has a `start_failed` per try, the user log says
//! why; and the plain job, submitted last, completes meanwhile.

use gleaner_proto::api::{JobDetail, SubmitBody};
use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::client::StationClient;
use gleaner_station::config::StationRole;
use gleaner_station::node::spawn_for_test;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::{coordinator_config, pool_keys, pool_station, shared_tempdir, write_owned};

/// The station's bound on failed starts in a row.
const LIMIT: u32 = 3;

/// Submits `text` from `work`; `Err` is the station's refusal.
async fn try_submit(client: &StationClient, text: &str, work: &Path) -> Result<String, String> {
    let sub =
        parse_submit(text, &SubmitContext::new("job.sub", "owner")).map_err(|e| e.to_string())?;
    client
        .submit(&SubmitBody {
            protocol: PROTOCOL_VERSION,
            submission: sub,
            submit_dir: Some(work.to_string_lossy().into_owned()),
        })
        .await
        .map(|r| r.jobs[0].to_string())
        .map_err(|e| e.to_string())
}

/// A poison job: its id, what the hold reason must name, the errno.
struct Poison {
    name: &'static str,
    id: String,
    cause: &'static str,
    errno: i32,
    submitted: Instant,
    held_after: Option<Duration>,
}

/// Lowers this process's soft stack limit to 256 KiB (inherited by the
/// guests its hosts start; the test's threads have stacks of their own).
fn small_stack_for_guests() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_STACK, &mut lim), 0);
        lim.rlim_cur = 256 * 1024;
        assert_eq!(libc::setrlimit(libc::RLIMIT_STACK, &lim), 0);
    }
}

fn is_done(d: &JobDetail) -> bool {
    d.job.state.is_terminal() || matches!(d.job.state, JobState::Held { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn poison_jobs_are_held_with_a_reason_and_later_jobs_run() {
    if gleaner_testkit::skip_unless_root("poison_jobs: jobs run as their owner") {
        return;
    }
    let _serial = common::serial_lock();
    let dir = shared_tempdir();
    let root = dir.path().to_path_buf();
    let keys = pool_keys(&root);
    let coord = gleaner_coordinator::spawn_for_test(coordinator_config(&root))
        .await
        .unwrap();
    let coord_url = format!("http://{}", coord.addr());
    let mut a_cfg = pool_station(&root, &keys, &coord_url, "a", StationRole::SubmitOnly);
    a_cfg.lease_secs = 5.0;
    a_cfg.max_start_failures = LIMIT;
    a_cfg.start_retry_secs = 1.0;
    let (alice, work) = common::job_owner(&root);
    let owner = (alice.uid(), alice.gid());
    let (a_addr, a) = spawn_for_test(a_cfg).await.unwrap();
    let mut hosts = Vec::new();
    for name in ["b", "c"] {
        let cfg = pool_station(&root, &keys, &coord_url, name, StationRole::ExecuteOnly);
        hosts.push(spawn_for_test(cfg).await.unwrap().1);
    }
    write_owned(&work.join("ok.sh"), "#!/bin/sh\necho fine\n", owner);
    write_owned(&work.join("_gleaner_stdout"), "input\n", owner);
    write_owned(
        &work.join("interp.sh"),
        "#!/nonexistent/interpreter\necho never\n",
        owner,
    );
    let client = StationClient::new(format!("http://{a_addr}"), keys.user(alice.name())).unwrap();

    // Submit refuses what no host could exec (one argument past 128 KiB,
    // more than 1 MiB in all: `gleaner_proto::limits`), so E2BIG comes
    // from a host with a small stack limit, where exec allows only
    // 128 KiB of arguments and environment (a quarter of the stack, at
    // least 32 pages). The hosts here run in this process: their guests
    // inherit its limit. Two 100 KiB values pass submit and fail exec.
    small_stack_for_guests();
    let big = "x".repeat(100 * 1024);
    let specs: Vec<(&'static str, String, &'static str, i32)> = vec![
        (
            "e2big argument",
            format!("executable = ok.sh\narguments = {big} {big}\nlog = e2big.log\nqueue\n"),
            "Argument list too long (E2BIG, errno 7)",
            libc::E2BIG,
        ),
        (
            "e2big environment",
            format!("executable = ok.sh\nenvironment = \"BIG={big} HUGE={big}\"\nqueue\n"),
            "Argument list too long (E2BIG, errno 7)",
            libc::E2BIG,
        ),
        // A NUL byte in the executable's name is refused at submit now
        // (below); a program missing on the hosts is what remains.
        (
            "missing executable on the host",
            "executable = /nonexistent/program\ntransfer_executable = false\nqueue\n".to_string(),
            "not found on",
            libc::ENOENT,
        ),
        // A name no sandbox can hold (the host's own capture file): every
        // host refuses the placement, as it did a NUL byte before submit
        // refused those.
        (
            "input named like the capture file",
            "executable = ok.sh\ntransfer_input_files = _gleaner_stdout\nqueue\n".to_string(),
            "refused by the host",
            0,
        ),
        (
            "NUL executable transferred",
            "executable = ok\0.sh\nqueue\n".to_string(),
            "refused by the host",
            0,
        ),
        (
            "bad interpreter",
            "executable = interp.sh\nqueue\n".to_string(),
            "No such file or directory (ENOENT, errno 2)",
            libc::ENOENT,
        ),
    ];
    let mut poisons = Vec::new();
    for (name, text, cause, errno) in specs {
        let submitted = Instant::now();
        match try_submit(&client, &text, &work).await {
            Ok(id) => poisons.push(Poison {
                name,
                id,
                cause,
                errno,
                submitted,
                held_after: None,
            }),
            // A station that refuses it at submit keeps it out of the
            // queue altogether: nothing to hold.
            Err(e) => eprintln!("{name}: refused at submit: {e}"),
        }
    }
    assert!(
        poisons.iter().filter(|p| p.errno == libc::E2BIG).count() == 2
            && poisons
                .iter()
                .any(|p| p.name == "input named like the capture file")
            && poisons
                .iter()
                .any(|p| p.name == "missing executable on the host"),
        "the E2BIG and unrunnable jobs must reach the queue"
    );
    let plain_submitted = Instant::now();
    let plain = try_submit(
        &client,
        "executable = ok.sh\noutput = ok.out\nqueue\n",
        &work,
    )
    .await
    .unwrap();

    // Everything ends: poison jobs held, the plain job completed.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut plain_done: Option<Duration> = None;
    loop {
        for p in poisons.iter_mut().filter(|p| p.held_after.is_none()) {
            let d = client.job(&p.id).await.unwrap();
            assert!(!d.job.state.is_terminal(), "{}: {d:#?}", p.name);
            if is_done(&d) {
                p.held_after = Some(p.submitted.elapsed());
            }
        }
        if plain_done.is_none() {
            let d = client.job(&plain).await.unwrap();
            if is_done(&d) {
                assert_eq!(d.job.state, JobState::Completed { exit_code: 0 }, "{d:#?}");
                plain_done = Some(plain_submitted.elapsed());
            }
        }
        if plain_done.is_some() && poisons.iter().all(|p| p.held_after.is_some()) {
            break;
        }
        if Instant::now() > deadline {
            for id in poisons.iter().map(|p| &p.id).chain([&plain]) {
                let d = client.job(id).await.unwrap();
                eprintln!("{id}: {} {:?}", d.job.state, d.events);
            }
            panic!("not all ended in time");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let plain_done = plain_done.unwrap_or_default();
    eprintln!("plain job (submitted after the poison jobs) completed in {plain_done:.1?}");
    assert_eq!(
        std::fs::read_to_string(work.join("ok.out")).unwrap(),
        "fine\n"
    );

    for p in &poisons {
        let d = client.job(&p.id).await.unwrap();
        let JobState::Held { reason } = &d.job.state else {
            panic!("{}: {d:#?}", p.name)
        };
        eprintln!(
            "{}: held after {:.1?}: {reason}",
            p.name,
            p.held_after.unwrap_or_default()
        );
        assert!(
            reason.starts_with(&format!("failed to start {LIMIT} times in a row (last on ")),
            "{}: {reason}",
            p.name
        );
        assert!(reason.contains(p.cause), "{}: {reason}", p.name);
        assert!(
            reason.contains(&format!(
                "[HoldReasonCode 6, HoldReasonSubCode {}]",
                p.errno
            )),
            "{}: {reason}",
            p.name
        );
        assert_eq!(d.job.hold_code, Some(6), "{}", p.name);
        assert_eq!(d.job.hold_subcode, Some(p.errno), "{}", p.name);
        assert_eq!(d.job.start_failures, LIMIT, "{}", p.name);
        let failed: Vec<_> = d
            .events
            .iter()
            .filter(|e| e.kind == JobEventKind::StartFailed)
            .collect();
        assert_eq!(failed.len(), LIMIT as usize, "{}: {:#?}", p.name, d.events);
        assert!(
            failed.iter().all(|e| e.detail.contains(p.cause)),
            "{failed:#?}"
        );
        assert_eq!(
            d.events.last().map(|e| e.kind),
            Some(JobEventKind::Held),
            "{}",
            p.name
        );
    }
    // The user log tells the failed starts and the hold.
    let log = std::fs::read_to_string(work.join("e2big.log")).unwrap();
    assert!(log.contains("007 ("), "{log}");
    assert!(log.contains("012 ("), "{log}");
    assert!(
        log.contains("Job was held.\n\tfailed to start 3 times in a row"),
        "{log}"
    );
    assert!(log.contains("Code 6 Subcode 7"), "{log}");

    // A release starts a new series: the job is tried again, and held
    // again after as many failed starts.
    let e2big = &poisons[0].id;
    client.release(e2big, None).await.unwrap();
    let released = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(120);
    let d = loop {
        let d = client.job(e2big).await.unwrap();
        if matches!(d.job.state, JobState::Held { .. })
            && d.events
                .iter()
                .filter(|e| e.kind == JobEventKind::StartFailed)
                .count()
                == 2 * LIMIT as usize
        {
            break d;
        }
        assert!(Instant::now() < deadline, "not held again: {d:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!(
        "released E2BIG job held again after {:.1?}",
        released.elapsed()
    );
    assert_eq!(d.job.start_failures, LIMIT);

    a.stop().await;
    for h in hosts {
        h.stop().await;
    }
    coord.stop().await.unwrap();
    drop(alice);
}

/// The job's own policy, evaluated by the home: `on_exit_hold` keeps a job
/// that exited in the queue, held (HoldReasonCode 3, its subcode), and
/// `periodic_release` releases it while `NumJobStarts < 2`; after its
/// second run it stays held.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_exit_hold_and_periodic_release_are_evaluated_by_the_home() {
    if gleaner_testkit::skip_unless_root("poison_jobs: jobs run as their owner") {
        return;
    }
    let _serial = common::serial_lock();
    let dir = shared_tempdir();
    let root = dir.path().to_path_buf();
    let keys = pool_keys(&root);
    let coord = gleaner_coordinator::spawn_for_test(coordinator_config(&root))
        .await
        .unwrap();
    let coord_url = format!("http://{}", coord.addr());
    let a_cfg = pool_station(&root, &keys, &coord_url, "a", StationRole::SubmitOnly);
    let (alice, work) = common::job_owner(&root);
    let owner = (alice.uid(), alice.gid());
    let (a_addr, a) = spawn_for_test(a_cfg).await.unwrap();
    let b_cfg = pool_station(&root, &keys, &coord_url, "b", StationRole::ExecuteOnly);
    let (_b_addr, b) = spawn_for_test(b_cfg).await.unwrap();
    write_owned(
        &work.join("three.sh"),
        "#!/bin/sh\necho ran\nexit 3\n",
        owner,
    );
    let client = StationClient::new(format!("http://{a_addr}"), keys.user(alice.name())).unwrap();
    let text = "executable = three.sh\noutput = three.out\n\
                on_exit_hold = ExitCode =!= 0\n\
                on_exit_hold_reason = strcat(\"exited with \", ExitCode)\n\
                on_exit_hold_subcode = ExitCode\n\
                periodic_release = NumJobStarts < 2\nqueue\n";
    let id = try_submit(&client, text, &work).await.unwrap();
    let started = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(120);
    let (d, released_at) = loop {
        let d = client.job(&id).await.unwrap();
        assert!(!d.job.state.is_terminal(), "{d:#?}");
        let released = d.events.iter().any(|e| e.kind == JobEventKind::Released);
        if released && matches!(d.job.state, JobState::Held { .. }) && d.job.run_count == 2 {
            break (d, started.elapsed());
        }
        assert!(Instant::now() < deadline, "{d:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!("held, released by periodic_release, held again after {released_at:.1?}");
    assert_eq!(
        d.job.state,
        JobState::Held {
            reason: "exited with 3".into()
        }
    );
    assert_eq!((d.job.hold_code, d.job.hold_subcode), (Some(3), Some(3)));
    // Its outputs were delivered as on any exit.
    assert_eq!(
        std::fs::read_to_string(work.join("three.out")).unwrap(),
        "ran\n"
    );
    // NumJobStarts is 2 now: it stays held through more passes.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let d = client.job(&id).await.unwrap();
    assert!(matches!(d.job.state, JobState::Held { .. }), "{d:#?}");
    assert_eq!(
        d.events
            .iter()
            .filter(|e| e.kind == JobEventKind::Released)
            .count(),
        1
    );
    a.stop().await;
    b.stop().await;
    coord.stop().await.unwrap();
    drop(alice);
}
