//! Transfers cut off in the middle: an upload or a restore is tried again
//! and completes; a host none of whose uploads arrive leaves the last good
//! checkpoint in place, and the job resumes from it elsewhere.

use crate::pool::{Pool, checkpoint_step, one_run, stray_files};
use gleaner_proto::job::{JobEventKind, JobState};
use std::sync::atomic::Ordering;

/// Bytes a connection carries before the proxy drops it: part of a
/// checkpoint of the test job (3 MiB of noise).
const CUT_AT: u64 = 1 << 20;

fn assert_one_run(p: &Pool, tag: &str, steps: u32) {
    assert_eq!(
        std::fs::read_to_string(p.work.join(format!("out-{tag}.txt"))).unwrap(),
        one_run(steps)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upload_cut_in_the_middle_is_sent_again() {
    let p = Pool::start().await;
    // A new 3 MiB of noise at every checkpoint: every upload is whole.
    let id = p.submit("up", 60, 10, 3, true).await;
    let host = p.running_on(&id).await;
    p.wait_checkpoints(&id, 1).await;
    p.proxy.cut_after(&host, CUT_AT);
    let d = p.wait_done(&id).await;
    assert_eq!(
        d.job.state,
        JobState::Completed { exit_code: 0 },
        "{:#?}",
        d.events
    );
    assert_eq!(p.proxy.dropped.load(Ordering::SeqCst), 1);
    // The home refused the part that came, kept the checkpoint it had,
    // and stored the one sent again.
    let kinds: Vec<&str> = d
        .events
        .iter()
        .filter(|e| e.kind == JobEventKind::Checkpointed)
        .map(|e| e.detail.as_str())
        .collect();
    let refused = kinds
        .iter()
        .position(|k| k.contains("rejected, previous kept"))
        .unwrap_or_else(|| panic!("no refusal: {kinds:#?}"));
    assert!(
        kinds[refused + 1..]
            .iter()
            .any(|k| k.contains("checkpoint #")),
        "nothing stored after the cut: {kinds:#?}"
    );
    assert_eq!(stray_files(&p.ckpt_dir(&id)), Vec::<String>::new());
    assert_one_run(&p, "up", 60);
    p.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restore_cut_in_the_middle_is_fetched_again() {
    let p = Pool::start().await;
    let id = p.submit("down", 60, 10, 3, false).await;
    let host = p.running_on(&id).await;
    p.wait_checkpoints(&id, 2).await;
    let other = if host == "x1" { "x2" } else { "x1" };
    // The other host's restore is cut a third of the way in.
    p.proxy.cut_after(other, CUT_AT);
    p.vacate(&host, &id).await;
    let d = p.wait_done(&id).await;
    assert_eq!(
        d.job.state,
        JobState::Completed { exit_code: 0 },
        "{:#?}",
        d.events
    );
    assert_eq!(d.job.host.as_deref(), Some(other), "{:#?}", d.events);
    assert_eq!(p.proxy.dropped.load(Ordering::SeqCst), 1);
    assert_one_run(&p, "down", 60);
    // Nothing of the broken restore stayed in the sandbox it went to:
    // the job's own files were all it found (it would not have resumed
    // otherwise).
    let err = std::fs::read_to_string(p.work.join("err-down.txt")).unwrap();
    assert!(
        err.lines().filter(|l| l.starts_with("resumed at")).count() >= 2,
        "{err}"
    );
    p.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uploads_that_never_arrive_leave_the_last_good_checkpoint() {
    let mut p = Pool::start().await;
    let id = p.submit("lost", 80, 10, 2, true).await;
    let host = p.running_on(&id).await;
    p.wait_checkpoints(&id, 2).await;
    // From now on nothing of this host reaches the home.
    p.proxy.cut(&host);
    // An upload the cut ended may still be being refused.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let dir = p.ckpt_dir(&id);
    let good = checkpoint_step(&dir.join("latest.ckpt")).expect("a good checkpoint");
    let other = if host == "x1" { "x2" } else { "x1" };
    p.wait_job(&id, 60, "the job never moved", |d| {
        d.job.state == JobState::Running && d.job.host.as_deref() == Some(other)
    })
    .await;
    p.stop_host(&host).await;
    let d = p.wait_done(&id).await;
    assert_eq!(
        d.job.state,
        JobState::Completed { exit_code: 0 },
        "{:#?}",
        d.events
    );
    let err = std::fs::read_to_string(p.work.join("err-lost.txt")).unwrap();
    assert!(
        err.contains(&format!("resumed at {good}\n")),
        "did not resume from the last good checkpoint ({good}):\n{err}"
    );
    assert_one_run(&p, "lost", 80);
    assert_eq!(stray_files(&dir), Vec::<String>::new());
    p.stop().await;
}
